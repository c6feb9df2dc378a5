"""Layout arithmetic over shapes and element strides: broadcasting, dimension coalescing, contiguity.

Pure Python over tuples (no tensors, no devices), so every backend and its tests share it.
"""

from __future__ import annotations

__all__ = ["broadcast_strides", "coalesce", "is_contiguous", "flipped", "cat_parts", "cat_by_copies", "flip_by_copy",
           "RANK_BUCKETS", "rank_bucket", "padded"]

#: the ranks a generated kernel is rendered for (coalesced layouts padded with size-1 dims): fewer compiles
RANK_BUCKETS = (1, 2, 4, 8)


def broadcast_strides(shape: tuple, strides: tuple, out_shape: tuple) -> tuple:
    """Strides of an operand of ``shape`` read as ``out_shape``: leading and size-1 dims get stride 0."""
    lead = len(out_shape) - len(shape)
    return (0,) * lead + tuple(0 if n == 1 else s for n, s in zip(shape, strides))


def coalesce(shape: tuple, stride_lists: list, min_rank: int = 0) -> tuple:
    """``(shape, [strides per operand])`` over the same elements in the same row-major order, in fewest dims.

    Size-1 dims are dropped and neighbours every operand walks as one run are merged. One element and no
    dims left gives ``()`` and empty strides (the 0-d case); ``min_rank`` pads with leading size-1 dims of
    stride 0 (a kernel that wants at least one dim passes ``min_rank=1``).
    """
    out_shape: list = []
    merged: list = []  # per kept dim: [stride of each operand]
    for d, n in enumerate(shape):
        if n == 1:
            continue
        column = [s[d] for s in stride_lists]
        if out_shape and all(prev == s * n for prev, s in zip(merged[-1], column)):
            out_shape[-1] *= n  # the outer dim steps exactly over one run of this dim: one dim
            merged[-1] = column
        else:
            out_shape.append(n)
            merged.append(column)
    if len(out_shape) < min_rank:
        pad = min_rank - len(out_shape)
        out_shape[:0] = [1] * pad
        merged[:0] = [[0] * len(stride_lists)] * pad
    if not merged:
        return (), [()] * len(stride_lists)
    return tuple(out_shape), list(zip(*merged))


def is_contiguous(shape: tuple, strides: tuple) -> bool:
    """Whether ``shape``/``strides`` are row-major with no gaps (size-1 dims ignored; empty: True), as PyTorch's."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def flipped(shape: tuple, strides: tuple, offset: int, dims) -> tuple:
    """``(strides, offset)`` that read ``shape`` reversed along ``dims`` (negative dims count from the end)."""
    flip = {d % len(shape) for d in dims} if shape else set()
    return (tuple(-s if d in flip else s for d, s in enumerate(strides)),
            offset + sum((shape[d] - 1) * strides[d] for d in flip))


def cat_parts(out, tensors, dim: int):
    """``(tensor, offset)`` for each non-empty input of ``cat`` into ``out`` along ``dim``: the input's slice of
    ``out`` is ``out``'s strides over the input's shape from element ``offset``, where a backend copies it."""
    start = 0
    for t in tensors:
        if t.numel() == 0:  # includes the legacy 1-d empties of another rank
            continue
        yield t, out._offset + start * out._stride[dim]
        start += t._shape[dim]


def cat_by_copies(out, tensors, dim: int, view, copy):
    """``out`` (``cat``'s fresh output) written by one strided copy per non-empty input: ``copy(dst, t)`` with
    ``dst = view(out, t's shape, out's strides, offset)``, the backend's operand of input ``t``'s slice of ``out``."""
    if out._shape and 0 not in out._shape:
        for t, offset in cat_parts(out, tensors, dim % len(out._shape)):
            copy(view(out, t._shape, out._stride, offset), t)
    return out


def flip_by_copy(out, input, dims, view, copy):
    """``out`` (``flip``'s fresh output) written by one copy, ``copy(out, src)``, of ``input`` read reversed along
    ``dims``: ``src = view(input, its shape, flipped strides, offset)``, the backend's operand of that layout."""
    if input.numel():
        strides, offset = flipped(input._shape, input._stride, input._offset, dims)
        copy(out, view(input, input._shape, strides, offset))
    return out


def rank_bucket(rank: int, allow_zero: bool = False) -> int | None:
    """The smallest of :data:`RANK_BUCKETS` holding ``rank`` (0 for 0 with ``allow_zero``; None: too many dims)."""
    return 0 if rank == 0 and allow_zero else next((b for b in RANK_BUCKETS if b >= rank), None)


def padded(values, rank: int, fill: int) -> tuple:
    """``values`` with leading ``fill`` entries up to ``rank`` (a layout padded to its rank bucket)."""
    return (fill,) * (rank - len(values)) + tuple(values)
