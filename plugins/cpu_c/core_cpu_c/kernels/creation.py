"""Copies and fills (core.ops.creation, csrc/movement.c): ``copy_`` (so clone and contiguous) and ``_to_copy``
(``.to(dtype)``, autocast's casts: a fresh aligned tensor written by one C cast) with C casts between bool, the
integers and the floats, and ``fill_``."""

from __future__ import annotations

import numbers

import numpy as np
from core.backends.api import coalesce

from ..layout import check_bounds
from ..movement import MOVE_SIZES, Movement, memory_order, writable

__all__ = ["kernels", "OPS"]

OPS = ("copy_", "fill_", "_to_copy")  # sized by the tensor written (dense copies also check DENSE_FACTOR x the
# threshold)


class _Creation(Movement):
    def copy_(self, base):
        def kernel(spec, self_, src, non_blocking=False):
            if hasattr(src, "_storage") and self.copy_into("copy_", self_, src):
                return self_
            return base(spec, self_, src, non_blocking)

        return kernel

    def _to_copy(self, base):
        empty = self.ctx.empty

        def kernel(spec, self_, dtype=None, device=None, non_blocking=False):
            if spec.device is self_._storage.device and spec.dtype is not self_.dtype:
                out, _ = empty(spec.shape, spec.dtype)
                # the fresh output's layout given: none of a written view's checks (bounds, writable, overlap) apply
                if self.copy_into("_to_copy", out, self_, 0, out._shape, out._stride):
                    return out
            return base(spec, self_, dtype, device, non_blocking)  # a copy, a move, or a cast C does not make

        return kernel

    def fill_(self, base):
        def kernel(spec, self_, value):
            d = self_.dtype
            n = self_.numel()
            if (isinstance(value, (numbers.Number, np.generic)) and d.itemsize in MOVE_SIZES and writable(self_)
                    and n and (n >= self.dense_min() or not self_.is_contiguous())):
                check_bounds("fill_", self_)
                scalar = np.asarray(value).astype(d.numpy)  # the reference's conversion, warnings and all
                shape = self_._shape or (1,)
                cshape, (cdst,) = coalesce(*memory_order(shape, [tuple(self_._stride) or (0,)]), min_rank=1)
                self.copy_bytes(d.itemsize, cshape, cdst, (0,) * len(cshape), self.ptr(self_),
                                self.ffi.from_buffer(scalar.reshape(1)))
                return self_
            return base(spec, self_, value)

        return kernel


def kernels(ctx) -> dict:
    """{op: Kernel}, each falling back to the NumPy kernel it replaces."""
    return _Creation(ctx).kernels(OPS)
