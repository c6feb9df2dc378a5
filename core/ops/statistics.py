"""Statistics over data: histograms and counts, quantiles, NaN-ignoring medians, modes, covariance.

All are composites of sort, searchsorted, gather, scatter-add and arithmetic, so they run on every device and,
where PyTorch differentiates them (quantile, nanquantile, nanmedian and mode values, cov, corrcoef), get autograd
from the ops they are built of.
"""

from __future__ import annotations

import builtins
import math
import numbers
import warnings

from .. import dtypes as dt
from ..tensor import Tensor
from ._util import exporter, finish_out, wrap_dim
from .creation import full, tensor, zeros
from .elementwise import isnan, logical_not, sqrt, where
from .indexing import scatter_add
from .ranges import arange, linspace
from .reduction import _finish_pair, cummax, return_type
from .shape import cat
from .sorting import searchsorted, sort
from .view import movedim, reshape

__all__: list = []
METHODS: dict = {}

_nanmedian_t = return_type("nanmedian", ("values", "indices"))
_mode_t = return_type("mode", ("values", "indices"))
_histogram_t = return_type("histogram", ("hist", "bin_edges"))
_histogramdd_t = return_type("histogramdd", ("hist", "bin_edges"))

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


_export = exporter(__all__, METHODS)


def _check_tensor(op: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def _is_float(t: Tensor) -> bool:
    return t.dtype.category == dt._FLOAT


# -- counts and histograms ----------------------------------------------------------------------------

def bincount(input, weights=None, minlength=0):
    """Count of each value of a 1-D non-negative integer tensor, or the sum of its ``weights`` (``torch.bincount``)."""
    _check_tensor("bincount", input)
    if input.ndim != 1 or input.dtype.category != dt._INT or input.dtype is dt.bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if input.numel() and bool((input < 0).any()):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    length = builtins.max(int(input.max()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        source, dtype = full(input.shape, 1, dtype=dt.int64, device=input.device), dt.int64
    else:
        dtype = dt.float32 if weights.dtype is dt.float32 else dt.float64
        source = weights.to(dtype)
    return scatter_add(zeros(length, dtype=dtype, device=input.device), 0, input.to(dt.int64), source)


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002 - PyTorch's names
    """Histogram of ``bins`` equal bins over ``[min, max]`` (the data's range when both are 0) (``torch.histc``)."""
    _check_tensor("histc", input)
    if not _is_float(input):
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{dt.legacy_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    low, high = float(min), float(max)
    if low == high and input.numel():
        low, high = float(input.min()), float(input.max())
    if low == high:
        low, high = low - 1, high + 1
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histc(): range of [{low}, {high}] is not finite")
    if low > high:
        raise RuntimeError(f"torch.histc(): max must be larger than min, but got min {low} max {high}")
    x = reshape(input, (-1,)).to(dt.float64)
    inside = (x >= low) & (x <= high)
    position = ((x - low) * (bins / (high - low))).floor().clamp(0, bins - 1).to(dt.int64)
    counts = scatter_add(zeros(bins, dtype=dt.float64, device=input.device), 0, position, inside.to(dt.float64))
    return finish_out("histc", counts.to(input.dtype), out)


def _uniform_edges(op: str, values: Tensor, bins, bounds) -> Tensor:
    """``bins + 1`` equal-width edges over ``bounds`` (``values``' range when None; widened by 0.5 when empty)."""
    if int(bins) <= 0:
        raise RuntimeError(f"torch.{op}(): bins must be > 0, but got {bins} for dimension 0")
    if bounds is not None:
        low, high = float(bounds[0]), float(bounds[1])
    elif values.numel():
        low, high = float(values.min()), float(values.max())
    else:
        low, high = 0.0, 0.0
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.{op}(): range of [{low}, {high}] is not finite")
    if low > high:
        raise RuntimeError(f"torch.{op}(): min should not exceed max, but got min {low} max {high}")
    if low == high:
        low, high = low - 0.5, high + 0.5
    return linspace(low, high, int(bins) + 1, dtype=values.dtype, device=values.device)


def _bin_positions(x: Tensor, edges: Tensor) -> tuple:
    """The bin of each element of 1-D ``x`` (the last bin closed on the right) and whether it lies in any bin."""
    count = edges.numel() - 1
    position = searchsorted(edges, x.contiguous(), right=True) - 1
    position = where(x == edges[-1], count - 1, position)
    inside = (x >= edges[0]) & (x <= edges[-1])
    return position.clamp(0, builtins.max(count - 1, 0)), inside


def histogram(input, bins, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """``(hist, bin_edges)`` of ``input`` over ``bins``, a count or the edges as a 1-D tensor (``torch.histogram``)."""
    _check_tensor("histogram", input)
    if not _is_float(input):
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{dt.legacy_name(input.dtype)}'")
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 1:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension and at least 1 element, "
                               f"but got {bins.ndim} dimensions and {bins.numel()} elements")
        if range is not None:
            raise TypeError("histogram(): range cannot be given with a tensor of bin edges")
        edges = bins.to(device=input.device, dtype=input.dtype)
    else:
        edges = _uniform_edges("histogram", input, bins, range)
    if weight is not None and weight.shape != input.shape:
        raise RuntimeError("torch.histogram(): if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{tuple(input.shape)} and weight with shape {tuple(weight.shape)}")
    count = edges.numel() - 1
    x = reshape(input, (-1,))
    hist_dtype = input.dtype
    if count < 1 or x.numel() == 0:
        hist = zeros(builtins.max(count, 0), dtype=hist_dtype, device=input.device)
    else:
        position, inside = _bin_positions(x, edges)
        w = inside.to(hist_dtype) if weight is None else where(inside, reshape(weight, (-1,)).to(hist_dtype), 0)
        hist = scatter_add(zeros(count, dtype=hist_dtype, device=input.device), 0, position, w)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    result = _histogram_t(hist, edges)
    return _finish_pair("histogram", result, out)


def histogramdd(input, bins, *, range=None, weight=None, density=False):  # noqa: A002
    """``(hist, bin_edges)``: the D-dimensional histogram of the points in the rows of ``input`` (shape
    ``(..., D)``); ``bins`` is a count, a count per dim or a list of edge tensors, ``range`` is
    ``[min0, max0, min1, max1, ...]`` (``torch.histogramdd``)."""
    _check_tensor("histogramdd", input)
    if not _is_float(input):
        raise RuntimeError(f"\"histogramdd_cpu\" not implemented for '{dt.legacy_name(input.dtype)}'")
    if input.dim() < 2:
        raise RuntimeError(f"torch.histogramdd(): input should have at least 2 dimensions, but got {input.dim()}")
    dims = input.shape[-1]
    points = reshape(input, (-1, dims))
    per_dim = [bins] * dims if isinstance(bins, numbers.Integral) else list(bins)
    if len(per_dim) != dims:
        raise RuntimeError(f"torch.histogramdd(): expected {dims} sequences of bin edges for each of the {dims} "
                           f"dimensions of the input, but got {len(per_dim)}")
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd(): for a {dims}-dimensional histogram range should have "
                           f"{2 * dims} elements, but got {len(range)}")
    edges = [b.to(device=input.device, dtype=input.dtype) if isinstance(b, Tensor)
             else _uniform_edges("histogramdd", points[:, d], b, None if range is None else range[2 * d:2 * d + 2])
             for d, b in enumerate(per_dim)]
    counts = [e.numel() - 1 for e in edges]
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError("torch.histogramdd(): if weight tensor is provided it should have the same shape as the "
                           "input tensor excluding its innermost dimension")
    total = 1
    for c in counts:
        total *= builtins.max(c, 0)
    flat = zeros(total, dtype=input.dtype, device=input.device)
    if total and points.shape[0]:
        cell = zeros(points.shape[0], dtype=dt.int64, device=input.device)
        inside = full((points.shape[0],), True, dtype=dt.bool, device=input.device)
        for d, e in enumerate(edges):  # row-major cell index, one dim at a time
            position, in_dim = _bin_positions(points[:, d], e)
            cell, inside = cell * counts[d] + position, inside & in_dim
        w = inside.to(input.dtype)
        if weight is not None:
            w = where(inside, reshape(weight, (-1,)).to(input.dtype), 0)
        flat = scatter_add(flat, 0, cell, w)
    hist = reshape(flat, tuple(counts))
    if density:
        volume = None
        for d, e in enumerate(edges):
            shape = [1] * dims
            shape[d] = counts[d]
            width = reshape(e[1:] - e[:-1], tuple(shape))
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return _histogramdd_t(hist, edges)


# -- quantiles and medians ----------------------------------------------------------------------------

def _quantile(op: str, input, q, dim, keepdim, interpolation, ignore_nan: bool, out):
    _check_tensor(op, input)
    if input.dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not isinstance(q, numbers.Real):
            raise TypeError(f"{op}(): argument 'q' must be a float or a Tensor, not {type(q).__name__}")
        if not 0 <= q <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
        q = tensor([float(q)], dtype=input.dtype, device=input.device)
    else:
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        if q.device != input.device:
            raise RuntimeError(f"{op}() q tensor must be on the same device as the input tensor")
        if q.numel() and bool(((q < 0) | (q > 1)).any()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        scalar_q = q.ndim == 0
        q = reshape(q, (-1,))
    if dim is None:
        x, d = reshape(input, (-1,)), 0
        reduced = tuple(1 for _ in input.shape) if keepdim else ()
    else:
        d = wrap_dim(dim, builtins.max(input.ndim, 1), op)
        x = reshape(input, (1,)) if input.ndim == 0 else input
        reduced = list(input.shape)
        if reduced:
            if keepdim:
                reduced[d] = 1
            else:
                del reduced[d]
        reduced = tuple(reduced)
        if x.shape[d] == 0:
            raise RuntimeError(f"{op}() input tensor must be non-empty")
    values = sort(movedim(x, d, -1), -1).values  # NaN sorts last
    n = values.shape[-1]
    nan_count = isnan(values).sum(-1, keepdim=True)
    if ignore_nan:  # rank within the non-NaN values; a row of NaN only points at its last (NaN) value
        valid = (n - nan_count).to(input.dtype)
        ranks = q * (valid - 1).clamp(min=0)
        ranks = where(nan_count == n, float(n - 1), ranks)
    else:  # a row holding NaN has NaN quantiles: point at its last (NaN) value
        ranks = where(nan_count > 0, float(n - 1), q * (n - 1))
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.floor().to(dt.int64)
    result = values.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        above = ranks.ceil().to(dt.int64)
        upper = values.gather(-1, above)
        weight = (ranks - below.to(ranks.dtype)) if interpolation == "linear" else 0.5
        # where() keeps the gradient finite when both ends are one value; below == above means weight 0 anyway
        result = where(below == above, result, result + (upper - result) * weight)
    result = movedim(result, -1, 0)  # (q, reduced...)
    result = reshape(result, (q.shape[0],) + reduced)
    if scalar_q:
        result = reshape(result, reduced)
    return finish_out(op, result, out)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-th quantiles over ``dim`` (all elements when None); NaN propagates (``torch.quantile``)."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False, out)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``quantile`` ignoring NaN; a row of NaN only gives NaN (``torch.nanquantile``)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True, out)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """Lower median ignoring NaN, of all elements or ``(values, indices)`` over ``dim`` (``torch.nanmedian``)."""
    _check_tensor("nanmedian", input)
    if dim is None:
        if input.numel() == 0:
            return finish_out("nanmedian", full((), math.nan, dtype=input.dtype, device=input.device), out)
        return finish_out("nanmedian", nanmedian(reshape(input, (-1,)), 0).values, out)
    d = wrap_dim(dim, builtins.max(input.ndim, 1), "nanmedian")
    x = reshape(input, (1,)) if input.ndim == 0 else input
    if x.shape[d] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero size.")
    values, indices = sort(x, d, stable=True)
    if _is_float(input):
        valid = logical_not(isnan(x)).sum(d, keepdim=True)
        k = ((valid - 1).clamp(min=0) // 2)
    else:
        k = full([1] * x.ndim, (x.shape[d] - 1) // 2, dtype=dt.int64, device=x.device).expand(
            *[1 if i == d else s for i, s in enumerate(x.shape)])
    values, indices = values.gather(d, k), indices.gather(d, k)
    if not keepdim or input.ndim == 0:
        values, indices = values.squeeze(d), indices.squeeze(d)
    if input.ndim == 0:
        values, indices = reshape(values, ()), reshape(indices, ())
    return _finish_pair("nanmedian", _nanmedian_t(values, indices), out)


def mode(input, dim=-1, keepdim=False, *, out=None):
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest of a tie) and an index of it
    (``torch.mode``)."""
    _check_tensor("mode", input)
    d = wrap_dim(dim, builtins.max(input.ndim, 1), "mode")
    x = reshape(input, (1,)) if input.ndim == 0 else input
    if x.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    values, indices = sort(movedim(x, d, -1), -1, stable=True)
    n = values.shape[-1]
    position = arange(n, device=x.device)
    if n > 1:
        change = values[..., 1:] != values[..., :-1]
        true = full(values.shape[:-1] + (1,), True, dtype=dt.bool, device=x.device)
        starts = where(cat([true, change], -1), position, 0)
        ends = cat([change, true], -1)
    else:
        starts = zeros(values.shape, dtype=dt.int64, device=x.device)
        ends = full(values.shape, True, dtype=dt.bool, device=x.device)
    run_start = cummax(starts, -1).values
    run_length = where(ends, position - run_start + 1, 0)
    best = run_length.argmax(-1, keepdim=True)  # the first maximum: the smallest value of a tie
    values, indices = values.gather(-1, best), indices.gather(-1, best)
    values, indices = movedim(values, -1, d), movedim(indices, -1, d)
    if not keepdim or input.ndim == 0:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return _finish_pair("mode", _mode_t(values.contiguous(), indices.contiguous()), out)



# -- covariance ---------------------------------------------------------------------------------------

def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the variables in the rows of ``input`` (observations in columns) (``torch.cov``)."""
    _check_tensor("cov", input)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = reshape(input, (1, -1)) if input.ndim < 2 else input
    observations = x.shape[1]
    if input.dtype.category < dt._FLOAT:
        x = x.to(dt.get_default_dtype())
    w = None
    if fweights is not None:
        if fweights.ndim > 1:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but got fweights with "
                               f"{fweights.ndim} dimensions")
        if fweights.dtype.category != dt._INT or fweights.dtype is dt.bool:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{dt.legacy_name(fweights.dtype)} dtype")
        if fweights.numel() != observations:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are observations in the "
                               f"input but got {fweights.numel()} != {observations}")
        if observations and bool((fweights < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        if aweights.ndim > 1:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but got aweights with "
                               f"{aweights.ndim} dimensions")
        if aweights.dtype.category != dt._FLOAT:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{dt.legacy_name(aweights.dtype)} dtype")
        if aweights.numel() != observations:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are observations in the "
                               f"input but got {aweights.numel()} != {observations}")
        if observations and bool((aweights < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    if w is not None:
        w = reshape(w, (-1,)).to(dt.promote_types(x.dtype, w.dtype))
        w_sum = w.sum()
        average = (x * w).sum(1) / w_sum
    else:
        w_sum = observations
        average = x.mean(1)
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if bool(norm <= 0) if isinstance(norm, Tensor) else norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", RuntimeWarning, stacklevel=2)
        norm = norm.clamp(min=0) if isinstance(norm, Tensor) else 0
    centred = x - average.unsqueeze(1)
    weighted = centred if w is None else centred * w
    weighted = weighted.transpose(0, 1)
    product = centred.matmul(weighted.conj() if weighted.is_complex() else weighted)
    return (product / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of ``input`` (``torch.corrcoef``)."""
    _check_tensor("corrcoef", input)
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    stddev = sqrt(c.diagonal())
    c = c / stddev.unsqueeze(1) / stddev.unsqueeze(0)
    return c.clamp(-1, 1)


for _fn in (bincount, histc, histogram, quantile, nanquantile, nanmedian, mode):
    _export(_fn)
for _fn in (cov, corrcoef):
    _export(_fn)
_export(histogramdd, method=False)
