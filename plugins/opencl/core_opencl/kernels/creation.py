"""The creation family on the device: ``copy_`` (any strides, any pair of dtypes) and ``fill_``."""

from __future__ import annotations

import numpy as np

from ._common import is_tensor, kernel_dtypes_ok
from .elementwise import run_elementwise

__all__ = ["kernels"]


def kernels(runtime) -> dict:
    """The creation family: op name -> kernel."""

    def copy_(spec, self, src, non_blocking=False):
        if not kernel_dtypes_ok(self, src):  # half types: through the host, with NumPy's casts
            host = src._storage.backend.to_host(src) if is_tensor(src) else np.asarray(src)
            runtime.write_strided(self, host)
            return self
        if src._storage.device != self._storage.device:
            src = src.to(self.device)
        run_elementwise("copy", "a", self, [src], src.dtype)
        return self

    def fill_(spec, self, value):
        if is_tensor(value):
            value = value.item()
        if not kernel_dtypes_ok(self):
            runtime.write_strided(self, np.asarray(value))
            return self
        run_elementwise("fill", "a", self, [value], self.dtype)
        return self

    return {"copy_": copy_, "fill_": fill_}
