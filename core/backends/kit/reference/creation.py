"""Reference kernels of the primitive writes: fill_ and copy_ (through views, broadcasting, casting)."""

from __future__ import annotations

import numpy as np

from . import silencer


def kernels(ctx) -> dict:
    """fill_ and copy_ over ``ctx``."""
    xp, array = ctx.xp, ctx.array
    mute, unmute = silencer(ctx)

    def fill_(spec, self, value):
        a = array(self)
        a.fill(np.asarray(value).astype(a.dtype)[()])  # the front-end checked that the value fits
        return self

    def copy_(spec, self, src, non_blocking=False):
        dst, values = array(self), array(src)
        if dst.dtype == values.dtype:
            xp.copyto(dst, values)  # on a GPU: one copy kernel on the current stream
            return self
        token = mute()  # a cast that overflows (3e38 to float16) gives inf without a warning, as PyTorch's does
        try:
            xp.copyto(dst, values, casting="unsafe")
        finally:
            unmute(token)
        return self

    return {"fill_": fill_, "copy_": copy_}
