"""The shape family: ``cat`` (one strided copy per input into its slice of the output) and ``flip`` (a copy
through negative strides); both run the elementwise copy kernel, casting where dtypes differ."""

from __future__ import annotations

import core
from core.backends.api import Tensor, TensorSpec, cat_by_copies, flip_by_copy

from ..renderer import PACKED
from ._common import new_tensor
from .elementwise import compute_name, run_elementwise, stored, supported

__all__ = ["kernels"]


def _view(t, shape: tuple, stride: tuple, offset: int):
    """Tensor ``t``'s storage through another layout (a slice of cat's output, a flipped input)."""
    return Tensor._make(t._storage, tuple(shape), tuple(stride), offset, t.dtype)


def _copy(dst, src) -> None:
    run_elementwise("copy", "a", dst, [src], compute_name(src.dtype))


def cat(spec, tensors, dim=0):
    if not supported(*tensors) or not stored(spec.dtype.name) or len(spec.shape) > 8:
        return NotImplemented
    if spec.dtype.name in PACKED:  # slices of a packed tensor share words: gathered in int32, then one copy
        wide = cat(TensorSpec(spec.shape, core.int32, spec.device), tensors, dim)
        out = new_tensor(spec.shape, spec.dtype, spec.device)
        return run_elementwise("copy", "a", out, [wide], "int32") if spec.shape and 0 not in spec.shape else out
    return cat_by_copies(new_tensor(spec.shape, spec.dtype, spec.device), tensors, dim, _view, _copy)


def flip(spec, input, dims):
    if not supported(input) or input.dim() > 8:
        return NotImplemented
    return flip_by_copy(new_tensor(spec.shape, spec.dtype, spec.device), input, dims, _view, _copy)


def kernels(runtime) -> dict:
    """The shape family: op name -> kernel."""
    return {"cat": cat, "flip": flip}
