"""Quantization: quantize/dequantize, the quantized tensor's queries, fake quantization and a few quantized ops.

Quantizing is ``clamp(round_half_even(x * (1 / scale)) + zero_point, qmin, qmax)`` (ATen's ``quantize_val``, the
inverse scale taken in float32), dequantizing ``(q - zero_point) * scale``. Everything is a composite of core
ops over the quantized tensor's integer representation, so it runs on every device; fake quantization is
differentiable with the straight-through estimator. Any other op given a quantized tensor raises (the
``Quantized`` dispatch key has no kernels).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import dtypes as dt
from ..dispatch.keys import Quantized
from ..dispatch.operator import set_functionality_fallback
from ..quantized import (QuantizedTensor, make_quantized, per_channel_affine, per_channel_affine_float_qparams,
                         per_tensor_affine)
from ..tensor import Tensor
from ._util import check_int_arg
from .elementwise import clamp, logical_and, round as round_
from .reduction import aminmax

__all__: list = []
METHODS: dict = {}


def _export(fn, method: bool = True, function: bool = True):
    if function:
        __all__.append(fn.__name__)
    if method:
        METHODS[fn.__name__] = fn
    return fn


# -- the Quantized dispatch key: no op runs on a quantized operand ---------------------------------------------

def _not_implemented(op, below, *args, **kwargs):
    """Every op given a quantized tensor: PyTorch's NotImplementedError for the quantized backend."""
    flat = [b for a in list(args) + list(kwargs.values()) for b in (a if isinstance(a, (list, tuple)) else (a,))]
    q = next(a for a in flat if isinstance(a, QuantizedTensor))
    raise NotImplementedError(f"{op.name}(): could not run with arguments from the '{q.dispatch_name}' backend "
                              f"(dtype {q.dtype!r}): the op has no quantized kernel; call .dequantize() first")


set_functionality_fallback(Quantized, _not_implemented)


# -- checks ----------------------------------------------------------------------------------------------------

def _check_float_input(op: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.is_quantized or input.dtype.category != dt._FLOAT:
        raise RuntimeError(f"{op}(): expected a floating-point input tensor, got {input.dtype!r}")


def _check_qdtype(op: str, dtype, allowed=dt.QUANTIZED_DTYPES) -> None:
    if dtype not in allowed:
        names = ", ".join(repr(d) for d in allowed)
        raise RuntimeError(f"{op}(): dtype must be one of {names}, got {dtype!r}")


def _check_quantized(op: str, t) -> QuantizedTensor:
    if not isinstance(t, QuantizedTensor):
        backend = t.device.type.upper() if isinstance(t, Tensor) else type(t).__name__
        raise NotImplementedError(f"{op}(): could not run with arguments from the '{backend}' backend: expected a "
                                  f"quantized tensor")
    return t


def _check_scheme(op: str, t: QuantizedTensor, per_channel: bool) -> None:
    if (t._axis is not None) != per_channel:
        kind = "per-channel" if per_channel else "per-tensor"
        raise RuntimeError(f"{op}(): expected a {kind} quantized tensor, got qscheme {t._qscheme!r}")


def _number(op: str, name: str, value, kind):
    """A Python number from a number or a one-element tensor."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"{op}(): '{name}' must be a number or a one-element tensor, got shape "
                               f"{tuple(value.shape)}")
        value = value.item()
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{op}(): argument '{name}' must be {kind.__name__}, not {type(value).__name__}")
    return kind(value)


def _inverse_scale(scale):
    """ATen's ``1.0f / float(scale)``: the float32 inverse scale quantization multiplies by."""
    if isinstance(scale, Tensor):
        return 1.0 / scale.to(dt.float32)
    return float(np.float32(1.0) / np.float32(scale))


def _channel_view(t: Tensor, axis: int, ndim: int) -> Tensor:
    """A 1-D per-channel tensor shaped to broadcast along ``axis`` of an ``ndim``-D tensor."""
    shape = [1] * ndim
    shape[axis] = t.numel()
    return t.reshape(shape)


# -- quantize and dequantize ---------------------------------------------------------------------------------

def _quantize(input: Tensor, inv_scale, zero_point, dtype, zero_point_inside: bool) -> Tensor:
    """The integer representation: round(x * inv_scale) + zero_point clamped to ``dtype``'s range."""
    qmin, qmax = dt.QUANTIZED_RANGE[dtype]
    x = input.detach().to(dt.float32) * inv_scale
    q = round_(x + zero_point) if zero_point_inside else round_(x) + zero_point
    wide = dt.float64 if dtype is dt.qint32 else dt.float32  # qint32's range needs float64 to clamp exactly
    return clamp(q.to(wide), qmin, qmax).to(dt.QUANTIZED_STORAGE[dtype])


def quantize_per_tensor(input, scale, zero_point, dtype):
    """Quantize a float tensor (or each of a list, with tensor ``scale``/``zero_point``) with one scale and zero
    point (``torch.quantize_per_tensor``)."""
    if isinstance(input, (list, tuple)):
        if not isinstance(scale, Tensor) or not isinstance(zero_point, Tensor) \
                or scale.numel() != len(input) or zero_point.numel() != len(input):
            raise RuntimeError("quantize_per_tensor(): a list of tensors needs a scale tensor and a zero_point tensor "
                               f"with one element per tensor ({len(input)})")
        scales, points = scale.reshape(-1).tolist(), zero_point.reshape(-1).tolist()
        return [quantize_per_tensor(t, s, z, dtype) for t, s, z in zip(input, scales, points)]
    op = "quantize_per_tensor"
    _check_float_input(op, input)
    _check_qdtype(op, dtype)
    scale, zero_point = _number(op, "scale", scale, float), _number(op, "zero_point", zero_point, int)
    qmin, qmax = dt.QUANTIZED_RANGE[dtype]
    if not qmin <= zero_point <= qmax:
        raise RuntimeError(f"{op}(): zero_point {zero_point} is out of range for {dtype!r} [{qmin}, {qmax}]")
    if not scale > 0 or math.isinf(scale):
        raise RuntimeError(f"{op}(): scale must be a positive finite number, got {scale}")
    int_repr_ = _quantize(input, _inverse_scale(scale), zero_point, dtype, zero_point_inside=False)
    return make_quantized(int_repr_, dtype, per_tensor_affine, scale, zero_point)


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """Quantize a float tensor with one scale and zero point per slice along ``axis``
    (``torch.quantize_per_channel``; floating ``zero_points`` give ``per_channel_affine_float_qparams``)."""
    op = "quantize_per_channel"
    _check_float_input(op, input)
    _check_qdtype(op, dtype)
    axis = check_int_arg(op, "axis", axis)
    for name, t in (("scales", scales), ("zero_points", zero_points)):
        if not isinstance(t, Tensor) or t.dim() != 1:
            raise RuntimeError(f"{op}(): '{name}' must be a 1-D tensor")
    if not 0 <= axis < input.dim():
        raise RuntimeError(f"{op}(): axis {axis} is out of range for a tensor of {input.dim()} dimensions")
    if scales.numel() != input.shape[axis] or zero_points.numel() != input.shape[axis]:
        raise RuntimeError(f"{op}(): expected {input.shape[axis]} scales and zero_points (the size of axis {axis}), "
                           f"got {scales.numel()} and {zero_points.numel()}")
    float_qparams = zero_points.dtype.category == dt._FLOAT
    scales = scales.detach().to(input.device, dt.float64)  # the parameters live with the data, as in PyTorch
    zero_points = zero_points.detach().to(input.device, scales.dtype if float_qparams else dt.int64)
    if scales.numel() and not bool((scales > 0).all()):
        raise RuntimeError(f"{op}(): scales must be positive")
    qmin, qmax = dt.QUANTIZED_RANGE[dtype]
    if not float_qparams and zero_points.numel() and not bool(((zero_points >= qmin) & (zero_points <= qmax)).all()):
        raise RuntimeError(f"{op}(): zero_points are out of range for {dtype!r} [{qmin}, {qmax}]")
    inv = _channel_view(_inverse_scale(scales), axis, input.dim())
    point = _channel_view(zero_points.to(dt.float32), axis, input.dim())
    int_repr_ = _quantize(input, inv, point, dtype, zero_point_inside=float_qparams)
    scheme = per_channel_affine_float_qparams if float_qparams else per_channel_affine
    return make_quantized(int_repr_, dtype, scheme, scales, zero_points, axis)


def _choose_qparams(x_min: float, x_max: float, qmin: int, qmax: int, preserve_sparsity: bool = False,
                    reduce_range: bool = False) -> tuple:
    """ATen's ``ChooseQuantizationParams``: the (scale, zero_point) mapping [min, max] (widened to hold 0) onto
    [qmin, qmax]."""
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    if x_min < 0 < x_max and preserve_sparsity:
        symmetric_qmin, symmetric_qmax = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        max_scale = max(abs(x_min / symmetric_qmin), abs(x_max / symmetric_qmax))
        x_min, x_max = max_scale * symmetric_qmin, max_scale * symmetric_qmax
    x_min, x_max = float(np.float32(min(x_min, 0.0))), float(np.float32(max(x_max, 0.0)))
    scale = (x_max - x_min) / (qmax - qmin)
    if np.float32(scale) == 0 or math.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    small = float(np.float32(6.1e-5))
    if scale < small:
        amplifier = small / float(np.float32(scale))
        if x_min == 0:
            x_max = small * (qmax - qmin)
        elif x_max == 0:
            x_min = -small * (qmax - qmin)
        else:
            x_min, x_max = x_min * amplifier, x_max * amplifier
        scale = small
    from_min, from_max = qmin - x_min / scale, qmax - x_max / scale
    from_min_error, from_max_error = abs(qmin) - abs(x_min / scale), abs(qmax) - abs(x_max / scale)
    initial = from_min if from_min_error < from_max_error else from_max
    if preserve_sparsity:
        initial = (qmin + qmax) / 2
    zero_point = qmin if initial < qmin else qmax if initial > qmax else int(np.rint(initial))
    return scale, zero_point


def quantize_per_tensor_dynamic(input, dtype, reduce_range):
    """Quantize with a scale and zero point chosen from the input's min and max (``torch.quantize_per_tensor_dynamic``;
    ``float16`` just casts)."""
    op = "quantize_per_tensor_dynamic"
    _check_float_input(op, input)
    _check_qdtype(op, dtype, (dt.qint8, dt.quint8, dt.float16))
    if dtype is dt.float16:
        return input.to(dt.float16)
    lo, hi = (float(v) for v in aminmax(input.detach().to(dt.float32))) if input.numel() else (0.0, 0.0)
    qmin, qmax = dt.QUANTIZED_RANGE[dtype]
    scale, zero_point = _choose_qparams(lo, hi, qmin, qmax, reduce_range=bool(reduce_range))
    return quantize_per_tensor(input, scale, zero_point, dtype)


def dequantize(input):
    """The float32 values of a quantized tensor, or of each of a list; a float tensor as float32
    (``torch.dequantize``)."""
    if isinstance(input, (list, tuple)):
        return [dequantize(t) for t in input]
    if not isinstance(input, QuantizedTensor):
        if not isinstance(input, Tensor):
            raise TypeError(f"dequantize(): argument 'tensor' must be Tensor, not {type(input).__name__}")
        return input.to(dt.float32)
    q = input._int_repr.to(dt.float64 if input.dtype is dt.qint32 else dt.float32)
    if input._axis is None:
        return ((q - input._zero_point) * input._scale).to(dt.float32)
    view = lambda t: _channel_view(t.to(dt.float32), input._axis, input.dim())  # noqa: E731
    return (q - view(input._zero_point)).to(dt.float32) * view(input._scale)


def int_repr(input):
    """The integer representation of a quantized tensor, a uint8/int8/int32 tensor (``torch.int_repr``)."""
    return _check_quantized("int_repr", input)._int_repr.clone()


def q_scale(input) -> float:
    """The scale of a per-tensor quantized tensor (``torch.q_scale``)."""
    _check_scheme("q_scale", _check_quantized("q_scale", input), per_channel=False)
    return input._scale


def q_zero_point(input) -> int:
    """The zero point of a per-tensor quantized tensor (``torch.q_zero_point``)."""
    _check_scheme("q_zero_point", _check_quantized("q_zero_point", input), per_channel=False)
    return input._zero_point


def q_per_channel_scales(input):
    """The float64 scales of a per-channel quantized tensor (``torch.q_per_channel_scales``)."""
    _check_scheme("q_per_channel_scales", _check_quantized("q_per_channel_scales", input), per_channel=True)
    return input._scale.clone()


def q_per_channel_zero_points(input):
    """The zero points of a per-channel quantized tensor (``torch.q_per_channel_zero_points``)."""
    _check_scheme("q_per_channel_zero_points", _check_quantized("q_per_channel_zero_points", input), per_channel=True)
    return input._zero_point.clone()


def q_per_channel_axis(input) -> int:
    """The channel axis of a per-channel quantized tensor (``torch.q_per_channel_axis``)."""
    _check_scheme("q_per_channel_axis", _check_quantized("q_per_channel_axis", input), per_channel=True)
    return input._axis


def qscheme(self):
    """The quantization scheme of a quantized tensor (``torch.Tensor.qscheme``)."""
    return _check_quantized("qscheme", self)._qscheme


# -- fake quantization ------------------------------------------------------------------------------------------

def _check_fake_range(op: str, quant_min, quant_max) -> tuple:
    quant_min, quant_max = check_int_arg(op, "quant_min", quant_min), check_int_arg(op, "quant_max", quant_max)
    if quant_min > quant_max:
        raise RuntimeError(f"{op}(): `quant_min` should be less than or equal to `quant_max`, got {quant_min} and "
                           f"{quant_max}")
    return quant_min, quant_max


def _straight_through(input: Tensor, q: Tensor, zero_point, scale, quant_min: int, quant_max: int) -> Tensor:
    """``(clamp(q) - zero_point) * scale`` with the straight-through gradient: 1 where ``q`` is in range, else 0."""
    inside = logical_and(q >= quant_min, q <= quant_max)
    out = ((clamp(q, quant_min, quant_max) - zero_point) * scale).to(input.dtype)
    return out.detach() + (input - input.detach()) * inside


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """Quantize and dequantize in one step, ``(clamp(round(x / scale) + zero_point, quant_min, quant_max) -
    zero_point) * scale``, differentiable with the straight-through estimator
    (``torch.fake_quantize_per_tensor_affine``)."""
    op = "fake_quantize_per_tensor_affine"
    _check_float_input(op, input)
    quant_min, quant_max = _check_fake_range(op, quant_min, quant_max)
    scale, zero_point = _number(op, "scale", scale, float), _number(op, "zero_point", zero_point, int)
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError(f"{op}(): `zero_point` must be between `quant_min` and `quant_max`, got {zero_point}")
    q = round_(input.detach() * _inverse_scale(scale)) + zero_point
    return _straight_through(input, q, zero_point, scale, quant_min, quant_max)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """Per-channel fake quantization along ``axis``, differentiable in ``input`` with the straight-through estimator
    (``torch.fake_quantize_per_channel_affine``)."""
    op = "fake_quantize_per_channel_affine"
    _check_float_input(op, input)
    quant_min, quant_max = _check_fake_range(op, quant_min, quant_max)
    axis = check_int_arg(op, "axis", axis)
    for name, t in (("scale", scale), ("zero_point", zero_point)):
        if not isinstance(t, Tensor) or t.dim() != 1:
            raise RuntimeError(f"{op}(): '{name}' should be a 1-D tensor")
    if not 0 <= axis < input.dim():
        raise RuntimeError(f"{op}(): `axis` must be between 0 and number of dimensions of input, got {axis}")
    if scale.numel() != zero_point.numel() or scale.numel() != input.shape[axis]:
        raise RuntimeError(f"{op}(): dimensions of scale and zero-point are not consistent with input tensor: "
                           f"{scale.numel()} and {zero_point.numel()} for size {input.shape[axis]} of axis {axis}")
    if zero_point.numel() and not bool(((zero_point >= quant_min) & (zero_point <= quant_max)).all()):
        raise RuntimeError(f"{op}(): `zero_point` must be between `quant_min` and `quant_max`.")
    inv = _channel_view(_inverse_scale(scale.detach()), axis, input.dim())
    point = _channel_view(zero_point.detach().to(dt.float32), axis, input.dim())
    q = round_(input.detach() * inv + point)
    return _straight_through(input, q, point, _channel_view(scale.detach().to(dt.float32), axis, input.dim()),
                             quant_min, quant_max)


for _fn in (quantize_per_tensor, quantize_per_channel, quantize_per_tensor_dynamic, fake_quantize_per_tensor_affine,
            fake_quantize_per_channel_affine):
    _export(_fn, method=False)
for _fn in (dequantize, int_repr, q_scale, q_zero_point, q_per_channel_scales, q_per_channel_zero_points,
            q_per_channel_axis):
    _export(_fn)
_export(qscheme, function=False)  # core.qscheme is the scheme type
