"""NumPy kernels of the indexing family: the kit's reference reads, and the writes index_put_ and scatter_.

The writes scatter with ``ufunc.at`` (NumPy's; not every array module has it), so they are this backend's own.
The front-end has validated every index, so these kernels index without checks.
"""

from __future__ import annotations

import numpy as np

from ...kit.reference import compute_np, indexing as reference
from ...kit.reference.indexing import along, at_least_1d
from ..runtime import array

_AT = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _numpy_index(indices) -> tuple:
    return tuple(slice(None) if i is None else array(i) for i in indices)


def _detached(values: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``values``, copied if it may overlap the memory being written."""
    return values.copy() if np.may_share_memory(values, target) else values


def index_put_(spec, self, indices, values, accumulate=False):
    a = array(self)
    key = _numpy_index(indices)
    v = _detached(array(values), a)
    if not accumulate:
        a[key] = v
        return self
    cd = compute_np(self.dtype)
    if cd == a.dtype:
        np.add.at(a, key, v) if a.dtype != np.bool_ else np.logical_or.at(a, key, v)
    else:  # half types accumulate in float32, then round once
        work = a.astype(cd)
        np.add.at(work, key, v.astype(cd))
        a[...] = work.astype(a.dtype)
    return self


def scatter_(spec, self, dim, index, src, reduce=None, include_self=True):
    a, idx = at_least_1d(array(self)), at_least_1d(array(index))
    if idx.size == 0:
        return self
    dim = dim % a.ndim
    s = at_least_1d(array(src))
    s = _detached(s[tuple(slice(0, n) for n in idx.shape)], a)
    key = along(np, idx, dim)
    if reduce is None:
        a[key] = s
        return self
    cd = compute_np(self.dtype)
    work = a.astype(cd) if cd != a.dtype else a
    if not include_self:
        work[key] = _identity(reduce, cd)
    ufunc = _AT[reduce]
    if cd == np.bool_ and reduce in ("sum", "prod"):
        ufunc = np.logical_or if reduce == "sum" else np.logical_and
    ufunc.at(work, key, s.astype(cd))
    if work is not a:
        a[...] = work.astype(a.dtype)
    return self


def _identity(reduce: str, d: np.dtype):
    if reduce == "sum":
        return 0
    if reduce == "prod":
        return 1
    if d.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if d.kind == "b":
        return reduce == "amin"
    info = np.iinfo(d)
    return info.min if reduce == "amax" else info.max


def kernels(ctx) -> dict:
    """The reference reads over ``ctx``, and NumPy's writes."""
    return {**reference.kernels(ctx), "index_put_": index_put_, "scatter_": scatter_}
