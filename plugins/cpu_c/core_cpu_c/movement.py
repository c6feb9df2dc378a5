"""What cpu_c's data-movement kernel families (creation, ranges, shape, indexing: csrc/movement.c) share: strided
copies and casts (``copy_into``), the checks on written memory, and the C functions they call.

Each kernel validates its operands in Python (every view inside its storage, non-negative strides, no written
tensor with two elements at one address, written memory overlapping nothing that is read) and makes its C calls;
what C does not cover runs the NumPy reference kernel it replaces, so results never depend on the path:

- Same-dtype copies move raw elements (any dtype of 1, 2, 4, 8 or 16 bytes, half and complex included); casts
  between bool, uint8, int8, int16, int32, int64, float32 and float64 are C conversions, which equal NumPy's
  astype wherever C defines them; float32 <-> float16/bfloat16 (autocast's casts) widen exactly and round to
  nearest even (csrc/half.h), as NumPy's and ml_dtypes' astype; other casts with a half dtype run NumPy. A float ->
  integer value that is NaN or out of range (undefined in C, and platform-specific in NumPy) makes C stop
  converting and report it; the NumPy kernel then redoes the copy.
- Overlapping source and destination (``x[1:].copy_(x[:-1])`` through strided views) run NumPy, which buffers.
- logspace_fill_ stays on NumPy: its ``np.power`` may use SIMD code whose rounding differs from libm's ``pow``.
"""
from __future__ import annotations

import math

import numpy as np

from core.backends.api import Kernel, coalesce, contiguous_strides

from .layout import check_bounds, first_element
from .runtime import _address

__all__ = ["Movement", "C", "TYPE_CODES", "aligned", "writable", "overlap", "memory_order"]

TYPE_CODES = {"bool": 0, "uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float32": 6, "float64": 7}
HALF_CASTS = {("float32", "float16"): (6, 8), ("float32", "bfloat16"): (6, 9), ("float16", "float32"): (8, 6),
              ("bfloat16", "float32"): (9, 6)}  # (dst, src) dtype names -> (dst, src) type codes of ccc_copy_cast
MOVE_SIZES = (1, 2, 4, 8, 16)  # element sizes C moves as raw bytes
DENSE_FACTOR = 8  # dense same-dtype copies and fills run C from DENSE_FACTOR * min_numel elements
C: dict = {}  # short name -> the extension's function; looked up per call (tests count calls through it)


def aligned(t, shape: tuple):
    """``t``'s strides broadcast to ``shape`` (0 on broadcast dims), or None when a stride is negative."""
    strides = t._stride
    if any(s < 0 for s in strides):
        return None
    lead = len(shape) - len(t._shape)
    out = [0] * lead
    for size, full, stride in zip(t._shape, shape[lead:], strides):
        out.append(stride if size == full and size != 1 else 0)
    return out


def writable(t) -> bool:
    """Memory NumPy may write (not a read-only array's) with no two elements of ``t`` at one address through a zero
    stride, and no negative strides. Otherwise NumPy's kernel runs (and raises where it refuses)."""
    return t._storage.data.flags.writeable and all(s > 0 or (s == 0 and n <= 1) for n, s in zip(t._shape, t._stride))


def span(t) -> tuple:
    """[first byte, end byte) of a non-empty tensor with non-negative strides."""
    isz = t.dtype.itemsize
    start = _address(t._storage.data) + t._offset * isz
    return start, start + (1 + sum((n - 1) * s for n, s in zip(t._shape, t._stride))) * isz


def overlap(a, b) -> bool:
    """Whether the memory of tensors ``a`` and ``b`` may overlap (their byte spans intersect)."""
    if not a.numel() or not b.numel():
        return False
    if a._storage is not b._storage and not np.may_share_memory(a._storage.data, b._storage.data):
        return False
    a0, a1 = span(a)
    b0, b1 = span(b)
    return a0 < b1 and b0 < a1


def memory_order(shape: tuple, strides: list) -> tuple:
    """(shape, [strides per tensor]) with dims reordered by the first tensor's strides, largest first, so the walk
    goes through the written memory in order (a fill of a transposed view must not stride through it)."""
    first = strides[0]
    if all(a >= b for a, b in zip(first, first[1:])):
        return shape, strides
    order = sorted(range(len(shape)), key=lambda k: -first[k])
    return tuple(shape[k] for k in order), [tuple(s[k] for k in order) for s in strides]

class Movement:
    """Base of the data-movement families' kernel builders (a method per op taking the reference kernel): pointers,
    scratch arrays, copies and the C calls. Every sized op's dispatcher threshold is ``ctx.min_numel``, checked
    against its output or the tensor it writes."""

    def __init__(self, ctx):
        self.ctx, self.ffi, self.empty, self.longs = ctx, ctx.ffi, ctx.empty, ctx.longs
        lib = ctx.lib
        if not C:  # filled once: a rebuilt table keeps what tests patched in
            C.update(copy_cast=lib.ccc_copy_cast, copy_bytes=lib.ccc_copy_bytes, arange_int=lib.ccc_arange_int,
                     arange_double=lib.ccc_arange_double, linspace=lib.ccc_linspace, gather=lib.ccc_gather,
                     scatter=lib.ccc_scatter, index=lib.ccc_index, index_put=lib.ccc_index_put,
                     nonzero_count=lib.ccc_nonzero_count, nonzero_write=lib.ccc_nonzero_write)

    def kernels(self, ops: tuple, self_sized: tuple = ()) -> dict:
        """{op: Kernel} over the reference kernels, sized by ``ctx.min_numel`` but for ``self_sized`` ops."""
        sized = self.ctx.min_numel
        return {op: Kernel(getattr(self, op)(base), min_numel=None if op in self_sized else sized)
                for op in ops if (base := self.ctx.reference(op)) is not None}

    def dense_min(self) -> int:
        """Elements from which a dense same-dtype copy or fill runs C: below, NumPy's memcpy/memset costs less per
        call, and C has nothing to add but threads (which it starts from 32768 elements, COPY_PARALLEL_MIN). From
        there C's threads split the copy as the elementwise kernels split their loops, so each core copies what it
        wrote: an in-place op (an op, then a copy back) of 203K float32 ran 102 -> 55 us, NumPy's single-threaded
        copy having pulled the other core's half across."""
        return DENSE_FACTOR * self.ctx.min_numel

    def ptr(self, t):
        """A pointer to tensor ``t``'s first element (its view already checked)."""
        return first_element(self.ffi, t)

    def copy_bytes(self, itemsize: int, shape: tuple, dst_strides: tuple, src_strides: tuple, pdst, psrc) -> None:
        """C's strided copy of ``itemsize``-byte elements over ``shape`` (coalesced) from ``psrc`` to ``pdst``."""
        k = len(shape)
        meta = self.longs([*shape, *dst_strides, *src_strides])
        C["copy_bytes"](itemsize, k, meta, meta + k, meta + 2 * k, pdst, psrc)

    # -- copies ---------------------------------------------------------------------------------------------------

    def copy_into(self, op: str, dst, src, dst_offset: int = 0, dst_shape=None, dst_strides=None) -> bool:
        """Copy ``src`` (broadcast, cast) into ``dst`` (or into the view of dst's storage given by the dst_*
        arguments, already checked); False, with nothing or something harmless written, when NumPy must do it."""
        shape = dst._shape if dst_shape is None else dst_shape
        if not math.prod(shape):
            return True
        same, codes = dst.dtype == src.dtype, None
        if same:
            if dst.dtype.itemsize not in MOVE_SIZES:
                return False
        elif dst.dtype.name in TYPE_CODES and src.dtype.name in TYPE_CODES:
            codes = TYPE_CODES[dst.dtype.name], TYPE_CODES[src.dtype.name]
        elif (codes := HALF_CASTS.get((dst.dtype.name, src.dtype.name))) is None:
            return False
        if dst_shape is None:
            if not writable(dst):
                return False
            check_bounds(op, dst)
            dst_strides = dst._stride
        if src._shape == shape and src._stride == dst_strides and dst_strides == contiguous_strides(shape):
            if same and dst_shape is None and math.prod(shape) < self.dense_min():
                return False  # a memcpy for NumPy too, at a lower cost per call
            check_bounds(op, src)  # both dense: one run, no collapsing
            if dst_shape is None and overlap(dst, src):
                return False
            cshape, cdst, csrc = (math.prod(shape),), (1,), (1,)
        else:
            src_strides = aligned(src, shape)
            if src_strides is None:
                return False
            check_bounds(op, src)
            if dst_shape is None and overlap(dst, src):
                return False
            cshape, (cdst, csrc) = coalesce(*memory_order(shape, [tuple(dst_strides), tuple(src_strides)]),
                                            min_rank=1)
        pdst = self.ffi.from_buffer(dst._storage.data) + (dst._offset + dst_offset) * dst.dtype.itemsize
        if same:
            self.copy_bytes(dst.dtype.itemsize, cshape, cdst, csrc, pdst, self.ptr(src))
            return True
        k, meta = len(cshape), self.longs([*cshape, *cdst, *csrc])
        return C["copy_cast"](*codes, k, meta, meta + k, meta + 2 * k, pdst, self.ptr(src)) == 0

    @staticmethod
    def _1d(t) -> tuple:
        """(shape, strides) with a 0-d tensor as 1-d (PyTorch's ensure_nonempty_dim)."""
        return (t._shape, t._stride) if t._shape else ((1,), (0,))
