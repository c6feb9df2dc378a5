"""Activation functionals (``torch.nn.functional``), written in Tensor ops so autograd and every device come free.

``gelu`` checks its argument and calls the ``gelu`` op (declared, with its decomposition and ``gelu_backward``, in
``core/ops/elementwise.py``; its derivative is in ``core/ops/derivatives.py``). Piecewise functions pick their
branch with ``where`` and keep the unpicked branch finite (``expm1`` of a clamped input, ``logaddexp`` for
softplus), so no ``0 * inf`` turns a gradient into NaN.
"""

from __future__ import annotations

import warnings

from ... import ops
from ...ops import nn_functions
from ...ops.elementwise import gelu as gelu_op

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "elu", "elu_", "selu", "selu_", "celu",
           "celu_", "gelu", "silu", "mish", "sigmoid", "tanh", "hardtanh", "hardtanh_", "hardswish", "hardsigmoid",
           "softplus", "softsign", "tanhshrink", "threshold", "threshold_", "logsigmoid", "softmin", "softmax",
           "log_softmax", "glu", "hardshrink", "softshrink", "rrelu", "rrelu_", "gumbel_softmax"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _finish(input, out, inplace: bool):
    """``out``, or ``input`` overwritten with it for the ``inplace=True`` variants."""
    return input.copy_(out) if inplace else out


def relu(input, inplace: bool = False):
    """max(x, 0) (``torch.nn.functional.relu``)."""
    # one op either way: relu is on the training hot path (its gradient at 0 is 0, as in PyTorch)
    return ops.relu_(input) if inplace else ops.relu(input)


def relu_(input):
    """In-place :func:`relu`."""
    return relu(input, inplace=True)


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """clamp(x, min_val, max_val) (``torch.nn.functional.hardtanh``)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return input.clamp_(min_val, max_val) if inplace else ops.clamp(input, min_val, max_val)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace: bool = False):
    """min(max(x, 0), 6) (``torch.nn.functional.relu6``)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    """x if x > 0 else negative_slope * x (``torch.nn.functional.leaky_relu``)."""
    return _finish(input, ops.where(input > 0, input, input * negative_slope), inplace)


def leaky_relu_(input, negative_slope: float = 0.01):
    """In-place :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


def prelu(input, weight):
    """x if x > 0 else a * x, with one learnable ``a`` per channel (dim 1) or one shared (``torch.prelu``)."""
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    count = weight.numel()
    if count != 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if count != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{count} and channel size = {channels}.")
        weight = weight.reshape((count,) + (1,) * (input.dim() - 2))
    return ops.where(input > 0, input, weight * input)


def _elu(input, alpha: float, scale: float = 1.0, input_scale: float = 1.0):
    """scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1)); PyTorch's ELU family kernel."""
    negative = ops.expm1(ops.clamp(input, max=0) * input_scale) * alpha  # clamped: no overflow in the unpicked branch
    out = ops.where(input > 0, input, negative)
    return out * scale if scale != 1.0 else out


def elu(input, alpha: float = 1.0, inplace: bool = False):
    """x if x > 0 else alpha * (exp(x) - 1) (``torch.nn.functional.elu``)."""
    return _finish(input, _elu(input, alpha), inplace)


def elu_(input, alpha: float = 1.0):
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


def selu(input, inplace: bool = False):
    """scale * elu(x, alpha) with the self-normalising constants (``torch.nn.functional.selu``)."""
    return _finish(input, _elu(input, _SELU_ALPHA, _SELU_SCALE), inplace)


def selu_(input):
    """In-place :func:`selu`."""
    return selu(input, inplace=True)


def celu(input, alpha: float = 1.0, inplace: bool = False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (``torch.nn.functional.celu``)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _finish(input, _elu(input, alpha, 1.0, 1.0 / alpha), inplace)


def celu_(input, alpha: float = 1.0):
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


def gelu(input, approximate: str = "none"):
    """x * Φ(x), exactly with erf or with PyTorch's tanh approximation (``torch.nn.functional.gelu``)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return gelu_op(input, approximate)


def silu(input, inplace: bool = False):
    """x * sigmoid(x) (``torch.nn.functional.silu``)."""
    return _finish(input, input * ops.sigmoid(input), inplace)


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta * x)) / beta, and x where beta * x > threshold (``torch.nn.functional.softplus``)."""
    scaled = input * beta if beta != 1 else input
    smooth = ops.logaddexp(scaled, 0.0)  # stable for any sign, with the exact gradient sigmoid(beta * x)
    if beta != 1:
        smooth = smooth / beta
    return ops.where(scaled > threshold, input, smooth)


def mish(input, inplace: bool = False):
    """x * tanh(softplus(x)) (``torch.nn.functional.mish``)."""
    return _finish(input, input * ops.tanh(ops.logaddexp(input, 0.0)), inplace)


def sigmoid(input):
    """1 / (1 + exp(-x)) (``torch.nn.functional.sigmoid``)."""
    return ops.sigmoid(input)


def tanh(input):
    """Hyperbolic tangent (``torch.nn.functional.tanh``)."""
    return ops.tanh(input)


def hardswish(input, inplace: bool = False):
    """x * relu6(x + 3) / 6 (``torch.nn.functional.hardswish``)."""
    return _finish(input, input * ops.clamp(input + 3.0, 0.0, 6.0) / 6.0, inplace)


def hardsigmoid(input, inplace: bool = False):
    """relu6(x + 3) / 6 (``torch.nn.functional.hardsigmoid``)."""
    return _finish(input, ops.clamp(input / 6.0 + 0.5, 0.0, 1.0), inplace)


def softsign(input):
    """x / (1 + |x|) (``torch.nn.functional.softsign``)."""
    return input / (ops.abs(input) + 1)


def tanhshrink(input):
    """x - tanh(x) (``torch.nn.functional.tanhshrink``)."""
    return input - ops.tanh(input)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """x if x > threshold else value (``torch.nn.functional.threshold``)."""
    return _finish(input, ops.where(input > threshold, input, value), inplace)


def threshold_(input, threshold: float, value: float):
    """In-place :func:`threshold`."""
    return _threshold(input, threshold, value, inplace=True)


_threshold = threshold  # ``threshold_``'s argument shadows the function's name


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x| (``torch.nn.functional.logsigmoid``)."""
    return -ops.logaddexp(-input, 0.0)


def _dim(name: str, input, dim, stacklevel: int):
    """PyTorch's legacy implicit softmax dim (with its deprecation warning) when ``dim`` is None."""
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  f"as an argument.", stacklevel=stacklevel)
    return 0 if input.dim() in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """exp(x - max) / sum(exp(x - max)) along ``dim`` (``torch.nn.functional.softmax``)."""
    return ops.softmax(input, _dim("softmax", input, dim, _stacklevel), dtype=dtype)


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):
    """softmax(-x) along ``dim`` (``torch.nn.functional.softmin``)."""
    return softmax(-input, _dim("softmin", input, dim, _stacklevel), dtype=dtype)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """x - logsumexp(x) along ``dim`` (``torch.nn.functional.log_softmax``)."""
    return ops.log_softmax(input, _dim("log_softmax", input, dim, _stacklevel), dtype=dtype)


def glu(input, dim: int = -1):
    """a * sigmoid(b) where a, b are the halves of ``input`` along ``dim`` (``torch.nn.functional.glu``)."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    dim = ops.wrap_dim(dim, input.dim(), "glu")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size {size}")
    first, second = ops.split(input, size // 2, dim)
    return first * ops.sigmoid(second)


def hardshrink(input, lambd: float = 0.5):
    """x where ``|x| > lambd``, else 0 (``torch.nn.functional.hardshrink``)."""
    return nn_functions.hardshrink(input, lambd)


def softshrink(input, lambd: float = 0.5):
    """x - lambd above ``lambd``, x + lambd below ``-lambd``, else 0 (``torch.nn.functional.softshrink``)."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    zero = ops.zeros((), dtype=input.dtype, device=input.device)
    return ops.where(input > lambd, input - lambd, ops.where(input < -lambd, input + lambd, zero))


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """Leaky ReLU with a random negative slope from U(lower, upper) while training, their mean otherwise
    (``torch.nn.functional.rrelu``)."""
    return (nn_functions.rrelu_ if inplace else nn_functions.rrelu)(input, lower, upper, training)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    """In-place :func:`rrelu`."""
    return nn_functions.rrelu_(input, lower, upper, training)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """A sample of the Gumbel-softmax (concrete) distribution: softmax((logits + Gumbel noise) / tau); with ``hard``
    the one-hot of its argmax, with the soft sample's gradient (``torch.nn.functional.gumbel_softmax``)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -ops.empty_like(logits).exponential_().log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.max(dim, keepdim=True)[1]
    one_hot = ops.zeros_like(logits).scatter_(dim, index, 1.0)
    return one_hot - soft.detach() + soft
