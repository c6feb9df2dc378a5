"""NumPy kernels of the elementwise family: one table of NumPy functions, one wrapper per arity."""

from __future__ import annotations

import numpy as np
import scipy.special

from ._common import compute_np, operand, wrap



def _sign(a):
    return np.sign(a) if a.dtype != np.bool_ else a.copy()


def _round(a):
    return np.round(a) if a.dtype.kind in "fc" else a.copy()


def _frac(a):
    return a - np.trunc(a)


UNARY = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a), "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "sigmoid": scipy.special.expit, "erf": scipy.special.erf, "erfc": scipy.special.erfc,
    "erfinv": scipy.special.erfinv, "reciprocal": lambda a: 1 / a, "lgamma": scipy.special.gammaln,
    "digamma": scipy.special.digamma, "i0": scipy.special.i0, "sinc": np.sinc, "deg2rad": np.deg2rad,
    "rad2deg": np.rad2deg,
    "abs": np.abs, "sign": _sign, "floor": lambda a: np.floor(a) if a.dtype.kind in "fc" else a.copy(),
    "ceil": lambda a: np.ceil(a) if a.dtype.kind in "fc" else a.copy(), "round": _round,
    "trunc": lambda a: np.trunc(a) if a.dtype.kind in "fc" else a.copy(), "frac": _frac,
    "square": np.square, "positive": np.copy, "conj": np.conj, "neg": np.negative,
    "sgn": lambda a: np.where(a == 0, 0, a / np.abs(a)) if a.dtype.kind == "c" else _sign(a),
    "angle": np.angle, "real": lambda a: np.real(a).copy(), "imag": lambda a: np.imag(a).copy(),  # views otherwise
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "isposinf": np.isposinf,
    "isneginf": np.isneginf, "signbit": np.signbit, "isreal": np.isreal, "logical_not": np.logical_not,
    "bitwise_not": np.invert,
}


def _unary_kernel(fn):
    def kernel(spec, input):
        with np.errstate(all="ignore"):
            return wrap(fn(operand(input, compute_np(spec.compute_dtype))), spec.dtype)

    return kernel


def _int_floor_divide(a, b):
    if a.dtype.kind in "iub" and np.any(np.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError")
    return np.floor_divide(a, b)


def _int_checked(fn):
    def checked(a, b):
        if a.dtype.kind in "iu" and np.any(np.asarray(b) == 0):
            raise RuntimeError("ZeroDivisionError")
        return fn(a, b)

    return checked


def _trunc_divide(a, b):
    if a.dtype.kind in "iu":
        if np.any(np.asarray(b) == 0):
            raise RuntimeError("ZeroDivisionError")
        q = np.floor_divide(a, b)
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (np.asarray(b) < 0))
        return q + fix
    return np.trunc(a / b)


def _pow(a, b):
    if a.dtype.kind == "b":
        return np.power(a.astype(np.int8), np.asarray(b).astype(np.int8)).astype(bool)
    if a.dtype.kind in "iu" and np.any(np.asarray(b) < 0):  # PyTorch: 1 -> 1, -1 -> +-1, others -> 0
        b = np.asarray(b)
        positive = np.power(a, np.maximum(b, 0))
        odd = np.remainder(b, 2) == 1
        negative = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(a.dtype)
        return np.where(b < 0, negative, positive)
    return np.power(a, b)


def _shift(fn):
    def shift(a, b):
        bits = a.dtype.itemsize * 8
        b = np.asarray(b)
        big = (b >= bits) | (b < 0)
        out = fn(a, np.where(big, 0, b).astype(a.dtype))
        if np.any(big):
            fill = np.where(a < 0, -1, 0).astype(a.dtype) if fn is np.right_shift else np.zeros_like(a)
            out = np.where(big, fill, out)
        return out

    return shift


BINARY = {
    "mul": np.multiply, "div": np.true_divide, "floor_divide": _int_floor_divide,
    "remainder": _int_checked(np.remainder), "fmod": _int_checked(np.fmod), "atan2": np.arctan2,
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin, "hypot": np.hypot,
    "copysign": np.copysign, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
    "xlogy": scipy.special.xlogy, "nextafter": np.nextafter, "div_trunc": _trunc_divide, "pow": _pow,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": _shift(np.left_shift),
    "bitwise_right_shift": _shift(np.right_shift),
}


def _binary_kernel(fn):
    def kernel(spec, a, b):
        cd = compute_np(spec.compute_dtype)
        with np.errstate(all="ignore"):
            return wrap(fn(operand(a, cd), operand(b, cd)), spec.dtype)

    return kernel


def add(spec, a, b, alpha=1):
    cd = compute_np(spec.compute_dtype)
    x, y = operand(a, cd), operand(b, cd)
    if alpha != 1:
        y = y * operand(alpha, cd)
    return wrap(np.add(x, y) if cd.kind != "b" else np.logical_or(x, y), spec.dtype)


def sub(spec, a, b, alpha=1):
    cd = compute_np(spec.compute_dtype)
    x, y = operand(a, cd), operand(b, cd)
    if alpha != 1:
        y = y * operand(alpha, cd)
    return wrap(np.subtract(x, y), spec.dtype)


def where(spec, condition, input, other):
    cd = compute_np(spec.compute_dtype)
    cond = operand(condition, np.dtype(np.bool_))
    return wrap(np.where(cond, operand(input, cd), operand(other, cd)), spec.dtype)


def clamp(spec, input, min=None, max=None):
    cd = compute_np(spec.compute_dtype)
    x = operand(input, cd)
    with np.errstate(all="ignore"):
        if min is not None:
            lo = operand(min, cd)
            x = np.where(np.isnan(x) if cd.kind == "f" else False, x, np.maximum(x, lo))
        if max is not None:
            hi = operand(max, cd)
            x = np.where(np.isnan(x) if cd.kind == "f" else False, x, np.minimum(x, hi))
    return wrap(x, spec.dtype)


def _activation_backward(fn):
    """Fused kernels of the composites tanh_backward / sigmoid_backward / relu_backward (no meta: they get (g, y)
    or (g, x))."""

    def kernel(g, y):
        cd = compute_np(g.dtype)
        return wrap(fn(operand(g, cd), operand(y, cd)), g.dtype)

    return kernel


KERNELS = {name: _unary_kernel(fn) for name, fn in UNARY.items()}
KERNELS["tanh_backward"] = _activation_backward(lambda g, y: g * (1 - y * y))
def _softmax_kernel(log: bool):
    """Fused NumPy softmax / log_softmax (composites: they get (input, dim), no spec)."""

    def kernel(input, dim):
        a = operand(input, compute_np(input.dtype))
        with np.errstate(all="ignore"):
            shifted = a - np.max(a, axis=dim, keepdims=True) if a.size else a
            if log:
                out = shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
            else:
                e = np.exp(shifted)
                out = e / np.sum(e, axis=dim, keepdims=True)
        return wrap(out, input.dtype)

    return kernel


KERNELS["softmax"] = _softmax_kernel(False)
KERNELS["log_softmax"] = _softmax_kernel(True)
KERNELS["relu"] = lambda x: wrap(np.maximum(operand(x, x.dtype.numpy), 0), x.dtype)  # composite: no spec
KERNELS["sigmoid_backward"] = _activation_backward(lambda g, y: g * y * (1 - y))
KERNELS["relu_backward"] = _activation_backward(lambda g, x: np.where(x > 0, g, 0))
KERNELS.update({name: _binary_kernel(fn) for name, fn in BINARY.items()})
KERNELS.update(add=add, sub=sub, where=where, clamp=clamp)
