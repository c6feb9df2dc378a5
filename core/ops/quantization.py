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
from ._util import check_int_arg, exporter
from .creation import tensor, zeros
from .elementwise import clamp, isinf, logical_and, round as round_, rsqrt, where
from .reduction import aminmax

__all__: list = []
METHODS: dict = {}


_export = exporter(__all__, METHODS)


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
    wide = dt.float64 if dtype is dt.qint32 else dt.float32  # qint32's range needs float64 to add and clamp exactly
    q = round_(x + zero_point).to(wide) if zero_point_inside else round_(x).to(wide) + zero_point
    return clamp(q, qmin, qmax).to(dt.QUANTIZED_STORAGE[dtype])


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
    if isinstance(input, QuantizedTensor):  # already quantized: returned as is, as ATen does
        return input
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
    point = _channel_view(zero_points.to(dt.float32 if float_qparams else dt.float64), axis, input.dim())
    int_repr_ = _quantize(input, inv, point, dtype, zero_point_inside=float_qparams)
    scheme = per_channel_affine_float_qparams if float_qparams else per_channel_affine
    return make_quantized(int_repr_, dtype, scheme, scales, zero_points, axis)


_f32 = np.float32  # ATen keeps min, max and the small-scale threshold in float32


def _choose_qparams(x_min: float, x_max: float, qmin: int, qmax: int, preserve_sparsity: bool = False,
                    reduce_range: bool = False) -> tuple:
    """ATen's ``quant_utils::ChooseQuantizationParams``: the (scale, zero_point) that map [min, max], widened to
    hold 0, onto [qmin, qmax] (``preserve_sparsity``: symmetric, the zero point in the middle)."""
    x_min, x_max = _f32(x_min), _f32(x_max)
    if reduce_range:
        qmin, qmax = int(qmin / 2), int(qmax / 2)  # C's truncating division
    if x_min < 0 < x_max and preserve_sparsity:
        symmetric_qmin, symmetric_qmax = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        max_scale = max(abs(float(x_min) / symmetric_qmin), abs(float(x_max) / symmetric_qmax))
        x_min, x_max = _f32(max_scale * symmetric_qmin), _f32(max_scale * symmetric_qmax)
    x_min, x_max = min(x_min, _f32(0)), max(x_max, _f32(0))
    scale = (float(x_max) - float(x_min)) / (qmax - qmin)
    if _f32(scale) == 0 or np.isinf(_f32(1) / _f32(scale)):
        scale = 0.1
    small = _f32(6.1e-5)
    if scale < small:
        amplifier = small / _f32(scale)
        if x_min == 0:
            x_max = _f32(small * (qmax - qmin))
        elif x_max == 0:
            x_min = _f32(-small * (qmax - qmin))
        else:
            x_min, x_max = _f32(x_min * amplifier), _f32(x_max * amplifier)
        scale = float(small)
    lo, hi = float(x_min) / scale, float(x_max) / scale
    from_min, from_max = qmin - lo, qmax - hi
    initial = from_min if abs(qmin) - abs(lo) < abs(qmax) - abs(hi) else from_max
    if x_min < 0 < x_max and preserve_sparsity:
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
    return _straight_through(input, q, zero_point, float(_f32(scale)), quant_min, quant_max)  # ATen's float scale


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


def _moving_average(running: Tensor, current: Tensor, averaging_const: float) -> None:
    """ATen's moving-average observer step, in place: the current value where ``running`` is still infinite."""
    base = where(isinf(running), current, running)  # then the step below keeps the current value
    running.copy_(base + averaging_const * (current - base))


def fused_moving_avg_obs_fake_quant(self, observer_on, fake_quant_on, running_min, running_max, scale, zero_point,
                                    averaging_const, quant_min, quant_max, ch_axis, per_row_fake_quant=False,
                                    symmetric_quant=False):
    """Update a moving-average min/max observer, choose its quantization parameters and fake-quantize ``self``
    (``torch.fused_moving_avg_obs_fake_quant``): ``running_min``, ``running_max``, ``scale`` and ``zero_point``
    are updated in place when ``observer_on`` / ``fake_quant_on`` hold 1; returns the output."""
    op = "fused_moving_avg_obs_fake_quant"
    _check_float_input(op, self)
    quant_min, quant_max = _check_fake_range(op, quant_min, quant_max)
    ch_axis = check_int_arg(op, "ch_axis", ch_axis)
    if ch_axis >= self.dim():
        raise RuntimeError(f"Error in {op}: ch_axis must be < self.dim()")
    if self.numel() == 0:
        return self.clone()
    x = self.detach().to(dt.float32)
    if per_row_fake_quant:
        rows = x.movedim(ch_axis, 0).reshape(x.shape[ch_axis], -1)
        if running_min.numel() == 0:  # ATen sizes an empty observer to the channels on first use
            for t, fill in ((running_min, math.inf), (running_max, -math.inf), (scale, 1.0), (zero_point, 0)):
                t.resize_(x.shape[ch_axis]).fill_(fill)
        current = aminmax(rows, dim=1)
    else:
        current = aminmax(x)
    if int(observer_on.item()) == 1:
        _moving_average(running_min, current.min.reshape(running_min.shape), float(averaging_const))
        _moving_average(running_max, current.max.reshape(running_max.shape), float(averaging_const))
    if int(fake_quant_on.item()) != 1:
        return self.clone()
    params = [_choose_qparams(lo, hi, quant_min, quant_max, preserve_sparsity=bool(symmetric_quant))
              for lo, hi in zip(running_min.reshape(-1).tolist(), running_max.reshape(-1).tolist())]
    scale.copy_(tensor([p[0] for p in params], dtype=scale.dtype).reshape(scale.shape))
    zero_point.copy_(tensor([p[1] for p in params], dtype=zero_point.dtype).reshape(zero_point.shape))
    if per_row_fake_quant:
        return fake_quantize_per_channel_affine(self, scale, zero_point, ch_axis, quant_min, quant_max)
    return fake_quantize_per_tensor_affine(self, params[0][0], params[0][1], quant_min, quant_max)


def _quant_loss(x: Tensor, xmin: np.float32, xmax: np.float32, bit_width: int) -> np.float32:
    """ATen's ``calculate_quant_loss``: the L2 error of quantizing ``x`` over [xmin, xmax] with ``bit_width`` bits
    (xmin and the scale rounded through float16, as ATen does)."""
    xmin = _f32(np.float16(xmin))
    qmax = _f32((1 << bit_width) - 1)
    data_range = _f32(xmax - xmin)
    scale = _f32(1) if data_range == 0 else _f32(np.float16(data_range / qmax))
    inverse = _f32(1) if scale == 0 else _f32(1) / scale
    q = clamp(round_((x - float(xmin)) * float(inverse)), 0, float(qmax)) * float(scale) + float(xmin)
    return _f32(math.sqrt(float(((x - q) ** 2).sum())))


def choose_qparams_optimized(input, numel, n_bins, ratio, bit_width):
    """The ``(xmax, xmin)`` range (1-element float32 tensors) that greedily minimises the L2 quantization error of
    the first ``numel`` values with ``bit_width`` bits, narrowing by 1/``n_bins`` steps down to ``1 - ratio`` of
    the range (``torch.choose_qparams_optimized``)."""
    op = "choose_qparams_optimized"
    _check_float_input(op, input)
    numel, n_bins, bit_width = (check_int_arg(op, name, v) for name, v in
                                (("numel", numel), ("n_bins", n_bins), ("bit_width", bit_width)))
    if not 0 < numel <= input.numel():
        raise RuntimeError(f"{op}(): numel must be in [1, {input.numel()}], got {numel}")
    x = input.detach().to(dt.float32).reshape(-1)[:numel]
    xmin, xmax = (_f32(float(v)) for v in aminmax(x))
    stepsize = _f32((xmax - xmin) / _f32(n_bins))
    min_bins = int(n_bins * (1.0 - float(_f32(ratio))))
    best_loss = cur_loss = _quant_loss(x, xmin, xmax, bit_width)
    cur_min, cur_max = xmin, xmax
    threshold = _f32(min_bins * stepsize)
    while _f32(cur_min + threshold) < cur_max:
        loss_left = _quant_loss(x, _f32(cur_min + stepsize), cur_max, bit_width)
        loss_right = _quant_loss(x, cur_min, _f32(cur_max - stepsize), bit_width)
        if cur_loss < loss_left and cur_loss < loss_right and cur_loss < best_loss:  # a local optimum
            best_loss, xmin, xmax = cur_loss, cur_min, cur_max
        if loss_left < loss_right:
            cur_min, cur_loss = _f32(cur_min + stepsize), loss_left
        else:
            cur_max, cur_loss = _f32(cur_max - stepsize), loss_right
    return (tensor([float(xmax)], dtype=dt.float32, device=input.device),
            tensor([float(xmin)], dtype=dt.float32, device=input.device))


# -- quantized tensors in, quantized tensors out -----------------------------------------------------------------

def empty_quantized(size, qtensor, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """A quantized tensor of ``size`` with ``qtensor``'s quantization parameters (``torch.empty_quantized``); its
    values are unspecified (the integer representation is zeros here)."""
    op = "empty_quantized"
    _check_quantized(op, qtensor)
    dtype = qtensor.dtype if dtype is None else dtype
    _check_qdtype(op, dtype)
    shape = tuple(check_int_arg(op, "size", s) for s in size)
    device = qtensor.device if device is None else device
    if qtensor._axis is not None and (qtensor._axis >= len(shape) or shape[qtensor._axis] != qtensor._scale.numel()):
        raise RuntimeError(f"{op}(): size {shape} does not have {qtensor._scale.numel()} channels along axis "
                           f"{qtensor._axis}, as the per-channel parameters of qtensor need")
    int_repr_ = zeros(shape, dtype=dt.QUANTIZED_STORAGE[dtype], device=device)
    params = (qtensor._scale, qtensor._zero_point) if qtensor._axis is None else \
        (qtensor._scale.to(device), qtensor._zero_point.to(device))
    return make_quantized(int_repr_, dtype, qtensor._qscheme, *params, qtensor._axis)


def _check_per_tensor(op: str, input) -> QuantizedTensor:
    _check_quantized(op, input)
    if input._axis is not None:
        raise RuntimeError(f"{op}(): expected a per-tensor quantized input, got qscheme {input._qscheme!r}")
    return input


def _quantized_max_pool(nd: int, input, kernel_size, stride, padding, dilation, ceil_mode):
    """Max pooling over the integer representation (order-preserving: the scale is positive), same parameters."""
    op = f"quantized_max_pool{nd}d"
    _check_per_tensor(op, input)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): expected a {nd + 1}-D or {nd + 2}-D input, got {input.dim()}-D")
    from . import nn_functions

    pool = (nn_functions.max_pool1d, nn_functions.max_pool2d, nn_functions.max_pool3d)[nd - 1]
    wide = dt.float64 if input.dtype is dt.qint32 else dt.float32  # holds every value of the representation exactly
    pooled = pool(input._int_repr.to(wide), kernel_size, stride, padding, dilation, ceil_mode)
    return input._with_int_repr(pooled.to(input._int_repr.dtype))


def quantized_max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """1-D max pooling of a quantized tensor, quantized like it (``torch.quantized_max_pool1d``)."""
    return _quantized_max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode)


def quantized_max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """2-D max pooling of a quantized tensor, quantized like it (``torch.quantized_max_pool2d``)."""
    return _quantized_max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)


def quantized_max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """3-D max pooling of a quantized tensor, quantized like it (``torch.quantized_max_pool3d``)."""
    return _quantized_max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode)


def quantized_batch_norm(input, weight, bias, mean, var, eps, output_scale, output_zero_point):
    """Batch normalisation (channels on dim 1, given statistics) of a quantized tensor, requantized with
    ``output_scale`` and ``output_zero_point`` (``torch.quantized_batch_norm``)."""
    op = "quantized_batch_norm"
    _check_per_tensor(op, input)
    if input.dim() < 2:
        raise RuntimeError(f"{op}(): expected an input of at least 2 dimensions (N, C, ...), got {input.dim()}-D")
    channels = input.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("mean", mean), ("var", var)):
        if t is not None and (not isinstance(t, Tensor) or t.shape != (channels,)):
            raise RuntimeError(f"{op}(): '{name}' must be a tensor of shape ({channels},)")
    view = lambda t: _channel_view(t.detach().to(input.device, dt.float32), 1, input.dim())  # noqa: E731
    a = view(rsqrt(var.detach().to(dt.float32) + float(eps)))
    if weight is not None:
        a = a * view(weight)
    y = (input.dequantize() - view(mean)) * a
    if bias is not None:
        y = y + view(bias)
    return quantize_per_tensor(y, output_scale, output_zero_point, input.dtype)


for _fn in (quantize_per_tensor, quantize_per_channel, quantize_per_tensor_dynamic, fake_quantize_per_tensor_affine,
            fake_quantize_per_channel_affine, fused_moving_avg_obs_fake_quant, choose_qparams_optimized,
            empty_quantized, quantized_max_pool1d, quantized_max_pool2d, quantized_max_pool3d, quantized_batch_norm):
    _export(_fn, method=False)
for _fn in (dequantize, int_repr, q_scale, q_zero_point, q_per_channel_scales, q_per_channel_zero_points,
            q_per_channel_axis):
    _export(_fn)
_export(qscheme, function=False)  # core.qscheme is the scheme type
