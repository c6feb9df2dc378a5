"""Reference kernels of the primitive writes: fill_ and copy_ (through views, broadcasting, casting)."""

from __future__ import annotations

import numpy as np


def kernels(ctx) -> dict:
    """fill_ and copy_ over ``ctx``."""
    xp, array = ctx.xp, ctx.array

    def fill_(spec, self, value):
        a = array(self)
        a.fill(np.asarray(value).astype(a.dtype)[()])  # the front-end checked that the value fits
        return self

    def copy_(spec, self, src, non_blocking=False):
        xp.copyto(array(self), array(src), casting="unsafe")  # on a GPU: one copy kernel on the current stream
        return self

    return {"fill_": fill_, "copy_": copy_}
