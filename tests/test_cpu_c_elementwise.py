"""cpu_c's generated elementwise kernels against the NumPy reference: every op x dtype x layout it compiles.

Integer and bool results must be bit-identical to the reference kernel's; float results identical up to the
rounding of the math library (bit-identical for the ops that only compare, copy bits or round exactly).
Every case also checks that the C kernel ran (its output lives in cpu_c's storage).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.dispatch import get_operator

pytest.importorskip("core_cpu_c", reason="the cpu_c plugin is not installed (pip install plugins/cpu_c)")
from core_cpu_c.renderer import BINARY_OPS, FLOATS, OP_DTYPES, UNARY_OPS  # noqa: E402
from cpu_c_support import from_c, load_cpu_c, numpy_reference  # noqa: E402

INTS = ("int8", "uint8", "int16", "int32", "int64")
HALF = ("float16", "bfloat16")
DIVISION = ("floor_divide", "remainder", "fmod", "div_trunc")
SHIFTS = ("bitwise_left_shift", "bitwise_right_shift")
# Float ops whose result is exact (no libm rounding): compared bit for bit, the sign of zero included
EXACT = {"neg", "abs", "positive", "relu", "sign", "sgn", "floor", "ceil", "trunc", "round", "frac", "copysign",
         "nextafter", "fmod", "remainder", "floor_divide", "div_trunc", "add", "sub", "mul", "div", "square",
         "where", "clamp"}
# NumPy's own choice between +0 and -0 for equal operands depends on its loop (contiguous or strided, long or
# short): values are compared, not the sign of zero
ZERO_SIGN_FREE = {"maximum", "minimum", "fmax", "fmin", "clamp"}


def _call(op, *args):
    return core.relu(*args) if op == "relu" else get_operator(op)(*args)


def _values(dtype: str, shape: tuple, seed: int) -> np.ndarray:
    """Random values of ``dtype`` over its whole range, with its extremes and specials mixed in."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in INTS:
        info = np.iinfo(dtype)
        wide = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        small = rng.integers(max(info.min, -9), 10, shape).astype(dtype)
        special = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype)
        out = np.where(rng.random(shape) < 0.5, wide, small)
        flat = out.reshape(-1)
        flat[: min(flat.size, special.size)] = special[: flat.size]
        return out
    out = (rng.standard_normal(shape) * 3).astype(dtype)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 1e-30], dtype)
    flat = out.reshape(-1)
    picks = rng.random(flat.size) < 0.3
    flat[picks] = rng.choice(special, int(picks.sum()))
    return out


def _domain(op: str, dtype: str, values: np.ndarray) -> np.ndarray:
    """A second operand inside ``op``'s domain: no zero integer divisor (the reference raises), and shift amounts
    from -2 to the width + 2 (negative and too-wide shifts have their own rule: 0, or the sign for >>)."""
    if dtype in INTS and op in DIVISION:
        return np.where(values == 0, 1, values).astype(dtype)
    if op in SHIFTS:
        bits = np.dtype(dtype).itemsize * 8
        return (np.remainder(values.astype(np.int64), bits + 5) - 2).astype(dtype)
    return values


def _tensor(dtype, shape, seed, op=None):
    """A tensor of :func:`_values`; ``op`` given: fit as that op's second operand."""
    values = _values(dtype, shape, seed)
    return core.tensor(values if op is None else _domain(op, dtype, values))


def _layouts(dtype: str, arity: int, op=None):
    """{layout: operands}: contiguous, transposed, sliced with steps, offset, broadcast, expanded, Python scalar,
    0-d, empty. The operands after the first are fit to ``op``'s domain."""
    base = [_tensor(dtype, (6, 10), k, op if k else None) for k in range(arity)]
    rows = [_tensor(dtype, (10,), 10 + k, op if k else None) for k in range(arity)]
    wide = [_tensor(dtype, (10, 6), 20 + k, op if k else None) for k in range(arity)]
    zero_d = [_tensor(dtype, (), 30 + k, op if k else None) for k in range(arity)]
    scalar = {"bool": True, "float32": -1.5, "float64": 2.25}.get(dtype, 3)
    layouts = {
        "contiguous": base,
        "transposed": [base[0].t()] + [w for w in wide[1:]],
        "sliced": [base[0][::2, 1::3]] + [b[1::2, ::4] for b in base[1:]],
        "offset": [b[2:, 3:] for b in base],
        "broadcast": [base[0]] + rows[1:],
        "expanded": [rows[0].unsqueeze(1).expand(10, 4)] + [b[:4, :].t() for b in base[1:]],
        "zero_d": zero_d,
        "empty": [base[0][:0]] + rows[1:],
    }
    if arity > 1:
        layouts["scalar"] = [base[0].t()] + [scalar] * (arity - 1)
        layouts["scalar_first"] = [scalar] + [w for w in wide[1:]]
    return layouts


def _assert_matches(op: str, actual, expected, context: str):
    assert actual.dtype == expected.dtype, context
    assert tuple(actual.shape) == tuple(expected.shape), context
    a, e = actual.numpy(), expected.numpy()
    half = a.dtype.name in HALF
    if half:  # widened exactly: NumPy's testing sees bfloat16 NaNs as unequal
        a, e = a.astype(np.float32), e.astype(np.float32)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=context, strict=True)
        if a.dtype == bool:  # bytes 0 or 1, never another non-zero byte
            assert a.view(np.uint8).max(initial=0) <= 1, context
        return
    if op in EXACT or op in ZERO_SIGN_FREE:
        np.testing.assert_array_equal(a, e, err_msg=context)
    else:
        # half: libm's and NumPy's float32 math may differ by an ulp, which rounding can turn into a half ulp
        rtol = {"float16": 2**-10, "bfloat16": 2**-7}.get(actual.dtype.name, 2e-6 if a.dtype == np.float32 else 1e-14)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=0, equal_nan=True, err_msg=context)
    if op not in ZERO_SIGN_FREE and not (half and op == "relu"):  # NumPy's float16 maximum(-0., 0) is -0.
        both_zero = (a == 0) & (e == 0)
        np.testing.assert_array_equal(np.signbit(a[both_zero]), np.signbit(e[both_zero]), err_msg=context)


def _check(op: str, dtype: str, arity: int):
    for layout, args in _layouts(dtype, arity, op).items():
        context = f"{op} {dtype} {layout}"
        actual = _call(op, *args)
        assert from_c(actual), f"{context}: the C kernel did not run"
        _assert_matches(op, actual, numpy_reference(op, *args), context)


_UNARY_CASES = [(op, d) for op in UNARY_OPS for d in OP_DTYPES[op]]
_BINARY_CASES = [(op, d) for op in BINARY_OPS if op not in ("tanh_backward", "sigmoid_backward", "relu_backward")
                 for d in OP_DTYPES[op]]


@pytest.mark.parametrize("op,dtype", _UNARY_CASES, ids=[f"{op}-{d}" for op, d in _UNARY_CASES])
def test_unary_kernels_match_the_reference(force_c, op, dtype):
    _check(op, dtype, 1)


@pytest.mark.parametrize("op,dtype", _BINARY_CASES, ids=[f"{op}-{d}" for op, d in _BINARY_CASES])
def test_binary_kernels_match_the_reference(force_c, op, dtype):
    _check(op, dtype, 2)


def test_every_compiled_dtype_is_covered():
    """The integer and bool kernels the task asks for exist (the parametrisation above follows OP_DTYPES)."""
    for op in ("add", "sub", "mul", "neg", "abs", "square", "maximum", "minimum", "positive", "eq", "lt", "ge",
               "relu", "sign", "floor_divide", "remainder", "fmod", "div_trunc", "bitwise_and", "bitwise_left_shift"):
        assert set(INTS) <= set(OP_DTYPES[op]), op
    for op in ("add", "mul", "maximum", "eq", "logical_and", "logical_not", "bitwise_xor", "bitwise_not", "where",
               "clamp"):
        assert "bool" in OP_DTYPES[op], op


# -- integer semantics the reference defines -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_integer_overflow_wraps_like_the_reference(force_c, dtype):
    info = np.iinfo(dtype)
    a = core.tensor(np.array([info.min, info.max, info.min, -1, info.max], dtype))
    b = core.tensor(np.array([-1, 1, info.min, info.min, info.max], dtype))
    for op in ("add", "sub", "mul", "floor_divide", "remainder", "fmod", "div_trunc", "maximum"):
        out = get_operator(op)(a, b)
        assert from_c(out), op
        _assert_matches(op, out, numpy_reference(op, a, b), f"{op} {dtype}")
    for op in ("neg", "abs", "square"):
        out = get_operator(op)(a)
        assert from_c(out)
        _assert_matches(op, out, numpy_reference(op, a), f"{op} {dtype}")
    assert core.neg(a).numpy()[0] == info.min and core.abs(a).numpy()[0] == info.min


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", DIVISION)
def test_integer_division_by_zero_raises_as_the_reference(force_c, op, dtype):
    a = core.tensor(np.arange(-3, 5, dtype=np.int64).astype(dtype)).reshape(2, 4)
    b = core.tensor(np.array([1, 2, 0, 3], dtype))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        numpy_reference(op, a, b)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        get_operator(op)(a, b.t() if b.dim() > 1 else b)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        get_operator(op)(a.t(), 0)


def test_integer_division_by_zero_is_found_by_every_thread(force_c):
    n = 1 << 17  # above the kernels' OpenMP threshold
    a = core.arange(n, dtype=core.int32)
    b = core.ones(n, dtype=core.int32)
    b[n - 3] = 0
    for op in DIVISION:
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            get_operator(op)(a, b)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            get_operator(op)(a.reshape(512, -1).t(), b.reshape(512, -1).t())
    out = get_operator("floor_divide")(a - n // 2, b + 2)
    assert from_c(out)
    np.testing.assert_array_equal(out.numpy(), (np.arange(n, dtype=np.int32) - n // 2) // (b.numpy() + 2))


@pytest.mark.parametrize("dtype", INTS)
def test_shifts_by_negative_and_too_wide_amounts(force_c, dtype):
    bits = np.dtype(dtype).itemsize * 8
    info = np.iinfo(dtype)
    a = core.tensor(np.array([info.min, -1, 5, info.max, 1] * 3, np.int64).astype(dtype).reshape(3, 5))
    amounts = core.tensor(np.array([-1, 0, 1, bits - 1, bits, bits + 1, 3, 7, 2, 1, 0, bits - 2, 100 % 127, -5, 4],
                                   np.int64).astype(dtype).reshape(3, 5))
    for op in SHIFTS:
        for x, y in ((a, amounts), (a.t(), amounts.t()), (a, 3), (a, bits), (a, amounts[0])):
            out = get_operator(op)(x, y)
            assert from_c(out)
            _assert_matches(op, out, numpy_reference(op, x, y), f"{op} {dtype}")


def test_integer_scalars_wrap_into_the_tensor_dtype(force_c):
    """int8 + 1000 computes in int8 (a Python int never widens): the reference wraps the scalar to -24."""
    x = core.tensor(np.array([1, -5, 100], np.int8))
    for op, y in (("add", 1000), ("mul", -300), ("maximum", 200), ("eq", 256), ("bitwise_and", 511)):
        out = get_operator(op)(x, y)
        assert from_c(out), op
        _assert_matches(op, out, numpy_reference(op, x, y), op)


def test_mixed_dtypes_and_alpha_use_the_reference(force_c):
    i8, i16 = core.tensor(np.array([1, -2], np.int8)), core.tensor(np.array([300, 4], np.int16))
    out = i8 + i16
    assert not from_c(out) and out.dtype == core.int16
    np.testing.assert_array_equal(out.numpy(), [301, 2])
    ints = core.tensor(np.array([1, 2, 3], np.int32))
    half = core.ones(3, dtype=core.float16)
    for out in (core.exp(ints), ints / ints, core.add(ints, ints, alpha=3), half + ints, core.nextafter(half, half)):
        assert not from_c(out)
    assert from_c(ints * ints) and from_c(ints.double().exp()) and from_c(core.pow(ints, 2)) and from_c(half.sqrt())


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "bool"])
def test_integer_pow_wraps_and_takes_negative_exponents_as_pytorch(force_c, dtype):
    values = np.array([0, 1, -1, 2, -2, 3, 7, -128, 127, 5, -3, 1], np.int64)
    exponents = np.array([0, -5, -3, 63, -1, 40, 2, 1, 3, 100, -2, 2**40], np.int64)
    base = core.tensor(values.astype(dtype))
    exps = core.tensor(exponents.astype(dtype))
    scalar = True if dtype == "bool" else 3  # bool ** 3 computes in int64
    for args in ((base, exps), (base.reshape(3, 4).t(), exps.reshape(3, 4).t()), (base, exps[5]), (base, scalar)):
        out = get_operator("pow")(*args)
        assert from_c(out)
        _assert_matches("pow", out, numpy_reference("pow", *args), f"pow {dtype}")


# -- float specials ---------------------------------------------------------------------------------------------
_SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 1e-45, -3.5, 2.0, 7.0]


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_specials_against_every_partner(force_c, dtype):
    """NaN, +-inf, +-0 and subnormals, each against each: predicates, fmax/fmin, copysign, nextafter, division."""
    values = np.array(_SPECIALS, dtype)
    a = core.tensor(np.repeat(values, len(values)))
    b = core.tensor(np.tile(values, len(values)))
    for op in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "sign", "sgn", "frac", "abs",
               "logical_not", "lgamma", "sinc", "relu", "round"):
        out = get_operator(op)(a)
        assert from_c(out)
        _assert_matches(op, out, numpy_reference(op, a), f"{op} {dtype}")
    for op in ("fmax", "fmin", "maximum", "minimum", "copysign", "nextafter", "fmod", "remainder", "floor_divide",
               "div_trunc", "hypot", "logaddexp", "logaddexp2", "xlogy", "atan2", "eq", "lt", "ge", "logical_and",
               "logical_xor"):
        for x, y in ((a, b), (a.reshape(12, 12).t(), b.reshape(12, 12).t())):
            out = get_operator(op)(x, y)
            assert from_c(out)
            _assert_matches(op, out, numpy_reference(op, x, y), f"{op} {dtype}")


# -- where and clamp ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", OP_DTYPES["where"])
def test_where_over_layouts_and_conditions(force_c, dtype):
    rng = np.random.default_rng(5)
    conds = {"bool": core.tensor(rng.random((6, 10)) < 0.5),
             "uint8": core.tensor(rng.integers(0, 3, (6, 10)).astype(np.uint8))}
    scalar = {"bool": False, "float32": 0.25, "float64": -7.5}.get(dtype, -2)
    x, y = _tensor(dtype, (6, 10), 1), _tensor(dtype, (10, 6), 2)
    row = _tensor(dtype, (10,), 3)
    for name, c in conds.items():
        cases = [(c, x, y.t()), (c.t(), x.t(), y), (c[::2, 1::3], x[1::2, ::4], y[:3, :3]), (c[0], x, row),
                 (c[:, :1], row, scalar), (c, scalar, x), (c[:0], x[:0], row), (c[0, 0], x[0, 0], y[0, 0]),
                 (c[0, 0], x, y.t())]
        for case in cases:
            out = core.where(*case)
            assert from_c(out), f"where {dtype} {name}"
            _assert_matches("where", out, numpy_reference("where", *case), f"where {dtype} {name}")


@pytest.mark.parametrize("dtype", OP_DTYPES["clamp"])
def test_clamp_with_tensor_number_and_missing_bounds(force_c, dtype):
    x = _tensor(dtype, (6, 10), 1)
    lo, hi = _tensor(dtype, (10,), 2), _tensor(dtype, (6, 1), 3)
    lo_n, hi_n = {"bool": (False, True), "float32": (-1.0, 1.5), "float64": (-0.5, 2.0)}.get(dtype, (-3, 5))
    cases = [(x, lo, hi), (x.t(), hi.t(), None), (x, None, lo), (x, lo_n, hi_n), (x.t(), lo_n, None),
             (x, None, hi_n), (x[::2, 1::3], lo[1::3], hi[::2]), (x[:0], lo, None), (x[0, 0], lo_n, hi[0, 0]),
             (x, hi_n, lo_n)]  # min > max: max wins, as PyTorch
    for args in cases:
        out = core.clamp(*args)
        assert from_c(out), f"clamp {dtype}"
        _assert_matches("clamp", out, numpy_reference("clamp", *args), f"clamp {dtype}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_clamp_keeps_nan_inputs_and_propagates_nan_bounds(force_c, dtype):
    x = core.tensor(np.array([np.nan, -1.0, 0.5, 3.0, -0.0, 0.0], dtype))
    bounds = core.tensor(np.array([0.0, np.nan, 0.0, 1.0, 0.0, -0.0], dtype))
    for args in ((x, bounds, None), (x, None, bounds), (x, bounds, bounds), (x, -0.0, 0.0), (x, float("nan"), None)):
        out = core.clamp(*args)
        assert from_c(out)
        _assert_matches("clamp", out, numpy_reference("clamp", *args), f"clamp {args[1:]}")


# -- any shape and strides -------------------------------------------------------------------------------------
@st.composite
def _strided_pair(draw):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    steps = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    perm = draw(st.permutations(range(ndim)))
    broadcast = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
    op = draw(st.sampled_from(["add", "mul", "sub", "floor_divide", "remainder", "bitwise_xor", "lt", "maximum",
                               "bitwise_right_shift", "logical_or"]))
    dtype = draw(st.sampled_from([d for d in OP_DTYPES[op] if d != "bool" or op in ("logical_or", "lt")]))
    return shape, steps, tuple(perm), broadcast, op, dtype, draw(st.integers(0, 2**16))


@settings(max_examples=40, deadline=None)
@given(_strided_pair())
def test_any_strided_broadcast_layout_matches_the_reference(case):
    load_cpu_c()
    import core_cpu_c

    shape, steps, perm, broadcast, op, dtype, seed = case
    big = tuple(s * k for s, k in zip(shape, steps))
    a = _tensor(dtype, big, seed)[tuple(slice(None, None, k) for k in steps)]
    a = a.permute(*perm) if perm else a
    out_shape = tuple(a.shape)
    b_shape = tuple(1 if flag else s for s, flag in zip(out_shape, broadcast))
    b = _tensor(dtype, b_shape, seed + 1, op)
    saved = core_cpu_c.set_min_numel(0)
    try:
        actual = get_operator(op)(a, b)
    finally:
        core_cpu_c.set_min_numel(saved)
    assert from_c(actual)
    _assert_matches(op, actual, numpy_reference(op, a, b), f"{op} {dtype} {out_shape} {b_shape}")


@st.composite
def _strided_ternary(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    steps = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    perm = tuple(draw(st.permutations(range(ndim))))
    masks = [draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim)) for _ in range(2)]
    op = draw(st.sampled_from(["where", "clamp"]))
    bounds = draw(st.sampled_from(["both", "min", "max", "numbers"]))
    return shape, steps, perm, masks, op, bounds, draw(st.sampled_from(OP_DTYPES[op])), draw(st.integers(0, 2**16))


@settings(max_examples=40, deadline=None)
@given(_strided_ternary())
def test_where_and_clamp_on_any_strided_broadcast_layout(case):
    load_cpu_c()
    import core_cpu_c

    shape, steps, perm, masks, op, bounds, dtype, seed = case
    big = tuple(s * k for s, k in zip(shape, steps))
    x = _tensor(dtype, big, seed)[tuple(slice(None, None, k) for k in steps)]
    x = x.permute(*perm) if perm else x
    y, z = (_tensor(dtype, tuple(1 if flag else s for s, flag in zip(x.shape, mask)), seed + k + 1)
            for k, mask in enumerate(masks))
    if op == "where":
        args = (core.tensor(_values("bool", tuple(y.shape), seed + 3)), x, z)
    else:
        numbers = {"bool": (False, True), "float32": (-1.0, 2.0), "float64": (-0.5, 0.5)}.get(dtype, (-4, 6))
        args = {"both": (x, y, z), "min": (x, y, None), "max": (x, None, z), "numbers": (x, *numbers)}[bounds]
    saved = core_cpu_c.set_min_numel(0)
    try:
        actual = get_operator(op)(*args)
    finally:
        core_cpu_c.set_min_numel(saved)
    assert from_c(actual)
    _assert_matches(op, actual, numpy_reference(op, *args), f"{op} {dtype} {bounds} {tuple(x.shape)}")


def test_large_integer_tensors_use_threads_and_match_numpy():
    load_cpu_c()
    n = 1 << 18
    rng = np.random.default_rng(7)
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, (512, n // 512), dtype=np.int64).astype(np.int32)
    x, y = core.tensor(a), core.tensor(b).t()
    out = x * y.reshape(-1) + 7
    assert from_c(out)
    np.testing.assert_array_equal(out.numpy(), a * b.T.reshape(-1) + np.int32(7))
    cond = core.tensor(a > 0)
    chosen = core.where(cond, x, core.clamp(x, -5, 5))
    assert from_c(chosen)
    np.testing.assert_array_equal(chosen.numpy(), np.where(a > 0, a, np.clip(a, -5, 5)))


def test_new_kernels_leave_tiny_calls_to_numpy_through_the_dispatcher():
    load_cpu_c()
    import core_cpu_c
    from core_cpu_c.kernels.elementwise import WRITTEN_FACTOR
    from core_cpu_c.plugin import DEFAULT_MIN_NUMEL

    saved = core_cpu_c.set_min_numel(DEFAULT_MIN_NUMEL)
    try:  # from the largest threshold (the comparisons', WRITTEN_FACTOR * min_numel) every one of them runs C
        for n, in_c in ((8, False), (DEFAULT_MIN_NUMEL * WRITTEN_FACTOR, True)):
            x = core.arange(n, dtype=core.int32)
            f = core.rand(n)
            for out in (x * x, x // 3, x << 2, core.where(f > 0.5, f, 0.0), core.clamp(f, 0.2, 0.8), core.isnan(f)):
                assert from_c(out) == in_c
    finally:
        core_cpu_c.set_min_numel(saved)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_outputs_larger_than_the_caches_use_streaming_stores_and_match(force_c, dtype):
    """Contiguous float outputs of 16 MiB or more are written with streaming stores (csrc/stream.h) in blocks,
    then a scalar tail: the element count here leaves a tail of 5."""
    n = (16 << 20) // np.dtype(dtype).itemsize + 5
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    x, y = core.tensor(a), core.tensor(b)
    for out, expected in ((x * y, a * b), (x + y, a + b), (core.maximum(x, y), np.maximum(a, b)),
                          (core.where(x > 0, x, y), np.where(a > 0, a, b))):
        assert from_c(out) and np.array_equal(out.numpy(), expected)
    np.testing.assert_allclose(core.exp(x).numpy(), np.exp(a), rtol=2e-6 if dtype == np.float32 else 1e-14)
    # addcmul/addcdiv into an existing tensor: the contiguous loop, its value a scalar read once
    out = core.empty(n, dtype=x.dtype)
    assert core.addcmul(x, x, y, value=1, out=out) is out and np.array_equal(out.numpy(), a + a * b)
    assert core.addcdiv(y, x, y, value=-0.5, out=out) is out
    np.testing.assert_allclose(out.numpy(), b + dtype(-0.5) * a / b, rtol=2e-6 if dtype == np.float32 else 1e-14)


def test_combined_parallel_simd_loops_limit_their_if_clause_to_parallel():
    """An ``if`` clause on ``omp parallel for simd`` without a ``parallel:`` modifier also applies to ``simd``
    (OpenMP 5.0): GCC then compiles the loop scalar below the threshold, where most of a small model's ops run
    (relu of 32x128 floats ran a branchy scalar loop). Every such loop, rendered or written by hand, must name it."""
    import pathlib
    import re

    import core_cpu_c
    from core_cpu_c.renderer import render_all

    csrc = pathlib.Path(core_cpu_c.__file__).parent / "csrc"
    sources = {"rendered": render_all()[0], **{p.name: p.read_text() for p in sorted(csrc.glob("*.c"))}}
    combined = re.compile(r"omp parallel for simd[^\n\"]*")
    found = 0
    for name, text in sources.items():
        for pragma in combined.findall(text):
            found += 1
            assert "if(" not in pragma or "if(parallel:" in pragma, (name, pragma)
    assert found > 100  # the rendered elementwise loops at least
