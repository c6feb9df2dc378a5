"""The shape family: ``cat`` (one strided copy per input into its slice of the output) and ``flip`` (a copy
through negative strides); both run the elementwise copy kernel, casting where dtypes differ."""

from __future__ import annotations

from core.backends.api import cat_parts, flipped

from ._common import (ARITHMETIC_DTYPES, HALF, ROUNDS_TWICE_INTO_HALF, Strided, arithmetic_dtypes_ok, computed_as,
                      new_tensor)
from .elementwise import run_elementwise

__all__ = ["kernels"]


def cat(spec, tensors, dim=0):
    if not arithmetic_dtypes_ok(*tensors) or spec.dtype.name not in ARITHMETIC_DTYPES or len(spec.shape) > 8:
        return NotImplemented
    if spec.dtype.name in HALF and any(t.dtype.name in ROUNDS_TWICE_INTO_HALF for t in tensors):
        return NotImplemented
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    if not spec.shape or 0 in spec.shape:
        return out
    for t, offset in cat_parts(out, tensors, dim % len(spec.shape)):
        run_elementwise("copy", "a", Strided(out, t._shape, out._stride, offset), [t], computed_as(t.dtype))
    return out


def flip(spec, input, dims):
    if not arithmetic_dtypes_ok(input) or input.dim() > 8:
        return NotImplemented
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    if input.numel() == 0:
        return out
    strides, offset = flipped(input._shape, input._stride, input._offset, dims)
    flipped_view = Strided(input, input._shape, strides, offset)
    return run_elementwise("copy", "a", out, [flipped_view], computed_as(input.dtype))


def kernels(runtime) -> dict:
    """The shape family: op name -> kernel."""
    return {"cat": cat, "flip": flip}
