"""Reduction ops against NumPy: dtypes, dims, keepdim, 0-d and empty tensors, strided layouts, errors."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.testing import assert_close

FLOATS = [core.float32, core.float64, core.float16]
ALL = FLOATS + [core.int64, core.bool]
DIMS = [None, 0, -1, (0, 2), ()]


def sample(shape, dtype, seed=0) -> np.ndarray:
    """Random values of ``dtype``: small integers (so products stay exact), booleans or normals."""
    rng = np.random.default_rng(seed)
    if dtype is core.bool:
        return rng.random(shape) < 0.5
    if dtype.is_floating_point:
        return rng.standard_normal(shape).astype(dtype.numpy)
    return rng.integers(-3, 4, shape).astype(dtype.numpy)


def layouts(a: np.ndarray, device) -> list:
    """(name, tensor) pairs holding ``a``'s values as contiguous, transposed, stepped and expanded tensors."""
    out = [("contiguous", core.tensor(a, device=device))]
    if a.ndim >= 2:
        perm = tuple(reversed(range(a.ndim)))
        out.append(("transposed", core.tensor(np.ascontiguousarray(a.transpose(perm)), device=device).permute(perm)))
    if a.ndim >= 1:
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        big = core.tensor(wide, device=device)
        strides = big.stride()[:-1] + (2,)
        out.append(("stepped", core.as_strided(big, a.shape, strides, 0)))
    return out


def expanded(a: np.ndarray, device):
    """A tensor broadcasting ``a``'s first row along dim 0 (stride 0), and the values it holds."""
    t = core.tensor(a[:1], device=device).expand(*a.shape)
    return t, np.broadcast_to(a[:1], a.shape)


def np_axis(dim):
    return None if dim is None or dim == () else dim


def np_accumulate(dtype) -> np.dtype:
    """The NumPy dtype PyTorch's sum accumulates ``dtype`` in."""
    if dtype.category <= 1:
        return np.dtype(np.int64)
    return np.dtype(np.float32) if dtype in (core.float16, core.bfloat16) else dtype.numpy


def result_dtype(dtype) -> str:
    return "int64" if dtype.category <= 1 else dtype.name


# -- sum, prod, nansum -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["sum", "prod"])
def test_sum_prod(device, name, dtype, dim, keepdim):
    a = sample((2, 3, 4), dtype)
    result = getattr(core, name)(core.tensor(a, device=device), dim, keepdim)
    expected = getattr(np, name)(a, axis=np_axis(dim), keepdims=keepdim, dtype=np_accumulate(dtype))
    assert result.dtype.name == result_dtype(dtype)
    assert_close(result, np.asarray(expected).astype(result.dtype.numpy), rtol=1e-3 if dtype is core.float16 else None)


@pytest.mark.parametrize("name", ["sum", "prod", "nansum"])
def test_sum_dtype_argument(device, name):
    x = core.tensor([[1, 2], [3, 4]], dtype=core.int32, device=device)
    assert getattr(core, name)(x).dtype is core.int64
    result = getattr(core, name)(x, 0, dtype=core.float64)
    assert result.dtype is core.float64
    assert_close(result, getattr(np, name)(np.array([[1, 2], [3, 4]]), axis=0).astype(np.float64))
    with pytest.raises(TypeError, match="dtype"):
        getattr(core, name)(x, dtype="float64")


def test_half_sum_accumulates_in_float32(device):
    a = np.full(4096, 0.1, np.float16)
    result = core.sum(core.tensor(a, device=device))
    assert result.dtype is core.float16
    assert result.item() == float(np.float16(a.astype(np.float32).sum()))  # a float16 running sum stalls at 256
    bf = core.ones(1000, dtype=core.bfloat16, device=device)
    assert core.sum(bf).item() == 1000.0


def test_nansum(device):
    a = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, 4.0]], np.float32)
    x = core.tensor(a, device=device)
    assert_close(core.nansum(x), np.nansum(a))
    assert_close(core.nansum(x, 1, keepdim=True), np.nansum(a, 1, keepdims=True))
    assert_close(core.nansum(core.tensor([1, 2], device=device)), np.int64(3))


# -- mean, nanmean, var, std -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_mean(device, dtype, dim, keepdim):
    a = sample((2, 3, 4), dtype)
    result = core.mean(core.tensor(a, device=device), dim, keepdim)
    expected = np.mean(a.astype(np.float64), axis=np_axis(dim), keepdims=keepdim).astype(dtype.numpy)
    assert_close(result, expected, rtol=1e-3 if dtype is core.float16 else None)


def test_mean_dtype_and_integral_errors(device):
    ints = core.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input dtype must be either a "
                                           r"floating point or complex dtype. Got: Long"):
        core.mean(ints)
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating point or complex dtype. Got: Lo"):
        core.mean(core.tensor([1.0], device=device), dtype=core.int64)
    with pytest.raises(RuntimeError, match="Got: Bool"):
        core.mean(core.tensor([True], device=device))
    assert_close(core.mean(ints, dtype=core.float64), np.float64(1.5))
    assert_close(core.mean(core.tensor([1.0, 2.0], device=device), dtype=core.float64), np.float64(1.5))


def test_nanmean(device):
    a = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan]], np.float64)
    x = core.tensor(a, device=device)
    with pytest.warns(RuntimeWarning):
        expected = np.nanmean(a, axis=1)
    assert_close(core.nanmean(x, 1), expected)
    assert_close(core.nanmean(x), np.nanmean(a))
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point"):
        core.nanmean(core.tensor([1, 2], device=device))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [None, 1, (0, -1)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std(device, dtype, dim, keepdim, correction):
    a = sample((3, 4, 5), dtype)
    x = core.tensor(a, device=device)
    axis = np_axis(dim)
    expected_var = np.var(a.astype(np.float64), axis=axis, ddof=correction, keepdims=keepdim)
    expected_mean = np.mean(a.astype(np.float64), axis=axis, keepdims=keepdim)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype is core.float16 else {}
    assert_close(core.var(x, dim, keepdim=keepdim, correction=correction), expected_var.astype(dtype.numpy), **tol)
    assert_close(core.std(x, dim, keepdim=keepdim, correction=correction),
                 np.sqrt(expected_var).astype(dtype.numpy), **tol)
    v, m = core.var_mean(x, dim, keepdim=keepdim, correction=correction)
    assert_close(v, expected_var.astype(dtype.numpy), **tol)
    assert_close(m, expected_mean.astype(dtype.numpy), **tol)
    s, m = core.std_mean(x, dim, keepdim=keepdim, correction=correction)
    assert_close(s, np.sqrt(expected_var).astype(dtype.numpy), **tol)


def test_var_legacy_unbiased(device):
    a = sample((3, 4), core.float64)
    x = core.tensor(a, device=device)
    assert_close(core.var(x, False), np.var(a))  # torch.var(input, unbiased)
    assert_close(core.var(x, 0, False), np.var(a, 0))
    assert_close(x.var(1, True, True), np.var(a, 1, ddof=1, keepdims=True))
    assert_close(core.std(x, unbiased=False), np.std(a))
    with pytest.raises(TypeError, match="either correction= or the legacy unbiased="):
        core.var(x, unbiased=False, correction=1)


def test_var_degrees_of_freedom(device):
    x = core.tensor([1.0, 2.0, 3.0], device=device)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert math.isinf(core.var(x, correction=3).item())
    with pytest.warns(UserWarning):
        assert math.isnan(core.std(core.tensor(3.0, device=device)).item())


@pytest.mark.parametrize("op", [core.var, core.std, core.var_mean, core.std_mean])
def test_var_integral_error(device, op):
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex dtypes"):
        op(core.tensor([1, 2], device=device))


# -- extrema ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_amin(device, dtype, dim, keepdim):
    a = sample((2, 3, 4), dtype)
    x = core.tensor(a, device=device)
    assert_close(core.amax(x, dim if dim is not None else (), keepdim), np.amax(a, np_axis(dim), keepdims=keepdim))
    assert_close(core.amin(x, dim if dim is not None else (), keepdim), np.amin(a, np_axis(dim), keepdims=keepdim))
    if dim is None:
        assert_close(core.max(x), np.amax(a))
        assert_close(core.min(x), np.amin(a))


@pytest.mark.parametrize("dtype", [core.float32, core.float64, core.float16, core.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin(device, dtype, dim, keepdim):
    a = sample((3, 5), dtype, seed=1)
    x = core.tensor(a, device=device)
    for name in ("argmax", "argmin"):
        result = getattr(core, name)(x, dim, keepdim)
        expected = getattr(np, name)(a, axis=dim, keepdims=keepdim)
        if dim is None and keepdim:
            expected = expected.reshape(1, 1)
        assert result.dtype is core.int64
        assert_close(result, expected)


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_dim(device, dtype, dim, keepdim):
    a = sample((3, 5), dtype, seed=2)
    x = core.tensor(a, device=device)
    for name, np_value, np_index in (("max", np.amax, np.argmax), ("min", np.amin, np.argmin)):
        result = getattr(core, name)(x, dim, keepdim)
        assert type(result).__name__ == name and result._fields == ("values", "indices")
        assert_close(result.values, np_value(a, dim, keepdims=keepdim))
        assert_close(result.indices, np_index(a, dim, keepdims=keepdim))
        values, indices = getattr(x, name)(dim=dim, keepdim=keepdim)
        assert_close(values, result.values)


def test_extrema_first_occurrence_and_nan(device):
    x = core.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, float("nan"), 5.0, float("nan")]], device=device)
    assert core.argmax(x, 1).tolist() == [1, 1]
    assert core.argmin(x, 1).tolist() == [3, 1]
    assert core.argmax(x).item() == 5
    values, indices = core.max(x, 1)
    assert values.tolist()[0] == 3.0
    assert indices.tolist() == [1, 1]
    assert np.isnan(core.amax(x, 1).cpu().numpy()[1]) and np.isnan(core.amin(x).item())
    assert np.isnan(core.max(x).item())


def test_max_min_elementwise(device):
    a, b = sample((2, 3), core.float32), sample((3,), core.float32, seed=5)
    x, y = core.tensor(a, device=device), core.tensor(b, device=device)
    assert_close(core.max(x, y), np.maximum(a, b))
    assert_close(core.min(x, y), np.minimum(a, b))
    assert_close(x.max(y), np.maximum(a, b))


def test_aminmax(device):
    a = sample((3, 4), core.float32)
    x = core.tensor(a, device=device)
    result = core.aminmax(x)
    assert result._fields == ("min", "max")
    assert_close(result.min, a.min())
    assert_close(result.max, a.max())
    mn, mx = core.aminmax(x, dim=1, keepdim=True)
    assert_close(mn, a.min(1, keepdims=True))
    assert_close(mx, a.max(1, keepdims=True))
    assert core.aminmax(x, keepdim=True).min.shape == (1, 1)
    assert_close(x.aminmax(dim=0).max, a.max(0))


def test_bool_extrema(device):
    b = core.tensor([[False, True], [False, False]], device=device)
    assert_close(core.max(b, 1).values, np.array([True, False]))
    assert_close(core.max(b, 1).indices, np.array([1, 0]))
    assert_close(core.amin(b, 0), np.array([False, False]))
    with pytest.raises(RuntimeError, match=r"argmax\(\): does not support bool input"):
        core.argmax(b)


# -- logical and counting ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL + [core.uint8], ids=lambda d: d.name)
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_any_all(device, dtype, dim, keepdim):
    a = sample((2, 3, 4), dtype) if dtype is not core.uint8 else np.random.default_rng(0).integers(0, 2, (2, 3, 4))
    a = a.astype(dtype.numpy)
    if dtype.is_floating_point:
        a[0, 0, :] = 0
    x = core.tensor(a, device=device)
    want = np.uint8 if dtype is core.uint8 else np.bool_
    assert_close(core.any(x, dim, keepdim), np.any(a, np_axis(dim), keepdims=keepdim).astype(want))
    assert_close(core.all(x, dim, keepdim), np.all(a, np_axis(dim), keepdims=keepdim).astype(want))


def test_count_nonzero(device):
    a = np.array([[0, 1, 2], [3, 0, 0]])
    x = core.tensor(a, device=device)
    assert_close(core.count_nonzero(x), np.int64(3))
    assert_close(core.count_nonzero(x, 0), np.count_nonzero(a, 0).astype(np.int64))
    assert_close(core.count_nonzero(x, (0, 1)), np.int64(3))
    assert_close(x.count_nonzero(dim=-1), np.count_nonzero(a, -1).astype(np.int64))


# -- norms and logsumexp ----------------------------------------------------------------------------------

@pytest.mark.parametrize("p", ["fro", 2, 1, 3, 0.5, 0, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_norm(device, p, dim, keepdim):
    a = sample((3, 4), core.float64)
    a[0, 0] = 0
    x = core.tensor(a, device=device)
    axis = np_axis(dim)
    mag = np.abs(a)
    q = 2 if p == "fro" else p
    if q == math.inf:
        expected = mag.max(axis, keepdims=keepdim)
    elif q == -math.inf:
        expected = mag.min(axis, keepdims=keepdim)
    elif q == 0:
        expected = (mag != 0).sum(axis, keepdims=keepdim).astype(np.float64)
    else:
        expected = (mag ** q).sum(axis, keepdims=keepdim) ** (1 / q)
    assert_close(core.norm(x, p, dim, keepdim), expected)


def test_norm_dtypes_and_errors(device):
    a = sample((4,), core.float16)
    assert_close(core.norm(core.tensor(a, device=device)), np.linalg.norm(a.astype(np.float32)).astype(np.float16))
    assert_close(core.norm(core.tensor(a, device=device), dtype=core.float64), np.linalg.norm(a.astype(np.float64)))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        core.norm(core.tensor([1, 2], device=device))
    with pytest.raises(RuntimeError, match="Order abc not supported"):
        core.norm(core.tensor([1.0], device=device), "abc")
    with pytest.raises(RuntimeError, match="inf norm on an empty tensor"):
        core.norm(core.empty(0, device=device), math.inf)
    assert core.norm(core.empty(0, 3, device=device)).item() == 0.0
    assert core.norm(core.empty(0, 3, device=device), math.inf, dim=1).shape == (0,)


@pytest.mark.parametrize("dim", [0, -1, (0, 1)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [core.float32, core.float64, core.float16], ids=lambda d: d.name)
def test_logsumexp(device, dim, keepdim, dtype):
    a = (sample((3, 4), dtype) * 30).astype(dtype.numpy)
    expected = scipy.special.logsumexp(a.astype(np.float64), axis=dim, keepdims=keepdim).astype(dtype.numpy)
    assert_close(core.logsumexp(core.tensor(a, device=device), dim, keepdim), expected)


def test_logsumexp_special_values(device):
    x = core.tensor([[-math.inf, -math.inf], [math.inf, 1.0], [1000.0, 1000.0]], device=device)
    result = core.logsumexp(x, 1).cpu().numpy()
    assert result[0] == -math.inf and result[1] == math.inf
    assert result[2] == pytest.approx(1000 + math.log(2))
    assert_close(core.logsumexp(core.tensor([1, 2], device=device), 0), np.float32(scipy.special.logsumexp([1, 2])))
    assert_close(core.logsumexp(core.empty(0, 3, device=device), 0), np.full(3, -np.inf, np.float32))


# -- scans ---------------------------------------------------------------------------------------------

def np_cumulative_extremum(a, axis, better):
    """Reference cummax/cummin: ties take the latest index, NaN sticks and each NaN takes its own index."""
    a = np.moveaxis(a, axis, -1)
    values, indices = np.empty_like(a), np.zeros(a.shape, np.int64)
    for pos in np.ndindex(a.shape[:-1]):
        best, where = None, 0
        for i, v in enumerate(a[pos]):
            if best is None or np.isnan(v) or (not np.isnan(best) and (v == best or better(v, best))):
                best, where = v, i
            values[pos + (i,)], indices[pos + (i,)] = best, where
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod(device, dtype, dim):
    a = sample((3, 4), dtype)
    x = core.tensor(a, device=device)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype is core.float16 else {}
    for name in ("cumsum", "cumprod"):
        result = getattr(core, name)(x, dim)
        assert result.dtype.name == result_dtype(dtype)
        expected = getattr(np, name)(a, axis=dim, dtype=np_accumulate(dtype)).astype(result.dtype.numpy)
        assert_close(result, expected, **tol)
        assert_close(getattr(x, name)(dim, dtype=core.float64), getattr(np, name)(a.astype(np.float64), axis=dim),
                     **tol)


@pytest.mark.parametrize("dtype", [core.float32, core.int64, core.bool], ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [0, -1])
def test_cummax_cummin(device, dtype, dim):
    a = sample((4, 6), dtype, seed=3)
    if dtype is core.float32:
        a[1, 2] = a[2, 4] = a[2, 5] = np.nan
    x = core.tensor(a, device=device)
    for name, better in (("cummax", np.greater), ("cummin", np.less)):
        values, indices = getattr(core, name)(x, dim)
        ev, ei = np_cumulative_extremum(a, dim, better)
        assert_close(values, ev)
        assert_close(indices, ei)


def test_cummax_ties_take_latest(device):
    result = core.cummax(core.tensor([1.0, 3, 3, float("nan"), 2, float("nan"), 5], device=device), 0)
    assert result.indices.tolist() == [0, 1, 2, 3, 3, 5, 5]
    assert core.cummin(core.tensor([3.0, 1, 1, 2], device=device), 0).indices.tolist() == [0, 1, 2, 2]


# -- median ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [core.float32, core.float64, core.int64, core.float16], ids=lambda d: d.name)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_median(device, dtype, dim, keepdim):
    a = sample((4, 6), dtype, seed=4)
    x = core.tensor(a, device=device)
    lower = np.take(np.sort(a, axis=dim), (a.shape[dim] - 1) // 2, axis=dim)
    values, indices = core.median(x, dim, keepdim)
    expected = np.expand_dims(lower, dim) if keepdim else lower
    assert_close(values, expected)
    picked = np.take_along_axis(a, indices.cpu().numpy() if keepdim else np.expand_dims(indices.cpu().numpy(), dim), dim)
    assert_close(core.tensor(picked.squeeze(dim) if not keepdim else picked), expected)
    assert_close(core.median(x), np.sort(a, axis=None)[(a.size - 1) // 2])


def test_median_nan_and_edges(device):
    x = core.tensor([[1.0, float("nan"), 3.0, float("nan")], [4.0, 2.0, 3.0, 1.0]], device=device)
    values, indices = core.median(x, 1)
    assert math.isnan(values.tolist()[0]) and values.tolist()[1] == 2.0
    assert indices.tolist() == [1, 1]
    assert math.isnan(core.median(x).item())
    assert math.isnan(core.median(core.empty(0, device=device)).item())
    zero_d = core.median(core.tensor(5.0, device=device), 0)
    assert zero_d.values.shape == () and zero_d.indices.item() == 0
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have non-zero size."):
        core.median(core.empty(0, 3, device=device), 0)
    assert core.median(core.empty(0, 3, device=device), 1).values.shape == (0,)


# -- 0-d and empty tensors ------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [None, 0, -1, (0,), ()], ids=str)
def test_zero_dim_reductions(device, dim):
    x = core.tensor(3.0, device=device)
    for op in (core.sum, core.prod, core.mean, core.amax, core.amin, core.any, core.all, core.nansum,
               core.logsumexp, core.count_nonzero, core.norm):
        result = op(x, dim) if op is not core.norm else op(x, 2, dim)
        assert result.shape == (), op.__name__
    assert core.sum(x, 0, keepdim=True).shape == ()
    assert core.argmax(x, 0).item() == 0 and core.argmax(x, 0, keepdim=True).shape == ()
    with pytest.raises(IndexError, match=r"argmax\(\): Dimension out of range"):
        core.argmax(x, 1)
    values, indices = core.max(x, -1)
    assert values.item() == 3.0 and indices.item() == 0
    assert core.cumsum(x, 0).item() == 3.0 and core.cumsum(x, 0).shape == ()
    assert core.cummax(x, -1).indices.item() == 0
    assert core.var(x, 0, correction=0).item() == 0.0
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        core.sum(x, 1)


def test_empty_reductions(device):
    e = core.empty(0, 3, device=device)
    assert core.sum(e).item() == 0.0 and core.prod(e).item() == 1.0
    assert_close(core.sum(e, 0), np.zeros(3, np.float32))
    assert core.sum(e, 1).shape == (0,)
    assert math.isnan(core.mean(e).item())
    assert core.any(e).item() is False and core.all(e).item() is True
    assert core.amax(e, 1).shape == (0,)
    assert core.max(e, 1).indices.shape == (0,)
    assert core.cumsum(e, 0).shape == (0, 3) and core.cummax(e, 1).values.shape == (0, 3)
    assert core.count_nonzero(e).item() == 0


@pytest.mark.parametrize("call, exc, message", [
    (lambda e: core.max(e), RuntimeError, r"max\(\): Expected reduction dim to be specified for input.numel\(\) == 0. "
                                          r"Specify the reduction dim with the 'dim' argument."),
    (lambda e: core.min(e), RuntimeError, r"min\(\): Expected reduction dim to be specified"),
    (lambda e: core.amax(e), RuntimeError, r"amax\(\): Expected reduction dim to be specified"),
    (lambda e: core.max(e, 0), IndexError, r"max\(\): Expected reduction dim 0 to have non-zero size."),
    (lambda e: core.amin(e, (1, 0)), IndexError, r"amin\(\): Expected reduction dim 0 to have non-zero size."),
    (lambda e: core.argmax(e), IndexError, r"argmax\(\): Expected reduction dim to be specified for input.numel"),
    (lambda e: core.argmin(e, 0), IndexError, r"argmin\(\): Expected reduction dim 0 to have non-zero size."),
    (lambda e: core.aminmax(e), RuntimeError, r"aminmax\(\): cannot compute aminmax over an empty dimension"),
])
def test_empty_extremum_errors(device, call, exc, message):
    with pytest.raises(exc, match=message):
        call(core.empty(0, 3, device=device))


def test_dim_errors(device):
    x = core.ones(2, 3, device=device)
    with pytest.raises(IndexError, match=r"sum\(\): Dimension out of range \(expected to be in range of \[-2, 1\]"):
        core.sum(x, 2)
    with pytest.raises(RuntimeError, match="appears multiple times in the list of dims"):
        core.sum(x, (0, -2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        core.max(x, -3)
    with pytest.raises(TypeError, match="must be Tensor"):
        core.sum([1, 2])
    with pytest.raises(TypeError, match="dim must be an int"):
        core.cumsum(x, "0")


# -- non-contiguous inputs ---------------------------------------------------------------------------------

NONCONTIGUOUS_OPS = {
    "sum": (lambda x: core.sum(x, 1), lambda a: a.sum(1)),
    "sum_all": (lambda x: core.sum(x), lambda a: a.sum()),
    "prod": (lambda x: core.prod(x, 0), lambda a: a.prod(0)),
    "mean": (lambda x: core.mean(x, (0, 1)), lambda a: a.mean((0, 1))),
    "var": (lambda x: core.var(x, 1), lambda a: a.var(1, ddof=1)),
    "amax": (lambda x: core.amax(x, -1), lambda a: a.max(-1)),
    "argmin": (lambda x: core.argmin(x, 0), lambda a: a.argmin(0)),
    "max.values": (lambda x: core.max(x, 1).values, lambda a: a.max(1)),
    "max.indices": (lambda x: core.max(x, 1).indices, lambda a: a.argmax(1)),
    "norm": (lambda x: core.norm(x, 3, 0), lambda a: (np.abs(a) ** 3).sum(0) ** (1 / 3)),
    "logsumexp": (lambda x: core.logsumexp(x, 1), lambda a: scipy.special.logsumexp(a, 1)),
    "any": (lambda x: core.any(core.gt(x, 0.5), 1), lambda a: (a > 0.5).any(1)),
    "cumsum": (lambda x: core.cumsum(x, 1), lambda a: a.cumsum(1)),
    "cumprod": (lambda x: core.cumprod(x, 0), lambda a: a.cumprod(0)),
    "cummax": (lambda x: core.cummax(x, 1).values, lambda a: np.maximum.accumulate(a, 1)),
    "median": (lambda x: core.median(x, 0).values, lambda a: np.sort(a, 0)[(a.shape[0] - 1) // 2]),
}


@pytest.mark.parametrize("name", list(NONCONTIGUOUS_OPS))
def test_noncontiguous_inputs(device, name):
    op, reference = NONCONTIGUOUS_OPS[name]
    a = sample((4, 5), core.float64, seed=7)
    for layout, x in layouts(a, device):
        if layout != "contiguous":
            assert not x.is_contiguous()
        assert_close(op(x), reference(a), check_dtype=False, msg=layout)
    x, values = expanded(a, device)
    assert_close(op(x), reference(np.ascontiguousarray(values)), check_dtype=False, msg="expanded")


def test_results_own_their_memory(device):
    x = core.tensor([[1.0, 2.0]], device=device)
    for result in (core.sum(x, ()), core.amax(core.tensor(4.0, device=device), 0), core.cumsum(x, 0)):
        before = x.tolist()
        result.fill_(7)
        assert x.tolist() == before


# -- result types, out=, methods ---------------------------------------------------------------------------

def test_return_types(device):
    x = core.tensor([[1.0, 5.0], [3.0, 2.0]], device=device)
    result = core.max(x, 0)
    assert isinstance(result, core.return_types.max)
    assert repr(result).startswith("core.return_types.max(\nvalues=tensor(")
    assert "\nindices=tensor(" in repr(result)
    values, indices = result
    assert result[0] is values and result.indices is indices
    if device == "cpu":
        again = pickle.loads(pickle.dumps(result))
        assert type(again) is core.return_types.max and again.indices.tolist() == [1, 0]
    import core.return_types as rt

    assert rt.min is type(core.min(x, 1)) and rt.median is type(core.median(x, 1))
    assert type(core.cummax(x, 0)).__name__ == "cummax" and rt.aminmax._fields == ("min", "max")


def test_out_arguments(device):
    x = core.tensor([[1.0, 5.0], [3.0, 2.0]], device=device)
    out = core.empty(0, device=device)
    assert core.sum(x, 1, out=out) is out
    assert_close(out, np.array([6.0, 5.0], np.float32))
    with pytest.warns(UserWarning, match="was resized"):  # PyTorch resizes a mis-shaped out, with a warning
        core.mean(x, 0, out=core.empty(5, device=device))
    values, indices = core.empty(0, device=device), core.empty(0, dtype=core.int64, device=device)
    result = core.max(x, 1, out=(values, indices))
    assert result.values is values and indices.tolist() == [1, 0]
    assert core.cumsum(x, 0, out=core.empty(2, 2, device=device)).tolist() == [[1.0, 5.0], [4.0, 7.0]]


def test_tensor_methods(device):
    a = sample((3, 4), core.float64)
    x = core.tensor(a, device=device)
    assert_close(x.sum(), a.sum())
    assert_close(x.mean(1, keepdim=True), a.mean(1, keepdims=True))
    assert_close(x.prod(0), a.prod(0))
    assert_close(x.std(), a.std(ddof=1))
    assert_close(x.amax(0), a.max(0))
    assert_close(x.argmax(), np.int64(a.argmax()))
    assert_close(x.max(), a.max())
    assert_close(x.norm(), np.linalg.norm(a))
    assert_close(x.logsumexp(1), scipy.special.logsumexp(a, 1))
    assert_close(x.cumsum(0), a.cumsum(0))
    assert x.any().item() and x.abs().all().item()
    assert_close(x.nansum(), a.sum())
    assert_close(x.median(), np.sort(a, None)[(a.size - 1) // 2])


def test_meta_device_shapes():
    m = core.empty(2, 3, 4, device="meta")
    assert core.sum(m, (0, 2)).shape == (3,)
    assert core.mean(m, 1, keepdim=True).shape == (2, 1, 4)
    assert core.max(m, 1).indices.shape == (2, 4) and core.max(m, 1).indices.dtype is core.int64
    assert core.sum(core.empty(2, dtype=core.int32, device="meta")).dtype is core.int64


# -- property-based ---------------------------------------------------------------------------------------

@st.composite
def shapes_and_dims(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=4)))
    ndim = len(shape)
    if ndim == 0:
        return shape, draw(st.sampled_from([None, 0, -1])), draw(st.booleans())
    dims = draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim,
                         unique_by=lambda d: d % ndim))
    dim = draw(st.sampled_from([None, dims[0], tuple(dims)]))
    return shape, dim, draw(st.booleans())


@settings(max_examples=25, deadline=None)
@given(case=shapes_and_dims(), seed=st.integers(0, 2**16))
def test_hypothesis_sum_mean_amax(case, seed):
    shape, dim, keepdim = case
    a = np.random.default_rng(seed).standard_normal(shape)
    x = core.tensor(a)
    axis = None if dim is None or not shape else (dim if isinstance(dim, int) else tuple(dim))
    assert_close(core.sum(x, dim, keepdim), np.sum(a, axis=axis, keepdims=keepdim))
    assert_close(core.mean(x, dim, keepdim), np.mean(a, axis=axis, keepdims=keepdim))
    assert_close(core.amax(x, () if dim is None else dim, keepdim), np.amax(a, axis=axis, keepdims=keepdim))


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_hypothesis_argmax(shape, data):
    a = np.random.default_rng(0).integers(0, 3, shape)  # few values: ties must pick the first occurrence
    dim = data.draw(st.sampled_from([None, *range(-len(shape), len(shape))]))
    keepdim = data.draw(st.booleans())
    expected = np.argmax(a, axis=dim, keepdims=keepdim)
    if dim is None and keepdim:
        expected = expected.reshape((1,) * len(shape))
    assert_close(core.argmax(core.tensor(a), dim, keepdim), expected)


# -- PyTorch as an optional oracle --------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    a = np.array([[1.0, np.nan, 3.0, 3.0], [2.0, 2.0, 0.5, -1.0], [4.0, 4.0, 4.0, 4.0]], np.float32)
    x, t = core.tensor(a), torch.tensor(a)
    for name in ("cummax", "cummin"):
        ours, theirs = getattr(core, name)(x, 1), getattr(torch, name)(t, 1)
        assert_close(ours.values, theirs.values.cpu().numpy())
        assert ours.indices.tolist() == theirs.indices.tolist()
    ours, theirs = core.median(x, 1), torch.median(t, 1)
    assert_close(ours.values, theirs.values.cpu().numpy())
    assert ours.indices.tolist()[0] == theirs.indices.tolist()[0]  # the NaN row: its first NaN
    for name in ("max", "min"):
        ours, theirs = getattr(core, name)(x, 1), getattr(torch, name)(t, 1)
        assert ours.indices.tolist() == theirs.indices.tolist()
    b = sample((3, 4, 5), core.float32)
    x, t = core.tensor(b), torch.tensor(b)
    assert_close(core.var(x, (0, 2), correction=0), torch.var(t, (0, 2), correction=0).cpu().numpy())
    assert_close(core.std(x, 1, True, True), torch.std(t, 1, True, True).cpu().numpy())
    assert_close(core.norm(x, 3, (1, 2)), torch.norm(t, 3, (1, 2)).cpu().numpy(), rtol=1e-5)
    assert_close(core.logsumexp(x, (0, 1)), torch.logsumexp(t, (0, 1)).cpu().numpy())
    assert_close(core.nanmean(x, 1), torch.nanmean(t, 1).cpu().numpy())
    h = sample((64,), core.float16)
    assert_close(core.mean(core.tensor(h)), torch.mean(torch.tensor(h)).cpu().numpy(), rtol=0, atol=0)
