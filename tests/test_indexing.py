"""Indexing: views from basic indices, copies from advanced ones (vs NumPy), setitem, gather/scatter, index_*,
masked_*, nonzero, take, and the errors for out-of-range and mistyped indices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.autograd import gradcheck
from core.testing import assert_close, sample_array, with_layout

DTYPES = ["float32", "float64", "int64", "int32", "bool", "float16", "bfloat16", "uint8"]


_array = sample_array
_make = with_layout


def _torch_order(index) -> tuple:
    """Split ``index`` as PyTorch applies it: integers first (as selects), then the rest (NumPy's rules)."""
    index = index if isinstance(index, tuple) else (index,)
    first, rest = [], []
    for entry in index:
        if isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
            first.append(entry)
        elif entry is None:
            rest.append(entry)
        elif isinstance(entry, np.ndarray) and entry.dtype == bool:
            first.extend([slice(None)] * entry.ndim)
            rest.append(entry)
        else:
            first.append(slice(None) if entry is not Ellipsis else Ellipsis)
            rest.append(entry)
    return tuple(first), tuple(rest)


def _numpy_getitem(a: np.ndarray, index) -> np.ndarray:
    first, rest = _torch_order(index)
    return np.asarray(a[first][rest])


def _core_index(index, device):
    """The same index for core: arrays become tensors (lists of ints stay lists half the time)."""
    def convert(entry):
        if isinstance(entry, np.ndarray):
            return core.tensor(entry, device=device)
        return entry
    return tuple(convert(e) for e in index) if isinstance(index, tuple) else convert(index)


# -- basic indexing returns views -----------------------------------------------------------------

BASIC = [1, -1, slice(1, 3), (slice(None), 2), (Ellipsis, 1), (None, 0), (slice(None, None, 2), slice(1, None, 3)),
         (0, None, slice(1, 3)), (), Ellipsis, (slice(5, 9),), (slice(None), slice(3, 1)), (-2, -3, None),
         (slice(-2, None), Ellipsis, None, slice(None, None, 4)), (slice(1, 2), 1, slice(None))]


@pytest.mark.parametrize("index", BASIC, ids=repr)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_basic_index_is_a_view_with_numpy_geometry(index, layout, device):
    a = _array((3, 4, 5), "float64")
    x = _make(a, device, layout)
    host = x.numpy() if x.device.type == "cpu" else None
    y = x[index]
    assert y.untyped_storage() is x.untyped_storage()
    assert_close(y, a[index])
    item = a.itemsize
    assert y.storage_offset() - x.storage_offset() == (y.data_ptr() - x.data_ptr()) // item
    if host is not None:  # NumPy's view of the same memory has the same strides (where they matter) and start
        expected = host[index]
        assert [st for st, n in zip(y.stride(), y.shape) if n > 1] == \
            [st // item for st, n in zip(expected.strides, expected.shape) if n > 1]
        assert y.data_ptr() == expected.__array_interface__["data"][0] or expected.size == 0


def test_basic_index_geometry_matches_torch(device):
    torch = pytest.importorskip("torch")
    a = _array((3, 4, 5), "float32")
    x, t = core.tensor(a, device=device), torch.tensor(a)
    for index in BASIC + [True, False, (None, True, 1)]:
        y, z = x[index], t[index]
        assert tuple(y.shape) == tuple(z.shape), index
        if not isinstance(index, bool) and index != (None, True, 1):
            assert y.stride() == z.stride() and y.storage_offset() == z.storage_offset(), index


def test_zero_d_integer_tensor_and_python_bools_are_views(device):
    x = core.tensor(np.arange(12).reshape(3, 4), device=device)
    y = x[core.tensor(1, device=device)]
    assert y.untyped_storage() is x.untyped_storage() and y.tolist() == [4, 5, 6, 7]
    assert x[True].shape == (1, 3, 4) and x[True].untyped_storage() is x.untyped_storage()
    assert x[False].shape == (0, 3, 4)
    assert x[None, ..., True, None].shape == (1, 3, 4, 1, 1)
    assert x[np.int64(2), np.int32(-1)].item() == 11


def test_writes_through_basic_views(device):
    a = np.zeros((4, 5), np.float32)
    x = core.tensor(a, device=device)
    row = x[1]
    row[2:4] = 7.0
    a[1, 2:4] = 7.0
    x[::2, 1] = core.tensor([1.0, 2.0], device=device)
    a[::2, 1] = [1.0, 2.0]
    x[..., -1] = core.tensor([[3.0, 4.0, 5.0, 6.0]], device=device)  # a leading size-1 dim is dropped
    a[..., -1] = [3.0, 4.0, 5.0, 6.0]
    x[3] = 9  # int into float: cast
    a[3] = 9
    x[0, 0] = core.tensor(2.5, dtype=core.float64, device=device)
    a[0, 0] = 2.5
    x[None, 2, 1:3] = [8, 8]
    a[2, 1:3] = 8
    x[True, 0, 4] = -1
    a[0, 4] = -1
    x[False] = 100  # selects nothing
    assert_close(x, a)
    t = x.T
    t[1] = 0.5  # through a transposed view
    a.T[1] = 0.5
    assert_close(x, a)
    v = x._version
    x[1, 1] = 3
    assert x._version > v


def test_setitem_value_that_overlaps_the_target(device):
    a = np.arange(10.0, dtype=np.float32)
    x = core.tensor(a, device=device)
    x[1:] = x[:-1].clone()
    a[1:] = a[:-1].copy()
    assert_close(x, a)
    x[core.tensor([0, 1, 2], device=device)] = x[3:6]
    a[[0, 1, 2]] = a[3:6]
    assert_close(x, a)


# -- advanced indexing: copies that match NumPy ---------------------------------------------------

ADVANCED = [
    [0, 2], [[0, 1], [2, 0]], [-1, 0, -3], (slice(None), [1, 3]), ([0, 2], [1, 3]), ([0, 2], slice(None), [1, 4]),
    ([[0], [2]], [1, 3]), (Ellipsis, [0, 0, 4]), (1, [0, 3]), (slice(None), 1, [0, 4]), ([0, 1], None, [0, 1]),
    (slice(None), None, [1, 2], [[0], [1]]), (None, [2, 1], Ellipsis), (slice(0, 2), [1, 2], slice(None, None, 2)),
    ([], ), (slice(None), [], slice(None)), ([1, 2], 0), (0, slice(None), [0, 1]), ([0, 1], 0, [0, 1]),
]


def _as_index(index):
    if isinstance(index, list):
        return np.array(index, dtype=np.int64)
    if isinstance(index, tuple):
        return tuple(np.array(e, dtype=np.int64) if isinstance(e, list) else e for e in index)
    return index


@pytest.mark.parametrize("index", ADVANCED, ids=repr)
def test_advanced_index_matches_numpy_with_torch_rules(index, device):
    a = _array((3, 4, 5), "float32")
    x = core.tensor(a, device=device)
    expected = _numpy_getitem(a, _as_index(index))
    assert_close(x[_as_index(index)], expected)
    y = x[_core_index(_as_index(index), device)]
    assert_close(y, expected)
    assert y.untyped_storage() is not x.untyped_storage()


def test_advanced_index_shapes_match_torch(device):
    torch = pytest.importorskip("torch")
    a = _array((3, 4, 5), "float32")
    x, t = core.tensor(a, device=device), torch.tensor(a)
    for index in ADVANCED:
        idx = _as_index(index)
        tidx = tuple(torch.tensor(e) if isinstance(e, np.ndarray) else e for e in idx) if isinstance(idx, tuple) \
            else torch.tensor(idx)
        np.testing.assert_array_equal(x[_core_index(idx, device)].cpu().numpy(), t[tidx].numpy(), err_msg=repr(index))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_advanced_index_dtypes_and_layouts(dtype, layout, device):
    a = _array((4, 6), dtype)
    x = _make(a, device, layout)
    rows = np.array([3, 0, -1])
    mask = a[:, 0] > a[:, 1] if dtype != "bool" else a[:, 0]
    assert_close(x[core.tensor(rows, device=device)], a[rows])
    assert_close(x[:, core.tensor(rows, device=device)], a[:, rows])
    assert_close(x[core.tensor(mask, device=device)], a[mask])
    assert_close(x[core.tensor(np.array([[0, 1]], dtype=np.int32), device=device), 2], a[[[0, 1]], 2])
    assert x[core.tensor(rows, device=device)].dtype.name == dtype


def test_boolean_masks(device):
    a = _array((3, 4, 2), "float32")
    x = core.tensor(a, device=device)
    m2 = a[..., 0] > 0
    assert_close(x[core.tensor(m2, device=device)], a[m2])
    m1 = np.array([True, False, True, True])
    assert_close(x[:, core.tensor(m1, device=device)], a[:, m1])
    assert_close(x[:, [True, False, True, True]], a[:, m1])
    assert_close(x[x > 0], a[a > 0])
    assert_close(x[core.tensor(True, device=device)], a[None])
    assert x[core.tensor(False, device=device)].shape == (0, 3, 4, 2)
    assert_close(x[1, core.tensor(True, device=device)], a[1][None])
    assert_close(x[[0, 2], True], a[[0, 2], True])  # a Python bool among tensor indices is an index too
    with pytest.warns(UserWarning, match="uint8"):
        assert_close(x[core.tensor(m2.astype(np.uint8), device=device)], a[m2])
    assert_close(x[core.tensor(np.zeros((3, 4), bool), device=device)], np.zeros((0, 2), np.float32))


def test_zero_d_and_empty_tensors(device):
    s = core.tensor(5.0, device=device)
    assert s[None].shape == (1,) and s[...].shape == () and s[...].untyped_storage() is s.untyped_storage()
    assert_close(s[core.tensor(True, device=device)], np.array([5.0], np.float32))
    e = core.zeros(0, 3, device=device)
    assert e[:, 1].shape == (0,)
    assert e[core.tensor([], dtype=core.int64, device=device)].shape == (0, 3)
    assert e[[]].shape == (0, 3) and e[[]].dtype is core.float32
    assert e[:, [0, 2]].shape == (0, 2)
    with pytest.raises(IndexError, match="out of bounds for dimension with size 0"):
        e[core.tensor([0], device=device)]


def test_non_tuple_sequence_is_a_tuple_with_a_warning(device):
    a = _array((3, 4), "float32")
    x = core.tensor(a, device=device)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        assert_close(x[[[0, 1], [1, 2]]], a[[0, 1], [1, 2]])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        assert_close(x[[slice(None), 1]], a[:, 1])


def _index_entries(shape):
    """A strategy for indices into ``shape``: ints, slices, None, one Ellipsis, int arrays and bool masks."""
    @st.composite
    def index(draw):
        entries, dim = [], 0
        array_shape = draw(st.sampled_from([(2,), (1,), (0,), (2, 1), (1, 3)]))
        ellipsis = False
        while dim < len(shape) and draw(st.booleans()):
            size = shape[dim]
            kinds = ["slice", "none", "array"] + (["int"] if size else []) + (["ellipsis"] if not ellipsis else []) \
                + ["mask"]
            kind = draw(st.sampled_from(kinds))
            if kind == "int":
                entries.append(draw(st.integers(-size, size - 1)))
                dim += 1
            elif kind == "slice":
                start = draw(st.none() | st.integers(-5, 5))
                stop = draw(st.none() | st.integers(-5, 5))
                step = draw(st.none() | st.integers(1, 3))
                entries.append(slice(start, stop, step))
                dim += 1
            elif kind == "none":
                entries.append(None)
            elif kind == "ellipsis":
                entries.append(Ellipsis)
                ellipsis = True
                dim = len(shape)  # the rest of the index only adds dims
            elif kind == "array":
                count = int(np.prod(array_shape))
                if size == 0 and count:
                    continue
                values = draw(st.lists(st.integers(-size, size - 1), min_size=count, max_size=count)) \
                    if size else []
                entries.append(np.array(values, dtype=np.int64).reshape(array_shape))
                dim += 1
            else:
                k = draw(st.integers(1, len(shape) - dim))
                bits = draw(st.lists(st.booleans(), min_size=int(np.prod(shape[dim:dim + k])),
                                          max_size=int(np.prod(shape[dim:dim + k]))))
                entries.append(np.array(bits, dtype=bool).reshape(shape[dim:dim + k]))
                dim += k
        return tuple(entries)
    return index()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_drawn_indices_match_numpy(data, device):
    shape = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=4).map(tuple), label="shape")
    index = data.draw(_index_entries(shape), label="index")
    a = _array(shape, "int64")
    arrays = [e for e in index if isinstance(e, np.ndarray)]
    try:
        expected = _numpy_getitem(a, index)
    except (IndexError, ValueError):  # index arrays that do not broadcast together
        with pytest.raises(IndexError):
            core.tensor(a, device=device)[_core_index(index, device)]
        return
    x = core.tensor(a, device=device)
    y = x[_core_index(index, device)]
    assert_close(y, expected)
    if not arrays:
        assert y.untyped_storage() is x.untyped_storage()
    # the same index assigns what NumPy assigns (duplicates: the last write wins in both)
    value = np.arange(expected.size, dtype=np.int64).reshape(expected.shape) + 1000
    first, rest = _torch_order(index)
    target = a.copy()
    target[first if any(e is Ellipsis for e in first) else first + (Ellipsis,)][rest] = value
    x[_core_index(index, device)] = core.tensor(value, device=device)
    assert_close(x, target)


# -- setitem with tensor indices ------------------------------------------------------------------

def test_setitem_advanced(device):
    a = np.zeros((3, 4), np.float32)
    x = core.tensor(a, device=device)
    x[[0, 2], [1, 3]] = core.tensor([1.0, 2.0], device=device)
    a[[0, 2], [1, 3]] = [1.0, 2.0]
    x[:, [0]] = 5  # scalar broadcast
    a[:, [0]] = 5
    x[x > 4] = -x[x > 4]
    a[a > 4] = -a[a > 4]
    x[core.tensor([True, False, True], device=device), 2] = core.tensor([7.0, 8.0], device=device)
    a[[0, 2], 2] = [7, 8]
    x[1, [-1]] = [[[9.0]]]
    a[1, [-1]] = 9.0
    assert_close(x, a)
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape \\[3\\] cannot be broadcast"):
        x[[0, 1]] = core.ones(3, device=device)


def test_index_put(device):
    a = np.zeros((3, 4), np.float32)
    x = core.tensor(a, device=device)
    rows = core.tensor([0, 0, 2], device=device)
    cols = core.tensor([1, 1, -1], device=device)
    vals = core.tensor([1.0, 2.0, 3.0], device=device)
    y = core.index_put(x, (rows, cols), vals, accumulate=True)
    expected = a.copy()
    np.add.at(expected, ([0, 0, 2], [1, 1, -1]), [1.0, 2.0, 3.0])
    assert_close(y, expected)
    assert_close(x, a)  # out of place
    assert x.index_put_((rows,), core.tensor(1.0, device=device)) is x
    a[[0, 2]] = 1.0
    assert_close(x, a)
    mask = core.tensor(a > 0, device=device)
    x.index_put_((mask,), core.tensor(4.0, device=device), accumulate=True)
    a[a > 0] += 4
    assert_close(x, a)
    h = core.zeros(4, dtype=core.bfloat16, device=device)
    h.index_put_((core.tensor([1, 1, 1], device=device),), core.tensor([0.5, 0.25, 0.25], dtype=core.bfloat16,
                                                                       device=device), accumulate=True)
    assert h.tolist() == [0.0, 1.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Float "
                                           "for the destination and Double for the source"):
        x.index_put_((rows,), core.tensor(1.0, dtype=core.float64, device=device))
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2 \\(got 3\\)"):
        x.index_put_((rows, rows, rows), vals)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.index_put_((core.tensor([3], device=device),), vals[:1])


# -- errors ---------------------------------------------------------------------------------------

def test_index_errors(device):
    x = core.zeros(3, 4, device=device)
    cases = [
        (5, IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
        ((slice(None), -5), IndexError, "index -5 is out of bounds for dimension 1 with size 4"),
        (core.tensor([5], device=device), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
        ((slice(None), core.tensor([-5], device=device)), IndexError,  # PyTorch counts index tensors here
         "index -5 is out of bounds for dimension 0 with size 4"),
        ((0, [4]), IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
        (core.tensor([1.0], device=device), IndexError,
         "tensors used as indices must be long, int, byte or bool tensors"),
        (core.tensor([1], dtype=core.int16, device=device), IndexError,
         "tensors used as indices must be long, int, byte or bool tensors"),
        ([0.5], IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
        (1.5, IndexError, "only integers, slices"),
        ("a", IndexError, "only integers, slices"),
        ((0, 0, 0), IndexError, "too many indices for tensor of dimension 2"),
        ((Ellipsis, Ellipsis), IndexError, "an index can only have a single ellipsis"),
        (slice(None, None, -1), ValueError, "step must be greater than zero"),
        (core.ones(3, 5, dtype=core.bool, device=device), IndexError,
         ("The shape of the mask \\[3, 5\\] at index 1 does not match the shape of the indexed tensor \\[3, 4\\] "
          "at index 1")),
        ((core.tensor([0, 1], device=device), core.tensor([0, 1, 2], device=device)), IndexError,
         "shape mismatch: indexing tensors could not be broadcast together with shapes \\[2\\], \\[3\\]"),
    ]
    for index, exc, message in cases:
        with pytest.raises(exc, match=message):
            x[index]
        with pytest.raises(exc, match=message):
            x[index] = 1.0
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        core.tensor(1.0, device=device)[0]


def test_messages_match_torch(device):
    torch = pytest.importorskip("torch")
    x, t = core.zeros(3, 4, device=device), torch.zeros(3, 4)
    for index in [5, (slice(None), -5), ([0], [7]), (slice(None), [4]), (slice(None), [0], [-9])]:
        with pytest.raises(IndexError) as ours:
            x[index]
        with pytest.raises(IndexError) as theirs:
            t[index]
        assert str(ours.value) == str(theirs.value)


# -- gather / scatter -----------------------------------------------------------------------------

def _np_gather(a, dim, idx):
    a = a[tuple(slice(0, n) if d != dim else slice(None) for d, n in enumerate(idx.shape))]
    return np.take_along_axis(a, idx, axis=dim)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather(dtype, device):
    a = _array((4, 5), dtype)
    x = core.tensor(a, device=device)
    idx = np.array([[0, 3, 1], [2, 2, 0]])
    for dim in (0, 1, -1):
        assert_close(core.gather(x, dim, core.tensor(idx, device=device)), _np_gather(a, dim % 2, idx))
    assert_close(x.T.gather(1, core.tensor(idx, device=device)), _np_gather(a.T, 1, idx))  # non-contiguous
    assert_close(x.gather(0, core.zeros(0, 2, dtype=core.int64, device=device)), np.zeros((0, 2), a.dtype))
    s = core.tensor(a[0, 0], device=device)
    assert_close(core.gather(s, 0, core.tensor(0, device=device)), a[0, 0])


def test_gather_errors(device):
    x = core.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        core.gather(x, 0, core.tensor([[5]], device=device))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 3"):
        core.gather(x, 0, core.tensor([[-1]], device=device))
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        core.gather(x, 0, core.tensor([[1]], dtype=core.int32, device=device))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions as input tensor"):
        core.gather(x, 0, core.tensor([1], device=device))
    with pytest.raises(RuntimeError, match="Size does not match at dimension 1 expected index \\[2, 5\\] to be no "
                                           "larger than self \\[3, 4\\] apart from dimension 0"):
        core.gather(x, 0, core.zeros(2, 5, dtype=core.int64, device=device))


def _np_scatter(a, dim, idx, src, fn=None):
    out = a.copy()
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[dim] = idx[pos]
        target = tuple(target)
        out[target] = src[pos] if fn is None else fn(out[target], src[pos])
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "float16", "bfloat16"])
def test_scatter_family(dtype, device):
    a = _array((3, 5), dtype) % 5  # small values: products stay exact in half precision
    src = _array((2, 5), dtype, seed=1) % 5
    idx = np.array([[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]])  # unique per column: assignment is deterministic
    x, s, i = (core.tensor(v, device=device) for v in (a, src, idx))
    assert_close(core.scatter(x, 0, i, s), _np_scatter(a, 0, idx, src))
    assert_close(x.scatter(0, i, 2), _np_scatter(a, 0, idx, np.full(idx.shape, 2, a.dtype)))
    assert_close(x.scatter(0, i, value=3), _np_scatter(a, 0, idx, np.full(idx.shape, 3, a.dtype)))
    dup = np.array([[0, 0, 2, 2, 1], [0, 0, 2, 1, 1]])
    d = core.tensor(dup, device=device)
    assert_close(core.scatter_add(x, 0, d, s), _np_scatter(a, 0, dup, src, lambda u, v: u + v))
    assert_close(x.scatter(0, d, s, reduce="multiply"), _np_scatter(a, 0, dup, src, lambda u, v: u * v))
    assert_close(x.scatter(0, d, s, reduce="add"), _np_scatter(a, 0, dup, src, lambda u, v: u + v))
    assert_close(x.scatter_reduce(0, d, s, "amax"), _np_scatter(a, 0, dup, src, max))
    assert_close(x.scatter_reduce(0, d, s, "amin"), _np_scatter(a, 0, dup, src, min))
    y = x.clone()
    assert y.scatter_add_(1, d, s) is y
    assert_close(y, _np_scatter(a, 1, dup, src, lambda u, v: u + v))
    assert_close(x, a)  # out-of-place variants left x alone


def test_scatter_reduce_modes_match_torch(device):
    torch = pytest.importorskip("torch")
    a = _array((4, 3), "float64")
    src = _array((5, 3), "float64", seed=3)
    idx = np.random.default_rng(0).integers(0, 4, size=(5, 3))
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            ours = core.tensor(a, device=device).scatter_reduce(0, core.tensor(idx, device=device),
                                                                core.tensor(src, device=device), reduce,
                                                                include_self=include_self)
            theirs = torch.tensor(a).scatter_reduce(0, torch.tensor(idx), torch.tensor(src), reduce,
                                                    include_self=include_self)
            assert_close(ours, theirs.numpy(), msg=f"{reduce} {include_self}")
    ints = core.tensor([0, 1, 2, 3, 4, 5], device=device).scatter_reduce(
        0, core.tensor([1, 1, 2], device=device), core.tensor([5, 6, 7], device=device), "mean")
    assert ints.tolist() == [0, 4, 4, 3, 4, 5]


def test_scatter_errors(device):
    x = core.zeros(3, 4, device=device)
    i = core.tensor([[1]], device=device)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.scatter_(0, core.tensor([[5]], device=device), 1.0)
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter_(0, i, core.ones(1, 1, dtype=core.float64, device=device))
    with pytest.raises(RuntimeError, match="Expected index \\[1, 2\\] to be no larger than self \\[3, 4\\] apart "
                                           "from dimension 0 and to be no larger size than src \\[1, 1\\]"):
        x.scatter_(0, core.tensor([[1, 2]], device=device), core.ones(1, 1, device=device))
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        x.scatter_(0, i, core.ones(1, 1, device=device), reduce="foo")
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got foo"):
        x.scatter_reduce_(0, i, core.ones(1, 1, device=device), "foo")


def test_take_along_dim(device):
    a = _array((3, 4), "float32")
    x = core.tensor(a, device=device)
    idx = np.argsort(a, axis=1)
    assert_close(core.take_along_dim(x, core.tensor(idx, device=device), 1), np.take_along_axis(a, idx, 1))
    assert_close(x.take_along_dim(core.tensor([[0]], device=device), 1), a[:, [0]])  # indices broadcast
    assert_close(core.take_along_dim(x, core.tensor([0, 11], device=device)), a.reshape(-1)[[0, 11]])
    with pytest.raises(RuntimeError, match="dtype of indices should be Long but got Int"):
        core.take_along_dim(x, core.tensor([[0]], dtype=core.int32, device=device), 1)
    with pytest.raises(RuntimeError, match="should have the same number of dimensions"):
        core.take_along_dim(x, core.tensor([0], device=device), 1)


# -- index_select / index_add / index_copy / index_fill -------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_index_select(dtype, layout, device):
    a = _array((4, 6), dtype)
    x = _make(a, device, layout)
    for dim in (0, 1, -1):
        for idx in ([3, 0, 3], [], [1]):
            i = core.tensor(np.array(idx, np.int64), device=device)
            assert_close(core.index_select(x, dim, i), np.take(a, idx, axis=dim))
    assert_close(x.index_select(0, core.tensor([2], dtype=core.int32, device=device)), a[[2]])
    assert_close(x.index_select(1, core.tensor(1, device=device)), a[:, [1]])
    s = core.tensor(a[0, 0], device=device)
    assert_close(s.index_select(0, core.tensor([0], device=device)), a[0, 0])
    one = core.tensor(5.0, device=device)
    assert core.index_add(one, 0, core.tensor([0], device=device), core.tensor(1.0, device=device)).tolist() == 6.0
    assert core.index_fill(one, 0, core.tensor([0], device=device), 1.0).tolist() == 1.0
    assert core.index_copy(one, 0, core.tensor([0], device=device), core.tensor(2.0, device=device)).tolist() == 2.0


def test_index_select_errors(device):
    x = core.zeros(3, 4, device=device)
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, core.tensor([3], device=device))
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, core.tensor([-1], device=device))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(0, core.tensor([[1]], device=device))
    with pytest.raises(RuntimeError, match="Expected dtype int64 or int32 for index"):
        x.index_select(0, core.tensor([1.0], device=device))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "float16"])
def test_index_add_copy_fill(dtype, device):
    a = _array((4, 3), dtype)
    src = _array((3, 3), dtype, seed=2)
    x, s = core.tensor(a, device=device), core.tensor(src, device=device)
    idx = np.array([0, 2, 0])
    i = core.tensor(idx, device=device)
    expected = a.copy()
    np.add.at(expected, idx, src * 2)
    assert_close(core.index_add(x, 0, i, s, alpha=2), expected)
    src2 = _array((4, 3), dtype, seed=3)
    expected = a.T.copy()
    np.add.at(expected, idx, src2.T)
    assert_close(x.T.index_add(0, i, core.tensor(src2, device=device).T), expected)  # non-contiguous operands
    uniq = np.array([3, 0, 1])
    u = core.tensor(uniq, device=device)
    expected = a.copy()
    expected[uniq] = src
    assert_close(core.index_copy(x, 0, u, s), expected)
    expected = a.copy()
    expected[:, [2, 0]] = 7
    assert_close(x.index_fill(1, core.tensor([-1, 0], device=device), 7), expected)
    assert_close(x.index_fill(1, core.tensor([2, 0], device=device), core.tensor(7, device=device)), expected)
    y = x.clone()
    assert y.index_add_(1, core.tensor([1], device=device), core.ones(4, 1, dtype=x.dtype, device=device)) is y
    assert y.index_copy_(0, core.tensor([0], device=device), core.zeros(1, 3, dtype=x.dtype, device=device)) is y
    assert y.index_fill_(0, core.tensor([1], device=device), 0) is y
    assert_close(x, a)


def test_index_add_copy_fill_errors(device):
    x = core.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.index_add_(0, core.tensor([3], device=device), core.ones(1, 4, device=device))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 3"):
        x.index_add_(0, core.tensor([-1], device=device), core.ones(1, 4, device=device))
    with pytest.raises(RuntimeError, match="Number of indices \\(1\\) should be equal to source.size\\(dim\\)"):
        x.index_add_(0, core.tensor([1], device=device), core.ones(2, 4, device=device))
    with pytest.raises(RuntimeError, match="self \\(Float\\) and source \\(Double\\) must have the same scalar type"):
        x.index_add_(0, core.tensor([1], device=device), core.ones(1, 4, dtype=core.float64, device=device))
    with pytest.raises(IndexError, match="index_copy_\\(\\): index -1 is out of bounds for dimension 0 with size 3"):
        x.index_copy_(0, core.tensor([-1], device=device), core.ones(1, 4, device=device))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        x.index_copy_(0, core.tensor([1.0], device=device), core.ones(1, 4, device=device))
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        x.index_fill_(0, core.tensor([-4], device=device), 1)
    with pytest.raises(IndexError, match="Expected dtype int64 for index"):
        x.index_fill_(0, core.tensor([1.0], device=device), 1)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x.index_fill_(0, core.tensor([1], device=device), core.ones(2, device=device))


# -- masks ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_ops(dtype, device):
    a = _array((3, 4), dtype)
    m = _array((3, 4), "bool", seed=5)
    x, mask = core.tensor(a, device=device), core.tensor(m, device=device)
    value = True if dtype == "bool" else 7
    assert_close(core.masked_fill(x, mask, value), np.where(m, np.array(value, a.dtype), a))
    assert_close(x.T.masked_fill(mask.T, value), np.where(m, np.array(value, a.dtype), a).T)
    assert_close(core.masked_select(x, mask), a[m])
    row = m[0]
    assert_close(core.masked_select(x, core.tensor(row, device=device)), a[np.broadcast_to(row, (3, 4))])
    src = _array((12,), dtype, seed=9)
    expected = a.copy()
    expected[m] = src[:m.sum()]
    assert_close(core.masked_scatter(x, mask, core.tensor(src, device=device)), expected)
    y = x.clone()
    assert y.masked_fill_(mask, value) is y
    assert_close(y, np.where(m, np.array(value, a.dtype), a))


def test_masked_fill_broadcast_casts_and_errors(device):
    x = core.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    assert core.masked_fill(x, core.tensor([True, False, True], device=device), 1.5).tolist() == [[1, 2, 1],
                                                                                                 [1, 5, 1]]
    big = core.masked_fill(x, core.ones(2, 2, 3, dtype=core.bool, device=device), 0)
    assert big.shape == (2, 2, 3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.masked_fill_(core.ones(2, 2, 3, dtype=core.bool, device=device), 0)
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill_(core.ones(2, 3, device=device), 0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x.masked_fill_(core.ones(2, 3, dtype=core.bool, device=device), core.ones(2, device=device))
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        core.masked_select(x, core.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        x.masked_scatter_(core.ones(2, 3, dtype=core.bool, device=device), core.ones(2, dtype=x.dtype, device=device))
    with pytest.raises(RuntimeError, match="expected self and source to have same dtypes"):
        x.masked_scatter_(core.ones(2, 3, dtype=core.bool, device=device), core.ones(6, device=device))
    t = x.T
    t.masked_scatter_(core.tensor([[True, False]] * 3, device=device), core.tensor([7, 8, 9], device=device))
    assert x.tolist() == [[7, 8, 9], [4, 5, 6]]  # through a non-contiguous view


# -- nonzero / take / put -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_and_argwhere(dtype, device):
    a = _array((3, 4), dtype)
    a = np.where(_array((3, 4), "bool", seed=4), a, np.zeros((), a.dtype))
    x = core.tensor(a, device=device)
    assert_close(core.nonzero(x), np.argwhere(a))
    assert_close(core.argwhere(x.T), np.argwhere(a.T))
    for ours, theirs in zip(x.nonzero(as_tuple=True), np.nonzero(a)):
        assert_close(ours, theirs.astype(np.int64))
    assert core.nonzero(core.tensor(3, device=device)).shape == (1, 0)
    assert core.nonzero(core.tensor(0, device=device)).shape == (0, 0)
    assert [t.tolist() for t in core.nonzero(core.tensor(3, device=device), as_tuple=True)] == [[0]]
    assert core.nonzero(core.zeros(0, 3, device=device)).shape == (0, 2)
    cond = core.tensor([[True, False], [True, True]], device=device)
    assert [t.tolist() for t in core.where(cond)] == [[0, 1, 1], [0, 0, 1]]


def test_take_and_put(device):
    a = _array((3, 4), "float32")
    x = core.tensor(a, device=device)
    idx = np.array([[0, -1], [5, 11]])
    assert_close(core.take(x, core.tensor(idx, device=device)), np.take(a, idx))
    assert_close(x.T.take(core.tensor(idx, device=device)), np.take(a.T, idx))
    y = x.clone()
    y.put_(core.tensor([0, -1], device=device), core.tensor([9.0, 8.0], device=device))
    expected = a.copy()
    expected.flat[[0, -1]] = [9.0, 8.0]
    assert_close(y, expected)
    t = x.clone().T  # non-contiguous: put_ writes in the row-major order of the transposed view
    t.put_(core.tensor([1], device=device), core.tensor([5.0], device=device), accumulate=True)
    expected = a.T.copy()
    expected.flat[1] += 5
    assert_close(t, expected)
    assert_close(core.put(x, core.tensor([0, 0], device=device), core.tensor([1.0, 1.0], device=device),
                          accumulate=True).reshape(-1)[0], a.flat[0] + 2)
    with pytest.raises(IndexError, match="out of range: tried to access index 12 on a tensor of 12 elements."):
        core.take(x, core.tensor([12], device=device))
    with pytest.raises(IndexError, match="out of range: tried to access index -13 on a tensor of 12 elements."):
        x.clone().put_(core.tensor([-13], device=device), core.tensor([1.0], device=device))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index, but got Int"):
        core.take(x, core.tensor([0], dtype=core.int32, device=device))
    with pytest.raises(IndexError, match="Expected source and index to have the same number of elements"):
        x.clone().put_(core.tensor([0, 1], device=device), core.ones(3, device=device))


def test_index_primitive_validates_direct_calls(device):
    """Kernels never see bad indices, even when the primitive is called without the front-end."""
    from core.dispatch import get_operator

    index = get_operator("index")
    x = core.zeros(3, 4, device=device)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        index(x, (core.tensor([3], device=device),))
    with pytest.raises(IndexError, match="int64"):
        index(x, (core.tensor([True, False, True], device=device),))
    scatter_ = get_operator("scatter_")
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1 with size 4"):
        scatter_(x, 1, core.tensor([[4]], device=device), core.ones(1, 1, device=device))


def test_inplace_ops_write_through_non_contiguous_views(device):
    a = _array((4, 3), "float32")
    base = core.tensor(a, device=device)
    t = base.T  # (3, 4), non-contiguous
    expected = a.T.copy()
    version = base._version
    t.index_put_((core.tensor([0, 2], device=device), core.tensor([1, 3], device=device)),
                 core.tensor([1.0, 2.0], device=device), accumulate=True)
    expected[[0, 2], [1, 3]] += [1.0, 2.0]
    assert base._version > version
    t.scatter_(1, core.tensor([[0], [1], [2]], device=device), core.tensor([[5.0], [6.0], [7.0]], device=device))
    expected[[0, 1, 2], [0, 1, 2]] = [5.0, 6.0, 7.0]
    t.scatter_reduce_(0, core.tensor([[2, 2, 2, 2]], device=device), core.ones(1, 4, device=device), "prod",
                      include_self=False)
    expected[2] = 1.0
    t.index_add_(1, core.tensor([3], device=device), core.ones(3, 1, device=device), alpha=-2)
    expected[:, 3] -= 2
    t.index_fill_(0, core.tensor([1], device=device), -3.0)
    expected[1] = -3.0
    t.masked_fill_(core.tensor([True, False, False, False], device=device), 9.0)
    expected[:, 0] = 9.0
    t[:, core.tensor([2], device=device)] = core.tensor([[4.0], [5.0], [6.0]], device=device)
    expected[:, [2]] = [[4.0], [5.0], [6.0]]
    assert_close(t, expected)
    assert_close(base, expected.T)


def test_whole_tensor_indices_are_views_that_keep_autograd(device):
    x = core.randn(3, 4, device=device, requires_grad=True)
    for view in (x[:], x[0:3], x[...], x[:, 0:4], x[0:100]):
        assert view.requires_grad and view.grad_fn is not None and view is not x
    (x[:] * 2).sum().backward()
    assert_close(x.grad, core.full((3, 4), 2.0))


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradient_with_and_without_self(device, reduce, include_self):
    """With include_self=False the positions an index lands on drop self's value: its gradient there is 0."""
    rng = np.random.default_rng(0)
    x = core.tensor(rng.standard_normal(5), device=device, requires_grad=True)
    src = core.tensor(rng.standard_normal(4), device=device, requires_grad=True)
    index = core.tensor([0, 2, 2, 4], device=device)
    assert gradcheck(lambda a, b: core.scatter_reduce(a, 0, index, b, reduce, include_self=include_self), (x, src))
    core.scatter_reduce(x, 0, index, src.detach(), "sum", include_self=include_self).sum().backward()
    assert x.grad.tolist() == ([1.0] * 5 if include_self else [0.0, 1.0, 0.0, 1.0, 0.0])
