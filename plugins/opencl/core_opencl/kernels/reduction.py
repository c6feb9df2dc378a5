"""Reductions over dims (sum, prod, amax, amin, any, all, argmax, argmin): one work-item per output element;
scans along a dim (cumsum, cumprod, cummax, cummin): one work-item per row."""

from __future__ import annotations

import numpy as np

from core.backends.api import coalesce

from ..programs import get_kernel
from ._common import (ARITHMETIC_DTYPES, KERNEL_DTYPES, RENDERER, arithmetic_dtypes_ok, computed_as, launch_1d,
                      new_tensor, numel, padded, rank_bucket, slot_of)

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
    acc = computed_as(spec.compute_dtype if op in _ACCUMULATING else input.dtype).name  # half: float32
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
    return (arithmetic_dtypes_ok(input) and spec.dtype.name in RENDERER.types and
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
    table |= {op: _scan_kernel(op) for op in ("cumsum", "cumprod", "cummax", "cummin")}
    return table | dict(argmax=_arg_kernel("argmax"), argmin=_arg_kernel("argmin"))


def row_layout(input, out, dim: int) -> tuple:
    """(rows shape, [input strides, out strides] over the rows, length, input step, out step) for a kernel that
    runs one work-item per row along ``dim`` (a 0-d input is one row of one element)."""
    if input.dim() == 0:
        return (), [(), ()], 1, 0, 0
    others = [d for d in range(input.dim()) if d != dim]
    shape, strides = coalesce(tuple(input._shape[d] for d in others),
                              [[input._stride[d] for d in others], [out._stride[d] for d in others]])
    return shape, strides, input._shape[dim], input._stride[dim], out._stride[dim]


def _scan_kernel(op: str):
    def kernel(spec, input, dim, dtype=None):
        pair = isinstance(spec, tuple)
        value_spec = spec[0] if pair else spec
        acc = computed_as(input.dtype if pair else spec.compute_dtype).name  # half: float32
        if not arithmetic_dtypes_ok(input) or acc not in KERNEL_DTYPES or \
                value_spec.dtype.name not in ARITHMETIC_DTYPES or input.dim() > 9:
            return NotImplemented
        out = new_tensor(value_spec.shape, value_spec.dtype, value_spec.device)
        index = new_tensor(spec[1].shape, spec[1].dtype, spec[1].device) if pair else None
        if input.numel() == 0:
            return (out, index) if pair else out
        dim = dim % input.dim() if input.dim() else 0
        shape, strides, length, in_step, out_step = row_layout(input, out, dim)
        rank = rank_bucket(len(shape), allow_zero=True)
        in_dtype, out_dtype = input.dtype.name, value_spec.dtype.name
        slot = slot_of(input)
        kernel = get_kernel(slot, ("scan", op, in_dtype, acc, out_dtype, rank), op,
                            lambda: {op: RENDERER.render_scan(op, in_dtype, acc, out_dtype, rank)})
        buf, i64 = slot.index_buffer, np.int64
        rows = numel(shape)
        args = [i64(rows), i64(length), buf(padded(shape, rank, 1)), input._storage.data,
                buf(padded(strides[0], rank, 0)), i64(input._offset), i64(in_step), out._storage.data,
                buf(padded(strides[1], rank, 0)), i64(out_step)] + ([index._storage.data] if pair else [])
        launch_1d(slot, kernel, rows, args)
        return (out, index) if pair else out

    return kernel
