"""The NumPy reference backend's runtime: host memory as NumPy arrays.

A Storage's ``data`` is a C-contiguous NumPy array owning the bytes (the
array a kernel returned, or a flat ``uint8`` buffer); tensors see it through
``np.ndarray(shape, dtype, buffer, offset, strides)`` views, cached on the
tensor, so kernels pay nothing to find their inputs.
"""

from __future__ import annotations

import numpy as np
import scipy.special

from ...device import device
from ...storage import Storage
from ...tensor import Tensor, contiguous_strides
from ..api import Runtime
from ..kit.reference import ArrayContext

__all__ = ["NumpyRuntime", "RUNTIME", "CONTEXT", "array", "wrap", "CPU"]

CPU = device("cpu")


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
        return np.empty(nbytes, np.uint8)

    def from_host(self, array: np.ndarray, dev: device):
        return array

    def to_host(self, tensor: Tensor) -> np.ndarray:
        return array(tensor)

    def data_ptr(self, storage: Storage) -> int:
        return storage.data.__array_interface__["data"][0]


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
                               tuple(s * isz for s in t._stride))
    return a


def wrap(a, like) -> Tensor:
    """A CPU tensor owning the freshly computed array ``a``, cast to ``like.dtype`` (a spec's, or a tensor's)."""
    dtype = like.dtype
    if a.__class__ is not np.ndarray:
        a = np.asarray(a)
    if a.dtype != dtype.numpy:
        a = a.astype(dtype.numpy)
    elif not a.flags.c_contiguous:
        a = a.copy()
    shape = a.shape
    storage = Storage(a, a.nbytes, CPU, RUNTIME, _KEY[0])
    return Tensor._make(storage, shape, contiguous_strides(shape), 0, dtype, a)


_KEY = [0]

# what the reference kernels (core/backends/kit/reference) need: they are this backend's kernels over NumPy
CONTEXT = ArrayContext(xp=np, array=array, wrap=wrap, special=scipy.special, errstate=np.errstate,
                       reduce_sum=np.add.reduce, reduce_prod=np.multiply.reduce)
