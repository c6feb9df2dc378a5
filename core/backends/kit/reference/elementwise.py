"""Reference kernels of the elementwise family: one table of array functions, one wrapper per arity."""

from __future__ import annotations

import numpy as np

from .... import dtypes
from . import COMPUTE_NP, compute_np, operands, silencer

_BOOL = np.dtype(np.bool_)


def unary_table(xp, special) -> dict:
    """op -> function of one array (the reference semantics; PyTorch's where they differ from NumPy's)."""

    def keep_ints(fn):  # rounding an integer or bool is the identity (a copy)
        return lambda a: fn(a) if a.dtype.kind in "fc" else a.copy()

    def sign(a):  # PyTorch's (a > 0) - (a < 0): 0 for NaN, where NumPy gives NaN
        if a.dtype == _BOOL:
            return a.copy()
        out = xp.sign(a)
        return xp.where(out != out, a.dtype.type(0), out) if a.dtype.kind == "f" else out

    return {
        "exp": xp.exp, "exp2": xp.exp2, "expm1": xp.expm1, "log": xp.log, "log2": xp.log2, "log10": xp.log10,
        "log1p": xp.log1p, "sqrt": xp.sqrt, "rsqrt": lambda a: 1 / xp.sqrt(a), "sin": xp.sin, "cos": xp.cos,
        "tan": xp.tan, "asin": xp.arcsin, "acos": xp.arccos, "atan": xp.arctan, "sinh": xp.sinh,
        "cosh": xp.cosh, "tanh": xp.tanh, "asinh": xp.arcsinh, "acosh": xp.arccosh, "atanh": xp.arctanh,
        "sigmoid": lambda a: 1 / (1 + xp.exp(-a)) if a.dtype.kind == "c" else special.expit(a),  # expit is real
        "erf": special.erf, "erfc": special.erfc, "erfinv": special.erfinv,
        "reciprocal": lambda a: 1 / a, "lgamma": special.gammaln, "digamma": special.digamma, "i0": special.i0,
        "sinc": xp.sinc, "deg2rad": xp.deg2rad, "rad2deg": xp.rad2deg,
        "abs": xp.abs, "sign": sign, "floor": keep_ints(xp.floor), "ceil": keep_ints(xp.ceil),
        "round": keep_ints(xp.round), "trunc": keep_ints(xp.trunc), "frac": lambda a: a - xp.trunc(a),
        "square": xp.square, "positive": xp.copy, "conj": xp.conj, "neg": xp.negative,
        "sgn": lambda a: xp.where(a == 0, 0, a / xp.abs(a)) if a.dtype.kind == "c" else sign(a),
        "angle": xp.angle,
        "isnan": xp.isnan, "isinf": xp.isinf, "isfinite": xp.isfinite, "isposinf": xp.isposinf,
        "isneginf": xp.isneginf, "signbit": xp.signbit, "isreal": xp.isreal, "logical_not": xp.logical_not,
        "bitwise_not": xp.invert,
        **special_unary_table(xp, special),
    }


def special_unary_table(xp, special) -> dict:
    """The ``special_*`` unary ops (core.special) the special-function module has (``cupyx.scipy.special`` lacks a
    few, e.g. ``airy``: those ops run on the CPU fallback there)."""

    def spherical_bessel_j0(a):  # sin(x) / x: 1 at 0 and 0 at +-inf, as PyTorch's
        return xp.where(a == 0, a.dtype.type(1), xp.where(xp.isinf(a), a.dtype.type(0), xp.sin(a) / a))

    table = _from_special(special, {
        "erfcx": "erfcx", "i0e": "i0e", "i1": "i1", "i1e": "i1e", "ndtri": "ndtri", "log_ndtr": "log_ndtr",
        "bessel_j0": "j0", "bessel_j1": "j1", "bessel_y0": "y0", "bessel_y1": "y1", "modified_bessel_k0": "k0",
        "modified_bessel_k1": "k1", "scaled_modified_bessel_k0": "k0e", "scaled_modified_bessel_k1": "k1e"})
    if hasattr(special, "airy"):
        table["special_airy_ai"] = lambda a: special.airy(a)[0]
    table["special_spherical_bessel_j0"] = spherical_bessel_j0
    return table


def _from_special(special, names: dict) -> dict:
    """``{"special_<op>": special.<function>}`` for the functions ``special`` has."""
    return {f"special_{op}": getattr(special, fn) for op, fn in names.items() if hasattr(special, fn)}


def binary_table(xp, special) -> dict:
    """op -> function of two arrays (or an array and a scalar)."""

    def nonzero_divisor(fn, kinds="iu"):  # integer division by zero raises, as on PyTorch's CPU
        def checked(a, b):
            if a.dtype.kind in kinds and bool(xp.any(xp.asarray(b) == 0)):
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
        if a.dtype.kind in "iu" and bool(xp.any(xp.asarray(b) < 0)):  # PyTorch: 1 -> 1, -1 -> +-1, others -> 0
            b = xp.asarray(b)
            positive = xp.power(a, xp.maximum(b, 0))
            odd = xp.remainder(b, 2) == 1
            negative = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0)).astype(a.dtype)
            return xp.where(b < 0, negative, positive)
        return xp.power(a, b)

    def shift(fn, arithmetic: bool):  # shifting by the width or more (or by a negative count) saturates
        def shifted(a, b):
            b = xp.asarray(b)
            big = (b >= a.dtype.itemsize * 8) | (b < 0)
            out = fn(a, xp.where(big, 0, b).astype(a.dtype))
            if bool(xp.any(big)):
                fill = xp.where(a < 0, -1, 0).astype(a.dtype) if arithmetic else xp.zeros_like(a)
                out = xp.where(big, fill, out)
            return out

        return shifted

    return {
        "mul": xp.multiply, "div": xp.true_divide, "floor_divide": nonzero_divisor(xp.floor_divide, "iub"),
        "remainder": nonzero_divisor(xp.remainder), "fmod": nonzero_divisor(xp.fmod), "atan2": xp.arctan2,
        "maximum": xp.maximum, "minimum": xp.minimum, "fmax": xp.fmax, "fmin": xp.fmin, "hypot": xp.hypot,
        "copysign": xp.copysign, "logaddexp": xp.logaddexp, "logaddexp2": xp.logaddexp2,
        "xlogy": special.xlogy, "nextafter": xp.nextafter, "div_trunc": trunc_divide, "pow": power,
        "eq": xp.equal, "ne": xp.not_equal, "lt": xp.less, "le": xp.less_equal, "gt": xp.greater,
        "ge": xp.greater_equal, "logical_and": xp.logical_and, "logical_or": xp.logical_or,
        "logical_xor": xp.logical_xor, "bitwise_and": xp.bitwise_and, "bitwise_or": xp.bitwise_or,
        "bitwise_xor": xp.bitwise_xor, "bitwise_left_shift": shift(xp.left_shift, False),
        "bitwise_right_shift": shift(xp.right_shift, True),
        **_from_special(special, {name: name for name in ("xlog1py", "zeta", "gammainc", "gammaincc")}),
        **polynomial_table(xp),
    }


def polynomial_table(xp) -> dict:
    """The orthogonal polynomials p_n(x) of core.special by their three-term recurrences, each element stopping at
    its own n; n is truncated to an integer, and n < 0 (or not finite, as PyTorch's int64 cast gives) is 0."""

    def recurrence(first, step, shifted=False):
        def polynomial(x, n):
            x, n = xp.broadcast_arrays(xp.asarray(x), xp.asarray(n))
            if shifted:
                x = x + x - 1
            n = xp.where(xp.isfinite(n), xp.trunc(n), -1)
            zero, one = xp.zeros_like(x), xp.ones_like(x)
            previous, current = one, first(x)
            out = xp.where(n == 0, one, xp.where(n == 1, current, zero))
            for k in range(1, int(n.max()) if n.size else 0):
                previous, current = current, step(k, x, current, previous)
                out = xp.where(n == k + 1, current, out)
            return xp.where(n < 0, zero, out).astype(x.dtype)

        return polynomial

    def chebyshev(k, x, current, previous):
        return (x + x) * current - previous

    def legendre(k, x, current, previous):
        return ((2 * k + 1) * x * current - k * previous) / (k + 1)

    def laguerre(k, x, current, previous):
        return ((2 * k + 1 - x) * current - k * previous) / (k + 1)

    kinds = {"t": lambda x: x, "u": lambda x: x + x, "v": lambda x: x + x - 1, "w": lambda x: x + x + 1}
    table = {f"special_{prefix}chebyshev_polynomial_{kind}": recurrence(first, chebyshev, bool(prefix))
             for kind, first in kinds.items() for prefix in ("", "shifted_")}
    table.update(special_hermite_polynomial_h=recurrence(lambda x: x + x, lambda k, x, c, p: (x + x) * c - 2 * k * p),
                 special_hermite_polynomial_he=recurrence(lambda x: x, lambda k, x, c, p: x * c - k * p),
                 special_laguerre_polynomial_l=recurrence(lambda x: 1 - x, laguerre),
                 special_legendre_polynomial_p=recurrence(lambda x: x, legendre))
    return table


def kernels(ctx) -> dict:
    """Every elementwise kernel over ``ctx`` (an :class:`~core.backends.kit.reference.ArrayContext`)."""
    xp, wrap, errstate, array = ctx.xp, ctx.wrap, ctx.errstate, ctx.array
    operand = operands(ctx)
    mute, unmute = silencer(ctx)

    # The hot kernels read a tensor's cached array directly when it already has the compute dtype (what
    # ``operand`` would return) and silence warnings with mute/unmute: tiny ops cost their Python frames.
    def unary(fn):
        def kernel(spec, input):
            cd = COMPUTE_NP[spec.compute_dtype]
            x = getattr(input, "_np", None)
            if x is None or x.dtype != cd:
                x = operand(input, cd)
            token = mute()
            try:
                return wrap(fn(x), spec)
            finally:
                unmute(token)

        return kernel

    def binary(fn):
        def kernel(spec, a, b):
            cd = COMPUTE_NP[spec.compute_dtype]
            x = getattr(a, "_np", None)
            if x is None or x.dtype != cd:
                x = operand(a, cd)
            y = getattr(b, "_np", None)
            if y is None or y.dtype != cd:
                y = operand(b, cd)
            token = mute()
            try:
                return wrap(fn(x, y), spec)
            finally:
                unmute(token)

        return kernel

    def add(spec, a, b, alpha=1):
        cd = COMPUTE_NP[spec.compute_dtype]
        x = getattr(a, "_np", None)
        if x is None or x.dtype != cd:
            x = operand(a, cd)
        y = getattr(b, "_np", None)
        if y is None or y.dtype != cd:
            y = operand(b, cd)
        token = mute()  # an overflow gives inf without NumPy's warning, as in PyTorch
        try:
            if alpha != 1:
                y = y * operand(alpha, cd)
            return wrap(xp.add(x, y) if cd.kind != "b" else xp.logical_or(x, y), spec)  # bool + bool: or
        finally:
            unmute(token)

    def written(fn, logical, target, x, y, cd):
        """``fn(x, y)`` written into array ``target`` (an operand overlapping it: NumPy buffers); half storage
        computes in float32 (``cd``), bool uses ``logical``."""
        token = mute()
        try:
            if target.dtype == cd and cd.kind != "b":
                fn(x, y, out=target)
            else:
                x = x.astype(cd, copy=False)
                xp.copyto(target, fn(x, y) if cd.kind != "b" else logical(x, y), casting="unsafe")
        finally:
            unmute(token)

    def in_place(fn, logical=None):
        """``self = fn(self, alpha * other)`` written into self's memory."""
        def kernel(spec, self, other, alpha=1):
            cd = COMPUTE_NP[spec.compute_dtype]
            target = array(self)
            y = operand(other, cd)
            if alpha != 1:
                y = y * operand(alpha, cd)
            written(fn, logical, target, target, y, cd)
            return self

        return kernel

    def into(fn, logical=None):
        """``out = fn(input, alpha * other)`` written into out's memory (``out=``)."""
        def kernel(spec, out, input, other, alpha=1):
            cd = COMPUTE_NP[spec.compute_dtype]
            y = operand(other, cd)
            if alpha != 1:
                y = y * operand(alpha, cd)
            written(fn, logical, array(out), operand(input, cd), y, cd)
            return out

        return kernel

    def fused_into(fn):
        """``out = input + value * fn(tensor1, tensor2)`` written into out's memory (``out=`` and the in-place form
        of addcmul/addcdiv), in PyTorch's order: (value * tensor1) op tensor2, then the sum."""
        def kernel(spec, out, input, tensor1, tensor2, value=1):
            cd = COMPUTE_NP[spec.compute_dtype]
            token = mute()
            try:
                first = operand(tensor1, cd)
                if value != 1:
                    first = first * operand(value, cd)
                part = fn(first, operand(tensor2, cd))
            finally:
                unmute(token)
            written(xp.add, None, array(out), operand(input, cd), part, cd)
            return out

        return kernel

    def lerp_into(spec, out, input, end, weight):
        """``out = lerp(input, end, weight)`` written into out's memory (``out=`` and ``lerp_``, a number weight) in
        ATen's two forms: ``input + weight * (end - input)`` for ``|weight| < 0.5``, else
        ``end - (end - input) * (1 - weight)``, the weight in the compute dtype."""
        cd = COMPUTE_NP[spec.compute_dtype]
        x, y, w = operand(input, cd), operand(end, cd), operand(weight, cd)
        token = mute()
        try:
            small = abs(weight) < 0.5
            part = (y - x) * (w if small else 1 - w)
        finally:
            unmute(token)
        written(xp.add if small else xp.subtract, None, array(out), x if small else y, part, cd)
        return out

    def sub(spec, a, b, alpha=1):
        cd = compute_np(spec.compute_dtype)
        x, y = operand(a, cd), operand(b, cd)
        token = mute()
        try:
            if alpha != 1:
                y = y * operand(alpha, cd)
            return wrap(xp.subtract(x, y), spec)
        finally:
            unmute(token)

    def where(spec, condition, input, other):
        cd = compute_np(spec.compute_dtype)
        return wrap(xp.where(operand(condition, _BOOL), operand(input, cd), operand(other, cd)), spec)

    def clamp(spec, input, min=None, max=None):
        cd = compute_np(spec.compute_dtype)
        x = operand(input, cd)
        with errstate(all="ignore"):
            for bound, pick in ((min, xp.maximum), (max, xp.minimum)):
                if bound is not None:
                    picked = pick(x, operand(bound, cd))
                    x = xp.where(xp.isnan(x), x, picked) if cd.kind == "f" else picked  # NaN stays NaN
        return wrap(x, spec)

    def softmax_kernel(log: bool):  # composites: they get (input, dim), no spec
        def kernel(input, dim):
            a = operand(input, compute_np(input.dtype))
            with errstate(all="ignore"):
                shifted = a - xp.max(a, axis=dim, keepdims=True) if a.size else a
                if log:
                    out = shifted - xp.log(xp.sum(xp.exp(shifted), axis=dim, keepdims=True))
                else:
                    e = xp.exp(shifted)
                    out = e / xp.sum(e, axis=dim, keepdims=True)
            return wrap(out, input)

        return kernel

    def polygamma(spec, n, input):
        x = operand(input, compute_np(spec.compute_dtype))
        with errstate(all="ignore"):  # n as an array: CuPy's polygamma takes where(n == 0, ...) of its arguments
            return wrap(ctx.special.polygamma(xp.asarray(n, dtype=x.dtype), x), spec)

    def relu(x):  # composite: no spec
        return wrap(xp.maximum(operand(x, x.dtype.numpy), 0), x)

    def shortcut(fn, kinds, in_place=False):
        """A kernel's ``shortcut`` (see ``core.dispatch.operator._shortcut``): ``fn(x, y)`` of two tensors of one
        shape and dtype in ``kinds``, or of a floating tensor and a Python float or int, with fewer than ``below``
        elements — the same arrays and result as the kernel given the meta function's spec, whose compute dtype is
        then the tensors' own; every other call goes to ``full``. ``in_place``: ``self`` first, the result
        written into its memory (the ``in_place`` kernel's work; the meta function's checks hold for such calls)."""
        def make(full, below):
            from ....tensor import Tensor

            def call(a, b, *more, **kwargs):
                if more or kwargs:
                    return full(a, b, *more, **kwargs)
                if isinstance(a, Tensor):
                    like = a
                    if isinstance(b, Tensor):
                        common = b.dtype is a.dtype and b._shape == a._shape and a.dtype in kinds
                        if common:
                            y = b._np
                            if y is None:
                                y = array(b)  # a view's array, made once (what the kernel's operand does)
                    else:
                        y = b
                        common = (b.__class__ is float or b.__class__ is int) and a.dtype in kinds \
                            and a.dtype.is_floating_point
                    if common:
                        x = held = a._np
                        if x is None:
                            x = held = array(a)  # (a context's array need not be cached on the tensor)
                elif in_place:
                    return full(a, b)
                else:  # a number first
                    like, x = b, a
                    y = held = getattr(b, "_np", None)
                    common = y is not None and (a.__class__ is float or a.__class__ is int) \
                        and b.dtype in kinds and b.dtype.is_floating_point
                if common and held.size < below:
                    token = mute()
                    try:
                        if in_place:
                            fn(x, y, out=x)
                            return a
                        return wrap(fn(x, y), like)
                    finally:
                        unmute(token)
                return full(a, b)

            return call

        return make

    table = {name: unary(fn) for name, fn in unary_table(xp, ctx.special).items()}
    table.update({name: binary(fn) for name, fn in binary_table(xp, ctx.special).items()})
    table.update(add=add, sub=sub, where=where, clamp=clamp, relu=relu, polygamma=polygamma,
                 softmax=softmax_kernel(False), log_softmax=softmax_kernel(True))
    table.update(addcmul_out=fused_into(xp.multiply), addcdiv_out=fused_into(xp.true_divide), lerp_out=lerp_into)
    # the common calls of the arithmetic operators skip the meta function: dtypes that compute in themselves
    # (float16/bfloat16 compute in float32, bool adds with `or`; an integer quotient is a float)
    floats = {dtypes.float32, dtypes.float64}
    for name, fn, kinds in (("add", xp.add, floats | {dtypes.int32, dtypes.int64}),
                            ("sub", xp.subtract, floats | {dtypes.int32, dtypes.int64}),
                            ("mul", xp.multiply, floats | {dtypes.int32, dtypes.int64}),
                            ("div", xp.true_divide, floats)):
        table[name].shortcut = shortcut(fn, frozenset(kinds))
        logical = {"add": xp.logical_or, "mul": xp.logical_and}.get(name)
        table[name + "_"] = in_place(fn, logical)
        table[name + "_out"] = into(fn, logical)
        table[name + "_"].shortcut = shortcut(fn, frozenset(kinds), in_place=True)
    return table
