"""The creation family: ``copy_`` and ``fill_`` through host staging (any strides, any pair of dtypes)."""

from __future__ import annotations

import numpy as np

__all__ = ["kernels"]


def _is_tensor(x) -> bool:
    return hasattr(x, "_storage")


def kernels(runtime) -> dict:
    """The creation family: op name -> kernel."""

    def copy_(spec, self, src, non_blocking=False):
        host = src._storage.backend.to_host(src) if _is_tensor(src) else np.asarray(src)
        runtime.write_strided(self, host)
        return self

    def fill_(spec, self, value):
        runtime.write_strided(self, np.asarray(value.item() if _is_tensor(value) else value))
        return self

    return {"copy_": copy_, "fill_": fill_}
