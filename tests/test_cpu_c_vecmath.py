"""cpu_c's transcendental kernels on their SIMD path (glibc's libmvec through csrc/vecmath.h) against the NumPy
reference: long runs (whole vectors, not only the scalar tail loop), values over the float's range with NaN,
infinities, zeros, subnormals and out-of-domain arguments mixed in, contiguous and strided; and the fused kernels
that call exp/erf/tanh (softmax, gelu and its backward). Tolerances are test_cpu_c_elementwise's (a few ulp: float32
2e-6, float64 1e-14 relative), plus an absolute one of the smallest normal number for results that underflow into
the subnormals, where an ulp is no longer relative; the fused kernels and logaddexp (sums that cancel) get
PyTorch's default tolerances.
"""

from __future__ import annotations

import math
import os
import platform
import sysconfig

import numpy as np
import pytest

import core
from core.dispatch import get_operator

pytest.importorskip("core_cpu_c", reason="the cpu_c plugin is not installed (pip install plugins/cpu_c)")
from cpu_c_support import from_c, load_cpu_c, numpy_reference  # noqa: E402

UNARY = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
         "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "sinc")
BINARY = ("atan2", "hypot", "pow", "logaddexp", "logaddexp2", "xlogy")
N = 4099  # 256 vectors of 16 floats and a scalar tail of 3
RTOL = {"float32": 2e-6, "float64": 1e-14}


def _values(dtype: str, seed: int) -> np.ndarray:
    """N values: a third near zero (|x| < 4), a third over the whole exponent range, a third specials."""
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    small = rng.uniform(-4, 4, N)
    wide = rng.standard_normal(N) * np.exp2(rng.uniform(-0.9, 0.9, N) * info.maxexp)
    special = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 1 - info.eps, 1 + info.eps,
                          float(info.smallest_subnormal), -float(info.smallest_normal), float(info.max),
                          -float(info.max), 88.72, -103.9, 709.78, -745.1, np.pi / 2, 1e10], N)
    pick = rng.integers(0, 3, N)
    with np.errstate(over="ignore"):
        return np.where(pick == 0, small, np.where(pick == 1, wide, special)).astype(dtype)


def _assert_close(actual, expected, context: str, fused: bool = False):
    """Elementwise: a few ulp; ``fused`` (sums, cancellation in log_softmax's x - max - log(sum) or logaddexp's
    max + log1p(...)): PyTorch's default ``assert_close`` tolerances."""
    a, e = actual.numpy(), expected.numpy()
    assert a.dtype == e.dtype, context
    if fused:
        rtol, atol = {"float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}[a.dtype.name]
    else:
        rtol, atol = RTOL[a.dtype.name], float(np.finfo(a.dtype).smallest_normal)
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=context)
    assert np.array_equal(np.isnan(a), np.isnan(e)), context


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", UNARY + BINARY)
def test_transcendentals_match_the_reference_over_the_range(force_c, op, dtype):
    x = core.tensor(_values(dtype, 1))
    y = core.tensor(_values(dtype, 2))
    operator = get_operator(op)
    args = (x, y) if op in BINARY else (x,)
    with np.errstate(all="ignore"):
        for layout, operands in (("contiguous", args), ("strided", tuple(t[::3] for t in args))):
            out = operator(*operands)
            assert from_c(out), f"{op} {dtype} {layout}: the C kernel did not run"
            # logaddexp(2) is max + log1p(exp(-|x - y|)): where the two cancel (a result near 0 from operands near
            # -1 and 1), the error is an ulp of the operands, not of the result: PyTorch's default tolerances
            _assert_close(out, numpy_reference(op, *operands), f"{op} {dtype} {layout}",
                          fused=op in ("logaddexp", "logaddexp2"))


def _ulp_errors(actual: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|actual - exact| in units of the float32 spacing at the correctly rounded result (float64 ``exact``)."""
    rounded = exact.astype(np.float32)
    spacing = np.spacing(np.abs(rounded)).astype(np.float64)
    return np.abs(actual.astype(np.float64) - exact) / spacing


# cpu_c's own float32 kernels (csrc/vecmath.h, not libmvec's): op -> (float64 reference, max ulp; the exhaustive
# maximum over all float32 inputs is 2.6 for tanh, 1.6 for expm1)
OWN_FLOAT32 = {"tanh": (np.tanh, 3), "expm1": (np.expm1, 2)}


@pytest.mark.parametrize("op", OWN_FLOAT32)
def test_own_float32_kernels_are_within_a_few_ulp_over_every_2039th_float(force_c, op):
    """ccc_tanhf / ccc_expm1f over a sweep of all float32 bit patterns (every 2039th: about 2.1 million values, every
    exponent, both signs) against float64: within their ulp bound, NaN exactly where NaN."""
    reference, max_ulp = OWN_FLOAT32[op]
    x = (np.arange(0, 2 ** 32, 2039, dtype=np.uint64).astype(np.uint32)).view(np.float32)
    out = getattr(core, op)(core.tensor(x))
    assert from_c(out), f"{op} float32: the C kernel did not run"
    got = out.numpy()
    with np.errstate(over="ignore"):
        exact = reference(x.astype(np.float64))
        rounded = exact.astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(x))
    finite = np.isfinite(rounded)
    assert np.array_equal(got[~finite & ~np.isnan(x)], rounded[~finite & ~np.isnan(x)])  # overflows: inf
    worst = _ulp_errors(got[finite], exact[finite]).max()
    assert worst <= max_ulp, worst


@pytest.mark.parametrize("op", OWN_FLOAT32)
def test_own_float32_kernels_special_values_are_exact(force_c, op):
    """Signed zeros keep their sign, subnormals give themselves, infinities and saturating arguments give the limits
    (tanh +-1, expm1 -1 and inf), NaN stays NaN; the strided kernel and the half types (computed in float32)
    agree."""
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    saturating = {"tanh": [9.02, -9.02, 10.0, 1e38], "expm1": [-17.4, -100.0, 88.73, 100.0]}[op]
    x = np.array([0.0, -0.0, tiny, -tiny, 3 * tiny, 1e-30, -1e-30, np.inf, -np.inf, -1e38, np.nan, *saturating] * 300,
                 dtype=np.float32)
    with np.errstate(over="ignore"):
        expected = OWN_FLOAT32[op][0](x.astype(np.float64)).astype(np.float32)
    for t in (core.tensor(x), core.tensor(np.stack([x, x], 1))[:, 0]):
        out = getattr(core, op)(t)
        assert from_c(out)
        got = out.numpy()
        np.testing.assert_array_equal(got, expected)
        assert np.array_equal(np.signbit(got[~np.isnan(x)]), np.signbit(expected[~np.isnan(x)]))
    for dtype in ("float16", "bfloat16"):
        half = core.tensor(x).to(getattr(core, dtype))
        out = getattr(core, op)(half)
        assert from_c(out), dtype
        in_float = getattr(core, op)(half.float()).to(getattr(core, dtype))
        np.testing.assert_array_equal(out.float().numpy(), in_float.float().numpy())


def _pow_cases() -> tuple:
    """(x, y) float32 pairs for pow: x over every 4093rd positive float bit pattern against exponents from -40 to
    40 (results over the whole float range, overflow and underflow included), x near 1 against y up to 1e5, x far
    from 1 against y up to 250 (where log2(x)'s error is multiplied most), negative x against integer and
    fractional y."""
    rng = np.random.default_rng(7)
    positive = np.arange(0, 0x7f800000, 4093, dtype=np.uint32).view(np.float32)
    exponents = np.array([-40, -7.3, -2.5, -1, -0.5, 0.5, 1, 1.5, 2, 3, 7.3, 40], np.float32)
    xs = [np.repeat(positive, exponents.size), 1 + rng.uniform(-1e-3, 1e-3, 65536).astype(np.float32),
          rng.uniform(1.25, 1.4, 65536).astype(np.float32), rng.uniform(-9, 9, 65536).astype(np.float32)]
    ys = [np.tile(exponents, positive.size), rng.uniform(-1e5, 1e5, 65536).astype(np.float32),
          rng.uniform(-250, 250, 65536).astype(np.float32),
          np.where(rng.integers(0, 2, 65536) == 0, rng.integers(-12, 12, 65536), rng.uniform(-5, 5, 65536))
          .astype(np.float32)]
    return np.concatenate(xs), np.concatenate(ys)


def test_own_float32_pow_is_within_one_ulp(force_c):
    """ccc_powf (csrc/vecpow.c: cpu_c's AVX-512 kernel where the machine has AVX-512, libmvec's otherwise) against
    float64 pow: within 1 ulp wherever the result is a normal float (0.59 measured for the AVX-512 kernel), results
    that overflow, underflow or are NaN exactly as float64's rounded to float32, contiguous and strided."""
    x, y = _pow_cases()
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
        rounded = exact.astype(np.float32)
    normal = np.isfinite(rounded) & (np.abs(rounded) >= np.finfo(np.float32).smallest_normal)
    for layout, (a, b) in (("contiguous", (x, y)), ("strided", (np.stack([x, x], 1), np.stack([y, y], 1)))):
        out = core.pow(core.tensor(a), core.tensor(b))
        if layout == "strided":
            out = core.pow(core.tensor(a)[:, 1], core.tensor(b)[:, 1])
        assert from_c(out), layout
        got = out.numpy()
        worst = _ulp_errors(got[normal], exact[normal]).max()
        assert worst <= 1.0, (layout, worst)
        far = np.isinf(rounded) | (rounded == 0) | np.isnan(rounded)
        np.testing.assert_array_equal(got[far], rounded[far], err_msg=layout)
        signed = far & ~np.isnan(rounded)  # NaN's sign bit means nothing
        assert np.array_equal(np.signbit(got[signed]), np.signbit(rounded[signed])), layout


def test_own_float32_pow_special_values_follow_c99(force_c):
    """pow's special cases as C99 (and NumPy, PyTorch) define them, in every lane of a vector: zeros and infinities
    of either sign against odd, even, fractional, infinite and NaN exponents, pow(1, y) = pow(x, 0) = 1 even for NaN,
    (-1)^+-inf = 1, a negative base with a fractional exponent gives NaN, odd integer exponents keep the sign; the
    half types (computed in float32) agree."""
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    values = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, tiny, -tiny,
                       3.0e38, 2.0 ** 24 + 2, -(2.0 ** 24 + 2), 2.5, -2.5, 1e10, -1e10], np.float32)
    x, y = (g.ravel() for g in np.meshgrid(values, values))
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
        expected = exact.astype(np.float32)
    got = core.pow(core.tensor(np.tile(x, 40)), core.tensor(np.tile(y, 40)))
    assert from_c(got)
    got = got.numpy()[: x.size]
    with np.errstate(all="ignore"):
        inexact = np.isfinite(expected) & (expected != 0) & (np.abs(expected) != 1) & (_ulp_errors(got, exact) <= 1)
    np.testing.assert_array_equal(got[~inexact], expected[~inexact])
    assert np.array_equal(np.signbit(got[~np.isnan(expected)]), np.signbit(expected[~np.isnan(expected)]))
    for dtype in ("float16", "bfloat16"):
        a, b = (core.tensor(np.tile(v, 40)).to(getattr(core, dtype)) for v in (x, y))
        out = core.pow(a, b)
        assert from_c(out), dtype
        np.testing.assert_array_equal(out.float().numpy(), core.pow(a.float(), b.float()).to(out.dtype).float().numpy())


_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    """PyTorch's gelu formulas in float64."""
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)).astype(np.float64))


def _gelu_backward(g: np.ndarray, x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        t = np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x * x))
    cdf = 0.5 * (1 + _erf(x / math.sqrt(2)).astype(np.float64))
    return g * (cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_exp_erf_tanh_kernels_match_the_reference(force_c, dtype):
    """softmax / log_softmax (exp) against the reference kernel, gelu and gelu_backward (erf or tanh, and exp)
    against PyTorch's formulas in float64, over long rows of wide values."""
    from core.ops.elementwise import gelu_backward

    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((8, 1027)) * 20).astype(dtype), rng.standard_normal((8, 1027)).astype(dtype)
    x, g = core.tensor(a), core.tensor(b)
    wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        for op in ("softmax", "log_softmax"):
            out = getattr(core, op)(x, -1)
            assert from_c(out), f"{op} {dtype}: the C kernel did not run"
            _assert_close(out, numpy_reference(op, x, -1), f"{op} {dtype}", True)
        for approximate in ("none", "tanh"):
            out, grad = core.nn.functional.gelu(x, approximate=approximate), gelu_backward(g, x, approximate)
            assert from_c(out) and from_c(grad), f"gelu {approximate} {dtype}: the C kernels did not run"
            _assert_close(out, core.tensor(_gelu(wide_a, approximate).astype(dtype)), f"gelu {approximate} {dtype}",
                          True)
            expected = core.tensor(_gelu_backward(wide_b, wide_a, approximate).astype(dtype))
            _assert_close(grad, expected, f"gelu_backward {approximate} {dtype}", True)


def test_device_name_says_which_functions_serve_the_transcendentals():
    load_cpu_c()
    from core_cpu_c.runtime import RUNTIME, vector_math_path

    path = vector_math_path()
    assert path in ("libm scalar", "libmvec SIMD, SSE", "libmvec SIMD, AVX2", "libmvec SIMD, AVX-512")
    assert f"transcendentals: {path}" in RUNTIME.device_name(0)
    libc, version = platform.libc_ver()
    glibc_235 = libc == "glibc" and tuple(int(v) for v in version.split(".")[:2]) >= (2, 35)
    gcc = "gcc" in (os.environ.get("CC") or sysconfig.get_config_var("CC") or "")
    if glibc_235 and gcc and platform.machine() == "x86_64":  # an extension built here by GCC finds libmvec
        assert path.startswith("libmvec"), path
