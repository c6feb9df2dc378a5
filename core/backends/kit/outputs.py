"""Fresh outputs: an empty contiguous tensor on a backend's device, from its runtime's allocator."""

from __future__ import annotations

import math

from ...errors import allocate_buffer
from ...storage import Storage
from ...tensor import Tensor, contiguous_strides

__all__ = ["new_tensor", "new_output"]


def new_tensor(runtime, shape: tuple, dtype, device) -> Tensor:
    """An uninitialised contiguous tensor of ``shape`` and ``dtype`` on ``device``, allocated by ``runtime``."""
    shape = tuple(shape)
    nbytes = dtype.itemsize * math.prod(shape)
    storage = Storage(allocate_buffer(runtime, nbytes, device), nbytes, device, runtime, runtime.key.mask)
    return Tensor._make(storage, shape, contiguous_strides(shape), 0, dtype)


def new_output(runtime, spec) -> Tensor:
    """An uninitialised contiguous tensor like ``spec`` (a meta function's TensorSpec) on its device."""
    return new_tensor(runtime, spec.shape, spec.dtype, spec.device)
