"""The shape family: ``cat`` (one strided copy per input into its slice of the output) and ``flip`` (a copy
through negative strides); both run the elementwise copy kernel, casting where dtypes differ."""

from __future__ import annotations

from core.backends.api import cat_by_copies, flip_by_copy

from ._common import (ARITHMETIC_DTYPES, HALF, ROUNDS_TWICE_INTO_HALF, Strided, arithmetic_dtypes_ok, computed_as,
                      new_tensor)
from .elementwise import run_elementwise

__all__ = ["kernels"]


def _copy(dst, src) -> None:
    run_elementwise("copy", "a", dst, [src], computed_as(src.dtype))


def cat(spec, tensors, dim=0):
    if not arithmetic_dtypes_ok(*tensors) or spec.dtype.name not in ARITHMETIC_DTYPES or len(spec.shape) > 8:
        return NotImplemented
    if spec.dtype.name in HALF and any(t.dtype.name in ROUNDS_TWICE_INTO_HALF for t in tensors):
        return NotImplemented
    return cat_by_copies(new_tensor(spec.shape, spec.dtype, spec.device), tensors, dim, Strided, _copy)


def flip(spec, input, dims):
    if not arithmetic_dtypes_ok(input) or input.dim() > 8:
        return NotImplemented
    return flip_by_copy(new_tensor(spec.shape, spec.dtype, spec.device), input, dims, Strided, _copy)


def kernels(runtime) -> dict:
    """The shape family: op name -> kernel."""
    return {"cat": cat, "flip": flip}
