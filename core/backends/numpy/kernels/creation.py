"""NumPy kernels of the primitive writes: fill_ and copy_ (broadcasting, casting)."""

from __future__ import annotations

import numpy as np

from ._common import array


def fill_(spec, self, value):
    a = array(self)
    if self.dtype.category < 2 and isinstance(value, float) and not np.isfinite(value):
        raise RuntimeError(f"fill_(): value cannot be converted to type {self.dtype.name} without overflow")
    a[...] = np.asarray(value).astype(a.dtype) if self.dtype.category < 3 and isinstance(value, complex) is False \
        else value
    return self


def copy_(spec, self, src, non_blocking=False):
    np.copyto(array(self), array(src), casting="unsafe")
    return self


KERNELS = {"fill_": fill_, "copy_": copy_}
