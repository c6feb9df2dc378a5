"""Shared helpers of the NumPy kernels: operands as arrays in a compute dtype."""

from __future__ import annotations

import numpy as np

from ..runtime import array, wrap

__all__ = ["array", "wrap", "operand", "compute_np", "HALF_NAMES"]

HALF_NAMES = ("float16", "bfloat16")
_F32 = np.dtype(np.float32)


def compute_np(d) -> np.dtype:
    """The NumPy dtype to compute ``d`` in: half types compute in float32, as PyTorch's CPU kernels do."""
    return _F32 if d.name in HALF_NAMES else d.numpy


def operand(x, np_dtype: np.dtype):
    """A tensor's array or a scalar, in ``np_dtype``."""
    if hasattr(x, "_storage"):
        a = x._np if x._np is not None else array(x)
        return a if a.dtype == np_dtype else a.astype(np_dtype)
    if np_dtype.kind in "iub" and isinstance(x, float):
        return np.asarray(x).astype(np_dtype)
    try:
        return np_dtype.type(x)
    except OverflowError:
        return np.asarray(x).astype(np_dtype)
