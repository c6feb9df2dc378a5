"""Layout arithmetic for launching rendered elementwise kernels: broadcast strides and dimension coalescing.

Pure Python over shapes and element strides, so it is tested on any machine.
"""

from __future__ import annotations

__all__ = ["broadcast_strides", "coalesce"]


def broadcast_strides(shape: tuple, strides: tuple, out_shape: tuple) -> tuple:
    """Element strides of an operand of ``shape`` read as ``out_shape`` (leading and size-1 dims get stride 0)."""
    lead = len(out_shape) - len(shape)
    return (0,) * lead + tuple(0 if n == 1 else s for n, s in zip(shape, strides))


def coalesce(shape: tuple, all_strides: list) -> tuple:
    """Merge adjacent dims that every operand walks as one (and drop size-1 dims): fewer, longer loops.

    Returns ``(shape, [strides per operand])`` describing the same elements in the same row-major order.
    """
    dims = [d for d, n in enumerate(shape) if n != 1]
    if not dims:
        return (), [() for _ in all_strides]
    out_shape = [shape[dims[0]]]
    out_strides = [[s[dims[0]]] for s in all_strides]
    for d in dims[1:]:
        n = shape[d]
        if all(acc[-1] == s[d] * n for acc, s in zip(out_strides, all_strides)):
            out_shape[-1] *= n  # the outer dim steps exactly over one run of this dim: one dim
            for acc, s in zip(out_strides, all_strides):
                acc[-1] = s[d]
        else:
            out_shape.append(n)
            for acc, s in zip(out_strides, all_strides):
                acc.append(s[d])
    return tuple(out_shape), [tuple(s) for s in out_strides]
