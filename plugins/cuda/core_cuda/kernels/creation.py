"""cuda kernels of the primitive writes: fill_ and copy_ (through views, broadcasting, casting)."""

from __future__ import annotations

import numpy as np


def kernels(rt) -> dict:
    def fill_(spec, self, value):
        a = rt.array(self)
        a.fill(np.asarray(value).astype(a.dtype)[()])  # the front-end checked that the value fits
        return self

    def copy_(spec, self, src, non_blocking=False):
        # same device: one device-side copy kernel, queued on the current stream (never blocks the host)
        rt.array(self)[...] = rt.array(src)
        return self

    return {"fill_": fill_, "copy_": copy_}
