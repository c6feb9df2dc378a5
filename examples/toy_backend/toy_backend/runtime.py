"""The toy device's memory: each buffer is a flat uint8 NumPy array that this backend owns."""

import numpy as np

from core.backends.api import Runtime, make_tensor


class ToyRuntime(Runtime):
    """One pretend device whose memory is host memory."""

    def device_name(self, index=0):
        return "Toy device (host memory)"

    def allocate(self, nbytes, dev):
        return np.empty(nbytes, np.uint8)

    def from_host(self, array, dev):
        return np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()

    def to_host(self, tensor):
        return view(tensor).copy()

    def data_ptr(self, storage):
        return storage.data.ctypes.data

    def new_tensor(self, spec, array):
        """A fresh tensor shaped and typed as ``spec`` holding ``array`` (copied: outputs never alias inputs)."""
        array = np.array(array, dtype=spec.dtype.numpy, order="C")
        return make_tensor(self, array.reshape(-1).view(np.uint8), array.nbytes, spec.shape, spec.dtype,
                           spec.device)


def view(tensor):
    """The tensor's elements as a NumPy view of its buffer (shape, strides and offset honoured)."""
    if tensor.numel() == 0:
        return np.empty(tuple(tensor.shape), tensor.dtype.numpy)
    itemsize = tensor.dtype.itemsize
    return np.ndarray(tuple(tensor.shape), tensor.dtype.numpy, tensor.untyped_storage().data,
                      tensor.storage_offset() * itemsize, tuple(s * itemsize for s in tensor.stride()))
