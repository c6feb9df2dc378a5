"""The NumPy reference backend's runtime: host memory as NumPy arrays.

A Storage's ``data`` is a C-contiguous NumPy array owning the bytes (the
array a kernel returned, or a flat ``uint8`` buffer); tensors see it through
``np.ndarray(shape, dtype, buffer, offset, strides)`` views, cached on the
tensor, so kernels pay nothing to find their inputs.

Host memory statistics (``core.cpu.memory_allocated`` and its peak) count the buffers the cpu backends allocate
(this runtime's and cpu_c's; not arrays shared by ``from_numpy``): each is :func:`track`-ed with a weak reference
whose callback subtracts its bytes when the buffer is freed. That costs about 0.7 us per buffer, a third of a small
op, so buffers under ``TRACK_MIN_BYTES`` (one page) are not counted: the statistics see every tensor that matters
for memory, and 1-element ops stay as fast as before.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
import scipy.special

from ...device import device
from ...storage import Storage
from ...tensor import Tensor, contiguous_strides
from ..api import Runtime
from ..kit.reference import ArrayContext, silencer

__all__ = ["NumpyRuntime", "RUNTIME", "CONTEXT", "array", "wrap", "CPU", "track", "TRACK_MIN_BYTES"]

CPU = device("cpu")

TRACK_MIN_BYTES = 4096
_live: dict = {}  # id(weak reference) -> (weak reference, bytes) of each tracked live buffer
_counts = [0, 0]  # bytes in live tracked buffers, their peak since the start or the last reset
_counts_lock = threading.Lock()  # only around integer updates: nothing inside can free a buffer and re-enter


def _released(ref, _live=_live, _counts=_counts, _lock=_counts_lock) -> None:
    nbytes = _live.pop(id(ref))[1]
    with _lock:
        _counts[0] -= nbytes


def track(buffer: np.ndarray, nbytes: int, _ref=weakref.ref, _live=_live, _counts=_counts, _lock=_counts_lock):
    """Count ``buffer`` (``nbytes`` bytes) as allocated cpu memory until it is freed; returns it.

    Callers skip buffers under ``TRACK_MIN_BYTES``.
    """
    ref = _ref(buffer, _released)
    _live[id(ref)] = (ref, nbytes)
    with _lock:
        current = _counts[0] = _counts[0] + nbytes
        if current > _counts[1]:
            _counts[1] = current
    return buffer


class NumpyRuntime(Runtime):
    """Host memory and NumPy kernels for the ``cpu`` device: the reference every backend is tested against."""

    def normalize_device(self, dev: device) -> device:
        if dev.index not in (None, 0):
            raise RuntimeError(f"cpu device index must be 0 or omitted, got {dev.index}")
        return CPU

    def device_name(self, index: int = 0) -> str:
        import platform

        return platform.processor() or platform.machine() or "cpu"

    def allocate(self, nbytes: int, dev: device):
        buffer = np.empty(nbytes, np.uint8)
        return track(buffer, nbytes) if nbytes >= TRACK_MIN_BYTES else buffer

    def from_host(self, array: np.ndarray, dev: device):
        return array

    def to_host(self, tensor: Tensor) -> np.ndarray:
        return array(tensor)

    def data_ptr(self, storage: Storage) -> int:
        return storage.data.__array_interface__["data"][0]

    def memory_allocated(self, dev=None) -> int:
        """Bytes in live buffers the cpu backends allocated (those of ``TRACK_MIN_BYTES`` or more)."""
        return _counts[0]

    def max_memory_allocated(self, dev=None) -> int:
        """Peak of :meth:`memory_allocated` since the start or :meth:`reset_peak_memory_stats`."""
        return _counts[1]

    def memory_reserved(self, dev=None) -> int:
        """Bytes held for cpu tensors: the live buffers (this runtime caches none)."""
        return _counts[0]

    def reset_peak_memory_stats(self, dev=None) -> None:
        """Start the peak again from the current value."""
        with _counts_lock:
            _counts[1] = _counts[0]


RUNTIME = NumpyRuntime()


def _flat_bytes(storage: Storage) -> np.ndarray:
    data = storage.data
    if data.dtype != np.uint8 or data.ndim != 1:
        data = storage.data = data.reshape(-1).view(np.uint8)
    return data


def array(t: Tensor) -> np.ndarray:
    """The NumPy view of a CPU tensor (shares memory; cached on the tensor)."""
    a = t._np
    if a is None:
        if 0 in t._shape:  # NumPy rejects zero-element views at offsets past the buffer's end
            a = t._np = np.empty(t._shape, t.dtype.numpy)
            return a
        isz = t.dtype.itemsize
        a = t._np = np.ndarray(t._shape, t.dtype.numpy, _flat_bytes(t._storage), t._offset * isz,
                               tuple(map(isz.__mul__, t._stride)))  # byte strides (map: no Python frame)
    return a


def wrap(a, like) -> Tensor:
    """A CPU tensor owning the freshly computed array ``a``, cast to ``like.dtype`` (a spec's, or a tensor's)."""
    dtype = like.dtype
    if a.__class__ is not np.ndarray:
        a = np.asarray(a)
    if a.dtype != dtype.numpy:
        # the storage's bytes are row-major (an F-ordered result's cast is not); a cast that overflows (3e38 to
        # float16) gives inf without NumPy's warning, as PyTorch's casts do
        token = _QUIET()
        try:
            a = a.astype(dtype.numpy, order="C")
        finally:
            _LOUD(token)
    elif not a.flags.c_contiguous:
        a = a.copy()
    shape = a.shape
    nbytes = a.nbytes
    if nbytes >= TRACK_MIN_BYTES:
        track(a, nbytes)
    storage = Storage(a, nbytes, CPU, RUNTIME, _KEY[0])
    return Tensor._make(storage, shape, contiguous_strides(shape), 0, dtype, a)


_KEY = [0]


def _silencer():
    """``(mute, unmute)`` without ``numpy.errstate``'s Python frames: set NumPy's error-state context variable to a
    prepared "ignore all" state and reset it (NumPy 2's own mechanism; ``(None, None)`` where it is not there, and
    the kit then uses ``numpy.errstate``)."""
    try:
        from numpy._core._ufunc_config import _extobj_contextvar
        from numpy._core.umath import _make_extobj
    except ImportError:
        return None, None
    from functools import partial

    return partial(_extobj_contextvar.set, _make_extobj(all="ignore")), _extobj_contextvar.reset


_MUTE, _UNMUTE = _silencer()

# what the reference kernels (core/backends/kit/reference) need: they are this backend's kernels over NumPy
CONTEXT = ArrayContext(xp=np, array=array, wrap=wrap, special=scipy.special, errstate=np.errstate,
                       reduce_sum=np.add.reduce, reduce_prod=np.multiply.reduce, mute=_MUTE, unmute=_UNMUTE)
_QUIET, _LOUD = silencer(CONTEXT)  # (mute, unmute), numpy.errstate's where NumPy lacks the context variable
