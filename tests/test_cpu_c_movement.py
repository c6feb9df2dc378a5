"""cpu_c's data-movement kernels (plugins/cpu_c/core_cpu_c/kernels/{creation,ranges,shape,indexing}.py,
csrc/movement.c) against the NumPy reference: copy_ and its casts, fill_, the range fills, cat, flip, gather,
scatter_, index and index_put_."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.dispatch import backend_key, get_operator

cpu_c = pytest.importorskip("core_cpu_c", reason="the cpu_c plugin is not installed (pip install plugins/cpu_c)")
from cpu_c_support import load_cpu_c, numpy_reference  # noqa: E402

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"]


@pytest.fixture
def force_c(force_c):
    """conftest's force_c, and cpu_c must be the backend serving ``cpu``."""
    load_cpu_c(require_selected=True)


@pytest.fixture
def calls(force_c, monkeypatch):
    """{C function: [return values]} of the movement kernels' C calls (the C path ran when a list is non-empty)."""
    from core_cpu_c import movement

    seen = collections.defaultdict(list)
    for name, fn in list(movement.C.items()):
        def counted(*args, name=name, fn=fn):
            result = fn(*args)
            seen[name].append(result)
            return result

        monkeypatch.setitem(movement.C, name, counted)
    return seen


def _values(dtype: str, shape, seed: int = 0, wild: bool = False, fits: str = "int16") -> np.ndarray:
    """Random values of ``dtype``; floats are in the range of the integer type ``fits`` (and -300..300), unless
    ``wild``: then they include NaN, infinities, -0.0 and values no integer holds."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("float"):
        info = np.iinfo(fits if np.dtype(fits).kind in "iu" else "int16")
        v = rng.uniform(max(info.min, -300), min(info.max, 300), shape)
        if wild and v.size:
            specials = np.array([np.nan, np.inf, -np.inf, -0.0, 1e10, -1e10, 3e38, 2.0**63, -(2.0**63), 127.9, -128.9,
                                 255.5, -0.7, 40000.0, -1.5])
            flat = v.reshape(-1)
            flat[rng.integers(0, flat.size, min(flat.size, 8))] = rng.choice(specials, min(flat.size, 8))
        return v.astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)


def _same(got: np.ndarray, expected: np.ndarray, where: str = "") -> None:
    """Bit-identical arrays (NaN payloads too)."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, where
    as_bytes = [np.ascontiguousarray(a).view(np.uint8).tobytes() for a in (got, expected)]
    assert as_bytes[0] == as_bytes[1], (where, got, expected)


def _same_nan(got: np.ndarray, expected: np.ndarray) -> None:
    """Equal arrays, any NaN equal to any NaN, -0.0 told from 0.0."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    if got.dtype.kind == "f":
        keep = ~np.isnan(got)
        np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(expected[keep]))


# -- layouts: views of one storage whose untouched bytes are compared too ---------------------------------------------

def _dst_views(shape2):
    """name -> function(base 2-D tensor of shape (2*rows+3, 3*cols+2)) -> a (rows, cols) view."""
    r, c = shape2
    return {
        "contiguous": lambda b: b.reshape(-1)[: r * c].view(r, c),
        "transposed": lambda b: b[:c, :r].t(),
        "sliced": lambda b: b[1::2, 2::3][:r, :c],
        "offset": lambda b: b[3:3 + r, 1:1 + c],
    }


def _src_views(dtype, shape2, seed, wild=False, fits="int16"):
    r, c = shape2
    big = core.tensor(_values(dtype, (2 * r + 3, 3 * c + 2), seed, wild, fits))
    return {
        "contiguous": core.tensor(_values(dtype, (r, c), seed, wild, fits)),
        "transposed": core.tensor(_values(dtype, (c, r), seed, wild, fits)).t(),
        "sliced": big[::2, 1::3][:r, :c],
        "offset": big[2:2 + r, 3:3 + c],
        "expanded": core.tensor(_values(dtype, (c,), seed, wild, fits)).expand(r, c),
        "zero_d": core.tensor(_values(dtype, (), seed, wild, fits)),
    }


def _check_copy(dst_dtype, src_dtype, shape2, wild, calls):
    for dst_name, make in _dst_views(shape2).items():
        for src_name, src in _src_views(src_dtype, shape2, 1, wild, dst_dtype).items():
            start = _values(dst_dtype, (2 * shape2[0] + 3, 3 * shape2[1] + 2), 2)
            got_base, ref_base = core.tensor(start.copy()), core.tensor(start.copy())
            with np.errstate(all="ignore"):
                make(got_base).copy_(src)
                numpy_reference("copy_", make(ref_base), src)
            # the view's elements and every byte around them
            _same(got_base.numpy(), ref_base.numpy(), f"{dst_name} <- {src_name}")


# -- copy_ ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("src_dtype", DTYPES)
@pytest.mark.parametrize("dst_dtype", DTYPES)
def test_copy_casts_every_pair_on_every_layout(calls, dst_dtype, src_dtype):
    _check_copy(dst_dtype, src_dtype, (4, 5), wild=False, calls=calls)
    name = "copy_bytes" if dst_dtype == src_dtype else "copy_cast"
    assert calls[name] and all(r in (None, 0) for r in calls[name])  # C ran and converted every value


@pytest.mark.parametrize(("dst_dtype", "src_dtype"), [(d, s) for d in DTYPES + ["float16", "bfloat16"]
                                                       for s in DTYPES + ["float16", "bfloat16"] if d != s])
def test_to_dtype_is_one_c_cast_into_a_fresh_tensor(calls, dst_dtype, src_dtype):
    """``.to(dtype)`` (``_to_copy``): a fresh contiguous tensor equal to NumPy's astype of every source layout; C
    casts where it converts that pair (float32 <-> half included), NumPy's astype for the rest and for copies."""
    if src_dtype in ("float16", "bfloat16"):
        sources = {"contiguous": core.tensor(_values("float32", (4, 5), 1)).to(getattr(core, src_dtype))}
        sources["transposed"] = sources["contiguous"].t()
    else:
        sources = _src_views(src_dtype, (4, 5), 1, fits=dst_dtype if dst_dtype in DTYPES else "int16")
    c_pair = (src_dtype in DTYPES and dst_dtype in DTYPES) or "float32" in (src_dtype, dst_dtype)
    for name, src in sources.items():
        calls.clear()
        got = src.to(getattr(core, dst_dtype))
        assert got.is_contiguous() and got.dtype is getattr(core, dst_dtype)
        assert got is not src and got._storage is not src._storage
        with np.errstate(all="ignore"):
            expected = src.numpy().astype(got.dtype.numpy, order="C")
        _same(got.numpy(), expected, name)
        assert (calls["copy_cast"] == [0]) == c_pair, (name, calls)


def test_to_another_device_or_the_same_dtype_still_copies(calls):
    x = core.tensor(_values("float32", (3, 4), 5))
    moved = x.to("meta", core.float64)
    assert moved.device.type == "meta" and moved.dtype is core.float64 and moved.shape == x.shape
    copied = x.to(core.float32, copy=True)
    assert copied._storage is not x._storage
    _same(copied.numpy(), x.numpy())


@pytest.mark.parametrize("dst_dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("src_dtype", ["float32", "float64"])
def test_copy_float_to_int_out_of_range_and_nan_match_numpy(calls, dst_dtype, src_dtype):
    """NaN, infinities and values beyond the integer type are undefined in C: C reports them and NumPy converts."""
    _check_copy(dst_dtype, src_dtype, (4, 5), wild=True, calls=calls)
    if dst_dtype == "bool":
        assert calls["copy_cast"] and all(r == 0 for r in calls["copy_cast"])  # x != 0 is defined for every float
    else:
        assert 1 in calls["copy_cast"]  # some value went back to NumPy
    x = core.tensor(np.array([1.5, -2.7, np.nan], src_dtype))
    with np.errstate(all="ignore"):
        expected = np.array([1.5, -2.7, np.nan], src_dtype).astype(dst_dtype)
    _same(x.to(getattr(core, dst_dtype)).numpy(), expected)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), ()])
def test_copy_empty_and_zero_d(calls, shape):
    src = core.tensor(_values("float64", shape, 3))
    dst = core.zeros(shape, dtype=core.int32)
    dst.copy_(src)
    _same(dst.numpy(), _values("float64", shape, 3).astype(np.int32))
    assert bool(calls["copy_cast"]) == (shape == ())


def test_copy_half_types_move_raw_elements_and_cast_to_float32_in_c(calls):
    x = core.tensor(np.linspace(-2, 2, 30).reshape(5, 6), dtype=core.float16)
    y = x.t().contiguous()
    _same(y.numpy(), np.ascontiguousarray(x.numpy().T))
    assert calls["copy_bytes"]
    z = x.to(core.float32)  # float32 <-> half: C (tests/test_cpu_c_half.py checks every value)
    _same(z.numpy(), x.numpy().astype(np.float32))
    assert calls["copy_cast"] == [0]
    w = x.to(core.float64)  # other casts with a half dtype: NumPy
    _same(w.numpy(), x.numpy().astype(np.float64))
    assert calls["copy_cast"] == [0]


def test_overlapping_copies_run_numpy(calls):
    x = core.arange(30, dtype=core.float64).reshape(5, 6)
    z = core.arange(36, dtype=core.int32).reshape(6, 6)
    shifted = x.numpy().copy()
    np.copyto(shifted[:, 1:], shifted[:, :-1].copy())
    transposed = z.numpy().T.copy()
    calls.clear()
    x[:, 1:].copy_(x[:, :-1])  # every element but the first column is read after another one is written
    _same(x.numpy(), shifted)
    z.copy_(z.t())  # transposing in place
    _same(z.numpy(), transposed)
    assert not calls["copy_bytes"] and not calls["copy_cast"]
    x[:2].copy_(x[3:])  # one storage, disjoint elements: C
    shifted[:2] = shifted[3:]
    _same(x.numpy(), shifted)
    assert calls["copy_bytes"]


def test_read_only_memory_is_refused_as_numpy_refuses_it(calls):
    frozen = np.arange(12.0).reshape(3, 4)
    frozen.flags.writeable = False
    x = core.from_numpy(frozen)
    ones, index, row = core.ones(3, 4, dtype=core.float64), core.tensor([[0, 1, 2, 0]]), core.tensor([1])
    calls.clear()
    for write in (lambda: x.fill_(1.0), lambda: x.copy_(ones), lambda: x.scatter_(0, index, ones[:1]),
                  lambda: x.index_put_((row,), ones[0])):
        with pytest.raises(ValueError, match="read-only"):
            write()
    _same(x.numpy(), np.arange(12.0).reshape(3, 4))
    assert not any(calls[name] for name in ("copy_bytes", "copy_cast", "scatter", "index_put"))


def test_clone_contiguous_and_to_run_c_on_large_tensors(force_c, monkeypatch):
    """With the default threshold, tiny copies stay on NumPy and large ones run C."""
    from core_cpu_c import movement

    cpu_c.set_min_numel(4096)
    ran = []
    fn = movement.C["copy_bytes"]
    monkeypatch.setitem(movement.C, "copy_bytes", lambda *a: ran.append(1) or fn(*a))
    core.ones(10, 10).t().contiguous()
    assert not ran
    big = core.tensor(_values("float32", (100, 300), 4))
    out = big.t().contiguous()
    assert ran
    _same(out.numpy(), np.ascontiguousarray(big.numpy().T))


@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("int8", "int8"), ("int16", "float64"),
                                    ("float64", "int32"), ("float32", "uint8"), ("bool", "float32")])
@pytest.mark.parametrize("shape", [(33, 65), (64, 32), (3, 40, 37), (2, 31, 100)])
def test_copy_transposes_in_tiles(calls, dtypes, shape):
    """Transpose-like copies (one side contiguous along the last dim, the other along the one before) go tile by
    tile, with partial tiles at the edges and batch dims in front."""
    dd, sd = dtypes
    perm = (*range(len(shape) - 2), len(shape) - 1, len(shape) - 2)
    flipped = tuple(shape[p] for p in perm)
    for wild in (False, True):
        src = core.tensor(_values(sd, flipped, 1, wild, dd)).permute(*perm)  # strides (..., 1, n)
        got, ref = core.empty(shape, dtype=getattr(core, dd)), core.empty(shape, dtype=getattr(core, dd))
        with np.errstate(all="ignore"):
            got.copy_(src)
            numpy_reference("copy_", ref, src)
        _same(got.numpy(), ref.numpy())
        got_t = core.empty(flipped, dtype=getattr(core, dd))
        ref_t = core.empty(flipped, dtype=getattr(core, dd))
        dense = core.tensor(_values(sd, shape, 2, wild, dd))
        with np.errstate(all="ignore"):
            got_t.permute(*perm).copy_(dense)  # writing through the transposed view
            numpy_reference("copy_", ref_t.permute(*perm), dense)
        _same(got_t.numpy(), ref_t.numpy())
    assert calls["copy_bytes" if dd == sd else "copy_cast"]


def _strided_view(shape, steps, perm, offset, dtype, seed):
    """A view of a fresh tensor: a permutation of a sliced, offset region of the given shape."""
    full = tuple(n * s + o for n, s, o in zip(shape, steps, offset))
    base = core.tensor(_values(dtype, full, seed))
    return base[tuple(slice(o, o + n * s, s) for n, s, o in zip(shape, steps, offset))].permute(*perm)


@st.composite
def _copy_case(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    perm = draw(st.permutations(range(ndim)))
    dst_steps = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    src_steps = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    offsets = draw(st.lists(st.integers(0, 2), min_size=ndim, max_size=ndim))
    broadcast = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
    dtypes = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    return shape, perm, dst_steps, src_steps, offsets, broadcast, dtypes


@settings(max_examples=40, deadline=None)
@given(_copy_case())
def test_copy_random_layouts_match_numpy(case):
    load_cpu_c(require_selected=True)
    shape, perm, dst_steps, src_steps, offsets, broadcast, (dd, sd) = case
    saved = cpu_c.set_min_numel(0)
    try:
        start = _values(dd, tuple(n * s + o for n, s, o in zip(shape, dst_steps, offsets)), 5)
        got_base, ref_base = core.tensor(start.copy()), core.tensor(start.copy())
        region = tuple(slice(o, o + n * s, s) for n, s, o in zip(shape, dst_steps, offsets))
        got, ref = got_base[region].permute(*perm), ref_base[region].permute(*perm)
        src_shape = tuple(1 if b else n for n, b in zip(shape, broadcast))
        src = _strided_view(src_shape, src_steps, perm, offsets, sd, 6)
        with np.errstate(all="ignore"):
            got.copy_(src)
            numpy_reference("copy_", ref, src)
        _same(got_base.numpy(), ref_base.numpy())
    finally:
        cpu_c.set_min_numel(saved)


# -- fill_ ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + ["float16", "bfloat16"])
def test_fill_on_every_layout(calls, dtype):
    values = [True, 0, 1, 7] + ([-0.0, 2.5, float("nan"), -float("inf")] if "float" in dtype else [])
    if dtype not in ("bool", "uint8"):
        values.append(-3)
    for value in values:
        for make in _dst_views((4, 5)).values():
            start = _values("float32" if "float" in dtype else dtype, (11, 17), 7)
            got_base = core.tensor(start, dtype=getattr(core, dtype))
            ref_base = got_base.clone()
            make(got_base).fill_(value)
            numpy_reference("fill_", make(ref_base), value)
            _same(got_base.numpy(), ref_base.numpy())
    assert calls["copy_bytes"]
    x = core.zeros((), dtype=getattr(core, dtype))
    x.fill_(1)
    assert x.item() == 1


# -- ranges -----------------------------------------------------------------------------------------------------------

_RANGE_DTYPES = ["uint8", "int8", "int16", "int32", "int64", "float32", "float64"]


@pytest.mark.parametrize("dtype", _RANGE_DTYPES)
@pytest.mark.parametrize("args", [(0, 1), (5, -3), (-7, 2), (0.5, 0.1), (1e6, -0.3), (0, 1 / 3), (2, 1.0),
                                  (2**62, 2**61)])
def test_arange_fill_matches_numpy_bit_for_bit(calls, dtype, args):
    for n, step in ((37, 1), (1000, 1), (20, 3)):
        got = core.empty(n * step, dtype=getattr(core, dtype))[::step]
        ref = core.empty(n * step, dtype=getattr(core, dtype))[::step]
        get_operator("arange_fill_")(got, *args)
        numpy_reference("arange_fill_", ref, *args)
        _same(got.numpy(), ref.numpy())
    assert calls["arange_int" if all(isinstance(a, int) for a in args) else "arange_double"]


@pytest.mark.parametrize("dtype", _RANGE_DTYPES)
@pytest.mark.parametrize("args", [(0, 1), (-3, 7.5), (1, -1), (0.1, 0.7), (-1e3, 1e3), (5, 5)])
def test_linspace_fill_matches_numpy_bit_for_bit(calls, dtype, args):
    for n in (0, 1, 2, 7, 50, 1001):
        got = core.empty(2 * n, dtype=getattr(core, dtype))[::2]
        ref = core.empty(2 * n, dtype=getattr(core, dtype))[::2]
        get_operator("linspace_fill_")(got, *args)
        numpy_reference("linspace_fill_", ref, *args)
        _same(got.numpy(), ref.numpy())
    assert calls["linspace"]
    _same(core.linspace(args[0], args[1], 11, dtype=core.float64).numpy(),
          numpy_reference("linspace_fill_", core.empty(11, dtype=core.float64), *args).numpy())


def test_public_ranges_run_c(calls):
    _same(core.arange(0, 1, 0.1).numpy(), numpy_reference("arange_fill_", core.empty(10), 0, 0.1).numpy())
    _same(core.arange(10, dtype=core.int8).numpy(), np.arange(10, dtype=np.int8))
    assert calls["arange_double"] and calls["arange_int"]


# -- cat and flip -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_over_layouts(calls, dtype, dim):
    """Contiguous, transposed, sliced, expanded and empty pieces along either dim."""
    a = core.tensor(_values(dtype, (4, 6), 1))
    if dim == 0:
        pieces = [a, core.tensor(_values(dtype, (6, 5), 2)).t(), core.tensor(_values(dtype, (9, 19), 3))[1::3, 2::3],
                  core.empty((0, 6), dtype=getattr(core, dtype)), core.tensor(_values(dtype, (6,), 5)).expand(2, 6)]
    else:
        pieces = [a, core.tensor(_values(dtype, (3, 4), 2)).t(), core.tensor(_values(dtype, (9, 19), 3))[1::2, 2::5],
                  core.empty((4, 0), dtype=getattr(core, dtype)), core.tensor(_values(dtype, (4, 1), 5)).expand(4, 3)]
    got = core.cat(pieces, dim)
    ref = numpy_reference("cat", pieces, dim % 2)
    _same(got.numpy(), ref.numpy())
    assert calls["copy_bytes"]


def test_cat_of_mixed_dtypes_and_legacy_empties_run_numpy(calls):
    a, b = core.ones(2, 3), core.zeros(2, 3, dtype=core.float64)
    calls.clear()
    _same(core.cat([a, b]).numpy(), np.concatenate([a.numpy().astype(np.float64), b.numpy()]))
    assert not calls["copy_bytes"]
    got = core.cat([a, core.empty(0), a], 0)
    _same(got.numpy(), np.concatenate([a.numpy(), a.numpy()]))
    assert calls["copy_bytes"]


@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (0, 2), (-1, 0, 1)])
def test_flip_over_layouts(calls, dtype, dims):
    x = core.tensor(_values(dtype, (3, 4, 5), 1))
    for view in (x, x.permute(2, 0, 1), x[::2, 1:, ::3], x[:, :0]):
        _same(view.flip(dims).numpy(), numpy_reference("flip", view, tuple(d % 3 for d in dims)).numpy())
    assert calls["copy_bytes"]


# -- gather and scatter_ ----------------------------------------------------------------------------------------------

def _index(shape, high, seed):
    return core.tensor(np.random.default_rng(seed).integers(0, high, shape), dtype=core.int64)


@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather_over_layouts(calls, dtype, dim):
    x = core.tensor(_values(dtype, (4, 5, 6), 1))
    for view in (x, x.permute(1, 2, 0).permute(2, 0, 1), x[::2, 1:, ::2]):
        shape = list(view.shape)
        size = shape[dim]
        shape[dim] = 7
        shape = [max(1, n - 1) if k != dim % 3 else n for k, n in enumerate(shape)]
        for index in (_index(shape, size, 2), _index(shape[::-1], size, 3).permute(2, 1, 0),
                      _index([shape[0], 1, shape[2]], size, 4).expand(*shape)):
            _same(core.gather(view, dim, index).numpy(), numpy_reference("gather", view, dim, index).numpy())
    assert calls["gather"]
    zero_d = core.tensor(_values(dtype, (), 5))
    _same(core.gather(zero_d, 0, core.tensor(0)).numpy(), zero_d.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce", [None, "sum", "prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduces_like_numpy_in_order(calls, dtype, reduce, include_self):
    """Duplicate indices (float sums depend on the order), wrapping integers, NaN and -0.0 in amax/amin."""
    for dim in (0, 1, -1):
        start = _values(dtype, (5, 6, 4), 1, wild=dtype.startswith("float"))
        src = core.tensor(_values(dtype, (6, 12, 5), 2, wild=dtype.startswith("float")))
        if dtype.startswith("float"):
            start.reshape(-1)[:6] = [0.0, -0.0, 0.0, -0.0, np.nan, 1.0]
        shape = [4, 5, 3]
        index = _index(shape, (5, 6, 4)[dim], 3)
        for src_view in (src, src[1:, ::2]):
            got, ref = core.tensor(start.copy()), core.tensor(start.copy())
            get_operator("scatter_")(got, dim, index, src_view, reduce, include_self)
            with np.errstate(all="ignore"):
                numpy_reference("scatter_", ref, dim, index, src_view, reduce, include_self)
            _same_nan(got.numpy(), ref.numpy())
    assert calls["scatter"]


def test_scatter_through_the_public_api(calls):
    x = core.zeros(3, 5)
    src = core.arange(1, 11, dtype=core.float32).reshape(2, 5)
    index = core.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
    expected = np.zeros((3, 5), np.float32)
    np.put_along_axis(expected, index.numpy(), src.numpy(), 0)
    _same(x.scatter(0, index, src).numpy(), expected)
    _same(core.zeros(3, 5).scatter_add(0, index, src).numpy(), numpy_reference(
        "scatter_", core.zeros(3, 5), 0, index, src, "sum", True).numpy())
    got = core.ones(2, 4).scatter_reduce(1, core.tensor([[0, 0, 3], [1, 1, 1]]), core.tensor([[2., 3, 4], [5, 6, 7]]),
                                         "prod", include_self=False)
    _same(got.numpy(), np.array([[6, 1, 1, 4], [1, 210, 1, 1]], np.float32))
    assert calls["scatter"]


def test_out_of_range_indices_never_reach_memory(calls):
    """The ops check indices first; the kernels check again in C (the ops bypassed) and raise."""
    key = backend_key("cpu").bit
    x = core.arange(12.0).reshape(3, 4)
    bad = core.tensor([[0, 5], [1, 2]])
    spec = get_operator("gather").meta(x, 1, core.tensor([[0, 1], [1, 2]]))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        get_operator("gather").kernels[key](spec, x, 1, bad)
    before = x.numpy().copy()
    with pytest.raises(RuntimeError, match="out of bounds"):
        get_operator("scatter_").kernels[key](spec, x, 1, core.tensor([[0, -1], [1, 2]]), x + 1, "sum", True)
    _same(x.numpy(), before)  # nothing written
    with pytest.raises(IndexError, match="index 3 is out of bounds"):
        get_operator("index").kernels[key](get_operator("index").meta(x, (core.tensor([0, 1]),)), x,
                                           (core.tensor([0, 3]),))
    rows = core.zeros(3, 4, 16)
    with pytest.raises(IndexError, match="index out of range"):  # several index tensors: offsets checked
        get_operator("index").kernels[key](get_operator("index").meta(rows, (core.tensor([0]), core.tensor([0]))),
                                           rows, (core.tensor([2]), core.tensor([4])))
    with pytest.raises(IndexError, match="index -4 is out of bounds"):
        values = core.ones(1, 4)
        spec = get_operator("index_put_").meta(x, (core.tensor([0]),), values)
        get_operator("index_put_").kernels[key](spec, x, (core.tensor([-4]),), values, False)
    _same(x.numpy(), before)
    with pytest.raises((RuntimeError, IndexError)):
        x.gather(1, bad)
    assert calls["gather"] and calls["scatter"] and calls["index"] and calls["index_put"]


# -- index and index_put_ ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
def test_index_with_one_index_tensor(calls, dtype):
    x = core.tensor(_values(dtype, (5, 6, 7), 1))
    a = x.numpy()
    rng = np.random.default_rng(2)
    for view, arr in ((x, a), (x.permute(2, 0, 1), a.transpose(2, 0, 1)), (x[1:, ::2], a[1:, ::2])):
        for k in range(3):
            size = arr.shape[k]
            for idx in (rng.integers(-size, size, 9), rng.integers(-size, size, (2, 3)),
                        np.array([size - 1] * 4), np.zeros(0, np.int64)):
                key = (slice(None),) * k + (core.tensor(idx, dtype=core.int64),)
                _same(view[key].numpy(), arr[(slice(None),) * k + (idx,)])
    mask = a.reshape(5, -1)[:, 0] > a.reshape(5, -1)[:, 1] if dtype != "bool" else np.array([1, 0, 1, 1, 0], bool)
    _same(x[core.tensor(mask)].numpy(), a[mask])
    assert calls["index"]


_SEVERAL = {  # key builders over (i, j, l): index tensors on adjacent dims, broadcasting, negative values
    "first two": lambda i, j, l: (i, j),
    "last two": lambda i, j, l: (slice(None), j, l),
    "all three": lambda i, j, l: (i, j, l),
    "broadcast": lambda i, j, l: (i.reshape(-1, 1), j.reshape(1, -1)),
    "broadcast 2-D": lambda i, j, l: (slice(None), j.reshape(3, 1), l.reshape(1, 3)),
}


def _several(rng, shape):
    """Three int64 indices for each dim of ``shape`` (i, j, l: dims 0, 1, 2), negative ones among them."""
    return [rng.integers(-n, n, 3) for n in shape[:3]]


@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
def test_index_with_several_adjacent_index_tensors(calls, dtype):
    """Rows of 16 elements or more picked by several index tensors (MULTI_INDEX_MIN_ROW)."""
    x = core.tensor(_values(dtype, (4, 5, 6, 16), 1))
    a = x.numpy()
    rng = np.random.default_rng(3)
    for view, arr in ((x, a), (x.permute(2, 0, 1, 3), a.transpose(2, 0, 1, 3)), (x[1:, ::2], a[1:, ::2])):
        for name, key in _SEVERAL.items():
            raw = _several(rng, arr.shape)
            tensors = [core.tensor(r, dtype=core.int64) for r in raw]
            _same(view[key(*tensors)].numpy(), arr[key(*raw)], name)
    mask = np.random.default_rng(4).random((4, 5)) < 0.5
    _same(x[core.tensor(mask)].numpy(), a[mask])
    assert calls["index"]


def test_index_with_index_tensors_apart_or_picking_points_runs_numpy(calls):
    x = core.arange(2 * 3 * 16).reshape(2, 3, 16)
    i, j = core.tensor([0, 1, 1]), core.tensor([2, 0, 1])
    _same(x[i, :, j].numpy(), x.numpy()[i.numpy(), :, j.numpy()])  # apart: the index dims go first
    _same(x[:, i, j].numpy(), x.numpy()[:, i.numpy(), j.numpy()])  # single elements: NumPy's fancy indexing
    assert not calls["index"]
    _same(x[i, j].numpy(), x.numpy()[i.numpy(), j.numpy()])  # rows of 16
    assert calls["index"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_several_index_tensors(calls, dtype, accumulate):
    """Duplicate targets (the same (i, j) twice) keep NumPy's order: the last assignment wins, sums in order."""
    rng = np.random.default_rng(5)
    for name, key in _SEVERAL.items():
        start = _values(dtype, (4, 5, 6, 16), 6)
        raw = _several(rng, start.shape)
        raw[0][2], raw[1][2] = raw[0][0], raw[1][0]  # a duplicate target
        tensors = [core.tensor(r, dtype=core.int64) for r in raw]
        indices = key(*tensors)
        shape = start[key(*raw)].shape
        values = core.tensor(_values(dtype, shape, 7))
        full = tuple(i if i is not None and not isinstance(i, slice) else None for i in indices)
        got, ref = core.tensor(start.copy()), core.tensor(start.copy())
        get_operator("index_put_")(got, full, values, accumulate)
        numpy_reference("index_put_", ref, full, values, accumulate)
        _same(got.numpy(), ref.numpy(), name)
    x = core.tensor(_values(dtype, (4, 5), 8))
    mask = core.tensor(np.random.default_rng(9).random((4, 5)) < 0.5)
    expected = x.numpy().copy()
    expected[mask.numpy()] = expected[0, 0]
    x[mask] = core.tensor(expected[0, 0])
    _same(x.numpy(), expected)
    assert calls["index_put"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_duplicates_matches_numpy(calls, dtype, accumulate):
    rng = np.random.default_rng(3)
    for k in range(3):
        start = _values(dtype, (4, 5, 6), 4)
        shape = list(start.shape)
        idx = core.tensor(rng.integers(-shape[k], shape[k], 9), dtype=core.int64)  # duplicates
        shape[k] = 9
        for values in (core.tensor(_values(dtype, shape, 5)),
                       core.tensor(_values(dtype, shape[::-1], 6)).permute(2, 1, 0),
                       core.tensor(_values(dtype, shape[-1:], 7))):
            indices = (None,) * k + (idx,)
            got, ref = core.tensor(start.copy()), core.tensor(start.copy())
            get_operator("index_put_")(got, indices, values, accumulate)
            numpy_reference("index_put_", ref, indices, values, accumulate)
            _same(got.numpy(), ref.numpy())
    assert calls["index_put"]


def test_index_put_through_setitem(calls):
    x = core.zeros(6, 3)
    x[core.tensor([0, 2, 2])] = core.tensor([1.0, 2.0, 3.0])
    expected = np.zeros((6, 3), np.float32)
    expected[[0, 2, 2]] = [1.0, 2.0, 3.0]
    _same(x.numpy(), expected)
    x.index_put_((core.tensor([5, 5, 5, 0]),), core.tensor(0.1), accumulate=True)
    np.add.at(expected, ([5, 5, 5, 0],), np.float32(0.1))
    _same(x.numpy(), expected)
    x[x > 1.5] = -1.0
    expected[expected > 1.5] = -1.0
    _same(x.numpy(), expected)
    assert calls["index_put"]


# -- nonzero ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + ["float16", "bfloat16"])
def test_nonzero_over_layouts(calls, dtype):
    rng = np.random.default_rng(8)
    data = rng.integers(0, 3, (6, 7, 5)).astype("float32") - 1
    if "float" in dtype:
        data.reshape(-1)[:4] = [np.nan, -0.0, np.inf, -np.nan]
    x = core.tensor(data, dtype=getattr(core, dtype))
    for view in (x, x.permute(2, 0, 1), x[1::2, ::3, 1:], x[:, 0], x[0, 0, 0].reshape(1)):
        _same(core.nonzero(view).numpy(), np.argwhere(view.numpy()))
    assert calls["nonzero_count"] and calls["nonzero_write"]


def test_nonzero_over_many_chunks(calls):
    """More elements than one counting chunk: each chunk's rows land after the previous chunks' rows."""
    from core_cpu_c.kernels.indexing import NONZERO_CHUNK

    mask = np.random.default_rng(9).random((3, NONZERO_CHUNK + 77)) < 0.3
    mask[1] = False  # a whole chunk without one
    x = core.tensor(mask)
    _same(core.nonzero(x).numpy(), np.argwhere(mask))
    _same(core.nonzero(x.t()).numpy(), np.argwhere(mask.T))
    assert core.nonzero(core.zeros(NONZERO_CHUNK * 2)).shape == (0, 1)


def test_thresholds_cover_every_movement_op(force_c):
    from core_cpu_c.kernels import creation, indexing, ranges, shape, thresholds
    from core_cpu_c.plugin import _STATE

    movement_ops = creation.OPS + ranges.OPS + shape.OPS + indexing.OPS
    sized = [op for op in movement_ops if op != "nonzero"]
    key = backend_key("cpu")
    for op in sized:
        assert get_operator(op).tiers[key.bit][0] == 0  # force_c moved every threshold
    cpu_c.set_min_numel(123)  # force_c puts 0 back
    assert {op: n for op, n in thresholds(_STATE["context"]).items() if op in movement_ops} == dict.fromkeys(sized, 123)
    assert all(get_operator(op).tiers[key.bit][0] == 123 for op in sized)


def test_nonzero_checks_its_input_size(force_c, calls):
    cpu_c.set_min_numel(100)
    _same(core.nonzero(core.ones(10)).numpy(), np.argwhere(np.ones(10)))
    assert not calls["nonzero_count"]
    _same(core.nonzero(core.ones(100)).numpy(), np.argwhere(np.ones(100)))
    assert calls["nonzero_count"]


def test_large_inputs_take_the_threaded_paths_and_match(calls):
    """Sizes past the OpenMP thresholds (32768 elements): same bits as the reference."""
    rng = np.random.default_rng(10)
    big = core.tensor(_values("float32", (700, 400), 11, wild=True))
    for dst_dtype in ("float32", "int32", "float64"):
        got, ref = core.empty((400, 700), dtype=getattr(core, dst_dtype)), core.empty(
            (400, 700), dtype=getattr(core, dst_dtype))
        with np.errstate(all="ignore"):
            got.copy_(big.t())
            numpy_reference("copy_", ref, big.t())
        _same(got.numpy(), ref.numpy(), dst_dtype)
    flat = core.empty(300000, dtype=core.float32)
    flat.fill_(2.5)
    assert (flat.numpy() == 2.5).all()
    index = core.tensor(rng.integers(0, 200, (200, 300)), dtype=core.int64)
    src = core.tensor(_values("float32", (200, 300), 12))
    for dim in (0, 1):
        idx = index if dim == 0 else index % 300
        start = _values("float32", (200, 300), 13)
        got, ref = core.tensor(start.copy()), core.tensor(start.copy())
        get_operator("scatter_")(got, dim, idx, src, "sum", True)
        numpy_reference("scatter_", ref, dim, idx, src, "sum", True)
        _same(got.numpy(), ref.numpy())
        _same(core.gather(ref, dim, idx).numpy(), numpy_reference("gather", ref, dim, idx).numpy())
    rows = core.tensor(rng.integers(-200, 200, 500), dtype=core.int64)  # duplicates
    table = core.tensor(_values("float64", (200, 300), 14))
    _same(table[rows].numpy(), table.numpy()[rows.numpy()])
    points = core.tensor(rng.integers(-60000, 60000, 40000), dtype=core.int64)
    _same(table.reshape(-1)[points].numpy(), table.numpy().reshape(-1)[points.numpy()])
    _same(table.t()[:, rows].numpy(), table.numpy().T[:, rows.numpy()])
    values = core.tensor(_values("float64", (500, 300), 15))
    got, ref = table.clone(), table.clone()
    get_operator("index_put_")(got, (rows,), values, True)
    numpy_reference("index_put_", ref, (rows,), values, True)
    _same(got.numpy(), ref.numpy())
    assert all(calls[name] for name in ("copy_bytes", "copy_cast", "scatter", "gather", "index", "index_put"))
