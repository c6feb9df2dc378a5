"""What the hand-written C kernel families (conv.py, norm.py, loss.py) share: fresh outputs and checked pointers."""

from __future__ import annotations

import math

from .layout import pointer
from .runtime import new_tensor

__all__ = ["CKernels"]


class CKernels:
    """Base of a kernel family over one extension: ``ffi``, the dispatch key of the tensors it makes, and ``base``
    (op name -> the decomposition each kernel falls back to where C does not apply)."""

    def __init__(self, ffi, key: int, base: dict):
        self.ffi, self.key, self.base = ffi, key, base

    def _empty(self, shape: tuple, dtype):
        """A fresh contiguous output tensor and a cffi buffer over its bytes."""
        out, buf = new_tensor(shape, dtype, math.prod(shape) * dtype.itemsize, self.key)
        return out, self.ffi.from_buffer(buf)

    def _pointer(self, op: str, t):
        """NULL for None, else a pointer to ``t``'s first element once its view is checked against its storage."""
        return self.ffi.NULL if t is None else pointer(self.ffi, op, t)
