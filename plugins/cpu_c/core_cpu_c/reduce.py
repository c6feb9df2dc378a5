"""cpu_c's reductions: sum/amax/amin over trailing contiguous dims, and fused softmax/log_softmax (csrc/reduce.c).

Each kernel validates its operand in Python and makes one C call; other layouts and dtypes run the NumPy
reference kernel it replaces.
"""

from __future__ import annotations

import math

from .kernels import Context
from .renderer import DTYPES
from .layout import check_bounds, collapse
from .runtime import new_tensor

__all__ = ["REDUCE_OPS", "build_reduce_kernels", "sized_thresholds"]

REDUCE_OPS = ("sum", "amax", "amin", "softmax", "log_softmax")


def _rows(op: str, x, k: int):
    """(rows, cols, row stride) when the last ``k`` dims of ``x`` are one contiguous block per row and the leading
    dims one evenly strided run of rows; None when C cannot take that layout (the NumPy kernel runs)."""
    shape, strides = x._shape, x._stride
    if any(s < 0 for s in strides):
        return None
    lead = len(shape) - k
    expected = 1
    for size, stride in zip(reversed(shape[lead:]), reversed(strides[lead:])):
        if size != 1 and stride != expected:
            return None
        expected *= size
    cshape, cstrides = collapse(shape[:lead], [strides[:lead]])
    if len(cshape) != 1:
        return None
    check_bounds(op, x)
    return math.prod(shape[:lead]), expected, cstrides[0][0]


def _reduction(ctx: Context, op: str, base):
    """sum/amax/amin over trailing contiguous dims: kernel(spec, input, dims, keepdim[, dtype])."""
    fns = {d: getattr(ctx.lib, f"ccc_{op}_{d}") for d in DTYPES}

    def kernel(spec, input, dims, *rest):
        d = input.dtype
        fn = fns.get(d.name)
        ndim = len(input._shape)
        if (fn is not None and dims and spec.dtype == d and spec.compute_dtype == d
                and math.prod(input._shape) >= ctx.min_numel and sorted(dims) == list(range(ndim - len(dims), ndim))):
            layout = _rows(op, input, len(dims))
            if layout is not None and (layout[1] > 0 or op == "sum"):
                rows, cols, row_stride = layout
                out, buf = new_tensor(spec.shape, d, rows * d.itemsize, ctx.key)
                if rows and cols:
                    fn(rows, cols, ctx.from_buffer(input._storage.data), input._offset, row_stride,
                       ctx.from_buffer(buf))
                elif rows:
                    buf[:] = 0
                return out
        return base(spec, input, dims, *rest)

    return kernel


def _softmax(ctx: Context, op: str, base):
    """softmax/log_softmax along the last dim (composites: kernel(input, dim), no spec), one row per pass."""
    fns = {d: getattr(ctx.lib, f"ccc_softmax_{d}") for d in DTYPES}
    take_log = int(op == "log_softmax")

    def kernel(input, dim):
        d = input.dtype
        fn = fns.get(d.name)
        shape = input._shape
        n = math.prod(shape)
        if fn is not None and dim == len(shape) - 1:
            layout = _rows(op, input, 1)
            if layout is not None:
                rows, cols, row_stride = layout
                out, buf = new_tensor(shape, d, n * d.itemsize, ctx.key)
                if n:
                    fn(rows, cols, ctx.from_buffer(input._storage.data), input._offset, row_stride,
                       ctx.from_buffer(buf), take_log)
                return out
        return base(input, dim)

    return kernel


def build_reduce_kernels(ctx, base_kernels: dict) -> dict:
    """{op: kernel} for the reductions, each falling back to ``base_kernels[op]`` (the NumPy kernel)."""
    return {op: (_softmax if "softmax" in op else _reduction)(ctx, op, base_kernels[op])
            for op in REDUCE_OPS if op in base_kernels}


def sized_thresholds(kernels: dict, min_numel: int) -> dict:
    """{op: dispatcher threshold}: softmax is sized by its input; the reductions check their input size
    themselves (their output has one element per row)."""
    return {op: min_numel for op in kernels if "softmax" in op}
