"""Shape ops that copy (cat/stack family, repeat/tile, flip/roll/rot90, tril/triu, diagonals) and the view helpers
(atleast_*, broadcast_*, meshgrid), against NumPy over dtypes, layouts, 0-d and empty tensors, with errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.testing import assert_close, sample_array, with_layout

DTYPES = ["float32", "float64", "int64", "int32", "int8", "uint8", "bool", "float16", "bfloat16"]
LAYOUTS = ["contiguous", "transposed", "strided"]


_array = sample_array
_make = with_layout


def _fresh(result: core.Tensor, *inputs: core.Tensor) -> None:
    for t in inputs:
        assert result.untyped_storage() is not t.untyped_storage()


# -- cat / stack ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cat_matches_numpy(dtype, layout, device):
    a, b = _array((2, 3), dtype), _array((2, 4), dtype, seed=1)
    x, y = _make(a, device, layout), _make(b, device, layout)
    for dim in (1, -1):
        out = core.cat([x, y], dim)
        assert_close(out, np.concatenate([a, b], 1))
        _fresh(out, x, y)
    assert_close(core.cat((x, x, x)), np.concatenate([a, a, a]))
    assert_close(core.concat([x.T, y.T]), np.concatenate([a.T, b.T]))
    assert_close(core.concatenate([x, y], axis=1), np.concatenate([a, b], 1))
    assert_close(core.cat([x]), a)
    _fresh(core.cat([x]), x)


def test_cat_promotes_and_skips_legacy_empties(device):
    i = core.tensor([[1, 2]], dtype=core.int32, device=device)
    f = core.tensor([[0.5, 1.5]], dtype=core.float16, device=device)
    b = core.tensor([[True, False]], device=device)
    assert_close(core.cat([i, f]), np.array([[1, 2], [0.5, 1.5]], np.float16))
    assert core.cat([b, i]).dtype is core.int32
    assert core.cat([b, b]).dtype is core.bool
    assert core.cat([i, core.tensor([[1.0, 2.0]], dtype=core.bfloat16, device=device)]).dtype is core.bfloat16
    empty = core.tensor([], dtype=core.float64, device=device)
    out = core.cat([i, empty], dim=1)  # the [0] tensor is skipped but still takes part in promotion
    assert out.dtype is core.float64 and out.tolist() == [[1.0, 2.0]]
    assert core.cat([empty, empty]).shape == (0,)
    assert core.cat([core.zeros(0, 3, device=device), core.ones(2, 3, device=device)]).shape == (2, 3)
    assert core.cat([core.zeros(2, 0, device=device), core.zeros(2, 0, device=device)], 1).shape == (2, 0)


def test_cat_out_and_errors(device):
    out = core.empty(0, device=device)
    core.cat([core.ones(2, device=device), core.zeros(1, device=device)], out=out)
    assert out.tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        core.cat([])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor \\(at position 0\\) cannot be concatenated"):
        core.cat([core.tensor(1.0, device=device)])
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 and 1"):
        core.cat([core.ones(2, 3, device=device), core.ones(2, device=device)])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1. Expected size 2 but "
                                           "got size 3 for tensor number 1 in the list."):
        core.cat([core.ones(2, 3, device=device), core.ones(3, 3, device=device)], 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        core.cat([core.ones(2, 3, device=device)], 2)
    with pytest.raises(TypeError, match="tuple of Tensors"):
        core.cat(core.ones(2, device=device))
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        core.cat([core.ones(2, device=device), 3])


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple), count=st.integers(1, 3),
       data=st.data())
def test_cat_and_stack_on_drawn_shapes(shape, count, data, device):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    arrays = []
    for k in range(count):
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 3))
        arrays.append(_array(tuple(s), "float32", seed=k))
    tensors = [core.tensor(a, device=device) for a in arrays]
    assert_close(core.cat(tensors, dim), np.concatenate(arrays, dim))
    same = [core.tensor(_array(shape, "int64", seed=k), device=device) for k in range(count)]
    sdim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_close(core.stack(same, sdim), np.stack([t.cpu().numpy() for t in same], sdim))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16"])
def test_stack_family(dtype, device):
    vectors = [_array((3,), dtype, seed=k) for k in range(2)]
    matrices = [_array((2, 3), dtype, seed=k) for k in range(2)]
    scalars = [_array((), dtype, seed=k) for k in range(2)]
    for arrays in (vectors, matrices, scalars):
        tensors = [core.tensor(a, device=device) for a in arrays]
        assert_close(core.stack(tensors), np.stack(arrays))
        assert_close(core.stack(tensors, dim=-1), np.stack(arrays, -1))
        assert_close(core.hstack(tensors), np.hstack(arrays))
        assert_close(core.vstack(tensors), np.vstack(arrays))
        assert_close(core.row_stack(tensors), np.vstack(arrays))
        assert_close(core.dstack(tensors), np.dstack(arrays))
        assert_close(core.column_stack(tensors), np.column_stack(arrays))
    t = [core.tensor(a, device=device).T for a in matrices]  # non-contiguous
    assert_close(core.stack(t, 1), np.stack([a.T for a in matrices], 1))
    out = core.empty(0, dtype=core.dtypes._BY_NAME[dtype], device=device)
    core.stack([core.tensor(a, device=device) for a in vectors], out=out)
    assert_close(out, np.stack(vectors))


def test_stack_errors(device):
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        core.stack([])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size, but got \\[2\\] at entry 0 "
                                           "and \\[3\\] at entry 1"):
        core.stack([core.ones(2, device=device), core.ones(3, device=device)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        core.stack([core.ones(2, device=device)], dim=2)


def test_block_diag(device):
    a = np.array([[1, 2], [3, 4]])
    out = core.block_diag(core.tensor(a, device=device), core.tensor(7, device=device),
                          core.tensor([5, 6], dtype=core.int32, device=device))
    expected = np.zeros((4, 5), np.int64)
    expected[:2, :2] = a
    expected[2, 2] = 7
    expected[3, 3:] = [5, 6]
    assert_close(out, expected)
    assert core.block_diag(core.tensor(2, device=device), core.ones(2, dtype=core.int32, device=device)).dtype \
        is core.int32
    assert core.block_diag().shape == (1, 0)
    with pytest.raises(RuntimeError, match="Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions"):
        core.block_diag(core.ones(2, 2, 2, device=device))


# -- views: atleast / broadcast / meshgrid --------------------------------------------------------

def test_atleast(device):
    for a in (np.array(3.0, np.float32), np.arange(3.0, dtype=np.float32), np.ones((2, 3), np.float32),
              np.ones((2, 3, 4), np.float32)):
        x = core.tensor(a, device=device)
        for ours, theirs in ((core.atleast_1d, np.atleast_1d), (core.atleast_2d, np.atleast_2d),
                             (core.atleast_3d, np.atleast_3d)):
            y = ours(x)
            assert_close(y, theirs(a))
            assert y.untyped_storage() is x.untyped_storage()
    x, y = core.tensor(1.0, device=device), core.ones(2, device=device)
    assert [t.shape for t in core.atleast_2d(x, y)] == [(1, 1), (1, 2)]
    assert [t.shape for t in core.atleast_3d([x, y])] == [(1, 1, 1), (1, 2, 1)]
    assert isinstance(core.atleast_1d((x,)), tuple)


def test_broadcast_to_and_tensors(device):
    a = _array((3, 1), "int64")
    x = core.tensor(a, device=device)
    y = core.broadcast_to(x, (2, 3, 4))
    assert_close(y, np.broadcast_to(a, (2, 3, 4)))
    assert y.untyped_storage() is x.untyped_storage() and y.stride() == (0, 1, 0)
    assert_close(x.broadcast_to((-1, 2)), np.broadcast_to(a, (3, 2)))
    p, q = core.broadcast_tensors(x, core.ones(4, device=device))
    assert p.shape == q.shape == (3, 4)
    assert [t.shape for t in core.broadcast_tensors([core.tensor(1.0, device=device), x])] == [(3, 1), (3, 1)]
    with pytest.raises(RuntimeError, match="must match"):
        core.broadcast_to(x, (2, 2))
    with pytest.raises(RuntimeError, match="not broadcastable"):
        core.broadcast_tensors(x, core.ones(2, 2, device=device))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing, device):
    arrays = [np.arange(2.0, dtype=np.float32), np.arange(3.0, dtype=np.float32) + 10, np.array([7.0], np.float32)]
    tensors = [core.tensor(a, device=device) for a in arrays]
    for n in (1, 2, 3):
        ours = core.meshgrid(*tensors[:n], indexing=indexing)
        theirs = np.meshgrid(*arrays[:n], indexing=indexing)
        for o, t, src in zip(ours, theirs, tensors):
            assert_close(o, t)
            assert o.untyped_storage() is src.untyped_storage()
    assert len(core.meshgrid(tensors[:2], indexing=indexing)) == 2
    grid = core.meshgrid(core.tensor(1.0, device=device), tensors[1], indexing=indexing)
    assert grid[0].shape == ((3, 1) if indexing == "xy" else (1, 3))


def test_meshgrid_default_and_errors(device):
    x = core.ones(2, device=device)
    with pytest.warns(UserWarning, match="indexing argument"):
        assert core.meshgrid(x, core.ones(3, device=device))[0].shape == (2, 3)
    with pytest.raises(RuntimeError, match="same dtype"):
        core.meshgrid(x, core.ones(2, dtype=core.int64, device=device), indexing="ij")
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        core.meshgrid(core.ones(2, 2, device=device), indexing="ij")
    with pytest.raises(ValueError, match="indexing must be one of"):
        core.meshgrid(x, indexing="ji")


# -- repeat / tile / repeat_interleave ------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_repeat_and_tile(dtype, layout, device):
    a = _array((2, 3), dtype)
    x = _make(a, device, layout)
    for sizes in ((1, 1), (2, 3), (3, 1, 2), (0, 2), (2, 1, 1, 1)):
        y = x.repeat(*sizes)
        assert_close(y, np.tile(a, sizes))
        _fresh(y, x)
    assert_close(x.repeat((2, 2)), np.tile(a, (2, 2)))
    for dims in ((2,), (1,), (2, 2), (2, 1, 3), ()):
        assert_close(core.tile(x, dims), np.tile(a, dims))
        assert_close(x.tile(dims), np.tile(a, dims))
    s = core.tensor(a[0, 0], device=device)
    assert_close(s.repeat(3), np.tile(a[0, 0], 3))
    assert_close(s.repeat(()), a[0, 0])
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        core.tile(x, (-1,))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_repeat_interleave(dtype, device):
    a = _array((2, 3), dtype)
    x = core.tensor(a, device=device)
    assert_close(core.repeat_interleave(x, 2), np.repeat(a, 2))
    for dim in (0, 1, -1):
        assert_close(x.repeat_interleave(3, dim=dim), np.repeat(a, 3, axis=dim))
        assert_close(x.T.repeat_interleave(2, dim=dim), np.repeat(a.T, 2, axis=dim))
        assert_close(x.repeat_interleave(0, dim=dim), np.repeat(a, 0, axis=dim))
    y = x.repeat_interleave(1, dim=0)
    assert_close(y, a)
    _fresh(y, x)
    reps = np.array([1, 0, 2])
    assert_close(x.repeat_interleave(core.tensor(reps, device=device), dim=1), np.repeat(a, reps, axis=1))
    assert_close(x.repeat_interleave(core.tensor([2], device=device), dim=0), np.repeat(a, 2, axis=0))
    assert_close(core.repeat_interleave(x, core.tensor(np.arange(6), device=device)), np.repeat(a, np.arange(6)))
    assert_close(core.repeat_interleave(core.tensor([1, 0, 3], device=device)), np.array([0, 2, 2, 2]))
    assert_close(core.repeat_interleave(core.tensor(a[0, 0], device=device), 2), np.repeat(a[0, 0], 2))


def test_repeat_interleave_errors(device):
    x = core.ones(2, device=device)
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim, but got "
                                           "repeats.size\\(0\\) = 3 and input.size\\(0\\) = 2"):
        core.repeat_interleave(x, core.tensor([1, 2, 3], device=device), dim=0)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        core.repeat_interleave(x, core.tensor([1, -2], device=device), dim=0)
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        core.repeat_interleave(x, -1)


# -- flip / roll / rot90 --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_flip_family(dtype, layout, device):
    a = _array((2, 3, 4), dtype)
    x = _make(a, device, layout)
    for dims in ((0,), (1, 2), (-1, 0), (0, 1, 2), ()):
        y = core.flip(x, dims)
        assert_close(y, np.flip(a, dims))
        _fresh(y, x)
        assert y.is_contiguous()
    assert_close(x.flip(0, 2), np.flip(a, (0, 2)))
    assert_close(x.flip([1]), np.flip(a, 1))
    assert_close(core.flip(x, dims=2), np.flip(a, 2))
    assert_close(core.fliplr(x), np.fliplr(a))
    assert_close(core.flipud(x), np.flipud(a))
    s = core.tensor(a[0, 0, 0], device=device)
    assert_close(core.flip(s, ()), a[0, 0, 0])
    assert core.flip(core.zeros(0, 3, device=device), (0, 1)).shape == (0, 3)


def test_flip_errors(device):
    x = core.ones(2, 2, device=device)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        core.flip(x, (0, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        core.flip(x, (2,))
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        core.fliplr(core.ones(2, device=device))
    with pytest.raises(RuntimeError, match="Input must be >= 1-d."):
        core.flipud(core.tensor(1.0, device=device))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_roll(dtype, layout, device):
    a = _array((3, 4), dtype)
    x = _make(a, device, layout)
    for shifts, dims in ((1, None), (-5, None), (13, None), (1, 0), (-1, 1), ((1, 2), (0, 1)), ((3, -7), (1, 0)),
                         ((4,), (1,)), (0, 1)):
        y = core.roll(x, shifts, dims)
        assert_close(y, np.roll(a, shifts, dims))
        _fresh(y, x)
    assert_close(x.roll(2), np.roll(a, 2))
    assert_close(core.roll(core.tensor(a[0, 0], device=device), 1), a[0, 0])
    assert core.roll(core.zeros(0, 2, device=device), 1, 0).shape == (0, 2)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:0"):
        core.roll(x, (1, 2))
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:1"):
        core.roll(x, (1, 2), 0)


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_rot90(dtype, device):
    a = _array((2, 3, 4), dtype)
    x = core.tensor(a, device=device)
    for k in (-3, -1, 0, 1, 2, 3, 4, 5):
        for dims in ((0, 1), (1, 2), (2, 0), (-1, -2)):
            y = core.rot90(x, k, dims)
            assert_close(y, np.rot90(a, k, dims))
            _fresh(y, x)
    assert_close(x.rot90(), np.rot90(a))
    with pytest.raises(RuntimeError, match="expected total rotation dims == 2, but got dims = 3"):
        core.rot90(x, 1, (0, 1, 2))
    with pytest.raises(RuntimeError, match="expected total dims >= 2, but got total dims = 1"):
        core.rot90(core.ones(2, device=device), 1, (0, 1))
    with pytest.raises(RuntimeError, match="expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"):
        core.rot90(x, 1, (0, 0))


# -- triangles and diagonals ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_tril_triu(dtype, layout, device):
    a = _array((2, 3, 4), dtype)  # batched
    x = _make(a, device, layout)
    for diagonal in (-4, -1, 0, 1, 2, 5):
        lower, upper = core.tril(x, diagonal), x.triu(diagonal=diagonal)
        assert_close(lower, np.tril(a, diagonal))
        assert_close(upper, np.triu(a, diagonal))
        assert lower.dtype.name == dtype and upper.dtype.name == dtype
        _fresh(lower, x)
    y = x.clone()
    assert y.tril_(1) is y
    assert_close(y, np.tril(a, 1))
    assert y.triu_() is y
    assert_close(y, np.triu(np.tril(a, 1)))
    out = core.empty(0, dtype=x.dtype, device=device)
    core.triu(x, out=out)
    assert_close(out, np.triu(a))
    assert core.tril(core.zeros(0, 3, device=device)).shape == (0, 3)


def test_tril_triu_errors(device):
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        core.tril(core.ones(2, device=device))
    with pytest.raises(RuntimeError, match="triu: input tensor must have at least 2 dimensions"):
        core.triu(core.tensor(1.0, device=device))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_diag_diagflat(dtype, device):
    v = _array((3,), dtype)
    m = _array((3, 4), dtype)
    for k in (-2, 0, 1, 4):
        assert_close(core.diag(core.tensor(v, device=device), k), np.diag(v, k))
        y = core.diag(core.tensor(m, device=device), k)
        assert_close(y, np.diag(m, k))
        assert y.is_contiguous()
        assert_close(core.diagflat(core.tensor(m, device=device), k), np.diagflat(m, k))
    assert_close(core.tensor(m, device=device).T.diag(1), np.diag(m.T, 1))
    assert_close(core.diagflat(core.tensor(v[0], device=device)), np.diagflat(v[0]))
    with pytest.raises(RuntimeError, match="diag\\(\\): Supports 1D or 2D tensors. Got 3D"):
        core.diag(core.ones(2, 2, 2, device=device))


def _np_diag_embed(a, offset, dim1, dim2):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    for i in range(a.shape[-1]):
        r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
        out[..., r, c] = a[..., i]
    nd = out.ndim
    d1, d2 = dim1 % nd, dim2 % nd
    order = [d for d in range(nd - 2)]
    source = {d1: nd - 2, d2: nd - 1}
    perm, rest = [], iter(order)
    for d in range(nd):
        perm.append(source[d] if d in source else next(rest))
    return np.transpose(out, perm)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16"])
def test_diag_embed(dtype, device):
    a = _array((2, 3), dtype)
    x = core.tensor(a, device=device)
    for offset, dim1, dim2 in ((0, -2, -1), (1, 0, 2), (-1, 2, 0), (2, 1, 0)):
        assert_close(core.diag_embed(x, offset, dim1, dim2), _np_diag_embed(a, offset, dim1, dim2))
    assert_close(x.T.diag_embed(), _np_diag_embed(a.T, 0, -2, -1))
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical"):
        core.diag_embed(x, 0, 1, -2)


def test_diag_embed_matches_torch(device):
    torch = pytest.importorskip("torch")
    a = _array((2, 3), "float32")
    for offset, dim1, dim2 in ((0, -2, -1), (1, 0, 2), (-1, 2, 0), (2, 1, 0)):
        assert_close(core.diag_embed(core.tensor(a, device=device), offset, dim1, dim2),
                     torch.diag_embed(torch.tensor(a), offset, dim1, dim2).cpu().numpy())
