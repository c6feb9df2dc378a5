"""The toy device's runtime: memory it owns (flat uint8 NumPy arrays) and the array views its kernels compute on."""

import numpy as np
import scipy.special

from core.backends.api import Runtime, make_tensor


class ToyRuntime(Runtime):
    """One pretend device whose memory is host memory; also the array context the kit's reference kernels need."""

    # the array module and helpers of the kit's reference kernels (core.backends.api.reference.ArrayContext)
    xp, special, errstate = np, scipy.special, np.errstate
    reduce_sum, reduce_prod, native_half_matmul = np.add.reduce, np.multiply.reduce, False

    def device_name(self, index=0):
        return "Toy device (host memory)"

    def allocate(self, nbytes, dev):
        return np.empty(nbytes, np.uint8)

    def from_host(self, array, dev):
        return np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()

    def to_host(self, tensor):
        return self.array(tensor).copy()

    def data_ptr(self, storage):
        return storage.data.ctypes.data

    def array(self, tensor):
        """The tensor's elements as a NumPy view of its buffer (shape, strides and offset honoured)."""
        if tensor.numel() == 0:
            return np.empty(tuple(tensor.shape), tensor.dtype.numpy)
        itemsize = tensor.dtype.itemsize
        return np.ndarray(tuple(tensor.shape), tensor.dtype.numpy, tensor.untyped_storage().data,
                          tensor.storage_offset() * itemsize, tuple(s * itemsize for s in tensor.stride()))

    def wrap(self, array, like):
        """A toy tensor owning a kernel's fresh result ``array``, cast to ``like.dtype`` (``like``: the spec)."""
        array = np.asarray(array, dtype=like.dtype.numpy, order="C")
        return make_tensor(self, array.reshape(-1).view(np.uint8), array.nbytes, array.shape, like.dtype,
                           like.device)
