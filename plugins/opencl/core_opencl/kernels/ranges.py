"""The ranges family: ``arange_fill_``, ``linspace_fill_`` and ``logspace_fill_`` as elementwise kernels of the
element's index ``i`` (computed in int64 or float64, then cast to self's dtype, as the reference does)."""

from __future__ import annotations

import numpy as np

from core.backends.api import from_numpy_dtype

from ._common import kernel_dtypes_ok, new_tensor, slot_of
from .elementwise import run_elementwise

__all__ = ["kernels"]


def _compute(name: str):
    return from_numpy_dtype(np.dtype(name))


def arange_fill_(spec, self, start, step):
    exact = isinstance(start, int) and isinstance(step, int)
    if not kernel_dtypes_ok(self) or (not exact and not slot_of(self).fp64):
        return NotImplemented
    return run_elementwise("arange", "(a + b * ({T})i)", self, [start, step], _compute("int64" if exact else "float64"))


def linspace_fill_(spec, self, start, end):
    if not kernel_dtypes_ok(self) or not slot_of(self).fp64 or isinstance(start, complex) or isinstance(end, complex):
        return NotImplemented
    n = self._shape[0]
    if n <= 1:
        return run_elementwise("fill", "a", self, [start], self.dtype) if n else self
    step = (float(end) - float(start)) / (n - 1)
    # symmetric, as the reference: the first half counts up from start, the second down from end (both ends
    # exact); self is 1-D with n > 1, so the kernel's coalesced shape[0] is n
    return run_elementwise("linspace", "(i < shape[0] / 2 ? a + b * ({T})i : c - b * ({T})(shape[0] - 1 - i))",
                           self, [float(start), step, float(end)], _compute("float64"))


def logspace_fill_(spec, self, start, end, base):
    if any(isinstance(v, complex) for v in (start, end, base)) or not kernel_dtypes_ok(self) \
            or not slot_of(self).fp64:
        return NotImplemented
    exponents = new_tensor(self._shape, _compute("float64"), self.device)  # base ** linspace, in float64
    linspace_fill_(None, exponents, start, end)
    return run_elementwise("logspace", "pow(a, b)", self, [float(base), exponents], _compute("float64"))


def kernels(runtime) -> dict:
    """The ranges family: op name -> kernel."""
    return {"arange_fill_": arange_fill_, "linspace_fill_": linspace_fill_, "logspace_fill_": logspace_fill_}
