"""Sorting ops against NumPy: sort, argsort, msort, topk, kthvalue, unique, searchsorted, bucketize."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.testing import assert_close

DTYPES = [core.float32, core.float64, core.float16, core.int64, core.bool]
NAN = float("nan")


def sample(shape, dtype, seed=0, low=-3, high=4) -> np.ndarray:
    """Random values with many ties: small integers (as ``dtype``) or booleans."""
    rng = np.random.default_rng(seed)
    if dtype is core.bool:
        return rng.random(shape) < 0.5
    return rng.integers(low, high, shape).astype(dtype.numpy)


def np_stable_sort(a, axis, descending):
    """Reference stable sort: descending keeps ties in input order and puts NaN first, as PyTorch does."""
    if not descending:
        indices = np.argsort(a, axis=axis, kind="stable")
    else:
        n = a.shape[axis]
        indices = n - 1 - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
    return np.take_along_axis(a, indices, axis), indices


def strided_layouts(a: np.ndarray, device) -> list:
    """Tensors holding ``a``'s values with transposed and stepped strides (2-D ``a``)."""
    transposed = core.tensor(np.ascontiguousarray(a.T), device=device).t()
    wide = np.zeros((a.shape[0], 2 * a.shape[1]), a.dtype)
    wide[:, ::2] = a
    big = core.tensor(wide, device=device)
    stepped = core.as_strided(big, a.shape, (big.stride(0), 2), 0)
    return [transposed, stepped]


# -- sort, argsort, msort -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort(device, dtype, dim, descending):
    a = sample((4, 7), dtype)
    values, indices = core.sort(core.tensor(a, device=device), dim, descending)
    ev, ei = np_stable_sort(a, dim, descending)
    assert_close(values, ev)
    assert_close(indices, ei)
    assert_close(core.argsort(core.tensor(a, device=device), dim, descending), ei)


def test_sort_nan_order_and_stability(device):
    x = core.tensor([3.0, NAN, 1.0, 3.0, NAN, 2.0], device=device)
    values, indices = core.sort(x)
    assert indices.tolist() == [2, 5, 0, 3, 1, 4]
    assert np.isnan(values.cpu().numpy()[-2:]).all()
    values, indices = core.sort(x, descending=True, stable=True)
    assert indices.tolist() == [1, 4, 0, 3, 5, 2]
    assert np.isnan(values.cpu().numpy()[:2]).all() and values.tolist()[2:] == [3.0, 3.0, 2.0, 1.0]
    signed_zeros = core.tensor([0.0, -0.0, 0.0], device=device)
    assert core.sort(signed_zeros).indices.tolist() == [0, 1, 2]  # -0.0 == 0.0: ties keep their order


def test_sort_edges(device):
    zero_d = core.sort(core.tensor(3.0, device=device))
    assert zero_d.values.shape == () and zero_d.indices.item() == 0
    assert core.sort(core.tensor(3.0, device=device), 0).values.item() == 3.0
    empty = core.sort(core.empty(0, 3, device=device), 0)
    assert empty.values.shape == (0, 3) and empty.indices.dtype is core.int64
    assert core.sort(core.empty(2, 0, device=device)).indices.shape == (2, 0)
    with pytest.raises(IndexError, match=r"sort\(\): Dimension out of range \(expected to be in range of \[-1, 0\]"):
        core.sort(core.tensor([1, 2], device=device), 1)
    with pytest.raises(TypeError, match="must be Tensor"):
        core.sort([3, 1])


def test_sort_noncontiguous(device):
    a = sample((5, 6), core.float32, seed=3)
    for x in strided_layouts(a, device):
        assert not x.is_contiguous()
        for dim in (0, 1):
            values, indices = core.sort(x, dim, descending=True)
            ev, ei = np_stable_sort(a, dim, True)
            assert_close(values, ev)
            assert_close(indices, ei)
    expanded = core.tensor(a[:1], device=device).expand(5, 6)
    assert_close(core.sort(expanded, 0).indices, np.tile(np.arange(5)[:, None], (1, 6)))


def test_sort_result_type_and_out(device):
    x = core.tensor([[2, 1], [0, 3]], device=device)
    result = core.sort(x)
    assert isinstance(result, core.return_types.sort)
    assert repr(result).startswith("core.return_types.sort(\nvalues=tensor(")
    assert x.sort(dim=0).values.tolist() == [[0, 1], [2, 3]]
    values, indices = core.empty(0, dtype=core.int64, device=device), core.empty(0, dtype=core.int64, device=device)
    core.sort(x, out=(values, indices))
    assert values.tolist() == [[1, 2], [0, 3]] and indices.tolist() == [[1, 0], [0, 1]]


def test_msort(device):
    a = sample((4, 3), core.float64)
    assert_close(core.msort(core.tensor(a, device=device)), np.sort(a, axis=0))
    assert_close(core.tensor(a, device=device).msort(), np.sort(a, axis=0))


# -- topk and kthvalue ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [core.float32, core.float64, core.float16, core.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_topk(device, dtype, dim, largest, k):
    a = sample((5, 6), dtype, seed=1)
    values, indices = core.topk(core.tensor(a, device=device), k, dim, largest)
    ev, ei = np_stable_sort(a, dim, largest)
    assert_close(values, np.take(ev, range(k), axis=dim))
    assert_close(indices, np.take(ei, range(k), axis=dim))
    assert_close(core.tensor(np.take_along_axis(a, indices.cpu().numpy(), dim), device=device), values.cpu().numpy())


def test_topk_nan_and_edges(device):
    x = core.tensor([3.0, NAN, 1.0, 3.0, NAN, 2.0], device=device)
    assert core.topk(x, 2).indices.tolist() == [1, 4]
    assert core.topk(x, 2, largest=False).indices.tolist() == [2, 5]
    result = core.topk(core.tensor(3.0, device=device), 1)
    assert isinstance(result, core.return_types.topk) and result.values.shape == ()
    assert x.topk(3).values.shape == (3,)
    for k in (7, -1):
        with pytest.raises(RuntimeError, match=r"topk\(\): selected index k out of range"):
            core.topk(x, k)
    with pytest.raises(TypeError, match="argument 'k' must be int"):
        core.topk(x, 1.5)


@pytest.mark.parametrize("dtype", [core.float32, core.float64, core.float16, core.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue(device, dtype, dim, keepdim):
    a = sample((4, 5), dtype, seed=2)
    x = core.tensor(a, device=device)
    for k in (1, 3, a.shape[dim]):
        values, indices = core.kthvalue(x, k, dim, keepdim)
        expected = np.take(np.sort(a, axis=dim), [k - 1] if keepdim else k - 1, axis=dim)
        assert_close(values, expected)
        chosen = np.take_along_axis(a, indices.cpu().numpy() if keepdim else np.expand_dims(indices.cpu().numpy(), dim), dim)
        assert_close(core.tensor(chosen if keepdim else chosen.squeeze(dim)), expected)


def test_kthvalue_edges(device):
    x = core.tensor([3.0, NAN, 1.0, 2.0], device=device)
    assert core.kthvalue(x, 3).values.item() == 3.0
    assert math.isnan(core.kthvalue(x, 4).values.item()) and core.kthvalue(x, 4).indices.item() == 1
    assert core.kthvalue(core.tensor(3.0, device=device), 1).values.shape == ()
    assert x.kthvalue(1).values.item() == 1.0
    assert core.kthvalue(core.empty(0, 3, device=device), 2, 1).values.shape == (0,)
    for k in (0, 5):
        with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 0"):
            core.kthvalue(x, k)


# -- unique and unique_consecutive ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_unique(device, dtype):
    a = sample((3, 5), dtype)
    x = core.tensor(a, device=device)
    ev, ei, ec = np.unique(a, return_inverse=True, return_counts=True)
    assert_close(core.unique(x), ev)
    values, inverse, counts = core.unique(x, return_inverse=True, return_counts=True)
    assert_close(values, ev)
    assert_close(inverse, ei.reshape(a.shape))
    assert_close(counts, ec)
    assert_close(x.unique(sorted=False, return_counts=True)[1], ec)


def test_unique_nan_and_edges(device):
    x = core.tensor([3.0, NAN, NAN, 1.0, 3.0], device=device)
    values, counts = core.unique(x, return_counts=True)
    assert values.tolist()[:2] == [1.0, 3.0] and np.isnan(values.cpu().numpy()[2:]).all()  # NaNs never merge
    assert counts.tolist() == [1, 2, 1, 1]
    values, inverse = core.unique(core.tensor(5, device=device), return_inverse=True)
    assert values.tolist() == [5] and inverse.shape == () and inverse.item() == 0
    assert core.unique(core.empty(0, device=device)).shape == (0,)
    assert core.unique(core.empty(0, 2, device=device), dim=0).shape == (0, 2)
    with pytest.raises(RuntimeError, match="There are 0 sized dimensions, and they aren't selected"):
        core.unique(core.empty(0, 2, device=device), dim=1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        core.unique(x, dim=1)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim(device, dim):
    a = np.array([[1, 2, 1, 0], [1, 2, 1, 5], [0, 5, 0, 0], [1, 2, 1, 5]])
    ev, ei, ec = np.unique(a, axis=dim, return_inverse=True, return_counts=True)
    values, inverse, counts = core.unique(core.tensor(a, device=device), return_inverse=True, return_counts=True,
                                          dim=dim)
    assert_close(values, ev)
    assert_close(inverse, ei.reshape(-1))
    assert_close(counts, ec)


def np_unique_consecutive(a):
    starts = np.ones(a.size, bool)
    starts[1:] = a.reshape(-1)[1:] != a.reshape(-1)[:-1]
    first = np.flatnonzero(starts)
    return a.reshape(-1)[first], (np.cumsum(starts) - 1).reshape(a.shape), np.diff(np.append(first, a.size))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_unique_consecutive(device, dtype):
    a = sample((4, 6), dtype, low=0, high=2)
    x = core.tensor(a, device=device)
    ev, ei, ec = np_unique_consecutive(a)
    assert_close(core.unique_consecutive(x), ev)
    values, inverse, counts = core.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert_close(values, ev)
    assert_close(inverse, ei)
    assert_close(counts, ec)
    assert_close(x.unique_consecutive(return_counts=True)[1], ec)


def test_unique_consecutive_dim_and_edges(device):
    x = core.tensor([[1, 1], [1, 1], [2, 3], [1, 1]], device=device)
    values, inverse, counts = core.unique_consecutive(x, return_inverse=True, return_counts=True, dim=0)
    assert values.tolist() == [[1, 1], [2, 3], [1, 1]]
    assert inverse.tolist() == [0, 0, 1, 2] and counts.tolist() == [2, 1, 1]
    values, counts = core.unique_consecutive(x, return_counts=True, dim=1)
    assert values.tolist() == [[1, 1], [1, 1], [2, 3], [1, 1]] and counts.tolist() == [1, 1]
    nan_runs = core.unique_consecutive(core.tensor([1.0, NAN, NAN], device=device))
    assert nan_runs.shape == (3,)
    assert core.unique_consecutive(core.tensor(3, device=device)).tolist() == [3]
    assert core.unique_consecutive(core.empty(0, device=device), return_counts=True)[1].shape == (0,)


def test_unique_noncontiguous(device):
    a = sample((4, 5), core.int64, seed=9)
    for x in strided_layouts(a, device):
        values, inverse = core.unique(x, return_inverse=True)
        ev, ei = np.unique(a, return_inverse=True)
        assert_close(values, ev)
        assert_close(inverse, ei.reshape(a.shape))
        assert_close(core.unique_consecutive(x), np_unique_consecutive(a)[0])


def test_unique_on_meta_device_refuses():
    with pytest.raises(NotImplementedError, match="depends on the data"):
        core.unique(core.empty(3, device="meta"))


# -- searchsorted and bucketize ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [core.float32, core.float64, core.int64, core.float16], ids=lambda d: d.name)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_1d(device, dtype, right):
    boundaries = np.array([1, 3, 3, 5, 7]).astype(dtype.numpy)
    values = np.array([[0, 3, 4], [7, 8, 5]]).astype(dtype.numpy)
    side = "right" if right else "left"
    expected = np.searchsorted(boundaries, values, side)
    seq, v = core.tensor(boundaries, device=device), core.tensor(values, device=device)
    assert_close(core.searchsorted(seq, v, right=right), expected)
    assert_close(core.searchsorted(seq, v, side=side), expected)
    assert_close(core.searchsorted(seq, v, right=right, out_int32=True), expected.astype(np.int32))
    assert_close(core.bucketize(v, seq, right=right), expected)


def test_searchsorted_nd_sorter_scalars(device):
    seq = core.tensor([[1, 3, 5, 7], [2, 4, 6, 8]], device=device)
    values = core.tensor([[3, 6, 9], [3, 6, 9]], device=device)
    assert core.searchsorted(seq, values).tolist() == [[1, 3, 4], [1, 2, 4]]
    assert core.searchsorted(seq, values, right=True).tolist() == [[2, 3, 4], [1, 3, 4]]
    unsorted = core.tensor([7, 5, 3, 1], device=device)
    order = core.tensor([3, 2, 1, 0], device=device)
    assert core.searchsorted(unsorted, core.tensor([3, 6], device=device), sorter=order).tolist() == [1, 3]
    scalar = core.searchsorted(core.tensor([1, 3, 5, 7], device=device), 3)
    assert scalar.shape == () and scalar.item() == 1
    assert core.bucketize(3, core.tensor([1, 3, 5, 7], device=device)).item() == 1
    mixed = core.searchsorted(core.tensor([1, 3, 5, 7], device=device), core.tensor([3.5, 6.0], device=device))
    assert mixed.tolist() == [2, 3]
    nan_value = core.searchsorted(core.tensor([1.0, 3.0], device=device), core.tensor([NAN], device=device))
    assert nan_value.tolist() == [2]  # NaN is the largest value
    assert core.searchsorted(seq, core.empty(2, 0, dtype=core.int64, device=device)).shape == (2, 0)


def test_searchsorted_noncontiguous(device):
    boundaries = np.arange(0, 20, 2)
    values = np.random.default_rng(0).integers(-1, 21, (4, 6))
    seq = core.as_strided(core.tensor(np.repeat(boundaries, 2), device=device), (10,), (2,), 0)
    for v in strided_layouts(values, device):
        assert_close(core.searchsorted(seq, v), np.searchsorted(boundaries, values))
        assert_close(core.bucketize(v, seq, right=True), np.searchsorted(boundaries, values, "right"))


def test_searchsorted_errors(device):
    seq = core.tensor([[1, 3, 5, 7], [2, 4, 6, 8]], device=device)
    with pytest.raises(RuntimeError, match=r"boundaries tensor should be 1 dimension or the first N-1 dimensions"):
        core.searchsorted(seq, core.tensor([[3, 6, 9]], device=device))
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right' but got middle"):
        core.searchsorted(core.tensor([1, 3], device=device), seq, side="middle")
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        core.searchsorted(seq, seq, side="left", right=True)
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got dim\(2\)"):
        core.bucketize(core.tensor([3, 6], device=device), seq)
    with pytest.raises(RuntimeError, match="boundaries tensor should have positive dimension"):
        core.searchsorted(core.tensor(1, device=device), core.tensor([1], device=device))
    with pytest.raises(RuntimeError, match="sorter must be an int64 tensor"):
        core.searchsorted(seq, seq, sorter=core.tensor([0, 1], device=device))


# -- property-based --------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), data=st.data())
def test_hypothesis_sort_and_topk(shape, data):
    a = np.random.default_rng(len(shape)).integers(0, 4, shape).astype(np.float32)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    descending = data.draw(st.booleans())
    values, indices = core.sort(core.tensor(a), dim, descending)
    ev, ei = np_stable_sort(a, dim, descending)
    assert_close(values, ev)
    assert_close(indices, ei)
    k = data.draw(st.integers(0, shape[dim]))
    top = core.topk(core.tensor(a), k, dim, largest=descending)
    assert_close(top.values, np.take(ev, range(k), axis=dim))


# -- PyTorch as an optional oracle ---------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    a = np.array([[3.0, NAN, 1.0, 3.0, NAN, 2.0], [0.0, -1.0, -1.0, 5.0, 0.0, 0.0]], np.float32)
    x, t = core.tensor(a), torch.tensor(a)
    for descending in (False, True):
        ours = core.sort(x, 1, descending, stable=True)
        theirs = torch.sort(t, stable=True, dim=1, descending=descending)
        assert ours.indices.tolist() == theirs.indices.tolist()
        assert_close(ours.values, theirs.values.cpu().numpy())
    for largest in (False, True):
        assert_close(core.topk(x, 3, largest=largest).values, torch.topk(t, 3, largest=largest).values.cpu().numpy())
    assert_close(core.kthvalue(x, 5).values, torch.kthvalue(t, 5).values.cpu().numpy())
    ints = np.array([[1, 2], [1, 2], [0, 5]])
    for dim in (None, 0, 1):
        ours = core.unique(core.tensor(ints), return_inverse=True, return_counts=True, dim=dim)
        theirs = torch.unique(torch.tensor(ints), return_inverse=True, return_counts=True, dim=dim)
        for o, th in zip(ours, theirs):
            assert o.tolist() == th.tolist()
    runs = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    ours = core.unique_consecutive(core.tensor(runs), return_inverse=True, return_counts=True)
    theirs = torch.unique_consecutive(torch.tensor(runs), return_inverse=True, return_counts=True)
    assert [o.tolist() for o in ours] == [th.tolist() for th in theirs]
    seq, vals = np.array([[1, 3, 5, 7], [2, 4, 6, 8]]), np.array([[3, 6, 9], [0, 4, 8]])
    assert core.searchsorted(core.tensor(seq), core.tensor(vals), right=True).tolist() == \
        torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=True).tolist()
    assert core.bucketize(core.tensor(vals), core.tensor(seq[0])).tolist() == \
        torch.bucketize(torch.tensor(vals), torch.tensor(seq[0])).tolist()
