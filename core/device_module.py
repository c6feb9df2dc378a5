"""``core.cuda``, ``core.opencl``, ``core.<any device type>``: per-device-type helpers, delegating to the plugin.

``import core`` imports no plugin, so these are looked up lazily (``core.__getattr__``) and ask the device
type's backend runtime at call time. A device type with no installed backend is simply "not available".
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

from .errors import OutOfMemoryError

__all__ = ["DeviceModule", "get_device_module", "memory_stats", "memory_allocated", "max_memory_allocated",
           "reset_peak_memory_stats"]


def get_device_module(device=None):
    """The device module of ``device`` (a device, or a string such as ``'cuda:0'``): ``core.cuda``, ``core.opencl``,
    ``core.cpu``, ...; with no argument, the current accelerator's, or ``core.cpu`` when there is none.

    Follows ``torch.get_device_module``, including its errors (RuntimeError) for a bad argument and for a device
    type no backend provides.
    """
    import importlib

    from .device import device as as_device
    from .plugins.manager import get_manager

    core = importlib.import_module(__package__)
    if device is None:
        accelerator = core.accelerator.current_accelerator()
        device_type = "cpu" if accelerator is None else accelerator.type
    elif isinstance(device, (str, as_device)):
        device_type = as_device(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect core.device, str, or None")
    get_manager().scan()  # a third-party plugin's device type is known once the entry points are read
    module = getattr(core, device_type, None)
    if not isinstance(module, DeviceModule):
        raise RuntimeError(f"Device '{device_type}' does not have a corresponding module registered as "
                           f"'core.{device_type}'; `python -m core info` lists the device types with a backend")
    return module


class DeviceModule:
    """The ``torch.cuda``-like namespace of one device type: availability, devices, memory, seeding."""

    OutOfMemoryError = OutOfMemoryError  # torch.cuda.OutOfMemoryError is torch.OutOfMemoryError

    def __init__(self, device_type: str):
        self.device_type = device_type

    def __repr__(self) -> str:
        return f"<core.{self.device_type}: device helpers of the '{self.device_type}' backend>"

    @property
    def amp(self):
        """``core.cuda.amp`` / ``core.cpu.amp``: torch's deprecated spellings of ``core.amp`` (``torch.cuda.amp``)."""
        from .amp.deprecated import device_amp

        return device_amp(self.device_type)

    def _runtime(self):
        from .plugins.manager import runtime_for

        return runtime_for(self.device_type)

    def _optional(self, method: str, *args, default=None):
        runtime = self._runtime()
        fn = getattr(runtime, method, None)
        return default if fn is None else fn(*args)

    def is_available(self) -> bool:
        """Whether a backend for this device type is installed, loads, and sees at least one device."""
        from .plugins.manager import BackendUnavailableError

        try:
            return self._runtime().device_count() > 0
        except BackendUnavailableError:
            return False

    def unavailable_reason(self) -> str:
        """Why :meth:`is_available` is False ('' when it is available)."""
        from .plugins.manager import BackendUnavailableError

        try:
            self._runtime()
            return ""
        except BackendUnavailableError as exc:
            return str(exc)

    def device_count(self) -> int:
        """How many devices of this type there are (0 when the backend is unavailable)."""
        return self._runtime().device_count() if self.is_available() else 0

    def index_of(self, device=None) -> int:
        """``device`` (an index, a device of this type or its string, or None: the current one) as an index."""
        from .device import device as as_device

        if device is None:
            return self.current_device()
        if isinstance(device, (str, as_device)):
            device = as_device(device)
            if device.type != self.device_type:
                raise ValueError(f"{device} is not a '{self.device_type}' device")
            return self.current_device() if device.index is None else device.index
        if isinstance(device, int) and not isinstance(device, bool):
            return device
        raise TypeError(f"expected a device index, a '{self.device_type}' device or its string, got "
                        f"{type(device).__name__}")

    def get_device_name(self, device=None) -> str:
        """The name of a device (index or ``device`` object; the current one by default)."""
        return self._runtime().device_name(self.index_of(device))

    def current_device(self) -> int:
        """The index of the current device (0 for a backend with no current-device setting)."""
        return self._optional("current_device", default=0)

    def set_device(self, device) -> None:
        """Make ``device`` (an index, a device or its string) the current one."""
        runtime = self._runtime()  # raises BackendUnavailableError, with the reason, when there is no backend
        index = self.index_of(device)
        count = runtime.device_count()
        if not 0 <= index < count:
            raise RuntimeError(f"{self.device_type}:{index} is not a valid device: {count} {self.device_type} "
                               f"device(s) available")
        if getattr(runtime, "set_device", None) is not None:
            runtime.set_device(index)
        elif index != self.current_device():
            # recording an index the backend ignores would put tensors on another device than the one set
            raise RuntimeError(f"backend '{runtime.name}' has no current-device setting: "
                               f"'{self.device_type}' means {self.device_type}:{self.current_device()}; name the "
                               f"device instead ({self.device_type}:{index})")

    def synchronize(self, device=None) -> None:
        """Wait for all queued work on ``device`` (the current one by default) to finish."""
        from .device import device as as_device

        self._runtime().synchronize(as_device(self.device_type, self.index_of(device)))

    def memory_allocated(self, device=None) -> int:
        """Bytes held by live tensors."""
        return self._optional("memory_allocated", self.index_of(device), default=0)

    def max_memory_allocated(self, device=None) -> int:
        """Peak of :meth:`memory_allocated` (its current value when the backend records no peak)."""
        index = self.index_of(device)
        peak = self._optional("max_memory_allocated", index)
        return self.memory_allocated(index) if peak is None else peak

    def memory_reserved(self, device=None) -> int:
        """Bytes held by the backend's memory pool (allocated + cached)."""
        return self._optional("memory_reserved", self.index_of(device), default=0)

    def max_memory_reserved(self, device=None) -> int:
        """Peak of :meth:`memory_reserved` (its current value when the backend records no peak)."""
        index = self.index_of(device)
        peak = self._optional("max_memory_reserved", index)
        return self.memory_reserved(index) if peak is None else peak

    def reset_peak_memory_stats(self, device=None) -> None:
        """Start the peaks of :meth:`max_memory_allocated` and :meth:`max_memory_reserved` again from now."""
        runtime = self._runtime()
        index = self.index_of(device)
        if getattr(runtime, "reset_peak_memory_stats", None) is not None:
            runtime.reset_peak_memory_stats(index)
        elif any(getattr(runtime, name, None) is not None for name in ("max_memory_allocated", "max_memory_reserved")):
            warnings.warn(f"backend '{runtime.name}' records memory peaks but cannot reset them: "
                          f"max_memory_allocated() keeps counting from the start", RuntimeWarning, stacklevel=2)

    def memory_stats(self, device=None) -> OrderedDict:
        """Memory statistics under ``torch.cuda.memory_stats``' names (those the backend can answer)."""
        index = self.index_of(device)
        stats = self._optional("memory_stats", index)
        if stats is None:
            stats = {"allocated_bytes.all.current": self.memory_allocated(index),
                     "allocated_bytes.all.peak": self.max_memory_allocated(index),
                     "reserved_bytes.all.current": self.memory_reserved(index),
                     "reserved_bytes.all.peak": self.max_memory_reserved(index)}
        return OrderedDict(sorted(stats.items()))

    def empty_cache(self) -> None:
        """Return cached, unused memory to the system."""
        self._runtime().empty_cache()

    def memory_summary(self, device=None) -> str:
        """A readable summary of memory use."""
        summary = self._optional("memory_summary", self.index_of(device))
        if summary is not None:
            return summary
        return (f"{self.device_type}: allocated {self.memory_allocated(device)} B, "
                f"reserved {self.memory_reserved(device)} B")

    def manual_seed(self, seed: int) -> None:
        """Seed the current device's default generator."""
        self.manual_seed_all(seed)

    def manual_seed_all(self, seed: int) -> None:
        """Seed every device's default generator."""
        from .ops.random import manual_seed

        manual_seed(seed)


# -- core's own addition: the memory queries of any device (PyTorch has them per device module and in
# torch.accelerator, which answers only for the current accelerator; these also answer for cpu) ---------------
def _of(device) -> tuple:
    """``(device module, device)`` for a device or its string; ``None`` is the default device."""
    from .device import device as as_device, get_default_device

    device = get_default_device() if device is None else as_device(device) if isinstance(device, str) else device
    return get_device_module(device), device


def memory_stats(device=None) -> OrderedDict:
    """``device``'s memory statistics under ``torch.cuda.memory_stats``' names (``"allocated_bytes.all.current"``,
    ``"allocated_bytes.all.peak"``, ...); ``None`` is the default device. core's addition: ``core.memory_stats``."""
    module, device = _of(device)
    return module.memory_stats(device)


def memory_allocated(device=None) -> int:
    """Bytes held by live tensors on ``device`` (``None``: the default device); core's addition."""
    module, device = _of(device)
    return module.memory_allocated(device)


def max_memory_allocated(device=None) -> int:
    """Peak of :func:`memory_allocated` on ``device`` since the start or the last reset; core's addition."""
    module, device = _of(device)
    return module.max_memory_allocated(device)


def reset_peak_memory_stats(device=None) -> None:
    """Start ``device``'s memory peaks again from their current values; core's addition."""
    module, device = _of(device)
    module.reset_peak_memory_stats(device)
