"""Reductions over dims (sum, prod, amax, amin, any, all, argmax, argmin): one work-item per output element."""

from __future__ import annotations

import numpy as np

from core.backends.api import coalesce

from ..programs import get_kernel
from ._common import RENDERER, kernel_dtypes_ok, launch_1d, new_tensor, numel, padded, rank_bucket, slot_of

__all__ = ["kernels", "run_reduction"]

_ACCUMULATING = ("sum", "prod")  # accumulate in spec.compute_dtype; the others compare in the input's dtype


def run_reduction(op: str, spec, input, dims: tuple):
    """A fresh contiguous ``spec`` tensor reducing ``input`` over ``dims`` (kept dims in order, then reduced)."""
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    n = numel(spec.shape)
    if n == 0:
        return out
    keep = [d for d in range(input.dim()) if d not in dims]
    keep_shape, (keep_strides,) = coalesce(tuple(input._shape[d] for d in keep), [[input._stride[d] for d in keep]])
    red_shape, (red_strides,) = coalesce(tuple(input._shape[d] for d in dims), [[input._stride[d] for d in dims]])
    kr, rr = rank_bucket(len(keep_shape), allow_zero=True), rank_bucket(len(red_shape), allow_zero=True)
    acc = spec.compute_dtype.name if op in _ACCUMULATING else input.dtype.name
    in_dtype, out_dtype = input.dtype.name, spec.dtype.name
    slot = slot_of(input)
    key = ("red", op, in_dtype, acc, out_dtype, kr, rr)
    kernel = get_kernel(slot, key, op, lambda: {op: RENDERER.render_reduction(op, in_dtype, acc, out_dtype, kr, rr)})
    index = slot.index_buffer
    args = [np.int64(n), np.int64(numel(red_shape)), index(padded(keep_shape, kr, 1)),
            index(padded(keep_strides, kr, 0)), index(padded(red_shape, rr, 1)), index(padded(red_strides, rr, 0)),
            np.int64(input._offset), input._storage.data, out._storage.data]
    launch_1d(slot, kernel, n, args)
    return out


def _supported(spec, input, dims) -> bool:
    return (kernel_dtypes_ok(input) and spec.dtype.name in RENDERER.types and
            spec.compute_dtype.name in RENDERER.types and input.dim() - len(dims) <= 8 and len(dims) <= 8)


def _reduce_kernel(op: str):
    def kernel(spec, input, dims, keepdim=False, dtype=None):
        dims = tuple(dims) if input.dim() else ()
        if not _supported(spec, input, dims):
            return NotImplemented
        return run_reduction(op, spec, input, dims)

    return kernel


def _arg_kernel(op: str):
    def kernel(spec, input, dim, keepdim=False):
        dims = tuple(range(input.dim())) if dim is None else ((dim,) if input.dim() else ())
        if not _supported(spec, input, dims):
            return NotImplemented
        return run_reduction(op, spec, input, dims)

    return kernel


def kernels(runtime) -> dict:
    """The reduction family: op name -> kernel."""
    table = {op: _reduce_kernel(op) for op in ("sum", "prod", "amax", "amin", "any", "all")}
    return table | dict(argmax=_arg_kernel("argmax"), argmin=_arg_kernel("argmin"))
