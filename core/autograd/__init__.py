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
from ._variable import Variable, is_tensor_like

__all__ = ["backward", "grad", "Function", "FunctionCtx", "gradcheck", "gradgradcheck", "GradcheckError",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "set_detect_anomaly", "detect_anomaly", "is_anomaly_enabled", "Node",
           "Variable", "is_tensor_like"]

_kernel.install()
_inference.install()
