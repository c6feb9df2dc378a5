"""The creation family: ``copy_`` (any strides, any pair of dtypes) and ``fill_`` as device kernels; copies from
another device, dtypes the kernels do not hold and byte views not written in whole words go through the host."""

from __future__ import annotations

import numpy as np

from ._common import is_tensor
from .elementwise import compute_name, run_elementwise, supported

__all__ = ["kernels"]


def kernels(runtime) -> dict:
    """The creation family: op name -> kernel."""

    def copy_(spec, self, src, non_blocking=False):
        if is_tensor(src) and src._storage.device == self._storage.device and supported(self, src) and \
                run_elementwise("copy", "a", self, [src], compute_name(src.dtype)) is not NotImplemented:
            return self
        host = src._storage.backend.to_host(src) if is_tensor(src) else np.asarray(src)
        runtime.write_strided(self, host)  # staged through the host, with NumPy's casts
        return self

    def fill_(spec, self, value):
        value = value.item() if is_tensor(value) else value
        if not supported(self) or run_elementwise("fill", "a", self, [value], compute_name(self.dtype)) is \
                NotImplemented:
            runtime.write_strided(self, np.asarray(value))
        return self

    return {"copy_": copy_, "fill_": fill_}
