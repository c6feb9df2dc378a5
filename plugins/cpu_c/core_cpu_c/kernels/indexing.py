"""Gather, scatter and advanced indexing (core.ops.indexing, csrc/movement.c): ``gather``, ``scatter_``, ``index``,
``index_put_`` (index tensors on adjacent dims) and ``nonzero``."""

from __future__ import annotations

import math

import numpy as np
from core.backends.api import coalesce

from ..layout import check_bounds
from ..movement import C, TYPE_CODES, Movement, aligned, overlap, writable
from ..runtime import array

__all__ = ["kernels", "OPS", "NONZERO_CHUNK"]

OPS = ("gather", "scatter_", "index", "index_put_", "nonzero")  # sized by the output or the tensor written
_SELF_SIZED = ("nonzero",)  # its output size is data-dependent (meta: (None, ndim)): it checks its input's size
_GATHER_SIZES = (1, 2, 4, 8)
_REDUCE_CODES = {None: 0, "sum": 1, "prod": 2, "amax": 3, "amin": 4}
_NONZERO_CODES = {**TYPE_CODES, "float16": 8, "bfloat16": 8}  # 8: nonzero when a bit other than the sign is set
NONZERO_CHUNK = 65536  # elements per counting chunk (the unit the threads share)
MULTI_INDEX_MIN_ROW = 16  # several index tensors run C when each picks rows of at least this many elements
MAX_DIMS = 64  # csrc/movement.c's limit for gather/scatter


class _Indexing(Movement):
    def gather(self, base):
        def kernel(spec, input, dim, index):
            d = input.dtype
            if d.itemsize in _GATHER_SIZES and index.dtype.name == "int64" and spec.dtype == d:
                (xs, xst), (ish, ist) = self._1d(input), self._1d(index)
                ndim = len(xs)
                if (len(ish) == ndim <= MAX_DIMS and min(xst) >= 0 and min(ist) >= 0
                        and all(ish[k] <= xs[k] for k in range(ndim) if k != dim % ndim)):
                    dim %= ndim
                    out, _ = self.empty(spec.shape, d)
                    if not out.numel():
                        return out
                    check_bounds("gather", input)
                    check_bounds("gather", index)
                    meta = self.longs([*ish, *xst, *ist, 0])
                    if C["gather"](d.itemsize, ndim, meta, meta + ndim, meta + 2 * ndim, dim, xs[dim],
                                   self.ptr(input), self.ffi.cast("long long *", self.ptr(index)), self.ptr(out),
                                   meta + 3 * ndim):
                        raise RuntimeError(f"index {meta[3 * ndim]} is out of bounds for dimension {dim} with "
                                           f"size {xs[dim]}")
                    return out
            return base(spec, input, dim, index)

        return kernel

    def scatter_(self, base):
        def kernel(spec, self_, dim, index, src, reduce=None, include_self=True):
            d = self_.dtype
            code = TYPE_CODES.get(d.name)
            if (code is not None and index.dtype.name == "int64" and src.dtype == d and reduce in _REDUCE_CODES
                    and index.numel()):
                (ss, sst), (ish, ist), (xs, xst) = self._1d(self_), self._1d(index), self._1d(src)
                ndim = len(ss)
                if (len(ish) == ndim == len(xs) <= MAX_DIMS and writable(self_) and min(ist) >= 0
                        and min(xst) >= 0 and all(ish[k] <= xs[k] for k in range(ndim))
                        and all(ish[k] <= ss[k] for k in range(ndim) if k != dim % ndim)):
                    dim %= ndim
                    for t in (self_, index, src):
                        check_bounds("scatter_", t)
                    if not (overlap(self_, src) or overlap(self_, index)):
                        meta = self.longs([*ish, *sst, *ist, *xst, 0])
                        if C["scatter"](code, _REDUCE_CODES[reduce], int(bool(include_self)), ndim, meta,
                                        meta + ndim, meta + 2 * ndim, meta + 3 * ndim, dim, ss[dim], self.ptr(self_),
                                        self.ffi.cast("long long *", self.ptr(index)), self.ptr(src),
                                        meta + 4 * ndim):
                            raise RuntimeError(f"index {meta[4 * ndim]} is out of bounds for dimension {dim} with "
                                               f"size {ss[dim]}")
                        return self_
            return base(spec, self_, dim, index, src, reduce, include_self)

        return kernel

    # -- advanced indexing: index tensors on adjacent dims ------------------------------------------------------------

    def _index_plan(self, op: str, t, indices):
        """How C walks ``t[indices]`` as a (P, J, Q) problem, or None (NumPy's kernel runs).

        The index tensors must sit on adjacent dims d..d+k-1 (then their broadcast dims B replace those dims in
        place) and t's dims before and after them must each merge into one (P and Q). One index tensor is read
        where it lies (J = its elements, values in [-size, size)); several become one int64 array of element
        offsets along the indexed dims (J = prod(B), values in [0, farthest offset]), computed with NumPy.
        Returns (d, k, B, P, J, Q, t's (p, dim, q) strides, low, high, holder, pointer, stride of the index)."""
        positions = [m for m, i in enumerate(indices) if i is not None]
        if not positions or positions[-1] - positions[0] + 1 != len(positions) or not t._shape:
            return None
        d, k = positions[0], len(positions)
        tensors = [indices[m] for m in positions]
        if any(i.dtype.name != "int64" or any(s < 0 for s in i._stride) for i in tensors) or min(t._stride) < 0:
            return None
        pre = coalesce(t._shape[:d], [t._stride[:d]], min_rank=1)
        post = coalesce(t._shape[d + k:], [t._stride[d + k:]], min_rank=1)
        if len(pre[0]) != 1 or len(post[0]) != 1:
            return None
        check_bounds(op, t)
        for i in tensors:
            check_bounds(op, i)
        if k == 1:
            index, size = tensors[0], t._shape[d]
            B = index._shape
            flat = coalesce(B or (1,), [index._stride or (0,)], min_rank=1)
            low, high, dim_stride = -size, size, t._stride[d]
            if len(flat[0]) == 1:
                holder, pointer, stride = index, self.ffi.cast("long long *", self.ptr(index)), flat[1][0][0]
            else:  # no single strided run: a small dense copy
                holder, pointer, stride = np.ascontiguousarray(array(index).reshape(-1)), None, 1
        else:
            if post[0][0] < MULTI_INDEX_MIN_ROW:  # point picks (x[i, j]): NumPy's fancy indexing does them well,
                return None  # and combining the indices would cost NumPy passes of their own
            try:
                B = np.broadcast_shapes(*(i._shape for i in tensors))
            except ValueError:
                return None
            holder = np.zeros(B, np.int64)
            for m, i in enumerate(tensors):
                size, stride = t._shape[d + m], t._stride[d + m]
                a = array(i)
                holder += np.where(a < 0, a + size, a) * stride
            holder, pointer, stride = holder.reshape(-1), None, 1
            low, high, dim_stride = 0, 1 + sum((t._shape[d + m] - 1) * t._stride[d + m] for m in range(k)), 1
        if pointer is None:
            pointer = self.ffi.cast("long long *", self.ffi.from_buffer(holder))
        return d, k, tuple(B), pre[0][0], math.prod(B), post[0][0], (pre[1][0][0], dim_stride, post[1][0][0]), \
            low, high, holder, pointer, stride

    @staticmethod
    def _index_error(k: int, bad: int, size: int):
        if k == 1:
            return IndexError(f"index {bad} is out of bounds for dimension 0 with size {size}")
        return IndexError(f"index out of range: element offset {bad} along the indexed dims")

    def index(self, base):
        def kernel(spec, input, indices):
            d = input.dtype
            plan = None
            if d.itemsize in _GATHER_SIZES and spec.dtype == d:
                plan = self._index_plan("index", input, indices)
            if plan is not None:
                dim, k, _, P, J, Q, strides, low, high, holder, pointer, istride = plan
                out, _ = self.empty(spec.shape, d)
                if P * J * Q == 0:
                    return out
                meta = self.longs([*strides, 0])
                if C["index"](d.itemsize, P, J, Q, meta, low, high, self.ptr(input), pointer, istride, self.ptr(out),
                              meta + 3):
                    raise self._index_error(k, meta[3], input._shape[dim])
                return out
            return base(spec, input, indices)

        return kernel

    def index_put_(self, base):
        def kernel(spec, self_, indices, values, accumulate=False):
            code = TYPE_CODES.get(self_.dtype.name)
            plan = None
            if code is not None and values.dtype == self_.dtype and writable(self_):
                plan = self._index_plan("index_put_", self_, indices)
            if plan is not None:
                dim, k, B, P, J, Q, strides, low, high, holder, pointer, istride = plan
                shape = self_._shape
                target = (*shape[:dim], *B, *shape[dim + k:])
                vstrides = aligned(values, target) if len(values._shape) <= len(target) else None
                if vstrides is not None:
                    b = len(B)
                    groups = [coalesce(target[:dim], [tuple(vstrides[:dim])], min_rank=1),
                              coalesce(target[dim:dim + b], [tuple(vstrides[dim:dim + b])], min_rank=1),
                              coalesce(target[dim + b:], [tuple(vstrides[dim + b:])], min_rank=1)]
                    check_bounds("index_put_", values)
                    if (all(len(g[0]) == 1 for g in groups) and not overlap(self_, values)
                            and not any(i is not None and overlap(self_, i) for i in indices)):
                        if P * J * Q == 0:
                            return self_
                        meta = self.longs([*strides, *(g[1][0][0] for g in groups), 0])
                        if C["index_put"](code, int(bool(accumulate)), P, J, Q, meta, meta + 3, low, high,
                                          self.ptr(self_), pointer, istride, self.ptr(values), meta + 6):
                            raise self._index_error(k, meta[6], shape[dim])
                        return self_
            return base(spec, self_, indices, values, accumulate)

        return kernel

    # -- nonzero --------------------------------------------------------------------------------------------------

    def nonzero(self, base):
        def kernel(spec, input):
            code = _NONZERO_CODES.get(input.dtype.name)
            shape, strides = input._shape, input._stride
            n = math.prod(shape)
            if (code is not None and shape and n and n >= self.ctx.min_numel and len(shape) <= MAX_DIMS
                    and min(strides) >= 0):
                check_bounds("nonzero", input)
                ndim = len(shape)
                meta = self.longs([*shape, *strides])
                counts = np.empty(-(-n // NONZERO_CHUNK), np.int64)
                longs = self.ffi.cast("long long *", self.ffi.from_buffer(counts))
                C["nonzero_count"](code, ndim, meta, meta + ndim, self.ptr(input), NONZERO_CHUNK, longs)
                offsets = np.zeros(len(counts) + 1, np.int64)
                np.cumsum(counts, out=offsets[1:])
                total = int(offsets[-1])
                out, buf = self.empty((total, ndim), spec.dtype)  # int64
                if total:
                    C["nonzero_write"](code, ndim, meta, meta + ndim, self.ptr(input), NONZERO_CHUNK,
                                       self.ffi.cast("long long *", self.ffi.from_buffer(offsets)),
                                       self.ffi.cast("long long *", buf))
                return out
            return base(spec, input)

        return kernel


def kernels(ctx) -> dict:
    """{op: Kernel}, each falling back to the NumPy kernel it replaces."""
    return _Indexing(ctx).kernels(OPS, _SELF_SIZED)
