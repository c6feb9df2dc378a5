"""NumPy kernels of the primitive writes: fill_ and copy_ (broadcasting, casting)."""

from __future__ import annotations

import numpy as np

from ._common import array


def fill_(spec, self, value):
    a = array(self)
    a[...] = np.asarray(value).astype(a.dtype)  # the front-end checked that the value fits
    return self


def copy_(spec, self, src, non_blocking=False):
    np.copyto(array(self), array(src), casting="unsafe")
    return self


KERNELS = {"fill_": fill_, "copy_": copy_}
