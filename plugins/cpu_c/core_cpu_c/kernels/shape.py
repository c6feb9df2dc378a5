"""``cat`` and ``flip`` (core.ops.shape, csrc/movement.c): strided copies into a fresh output."""

from __future__ import annotations

import math

from core.backends.api import coalesce

from ..layout import check_bounds
from ..movement import MOVE_SIZES, Movement

__all__ = ["kernels", "OPS"]

OPS = ("cat", "flip")  # sized by the output


class _Shape(Movement):
    def cat(self, base):
        def kernel(spec, tensors, dim=0):
            d = spec.dtype
            shape = spec.shape
            if d.itemsize in MOVE_SIZES and all(t.dtype == d for t in tensors):
                out, _ = self.empty(shape, d)
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
            if (d.itemsize in MOVE_SIZES and ndim and len(flipped) == len(dims) and spec.dtype == d
                    and all(s >= 0 for s in strides)):
                out, _ = self.empty(shape, d)
                if not out.numel():
                    return out
                check_bounds("flip", input)
                start = sum((shape[k] - 1) * strides[k] for k in flipped)
                src = [-s if k in flipped else s for k, s in enumerate(strides)]
                cshape, (cdst, csrc) = coalesce(shape, [out._stride, tuple(src)], min_rank=1)
                self.copy_bytes(d.itemsize, cshape, cdst, csrc, self.ptr(out), self.ptr(input) + start * d.itemsize)
                return out
            return base(spec, input, dims)

        return kernel


def kernels(ctx) -> dict:
    """{op: Kernel}, each falling back to the NumPy kernel it replaces."""
    return _Shape(ctx).kernels(OPS)
