"""More of the torch namespace against NumPy on every device: constants, differences, set membership, histograms,
quantiles, NaN-ignoring medians, modes, covariance, products of sets, rounding, dtype queries and asarray; PyTorch's
errors (type and message) and gradients in float64."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import core
from core.autograd import gradcheck
from core.testing import assert_close


def _rng():
    return np.random.default_rng(0)


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


# -- constants and dtype queries -----------------------------------------------------------------------

def test_constants():
    assert core.pi == math.pi and core.e == math.e and core.inf == math.inf and math.isnan(core.nan)
    assert core.newaxis is None
    assert core.arange(3)[core.newaxis].shape == (1, 3)


def test_can_cast_promote_types_result_type():
    assert core.can_cast(core.int32, core.float32) and core.can_cast(core.float64, core.float32)
    assert not core.can_cast(core.float32, core.int64) and not core.can_cast(core.int64, core.bool)
    assert core.can_cast(core.bool, core.uint8)
    assert core.promote_types(core.int32, core.float16) is core.float16
    assert core.promote_types(core.uint8, core.int8) is core.int16
    assert core.result_type(core.tensor([1, 2]), 1.0) is core.float32
    assert core.result_type(core.tensor([1], dtype=core.int8), 300) is core.int8
    assert core.result_type(core.tensor(1.0, dtype=core.float64), core.tensor([1.0])) is core.float32
    assert core.result_type(2, 3.0) is core.get_default_dtype()


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_fields(name):
    info = core.finfo(getattr(core, name))
    assert info.dtype == name and info.bits == getattr(core, name).itemsize * 8
    assert info.eps > 0 and info.tiny == info.smallest_normal > 0 and info.max == -info.min
    assert info.resolution == 10 ** -math.floor(-math.log10(info.eps)) or info.resolution > 0
    if name in ("float32", "float64", "float16"):
        ref = np.finfo(name)
        assert (info.eps, info.max, info.tiny) == (float(ref.eps), float(ref.max), float(ref.tiny))


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_fields(name):
    info, ref = core.iinfo(getattr(core, name)), np.iinfo(name)
    assert (info.bits, info.min, info.max, info.dtype) == (ref.bits, int(ref.min), int(ref.max), name)


def test_finfo_iinfo_of_other_dtypes():
    assert core.finfo().dtype == core.get_default_dtype().name
    assert core.finfo(core.complex64).dtype == "float32" and core.finfo(core.complex128).bits == 64
    assert (core.iinfo(core.bool).min, core.iinfo(core.bool).max, core.iinfo(core.bool).bits) == (0, 1, 8)
    assert repr(core.iinfo(core.int8)) == "iinfo(min=-128, max=127, dtype=int8)"
    assert repr(core.finfo(core.float32)).startswith("finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, ")
    with pytest.raises(TypeError, match="finfo\\(\\) requires a floating point input type"):
        core.finfo(core.int32)
    with pytest.raises(TypeError, match="iinfo\\(\\) requires an integer input type"):
        core.iinfo(core.float32)


# -- asarray ---------------------------------------------------------------------------------------------

def test_asarray_shares_numpy_memory():
    a = np.arange(4.0)
    shared = core.asarray(a, copy=False)
    default = core.asarray(a)
    copied = core.asarray(a, copy=True)
    a[0] = 7.0
    assert shared[0].item() == 7.0 and default[0].item() == 7.0 and copied[0].item() == 0.0
    assert core.asarray(a, dtype=core.float32).dtype is core.float32


def test_asarray_of_a_tensor(device):
    x = core.arange(3.0, device=device)
    assert core.asarray(x) is x and core.asarray(x, copy=False) is x
    y = core.asarray(x, copy=True)
    assert y.data_ptr() != x.data_ptr() and y.tolist() == x.tolist()
    assert core.asarray(x, dtype=core.float64).dtype is core.float64
    assert core.asarray([1, 2], device=device).device.type == device
    assert core.asarray([1.0], requires_grad=True).requires_grad


def test_asarray_copy_false_raises_when_it_must_copy():
    with pytest.raises(ValueError, match="can't alias list"):
        core.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="without copying"):
        core.asarray(core.arange(3.0), dtype=core.float64, copy=False)


# -- rounding, diagonals -----------------------------------------------------------------------------------

@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
def test_round_decimals(device, decimals):
    a = _rng().uniform(-500, 500, 50)
    x = _t(a, device)
    assert_close(_np(core.round(x, decimals=decimals)), np.round(a, decimals), rtol=1e-6, atol=1e-4)
    assert_close(_np(x.round(decimals=decimals)), np.round(a, decimals), rtol=1e-6, atol=1e-4)
    y = x.clone()
    y.round_(decimals=decimals)
    assert_close(_np(y), np.round(a, decimals), rtol=1e-6, atol=1e-4)


def test_round_decimals_of_integers_raises():
    with pytest.raises(RuntimeError, match="round_decimals"):
        core.round(core.tensor([1, 2]), decimals=1)
    assert core.round(core.tensor([1, 2])).tolist() == [1, 2]


@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 3, 5])
def test_diagonal_and_trace_offsets(device, offset):
    a = _rng().standard_normal((3, 4, 5))
    x = _t(a, device)
    assert_close(_np(core.diagonal(x, offset=offset, dim1=1, dim2=2)), np.diagonal(a, offset, 1, 2))
    assert_close(_np(x.diagonal(offset=offset, dim1=-1, dim2=0)), np.diagonal(a, offset, 2, 0))
    assert_close(_np(core.trace(x[0])), np.trace(a[0]), rtol=1e-5, atol=1e-5)


# -- diff, ravel ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 5])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_diff(device, n, dim):
    a = _rng().standard_normal((4, 5))
    pre, post = _rng().standard_normal((4, 5)), _rng().standard_normal((4, 5))
    x = _t(a, device)
    assert_close(_np(core.diff(x, n, dim)), np.diff(a, n, dim), rtol=1e-5, atol=1e-5)
    got = x.diff(n=n, dim=dim, prepend=_t(pre, device), append=_t(post, device))
    assert_close(_np(got), np.diff(a, n, dim, prepend=pre, append=post), rtol=1e-5, atol=1e-5)


def test_diff_of_bool_and_int(device):
    b = np.array([True, False, False, True])
    assert _np(core.diff(_t(b, device))).tolist() == [True, False, True]
    i = np.array([1, 4, 9, 16])
    got = core.diff(_t(i, device), prepend=_t(np.array([0]), device))
    assert got.dtype is core.int64 and _np(got).tolist() == [1, 3, 5, 7]


def test_diff_out(device):
    x = core.arange(6.0, device=device) ** 2
    out = core.empty(0, device=device)
    assert core.diff(x, out=out) is out and out.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]


def test_diff_errors():
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        core.diff(core.tensor(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        core.diff(core.ones(3), n=-1)


def test_diff_gradient():
    x = core.tensor(_rng().standard_normal((3, 4)), requires_grad=True)
    p = core.tensor(_rng().standard_normal((3, 1)), requires_grad=True)
    assert gradcheck(lambda x, p: core.diff(x, 2, dim=1, prepend=p), (x, p))


def test_ravel(device):
    x = core.arange(12, device=device).reshape(3, 4)
    assert x.ravel().tolist() == list(range(12))
    assert core.ravel(x.t()).tolist() == np.arange(12).reshape(3, 4).T.ravel().tolist()
    assert x.ravel().data_ptr() == x.data_ptr()


# -- isin, bucketize, searchsorted ---------------------------------------------------------------------------

@pytest.mark.parametrize("invert", [False, True])
def test_isin(device, invert):
    rng = _rng()
    a, b = rng.integers(0, 10, (3, 4)), rng.integers(0, 10, 6)
    got = core.isin(_t(a, device), _t(b, device), invert=invert)
    assert got.dtype is core.bool and _np(got).tolist() == np.isin(a, b, invert=invert).tolist()
    f = np.array([0.5, 1.0, np.nan, 2.0])
    got = core.isin(_t(f, device), _t(np.array([1, 2]), device), assume_unique=True)
    assert _np(got).tolist() == [False, True, False, True]
    assert core.isin(_t(a, device), 3).tolist() == (a == 3).tolist()
    assert core.isin(2, _t(b, device)).item() == (2 in b)
    assert not core.isin(_t(a, device), _t(np.array([], dtype=np.int64), device)).any().item()


def test_bucketize_and_searchsorted(device):
    rng = _rng()
    edges = np.sort(rng.standard_normal(7))
    v = rng.standard_normal((3, 5))
    for right in (False, True):
        got = core.bucketize(_t(v, device), _t(edges, device), right=right, out_int32=True)
        assert got.dtype is core.int32
        assert _np(got).tolist() == np.searchsorted(edges, v, side="right" if right else "left").tolist()
    unsorted = rng.permutation(edges)
    sorter = np.argsort(unsorted)
    got = core.searchsorted(_t(unsorted, device), _t(v, device), side="right", sorter=_t(sorter, device))
    assert _np(got).tolist() == np.searchsorted(unsorted, v, side="right", sorter=sorter).tolist()


# -- bincount, histc, histogram ---------------------------------------------------------------------------------

def test_bincount(device):
    rng = _rng()
    a = rng.integers(0, 8, 30)
    w = rng.standard_normal(30)
    assert _np(core.bincount(_t(a, device))).tolist() == np.bincount(a).tolist()
    assert core.bincount(_t(a, device)).dtype is core.int64
    assert _np(core.bincount(_t(a, device), minlength=12)).tolist() == np.bincount(a, minlength=12).tolist()
    got = _t(a, device).bincount(_t(w, device))
    assert got.dtype is core.float64
    assert_close(_np(got), np.bincount(a, w))
    assert core.bincount(_t(a, device), _t(w.astype(np.float32), device)).dtype is core.float32
    assert core.bincount(_t(a, device), _t(a, device)).dtype is core.float64
    assert core.bincount(_t(np.array([], dtype=np.int64), device)).shape == (0,)


def test_bincount_errors():
    for bad in (core.tensor([-1, 2]), core.tensor([[1, 2]]), core.tensor([1.0])):
        with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
            core.bincount(bad)
    with pytest.raises(RuntimeError, match="same length as input"):
        core.bincount(core.tensor([1, 2]), core.tensor([1.0]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc(device, dtype):
    a = _rng().standard_normal(200).astype(dtype)
    x = _t(a, device)
    got = core.histc(x, bins=10, min=-2, max=2)
    assert got.dtype is getattr(core, dtype)
    assert _np(got).tolist() == np.histogram(a, 10, range=(-2, 2))[0].astype(dtype).tolist()
    got = x.histc(bins=7)  # min == max == 0: the data's range
    assert _np(got).tolist() == np.histogram(a, 7, range=(a.min(), a.max()))[0].astype(dtype).tolist()
    assert core.histc(_t(np.full(4, 3.0, dtype), device), bins=4).tolist() == [0, 0, 4, 0]  # range [2, 4]


def test_histc_errors():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        core.histc(core.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        core.histc(core.ones(3), bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        core.histc(core.ones(3), bins=3, min=2, max=1)


@pytest.mark.parametrize("density", [False, True])
def test_histogram(device, density):
    rng = _rng()
    a, w = rng.standard_normal(100), rng.uniform(0, 1, 100)
    x = _t(a, device)
    hist, edges = core.histogram(x, 8, density=density)
    ref_hist, ref_edges = np.histogram(a, 8, density=density)
    assert_close(_np(hist), ref_hist.astype(np.float64), rtol=1e-10, atol=1e-12)
    assert_close(_np(edges), ref_edges, rtol=1e-12, atol=1e-12)
    result = x.histogram(5, range=(-1.0, 1.0), weight=_t(w, device), density=density)
    ref_hist, ref_edges = np.histogram(a, 5, range=(-1, 1), weights=w, density=density)
    assert_close(_np(result.hist), ref_hist, rtol=1e-10, atol=1e-12)
    assert_close(_np(result.bin_edges), ref_edges, rtol=1e-12, atol=1e-12)
    bins = np.array([-3.0, -1.0, 0.0, 0.5, 3.0])
    hist, edges = core.histogram(x, _t(bins, device), density=density)
    assert_close(_np(hist), np.histogram(a, bins, density=density)[0].astype(np.float64), rtol=1e-10, atol=1e-12)
    assert _np(edges).tolist() == bins.tolist()


def test_histogram_errors():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        core.histogram(core.tensor([1, 2]), 3)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        core.histogram(core.ones(3), 0)
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        core.histogram(core.ones(3), 3, range=(2.0, 1.0))


# -- quantiles, nanmedian, mode ------------------------------------------------------------------------------

INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_quantile(device, interpolation, dtype):
    rng = _rng()
    a = rng.standard_normal((4, 7)).astype(dtype)
    q = np.array([0.0, 0.1, 0.5, 0.75, 1.0], dtype)
    x, qt = _t(a, device), _t(q, device)
    tol = {"rtol": 1e-5, "atol": 1e-5}
    assert_close(_np(core.quantile(x, 0.3, interpolation=interpolation)),
                 np.quantile(a, 0.3, method=interpolation), **tol)
    assert_close(_np(x.quantile(qt, dim=1, interpolation=interpolation)),
                 np.quantile(a, q, axis=1, method=interpolation), **tol)
    got = core.quantile(x, qt, dim=0, keepdim=True, interpolation=interpolation)
    assert got.shape == (5, 1, 7)
    assert_close(_np(got), np.quantile(a, q, axis=0, keepdims=True, method=interpolation), **tol)
    assert core.quantile(x, 0.5, keepdim=True).shape == (1, 1)
    assert core.quantile(x, _t(np.array(0.5, dtype), device), dim=1).shape == (4,)


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_nanquantile(device, interpolation):
    rng = _rng()
    a = rng.standard_normal((5, 6))
    a[rng.uniform(size=a.shape) < 0.3] = np.nan
    a[4] = np.nan
    q = np.array([0.2, 0.5, 0.9])
    x = _t(a, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns of the all-NaN row
        ref = np.nanquantile(a, q, axis=1, method=interpolation)
    assert_close(_np(core.nanquantile(x, _t(q, device), dim=1, interpolation=interpolation)), ref, equal_nan=True)
    ref = np.quantile(a, q, axis=1, method=interpolation)
    assert_close(_np(core.quantile(x, _t(q, device), dim=1, interpolation=interpolation)), ref, equal_nan=True)
    assert_close(_np(x.nanquantile(0.5)), np.nanquantile(a, 0.5), equal_nan=True)


def test_quantile_errors():
    x = core.ones(3)
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5"):
        core.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match="must be either float or double dtype"):
        core.quantile(core.tensor([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match="q tensor must be same dtype as the input tensor"):
        core.quantile(x, core.tensor([0.5], dtype=core.float64))
    with pytest.raises(RuntimeError, match="interpolation must be one of linear, lower, higher, midpoint or nearest. "
                                           "Got cubic"):
        core.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="q must be a scalar or 1D tensor"):
        core.quantile(x, core.ones(2, 2) / 2)
    with pytest.raises(RuntimeError, match="input tensor must be non-empty"):
        core.nanquantile(core.ones(0), 0.5)


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_quantile_gradient(interpolation):
    x = core.tensor(_rng().standard_normal((3, 5)), requires_grad=True)
    q = core.tensor([0.2, 0.5, 0.9], dtype=core.float64)
    assert gradcheck(lambda x: core.quantile(x, q, dim=1, interpolation=interpolation), (x,))
    assert gradcheck(lambda x: core.nanquantile(x, 0.3, interpolation=interpolation), (x,))


def test_nanmedian(device):
    rng = _rng()
    a = rng.standard_normal((4, 7))
    a[rng.uniform(size=a.shape) < 0.3] = np.nan
    x = _t(a, device)
    flat = a[~np.isnan(a)]
    assert _np(core.nanmedian(x)).item() == np.sort(flat)[(flat.size - 1) // 2]
    values, indices = x.nanmedian(dim=1)
    for row, v, i in zip(a, _np(values), _np(indices)):
        kept = np.sort(row[~np.isnan(row)])
        assert v == kept[(kept.size - 1) // 2] and row[i] == v
    got = core.nanmedian(x, 0, keepdim=True)
    assert got.values.shape == got.indices.shape == (1, 7) and got.indices.dtype is core.int64
    ints = _t(rng.integers(0, 9, (3, 6)), device)
    assert core.nanmedian(ints, 1).values.tolist() == core.median(ints, 1).values.tolist()
    assert math.isnan(core.nanmedian(_t(np.array([np.nan, np.nan]), device)).item())


def test_nanmedian_and_mode_gradients():
    x = core.tensor(_rng().standard_normal((3, 5)), requires_grad=True)
    assert gradcheck(lambda x: core.nanmedian(x, 1).values, (x,))
    assert gradcheck(lambda x: core.nanmedian(x), (x,))
    assert gradcheck(lambda x: core.mode(x, 0).values, (x,))


def test_mode(device):
    rng = _rng()
    a = rng.integers(0, 4, (5, 9))
    x = _t(a, device)
    values, indices = core.mode(x)
    for row, v, i in zip(a, _np(values), _np(indices)):
        counts = np.bincount(row)
        assert v == np.argmax(counts) and row[i] == v  # the smallest of the most frequent
    got = x.mode(0, keepdim=True)
    assert got.values.shape == (1, 9) and got.indices.dtype is core.int64
    for col, v in zip(a.T, _np(got.values)[0]):
        assert v == np.argmax(np.bincount(col))
    f = _t(np.array([1.5, 2.5, 1.5, 0.5]), device)
    assert core.mode(f).values.item() == 1.5
    tie = core.mode(_t(np.array([2, 1, 2, 1, 0]), device))
    assert (tie.values.item(), tie.indices.item()) == (1, 3)  # the smallest of a tie, its last occurrence
    assert core.mode(_t(np.array(3.0), device)).values.item() == 3.0


# -- covariance ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov(device, correction):
    rng = _rng()
    a = rng.standard_normal((3, 10))
    fw, aw = rng.integers(1, 5, 10), rng.uniform(0.1, 1, 10)
    x = _t(a, device)
    assert_close(_np(core.cov(x, correction=correction)), np.cov(a, ddof=correction))
    got = x.cov(correction=correction, fweights=_t(fw, device), aweights=_t(aw, device))
    assert_close(_np(got), np.cov(a, ddof=correction, fweights=fw, aweights=aw))
    assert core.cov(_t(a[0], device)).shape == ()
    assert_close(_np(core.cov(_t(a[0], device))), np.cov(a[0]))


def test_corrcoef(device):
    a = _rng().standard_normal((4, 12))
    assert_close(_np(core.corrcoef(_t(a, device))), np.corrcoef(a))
    assert_close(_np(_t(a, device).corrcoef()), np.corrcoef(a))
    assert core.corrcoef(_t(a[0], device)).item() == 1.0


def test_cov_errors():
    x = core.ones(2, 4)
    with pytest.raises(RuntimeError, match="expected input to have two or fewer dimensions"):
        core.cov(core.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="expected fweights to have integral dtype"):
        core.cov(x, fweights=core.ones(4))
    with pytest.raises(RuntimeError, match="expected aweights to have floating point dtype"):
        core.cov(x, aweights=core.ones(4, dtype=core.int64))
    with pytest.raises(RuntimeError, match="same numel as there are observations"):
        core.cov(x, fweights=core.ones(3, dtype=core.int64))
    with pytest.raises(RuntimeError, match="fweights cannot be negative"):
        core.cov(x, fweights=core.tensor([1, -1, 1, 1]))
    with pytest.warns(RuntimeWarning, match="degrees of freedom is <= 0"):
        core.cov(core.ones(2, 1))


def test_cov_corrcoef_gradient():
    rng = _rng()
    x = core.tensor(rng.standard_normal((3, 6)), requires_grad=True)
    w = core.tensor(rng.uniform(0.5, 1, 6), requires_grad=True)
    assert gradcheck(lambda x, w: core.cov(x, aweights=w), (x, w))
    assert gradcheck(lambda x: core.corrcoef(x), (x,))


# -- cdist, kron, block_diag: existing names, checked here with gradients -----------------------------------

def test_cdist_kron_block_diag(device):
    rng = _rng()
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    ref = np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1))
    assert_close(_np(core.cdist(_t(a, device), _t(b, device))), ref)
    assert_close(_np(core.cdist(_t(a, device), _t(b, device), p=1)), np.abs(a[:, None] - b[None]).sum(-1))
    assert_close(_np(core.kron(_t(a, device), _t(b, device))), np.kron(a, b))
    c = rng.standard_normal(2)
    got = core.block_diag(_t(a, device), _t(c, device), _t(np.array(7.0), device))
    ref = np.zeros((6, 6))
    ref[:4, :3], ref[4, 3:5], ref[5, 5] = a, c, 7.0
    assert_close(_np(got), ref)


def test_cdist_kron_block_diag_gradient():
    rng = _rng()
    a = core.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    b = core.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    assert gradcheck(lambda a, b: core.cdist(a, b), (a, b))
    assert gradcheck(lambda a, b: core.kron(a, b), (a, b))
    assert gradcheck(lambda a, b: core.block_diag(a, b), (a, b))


# -- sets: cartesian products, combinations, index triangles, grids ------------------------------------------

def test_cartesian_prod(device):
    a, b, c = [1, 2], [3, 4, 5], [6]
    got = core.cartesian_prod(_t(np.array(a), device), _t(np.array(b), device), _t(np.array(c), device))
    assert _np(got).tolist() == [list(p) for p in itertools.product(a, b, c)]
    single = _t(np.array(a), device)
    assert core.cartesian_prod(single).tolist() == a
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 2\]"):
        core.cartesian_prod(core.ones(2, 2))


@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations(device, r, with_replacement):
    a = [10, 20, 30, 40]
    got = core.combinations(_t(np.array(a), device), r, with_replacement=with_replacement)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    ref = [list(p) for p in pick(a, r)]
    if r == 0:
        assert got.shape == (0,)
    else:
        assert _np(got).tolist() == ref and got.shape == (len(ref), r)


def test_combinations_errors():
    with pytest.raises(RuntimeError, match="Expect a non-negative number, but got -1"):
        core.combinations(core.ones(3), -1)
    with pytest.raises(RuntimeError, match="Expect a 1D vector"):
        core.combinations(core.ones(2, 2))


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 5, 1), (5, 3, -2), (4, 4, 9), (4, 4, -9), (0, 3, 0)])
def test_tril_triu_indices(device, row, col, offset):
    got = core.tril_indices(row, col, offset, device=device)
    assert _np(got).tolist() == [list(v) for v in np.tril_indices(row, offset, col)]
    got = core.triu_indices(row, col, offset, device=device)
    assert _np(got).tolist() == [list(v) for v in np.triu_indices(row, offset, col)]


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(device, indexing):
    a, b, c = np.arange(2), np.arange(3), np.arange(4)
    got = core.meshgrid(_t(a, device), _t(b, device), _t(c, device), indexing=indexing)
    for g, r in zip(got, np.meshgrid(a, b, c, indexing=indexing)):
        assert _np(g).tolist() == r.tolist()


# -- NumPy's argument names -----------------------------------------------------------------------------

def test_numpy_axis_and_keepdims_are_accepted_for_dim_and_keepdim(device):
    a = np.random.default_rng(0).standard_normal((3, 4))
    t = _t(a, device)
    np.testing.assert_allclose(_np(core.sum(t, axis=0, keepdims=True)), a.sum(axis=0, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(_np(t.mean(axis=1)), a.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(_np(t.max(axis=0).values), a.max(axis=0))
    np.testing.assert_allclose(_np(core.std(t, axis=(0, 1))), a.std(ddof=1), rtol=1e-6)
    assert _np(t.argmax(axis=1)).tolist() == a.argmax(axis=1).tolist()
    np.testing.assert_allclose(_np(core.cumsum(t, axis=0)), a.cumsum(axis=0), rtol=1e-6)
    assert core.squeeze(t[None], axis=0).shape == (3, 4)
    np.testing.assert_allclose(_np(core.linalg.vector_norm(t, axis=1)), np.linalg.norm(a, axis=1), rtol=1e-6)
    np.testing.assert_allclose(_np(core.fft.fft(t, axis=0)), np.fft.fft(a, axis=0), rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="multiple values for argument 'dim'"):
        core.sum(t, dim=0, axis=0)
