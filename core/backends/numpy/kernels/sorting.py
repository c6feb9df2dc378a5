"""NumPy kernels of the sorting family: stable sorts, unique and binary search."""

from __future__ import annotations

import numpy as np

from ...kit.reference import compute_np, operands
from ..runtime import CONTEXT, array, wrap

operand = operands(CONTEXT)


def _values(t) -> np.ndarray:
    """The tensor's array in its compute dtype, 0-d seen as 1 element."""
    a = operand(t, compute_np(t.dtype))
    return a.reshape(a.shape or (1,))


def sort(spec, input, dim, descending=False):
    a = _values(input)
    if descending:
        # stable descending: sort the reversed array ascending and reverse back, so ties keep their order
        # and NaN (last in NumPy's ascending order) comes first, as in PyTorch
        n = a.shape[dim]
        indices = n - 1 - np.flip(np.argsort(np.flip(a, dim), axis=dim, kind="stable"), dim)
    else:
        indices = np.argsort(a, axis=dim, kind="stable")
    values = np.take_along_axis(a, indices, axis=dim)
    shape = spec[0].shape
    return wrap(values.reshape(shape), spec[0]), wrap(indices.reshape(shape), spec[1])


def _unique_rows(a, dim):
    if dim is None:
        return np.unique(a.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
    if a.shape[dim] == 0:
        return a.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.unique(a, axis=dim, return_inverse=True, return_counts=True, equal_nan=False)


def _unique_consecutive_rows(a, dim):
    rows = a.reshape(-1, 1) if dim is None else np.moveaxis(a, dim, 0).reshape(a.shape[dim], -1)
    n = rows.shape[0]
    starts = np.ones(n, bool)
    starts[1:] = np.any(rows[1:] != rows[:-1], axis=1)  # NaN != NaN: NaNs never merge, as in PyTorch
    first = np.flatnonzero(starts)
    values = a.reshape(-1)[first] if dim is None else np.take(a, first, axis=dim)
    return values, np.cumsum(starts) - 1, np.diff(np.append(first, n))


def _unique_kernel(rows_fn):
    def kernel(spec, input, dim=None):
        a = operand(input, compute_np(input.dtype))
        values, inverse, counts = rows_fn(a, dim)
        return (wrap(np.array(values), spec[0]), wrap(np.reshape(inverse, spec[1].shape), spec[1]),
                wrap(np.asarray(counts), spec[2]))

    return kernel


def searchsorted(spec, sorted_sequence, values, right=False, sorter=None, out_int32=False):
    cd = compute_np(spec.compute_dtype)
    boundaries, queries = operand(sorted_sequence, cd), operand(values, cd)
    if sorter is not None:
        boundaries = np.take_along_axis(boundaries, array(sorter), axis=-1)
    side = "right" if right else "left"
    if boundaries.ndim == 1:
        return wrap(np.searchsorted(boundaries, queries, side), spec)
    rows = boundaries.reshape(-1, boundaries.shape[-1])
    result = np.empty((rows.shape[0], queries.size // max(rows.shape[0], 1)), np.int64)
    for row, boundary, query in zip(result, rows, queries.reshape(result.shape)):
        row[:] = np.searchsorted(boundary, query, side)
    return wrap(result.reshape(queries.shape), spec)


def kernels(ctx) -> dict:
    """This family's kernels, written over NumPy alone (bound to the NumPy runtime, so ``ctx`` is unused)."""
    return {"sort": sort, "unique": _unique_kernel(_unique_rows),
            "unique_consecutive": _unique_kernel(_unique_consecutive_rows), "searchsorted": searchsorted}
