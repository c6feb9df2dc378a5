"""The op-conformance suite: every op against a NumPy reference, on any device.

``OP_DB`` lists :class:`OpInfo` entries (the op, its NumPy reference, the
dtypes it accepts, how to draw inputs). :func:`check_op` runs one entry on one
device and dtype over a set of shapes (0-d, empty, broadcast) and layouts
(contiguous, transposed, strided, expanded); :func:`run_conformance` runs the
whole table for a plugin author, honouring an expected-failures list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.special

import core

from . import assert_close

__all__ = ["OpInfo", "OP_DB", "LAYOUTS", "make_input", "check_op", "run_conformance", "ops_named"]

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int64", "int32", "int16", "int8", "uint8")
ALL = FLOATS + INTS + ("bool",)
LAYOUTS = ("contiguous", "transposed", "strided", "expanded")
UNARY_SHAPES = ((), (0,), (5,), (3, 4), (2, 3, 4), (1, 4))
BINARY_SHAPES = (((), ()), ((4,), ()), ((), (3,)), ((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)),
                 ((0, 3), (1, 3)), ((5,), (5,)))


@dataclass
class OpInfo:
    """One op of the suite: how to call it, its reference, its dtypes and its input domain."""

    name: str
    op: Callable
    ref: Callable
    arity: int = 1
    dtypes: tuple = FLOATS
    domain: tuple = (-3.0, 3.0)
    out: object = "same"  # same | float | bool, or a function of the input dtype name
    rtol: float | None = None
    atol: float | None = None
    shapes: tuple = ()
    kwargs: dict = field(default_factory=dict)
    differentiable: bool = True  # False where PyTorch lacks a derivative for some input (gradcheck skips it)

    def sample_shapes(self) -> tuple:
        return self.shapes or (UNARY_SHAPES if self.arity == 1 else BINARY_SHAPES)

    def __repr__(self) -> str:
        return f"OpInfo({self.name})"


def _values(rng: np.random.Generator, shape: tuple, dtype: str, domain: tuple) -> np.ndarray:
    lo, hi = domain
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in INTS:
        lo = max(lo, 0) if dtype == "uint8" else lo
        return rng.integers(int(np.floor(lo)), int(np.ceil(hi)) + 1, size=shape).astype(dtype)
    values = rng.uniform(lo, hi, size=shape)
    return values.astype(core.dtypes.by_name(dtype).numpy)


def make_input(values: np.ndarray, device: str, layout: str):
    """A tensor on ``device`` holding ``values`` in ``layout``, and the array it should equal."""
    d = core.dtypes.from_numpy_dtype(values.dtype)
    if layout == "transposed" and values.ndim >= 2:
        base = core.tensor(np.ascontiguousarray(np.swapaxes(values, -1, -2)), dtype=d, device=device)
        return base.transpose(-1, -2), values
    if layout == "strided" and values.ndim >= 1:
        padded = np.stack([values, np.zeros_like(values)], axis=-1)  # every other element along the last dim
        base = core.tensor(padded, dtype=d, device=device)
        return base.select(-1, 0), values
    if layout == "expanded" and values.ndim >= 1 and values.shape[0] > 0:
        first = values[:1]
        base = core.tensor(np.ascontiguousarray(first), dtype=d, device=device)
        return base.expand(values.shape), np.broadcast_to(first, values.shape)
    return core.tensor(values, dtype=d, device=device), values


def _reference_dtype(info: OpInfo, dtype: str) -> str:
    if callable(info.out):
        return info.out(dtype)
    if info.out == "bool":
        return "bool"
    if info.out == "float" and dtype not in FLOATS:
        return core.get_default_dtype().name
    return dtype


def _half_safe(array: np.ndarray) -> np.ndarray:
    return array.astype(np.float32) if array.dtype.name in ("float16", "bfloat16") else array


def check_op(info: OpInfo, device: str, dtype: str, layout: str = "contiguous", seed: int = 0,
             shapes: tuple | None = None) -> None:
    """Run one op on ``device`` in ``dtype``/``layout`` over its sample shapes; AssertionError on mismatch."""
    rng = np.random.default_rng(seed)
    for shape in shapes or info.sample_shapes():
        shape_list = shape if info.arity > 1 else (shape,)
        inputs, arrays = [], []
        for s in shape_list:
            t, a = make_input(_values(rng, s, dtype, info.domain), device, layout)
            inputs.append(t)
            arrays.append(a)
        result = info.op(*inputs, **info.kwargs)
        expected_dtype = _reference_dtype(info, dtype)
        ref_inputs = [_half_safe(a) for a in arrays]
        if info.out == "float" and dtype not in FLOATS:  # integral inputs compute in the default float dtype
            ref_inputs = [a.astype(_half_safe(np.empty(0, core.dtypes.by_name(expected_dtype).numpy)).dtype)
                          for a in ref_inputs]
        with np.errstate(all="ignore"):
            expected = np.asarray(info.ref(*ref_inputs, **info.kwargs))
        expected = expected.astype(core.dtypes.by_name(expected_dtype).numpy)
        where = f"{info.name} on {device}, {dtype}, {layout}, shapes {shape_list}, seed {seed}"
        assert result.device.type == core.device(device).type, f"{where}: result on {result.device}"
        assert_close(result, expected, rtol=info.rtol, atol=info.atol, check_dtype=False, msg=where)
        assert result.dtype.name == expected_dtype, f"{where}: dtype {result.dtype.name} != {expected_dtype}"


def _unary(name, ref, dtypes=FLOATS, domain=(-3.0, 3.0), out="same", **kw) -> OpInfo:
    return OpInfo(name, getattr(core, name), ref, 1, dtypes, domain, out, **kw)


def _binary(name, ref, dtypes=ALL, domain=(-3.0, 3.0), out="same", **kw) -> OpInfo:
    return OpInfo(name, getattr(core, name), ref, 2, dtypes, domain, out, **kw)


_FLOAT_INT = FLOATS + ("int64", "int32", "uint8")
OP_DB: list = [
    _unary("exp", np.exp, _FLOAT_INT, out="float"),
    _unary("exp2", np.exp2, _FLOAT_INT, out="float"),
    _unary("expm1", np.expm1, _FLOAT_INT, out="float"),
    _unary("log", np.log, _FLOAT_INT, domain=(0.1, 5.0), out="float"),
    _unary("log2", np.log2, FLOATS, domain=(0.1, 5.0), out="float"),
    _unary("log10", np.log10, FLOATS, domain=(0.1, 5.0), out="float"),
    _unary("log1p", np.log1p, FLOATS, domain=(-0.5, 5.0), out="float"),
    _unary("sqrt", np.sqrt, _FLOAT_INT, domain=(0.0, 5.0), out="float"),
    _unary("rsqrt", lambda a: 1 / np.sqrt(a), FLOATS, domain=(0.2, 5.0), out="float"),
    _unary("sin", np.sin, _FLOAT_INT, out="float"),
    _unary("cos", np.cos, FLOATS, out="float"),
    _unary("tan", np.tan, FLOATS, domain=(-1.2, 1.2), out="float"),
    _unary("asin", np.arcsin, FLOATS, domain=(-0.95, 0.95), out="float"),
    _unary("acos", np.arccos, FLOATS, domain=(-0.95, 0.95), out="float"),
    _unary("atan", np.arctan, FLOATS, out="float"),
    _unary("sinh", np.sinh, FLOATS, out="float"),
    _unary("cosh", np.cosh, FLOATS, out="float"),
    _unary("tanh", np.tanh, _FLOAT_INT, out="float"),
    _unary("asinh", np.arcsinh, FLOATS, out="float"),
    _unary("acosh", np.arccosh, FLOATS, domain=(1.1, 4.0), out="float"),
    _unary("atanh", np.arctanh, FLOATS, domain=(-0.9, 0.9), out="float"),
    _unary("sigmoid", scipy.special.expit, _FLOAT_INT, out="float"),
    _unary("erf", scipy.special.erf, FLOATS, out="float"),
    _unary("erfc", scipy.special.erfc, FLOATS, out="float"),
    _unary("erfinv", scipy.special.erfinv, ("float32", "float64"), domain=(-0.9, 0.9), out="float"),
    _unary("reciprocal", lambda a: 1 / a, FLOATS, domain=(0.5, 3.0), out="float"),
    _unary("abs", np.abs, FLOATS + ("int64", "int32", "int8")),
    _unary("neg", np.negative, FLOATS + ("int64", "int32", "int16")),
    _unary("sign", np.sign, FLOATS + ("int64", "int32")),
    _unary("floor", np.floor, FLOATS + ("int64",)),
    _unary("ceil", np.ceil, FLOATS + ("int64",)),
    _unary("round", np.round, ("float32", "float64")),
    _unary("trunc", np.trunc, FLOATS + ("int64",)),
    _unary("frac", lambda a: a - np.trunc(a), ("float32", "float64")),
    _unary("square", np.square, FLOATS + ("int64",)),
    _unary("isnan", np.isnan, ALL, out="bool"),
    _unary("isinf", np.isinf, ALL, out="bool"),
    _unary("isfinite", np.isfinite, ALL, out="bool"),
    _unary("signbit", np.signbit, FLOATS + ("int64",), out="bool"),
    _unary("logical_not", np.logical_not, ALL, out="bool"),
    _unary("bitwise_not", np.invert, INTS + ("bool",)),
    _binary("add", np.add, ALL, out="same"),
    _binary("sub", np.subtract, FLOATS + INTS),
    _binary("mul", np.multiply, ALL),
    _binary("div", np.true_divide, FLOATS + ("int64", "int32"), domain=(0.5, 4.0), out="float"),
    _binary("floor_divide", np.floor_divide, FLOATS + ("int64", "int32"), domain=(1.0, 7.0)),
    _binary("remainder", np.remainder, FLOATS + ("int64", "int32"), domain=(1.0, 7.0)),
    _binary("fmod", np.fmod, FLOATS + ("int64",), domain=(1.0, 7.0)),
    _binary("pow", np.power, ("float32", "float64", "int64"), domain=(0.5, 3.0)),
    _binary("atan2", np.arctan2, FLOATS, out="float"),
    _binary("maximum", np.maximum, ALL),
    _binary("minimum", np.minimum, ALL),
    _binary("hypot", np.hypot, ("float32", "float64"), out="float"),
    _binary("copysign", np.copysign, ("float32", "float64"), out="float"),
    _binary("logaddexp", np.logaddexp, ("float32", "float64"), out="float"),
    _binary("eq", np.equal, ALL, out="bool"),
    _binary("ne", np.not_equal, ALL, out="bool"),
    _binary("lt", np.less, ALL, out="bool"),
    _binary("le", np.less_equal, ALL, out="bool"),
    _binary("gt", np.greater, ALL, out="bool"),
    _binary("ge", np.greater_equal, ALL, out="bool"),
    _binary("logical_and", np.logical_and, ALL, out="bool"),
    _binary("logical_or", np.logical_or, ALL, out="bool"),
    _binary("logical_xor", np.logical_xor, ALL, out="bool"),
    _binary("bitwise_and", np.bitwise_and, INTS + ("bool",)),
    _binary("bitwise_or", np.bitwise_or, INTS + ("bool",)),
    _binary("bitwise_xor", np.bitwise_xor, INTS + ("bool",)),
    OpInfo("where", lambda c, a, b: core.where(c > 0, a, b), lambda c, a, b: np.where(c > 0, a, b), 3, ALL,
           shapes=(((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), ()), ((0,), (0,), (1,)), ((), (), ()))),
    OpInfo("clamp", lambda a: core.clamp(a, -1, 2), lambda a: np.clip(a, -1, 2), 1, FLOATS + ("int64",)),
    OpInfo("lerp", lambda a, b: core.lerp(a, b, 0.25), lambda a, b: a + 0.25 * (b - a), 2, ("float32", "float64")),
]

_SP = scipy.special


def _special(name, ref, arity=1, dtypes=FLOATS, domain=(-3.0, 3.0), **kw) -> OpInfo:
    """An entry of ``core.special.<name>`` (floating output: integral inputs compute in the default float dtype)."""
    return OpInfo(f"special.{name}", getattr(core.special, name), ref, arity, dtypes, domain, "float", **kw)


def _spherical_j0(a):
    with np.errstate(all="ignore"):
        return np.where(a == 0, 1.0, np.where(np.isinf(a), 0.0, np.sin(a) / np.where(a == 0, 1, a)))


OP_DB += [
    _unary("digamma", _SP.digamma, _FLOAT_INT, domain=(0.5, 4.0), out="float"),
    _unary("i0", _SP.i0, _FLOAT_INT, out="float"),
    OpInfo("polygamma[n=1]", lambda a: core.polygamma(1, a), lambda a: _SP.polygamma(1, a), 1, _FLOAT_INT,
           (0.5, 4.0), "float", rtol=1e-5),
    OpInfo("polygamma[n=3]", lambda a: core.polygamma(3, a), lambda a: _SP.polygamma(3, a), 1, ("float32", "float64"),
           (0.5, 4.0), "float", rtol=1e-5),
    OpInfo("logit", core.logit, _SP.logit, 1, FLOATS, (0.05, 0.95), "float"),
    OpInfo("logit[eps]", lambda a: core.logit(a, eps=0.2), lambda a: _SP.logit(np.clip(a, 0.2, 0.8)), 1,
           ("float32", "float64"), (0.0, 1.0), "float"),
    OpInfo("mvlgamma[p=3]", lambda a: core.mvlgamma(a, 3), lambda a: _SP.multigammaln(a, 3), 1,
           ("float32", "float64"), (1.5, 4.0), "float", rtol=1e-5),
    _special("erfcx", _SP.erfcx, domain=(-2.0, 3.0)),
    _special("i0e", _SP.i0e, dtypes=_FLOAT_INT),
    _special("i1", _SP.i1, dtypes=_FLOAT_INT),
    _special("i1e", _SP.i1e),
    _special("ndtr", _SP.ndtr, dtypes=_FLOAT_INT),
    _special("ndtri", _SP.ndtri, domain=(0.05, 0.95)),
    _special("log_ndtr", _SP.log_ndtr, domain=(-5.0, 3.0)),
    _special("entr", _SP.entr, dtypes=_FLOAT_INT, domain=(0.05, 3.0)),
    _special("xlog1py", _SP.xlog1py, 2, FLOATS + ("int64",), (-0.5, 3.0)),
    _special("zeta", _SP.zeta, 2, ("float32", "float64"), (1.5, 4.0), rtol=1e-5, differentiable=False),
    _special("gammainc", _SP.gammainc, 2, ("float32", "float64"), (0.5, 4.0), rtol=1e-5, differentiable=False),
    _special("gammaincc", _SP.gammaincc, 2, ("float32", "float64"), (0.5, 4.0), rtol=1e-5, differentiable=False),
    _special("bessel_j0", _SP.j0, dtypes=_FLOAT_INT, domain=(-6.0, 6.0), differentiable=False),
    _special("bessel_j1", _SP.j1, domain=(-6.0, 6.0), differentiable=False),
    _special("bessel_y0", _SP.y0, domain=(0.5, 6.0), differentiable=False),
    _special("bessel_y1", _SP.y1, domain=(0.5, 6.0), differentiable=False),
    _special("modified_bessel_k0", _SP.k0, domain=(0.2, 4.0), differentiable=False),
    _special("modified_bessel_k1", _SP.k1, domain=(0.2, 4.0), differentiable=False),
    _special("scaled_modified_bessel_k0", _SP.k0e, domain=(0.2, 4.0), differentiable=False),
    _special("scaled_modified_bessel_k1", _SP.k1e, domain=(0.2, 4.0), differentiable=False),
    _special("spherical_bessel_j0", _spherical_j0, dtypes=_FLOAT_INT, domain=(-6.0, 6.0), differentiable=False),
    _special("airy_ai", lambda a: _SP.airy(a)[0], domain=(-4.0, 3.0), differentiable=False),
]


def _chebyshev_vw(sign: int, shifted: bool):
    """V_n (sign -1) or W_n (sign +1) through U: U_n(x) + sign * U_(n-1)(x), U_(-1) = 0."""
    def ref(n, x):
        x = x + x - 1 if shifted else x
        below = np.where(n > 0, _SP.eval_chebyu(np.maximum(n - 1, 0), x), 0)
        return _SP.eval_chebyu(n, x) + sign * below

    return ref


_POLYNOMIALS = {
    "chebyshev_polynomial_t": _SP.eval_chebyt, "chebyshev_polynomial_u": _SP.eval_chebyu,
    "chebyshev_polynomial_v": _chebyshev_vw(-1, False), "chebyshev_polynomial_w": _chebyshev_vw(1, False),
    "shifted_chebyshev_polynomial_t": _SP.eval_sh_chebyt, "shifted_chebyshev_polynomial_u": _SP.eval_sh_chebyu,
    "shifted_chebyshev_polynomial_v": _chebyshev_vw(-1, True), "shifted_chebyshev_polynomial_w": _chebyshev_vw(1, True),
    "hermite_polynomial_h": _SP.eval_hermite, "hermite_polynomial_he": _SP.eval_hermitenorm,
    "laguerre_polynomial_l": _SP.eval_laguerre, "legendre_polynomial_p": _SP.eval_legendre,
}


def _polynomial(name: str) -> OpInfo:
    """``p_n(x)`` with x in (-1, 1) and the degree n = 3 * other + 3 in [0, 6] (truncated to an integer)."""
    ref, fn = _POLYNOMIALS[name], getattr(core.special, name)
    return OpInfo(f"special.{name}", lambda x, n: fn(x, n * 3 + 3),
                  lambda x, n: ref(np.trunc(n * 3 + 3).astype(np.int64), x), 2, ("float32", "float64", "int64"),
                  (-1.0, 1.0), "float", rtol=1e-5, atol=1e-5, differentiable=False)


OP_DB += [_polynomial(name) for name in _POLYNOMIALS]


def _sum_dtype(dtype: str) -> str:
    return "int64" if dtype in INTS or dtype == "bool" else dtype


def _logical_dtype(dtype: str) -> str:
    return "uint8" if dtype == "uint8" else "bool"  # PyTorch keeps uint8 for any/all


def _reduction(name, fn, ref, dtypes=FLOATS, out="same", domain=(-3.0, 3.0), **kw) -> list:
    """One entry per dim form: all dims, one negative dim with keepdim, a tuple of dims."""
    forms = (("all", {}, {}), ("dim-1-keepdim", {"dim": -1, "keepdim": True}, {"axis": -1, "keepdims": True}),
             ("dims01", {"dim": (0, 1)}, {"axis": (0, 1)}))
    shapes = ((3, 4), (2, 3, 4), (1, 5))
    return [OpInfo(f"{name}[{form}]", lambda a, _k=ck, _f=fn: _f(a, **_k), lambda a, _k=nk, _r=ref: _r(a, **_k),
                   1, dtypes, domain, out, shapes=shapes, **kw) for form, ck, nk in forms]


def _scan(name, fn, ref, dtypes, out) -> OpInfo:
    return OpInfo(name, lambda a: fn(a, dim=-1), lambda a: ref(a, axis=-1), 1, dtypes, (-2.0, 2.0), out,
                  shapes=((5,), (3, 4), (2, 0, 3)))


OP_DB += [
    *_reduction("sum", core.sum, np.sum, FLOATS + ("int64", "int32", "bool"), _sum_dtype, rtol=1e-5, atol=1e-5),
    *_reduction("prod", core.prod, np.prod, ("float32", "float64", "int64"), _sum_dtype, domain=(0.5, 1.5))[:2],
    *_reduction("mean", core.mean, np.mean, FLOATS, rtol=1e-5, atol=1e-5),
    *_reduction("amax", core.amax, np.amax, FLOATS + ("int64", "int32", "bool")),
    *_reduction("amin", core.amin, np.amin, FLOATS + ("int64", "uint8")),
    *_reduction("var", core.var, lambda a, **k: np.var(a, ddof=1, **k), ("float32", "float64"), rtol=1e-4,
                atol=1e-5),
    *_reduction("std", core.std, lambda a, **k: np.std(a, ddof=1, **k), ("float32", "float64"), rtol=1e-4,
                atol=1e-5),
    *_reduction("logsumexp", lambda a, **k: core.logsumexp(a, dim=k.pop("dim", (0, 1)), **k),
                lambda a, **k: scipy.special.logsumexp(a, axis=k.pop("axis", (0, 1)), **k), ("float32", "float64"),
                rtol=1e-5, atol=1e-5),
    *_reduction("any", core.any, np.any, ALL, _logical_dtype)[:2],
    *_reduction("all", core.all, np.all, ALL, _logical_dtype)[:2],
    OpInfo("argmax", lambda a: core.argmax(a, dim=-1), lambda a: np.argmax(a, axis=-1), 1,
           ("float32", "float64", "int64"), out=lambda d: "int64", shapes=((5,), (3, 4), (2, 3, 4))),
    OpInfo("argmin", lambda a: core.argmin(a), lambda a: np.argmin(a), 1, ("float32", "int32"),
           out=lambda d: "int64", shapes=((5,), (3, 4), (2, 3, 4))),
    _scan("cumsum", core.cumsum, np.cumsum, ("float32", "float64", "int64", "int32", "bool"), _sum_dtype),
    _scan("cumprod", core.cumprod, np.cumprod, ("float32", "float64", "int64"), _sum_dtype),
    OpInfo("matmul", core.matmul, np.matmul, 2, ("float32", "float64", "float16", "int64"), (-2.0, 2.0),
           rtol=1e-4, atol=1e-4, shapes=(((3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 3)), ((3, 4), (4,)),
                                         ((4,), (4,)), ((0, 4), (4, 2)), ((2, 3, 0), (2, 0, 4)))),
    OpInfo("einsum[bij,bjk->bik]", lambda a, b: core.einsum("bij,bjk->bik", a, b),
           lambda a, b: np.einsum("bij,bjk->bik", a, b), 2, ("float32", "float64"), rtol=1e-4, atol=1e-4,
           shapes=(((2, 3, 4), (2, 4, 5)), ((1, 2, 2), (1, 2, 3)))),
    OpInfo("cat", lambda a, b: core.cat([a, b], dim=-1), lambda a, b: np.concatenate([a, b], axis=-1), 2, ALL,
           shapes=(((3, 4), (3, 2)), ((2, 0), (2, 3)), ((5,), (1,)))),
    OpInfo("stack", lambda a, b: core.stack([a, b], dim=1), lambda a, b: np.stack([a, b], axis=1), 2, ALL,
           shapes=(((3, 4), (3, 4)), ((0,), (0,)), ((2,), (2,)))),
    OpInfo("flip", lambda a: core.flip(a, (0, -1)), lambda a: np.flip(a, (0, -1)), 1, ALL,
           shapes=((3, 4), (2, 3, 4), (0, 2))),
    OpInfo("roll", lambda a: core.roll(a, 2, -1), lambda a: np.roll(a, 2, -1), 1, FLOATS + ("int64",),
           shapes=((3, 4), (5,), (2, 0))),
    OpInfo("tril", lambda a: core.tril(a, -1), lambda a: np.tril(a, -1), 1, ALL, shapes=((3, 4), (2, 4, 3))),
    OpInfo("getitem[advanced]", lambda a: a[[0, -1, 1]], lambda a: a[[0, -1, 1]], 1, ALL,
           shapes=((3, 4), (2, 3), (4,))),
    OpInfo("getitem[mask]", lambda a: a[a > 0], lambda a: a[a > 0], 1, FLOATS + ("int64",),
           shapes=((3, 4), (5,), (0, 2))),
    OpInfo("gather", lambda a: core.gather(a, 1, core.tensor([[0, 0], [1, 0], [2, 1]], device=a.device)),
           lambda a: np.take_along_axis(a, np.array([[0, 0], [1, 0], [2, 1]]), 1), 1, ALL, shapes=((3, 4),)),
    OpInfo("index_select", lambda a: core.index_select(a, -1, core.tensor([2, 0, 2], device=a.device)),
           lambda a: np.take(a, [2, 0, 2], axis=-1), 1, ALL, shapes=((3, 4), (2, 3, 3))),
    OpInfo("einsum[ii->i]", lambda a: core.einsum("ii->i", a), lambda a: np.einsum("ii->i", a), 1,
           ("float32", "int64"), shapes=((3, 3), (1, 1))),
]

OP_DB += [  # composites of the torch namespace's breadth (core.ops.shape, core.ops.statistics, core.ops.linalg)
    OpInfo("diff", lambda a: core.diff(a, 2, dim=-1), lambda a: np.diff(a, 2, axis=-1), 1,
           ("float32", "float64", "int64"), shapes=((5,), (3, 4), (2, 3, 4), (2, 0))),
    OpInfo("quantile", lambda a: core.quantile(a, 0.3, dim=-1), lambda a: np.quantile(a, 0.3, axis=-1), 1,
           ("float32", "float64"), rtol=1e-5, atol=1e-5, shapes=((5,), (3, 4), (2, 3, 4))),
    OpInfo("nanquantile", lambda a: core.nanquantile(a, 0.7, dim=0, interpolation="midpoint"),
           lambda a: np.nanquantile(a, 0.7, axis=0, method="midpoint"), 1, ("float32", "float64"),
           rtol=1e-5, atol=1e-5, shapes=((5,), (3, 4), (2, 3, 4))),
    OpInfo("cov", lambda a: core.cov(a), lambda a: np.cov(a), 1, ("float32", "float64"), rtol=1e-4, atol=1e-5,
           shapes=((3, 4), (2, 5), (6,))),
    OpInfo("corrcoef", lambda a: core.corrcoef(a), lambda a: np.corrcoef(a), 1, ("float32", "float64"),
           rtol=1e-4, atol=1e-5, shapes=((3, 4), (2, 5))),
    OpInfo("kron", core.kron, np.kron, 2, ("float32", "float64", "int64"),
           shapes=(((2, 3), (3, 2)), ((4,), (2,)), ((2, 1, 2), (3, 2)))),
    OpInfo("cdist", core.cdist, lambda a, b: np.sqrt(((a[..., :, None, :] - b[..., None, :, :]) ** 2).sum(-1)), 2,
           ("float32", "float64"), rtol=1e-4, atol=1e-4, shapes=(((3, 2), (4, 2)), ((2, 3, 4), (2, 5, 4)))),
]


def _complex_of(dtype: str) -> str:
    return {"float32": "complex64", "float64": "complex128"}[dtype]


def _conditioned(a, xp_eye):
    """``a`` plus a multiple of the identity: a batch of well-conditioned matrices from uniform draws."""
    return a + 4 * xp_eye(a.shape[-1])


def _core_eye(a):
    return lambda n: core.eye(n, dtype=a.dtype, device=a.device)


def _spd(a, transpose, eye):
    """A symmetric positive-definite batch from any square batch: ``a a^T + n I``."""
    return a @ transpose(a) + a.shape[-1] * eye(a.shape[-1])


_MATRICES = ((2, 3, 3), (1, 4, 4), (3, 2, 2))
_REAL = ("float32", "float64")
_LINALG = dict(dtypes=_REAL, rtol=1e-4, atol=1e-4, shapes=_MATRICES)
OP_DB += [  # core.linalg over the decompositions family (LAPACK through the array module) and its composites
    OpInfo("linalg.inv", lambda a: core.linalg.inv(_conditioned(a, _core_eye(a))),
           lambda a: np.linalg.inv(_conditioned(a, np.eye)), **_LINALG),
    OpInfo("linalg.det", core.linalg.det, np.linalg.det, **_LINALG),
    OpInfo("linalg.slogdet[logabsdet]", lambda a: core.linalg.slogdet(a).logabsdet,
           lambda a: np.linalg.slogdet(a)[1], **_LINALG),
    OpInfo("linalg.solve", lambda a, b: core.linalg.solve(_conditioned(a, _core_eye(a)), b),
           lambda a, b: np.linalg.solve(_conditioned(a, np.eye), b), 2, _REAL, rtol=1e-4, atol=1e-4,
           shapes=(((2, 3, 3), (2, 3, 2)), ((4, 4), (4, 1)))),
    OpInfo("linalg.cholesky", lambda a: core.linalg.cholesky(_spd(a, lambda m: m.mT, _core_eye(a))),
           lambda a: np.linalg.cholesky(_spd(a, lambda m: np.swapaxes(m, -1, -2), np.eye)), **_LINALG),
    OpInfo("linalg.qr[R]", lambda a: core.linalg.qr(a).R, lambda a: np.linalg.qr(a)[1], **_LINALG),
    OpInfo("linalg.svdvals", core.linalg.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), **_LINALG),
    OpInfo("linalg.eigvalsh", lambda a: core.linalg.eigvalsh(a + a.mT),
           lambda a: np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2)), **_LINALG),
    OpInfo("linalg.pinv", core.linalg.pinv, np.linalg.pinv, **dict(_LINALG, shapes=((2, 3, 4), (4, 2), (1, 3, 3)))),
    OpInfo("linalg.matrix_power", lambda a: core.linalg.matrix_power(a, 3), lambda a: np.linalg.matrix_power(a, 3),
           **_LINALG),
    OpInfo("linalg.matrix_norm[nuc]", lambda a: core.linalg.matrix_norm(a, "nuc"),
           lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1)), **_LINALG),
    OpInfo("linalg.vector_norm[3]", lambda a: core.linalg.vector_norm(a, 3, dim=-1),
           lambda a: np.linalg.norm(a, 3, axis=-1), 1, _REAL, rtol=1e-4, atol=1e-4, shapes=((5,), (3, 4), (2, 3, 4))),
    OpInfo("linalg.cross", core.linalg.cross, np.cross, 2, _REAL + ("int64",), shapes=(((4, 3), (4, 3)),
                                                                                    ((2, 1, 3), (1, 5, 3)))),
    OpInfo("linalg.vecdot", core.linalg.vecdot, lambda a, b: (a * b).sum(-1), 2, _REAL, rtol=1e-5, atol=1e-5,
           shapes=(((3, 4), (3, 4)), ((2, 1, 5), (3, 5)))),
]

_FFT = dict(dtypes=_REAL, out=_complex_of, rtol=1e-4, atol=1e-4, shapes=((5,), (3, 4), (2, 3, 4)))
OP_DB += [  # core.fft over the spectral family (pocketfft / cuFFT through the array module)
    OpInfo("fft.fft", core.fft.fft, np.fft.fft, **_FFT),
    OpInfo("fft.ifft[ortho]", lambda a: core.fft.ifft(a, norm="ortho"), lambda a: np.fft.ifft(a, norm="ortho"),
           **_FFT),
    OpInfo("fft.rfft[n=6]", lambda a: core.fft.rfft(a, n=6), lambda a: np.fft.rfft(a, n=6), **_FFT),
    OpInfo("fft.fft2", core.fft.fft2, np.fft.fft2, **dict(_FFT, shapes=((3, 4), (2, 3, 4)))),
    OpInfo("fft.rfftn[forward]", lambda a: core.fft.rfftn(a, norm="forward"),
           lambda a: np.fft.rfftn(a, norm="forward"), **_FFT),
    OpInfo("fft.irfft", core.fft.irfft, np.fft.irfft, 1, _REAL, rtol=1e-4, atol=1e-4, shapes=((5,), (3, 4))),
    OpInfo("fft.hfft", core.fft.hfft, np.fft.hfft, 1, _REAL, rtol=1e-4, atol=1e-4, shapes=((5,), (3, 4))),
    OpInfo("fft.ihfft", core.fft.ihfft, np.fft.ihfft, **_FFT),
    OpInfo("fft.fftshift", core.fft.fftshift, np.fft.fftshift, 1, ALL, shapes=((5,), (3, 4), (2, 3, 4))),
    OpInfo("fft.ifftshift[dim]", lambda a: core.fft.ifftshift(a, dim=-1), lambda a: np.fft.ifftshift(a, axes=-1),
           1, ALL, shapes=((5,), (3, 4))),
]

OP_DB += [  # more of the torch namespace (core.ops.tensor_functions, legacy_linalg)
    OpInfo("logcumsumexp", lambda a: core.logcumsumexp(a, -1), lambda a: np.logaddexp.accumulate(a, axis=-1), 1,
           _REAL, rtol=1e-5, atol=1e-5, shapes=((5,), (3, 4), (2, 3, 4))),
    OpInfo("gcd", core.gcd, np.gcd, 2, ("int64", "int32", "int16", "uint8"), (-20.0, 20.0)),
    OpInfo("lcm", core.lcm, np.lcm, 2, ("int64", "int32"), (-12.0, 12.0)),
    OpInfo("ldexp", lambda a, b: core.ldexp(a, b.to(core.int32)), lambda a, b: a * np.exp2(b.astype(np.int32)), 2,
           _REAL, (-4.0, 4.0), shapes=(((3, 4), (3, 4)), ((5,), (5,)), ((3, 1), (1, 4)))),  # a 0-d input would
    # not promote: PyTorch's ldexp is mul(input, pow(2, other)), whose float32 power wins over a 0-d float64
    OpInfo("trapezoid", lambda a: core.trapezoid(a, dx=0.5), lambda a: np.trapezoid(a, dx=0.5), 1, _REAL,
           rtol=1e-5, atol=1e-5, shapes=((5,), (3, 4), (2, 3, 4))),
    OpInfo("gradient[edge_order=2]", lambda a: core.gradient(a, dim=-1, edge_order=2)[0],
           lambda a: np.gradient(a, axis=-1, edge_order=2), 1, _REAL, rtol=1e-5, atol=1e-5,
           shapes=((5,), (3, 4), (2, 3, 4))),
    OpInfo("renorm", lambda a: core.renorm(a, 2, 0, 1.5),
           lambda a: a * np.minimum(1.0, 1.5 / (np.sqrt((a.reshape(a.shape[0], -1) ** 2).sum(1)) + 1e-7)).reshape(
               (-1,) + (1,) * (a.ndim - 1)), 1, _REAL, rtol=1e-5, atol=1e-5, shapes=((3, 4), (2, 3, 4))),
]

def ops_named(*names: str) -> list:
    """The OP_DB entries with these names (all when none are given)."""
    return [info for info in OP_DB if not names or info.name in names]


def run_conformance(device: str, expected_failures=(), dtypes=None, layouts=LAYOUTS) -> dict:
    """Run the whole suite on ``device``: ``{"passed": [...], "failed": {case: error}, "xfailed": [...]}``.

    ``dtypes`` restricts the run to those dtype names; ``expected_failures`` names ops (or ``"op:dtype"``)
    a plugin has not written yet; an unexpected pass of one is reported under ``"xpassed"`` so the list
    shrinks as the plugin grows.
    """
    report = {"passed": [], "failed": {}, "xfailed": [], "xpassed": []}
    for info in OP_DB:
        for dtype in (d for d in info.dtypes if dtypes is None or d in dtypes):
            case = f"{info.name}:{dtype}"
            expected_fail = info.name in expected_failures or case in expected_failures
            try:
                for layout in layouts:
                    check_op(info, device, dtype, layout)
            except Exception as exc:  # noqa: BLE001 - a report collects every failure
                if expected_fail:
                    report["xfailed"].append(case)
                else:
                    report["failed"][case] = f"{type(exc).__name__}: {exc}"
                continue
            report["xpassed" if expected_fail else "passed"].append(case)
    return report
