"""cpu_c's runtime: host memory in the NumPy backend's storage format, 64-byte aligned.

A Storage's ``data`` is a flat ``uint8`` NumPy array, exactly as in the NumPy reference backend, so the two backends'
kernels (cpu_c extends the reference op by op) read each other's tensors with no conversion. Buffers this runtime
allocates start on a 64-byte boundary (AVX-512 loads, cache lines).
"""

from __future__ import annotations

import math
import sys

import numpy as np
from core.backends.api import Storage, Tensor, contiguous_strides
from core.backends.numpy.runtime import TRACK_MIN_BYTES, CPU, NumpyRuntime, array, track  # noqa: F401 - array

from . import lib

__all__ = ["CpuCRuntime", "RUNTIME", "aligned_empty", "new_tensor", "fresh", "half_path", "vector_math_path",
           "ALIGNMENT"]

ALIGNMENT = 64
CACHE_MIN_BYTES = 1 << 16  # fresh buffers this large cost page faults on first touch (a*b+c ran at 1/3 the
# bandwidth; LeNet training steps ran 15-20% slower with a 1 MiB threshold)
CACHE_MAX_BUFFERS = 16
_cache: dict = {}  # padded size -> [(raw buffer, offset of its first aligned byte)]; a raw buffer referenced only
# by its entry is free again
_getrefcount = sys.getrefcount


def _free_entries(pool: list, free: int, first: bool) -> list:
    """The entries of ``pool`` whose buffer nothing but the entry refers to (``sys.getrefcount`` of such a buffer
    read here is ``free``: :func:`_free_count`); only the first with ``first``."""
    found = []
    for entry in pool:
        if _getrefcount(entry[0]) == free:
            found.append(entry)
            if first:
                break
    return found


def _free_count() -> int:
    """The reference count :func:`_free_entries` reads for a buffer held only by its pool entry: measured, since
    it depends on whether this module runs interpreted or compiled (core/_hot.py). -1 (never reuse) if a buffer
    someone else holds would read the same."""
    pool = [(np.empty(1, np.uint8), 0)]
    free = next((n for n in range(1, 16) if _free_entries(pool, n, True)), -1)
    held = pool[0][0]  # a second reference: the buffer is in use now
    in_use_reads_free = bool(_free_entries(pool, free, True))
    del held
    return -1 if in_use_reads_free else free


_FREE = _free_count()


def aligned_empty(nbytes: int) -> np.ndarray:
    """An uninitialised flat uint8 buffer of ``nbytes`` bytes whose first byte is 64-byte aligned.

    Large buffers come from a small cache: one is reused once no tensor, view or NumPy array still refers to it
    (its slices keep it alive, so a reference count of "the cache only" means free).
    """
    size = nbytes + ALIGNMENT
    if nbytes >= CACHE_MIN_BYTES:
        pool = _cache.get(size)
        if pool is None:
            pool = _cache[size] = []
        entry = _free_entries(pool, _FREE, True)
        if entry:
            raw, start = entry[0]
        else:
            raw = np.empty(size, np.uint8)
            start = -_address(raw) % ALIGNMENT
            if len(pool) < CACHE_MAX_BUFFERS:
                pool.append((raw, start))
    else:
        raw = np.empty(size, np.uint8)
        start = -_address(raw) % ALIGNMENT
    buffer = raw[start:start + nbytes]
    return track(buffer, nbytes) if nbytes >= TRACK_MIN_BYTES else buffer


def empty_cache() -> None:
    """Drop the cached large buffers (those in use stay alive through their tensors)."""
    _cache.clear()


def _address(a: np.ndarray) -> int:
    if _FFI:  # ~3x cheaper than __array_interface__
        ffi = _FFI[0]
        return int(ffi.cast("uintptr_t", ffi.from_buffer(a)))
    return a.__array_interface__["data"][0]


_FFI: list = []  # the extension's ffi, once loaded


def half_path() -> str:
    """Which float16 conversion the extension was built with (csrc/half.h): "F16C" (the compiler's _Float16 and
    the F16C instructions) or "portable" (bit arithmetic); bfloat16 always converts with bit arithmetic."""
    from .lib import load

    return "F16C" if load()[1].ccc_half_path() else "portable"


def vector_math_path() -> str:
    """Which functions serve the transcendental loops (csrc/vecmath.h): glibc's libmvec and its widest variant this
    processor runs, or libm's scalar functions (no libmvec at build time: not glibc 2.35+ on x86-64 with GCC)."""
    from .lib import load

    lanes = load()[1].ccc_vector_math()
    return f"libmvec SIMD, {({4: 'SSE', 8: 'AVX2', 16: 'AVX-512'})[lanes]}" if lanes else "libm scalar"


class CpuCRuntime(NumpyRuntime):
    """The NumPy reference's host memory, aligned, plus cpu_c's thread controls."""

    def allocate(self, nbytes: int, dev):
        return aligned_empty(nbytes)

    def device_name(self, index: int = 0) -> str:
        """The CPU's name, then cpu_c's, how its float16 kernels convert, which functions serve exp, tanh, ... and
        which kernels serve float32 convolution and GEMM (``python -m core info``)."""
        from .kernels.conv import conv_path
        from .kernels.linalg import gemm_path

        return (f"{super().device_name(index)} (cpu_c, float16 {half_path()}; transcendentals: {vector_math_path()}; "
                f"float32 convolution: {conv_path()}; float32 GEMM: {gemm_path()})")

    def empty_cache(self) -> None:
        empty_cache()

    def memory_reserved(self, dev=None) -> int:
        """Bytes held for cpu tensors: the live buffers plus the free ones the large-buffer cache keeps."""
        free = sum(raw.nbytes for pool in _cache.values() for raw, _ in _free_entries(pool, _FREE, False))
        return self.memory_allocated() + free

    def set_num_threads(self, n: int) -> None:
        """Threads of the C kernels and the BLAS (kept equal)."""
        lib.set_num_threads(n)

    def get_num_threads(self) -> int:
        """Threads of the C kernels and the BLAS."""
        return lib.get_num_threads()

    def supports_fusion(self, dev) -> bool:
        """core.jit fuses elementwise chains on cpu_c when gcc is there to compile them (see jit.py)."""
        from .jit import compiler

        return compiler() is not None

    def compile_fused(self, kernel, dev):
        """A launcher of ``kernel``, compiled per input layout class on first use."""
        from .jit import FusedLauncher

        return FusedLauncher(kernel)


RUNTIME = CpuCRuntime()


def new_tensor(shape: tuple, dtype, nbytes: int, key: int, strides: tuple | None = None):
    """(tensor, flat uint8 buffer): a fresh contiguous aligned CPU tensor owned by this runtime."""
    buf = aligned_empty(nbytes)
    strides = contiguous_strides(shape) if strides is None else strides
    return Tensor._make(Storage(buf, nbytes, CPU, RUNTIME, key), shape, strides, 0, dtype), buf


def fresh(shape: tuple, dtype, key: int, strides: tuple | None = None):
    """A fresh dense output tensor as the kernels make them (what a captured step's direct C calls write into:
    ``core.backends.api.note_c_call``'s ``make``)."""
    return new_tensor(shape, dtype, math.prod(shape) * dtype.itemsize, key, strides)[0]
