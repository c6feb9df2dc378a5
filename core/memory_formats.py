"""Memory formats (``torch.memory_format``): the order in which a dense tensor lays out its dimensions.

``channels_last`` keeps an (N, C, H, W) tensor's channels innermost (NHWC strides); ``channels_last_3d`` does
the same for (N, C, D, H, W). ``preserve_format`` asks a ``*_like`` factory or a copy to keep its input's layout.
Only stride arithmetic lives here; the factories and ``contiguous`` apply it.
"""

from __future__ import annotations

from .named import NamedConstant

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
           "legacy_contiguous_format"]


class memory_format(NamedConstant):
    """A memory format, named like ``torch.memory_format`` (``core.channels_last``)."""

    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = memory_format("legacy_contiguous_format")

# dims from innermost to outermost, per format that fixes a rank
_INNER_FIRST = {channels_last: (1, 3, 2, 0), channels_last_3d: (1, 4, 3, 2, 0)}


def _check(op: str, fmt) -> memory_format:
    if fmt is None:
        return contiguous_format
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be core.memory_format, not {type(fmt).__name__}")
    return fmt


def _inner_first(op: str, fmt: memory_format, ndim: int) -> tuple:
    order = _INNER_FIRST.get(fmt)
    if order is None:
        return tuple(range(ndim - 1, -1, -1))
    if ndim != len(order):
        raise RuntimeError(f"{op}(): required rank {len(order)} tensor to use {fmt.name} format")
    return order


def strides_for(shape: tuple, fmt, op: str = "empty") -> tuple:
    """The dense strides of ``shape`` laid out in ``fmt`` (contiguous, channels_last or channels_last_3d)."""
    fmt = _check(op, fmt)
    if fmt is preserve_format:
        raise RuntimeError(f"{op}(): unsupported memory format option Preserve")
    strides = [0] * len(shape)
    step = 1
    for d in _inner_first(op, fmt, len(shape)):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def is_contiguous_as(shape: tuple, strides: tuple, fmt) -> bool:
    """Whether ``strides`` lay ``shape`` out densely in ``fmt`` (size-1 dims ignored, as PyTorch does)."""
    fmt = _check("is_contiguous", fmt)
    if fmt is preserve_format:
        raise RuntimeError("is_contiguous(): unsupported memory format option Preserve")
    if 0 in shape:
        return True
    order = _INNER_FIRST.get(fmt)
    if order is not None and len(shape) != len(order):
        return False
    expected = 1
    for d in order or range(len(shape) - 1, -1, -1):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def is_dense(shape: tuple, strides: tuple) -> bool:
    """Whether the elements fill a block of memory with no gaps or overlaps (in some order of the dims)."""
    if 0 in shape:
        return True
    expected = 1
    for d in sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: strides[d]):
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def preserved_strides(shape: tuple, strides: tuple) -> tuple:
    """The strides ``preserve_format`` gives a copy of a tensor: its own when dense, else channels-last or
    contiguous ones, whichever the tensor is closest to (PyTorch's ``suggest_memory_format``)."""
    if is_dense(shape, strides):
        return tuple(strides)
    for fmt in (channels_last, channels_last_3d):
        order = _INNER_FIRST[fmt]
        if len(shape) == len(order) and strides[order[0]] < min(strides[d] for d in order[1:]):
            return strides_for(shape, fmt)
    return strides_for(shape, contiguous_format)


def layout_strides(op: str, shape: tuple, strides: tuple, fmt) -> tuple:
    """The strides a copy of a ``(shape, strides)`` tensor gets under ``fmt`` (None means ``preserve_format``)."""
    if fmt is None or fmt is preserve_format:
        return preserved_strides(shape, strides)
    return strides_for(shape, fmt, op)
