"""Define-by-run autograd: the Autograd dispatch key's kernel records a graph the engine walks backwards."""

from . import forward_ad, functional, graph
from . import inference as _inference, kernel as _kernel
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .function import Function, FunctionCtx
from .functional import backward, grad
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import Node
# torch.autograd's remaining names: the legacy variable module, SavedTensor, the thread flags, __torch_function__
from . import variable
from .function import NestedIOFunction
from .grad_mode import (enforce_grad_layout_policy, is_multithreading_enabled, is_view_replay_enabled,
                        set_multithreading_enabled)
from .graph import SavedTensor
from .overrides import handle_torch_function, has_torch_function, is_tensor_like
from .variable import Variable
# the profiler's names (core.profiler's recorder serves torch.autograd.profiler)
from ..profiler._types import DeviceType, ProfilerActivity, ProfilerConfig, ProfilerState
from ..profiler._recorder import ProfilerEvent
from ..profiler.profiler import kineto_available
from . import profiler

__all__ = ["backward", "grad", "Function", "FunctionCtx", "gradcheck", "gradgradcheck", "GradcheckError",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "set_detect_anomaly", "detect_anomaly", "is_anomaly_enabled", "Node",
           "Variable", "is_tensor_like", "variable", "NestedIOFunction", "SavedTensor", "set_multithreading_enabled",
           "is_multithreading_enabled", "is_view_replay_enabled", "has_torch_function", "handle_torch_function",
           "enforce_grad_layout_policy",
           # the profiler's names
           "DeviceType", "ProfilerActivity", "ProfilerConfig", "ProfilerState", "ProfilerEvent", "kineto_available",
           "profiler"]

_kernel.install()
_inference.install()
