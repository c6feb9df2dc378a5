"""cpu_c's reductions (core_cpu_c/kernels/reduction.py, csrc/reduce.c) against the NumPy reference kernels.

sum/prod/amax/amin/any/all over any set of dims, argmax/argmin, and the scans cumsum/cumprod/cummax/cummin, over
every dtype C takes and over strided layouts (transposed, sliced with steps, offset, expanded, empty, 0-d). Each
comparison also checks which C function ran (counting wrappers around the kernels' C function tables).
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest

import core
from core.backends.api import Tensor
from core.dispatch import backend_key, get_operator

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytest.importorskip("core_cpu_c", reason="the cpu_c plugin is not installed (pip install plugins/cpu_c)")
from cpu_c_support import load_cpu_c, numpy_reference  # noqa: E402

REDUCTIONS = ("sum", "prod", "amax", "amin", "any", "all")
ARGS = ("argmax", "argmin")
SCANS = ("cumsum", "cumprod", "cummax", "cummin")
FLOATS = ("float32", "float64")
INTS = ("int8", "uint8", "int16", "int32", "int64")
DTYPES = FLOATS + INTS + ("bool",)


def _kernel(op):
    return get_operator(op).kernels[backend_key("cpu").bit]


@pytest.fixture
def calls(monkeypatch):
    """Run C even on tiny tensors; counts the C calls per (op, table): {('sum', 'strided'): n, ...}."""
    load_cpu_c()
    import core_cpu_c

    core.zeros(1).sum()  # the kernels are registered on first use
    counts = collections.Counter()
    for op in REDUCTIONS + ARGS + SCANS:
        for table, fns in _kernel(op).c_functions.items():
            for dtype, fn in list(fns.items()):
                def counted(*args, key=(op, table), fn=fn):
                    counts[key] += 1
                    return fn(*args)

                monkeypatch.setitem(fns, dtype, counted)
    saved = core_cpu_c.set_min_numel(0)
    yield counts
    core_cpu_c.set_min_numel(saved)


def _c_calls(counts, op):
    return sum(n for (o, _), n in counts.items() if o == op)


def _reference(op, *args):
    with np.errstate(all="ignore"):  # the reference's sum of inf and -inf warns; C's NaN comes silently
        return numpy_reference(op, *args)


def _data(dtype, shape, seed=0, special=False):
    rng = np.random.default_rng(seed)
    if dtype in FLOATS:
        a = rng.uniform(-2, 2, shape)
        if special and a.size:
            flat = a.reshape(-1)
            picks = rng.choice(flat.size, size=min(flat.size, 1 + flat.size // 5), replace=False)
            flat[picks] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], size=picks.size)
        return a.astype(dtype)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max) if dtype != "int64" else (-(1 << 40), 1 << 40)
    if special:  # few distinct values: ties for the arg-reductions and running extrema
        return rng.integers(-2 if info.min < 0 else 0, 3, shape).astype(dtype)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def _strided(a: np.ndarray, shape, strides, offset):
    """A core view of ``shape``/``strides``/``offset`` (elements) over a tensor holding the flat data ``a``."""
    base = core.tensor(np.ascontiguousarray(a.reshape(-1)))
    return Tensor._make(base._storage, tuple(shape), tuple(strides), offset, base.dtype)


def _layouts(dtype, special=False):
    """(name, tensor) over the layouts C must walk."""
    big = core.tensor(_data(dtype, (7, 9, 8), special=special))
    return [
        ("contiguous", core.tensor(_data(dtype, (3, 4, 5), 1, special))),
        ("transposed", core.tensor(_data(dtype, (5, 3, 4), 2, special)).permute(1, 2, 0)),
        ("stepped", big[::2, 1::3, ::3]),
        ("offset", big[2:5, 3:7, 1:6]),
        ("expanded", core.tensor(_data(dtype, (3, 1, 5), 3, special)).expand(3, 4, 5)),
        ("strided", _strided(_data(dtype, (200,), 4, special), (3, 4, 5), (1, 37, 6), 7)),  # overlapping-free odd
        ("long_rows", core.tensor(_data(dtype, (2, 3, 700), 5, special))[:, :, 3:]),
    ]


_DIM_SETS = [(0,), (1,), (2,), (0, 2), (-1, -3), (2, 0), (1, 2), (0, 1), (0, 1, 2)]


def _assert_same(op, actual, expected, dtype):
    a, e = actual.numpy(), expected.numpy()
    assert actual.dtype == expected.dtype and a.shape == e.shape
    if op in ("sum", "prod") and dtype in FLOATS:
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(a, e)


def _check_reduction(calls, op, x, dims, keepdim, dtype):
    args = (x, dims, keepdim) + ((None,) if op in ("sum", "prod") else ())
    try:
        expected = _reference(op, *args)
    except (IndexError, RuntimeError) as exc:  # amax/amin over an empty dim: refused by the meta, as in PyTorch
        with pytest.raises(type(exc)):
            get_operator(op)(*args)
        return
    before = _c_calls(calls, op)
    actual = get_operator(op)(*args)
    _assert_same(op, actual, expected, dtype)
    reduced = int(np.prod([x.shape[d] for d in dims]))
    assert _c_calls(calls, op) - before == (1 if actual.numel() and reduced else 0)
    assert actual._storage.backend.__class__.__name__ == "CpuCRuntime"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions_over_any_dims_of_any_layout_match_the_reference(calls, op, dtype):
    for _, x in _layouts(dtype, special=op in ("amax", "amin", "any", "all")):
        for dims in _DIM_SETS:
            dims = tuple(d % 3 for d in dims)
            for keepdim in (False, True):
                _check_reduction(calls, op, x, dims, keepdim, dtype)


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions_of_empty_zero_d_and_one_d_tensors(calls, op):
    for dtype in ("float32", "int32", "bool"):
        for x, dim_sets in [(core.tensor(_data(dtype, (3, 0, 4))), [(0,), (1,), (0, 2), (0, 1, 2)]),
                            (core.tensor(_data(dtype, (0,))), [(0,)]),
                            (core.tensor(_data(dtype, ())), [()]),
                            (core.tensor(_data(dtype, (6,))), [(0,)]),
                            (core.tensor(_data(dtype, (1, 5, 1))), [(0,), (1,), (0, 2), (0, 1, 2)])]:
            for dims in dim_sets:
                for keepdim in (False, True):
                    _check_reduction(calls, op, x, dims, keepdim, dtype)


def test_reduction_paths_row_block_and_walk(calls):
    x = core.tensor(_data("float32", (6, 50, 40)))
    core.sum(x, (1, 2))  # trailing contiguous rows: the vectorised row kernel
    assert calls[("sum", "rows")] == 1 and calls[("sum", "strided")] == 0
    core.sum(x.permute(2, 1, 0), (0, 1))  # a transposed whole block: collapses to contiguous rows too
    assert calls[("sum", "rows")] == 2
    core.sum(x, (0,))  # outer dim: kept-inner blocks
    core.amax(x, (0, 2))
    assert calls[("sum", "strided")] == 1 and calls[("amax", "strided")] == 1


def test_float_reductions_propagate_nan_and_infinities(calls):
    a = np.array([[1.0, np.nan, 3.0, -np.inf], [np.inf, -np.inf, 2.0, 0.0], [-np.inf, -np.inf, -np.inf, -np.inf],
                  [np.inf, np.inf, 1.0, np.nan]])
    for dtype in FLOATS:
        for x in (core.tensor(a.astype(dtype)), core.tensor(a.T.copy().astype(dtype)).t()):
            for op in REDUCTIONS:
                for dims in ((0,), (1,), (0, 1)):
                    _check_reduction(calls, op, x, dims, False, dtype)
            for op in ARGS:
                for dim in (0, 1, None):
                    np.testing.assert_array_equal(get_operator(op)(x, dim, False).numpy(),
                                                  _reference(op, x, dim, False).numpy())
    assert np.isnan(core.amax(core.tensor(a), (0, 1)).item())


def test_integer_sums_and_products_wrap_in_int64(calls):
    big = np.full((4, 3), np.iinfo(np.int64).max, np.int64)
    for x in (core.tensor(big), core.tensor(big).t()):
        for op in ("sum", "prod"):
            for dims in ((0,), (1,), (0, 1)):
                _check_reduction(calls, op, x, dims, False, "int64")
    x = core.tensor(np.full((5, 40), 100, np.int8))  # int8 sums in int64: no int8 overflow
    assert core.sum(x, (0, 1)).item() == 20000 and core.sum(x).dtype == core.int64
    assert core.prod(core.tensor(np.full((70,), 3, np.int16))).item() == np.prod(np.full(70, 3, np.int64))


def test_other_dtypes_and_negative_strides_use_the_numpy_kernel(calls):
    x = core.tensor(_data("float64", (4, 5)))
    flipped = _strided(_data("float64", (20,)), (4, 5), (5, -1), 4)
    for op, args in [("sum", (x, (0,), False, core.float32)), ("prod", (x.to(core.float16), (0,), False, None)),
                     ("prod", (core.tensor(_data("int32", (4, 5))), (1,), False, core.float64)),
                     ("sum", (flipped, (0,), False, None)), ("amax", (flipped, (1,), False)),
                     ("argmax", (flipped, 1, False)), ("cumsum", (flipped, 0, None)), ("cummax", (flipped, 1)),
                     ("cumsum", (x, 0, core.float32))]:
        expected = _reference(op, *args)
        actual = get_operator(op)(*args)
        for a, e in zip(actual, expected) if isinstance(actual, tuple) else [(actual, expected)]:
            np.testing.assert_array_equal(a.numpy(), e.numpy())
    assert sum(calls.values()) == 0


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("op", ARGS)
def test_arg_reductions_match_the_reference_with_ties(calls, op, dtype):
    layouts = _layouts(dtype, special=True) + [("zero_d", core.tensor(_data(dtype, ()))),
                                               ("one_d", core.tensor(_data(dtype, (9,), special=True)))]
    for name, x in layouts:
        for dim in [None, *range(x.dim())]:
            for keepdim in (False, True):
                expected = _reference(op, x, dim, keepdim)
                before = _c_calls(calls, op)
                actual = get_operator(op)(x, dim, keepdim)
                assert actual.dtype == core.int64 and actual.shape == expected.shape, name
                np.testing.assert_array_equal(actual.numpy(), expected.numpy(), err_msg=f"{name} dim={dim}")
                assert _c_calls(calls, op) == before + 1


def test_max_min_with_a_dim_and_median_use_the_c_arg_reductions(calls):
    x = core.tensor(_data("float32", (5, 6), special=True))
    values, indices = core.max(x, 1)
    np.testing.assert_array_equal(indices.numpy(), np.argmax(x.numpy(), 1))
    assert calls[("argmax", "strided")] >= 1
    m = core.median(x.t(), 0)
    np.testing.assert_array_equal(m.values.numpy(), core.median(x.t().contiguous(), 0).values.numpy())


def _check_scan(calls, op, x, dim, dtype):
    args = (x, dim) + ((None,) if op in ("cumsum", "cumprod") else ())
    expected = _reference(op, *args)
    before = _c_calls(calls, op)
    actual = get_operator(op)(*args)
    pairs = zip(actual, expected) if isinstance(expected, tuple) else [(actual, expected)]
    for a, e in pairs:
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a.numpy(), e.numpy())  # NumPy's accumulate order and dtype: bit-exact
    assert _c_calls(calls, op) == before + (1 if x.numel() else 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", SCANS)
def test_scans_along_any_dim_of_any_layout_match_the_reference(calls, op, dtype):
    special = op in ("cummax", "cummin")
    layouts = _layouts(dtype, special=special) + [
        ("zero_d", core.tensor(_data(dtype, ()))), ("one_d", core.tensor(_data(dtype, (11,), special=special))),
        ("empty", core.tensor(_data(dtype, (3, 0, 2))))]
    for _, x in layouts:
        for dim in range(max(x.dim(), 1)):
            _check_scan(calls, op, x, dim, dtype)


def test_cummax_cummin_nan_and_ties_take_the_latest_index(calls):
    a = np.array([[1.0, 1.0, np.nan, 2.0, np.nan, 0.0], [0.0, -0.0, 0.0, -1.0, 5.0, 5.0]])
    for dtype in FLOATS:
        for x in (core.tensor(a.astype(dtype)), core.tensor(a.T.copy().astype(dtype)).t()):
            for op in ("cummax", "cummin"):
                for dim in (0, 1):
                    _check_scan(calls, op, x, dim, dtype)
    values, indices = core.cummax(core.tensor(a), 1)
    assert indices.tolist()[0] == [0, 1, 2, 2, 4, 4]


# -- properties: random shapes, strides, offsets and dim sets ---------------------------------------------------

@st.composite
def _views(draw):
    ndim = draw(st.integers(0, 4))
    shape = draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim))
    strides = draw(st.lists(st.integers(0, 12), min_size=ndim, max_size=ndim))
    offset = draw(st.integers(0, 5))
    extent = offset + sum((s - 1) * t for s, t in zip(shape, strides) if s) + 1
    return shape, strides, offset, extent


@settings(max_examples=40, deadline=None)
@given(view=_views(), dtype=st.sampled_from(DTYPES), op=st.sampled_from(REDUCTIONS), keepdim=st.booleans(),
       data=st.data())
def test_random_views_and_dim_sets_match_the_reference(view, dtype, op, keepdim, data):
    shape, strides, offset, extent = view
    x = _strided(_data(dtype, (extent,), 7, special=op != "sum"), shape, strides, offset)
    if shape:
        dims = tuple(data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True)))
    else:
        dims = ()
    with _forced() as counts:
        _check_reduction(counts, op, x, dims, keepdim, dtype)


@settings(max_examples=40, deadline=None)
@given(view=_views(), dtype=st.sampled_from(FLOATS + INTS), op=st.sampled_from(ARGS + SCANS), data=st.data())
def test_random_views_of_arg_reductions_and_scans_match_the_reference(view, dtype, op, data):
    shape, strides, offset, extent = view
    x = _strided(_data(dtype, (extent,), 8, special=True), shape, strides, offset)
    dim = data.draw(st.integers(0, len(shape) - 1)) if shape else 0
    with _forced() as counts:
        if op in ARGS:
            dim = None if data.draw(st.booleans()) or not shape else dim
            try:
                expected = _reference(op, x, dim, False)
            except IndexError:
                return
            np.testing.assert_array_equal(get_operator(op)(x, dim, False).numpy(), expected.numpy())
            assert _c_calls(counts, op) == (1 if x.numel() else 0)
        else:
            _check_scan(counts, op, x, dim, dtype)


class _forced:
    """calls' counting and min_numel=0 for hypothesis tests (function-scoped fixtures do not reset per example)."""

    def __enter__(self):
        load_cpu_c()
        import core_cpu_c

        core.zeros(1).sum()
        self.counts = collections.Counter()
        self.saved_fns = []
        for op in REDUCTIONS + ARGS + SCANS:
            for table, fns in _kernel(op).c_functions.items():
                self.saved_fns.append((fns, dict(fns)))
                for dtype, fn in list(fns.items()):
                    def counted(*args, key=(op, table), fn=fn):
                        self.counts[key] += 1
                        return fn(*args)

                    fns[dtype] = counted
        self.saved = core_cpu_c.set_min_numel(0)
        return self.counts

    def __exit__(self, *exc):
        import core_cpu_c

        core_cpu_c.set_min_numel(self.saved)
        for fns, saved in self.saved_fns:
            fns.update(saved)


def test_large_reductions_use_threads_and_do_not_depend_on_the_thread_count(calls):
    from core_cpu_c.lib import get_num_threads, set_num_threads

    x = core.tensor(_data("float64", (64, 300, 24)))
    ops = [lambda t: core.sum(t, (0, 2)), lambda t: core.sum(t, (1,)), lambda t: core.amax(t.permute(2, 0, 1), (1,)),
           lambda t: core.argmin(t, 1), lambda t: core.cumsum(t, 0), lambda t: core.cummax(t, 1).indices,
           lambda t: core.prod(t[:, :20], (0, 2)), lambda t: core.any(t > 1.9, (0, 2))]
    saved = get_num_threads()
    try:
        set_num_threads(1)
        single = [op(x).numpy() for op in ops]
        set_num_threads(4)
        for op, expected in zip(ops, single):
            np.testing.assert_array_equal(op(x).numpy(), expected)
    finally:
        set_num_threads(saved)


def test_out_of_bounds_views_are_refused_before_c(calls):
    from core_cpu_c.layout import LayoutError

    good = core.rand(4, 4)
    bad = Tensor._make(good._storage, (4, 8), (8, 1), 0, good.dtype)
    for op, args in [("sum", (bad, (0,), False, None)), ("argmax", (bad, 1, False)), ("cumsum", (bad, 0, None)),
                     ("any", (bad, (0, 1), False))]:
        with pytest.raises(LayoutError, match="reaches element"):
            get_operator(op)(*args)
    assert sum(calls.values()) == 0


def test_reductions_are_sized_by_their_input_not_their_output(calls):
    """A million inputs summed to one number is big work: the kernels check their input size themselves, and the
    dispatcher (which sizes ops by output) must not send them to NumPy."""
    import core_cpu_c

    previous = core_cpu_c.set_min_numel(4096)
    try:
        big, tiny = core.rand(100, 100), core.rand(10, 10)
        core.sum(big, 1), core.amax(big), core.argmax(big, 0), core.any(big > 0.5, 1)
        assert [_c_calls(calls, op) for op in ("sum", "amax", "argmax", "any")] == [1, 1, 1, 1]
        core.sum(tiny, 1), core.cumsum(tiny, 0), core.argmax(tiny)
        assert sum(calls.values()) == 4
        core.cumsum(big, 0)
        assert _c_calls(calls, "cumsum") == 1
    finally:
        core_cpu_c.set_min_numel(previous)


def test_float32_sums_are_at_least_as_accurate_as_numpys(calls):
    """C accumulates float32 sums in double (a block of outputs adds four rows in float32 first): on long
    reductions the result stays within an ulp of the exact sum, and never worse than NumPy's float32 sum (pairwise
    along rows, sequential across them: off by 48 ulp on the first case)."""
    a = (np.random.default_rng(3).random((20000, 6)) + 0.1).astype(np.float32)
    for x, dims in [(core.tensor(a), (0,)), (core.tensor(a.T.copy()), (1,)), (core.tensor(a.T.copy()).t(), (0,)),
                    (core.tensor(a)[::3], (0, 1))]:
        exact = x.numpy().astype(np.float64).sum(axis=dims)
        c_error = np.abs(core.sum(x, dims).numpy() - exact).max()
        numpy_error = np.abs(x.numpy().sum(axis=dims) - exact).max()
        assert c_error <= min(numpy_error, np.spacing(np.float32(np.abs(exact).max())))
    assert calls[("sum", "strided")] + calls[("sum", "rows")] == 4


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_long_row_sums_read_four_streams_and_stay_exact(calls, dtype):
    """Rows of 65,536 elements or more are summed as four interleaved streams (csrc/reduce.c's STREAMS), with a
    tail that is not a multiple of the lanes: every element counts once, and the sum stays within an ulp of the
    exact one (accumulated in double), split across threads or not."""
    from core_cpu_c.lib import get_num_threads, set_num_threads

    rng = np.random.default_rng(11)
    saved = get_num_threads()
    try:
        for n, rows in ((65_536, 1), (200_003, 1), (131_137, 3)):
            values = rng.uniform(0.5, 1.5, (rows, n)) / 16  # float16's sums stay below its largest value
            values[:, -1] = 100.0  # the last element is in the tail: lost, and the sum is visibly wrong
            x = core.tensor(values).to(getattr(core, dtype))
            exact = np.array([math.fsum(row) for row in x.to(core.float64).numpy()])
            # float64: double accumulation's rounding over ~n / 64 additions per lane; the others: one rounding
            bound = {"float64": np.abs(exact) * 1e-13, "float32": np.spacing(np.abs(exact).astype(np.float32)),
                     "float16": np.abs(exact) * 2.0 ** -10, "bfloat16": np.abs(exact) * 2.0 ** -7}[dtype]
            for threads in (1, 2):
                set_num_threads(threads)
                got = core.sum(x, (1,)).to(core.float64).numpy()
                assert np.all(np.abs(got - exact) <= bound), (n, rows, threads, got, exact)
    finally:
        set_num_threads(saved)
    assert calls[("sum", "rows")] == 6


def test_public_api_with_negative_dims_and_keepdim(calls):
    a = _data("float64", (4, 5, 6), 9, special=True)
    x = core.tensor(a).permute(2, 0, 1)  # (6, 4, 5), strided
    n = a.transpose(2, 0, 1)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(core.sum(x, (-1, 0), keepdim=True).numpy(), n.sum(axis=(-1, 0), keepdims=True),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(x.amax(-2).numpy(), np.amax(n, axis=-2))
        np.testing.assert_array_equal(x.argmax(-1, keepdim=True).numpy(), np.argmax(n, axis=-1, keepdims=True))
        np.testing.assert_array_equal(x.argmin().numpy(), np.argmin(n))
        np.testing.assert_array_equal(x.cumsum(-1).numpy(), np.cumsum(n, axis=-1))
        np.testing.assert_allclose(core.prod(x, -3).numpy(), np.prod(n, axis=-3), rtol=1e-12)
    np.testing.assert_array_equal(core.any(x > 1, -1).numpy(), np.any(n > 1, axis=-1))
    np.testing.assert_array_equal(core.all(x > -3, (0, -1)).numpy(), np.all(n > -3, axis=(0, -1)))
    assert {op for (op, _), c in calls.items() if c} == {"sum", "amax", "argmax", "argmin", "cumsum", "prod", "any",
                                                          "all"}
    # the primitives called with keywords, as the reference kernels' signatures allow
    assert get_operator("sum")(x, (0,), keepdim=True, dtype=None).shape == (1, 4, 5)
    assert get_operator("argmin")(x, 1, keepdim=True).shape == (6, 1, 5)
    assert get_operator("cumprod")(x, dim=2, dtype=None).shape == (6, 4, 5)
    assert get_operator("cummin")(x, dim=0)[1].dtype == core.int64


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_arg_reductions_across_chunks_keep_the_first_occurrence(calls, dtype):
    """Rows longer than csrc/reduce.c's CHUNK (1024): the winning chunk is the first holding the extremum."""
    rng = np.random.default_rng(11)
    a = rng.integers(-50, 50, (4, 5000)).astype(dtype)
    a[0, [1500, 2100, 4999]] = 90  # ties in several chunks: the first wins
    a[1, [3000, 3001]] = -90
    a[2, 4090:4096] = 90  # the last elements of a chunk
    if dtype == "float32":
        a[3, [2500, 4000]] = np.nan  # the first NaN, past a larger value
        a[3, 100] = 1000
    for x in (core.tensor(a), core.tensor(a.T.copy()).t(), core.tensor(np.repeat(a, 2, axis=1))[:, ::2]):
        for op in ARGS:
            for dim in (1, None):
                expected = _reference(op, x, dim, False)
                np.testing.assert_array_equal(get_operator(op)(x, dim, False).numpy(), expected.numpy())
    assert _c_calls(calls, "argmax") == 6 and _c_calls(calls, "argmin") == 6
