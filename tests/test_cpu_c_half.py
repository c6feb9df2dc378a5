"""cpu_c's float16/bfloat16 kernels (csrc/half.h): the C path serves them, and gives bit for bit what computing in
float32 and rounding once to the half dtype gives (PyTorch's CPU opmath), checked against NumPy / ml_dtypes and
against cpu_c's own float32 kernels."""

from __future__ import annotations

import collections

import ml_dtypes
import numpy as np
import pytest

import core
import core.nn.functional as F
from core.backends.api import backend_key
from core.dispatch import get_operator

pytest.importorskip("core_cpu_c", reason="the cpu_c plugin is not installed (pip install plugins/cpu_c)")
from cpu_c_support import from_c  # noqa: E402

HALF = ("float16", "bfloat16")
NP = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def _values(dtype: str, shape: tuple, seed: int = 0) -> np.ndarray:
    """Random ``dtype`` values, wide-ranged, with NaN, infinities, signed zeros and subnormals mixed in."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-20, 12, shape))
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 6e-8, -1e-40 if dtype == "bfloat16" else -6e-8]
    flat = x.reshape(-1)
    picks = rng.random(flat.size) < 0.05
    flat[picks] = rng.choice(special, int(picks.sum()))
    return x.astype(np.float32).astype(NP[dtype])


def _bits(a) -> np.ndarray:
    """The 16-bit patterns of a half array (or tensor), every NaN as one pattern (payloads may differ)."""
    a = np.asarray(a.numpy() if hasattr(a, "numpy") else a)
    bits = a.view(np.uint16).copy()
    bits[np.isnan(a.astype(np.float32))] = 0x7FFF
    return bits


def _rounded(values: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(values, np.float32).astype(NP[dtype])


@pytest.fixture
def c_rows(force_c, monkeypatch):
    """Counts the calls of the reductions' row kernels: {(op, input dtype, output dtype): n}."""
    core.zeros(1).sum()  # the kernels are registered on first use
    counts = collections.Counter()
    for op in ("sum", "amax", "amin"):
        fns = get_operator(op).kernels[backend_key("cpu").bit].c_functions["rows"]
        for key, fn in list(fns.items()):
            def counted(*args, key=(op, *key), fn=fn):
                counts[key] += 1
                return fn(*args)

            monkeypatch.setitem(fns, key, counted)
    return counts


@pytest.mark.parametrize("dtype", HALF)
def test_every_half_value_loads_and_stores_exactly(force_c, dtype):
    """neg and abs over all 65536 bit patterns: each loads as float32 and stores back to its own bits."""
    x = np.arange(1 << 16, dtype=np.uint16).view(NP[dtype])
    t = core.from_numpy(x)
    for op, fn in (("neg", np.negative), ("abs", np.abs)):
        out = getattr(core, op)(t)
        assert from_c(out), f"{op} did not run the C kernel"
        np.testing.assert_array_equal(_bits(out), _bits(_rounded(fn(x.astype(np.float32)), dtype)))


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "sqrt", "maximum", "lt", "eq", "exp", "tanh", "sigmoid"])
def test_elementwise_is_float32_then_rounded(force_c, dtype, op):
    a, b = _values(dtype, (4096,), 1), _values(dtype, (4096,), 2)
    x, y = core.from_numpy(a), core.from_numpy(b)
    binary = op in ("add", "sub", "mul", "div", "maximum", "lt", "eq")
    fn = get_operator(op)
    out = fn(x, y) if binary else fn(x)
    assert from_c(out), f"{op} did not run the C kernel"
    # cpu_c's float32 kernel on the widened operands, rounded once: the same bits
    wide = fn(x.float(), y.float()) if binary else fn(x.float())
    expected = wide if wide.dtype == core.bool else wide.to(getattr(core, dtype))
    if out.dtype == core.bool:
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
    else:
        assert out.dtype == getattr(core, dtype)
        np.testing.assert_array_equal(_bits(out), _bits(expected))
    # and NumPy's float32 arithmetic, for the correctly rounded ops (libm's exp/tanh may differ by a float32 ulp)
    numpy_fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "sqrt": np.sqrt,
                "lt": np.less, "eq": np.equal}.get(op)
    if numpy_fn is not None:
        with np.errstate(all="ignore"):
            ref = numpy_fn(a.astype(np.float32), b.astype(np.float32)) if binary else numpy_fn(a.astype(np.float32))
        if ref.dtype == bool:
            np.testing.assert_array_equal(out.numpy(), ref)
        else:
            np.testing.assert_array_equal(_bits(out), _bits(_rounded(ref, dtype)))


@pytest.mark.parametrize("dtype", HALF)
def test_fused_multiply_add_on_strided_and_broadcast_operands(force_c, dtype):
    """a * b + c with a transposed, b broadcast along rows and c a column slice: the strided kernels."""
    a, b, c = _values(dtype, (64, 48), 3), _values(dtype, (64,), 4), _values(dtype, (48, 128), 5)
    x, y, z = core.from_numpy(a).t(), core.from_numpy(b), core.from_numpy(c)[:, ::2]
    product = x * y
    out = product + z
    assert from_c(product) and from_c(out)
    f32 = a.astype(np.float32).T
    with np.errstate(all="ignore"):
        step = _rounded(f32 * b.astype(np.float32), dtype)
        expected = _rounded(step.astype(np.float32) + c[:, ::2].astype(np.float32), dtype)
    np.testing.assert_array_equal(_bits(out), _bits(expected))


@pytest.mark.parametrize("dtype", HALF)
def test_python_scalars(force_c, dtype):
    """A scalar the dtype holds exactly runs in C; others (0.1) run the reference, which computes with the float32
    scalar (PyTorch's): both give float32-then-round."""
    a = _values(dtype, (2048,), 6)
    x = core.from_numpy(a)
    for scalar, in_c in ((2.0, True), (0.5, True), (3, True), (0.1, False)):
        out = x * scalar
        assert from_c(out) is in_c, scalar
        with np.errstate(all="ignore"):
            expected = _rounded(a.astype(np.float32) * np.float32(scalar), dtype)
        np.testing.assert_array_equal(_bits(out), _bits(expected))


@pytest.mark.parametrize("dtype", HALF)
def test_a_reference_result_of_a_transposed_input_feeds_c(force_c, dtype):
    """x.t() * 0.1 runs the reference, whose float32 result is column-major: its half copy must be row-major bytes,
    which the C kernel of the next op (* 2) reads."""
    a = np.random.default_rng(10).standard_normal((64, 48)).astype(NP[dtype])
    y = core.from_numpy(a).t() * 0.1
    z = y * 2.0
    assert not from_c(y) and from_c(z)
    expected = _rounded(_rounded(a.astype(np.float32).T * np.float32(0.1), dtype).astype(np.float32) * 2, dtype)
    np.testing.assert_array_equal(_bits(z), _bits(expected))


@pytest.mark.parametrize("dtype", HALF)
def test_sum_mean_amax_amin_rows(c_rows, dtype):
    """Reductions of contiguous rows run C, accumulate wide and round once: as the float32 reduction rounded."""
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((37, 300)) * 4).astype(NP[dtype])
    x = core.from_numpy(a)
    half = getattr(core, dtype)
    for dim in (None, 1):
        total = x.sum() if dim is None else x.sum(dim)
        assert total.dtype == half
        expected = (x.float().sum() if dim is None else x.float().sum(dim)).to(half)
        np.testing.assert_array_equal(_bits(total), _bits(expected))
        np.testing.assert_allclose(total.numpy().astype(np.float64),
                                   a.astype(np.float64).sum(axis=dim), rtol=1e-2 if dtype == "bfloat16" else 1e-3,
                                   atol=0.1)
        mean = x.mean() if dim is None else x.mean(dim)
        np.testing.assert_array_equal(_bits(mean), _bits((x.float().mean() if dim is None else x.float().mean(dim))
                                                         .to(half)))
        for op, np_fn in (("amax", np.max), ("amin", np.min)):
            out = getattr(core, op)(x, dim=() if dim is None else dim)
            np.testing.assert_array_equal(_bits(out), _bits(np_fn(a, axis=dim)))
    assert c_rows[("sum", dtype, dtype)] == 2 and c_rows[("sum", dtype, "float32")] == 2
    assert c_rows[("amax", dtype, dtype)] == 2 and c_rows[("amin", dtype, dtype)] == 2


@pytest.mark.parametrize("dtype", HALF)
def test_sums_over_other_dims_take_the_strided_walk(force_c, monkeypatch, dtype):
    """Column sums (a bias's gradient under autocast), several dims, transposed and sliced inputs: csrc/reduce.c's
    strided walk in float, rounded once: the float32 sum rounded (the reference's result)."""
    fns = get_operator("sum").kernels[backend_key("cpu").bit].c_functions["strided"]
    calls = collections.Counter()
    monkeypatch.setitem(fns, dtype, lambda *args, fn=fns[dtype]: (calls.update([dtype]), fn(*args))[1])
    rng = np.random.default_rng(10)
    a = (rng.standard_normal((128, 3, 512)) * 4).astype(NP[dtype])
    a[5, 1, 7] = np.inf
    x = core.from_numpy(a)
    half = getattr(core, dtype)
    cases = [(x[:, 0], 0), (x, (0, 1)), (x, (0, 2)), (x.transpose(0, 2), 1), (x[::2, :, 100:400], 0)]
    for t, dims in cases:
        got = t.sum(dims)
        assert got.dtype == half
        np.testing.assert_array_equal(_bits(got), _bits(t.float().sum(dims).to(half)))
    assert calls[dtype] == len(cases)


@pytest.mark.parametrize("dtype", HALF)
def test_amax_keeps_nan(c_rows, dtype):
    a = np.random.default_rng(8).standard_normal((8, 512)).astype(NP[dtype])
    a[3, 100] = np.nan
    out = core.amax(core.from_numpy(a), dim=1)
    assert c_rows[("amax", dtype, dtype)] == 1
    np.testing.assert_array_equal(_bits(out), _bits(a.max(axis=1)))
    assert np.isnan(out.numpy()[3].astype(np.float32)) and not np.isnan(out.numpy()[2].astype(np.float32))


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("case", ["plain", "transposed", "batched", "linear"])
@pytest.mark.parametrize("path", ["default", "sgemm"])
def test_matmul_accumulates_in_float32_and_rounds_once(force_c, dtype, case, path, monkeypatch):
    """Both product paths (oneDNN's half matmul where it serves, and the widened sgemm with oneDNN switched off):
    within one rounding to the half type of a float32 accumulation's error of the exact product. (Not bit for bit the
    float32 product rounded: oneDNN's half and float32 kernels may sum in different orders, as on AVX2.) A half
    accumulation would be off by ~2^-11 of the terms per step, 8000 times the float32 bound at k = 90."""
    if path == "sgemm":
        from core_cpu_c.kernels import linalg

        monkeypatch.setattr(linalg, "onednn", lambda: None)
    rng = np.random.default_rng(9)
    half = getattr(core, dtype)
    a = core.from_numpy(rng.standard_normal((3, 70, 90)).astype(NP[dtype]))
    b = core.from_numpy(rng.standard_normal((3, 90, 50)).astype(NP[dtype]))
    w = core.from_numpy(rng.standard_normal((50, 90)).astype(NP[dtype]))
    if case == "plain":
        args, fn = (a[0], b[0]), core.matmul
    elif case == "transposed":
        args, fn = (b[0].t(), a[1].t()), core.matmul
    elif case == "batched":
        args, fn = (a, b), core.matmul
    else:
        args, fn = (a[2], w), core.nn.functional.linear
    out = fn(*args)
    assert out.dtype == half and from_c(out)
    exact = fn(*(t.double() for t in args)).numpy()
    magnitude = fn(*(t.double().abs() for t in args)).numpy()  # the sum of |a_i b_i|
    got = out.numpy().astype(np.float64)
    up = np.abs(out.numpy()).view(np.uint16) + np.uint16(1)  # the next half value away from zero: its spacing
    spacing = up.view(NP[dtype]).astype(np.float64) - np.abs(got)
    bound = 90 * 2.0**-24 * magnitude * 1.01 + spacing / 2
    assert np.all(np.abs(got - exact) <= bound), np.max(np.abs(got - exact) / bound)


def test_the_float16_path_is_reported(force_c):
    from core_cpu_c.runtime import RUNTIME, half_path

    assert half_path() in ("F16C", "portable")
    assert f"float16 {half_path()}" in RUNTIME.device_name(0)


# -- casts float32 <-> float16/bfloat16 (csrc/movement.c: autocast's casts) ---------------------------------------
@pytest.fixture
def c_casts(force_c, monkeypatch):
    """Records the (dst, src) type codes of every ccc_copy_cast call."""
    from core_cpu_c import movement

    core.zeros(1).float()  # the cpu_c kernel table (and its C function table) is built
    calls, cast = [], movement.C["copy_cast"]
    monkeypatch.setitem(movement.C, "copy_cast", lambda *a: (calls.append(a[:2]), cast(*a))[1])
    return calls


_CODES = {"float32": 6, "float16": 8, "bfloat16": 9}


@pytest.mark.parametrize("dtype", HALF)
def test_float32_to_half_rounds_to_nearest_even_as_numpy(c_casts, dtype):
    """Random values of every magnitude (overflow to inf, subnormals, underflow to 0), NaN, infinities, signed zeros
    and exact ties, bit for bit NumPy's / ml_dtypes' astype, through C."""
    rng = np.random.default_rng(3)
    with np.errstate(over="ignore"):
        x = (rng.standard_normal(20000) * np.exp2(rng.integers(-150, 128, 20000))).astype(np.float32)
    mantissa = 10 if dtype == "float16" else 7  # ties: halfway between two half values; the even one wins
    ties = np.float32(1) + np.float32(2.0 ** -(mantissa + 1)) * np.arange(1, 9, dtype=np.float32)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-40, 6e-8, 3e-8, 65520.0, 65519.0,
                        3.4e38], np.float32)
    x = np.concatenate([special, ties, -ties, x])
    out = core.from_numpy(x).to(getattr(core, dtype))
    assert c_casts == [(_CODES[dtype], 6)] and from_c(out)
    np.testing.assert_array_equal(_bits(out), _bits(_rounded(x, dtype)))
    assert np.isnan(out.float().numpy()[:2]).all()
    half_ulp = 2.0 ** -(mantissa + 1)  # 1 + k half-ulps, k = 1, 3, 5, 7: the neighbour with an even mantissa
    np.testing.assert_array_equal(out.float().numpy()[13:21:2], [1.0, 1 + 4 * half_ulp, 1 + 4 * half_ulp,
                                                                 1 + 8 * half_ulp])


@pytest.mark.parametrize("dtype", HALF)
def test_half_to_float32_is_exact_for_every_value(c_casts, dtype):
    x = np.arange(1 << 16, dtype=np.uint16).view(NP[dtype])
    out = core.from_numpy(x).float()
    assert c_casts == [(6, _CODES[dtype])] and from_c(out)
    expected = x.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(out.numpy()), np.isnan(expected))
    keep = ~np.isnan(expected)
    np.testing.assert_array_equal(out.numpy()[keep].view(np.uint32), expected[keep].view(np.uint32))


@pytest.mark.parametrize("dtype", HALF)
def test_strided_and_broadcast_casts(c_casts, dtype):
    x = _values(dtype, (40, 50), seed=5).astype(np.float32)
    t = core.from_numpy(x)
    half = getattr(core, dtype)
    views = ((t.t(), x.T), (t[::3, 1::2], x[::3, 1::2]), (t[0].expand(7, 50), np.broadcast_to(x[0], (7, 50))))
    for view, expected in views:
        np.testing.assert_array_equal(_bits(view.to(half)), _bits(_rounded(expected, dtype)))
    into = core.zeros(50, 40, dtype=half)
    into.copy_(t.t())
    np.testing.assert_array_equal(_bits(into), _bits(_rounded(x.T, dtype)))
    back = core.zeros(40, 50)
    back.copy_(core.from_numpy(x.astype(NP[dtype])))
    np.testing.assert_array_equal(back.numpy(), x.astype(NP[dtype]).astype(np.float32))
    assert c_casts and all(6 in codes and _CODES[dtype] in codes for codes in c_casts)


def test_casts_between_half_dtypes_and_integers_run_numpy(c_casts):
    x = core.from_numpy(np.array([1.5, -2.5, 300.0], np.float32)).to(core.bfloat16)
    c_casts.clear()
    assert x.to(core.float16).tolist() == [1.5, -2.5, 300.0] and x.to(core.int32).tolist() == [1, -2, 300]
    assert x.double().tolist() == [1.5, -2.5, 300.0]
    assert c_casts == []  # only float32 <-> half is compiled


# -- pooling: the float32 loops over exact float32 copies, rounded once --------------------------------------------
@pytest.mark.parametrize("dtype", HALF)
def test_max_pool_is_exact_and_its_backward_rounds_once(force_c, dtype):
    from core_cpu_c.runtime import RUNTIME

    x = _values(dtype, (2, 3, 9, 10), seed=6)
    x[np.isinf(x.astype(np.float32))] = 1  # an inf window max would make the float32 reference's backward differ
    half = getattr(core, dtype)
    t = core.from_numpy(x).requires_grad_()
    out = F.max_pool2d(t, 3, stride=2, padding=1)  # overlapping windows: an element can be two windows' max
    assert out.dtype == half and from_c(out)
    wide = core.from_numpy(x.astype(np.float32)).requires_grad_()
    expected = F.max_pool2d(wide, 3, stride=2, padding=1)
    np.testing.assert_array_equal(_bits(out.detach()), _bits(expected.detach().to(half)))
    g = _values(dtype, tuple(out.shape), seed=7)
    g[~np.isfinite(g.astype(np.float32))] = 0.5
    out.backward(core.from_numpy(g))
    expected.backward(core.from_numpy(g.astype(np.float32)))
    assert t.grad.dtype == half and t.grad._storage.backend is RUNTIME
    np.testing.assert_array_equal(_bits(t.grad), _bits(wide.grad.to(half)))


@pytest.mark.parametrize("dtype", HALF)
def test_avg_pool_and_its_backward_round_once(force_c, dtype):
    rng = np.random.default_rng(8)
    half = getattr(core, dtype)
    x = rng.standard_normal((2, 3, 8, 9)).astype(NP[dtype])
    t, wide = core.from_numpy(x).requires_grad_(), core.from_numpy(x.astype(np.float32)).requires_grad_()
    out = F.avg_pool2d(t, 3, stride=2, padding=1, ceil_mode=True)
    expected = F.avg_pool2d(wide, 3, stride=2, padding=1, ceil_mode=True)
    assert out.dtype == half and from_c(out)
    np.testing.assert_array_equal(_bits(out.detach()), _bits(expected.detach().to(half)))
    g = rng.standard_normal(tuple(out.shape)).astype(NP[dtype])
    out.backward(core.from_numpy(g))
    expected.backward(core.from_numpy(g.astype(np.float32)))
    np.testing.assert_array_equal(_bits(t.grad), _bits(wide.grad.to(half)))
