"""Storage: one backend buffer, its size in bytes, its device, and the version counter.

Every view of a tensor shares its Storage; the version counter lives here so
that an in-place write through any view is seen by all of them (autograd uses
it to refuse gradients through tensors modified after they were saved).
"""

from __future__ import annotations

__all__ = ["Storage"]


class Storage:
    """A backend buffer of ``nbytes`` bytes on ``device``.

    ``data`` is whatever the backend's runtime allocated (a NumPy array for the
    CPU reference backend, a device buffer for others); core never looks inside.
    ``backend`` is the runtime object that owns the buffer and ``key`` its
    dispatch-key bit.
    """

    __slots__ = ("data", "nbytes", "device", "backend", "key", "version", "__weakref__")

    def __init__(self, data, nbytes: int, device, backend, key: int):
        self.data = data
        self.nbytes = nbytes
        self.device = device
        self.backend = backend
        self.key = key
        self.version = 0

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
