"""The sorting family: ``sort`` (stable, by rank: each element counts the row's elements ordered before it)."""

from __future__ import annotations

import numpy as np

from ..programs import get_kernel
from ._common import RENDERER, kernel_dtypes_ok, launch_1d, new_tensor, padded, rank_bucket, slot_of
from .reduction import row_layout

__all__ = ["kernels"]

#: rows longer than this are declined: the rank sort does O(length) work per element
MAX_SORT_LENGTH = 16384


def sort(spec, input, dim, descending=False):
    length = input._shape[dim] if input.dim() else 1
    if not kernel_dtypes_ok(input) or input.dim() > 9 or length > MAX_SORT_LENGTH:
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


def kernels(runtime) -> dict:
    """The sorting family: op name -> kernel."""
    return {"sort": sort}
