"""NumPy kernels of the reduction family: one wrapper per shape of primitive (reduce, arg-reduce, scan)."""

from __future__ import annotations

import numpy as np

from ._common import compute_np, operand, wrap


def _fresh(result, source, dims):
    """A result never aliases an input's memory (reductions over no dims can hand the input back)."""
    if dims:
        return result
    result = np.asarray(result)
    return result.copy() if np.may_share_memory(result, source) else result


def _reduce_kernel(fn, accumulate: bool):
    """Kernel of sum/prod (``accumulate``: NumPy accumulates in the compute dtype) or amax/amin/any/all."""

    def kernel(spec, input, dims, keepdim=False, dtype=None):
        a = operand(input, compute_np(input.dtype))
        if accumulate:  # the ufunc's own reduce skips np.sum's Python-level dispatch (the hot path of x.sum())
            result = fn.reduce(a, axis=dims, keepdims=keepdim, dtype=compute_np(spec.compute_dtype))
        else:
            with np.errstate(all="ignore"):
                result = fn(a, axis=dims, keepdims=keepdim)
        return wrap(_fresh(result, a, dims), spec.dtype)

    return kernel


def _arg_kernel(fn):
    def kernel(spec, input, dim, keepdim=False):
        a = operand(input, compute_np(input.dtype))
        if dim is None:
            result = np.asarray(fn(a)).reshape(spec.shape)
        else:
            result = fn(a, axis=dim, keepdims=keepdim)
        return wrap(result, spec.dtype)

    return kernel


def _scan_kernel(fn):
    def kernel(spec, input, dim, dtype=None):
        cd = compute_np(spec.compute_dtype)
        a = operand(input, compute_np(input.dtype))
        with np.errstate(all="ignore"):
            result = fn(a.reshape(a.shape or (1,)), axis=dim, dtype=cd).reshape(a.shape)
        return wrap(result, spec.dtype)

    return kernel


def _cumulative_extremum(ufunc):
    """cummax/cummin: running values by ``ufunc.accumulate``; the index is the latest position that set them."""

    def kernel(spec, input, dim):
        a = operand(input, compute_np(input.dtype))
        flat = a.reshape(a.shape or (1,))
        values = ufunc.accumulate(flat, axis=dim) if flat.size else flat.copy()
        # ties take the latest index and every NaN takes its own index once the running value is NaN (PyTorch)
        sets = (flat == values) | (np.isnan(flat) if flat.dtype.kind == "f" else False)
        positions = np.arange(flat.shape[dim]).reshape([-1 if i == dim else 1 for i in range(flat.ndim)])
        indices = np.where(sets, positions, 0)
        indices = np.maximum.accumulate(indices, axis=dim) if flat.size else indices
        return wrap(values.reshape(a.shape), spec[0].dtype), wrap(indices.reshape(a.shape), spec[1].dtype)

    return kernel


KERNELS = {
    "sum": _reduce_kernel(np.add, True), "prod": _reduce_kernel(np.multiply, True),
    "amax": _reduce_kernel(np.amax, False), "amin": _reduce_kernel(np.amin, False),
    "any": _reduce_kernel(np.any, False), "all": _reduce_kernel(np.all, False),
    "argmax": _arg_kernel(np.argmax), "argmin": _arg_kernel(np.argmin),
    "cumsum": _scan_kernel(np.cumsum), "cumprod": _scan_kernel(np.cumprod),
    "cummax": _cumulative_extremum(np.maximum), "cummin": _cumulative_extremum(np.minimum),
}
