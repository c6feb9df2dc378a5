"""Storage: one backend buffer, its size in bytes, its device, and the version counter.

Every view of a tensor shares its Storage; the version counter lives here so
that an in-place write through any view is seen by all of them (autograd uses
it to refuse gradients through tensors modified after they were saved).
"""

from __future__ import annotations

import warnings

from .dispatch.keys import InferenceTensor, tls

__all__ = ["Storage", "TypedStorage"]


_INFERENCE_MASK = InferenceTensor.mask


class Storage:
    """A backend buffer of ``nbytes`` bytes on ``device``.

    ``data`` is whatever the backend's runtime allocated (a NumPy array for the
    CPU reference backend, a device buffer for others); core never looks inside.
    ``backend`` is the runtime object that owns the buffer and ``key`` its
    dispatch-key bit. ``inference`` records that it was allocated inside ``core.inference_mode``: tensors over
    it are inference tensors (views of normal tensors made in that mode are not, as in PyTorch), and ``key`` then
    also carries the InferenceTensor dispatch key, whose kernel enforces their rules outside that mode.
    """

    __slots__ = ("data", "nbytes", "device", "backend", "key", "version", "inference", "__weakref__")

    def __init__(self, data, nbytes: int, device, backend, key: int):
        self.data = data
        self.nbytes = nbytes
        self.device = device
        self.backend = backend
        self.version = 0
        self.inference = inference = tls.inference
        self.key = key | _INFERENCE_MASK if inference else key

    def size(self) -> int:
        """Size in bytes (``torch.UntypedStorage.size``)."""
        return self.nbytes

    def data_ptr(self) -> int:
        """Address of the buffer's first byte, as the backend reports it."""
        return self.backend.data_ptr(self)

    def __len__(self) -> int:
        return self.nbytes

    def __repr__(self) -> str:
        return f"<core.Storage of {self.nbytes} bytes on {self.device}>"


_TYPED_STORAGE_WARNED = [False]


def warn_typed_storage_removal() -> None:
    """PyTorch's once-per-process deprecation warning for TypedStorage (``Tensor.storage()`` gives it)."""
    if not _TYPED_STORAGE_WARNED[0]:
        _TYPED_STORAGE_WARNED[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                      "only storage class. This should only matter to you if you are using storages directly.  To "
                      "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)


class TypedStorage:
    """A Storage seen as elements of one dtype (``torch.TypedStorage``, what ``Tensor.storage()`` returns)."""

    def __init__(self, untyped: Storage, dtype):
        self._untyped_storage = untyped
        self.dtype = dtype

    @property
    def device(self):
        return self._untyped_storage.device

    def untyped(self) -> Storage:
        """The byte Storage underneath."""
        return self._untyped_storage

    def size(self) -> int:
        """Number of elements of ``dtype`` the storage holds."""
        return self._untyped_storage.nbytes // self.dtype.itemsize

    __len__ = size

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def nbytes(self) -> int:
        """Size in bytes."""
        return self._untyped_storage.nbytes

    def data_ptr(self) -> int:
        """Address of the first element."""
        return self._untyped_storage.data_ptr()

    def _as_tensor(self):
        # read through a 1-D tensor over the whole storage: only kernels touch data (imported here, since
        # Tensor is built on Storage)
        from .tensor import Tensor

        return Tensor._make(self._untyped_storage, (self.size(),), (1,), 0, self.dtype)

    def tolist(self) -> list:
        """The elements as a list of Python numbers."""
        return self._as_tensor().tolist()

    def __getitem__(self, index):
        return self._as_tensor()[index].tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        return f"<core.TypedStorage of {self.size()} {self.dtype.name} elements on {self.device}>"
