"""Helpers shared by the cuda kernel families: operands in a compute dtype, over any array module."""

from __future__ import annotations

import numpy as np

__all__ = ["compute_np", "operand", "HALF_NAMES"]

HALF_NAMES = ("float16", "bfloat16")
_F32 = np.dtype(np.float32)


def compute_np(d) -> np.dtype:
    """The dtype to compute ``d`` in: half types compute in float32, as PyTorch's CUDA kernels do (opmath)."""
    return _F32 if d.name in HALF_NAMES else d.numpy


def operand(rt, x, np_dtype: np.dtype):
    """A tensor's array (through runtime ``rt``) or a Python scalar, in ``np_dtype``."""
    if hasattr(x, "_storage"):
        a = rt.array(x)
        return a if a.dtype == np_dtype else a.astype(np_dtype)
    if np_dtype.kind in "iub" and isinstance(x, float):
        return np.asarray(x).astype(np_dtype)[()]
    try:
        return np_dtype.type(x)
    except OverflowError:
        return np.asarray(x).astype(np_dtype)[()]
