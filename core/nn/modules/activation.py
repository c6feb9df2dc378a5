"""Activation layers: thin modules over ``core.nn.functional``'s activations, with PyTorch's reprs."""

from __future__ import annotations

import warnings

from ... import ops
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module

__all__ = ["Threshold", "ReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU", "Mish", "Hardswish",
           "ELU", "CELU", "SELU", "GLU", "GELU", "LeakyReLU", "LogSigmoid", "Softplus", "PReLU", "Softsign",
           "Tanhshrink", "Softmin", "Softmax", "LogSoftmax", "Hardshrink", "Softshrink", "RReLU", "Softmax2d"]


def _inplace_repr(inplace: bool, leading: str = "") -> str:
    return f"{leading}inplace=True" if inplace else ""


class _Stateless(Module):
    """An activation with no arguments: ``forward`` applies ``function``."""

    function = staticmethod(lambda input: input)

    def forward(self, input):
        return self.function(input)


class _InplaceOnly(Module):
    """An activation whose only argument is ``inplace``."""

    function = staticmethod(lambda input, inplace=False: input)

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return self.function(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Threshold(Module):
    """x if x > threshold else value (``torch.nn.Threshold``)."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_repr(self.inplace, ', ')}"


class ReLU(_InplaceOnly):
    """max(x, 0) (``torch.nn.ReLU``)."""

    function = staticmethod(F.relu)


class Hardtanh(Module):
    """clamp(x, min_val, max_val) (``torch.nn.Hardtanh``)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False, min_value=None,
                 max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and rename to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and rename to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        if not max_val > min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_repr(self.inplace, ', ')}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6) (``torch.nn.ReLU6``)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Sigmoid(_Stateless):
    """1 / (1 + exp(-x)) (``torch.nn.Sigmoid``)."""

    function = staticmethod(ops.sigmoid)


class Hardsigmoid(_InplaceOnly):
    """relu6(x + 3) / 6 (``torch.nn.Hardsigmoid``); PyTorch prints no arguments."""

    function = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""


class Tanh(_Stateless):
    """Hyperbolic tangent (``torch.nn.Tanh``)."""

    function = staticmethod(ops.tanh)


class SiLU(_InplaceOnly):
    """x * sigmoid(x) (``torch.nn.SiLU``)."""

    function = staticmethod(F.silu)


class Mish(_InplaceOnly):
    """x * tanh(softplus(x)) (``torch.nn.Mish``)."""

    function = staticmethod(F.mish)


class Hardswish(_InplaceOnly):
    """x * relu6(x + 3) / 6 (``torch.nn.Hardswish``); PyTorch prints no arguments."""

    function = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class ELU(Module):
    """x if x > 0 else alpha * (exp(x) - 1) (``torch.nn.ELU``)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_repr(self.inplace, ', ')}"


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (``torch.nn.CELU``)."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class SELU(_InplaceOnly):
    """scale * elu(x, alpha) with the self-normalising constants (``torch.nn.SELU``)."""

    function = staticmethod(F.selu)


class GLU(Module):
    """First half of ``dim`` times sigmoid of the second half (``torch.nn.GLU``)."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GELU(Module):
    """x * Φ(x), exact or tanh-approximated (``torch.nn.GELU``)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class LeakyReLU(Module):
    """x if x > 0 else negative_slope * x (``torch.nn.LeakyReLU``)."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_repr(self.inplace, ', ')}"


class LogSigmoid(_Stateless):
    """log(sigmoid(x)) (``torch.nn.LogSigmoid``)."""

    function = staticmethod(F.logsigmoid)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above ``threshold`` (``torch.nn.Softplus``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module):
    """x if x > 0 else a * x with a learnable ``weight`` ``a`` per channel or shared (``torch.nn.PReLU``)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(ops.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fill ``weight`` with ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Softsign(_Stateless):
    """x / (1 + |x|) (``torch.nn.Softsign``)."""

    function = staticmethod(F.softsign)


class Tanhshrink(_Stateless):
    """x - tanh(x) (``torch.nn.Tanhshrink``)."""

    function = staticmethod(F.tanhshrink)


class _SoftmaxFamily(Module):
    """A softmax-like module over ``dim`` (None: PyTorch's legacy implicit choice, with its warning)."""

    function = staticmethod(F.softmax)

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return self.function(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(_SoftmaxFamily):
    """softmax(-x) along ``dim`` (``torch.nn.Softmin``)."""

    function = staticmethod(F.softmin)


class Softmax(_SoftmaxFamily):
    """exp(x) / sum(exp(x)) along ``dim`` (``torch.nn.Softmax``)."""

    function = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxFamily):
    """log(softmax(x)) along ``dim`` (``torch.nn.LogSoftmax``)."""

    function = staticmethod(F.log_softmax)


class _Shrink(Module):
    """A shrinkage activation with threshold ``lambd``."""

    function = staticmethod(F.hardshrink)

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return self.function(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """x where ``|x| > lambd``, else 0 (``torch.nn.Hardshrink``)."""

    function = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    """x - lambd above ``lambd``, x + lambd below ``-lambd``, else 0 (``torch.nn.Softshrink``)."""

    function = staticmethod(F.softshrink)


class RReLU(Module):
    """Leaky ReLU with a random slope from U(lower, upper) in training, (lower + upper) / 2 in eval
    (``torch.nn.RReLU``)."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_repr(self.inplace, ', ')}"


class Softmax2d(Module):
    """Softmax over the channels of every spatial position of a (N, C, H, W) or (C, H, W) input
    (``torch.nn.Softmax2d``)."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)
