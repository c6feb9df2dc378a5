"""The profiler's enums and its configuration: what ``torch.profiler`` and ``torch.autograd`` name alike."""

from __future__ import annotations

import enum

__all__ = ["DeviceType", "ProfilerActivity", "ProfilerAction", "ProfilerState", "RecordScope", "ProfilerConfig",
           "activity_of", "device_type_of", "device_label"]


class DeviceType(enum.IntEnum):
    """The kind of device an event ran on (``torch.autograd.DeviceType``, c10's numbering)."""

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20


class ProfilerActivity(enum.Enum):
    """What a profile records (``torch.profiler.ProfilerActivity``): ``CPU`` is the op calls and
    ``record_function`` blocks; a device activity is the device-time events a backend reports."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a profiler does at a step (``torch.profiler.ProfilerAction``), as a :func:`schedule` decides."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


class ProfilerState(enum.Enum):
    """Which profiler runs (``torch.autograd.ProfilerState``); core records ``CPU`` and ``KINETO`` alike (its own
    recorder; Kineto is not there) and refuses to start with ``Disabled``."""

    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_PRIVATEUSE1 = 9


class RecordScope(enum.IntEnum):
    """Where a recorded span comes from (``torch.profiler.RecordScope``): op calls are ``FUNCTION``,
    ``record_function`` blocks ``USER_SCOPE``, backend device events ``KERNEL_FUNCTION_DTYPE``."""

    FUNCTION = 0
    BACKWARD_FUNCTION = 1
    TORCHSCRIPT_FUNCTION = 2
    KERNEL_FUNCTION_DTYPE = 3
    CUSTOM_CLASS = 4
    BUILD_FEATURE = 5
    LITE_INTERPRETER = 6
    USER_SCOPE = 7
    STATIC_RUNTIME_OP = 8
    STATIC_RUNTIME_MODEL = 9


class ProfilerConfig:
    """What one profiling session records (``torch.autograd.ProfilerConfig``): the state and the optional extras
    (input shapes, memory, Python stacks, FLOPs). ``with_modules`` and ``experimental_config`` are kept but not
    acted on (core records no module hierarchy; the experimental options are Kineto's)."""

    def __init__(self, state: ProfilerState, report_input_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, trace_id: str = ""):
        if not isinstance(state, ProfilerState):
            raise TypeError(f"ProfilerConfig(): state must be a ProfilerState, got {type(state).__name__}")
        self.state = state
        self.report_input_shapes = bool(report_input_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.with_flops = bool(with_flops)
        self.with_modules = bool(with_modules)
        self.experimental_config = experimental_config
        self.trace_id = trace_id

    def __repr__(self) -> str:
        return (f"ProfilerConfig(state={self.state.name}, report_input_shapes={self.report_input_shapes}, "
                f"profile_memory={self.profile_memory}, with_stack={self.with_stack}, "
                f"with_flops={self.with_flops}, with_modules={self.with_modules})")


_ACTIVITY_BY_DEVICE = {"cpu": ProfilerActivity.CPU, "cuda": ProfilerActivity.CUDA, "xpu": ProfilerActivity.XPU,
                       "mtia": ProfilerActivity.MTIA, "hpu": ProfilerActivity.HPU}


def activity_of(device_type: str) -> ProfilerActivity:
    """The activity that stands for a device type's events (third-party devices are ``PrivateUse1``, as in
    PyTorch)."""
    return _ACTIVITY_BY_DEVICE.get(device_type, ProfilerActivity.PrivateUse1)


# the third-party device type whose events a profile recorded: PyTorch names its PrivateUse1 columns after the backend
# (``torch.utils.rename_privateuse1_backend``); core's plugins are named by their device types already
_PRIVATEUSE1 = ["privateuse1"]


def device_label(kind: DeviceType) -> str:
    """The upper-case name a table gives ``kind``'s columns (``OPENCL``; PrivateUse1 as the plugin's device type)."""
    return (_PRIVATEUSE1[0] if kind == DeviceType.PrivateUse1 else kind.name).upper()


def device_type_of(device_type: str) -> DeviceType:
    """The :class:`DeviceType` of a device type name (``"opencl"`` -> ``OPENCL``; unknown ones ``PrivateUse1``)."""
    by_name = {d.name.lower(): d for d in DeviceType}
    kind = by_name.get(device_type.lower(), DeviceType.PrivateUse1)
    if kind == DeviceType.PrivateUse1:
        _PRIVATEUSE1[0] = device_type.lower()
    return kind
