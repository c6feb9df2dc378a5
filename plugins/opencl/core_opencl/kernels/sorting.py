"""The sorting family: ``sort`` (stable, by rank: each element counts the row's elements ordered before it),
``searchsorted`` (a binary search per query), ``unique`` and ``unique_consecutive`` (dim=None: sort, mark the
first of each run, scan and compact)."""

from __future__ import annotations

import numpy as np

from ..programs import get_kernel
from ._common import (KERNEL_DTYPES, RENDERER, arithmetic_dtypes_ok, kernel_dtypes_ok, launch_1d, new_tensor, padded,
                      rank_bucket, slot_of)
from .reduction import row_layout

__all__ = ["kernels"]

#: rows longer than this are declined: the rank sort does O(length) work per element
MAX_SORT_LENGTH = 16384


def sort(spec, input, dim, descending=False):
    length = input._shape[dim] if input.dim() else 1
    if not arithmetic_dtypes_ok(input) or input.dim() > 9 or length > MAX_SORT_LENGTH:  # half: compared in float
        return NotImplemented
    values = new_tensor(spec[0].shape, spec[0].dtype, spec[0].device)
    indices = new_tensor(spec[1].shape, spec[1].dtype, spec[1].device)
    n = input.numel()
    if n == 0:
        return values, indices
    dim = dim % input.dim() if input.dim() else 0
    shape, strides, length, in_step, out_step = row_layout(input, values, dim)
    rank = rank_bucket(len(shape), allow_zero=True)
    dtype, descending = input.dtype.name, bool(descending)
    slot = slot_of(input)
    kernel = get_kernel(slot, ("sort", dtype, descending, rank), "sort",
                        lambda: {"sort": RENDERER.render_sort(dtype, descending, rank)})
    buf, i64 = slot.index_buffer, np.int64
    args = [i64(n), i64(length), buf(padded(shape, rank, 1)), input._storage.data, buf(padded(strides[0], rank, 0)),
            i64(input._offset), i64(in_step), values._storage.data, indices._storage.data,
            buf(padded(strides[1], rank, 0)), i64(out_step)]
    launch_1d(slot, kernel, n, args)
    return values, indices


def searchsorted(spec, sorted_sequence, values, right=False, sorter=None, out_int32=False):
    if not kernel_dtypes_ok(sorted_sequence, values) or spec.compute_dtype.name not in KERNEL_DTYPES:
        return NotImplemented
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    n = out.numel()
    if n == 0:
        return out
    seq, values = sorted_sequence.contiguous(), values.contiguous()
    batched = seq.dim() > 1
    m, length = (values._shape[-1] if batched else n), seq._shape[-1]
    names = (seq.dtype.name, values.dtype.name, spec.compute_dtype.name, spec.dtype.name, bool(right),
             sorter is not None)
    slot = slot_of(out)
    kernel = get_kernel(slot, ("searchsorted",) + names, "searchsorted",
                        lambda: {"searchsorted": RENDERER.render_searchsorted(*names)})
    order = sorter.contiguous() if sorter is not None else seq  # an unused pointer when there is no sorter
    i64 = np.int64
    args = [i64(n), i64(m), i64(length), np.int32(batched), seq._storage.data, i64(seq._offset),
            values._storage.data, i64(values._offset), order._storage.data, i64(order._offset), out._storage.data]
    launch_1d(slot, kernel, n, args)
    return out


def _unique(consecutive: bool):
    def kernel(spec, input, dim=None):
        if dim is not None or not kernel_dtypes_ok(input):
            return NotImplemented  # slices along a dim: the CPU fallback
        device, n = spec[0].device, input.numel()
        flat = input.reshape(-1)
        order = None
        if not consecutive:
            flat, order = flat.sort(0)  # stable: equal elements keep their order, NaNs last
        flat = flat.contiguous()
        if flat._offset:  # the kernels read from the buffer's start
            flat = flat.clone()
        inverse = new_tensor(spec[1].shape, spec[1].dtype, device)
        if n == 0:
            return new_tensor((0,), spec[0].dtype, device), inverse, new_tensor((0,), spec[2].dtype, device)
        dtype, slot, i64 = flat.dtype.name, slot_of(input), np.int64

        def step(member):
            return get_kernel(slot, ("unique", dtype), member, lambda: RENDERER.render_unique(dtype))

        starts = new_tensor((n,), spec[1].dtype, device)
        launch_1d(slot, step("starts"), n, [i64(n), flat._storage.data, starts._storage.data])
        group = starts.cumsum(0)  # inclusive: the group of element i, plus one
        groups = int(group[n - 1].item())
        values = new_tensor((groups,), spec[0].dtype, device)
        first, counts = new_tensor((groups,), spec[2].dtype, device), new_tensor((groups,), spec[2].dtype, device)
        ordering = order if order is not None else starts  # the sort's fresh indices; unused when unsorted
        data = [t._storage.data for t in (flat, starts, group, ordering)]
        launch_1d(slot, step("compact"), n, [i64(n), *data, np.int32(order is not None), values._storage.data,
                                             first._storage.data, inverse._storage.data])
        launch_1d(slot, step("counts"), groups, [i64(groups), i64(n), first._storage.data, counts._storage.data])
        return values, inverse, counts

    return kernel


def kernels(runtime) -> dict:
    """The sorting family: op name -> kernel."""
    return {"sort": sort, "searchsorted": searchsorted, "unique": _unique(consecutive=False),
            "unique_consecutive": _unique(consecutive=True)}
