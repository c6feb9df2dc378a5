"""cuda kernels of the elementwise family: rendered CUDA C for float dtypes, the array module's ufuncs elsewhere.

Written against ``rt.xp`` (CuPy on the GPU, NumPy in the host-simulated tests) and ``rt.special``.
"""

from __future__ import annotations

import numpy as np

from ..codegen import FLOAT_DTYPES, out_dtype_of, raw_ops
from ._common import compute_np, operand


def unary_table(xp, special) -> dict:
    """op -> function of one array, matching core's NumPy reference kernels."""
    def keep_ints(fn):
        return lambda a: fn(a) if a.dtype.kind in "fc" else a.copy()

    def sign(a):
        return xp.sign(a) if a.dtype != np.bool_ else a.copy()

    return {
        "exp": xp.exp, "exp2": xp.exp2, "expm1": xp.expm1, "log": xp.log, "log2": xp.log2, "log10": xp.log10,
        "log1p": xp.log1p, "sqrt": xp.sqrt, "rsqrt": lambda a: 1 / xp.sqrt(a), "sin": xp.sin, "cos": xp.cos,
        "tan": xp.tan, "asin": xp.arcsin, "acos": xp.arccos, "atan": xp.arctan, "sinh": xp.sinh,
        "cosh": xp.cosh, "tanh": xp.tanh, "asinh": xp.arcsinh, "acosh": xp.arccosh, "atanh": xp.arctanh,
        "sigmoid": special.expit, "erf": special.erf, "erfc": special.erfc, "erfinv": special.erfinv,
        "reciprocal": lambda a: 1 / a, "lgamma": special.gammaln, "digamma": special.digamma, "i0": xp.i0,
        "sinc": xp.sinc, "deg2rad": xp.deg2rad, "rad2deg": xp.rad2deg, "abs": xp.abs, "sign": sign,
        "floor": keep_ints(xp.floor), "ceil": keep_ints(xp.ceil), "round": keep_ints(xp.round),
        "trunc": keep_ints(xp.trunc), "frac": lambda a: a - xp.trunc(a), "square": xp.square,
        "positive": xp.copy, "neg": xp.negative, "sgn": sign,
        "isnan": xp.isnan, "isinf": xp.isinf, "isfinite": xp.isfinite, "isposinf": xp.isposinf,
        "isneginf": xp.isneginf, "signbit": xp.signbit, "isreal": xp.isreal, "logical_not": xp.logical_not,
        "bitwise_not": xp.invert,
    }


def binary_table(xp, special) -> dict:
    """op -> function of two arrays (or an array and a scalar), matching core's NumPy reference kernels."""
    def nonzero_divisor(fn):  # the reference raises on integer division by zero (PyTorch's CPU does too)
        def checked(a, b):
            if a.dtype.kind in "iu" and bool(xp.any(xp.asarray(b) == 0)):
                raise RuntimeError("ZeroDivisionError")
            return fn(a, b)
        return checked

    def trunc_divide(a, b):
        if a.dtype.kind in "iu":
            q = nonzero_divisor(xp.floor_divide)(a, b)
            return q + ((xp.remainder(a, b) != 0) & ((a < 0) != (xp.asarray(b) < 0)))
        return xp.trunc(a / b)

    def power(a, b):
        if a.dtype.kind == "b":
            return xp.power(a.astype(np.int8), xp.asarray(b).astype(np.int8)).astype(bool)
        if a.dtype.kind in "iu":  # PyTorch: 1 -> 1, -1 -> +-1, others -> 0 for negative exponents
            b = xp.asarray(b)
            positive = xp.power(a, xp.maximum(b, 0))
            negative = xp.where(a == 1, 1, xp.where(a == -1, xp.where(xp.remainder(b, 2) == 1, -1, 1), 0))
            return xp.where(b < 0, negative.astype(a.dtype), positive)
        return xp.power(a, b)

    def shift(fn, arithmetic: bool):
        def shifted(a, b):
            b = xp.asarray(b)
            big = (b >= a.dtype.itemsize * 8) | (b < 0)
            out = fn(a, xp.where(big, 0, b).astype(a.dtype))
            fill = xp.where(a < 0, -1, 0).astype(a.dtype) if arithmetic else xp.zeros_like(a)
            return xp.where(big, fill, out)
        return shifted

    return {
        "mul": xp.multiply, "div": xp.true_divide, "floor_divide": nonzero_divisor(xp.floor_divide),
        "remainder": nonzero_divisor(xp.remainder), "fmod": nonzero_divisor(xp.fmod), "atan2": xp.arctan2,
        "maximum": xp.maximum, "minimum": xp.minimum, "fmax": xp.fmax, "fmin": xp.fmin, "hypot": xp.hypot,
        "copysign": xp.copysign, "logaddexp": xp.logaddexp, "logaddexp2": xp.logaddexp2, "xlogy": special.xlogy,
        "nextafter": xp.nextafter, "div_trunc": trunc_divide, "pow": power,
        "eq": xp.equal, "ne": xp.not_equal, "lt": xp.less, "le": xp.less_equal, "gt": xp.greater,
        "ge": xp.greater_equal, "logical_and": xp.logical_and, "logical_or": xp.logical_or,
        "logical_xor": xp.logical_xor, "bitwise_and": xp.bitwise_and, "bitwise_or": xp.bitwise_or,
        "bitwise_xor": xp.bitwise_xor, "bitwise_left_shift": shift(xp.left_shift, False),
        "bitwise_right_shift": shift(xp.right_shift, True),
    }


def _try_raw(rt, op: str, spec, tensors) -> object:
    """The result of the rendered kernel of ``op``, or None when it does not apply (then the ufunc runs)."""
    if rt.raw is None or op not in _RAW:
        return None
    dtype = getattr(tensors[0], "dtype", None)
    dtype = dtype.name if dtype is not None else None
    if dtype not in FLOAT_DTYPES or spec.dtype.name != out_dtype_of(op, dtype):
        return None
    for t in tensors:  # scalars and mixed dtypes take the ufunc path
        if not hasattr(t, "_storage") or t.dtype.name != dtype:
            return None
    out = rt.xp.empty(spec.shape, spec.dtype.numpy)
    if not rt.raw.launch(op, dtype, out, [rt.array(t) for t in tensors]):
        return None
    return rt.wrap(out, spec)


_RAW = raw_ops()


def kernels(rt) -> dict:
    """Every elementwise kernel, bound to runtime ``rt``."""
    xp = rt.xp

    def unary(op, fn):
        def kernel(spec, input):
            out = _try_raw(rt, op, spec, (input,))
            if out is not None:
                return out
            with rt.errstate():
                return rt.wrap(fn(operand(rt, input, compute_np(spec.compute_dtype))), spec)
        return kernel

    def binary(op, fn):
        def kernel(spec, a, b):
            out = _try_raw(rt, op, spec, (a, b))
            if out is not None:
                return out
            cd = compute_np(spec.compute_dtype)
            with rt.errstate():
                return rt.wrap(fn(operand(rt, a, cd), operand(rt, b, cd)), spec)
        return kernel

    def add_or_sub(op, fn):
        def kernel(spec, a, b, alpha=1):
            if alpha == 1:
                out = _try_raw(rt, op, spec, (a, b))
                if out is not None:
                    return out
            cd = compute_np(spec.compute_dtype)
            x, y = operand(rt, a, cd), operand(rt, b, cd)
            if alpha != 1:
                y = y * operand(rt, alpha, cd)
            if cd.kind == "b":  # bool + bool is logical or (sub of bools is refused by the meta)
                return rt.wrap(xp.logical_or(x, y), spec)
            return rt.wrap(fn(x, y), spec)
        return kernel

    def where(spec, condition, input, other):
        cd = compute_np(spec.compute_dtype)
        cond = operand(rt, condition, np.dtype(np.bool_))
        return rt.wrap(xp.where(cond, operand(rt, input, cd), operand(rt, other, cd)), spec)

    def clamp(spec, input, min=None, max=None):
        cd = compute_np(spec.compute_dtype)
        x = operand(rt, input, cd)
        nan = xp.isnan(x) if cd.kind == "f" else None
        for bound, pick in ((min, xp.maximum), (max, xp.minimum)):
            if bound is not None:
                picked = pick(x, operand(rt, bound, cd))
                x = picked if nan is None else xp.where(nan, x, picked)
        return rt.wrap(x if x.dtype == spec.dtype.numpy else x.astype(spec.dtype.numpy), spec)

    def fused_backward(op, fn):  # composites without a spec: they get (g, y)
        def kernel(g, y):
            spec = _spec_of(g, y)
            out = _try_raw(rt, op, spec, (g, y))
            if out is not None:
                return out
            cd = compute_np(g.dtype)
            return rt.wrap(fn(operand(rt, g, cd), operand(rt, y, cd)), spec)
        return kernel

    def relu(x):
        spec = _Spec(x)
        out = _try_raw(rt, "relu", spec, (x,))
        return out if out is not None else rt.wrap(xp.maximum(rt.array(x), 0), spec)

    table = {name: unary(name, fn) for name, fn in unary_table(xp, rt.special).items()}
    table.update({name: binary(name, fn) for name, fn in binary_table(xp, rt.special).items()})
    table.update(add=add_or_sub("add", xp.add), sub=add_or_sub("sub", xp.subtract), where=where, clamp=clamp,
                 relu=relu, tanh_backward=fused_backward("tanh_backward", lambda g, y: g * (1 - y * y)),
                 sigmoid_backward=fused_backward("sigmoid_backward", lambda g, y: g * y * (1 - y)))
    return table


class _Spec:
    """The output spec of a same-shape composite: the first tensor's shape, dtype and device."""

    __slots__ = ("shape", "dtype", "device", "compute_dtype")

    def __init__(self, t):
        self.shape, self.dtype, self.device, self.compute_dtype = t._shape, t.dtype, t.device, t.dtype


def _spec_of(g, y) -> _Spec:
    spec = _Spec(g)
    spec.shape = np.broadcast_shapes(g._shape, y._shape)
    return spec
