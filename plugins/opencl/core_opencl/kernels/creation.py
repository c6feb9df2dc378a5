"""The creation family on the device: ``copy_`` (any strides, any pair of dtypes) and ``fill_``."""

from __future__ import annotations

import numpy as np

from ._common import HALF, ROUNDS_TWICE_INTO_HALF, arithmetic_dtypes_ok, computed_as, is_tensor
from .elementwise import run_elementwise

__all__ = ["kernels"]


def _on_device(self, src) -> bool:
    """Whether the device copies tensor ``src`` into ``self`` with the reference's values."""
    return arithmetic_dtypes_ok(self, src) and (self.dtype.name not in HALF
                                                 or src.dtype.name not in ROUNDS_TWICE_INTO_HALF)


def kernels(runtime) -> dict:
    """The creation family: op name -> kernel."""

    def copy_(spec, self, src, non_blocking=False):
        if not is_tensor(src) or not _on_device(self, src):  # through the host, with NumPy's casts
            host = src._storage.backend.to_host(src) if is_tensor(src) else np.asarray(src)
            runtime.write_strided(self, host)
            return self
        if src._storage.device != self._storage.device:
            src = src.to(self.device)
        run_elementwise("copy", "a", self, [src], computed_as(src.dtype))
        return self

    def fill_(spec, self, value):
        if is_tensor(value):
            value = value.item()
        compute = computed_as(self.dtype)
        # a half fill from a value float32 does not hold exactly would round twice: the host rounds once
        if not arithmetic_dtypes_ok(self) or (self.dtype.name in HALF and np.float32(value) != value):
            runtime.write_strided(self, np.asarray(value))
            return self
        run_elementwise("fill", "a", self, [value], compute)
        return self

    return {"copy_": copy_, "fill_": fill_}
