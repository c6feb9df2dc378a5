"""NumPy kernels of the ranges family: in-place fills of a 1-D tensor with a sequence."""

from __future__ import annotations

import numpy as np

from ..runtime import array


def _store(self, values):
    # float -> int casts truncate toward zero, as C++ conversions do; integers wrap
    with np.errstate(all="ignore"):
        array(self)[...] = values.astype(self.dtype.numpy)
    return self


def arange_fill_(spec, self, start, step):
    exact = isinstance(start, int) and isinstance(step, int)
    index = np.arange(self._shape[0], dtype=np.int64 if exact else np.float64)
    return _store(self, start + step * index)


def _linspace(n: int, start, end, complex_: bool) -> np.ndarray:
    cd = np.complex128 if complex_ else np.float64
    if n == 1:
        return np.full(1, start, dtype=cd)
    start, end = cd(start), cd(end)
    step = (end - start) / (n - 1) if n else 0
    index = np.arange(n, dtype=np.float64)
    # symmetric: the first half counts up from start, the second half down from end, so both ends are exact
    return np.where(index < n // 2, start + step * index, end - step * (n - 1 - index))


def linspace_fill_(spec, self, start, end):
    return _store(self, _linspace(self._shape[0], start, end, self.dtype.category == 3))


def logspace_fill_(spec, self, start, end, base):
    complex_ = self.dtype.category == 3
    with np.errstate(all="ignore"):
        values = np.power(np.complex128(base) if complex_ else np.float64(base),
                          _linspace(self._shape[0], start, end, complex_))
    return _store(self, values)


def kernels(ctx) -> dict:
    """This family's kernels, written over NumPy alone (bound to the NumPy runtime, so ``ctx`` is unused)."""
    return {"arange_fill_": arange_fill_, "linspace_fill_": linspace_fill_, "logspace_fill_": logspace_fill_}
