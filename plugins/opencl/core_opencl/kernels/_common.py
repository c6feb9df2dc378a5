"""Helpers shared by the kernel families: output tensors, dtypes the kernels cover, launches.

Layout arithmetic is the kit's (core.backends.api); a kernel declines a call it does not cover by returning
``NotImplemented`` (the dispatcher's CPU fallback then runs it, counted and obeying the ``fallback`` config)."""

from __future__ import annotations

import functools
import math

from core.backends.api import new_tensor as _new_tensor
from core.backends.api import padded, rank_bucket

from ..renderer import HALF, LOCAL_SIZE, OpenCLRenderer
from ..runtime import RUNTIME

__all__ = ["RENDERER", "KERNEL_DTYPES", "ARITHMETIC_DTYPES", "ROUNDS_TWICE_INTO_HALF", "HALF", "is_tensor",
           "slot_of", "new_tensor", "numel", "rank_bucket", "padded", "launch_1d", "kernel_dtypes_ok",
           "arithmetic_dtypes_ok", "computed_as", "Strided"]

RENDERER = OpenCLRenderer()
new_tensor = functools.partial(_new_tensor, RUNTIME)  # new_tensor(shape, dtype, device): a fresh contiguous tensor
#: dtypes every generated kernel handles
KERNEL_DTYPES = frozenset({"float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"})
#: dtypes the elementwise, reduction, scan, matmul, copy, cat, flip, indexing, sort and nonzero kernels also handle:
#: float16/bfloat16, stored in 16 bits and computed in float32 (the renderer's loads and stores convert; no
#: cl_khr_fp16 needed); the other kernels decline them (the CPU fallback runs them)
ARITHMETIC_DTYPES = KERNEL_DTYPES | HALF
#: sources whose copy into a half type would round twice through float32 (the kernels' compute type): such copies run
#: on the host (NumPy rounds once) or the CPU fallback
ROUNDS_TWICE_INTO_HALF = frozenset({"float64", "int32", "int64"})


def is_tensor(x) -> bool:
    return hasattr(x, "_storage")


def arithmetic_dtypes_ok(*xs) -> bool:
    """Whether every tensor among ``xs`` has a dtype in ARITHMETIC_DTYPES (numbers always pass)."""
    return all(x.dtype.name in ARITHMETIC_DTYPES for x in xs if is_tensor(x))


def computed_as(dtype):
    """The dtype a kernel computes ``dtype`` in: float32 for the half types, else ``dtype`` itself."""
    import core

    return core.float32 if dtype.name in HALF else dtype


def slot_of(t):
    """The DeviceSlot a tensor lives on."""
    return RUNTIME.slot(t._storage.device.index)


numel = math.prod


def kernel_dtypes_ok(*xs) -> bool:
    """Whether every tensor among ``xs`` has a dtype the kernels handle (numbers always pass)."""
    return all(x.dtype.name in KERNEL_DTYPES for x in xs if is_tensor(x))


def launch_1d(slot, kernel, n: int, args: list) -> None:
    """Launch one work-item per element (rounded up to the fixed work-group size)."""
    size = -(-n // LOCAL_SIZE) * LOCAL_SIZE
    slot.launch(kernel, (size,), (LOCAL_SIZE,), args)


class Strided:
    """A tensor's buffer read through another layout (a narrowed or flipped view) as a kernel operand."""

    __slots__ = ("_storage", "_shape", "_stride", "_offset", "dtype")

    def __init__(self, t, shape: tuple, stride: tuple, offset: int):
        self._storage, self._shape, self._stride, self._offset, self.dtype = t._storage, shape, stride, offset, t.dtype
