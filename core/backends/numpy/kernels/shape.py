"""NumPy kernels of the shape family: cat and flip."""

from __future__ import annotations

import numpy as np

from ._common import array, wrap


def cat(spec, tensors, dim=0):
    out = np.empty(spec.shape, spec.dtype.numpy)
    if out.size:
        dim %= out.ndim
        start = 0
        for t in tensors:
            if t.numel() == 0:  # includes the legacy 1-d empties of another rank
                continue
            a = array(t)
            n = a.shape[dim]
            np.copyto(out[(slice(None),) * dim + (slice(start, start + n),)], a, casting="unsafe")
            start += n
    return wrap(out, spec.dtype)


def flip(spec, input, dims):
    return wrap(np.array(np.flip(array(input), dims), order="C", copy=True), spec.dtype)


KERNELS = {"cat": cat, "flip": flip}
