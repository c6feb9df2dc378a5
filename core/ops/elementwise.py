"""Elementwise ops: unary math, binary arithmetic, comparisons, logical and bitwise ops, ternaries.

Each family shares one meta function (broadcasting, PyTorch type promotion
with Python scalars, device checks), so a backend kernel receives a spec with
the output shape, the output dtype and the dtype to compute in. In-place
variants (``exp_``, ``clamp_``…) are composites: compute, check the result can
be cast to ``self``'s dtype, ``copy_`` into ``self``; ``add_``, ``sub_``,
``mul_`` and ``div_`` (gradient accumulation, optimizers, loss scaling) are
ops of their own that backends may run in place.
"""

from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

from .. import dtypes as dt
from ..dispatch.keys import Batched, Tracer, is_grad_enabled, tls
from ..dispatch import TensorSpec, define
from ..errors import op_error
from ..tensor import PLAIN_CLASSES, Tensor, contiguous_strides
from ._util import broadcast_shapes, check_computable, common_device, documented, finish_out
from .creation import _check_overlap, copy_op, empty

__all__: list = []
METHODS: dict = {}

_FLOAT, _INT, _BOOL = 2, 1, 0
_SCALARS = (numbers.Number, np.generic)
_SCALAR_CATEGORY = {bool: 0, int: 1, float: 2}


def _export(name: str, fn, method: bool = True):
    fn.__name__ = name
    globals()[name] = fn
    __all__.append(name)
    if method:
        METHODS[name] = fn
    return fn


# -- meta functions ------------------------------------------------------------------------------

def _check_operand(op: str, x) -> None:
    if not isinstance(x, (Tensor, *_SCALARS)) or isinstance(x, str):
        raise TypeError(f"{op}(): expected Tensor or number as operand, got {type(x).__name__}")


def _unary_meta(op: str, kind: str):
    def meta(input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
        d = input.dtype
        if kind != "bool":
            check_computable(op, d)
        if kind == "float":
            out = d if d.category >= _FLOAT else dt.get_default_dtype()
        elif kind == "bool":
            out = dt.bool
        elif kind == "int_only":
            if d.category >= _FLOAT:
                raise op_error(TypeError, op, "only integral and bool dtypes are supported", input)
            out = d
        elif kind == "no_bool":
            if d is dt.bool:
                raise op_error(TypeError, op, "is not supported for bool tensors; use logical_not() instead"
                               if op == "neg" else "is not supported for bool tensors", input)
            out = d
        elif kind == "real":  # computed in the input's dtype: a complex input must not be cast before the op
            return TensorSpec(input._shape, d.to_real(), input._storage.device, d)
        else:
            out = d
        return TensorSpec(input._shape, out, input._storage.device, out if out.category >= _FLOAT or kind != "bool"
                          else d)

    return meta


_SPEC_CACHE_SIZE = 64  # shapes remembered per op


def _same_kind_cached(meta):
    """``meta`` with its results remembered per shape for the common call: tensors of one shape, dtype and
    device, or one tensor with a Python scalar that does not promote it.

    Such a call's spec depends only on the shape, the dtype and the device, and specs are never modified, so
    a remembered one is handed out again when its compute dtype is the operands' dtype and its device is theirs
    (a spec computed in a promoted dtype, e.g. the default float of true division of integers, is not kept).
    Anything else, and every error, goes through ``meta`` itself.
    """
    cache: dict = {}

    def cached(a, b, *extra):
        if isinstance(a, Tensor):
            if isinstance(b, Tensor):
                if a._shape != b._shape or a.dtype is not b.dtype or a._storage.device is not b._storage.device:
                    return meta(a, b, *extra)
            elif _SCALAR_CATEGORY.get(b.__class__, 3) > a.dtype.category:
                return meta(a, b, *extra)
            t = a
        elif isinstance(b, Tensor) and _SCALAR_CATEGORY.get(a.__class__, 3) <= b.dtype.category:
            t = b
        else:
            return meta(a, b, *extra)
        spec = cache.get(t._shape)
        if spec is not None and spec.compute_dtype is t.dtype and spec.device is t._storage.device:
            return spec
        spec = meta(a, b, *extra)
        if spec.compute_dtype is t.dtype and spec.device is t._storage.device:
            if len(cache) >= _SPEC_CACHE_SIZE:
                cache.clear()
            cache[t._shape] = spec
        return spec

    cached.__doc__ = meta.__doc__
    cached.uncached = meta
    return cached


def _binary_meta(op: str, kind: str):
    """Meta of a binary op; ``kind`` picks the dtype rule (arith, true_div, compare, logical, bitwise, float)."""
    return _same_kind_cached(_binary_meta_uncached(op, kind))


def _binary_meta_uncached(op: str, kind: str):
    def meta(a, b, *extra):
        a_t = isinstance(a, Tensor)
        b_t = isinstance(b, Tensor)
        if a_t and b_t:
            sa, sb = a._storage, b._storage
            device = sa.device if sa.device is sb.device else common_device(op, (a, b))
            shape = a._shape if a._shape == b._shape else broadcast_shapes(a._shape, b._shape, op=op)
            compute = a.dtype if a.dtype is b.dtype else dt.result_type(a, b)
        elif a_t or b_t:
            t, s = (a, b) if a_t else (b, a)
            device, shape = t._storage.device, t._shape
            category = _SCALAR_CATEGORY.get(s.__class__)
            if category is not None and category <= t.dtype.category:
                compute = t.dtype  # a Python scalar of a lower or equal category never changes the dtype
            else:
                _check_operand(op, s)
                compute = dt.result_type(t, s)
        else:
            raise TypeError(f"{op}(): expected at least one Tensor operand, got {type(a).__name__} and "
                            f"{type(b).__name__}")
        if kind != "compare":
            check_computable(op, compute)
        if kind == "arith":
            out = compute
        elif kind == "compare":
            out = dt.bool
        elif kind == "logical":
            out = dt.bool
        elif kind in ("true_div", "float"):
            if compute.category < _FLOAT:
                compute = dt.get_default_dtype()
            out = compute
        elif kind == "bitwise":
            if compute.category >= _FLOAT:
                raise op_error(TypeError, op, "only integral and bool dtypes are supported", a, b)
            out = compute
        elif kind == "no_bool":  # sub
            if compute is dt.bool:
                raise op_error(RuntimeError, op, "Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.", a, b)
            if (a_t and a.dtype is dt.bool) or (b_t and b.dtype is dt.bool):
                raise op_error(RuntimeError, op, "Subtraction, the `-` operator, with a bool tensor is not "
                               "supported. If you are trying to invert a mask, use the `~` or `logical_not()` "
                               "operator instead.", a, b)
            out = compute
        else:
            raise AssertionError(kind)
        return TensorSpec(shape, out, device, compute)

    return meta


# -- unary ops -------------------------------------------------------------------------------------

UNARY_OPS = {
    # kind "float": integral inputs compute in the default float dtype
    **{name: "float" for name in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin",
        "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "erfinv",
        "reciprocal", "lgamma", "digamma", "i0", "sinc", "deg2rad", "rad2deg")},
    # kind "same": the output keeps the input dtype
    **{name: "same" for name in ("sign", "floor", "ceil", "round", "trunc", "frac", "square", "positive", "conj")},
    "neg": "no_bool",
    "sgn": "same",
    # kind "real": the real dtype of the input (a complex input gives float; others keep their dtype)
    "abs": "real",
    "angle": "real",
    **{name: "bool" for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "isreal",
                                 "logical_not")},
    "bitwise_not": "int_only",
}
_UNARY_DOCS = {"sigmoid": "1 / (1 + exp(-x))", "rsqrt": "1 / sqrt(x)", "frac": "x - trunc(x)",
               "sign": "-1, 0 or 1 by the sign of x", "erfinv": "inverse of erf"}
_NO_INPLACE = {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "isreal", "positive", "angle",
               "conj"}


def _make_unary(name: str, kind: str):
    op = define(name, meta=_unary_meta(name, kind), primitive=True,
                doc=f"elementwise {name}: {_UNARY_DOCS.get(name, name + '(x)')}")

    def fn(input, *, out=None):
        return finish_out(name, op(input), out) if out is not None else op(input)

    fn.__doc__ = f"Elementwise ``{name}`` (``torch.{name}``)."
    _export(name, fn)
    if name not in _NO_INPLACE:
        _export(name + "_", _inplace(name, fn))


def _recording(self, args) -> bool:
    if not is_grad_enabled():
        return False
    return self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args)


def _inplace(name: str, fn):
    def inplace(self, *args, **kwargs):
        # When recording, compute from a copy: the formula must see self as it was before the write (PyTorch
        # saves the original self); without that, the write would trip the saved tensor's version check.
        source = self.clone() if _recording(self, args) else self
        result = fn(source, *args, **kwargs)
        if not dt.can_cast(result.dtype, self.dtype):
            raise RuntimeError(f"result type {dt.legacy_name(result.dtype)} can't be cast to the desired output type "
                               f"{dt.legacy_name(self.dtype)}")
        if result._shape != self._shape:
            raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape "
                               f"{list(result._shape)}")
        return self.copy_(result)

    inplace.__doc__ = f"In-place ``{name}``."
    return inplace


for _name, _kind in UNARY_OPS.items():
    _make_unary(_name, _kind)

_square_same_dtype = globals()["square"]


def square(input, *, out=None):
    """x * x (``torch.square``); a bool input squares as int64, as in PyTorch (where square is pow(x, 2))."""
    if isinstance(input, Tensor) and input.dtype is dt.bool:
        input = input.to(dt.int64)
    return _square_same_dtype(input, out=out)


_round_whole = globals()["round"]


def round(input, *, decimals=0, out=None):  # noqa: A001 - PyTorch's name
    """Round half to even, to ``decimals`` decimal places (negative: to tens, hundreds...) (``torch.round``)."""
    if decimals and isinstance(input, Tensor):
        if input.dtype.category < dt._FLOAT:
            raise RuntimeError(f"\"round_decimals\" not implemented for '{dt.legacy_name(input.dtype)}'")
        scale = 10.0 ** builtins.abs(int(decimals))
        result = _round_whole(input * scale) / scale if decimals > 0 else _round_whole(input / scale) * scale
        return finish_out("round", result, out) if out is not None else result
    return _round_whole(input, out=out)


__all__.remove("round")
_export("round", round)
__all__.remove("round_")
_export("round_", _inplace("round", round))
__all__.remove("square")
_export("square", square)
METHODS["square_"] = _inplace("square", square)
absolute = _export("absolute", globals()["abs"])
negative = _export("negative", globals()["neg"])
arcsin, arccos, arctan = (_export(n, globals()[m]) for n, m in (("arcsin", "asin"), ("arccos", "acos"),
                                                                   ("arctan", "atan")))
fix = _export("fix", globals()["trunc"])
# the conj kernel's front end is core/ops/complex.py's conj family (a real input is returned as it is, PyTorch's rule)
_conj = globals()["conj"]
__all__.remove("conj")
del METHODS["conj"]


# -- binary ops ------------------------------------------------------------------------------------

BINARY_OPS = {
    "add": "arith", "sub": "no_bool", "mul": "arith", "div": "true_div", "floor_divide": "arith",
    "remainder": "arith", "fmod": "arith", "pow": "arith", "atan2": "float", "maximum": "arith",
    "minimum": "arith", "fmax": "arith", "fmin": "arith", "hypot": "float", "copysign": "float",
    "logaddexp": "float", "logaddexp2": "float", "xlogy": "float", "nextafter": "arith",
    "eq": "compare", "ne": "compare", "lt": "compare", "le": "compare", "gt": "compare", "ge": "compare",
    "logical_and": "logical", "logical_or": "logical", "logical_xor": "logical",
    "bitwise_and": "bitwise", "bitwise_or": "bitwise", "bitwise_xor": "bitwise",
    "bitwise_left_shift": "bitwise", "bitwise_right_shift": "bitwise",
}
_BINARY_OPERATORS = {}


def _make_binary(name: str, kind: str):
    op = _BINARY_OPERATORS[name] = define(name, meta=_binary_meta(name, kind), primitive=True,
                                          doc=f"elementwise {name} of two broadcast operands ({kind} typing)")

    def fn(input, other, *, out=None):
        if out is not None and name == "mul" and (done := _written(name, out, input, other, 1, _OUT_OPS)) is not None:
            return done  # written into out by the mul_out op (below, with add_out)
        result = op(input, other)
        return finish_out(name, result, out) if out is not None else result

    fn.__doc__ = f"Elementwise ``{name}`` with broadcasting and type promotion (``torch.{name}``)."
    _export(name, fn)
    if name == "mul":
        pass  # mul_ is an op of its own (below, with add_)
    elif kind not in ("compare", "logical") or name.startswith("logical"):
        _export(name + "_", _inplace(name, fn))
    else:
        _export(name + "_", _inplace(name, lambda a, b: fn(a, b).to(a.dtype)))


for _name, _kind in BINARY_OPS.items():
    if _name not in ("add", "sub", "div", "pow"):
        _make_binary(_name, _kind)

_add_op = define("add", meta=_binary_meta("add", "arith"), primitive=True,
                 doc="input + alpha * other, broadcast; kernels receive alpha as a third argument")
_sub_op = define("sub", meta=_binary_meta("sub", "no_bool"), primitive=True,
                 doc="input - alpha * other, broadcast; kernels receive alpha as a third argument")
_div_op = define("div", meta=_binary_meta("div", "true_div"), primitive=True, doc="true division, broadcast")
_pow_op = define("pow", meta=_binary_meta("pow", "arith"), primitive=True,
                 doc="input ** exponent; integral inputs reject negative integral exponents")


def _check_alpha(op: str, spec_dtype, alpha):
    if isinstance(alpha, bool) or alpha == 1:
        return
    if spec_dtype.category < _FLOAT and not isinstance(alpha, numbers.Integral):
        raise RuntimeError(f"{op}(): For integral input tensors, argument alpha must not be a floating point "
                           f"number.")


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other`` with broadcasting and type promotion (``torch.add``)."""
    if out is not None and (done := _written("add", out, input, other, alpha, _OUT_OPS)) is not None:
        return done  # written into out by the add_out op
    if alpha == 1:
        result = _add_op(input, other)
    else:
        _check_alpha("add", dt.result_type(input, other), alpha)
        result = _add_op(input, other, alpha)
    return finish_out("add", result, out) if out is not None else result


def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other`` (``torch.sub``)."""
    if out is not None and (done := _written("sub", out, input, other, alpha, _OUT_OPS)) is not None:
        return done  # written into out by the sub_out op
    if alpha == 1:
        result = _sub_op(input, other)
    else:
        _check_alpha("sub", dt.result_type(input, other), alpha)
        result = _sub_op(input, other, alpha)
    return finish_out("sub", result, out) if out is not None else result


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (``torch.rsub``)."""
    return sub(other, input, alpha=alpha)


def div(input, other, *, rounding_mode=None, out=None):
    """True division, or ``rounding_mode='trunc'|'floor'`` keeping integer dtypes (``torch.div``)."""
    if rounding_mode is None:
        if out is not None and (done := _written("div", out, input, other, 1, _OUT_OPS)) is not None:
            return done
        result = _div_op(input, other)
    elif rounding_mode == "floor":
        result = floor_divide(input, other)
    elif rounding_mode == "trunc":
        result = _div_trunc(input, other)
    else:
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"'{rounding_mode}'")
    return finish_out("div", result, out) if out is not None else result


_div_trunc = define("div_trunc", meta=_binary_meta("div_trunc", "arith"), primitive=True,
                    doc="division rounded towards zero, keeping integer dtypes")


def pow(input, exponent, *, out=None):  # noqa: A001 - torch.pow
    """``input ** exponent`` with type promotion (``torch.pow``)."""
    if isinstance(input, Tensor) and input.dtype.category < _FLOAT and isinstance(exponent, numbers.Integral) \
            and not isinstance(exponent, bool) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    result = _pow_op(input, exponent)
    return finish_out("pow", result, out) if out is not None else result


for _fn in (add, sub, div, pow):
    _export(_fn.__name__, _fn)
_export("pow_", _inplace("pow", pow))


def _inplace_meta(op):
    """The meta of ``op_(self, other[, alpha])``: ``other`` broadcasts to ``self``, the result keeps its dtype."""
    def meta(self, other, alpha=1):
        spec = op.meta(self, other)
        if spec.shape != self._shape:
            raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape "
                               f"{list(spec.shape)}")
        if spec.dtype is not self.dtype:
            raise op_error(RuntimeError, op.name + "_", f"computes in self's dtype; got {spec.dtype.name} for self "
                           f"of dtype {self.dtype.name}", self, other)
        return spec

    return meta


def _inplace_parts(op, meta):
    """``op_`` for backends without a kernel of it: the result computed, then copied into ``self``."""
    def parts(self, other, alpha=1):
        meta(self, other)
        return copy_op(self, op(self, other) if alpha == 1 else op(self, other, alpha))

    return parts


def _define_inplace(op):
    meta = _inplace_meta(op)
    return define(op.name + "_", meta=meta, decomposition=_inplace_parts(op, meta), inplace=True,
                  doc=f"self = self {_SYMBOLS[op.name]} other in place, other broadcast to self, in self's dtype (the "
                      f"promoted one){'; alpha scales other' if op.name in ('add', 'sub') else ''}; backends "
                      f"without a kernel compute the result and copy it in")


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_INPLACE_OPS = {op.name: _define_inplace(op) for op in (_add_op, _sub_op, _BINARY_OPERATORS["mul"], _div_op)}


def _out_meta(op):
    """The meta of ``op_out(out, input, other[, alpha])``: ``input`` and ``other`` broadcast to ``out``'s shape, the
    result in ``out``'s dtype."""
    def meta(out, input, other, alpha=1):
        spec = op.meta(input, other)
        if spec.shape != out._shape or spec.dtype is not out.dtype:
            raise op_error(RuntimeError, op.name + "_out", f"writes a result of shape {list(spec.shape)} and dtype "
                           f"{spec.dtype.name} into out of shape {list(out._shape)} and dtype {out.dtype.name}",
                           out, input, other)
        return spec

    return meta


def _out_parts(op, meta):
    """``op_out`` for backends without a kernel of it: the result computed, then copied into ``out``."""
    def parts(out, input, other, alpha=1):
        meta(out, input, other)
        return copy_op(out, op(input, other) if alpha == 1 else op(input, other, alpha))

    return parts


def _define_out(op):
    meta = _out_meta(op)
    return define(op.name + "_out", meta=meta, decomposition=_out_parts(op, meta), inplace=True,
                  doc=f"out = input {_SYMBOLS[op.name]} other written into out (``out=``), both broadcast to out's "
                      f"shape, in out's dtype{'; alpha scales other' if op.name in ('add', 'sub') else ''}; backends "
                      f"without a kernel compute the result and copy it in")


_OUT_OPS = {op.name: _define_out(op) for op in (_add_op, _sub_op, _BINARY_OPERATORS["mul"], _div_op)}


def _written(name: str, out, input, other, alpha, ops: dict):
    """``out`` after op ``ops[name]`` wrote ``input name alpha * other`` into it, or None where that op does not take
    the call (autograd would record, an operand of another dtype or device, a result of another dtype; for the
    ``out=`` ops of :data:`_OUT_OPS`, also a result of another shape): the caller then computes and copies.

    ``ops`` is :data:`_INPLACE_OPS` (``add_``: ``input`` is ``out``, called ``op(self, other)``; a result of another
    shape is left to the op's meta, which raises PyTorch's error) or :data:`_OUT_OPS` (``op(out, input, other)``).
    """
    if out.__class__ not in PLAIN_CLASSES:
        return None
    into = ops is _OUT_OPS
    records = out.requires_grad
    if into:
        if input.__class__ not in PLAIN_CLASSES or input.dtype is not out.dtype \
                or input._storage.device is not out._storage.device:
            return None
        records = records or input.requires_grad
    if isinstance(other, Tensor):
        if other.__class__ not in PLAIN_CLASSES or other.dtype is not out.dtype \
                or other._storage.device is not out._storage.device:
            return None
        records = records or other.requires_grad
    elif other.__class__ not in (int, float, bool) or dt.result_type(input, other) is not out.dtype:
        return None
    if into:
        shape = input._shape
        if isinstance(other, Tensor) and other._shape != shape:
            shape = broadcast_shapes(shape, other._shape, op=name)
        if shape != out._shape:
            return None
    if (name == "div" and out.dtype.category < _FLOAT) or (name == "sub" and out.dtype is dt.bool) \
            or (records and is_grad_enabled()):
        return None
    if alpha != 1:
        _check_alpha(name, out.dtype, alpha)
    if 0 in out._stride:
        _check_overlap(out, None)  # out may not write one element twice; an operand may overlap it (NumPy buffers)
    args = (out, input, other) if into else (out, other)
    ops[name](*args) if alpha == 1 else ops[name](*args, alpha)
    out._storage.version += 1
    return out


_computed_then_copied = {name: _inplace(name, fn) for name, fn in
                         (("add", add), ("sub", sub), ("mul", globals()["mul"]), ("div", div))}


def add_(self, other, *, alpha=1):
    """``self += alpha * other`` (``Tensor.add_``): outside autograd, with an operand of ``self``'s dtype (or a
    Python number that keeps it) and device, the ``add_`` op writes into ``self``; otherwise the sum is computed,
    then copied in."""
    done = _written("add", self, self, other, alpha, _INPLACE_OPS)
    return _computed_then_copied["add"](self, other, alpha=alpha) if done is None else done


def sub_(self, other, *, alpha=1):
    """``self -= alpha * other`` (``Tensor.sub_``), as :func:`add_`."""
    done = _written("sub", self, self, other, alpha, _INPLACE_OPS)
    return _computed_then_copied["sub"](self, other, alpha=alpha) if done is None else done


def mul_(self, other):
    """``self *= other`` (``Tensor.mul_``), as :func:`add_`."""
    done = _written("mul", self, self, other, 1, _INPLACE_OPS)
    return _computed_then_copied["mul"](self, other) if done is None else done


def div_(self, other, *, rounding_mode=None):
    """``self /= other`` (``Tensor.div_``), as :func:`add_` for true division; ``rounding_mode`` computes, then
    copies."""
    if rounding_mode is None and (done := _written("div", self, self, other, 1, _INPLACE_OPS)) is not None:
        return done
    return _computed_then_copied["div"](self, other, rounding_mode=rounding_mode)


for _fn in (add_, sub_, mul_, div_):
    _export(_fn.__name__, _fn)
_export("rsub", rsub, method=False)
true_divide = _export("true_divide", div)
_export("true_divide_", _inplace("true_divide", div))
multiply = _export("multiply", globals()["mul"])
multiply_ = _export("multiply_", globals()["mul_"])
divide = _export("divide", div)
divide_ = _export("divide_", globals()["div_"])
subtract = _export("subtract", sub)
subtract_ = _export("subtract_", globals()["sub_"])
greater, greater_equal, less, less_equal, not_equal = (
    _export(n, globals()[m]) for n, m in (("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"),
                                          ("less_equal", "le"), ("not_equal", "ne")))
arctan2 = _export("arctan2", globals()["atan2"])
float_power = _export("float_power", documented(
    "``input ** exponent`` computed in double precision (``torch.float_power``).",
    lambda input, exponent: pow(input.to(dt.float64) if isinstance(input, Tensor) else input,
                                exponent.to(dt.float64) if isinstance(exponent, Tensor) else exponent)))


# -- special functions ---------------------------------------------------------------------------------------------
# The primitives behind ``core.special`` that have no ``torch.<name>`` twin, declared under ATen's names
# (``special_erfcx``...) and exported by core/special.py only; the others there are aliases or composites.

SPECIAL_UNARY_OPS = {
    "erfcx": "exp(x**2) * erfc(x)", "i0e": "exp(-|x|) * i0(x)", "i1": "modified Bessel function of the first kind, "
    "order 1", "i1e": "exp(-|x|) * i1(x)", "ndtri": "inverse of the standard normal CDF",
    "log_ndtr": "log of the standard normal CDF", "bessel_j0": "Bessel function of the first kind, order 0",
    "bessel_j1": "Bessel function of the first kind, order 1", "bessel_y0": "Bessel function of the second kind, "
    "order 0", "bessel_y1": "Bessel function of the second kind, order 1",
    "modified_bessel_k0": "modified Bessel function of the second kind, order 0",
    "modified_bessel_k1": "modified Bessel function of the second kind, order 1",
    "scaled_modified_bessel_k0": "exp(x) * k0(x)", "scaled_modified_bessel_k1": "exp(x) * k1(x)",
    "spherical_bessel_j0": "sin(x) / x (1 at 0, 0 at +-inf)", "airy_ai": "Airy function Ai",
}
SPECIAL_BINARY_OPS = {
    "xlog1py": "x * log1p(y), 0 where x == 0 and y is not NaN", "zeta": "Hurwitz zeta function zeta(x, q)",
    "gammainc": "regularized lower incomplete gamma function P(a, x)",
    "gammaincc": "regularized upper incomplete gamma function Q(a, x)",
}
# orthogonal polynomials p_n(input), n truncated to an integer (0 for n < 0), as PyTorch's special_*_polynomial_*
SPECIAL_POLYNOMIALS = {
    "chebyshev_polynomial_t": "Chebyshev polynomial of the first kind T_n(x)",
    "chebyshev_polynomial_u": "Chebyshev polynomial of the second kind U_n(x)",
    "chebyshev_polynomial_v": "Chebyshev polynomial of the third kind V_n(x)",
    "chebyshev_polynomial_w": "Chebyshev polynomial of the fourth kind W_n(x)",
    "shifted_chebyshev_polynomial_t": "shifted Chebyshev polynomial of the first kind T_n(2x - 1)",
    "shifted_chebyshev_polynomial_u": "shifted Chebyshev polynomial of the second kind U_n(2x - 1)",
    "shifted_chebyshev_polynomial_v": "shifted Chebyshev polynomial of the third kind V_n(2x - 1)",
    "shifted_chebyshev_polynomial_w": "shifted Chebyshev polynomial of the fourth kind W_n(2x - 1)",
    "hermite_polynomial_h": "physicists' Hermite polynomial H_n(x)",
    "hermite_polynomial_he": "probabilists' Hermite polynomial He_n(x)",
    "laguerre_polynomial_l": "Laguerre polynomial L_n(x)",
    "legendre_polynomial_p": "Legendre polynomial P_n(x)",
}
# PyTorch marks these non-differentiable (their outputs never require grad)
_SPECIAL_NOT_DIFFERENTIABLE = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
                               "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                               "spherical_bessel_j0", "airy_ai", *SPECIAL_POLYNOMIALS)
SPECIAL: dict = {}  # name -> the function core.special exports


def _make_special(name: str, arity: int, doc: str):
    op = define(f"special_{name}", meta=_unary_meta(name, "float") if arity == 1 else _binary_meta(name, "float"),
                primitive=True, doc=f"elementwise {name}: {doc}")
    if name in _SPECIAL_NOT_DIFFERENTIABLE:
        op.differentiable = False

    if arity == 1:
        def fn(input, *, out=None):
            return finish_out(name, op(input), out) if out is not None else op(input)
    elif name in SPECIAL_POLYNOMIALS:
        def fn(input, n, *, out=None):
            return finish_out(name, op(input, n), out) if out is not None else op(input, n)
    else:
        def fn(input, other, *, out=None):
            return finish_out(name, op(input, other), out) if out is not None else op(input, other)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {doc} (``torch.special.{name}``)."
    SPECIAL[name] = fn


for _name, _doc in SPECIAL_UNARY_OPS.items():
    _make_special(_name, 1, _doc)
for _name, _doc in {**SPECIAL_BINARY_OPS, **SPECIAL_POLYNOMIALS}.items():
    _make_special(_name, 2, _doc)


def _polygamma_meta(n, input):
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _unary_meta("polygamma", "float")(input)


_polygamma_op = define("polygamma", meta=_polygamma_meta, primitive=True,
                       doc="polygamma(n, input): the n-th derivative of the digamma function, n >= 0 an int")


def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of digamma (``torch.polygamma``)."""
    result = _polygamma_op(n, input)
    return finish_out("polygamma", result, out) if out is not None else result


def _polygamma_method(self, n, *, out=None):
    """``self.polygamma(n)``: the Tensor method takes ``n`` after ``self`` (``torch.Tensor.polygamma``)."""
    return polygamma(n, self, out=out)


_export("polygamma", polygamma, method=False)
METHODS["polygamma"] = _polygamma_method
METHODS["polygamma_"] = _inplace("polygamma", _polygamma_method)


def _to_float(input):
    """``input`` as a floating tensor: integral and bool inputs in the default float dtype, as PyTorch's float ops."""
    if not isinstance(input, Tensor):
        raise TypeError(f"expected a Tensor as input, got {type(input).__name__}")
    return input if input.dtype.category >= _FLOAT else input.to(dt.get_default_dtype())


def logit(input, eps=None, *, out=None):
    """``log(x / (1 - x))``, with ``x`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given (``torch.logit``)."""
    x = _to_float(input)
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    result = log(div(x, sub(1, x)))
    return finish_out("logit", result, out) if out is not None else result


def mvlgamma(input, p, *, out=None):
    """Multivariate log-gamma of dimension ``p``: sum of lgamma(x - j/2), j < p, plus p(p-1)/4 log(pi)
    (``torch.mvlgamma``); every element must exceed (p - 1) / 2."""
    from .reduction import all as all_

    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _to_float(input)
    if x.numel() and not bool(all_(gt(x, (p - 1) / 2))):
        raise RuntimeError("All elements must be greater than (p-1)/2")
    result = add(lgamma(x), p * (p - 1) / 4 * math.log(math.pi))
    for j in range(1, p):
        result = add(result, lgamma(sub(x, j / 2)))
    return finish_out("mvlgamma", result, out) if out is not None else result


for _fn in (logit, mvlgamma):
    _export(_fn.__name__, _fn)
    _export(_fn.__name__ + "_", _inplace(_fn.__name__, _fn))


def _entr_parts(input):
    return where(lt(input, 0), -math.inf, where(eq(input, 0), 0.0, mul(neg(input), log(input))))


_entr_op = define("special_entr", decomposition=_entr_parts,
                  doc="elementwise -x * log(x): 0 at 0, -inf below; a composite with its own derivative")


def entr(input, *, out=None):
    """Elementwise entropy ``-x * log(x)`` (0 at 0, -inf for x < 0) (``torch.special.entr``)."""
    result = _entr_op(_to_float(input))
    return finish_out("entr", result, out) if out is not None else result


def ndtr(input, *, out=None):
    """The standard normal CDF, ``erfc(-x / sqrt(2)) / 2`` (``torch.special.ndtr``)."""
    result = mul(erfc(mul(input, -_SQRT_HALF)), 0.5)
    return finish_out("ndtr", result, out) if out is not None else result


SPECIAL.update(entr=entr, ndtr=ndtr)


# -- ternary and others ------------------------------------------------------------------------------

def _where_meta(condition, input, other):
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition.dtype is not dt.bool and condition.dtype is not dt.uint8:
        raise op_error(RuntimeError, "where", "expected condition to be a boolean tensor", condition)
    tensors = [x for x in (condition, input, other) if isinstance(x, Tensor)]
    for x in (input, other):
        _check_operand("where", x)
    device = common_device("where", tensors)
    shape = broadcast_shapes(*(x._shape for x in tensors), op="where")
    d = dt.result_type(input, other)
    return TensorSpec(shape, d, device, d)


_where_op = define("where", meta=_where_meta, primitive=True,
                   doc="elementwise select: input where condition else other, all broadcast")


def where(condition, input=None, other=None, *, out=None):
    """``input`` where ``condition`` else ``other``; ``where(condition)`` is ``nonzero(as_tuple=True)``."""
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    result = _where_op(condition, input, other)
    return finish_out("where", result, out) if out is not None else result


_export("where", where, method=False)
METHODS["where"] = documented("``self`` where ``condition`` holds, else ``other`` (``torch.Tensor.where``).",
                              lambda self, condition, other: where(condition, self, other))


def _clamp_meta(input, min=None, max=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"clamp(): argument 'input' must be Tensor, not {type(input).__name__}")
    if min is None and max is None:
        raise RuntimeError("clamp(): At least one of 'min' or 'max' must not be None")
    tensors = [x for x in (input, min, max) if isinstance(x, Tensor)]
    device = common_device("clamp", tensors)
    shape = broadcast_shapes(*(x._shape for x in tensors), op="clamp")
    d = dt.result_type(*(x for x in (input, min, max) if x is not None))
    return TensorSpec(shape, d, device, d)


_clamp_op = define("clamp", meta=_clamp_meta, primitive=True,
                   doc="elementwise min(max(input, min), max); min/max are tensors, numbers or None")


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    """Clamp into ``[min, max]`` (``torch.clamp``); bounds may be numbers or tensors."""
    result = _clamp_op(input, min, max)
    return finish_out("clamp", result, out) if out is not None else result


_export("clamp", clamp)
_export("clamp_", _inplace("clamp", clamp))
clip = _export("clip", clamp)
clip_ = _export("clip_", globals()["clamp_"])
_export("clamp_min", documented("Clamp from below: ``max(input, min)`` (``torch.clamp_min``).",
                                lambda input, min: clamp(input, min=min)))
_export("clamp_max", documented("Clamp from above: ``min(input, max)`` (``torch.clamp_max``).",
                                lambda input, max: clamp(input, max=max)))
_export("clamp_min_", _inplace("clamp_min", globals()["clamp_min"]))
_export("clamp_max_", _inplace("clamp_max", globals()["clamp_max"]))


_relu_op = define("relu", decomposition=lambda input: clamp(input, min=0),
                  doc="max(x, 0); a composite (clamp) with its own derivative (zero gradient at 0, as PyTorch's) "
                      "that backends may override with one kernel")


def relu(input):
    """max(x, 0) (``torch.relu``)."""
    return _relu_op(input)


_export("relu", relu)
_export("relu_", _inplace("relu", relu))


def _softmax_parts(input, dim):
    from .reduction import amax, sum as sum_

    if input.numel() == 0:  # nothing to normalise (the max of an empty dim does not exist): empty, as in PyTorch
        return input.clone()
    # the shift cancels in the result, so it carries no gradient (and records no graph)
    e = exp(sub(input, amax(input.detach(), dim, keepdim=True)))
    return div(e, sum_(e, dim, keepdim=True))


def _log_softmax_parts(input, dim):
    from .reduction import amax, sum as sum_

    if input.numel() == 0:
        return input.clone()
    shifted = sub(input, amax(input.detach(), dim, keepdim=True))
    return sub(shifted, log(sum_(exp(shifted), dim, keepdim=True)))


_softmax_op = define("softmax", decomposition=_softmax_parts,
                     doc="exp(x - max) / sum(exp(x - max)) along a non-negative dim; a composite with its own "
                         "derivative that backends may fuse")
_log_softmax_op = define("log_softmax", decomposition=_log_softmax_parts,
                         doc="x - logsumexp(x) along a non-negative dim; a composite with its own derivative that "
                             "backends may fuse")


def _softmax_input(op: str, input, dim, dtype) -> tuple:
    """``(input, dim)`` for softmax/log_softmax: ``dtype`` applied, ``dim`` wrapped; a non-empty bool or integer
    input is PyTorch's NotImplementedError (its kernels are floating point only; an empty one comes back empty)."""
    from ._util import wrap_dim

    if dtype is not None:
        input = input.to(dtype)
    dim = wrap_dim(dim, input.dim(), op)
    if input.dtype.category < 2 and input.numel() != 0:
        kernel = f"{op}_lastdim_kernel_impl" if dim == max(input.dim() - 1, 0) else f"{op}_kernel_impl"
        raise op_error(NotImplementedError, op, f"\"{kernel}\" not implemented for '{dt.legacy_name(input.dtype)}' "
                       f"(expected a floating point or complex input; pass dtype= to convert)", input)
    return input, dim


def softmax(input, dim, dtype=None):
    """Softmax along ``dim``, numerically stable (``torch.softmax``)."""
    return _softmax_op(*_softmax_input("softmax", input, dim, dtype))


def log_softmax(input, dim, dtype=None):
    """Log-softmax along ``dim``, numerically stable (``torch.log_softmax``)."""
    return _log_softmax_op(*_softmax_input("log_softmax", input, dim, dtype))


_export("softmax", softmax)
_export("log_softmax", log_softmax)


# GELU is an op (one traced node, a fusable kernel) but not a ``torch`` function: ``F.gelu`` in
# core/nn/functional/activation.py checks its argument and calls it. Its derivative is in derivatives.py.
_SQRT_HALF = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


def _gelu_parts(input, approximate: str):
    if approximate == "tanh":
        inner = (input + input * input * input * _GELU_CUBIC) * _SQRT_2_OVER_PI
        return input * 0.5 * (1.0 + tanh(inner))
    return input * 0.5 * (1.0 + erf(input * _SQRT_HALF))


gelu = define("gelu", decomposition=_gelu_parts,
              doc="gelu(input, approximate): x * Φ(x), with erf ('none') or PyTorch's tanh approximation "
                  "('tanh'); a composite with its own derivative that backends may fuse")


def _gelu_backward_parts(grad, input, approximate: str):
    """``grad * gelu'(input)``, written in Tensor ops (differentiable itself: double backward)."""
    x = input
    if approximate == "tanh":
        x2 = x * x
        t = tanh((x + x2 * x * _GELU_CUBIC) * _SQRT_2_OVER_PI)
        slope = (1.0 + t) * 0.5 + x * 0.5 * (1.0 - t * t) * (_SQRT_2_OVER_PI * (1.0 + x2 * (3.0 * _GELU_CUBIC)))
    else:
        density = exp(x * x * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
        slope = (1.0 + erf(x * _SQRT_HALF)) * 0.5 + x * density
    return grad * slope


gelu_backward = define("gelu_backward", decomposition=_gelu_backward_parts,
                       doc="gelu_backward(grad, input, approximate): grad * gelu'(input), the gradient of gelu; a "
                           "composite (differentiable for double backward) that backends may fuse")


def _lerp_parts(input, end, weight):
    """PyTorch's two forms of lerp (ATen's ``lerp``): ``input + weight * (end - input)`` where ``|weight| < 0.5``,
    else ``end - (end - input) * (1 - weight)``, so a weight of 1 gives ``end`` exactly."""
    diff = sub(end, input)
    if isinstance(weight, Tensor):
        return where(lt(abs(weight), 0.5), add(input, mul(weight, diff)), sub(end, mul(diff, rsub(weight, 1))))
    if builtins.abs(weight) < 0.5:
        return add(input, mul(diff, weight))
    return sub(end, mul(diff, 1 - weight))


def lerp(input, end, weight, *, out=None):
    """``input + weight * (end - input)`` (``torch.lerp``) in PyTorch's two forms (:func:`_lerp_parts`); with a
    number weight, outside autograd, the ``lerp_out`` op writes into ``out`` or a new tensor (one pass on the CPU
    backends; see :func:`_fused_into`)."""
    if (done := _fused_into("lerp", out, (input, end), weight)) is not None:
        return done
    result = _lerp_parts(input, end, weight)
    return finish_out("lerp", result, out) if out is not None else result


def _fused_out_meta(name: str, tensors: tuple, value: str, default):
    """The meta of ``name(out, *tensors, value=default)``: floating tensors of out's dtype on its device that
    broadcast to its shape, and a number."""
    def meta(out, *args):
        if len(args) == len(tensors) and default is not None:
            args = (*args, default)
        operands = (out, *args[:-1])
        if len(args) != len(tensors) + 1 or not all(isinstance(t, Tensor) for t in operands) \
                or not isinstance(args[-1], numbers.Number):
            raise TypeError(f"{name}(): expected out, {', '.join(tensors)} tensors and a number {value}, got "
                            f"{', '.join(type(x).__name__ for x in (out, *args))}")
        shape = broadcast_shapes(*(t._shape for t in operands[1:]), op=name)
        d = out.dtype
        if shape != out._shape or not d.is_floating_point or any(t.dtype is not d for t in operands):
            raise op_error(RuntimeError, name, f"expected floating operands of out's dtype that broadcast to out's "
                           f"shape {list(out._shape)}", *operands)
        return TensorSpec(shape, d, common_device(name, operands), d)

    return meta


def _define_fused_out(name: str, parts, tensors: tuple, value: str, default, formula: str):
    """The op ``name_out(out, *tensors, value)`` writing ``formula`` into out; backends without a kernel of it
    compute ``parts(*tensors, value)`` and copy it in."""
    meta = _fused_out_meta(name + "_out", tensors, value, default)

    def decomposition(out, *args):
        meta(out, *args)
        return copy_op(out, parts(*args))

    return define(name + "_out", meta=meta, decomposition=decomposition, inplace=True,
                  doc=f"``{name}_out(out, {', '.join(tensors)}, {value})``: out = {formula} written into out "
                      f"(``out=`` and ``{name}_``), floating operands of out's dtype broadcast to its shape; backends "
                      f"without a kernel compute the result and copy it in")


def _addc_parts(op):
    """``input + value * op(tensor1, tensor2)`` from its parts (addcmul, addcdiv)."""
    def parts(input, tensor1, tensor2, value=1):
        return add(input, op(tensor1, tensor2), alpha=value)

    return parts


_ADDC = ("input", "tensor1", "tensor2")
_FUSED_OUT_OPS = {
    "addcmul": _define_fused_out("addcmul", _addc_parts(mul), _ADDC, "value", 1, "input + value * tensor1 * tensor2"),
    "addcdiv": _define_fused_out("addcdiv", _addc_parts(div), _ADDC, "value", 1, "input + value * tensor1 / tensor2"),
    "lerp": _define_fused_out("lerp", _lerp_parts, ("input", "end"), "weight", None,
                              "lerp(input, end, weight) in PyTorch's two forms"),
}


_TRACED = Tracer.mask | Batched.mask  # core.jit.trace and vmap see a new result's parts


def _fused_into(name: str, out, tensors: tuple, value):
    """``out`` after the ``name_out`` op wrote its formula of ``tensors`` and number ``value`` into it, or None where
    that op does not take the call (autograd would record, an operand of another dtype or device, integers, a result
    of another shape): the caller then computes, then copies. ``out`` None: a new tensor, for contiguous operands of
    one shape (the layout the result would have), else None: the caller computes from the parts."""
    first = tensors[0] if out is None else out
    if first.__class__ not in PLAIN_CLASSES or not first.dtype.is_floating_point or value.__class__ not in (int, float):
        return None
    d, device = first.dtype, first._storage.device
    records = first.requires_grad
    for t in tensors:
        if t.__class__ not in PLAIN_CLASSES or t.dtype is not d or t._storage.device is not device:
            return None
        records = records or t.requires_grad
    if records and is_grad_enabled():
        return None
    shape = tensors[0]._shape
    if out is None:
        if tls.include & ~tls.exclude & _TRACED:  # a trace records the parts: they fuse and export
            return None
        dense = contiguous_strides(shape)
        if any(t._shape != shape or t._stride != dense for t in tensors):
            return None
        out = empty(shape, dtype=d, device=device)
    else:
        if any(t._shape != shape for t in tensors):
            shape = broadcast_shapes(*(t._shape for t in tensors), op=name)
        if shape != out._shape:
            return None
        if 0 in out._stride:
            _check_overlap(out, None)  # out may not write one element twice
    _FUSED_OUT_OPS[name](out, *tensors, value)
    out._storage.version += 1
    return out


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 * tensor2`` (``torch.addcmul``); outside autograd, the ``addcmul_out`` op writes
    into ``out`` or a new tensor (one pass on the CPU backends; see :func:`_fused_into`)."""
    if (done := _fused_into("addcmul", out, (input, tensor1, tensor2), value)) is not None:
        return done
    return add(input, mul(tensor1, tensor2), alpha=value, out=out)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 / tensor2`` (``torch.addcdiv``); ``out=`` as :func:`addcmul`'s."""
    if (done := _fused_into("addcdiv", out, (input, tensor1, tensor2), value)) is not None:
        return done
    return add(input, div(tensor1, tensor2), alpha=value, out=out)


def _fused_in_place(name: str, fn):
    computed_then_copied = _inplace(name, fn)
    if name == "lerp":
        def in_place(self, end, weight):
            done = _fused_into(name, self, (self, end), weight)
            return computed_then_copied(self, end, weight) if done is None else done
    else:
        def in_place(self, tensor1, tensor2, *, value=1):
            done = _fused_into(name, self, (self, tensor1, tensor2), value)
            return computed_then_copied(self, tensor1, tensor2, value=value) if done is None else done

    in_place.__doc__ = (f"In-place ``{name}``: outside autograd, with operands of self's dtype and device and a number "
                        f"{'weight' if name == 'lerp' else 'value'}, the ``{name}_out`` op writes into ``self``; "
                        f"otherwise the result is computed, then copied in.")
    return in_place


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """Replace NaN, +inf and -inf with finite numbers (``torch.nan_to_num``)."""
    if input.dtype.category < _FLOAT:
        return input.clone()
    info = dt.finfo(input.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    result = where(isnan(input), nan, where(isposinf(input), posinf, where(isneginf(input), neginf, input)))
    return finish_out("nan_to_num", result.to(input.dtype), out) if out is not None else result.to(input.dtype)


def heaviside(input, values):
    """0 where input < 0, ``values`` where input == 0, 1 where input > 0."""
    return where(eq(input, 0), values, gt(input, 0).to(input.dtype)).to(dt.result_type(input, values))


for _fn in (lerp, addcmul, addcdiv, nan_to_num, heaviside):
    _export(_fn.__name__, _fn)
    _export(_fn.__name__ + "_", (_fused_in_place if _fn in (lerp, addcmul, addcdiv) else _inplace)(_fn.__name__, _fn))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (``torch.isclose``)."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose(): {input.dtype} did not match {other.dtype}")
    if input.dtype.category < _FLOAT:
        return eq(input, other)
    close = le(abs(sub(input, other)), add(mul(abs(other), rtol), atol))
    close = logical_or(close, eq(input, other))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether all elements are close (``torch.allclose``)."""
    from .reduction import all as all_

    return bool(all_(isclose(input, other, rtol, atol, equal_nan)))


def equal(input, other) -> bool:
    """Same shape and all elements equal (``torch.equal``)."""
    from .reduction import all as all_

    return input._shape == other._shape and bool(all_(eq(input, other)))


for _fn in (isclose, allclose, equal):
    _export(_fn.__name__, _fn)
