"""cpu_c's data-movement kernels: copies and casts, fills, ranges, cat, flip, gather/scatter and single-tensor
advanced indexing (csrc/movement.c).

Each kernel validates its operands in Python (every view inside its storage, non-negative strides, no written
tensor with two elements at one address, written memory overlapping nothing that is read) and makes its C calls;
what C does not cover runs the NumPy reference kernel it replaces, so results never depend on the path:

- Same-dtype copies move raw elements (any dtype of 1, 2, 4, 8 or 16 bytes, half and complex included); casts
  between bool, uint8, int8, int16, int32, int64, float32 and float64 are C conversions, which equal NumPy's
  astype wherever C defines them. A float -> integer value that is NaN or out of range (undefined in C, and
  platform-specific in NumPy) makes C stop converting and report it; the NumPy kernel then redoes the copy.
- Overlapping source and destination (``x[1:].copy_(x[:-1])`` through strided views) run NumPy, which buffers.
- logspace_fill_ stays on NumPy: its ``np.power`` may use SIMD code whose rounding differs from libm's ``pow``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from core.backends.api import coalesce, contiguous_strides

from .layout import check_bounds
from .runtime import _address, new_tensor

__all__ = ["MOVEMENT_OPS", "build_movement_kernels", "sized_thresholds", "C"]

MOVEMENT_OPS = ("copy_", "fill_", "arange_fill_", "linspace_fill_", "cat", "flip", "gather", "scatter_", "index",
                "index_put_", "nonzero")
_SELF_SIZED = ("nonzero",)  # its output size is data-dependent (meta: (None, ndim)): it checks its input's size
TYPE_CODES = {"bool": 0, "uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float32": 6, "float64": 7}
_MOVE_SIZES = (1, 2, 4, 8, 16)
_GATHER_SIZES = (1, 2, 4, 8)
_REDUCE_CODES = {None: 0, "sum": 1, "prod": 2, "amax": 3, "amin": 4}
_NONZERO_CODES = {**TYPE_CODES, "float16": 8, "bfloat16": 8}  # 8: nonzero when a bit other than the sign is set
NONZERO_CHUNK = 65536  # elements per counting chunk (the unit the threads share)
DENSE_FACTOR = 64  # dense same-dtype copies and fills run C from DENSE_FACTOR * min_numel elements
MULTI_INDEX_MIN_ROW = 16  # several index tensors run C when each picks rows of at least this many elements
_INT64_MIN, _INT64_END = -(2**63), 2**63
MAX_DIMS = 64  # csrc/movement.c's limit for gather/scatter
C: dict = {}  # short name -> the extension's function; looked up per call (tests count calls through it)


def _aligned(t, shape: tuple):
    """``t``'s strides broadcast to ``shape`` (0 on broadcast dims), or None when a stride is negative."""
    strides = t._stride
    if any(s < 0 for s in strides):
        return None
    lead = len(shape) - len(t._shape)
    out = [0] * lead
    for size, full, stride in zip(t._shape, shape[lead:], strides):
        out.append(stride if size == full and size != 1 else 0)
    return out


def _writable(t) -> bool:
    """Memory NumPy may write (not a read-only array's) with no two elements of ``t`` at one address through a zero
    stride, and no negative strides. Otherwise NumPy's kernel runs (and raises where it refuses)."""
    return t._storage.data.flags.writeable and all(s > 0 or (s == 0 and n <= 1) for n, s in zip(t._shape, t._stride))


def _span(t) -> tuple:
    """[first byte, end byte) of a non-empty tensor with non-negative strides."""
    isz = t.dtype.itemsize
    start = _address(t._storage.data) + t._offset * isz
    return start, start + (1 + sum((n - 1) * s for n, s in zip(t._shape, t._stride))) * isz


def _overlap(a, b) -> bool:
    """Whether the memory of tensors ``a`` and ``b`` may overlap (their byte spans intersect)."""
    if not a.numel() or not b.numel():
        return False
    if a._storage is not b._storage and not np.may_share_memory(a._storage.data, b._storage.data):
        return False
    a0, a1 = _span(a)
    b0, b1 = _span(b)
    return a0 < b1 and b0 < a1


def _memory_order(shape: tuple, strides: list) -> tuple:
    """(shape, [strides per tensor]) with dims reordered by the first tensor's strides, largest first, so the walk
    goes through the written memory in order (a fill of a transposed view must not stride through it)."""
    first = strides[0]
    if all(a >= b for a, b in zip(first, first[1:])):
        return shape, strides
    order = sorted(range(len(shape)), key=lambda k: -first[k])
    return tuple(shape[k] for k in order), [tuple(s[k] for k in order) for s in strides]


class _Movement:
    """The kernels over one extension: pointers, scratch arrays and the C calls."""

    def __init__(self, ctx):
        self.ctx, self.ffi, self.key = ctx, ctx.ffi, ctx.key
        lib = ctx.lib
        C.update(copy_cast=lib.ccc_copy_cast, copy_bytes=lib.ccc_copy_bytes, arange_int=lib.ccc_arange_int,
                 arange_double=lib.ccc_arange_double, linspace=lib.ccc_linspace, gather=lib.ccc_gather,
                 scatter=lib.ccc_scatter, index=lib.ccc_index, index_put=lib.ccc_index_put,
                 nonzero_count=lib.ccc_nonzero_count, nonzero_write=lib.ccc_nonzero_write)

    def dense_min(self) -> int:
        """Elements from which a dense same-dtype copy or fill runs C: below, NumPy's memcpy/memset costs less per
        call, and C has nothing to add but threads (which it starts from 262144 elements, COPY_PARALLEL_MIN)."""
        return DENSE_FACTOR * self.ctx.min_numel

    def ptr(self, t):
        """A pointer to tensor ``t``'s first element (its view already checked)."""
        return self.ffi.from_buffer(t._storage.data) + t._offset * t.dtype.itemsize

    def longs(self, values: list):
        return self.ffi.new("long long[]", values)

    # -- copies ---------------------------------------------------------------------------------------------------

    def copy_into(self, op: str, dst, src, dst_offset: int = 0, dst_shape=None, dst_strides=None) -> bool:
        """Copy ``src`` (broadcast, cast) into ``dst`` (or into the view of dst's storage given by the dst_*
        arguments, already checked); False, with nothing or something harmless written, when NumPy must do it."""
        shape = dst._shape if dst_shape is None else dst_shape
        if not math.prod(shape):
            return True
        same = dst.dtype == src.dtype
        if same:
            if dst.dtype.itemsize not in _MOVE_SIZES:
                return False
        elif dst.dtype.name not in TYPE_CODES or src.dtype.name not in TYPE_CODES:
            return False
        if dst_shape is None:
            if not _writable(dst):
                return False
            check_bounds(op, dst)
            dst_strides = dst._stride
        if src._shape == shape and src._stride == dst_strides and dst_strides == contiguous_strides(shape):
            if same and dst_shape is None and math.prod(shape) < self.dense_min():
                return False  # a memcpy for NumPy too, at a lower cost per call
            check_bounds(op, src)  # both dense: one run, no collapsing
            if dst_shape is None and _overlap(dst, src):
                return False
            k, meta = 1, self.longs([math.prod(shape), 1, 1])
        else:
            src_strides = _aligned(src, shape)
            if src_strides is None:
                return False
            check_bounds(op, src)
            if dst_shape is None and _overlap(dst, src):
                return False
            cshape, (cdst, csrc) = coalesce(*_memory_order(shape, [tuple(dst_strides), tuple(src_strides)]),
                                            min_rank=1)
            k = len(cshape)
            meta = self.longs([*cshape, *cdst, *csrc])
        pdst = self.ffi.from_buffer(dst._storage.data) + (dst._offset + dst_offset) * dst.dtype.itemsize
        if same:
            C["copy_bytes"](dst.dtype.itemsize, k, meta, meta + k, meta + 2 * k, pdst, self.ptr(src))
            return True
        return C["copy_cast"](TYPE_CODES[dst.dtype.name], TYPE_CODES[src.dtype.name], k, meta, meta + k,
                              meta + 2 * k, pdst, self.ptr(src)) == 0

    def copy_(self, base):
        def kernel(spec, self_, src, non_blocking=False):
            if hasattr(src, "_storage") and self.copy_into("copy_", self_, src):
                return self_
            return base(spec, self_, src, non_blocking)

        return kernel

    def fill_(self, base):
        def kernel(spec, self_, value):
            d = self_.dtype
            n = self_.numel()
            if (isinstance(value, (numbers.Number, np.generic)) and d.itemsize in _MOVE_SIZES and _writable(self_)
                    and n and (n >= self.dense_min() or not self_.is_contiguous())):
                check_bounds("fill_", self_)
                scalar = np.asarray(value).astype(d.numpy)  # the reference's conversion, warnings and all
                shape = self_._shape or (1,)
                cshape, (cdst,) = coalesce(*_memory_order(shape, [tuple(self_._stride) or (0,)]), min_rank=1)
                k = len(cshape)
                meta = self.longs([*cshape, *cdst, *([0] * k)])
                C["copy_bytes"](d.itemsize, k, meta, meta + k, meta + 2 * k, self.ptr(self_),
                                self.ffi.from_buffer(scalar.reshape(1)))
                return self_
            return base(spec, self_, value)

        return kernel

    # -- ranges ---------------------------------------------------------------------------------------------------

    def _range_target(self, op: str, t):
        """(type code, element stride) of a 1-D tensor C can fill, else None."""
        code = TYPE_CODES.get(t.dtype.name)
        if code is None or len(t._shape) != 1 or not _writable(t):
            return None
        check_bounds(op, t)
        return code, t._stride[0]

    def arange_fill_(self, base):
        def kernel(spec, self_, start, step):
            target = self._range_target("arange_fill_", self_)
            n = self_._shape[0] if self_._shape else 0
            if target is not None and type(start) in (int, bool, float) and type(step) in (int, bool, float):
                if n == 0:
                    return self_
                code, stride = target
                if isinstance(start, int) and isinstance(step, int):  # the reference computes in int64
                    if _INT64_MIN <= start < _INT64_END and _INT64_MIN <= step < _INT64_END:
                        if C["arange_int"](code, n, start, step, self.ptr(self_), stride) == 0:
                            return self_
                else:  # float64: start + step * index
                    try:
                        first, delta = float(start), float(step)
                    except OverflowError:
                        return base(spec, self_, start, step)
                    if C["arange_double"](code, n, first, delta, self.ptr(self_), stride) == 0:
                        return self_
            return base(spec, self_, start, step)

        return kernel

    def linspace_fill_(self, base):
        def kernel(spec, self_, start, end):
            target = self._range_target("linspace_fill_", self_)
            if target is not None and type(start) in (int, bool, float) and type(end) in (int, bool, float):
                try:
                    first, last = float(start), float(end)  # np.float64(x): correctly rounded, as float()
                except OverflowError:
                    return base(spec, self_, start, end)
                n = self_._shape[0]
                if n == 0 or C["linspace"](target[0], n, first, last, self.ptr(self_), target[1]) == 0:
                    return self_
            return base(spec, self_, start, end)

        return kernel

    # -- cat and flip ---------------------------------------------------------------------------------------------

    def cat(self, base):
        def kernel(spec, tensors, dim=0):
            d = spec.dtype
            shape = spec.shape
            if d.itemsize in _MOVE_SIZES and all(t.dtype == d for t in tensors):
                out, _ = new_tensor(shape, d, math.prod(shape) * d.itemsize, self.key)
                if not out.numel():
                    return out
                dim %= len(shape)
                if math.prod(shape) < self.dense_min() and math.prod(shape[:dim]) == 1 and all(
                        t.is_contiguous() for t in tensors):
                    return base(spec, tensors, dim)  # one memcpy per piece for NumPy too
                pieces, start = [], 0
                for t in tensors:
                    if not t.numel():
                        continue
                    if (len(t._shape) != len(shape) or t._shape[:dim] != shape[:dim]
                            or t._shape[dim + 1:] != shape[dim + 1:] or start + t._shape[dim] > shape[dim]):
                        return base(spec, tensors, dim)
                    pieces.append((t, start * out._stride[dim]))
                    start += t._shape[dim]
                if all(self.copy_into("cat", out, t, offset, t._shape, out._stride) for t, offset in pieces):
                    return out
            return base(spec, tensors, dim)

        return kernel

    def flip(self, base):
        def kernel(spec, input, dims):
            d = input.dtype
            shape, strides = input._shape, input._stride
            ndim = len(shape)
            flipped = {k % ndim for k in dims} if ndim else set()
            if (d.itemsize in _MOVE_SIZES and ndim and len(flipped) == len(dims) and spec.dtype == d
                    and all(s >= 0 for s in strides)):
                out, _ = new_tensor(shape, d, math.prod(shape) * d.itemsize, self.key)
                if not out.numel():
                    return out
                check_bounds("flip", input)
                start = sum((shape[k] - 1) * strides[k] for k in flipped)
                src = [-s if k in flipped else s for k, s in enumerate(strides)]
                cshape, (cdst, csrc) = coalesce(shape, [out._stride, tuple(src)], min_rank=1)
                k = len(cshape)
                meta = self.longs([*cshape, *cdst, *csrc])
                C["copy_bytes"](d.itemsize, k, meta, meta + k, meta + 2 * k, self.ptr(out),
                                self.ptr(input) + start * d.itemsize)
                return out
            return base(spec, input, dims)

        return kernel

    # -- gather and scatter ---------------------------------------------------------------------------------------

    @staticmethod
    def _1d(t) -> tuple:
        """(shape, strides) with a 0-d tensor as 1-d (PyTorch's ensure_nonempty_dim)."""
        return (t._shape, t._stride) if t._shape else ((1,), (0,))

    def gather(self, base):
        def kernel(spec, input, dim, index):
            d = input.dtype
            if d.itemsize in _GATHER_SIZES and index.dtype.name == "int64" and spec.dtype == d:
                (xs, xst), (ish, ist) = self._1d(input), self._1d(index)
                ndim = len(xs)
                if (len(ish) == ndim <= MAX_DIMS and min(xst) >= 0 and min(ist) >= 0
                        and all(ish[k] <= xs[k] for k in range(ndim) if k != dim % ndim)):
                    dim %= ndim
                    out, _ = new_tensor(spec.shape, d, math.prod(spec.shape) * d.itemsize, self.key)
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
                if (len(ish) == ndim == len(xs) <= MAX_DIMS and _writable(self_) and min(ist) >= 0
                        and min(xst) >= 0 and all(ish[k] <= xs[k] for k in range(ndim))
                        and all(ish[k] <= ss[k] for k in range(ndim) if k != dim % ndim)):
                    dim %= ndim
                    for t in (self_, index, src):
                        check_bounds("scatter_", t)
                    if not (_overlap(self_, src) or _overlap(self_, index)):
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
                return d, k, B, pre[0][0], math.prod(B), post[0][0], (pre[1][0][0], dim_stride, post[1][0][0]), \
                    low, high, holder, pointer, stride
            from core.backends.numpy.runtime import array

            holder = np.ascontiguousarray(array(index).reshape(-1))  # no single strided run: a small dense copy
        else:
            if post[0][0] < MULTI_INDEX_MIN_ROW:  # point picks (x[i, j]): NumPy's fancy indexing does them well,
                return None  # and combining the indices would cost NumPy passes of their own
            from core.backends.numpy.runtime import array

            try:
                B = np.broadcast_shapes(*(i._shape for i in tensors))
            except ValueError:
                return None
            holder = np.zeros(B, np.int64)
            for m, i in enumerate(tensors):
                size, stride = t._shape[d + m], t._stride[d + m]
                a = array(i)
                holder += np.where(a < 0, a + size, a) * stride
            holder = holder.reshape(-1)
            low, high, dim_stride = 0, 1 + sum((t._shape[d + m] - 1) * t._stride[d + m] for m in range(k)), 1
        pointer = self.ffi.cast("long long *", self.ffi.from_buffer(holder))
        return d, k, tuple(B), pre[0][0], math.prod(B), post[0][0], (pre[1][0][0], dim_stride, post[1][0][0]), \
            low, high, holder, pointer, 1

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
                out, _ = new_tensor(spec.shape, d, math.prod(spec.shape) * d.itemsize, self.key)
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
            if code is not None and values.dtype == self_.dtype and _writable(self_):
                plan = self._index_plan("index_put_", self_, indices)
            if plan is not None:
                dim, k, B, P, J, Q, strides, low, high, holder, pointer, istride = plan
                shape = self_._shape
                target = (*shape[:dim], *B, *shape[dim + k:])
                vstrides = _aligned(values, target) if len(values._shape) <= len(target) else None
                if vstrides is not None:
                    b = len(B)
                    groups = [coalesce(target[:dim], [tuple(vstrides[:dim])], min_rank=1),
                              coalesce(target[dim:dim + b], [tuple(vstrides[dim:dim + b])], min_rank=1),
                              coalesce(target[dim + b:], [tuple(vstrides[dim + b:])], min_rank=1)]
                    check_bounds("index_put_", values)
                    if (all(len(g[0]) == 1 for g in groups) and not _overlap(self_, values)
                            and not any(i is not None and _overlap(self_, i) for i in indices)):
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
                out, buf = new_tensor((total, ndim), spec.dtype, total * ndim * 8, self.key)
                if total:
                    C["nonzero_write"](code, ndim, meta, meta + ndim, self.ptr(input), NONZERO_CHUNK,
                                       self.ffi.cast("long long *", self.ffi.from_buffer(offsets)),
                                       self.ffi.cast("long long *", self.ffi.from_buffer(buf)))
                return out
            return base(spec, input)

        return kernel


def build_movement_kernels(ctx, base_kernels: dict) -> dict:
    """{op: kernel} for the data-movement ops, each falling back to ``base_kernels[op]`` (the NumPy kernel)."""
    family = _Movement(ctx)
    return {op: getattr(family, op)(base_kernels[op]) for op in MOVEMENT_OPS if op in base_kernels}


def sized_thresholds(kernels: dict, min_numel: int) -> dict:
    """{op: dispatcher threshold}: the movement ops are sized by their output, or for the in-place ones (copy_,
    fill_, the range fills, scatter_, index_put_) by the tensor they write, which is what their meta returns;
    nonzero, whose output size depends on the data, checks its input's size itself."""
    return {op: min_numel for op in kernels if op not in _SELF_SIZED}
