"""``cat`` and ``flip`` (core.ops.shape, csrc/movement.c): strided copies into a fresh output."""

from __future__ import annotations

import math

from core.backends.api import Kernel, coalesce

from ..layout import check_bounds
from ..movement import C, MOVE_SIZES, Movement
from ..runtime import new_tensor

__all__ = ["kernels", "min_numel", "OPS"]

OPS = ('cat', 'flip')


def min_numel(ctx) -> int:
    """The dispatcher's threshold, sized by the output."""
    return ctx.min_numel


class _Shape(Movement):
    def cat(self, base):
        def kernel(spec, tensors, dim=0):
            d = spec.dtype
            shape = spec.shape
            if d.itemsize in MOVE_SIZES and all(t.dtype == d for t in tensors):
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
            if (d.itemsize in MOVE_SIZES and ndim and len(flipped) == len(dims) and spec.dtype == d
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


def kernels(ctx) -> dict:
    """{op: Kernel}, each falling back to the NumPy kernel it replaces."""
    family, sized = _Shape(ctx), min_numel(ctx)
    return {op: Kernel(getattr(family, op)(base), min_numel=sized)
            for op in OPS if (base := ctx.reference(op)) is not None}
