"""Reference kernels of the primitive writes: fill_ and copy_ (through views, broadcasting, casting), and
``_to_copy``'s cast on one device."""

from __future__ import annotations

import sys
import warnings

import numpy as np

from .... import dtypes
from . import silencer

_EXACT = 2 ** 24  # the integers float32 (and float64) hold exactly
_FILLED_DIRECTLY = frozenset((dtypes.float32, dtypes.float64))
_DISCARDS_IMAGINARY = "Casting complex values to real discards the imaginary part"  # PyTorch's warning


def _real_part(values, target_kind: str):
    """``values`` ready for a cast to a dtype of NumPy kind ``target_kind``: a complex array cast to a real dtype
    keeps its real part with PyTorch's UserWarning, reported at the caller's line (NumPy's own ComplexWarning named
    NumPy's internals)."""
    if values.dtype.kind == "c" and target_kind != "c":
        warnings.warn(_DISCARDS_IMAGINARY, UserWarning, stacklevel=_outside_core())
        return values.real
    return values


def _outside_core() -> int:
    """The ``stacklevel`` of the first caller outside core and its backend plugins (``core_*`` packages)."""
    frame, level = sys._getframe(2), 2  # _real_part's caller's frame: level 3 for warnings.warn in _real_part
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0].startswith("core"):
        frame, level = frame.f_back, level + 1
    return level


def kernels(ctx) -> dict:
    """fill_, copy_ and _to_copy over ``ctx``."""
    xp, array, wrap = ctx.xp, ctx.array, ctx.wrap
    mute, unmute = silencer(ctx)

    def fill_(spec, self, value):
        a = array(self)
        a.fill(np.asarray(value).astype(a.dtype)[()])  # the front-end checked that the value fits
        return self

    def fill_shortcut(full, below):
        """``fill_``'s shortcut (``core.dispatch.operator._shortcut``): a float32/float64 tensor of fewer than
        ``below`` elements filled with a Python float, or an int that both dtypes hold exactly (``ones``,
        ``zeros``, ``backward()``'s implicit gradient), without the meta function; ``a.fill`` rounds a float
        once, as the cast above does."""
        def call(self, value, *more, **kwargs):
            if not more and not kwargs and self.dtype in _FILLED_DIRECTLY and (
                    value.__class__ is float or value.__class__ is int and -_EXACT <= value <= _EXACT):
                a = self._np
                if a is None:
                    a = array(self)
                if a.size < below:
                    a.fill(value)
                    return self
            return full(self, value, *more, **kwargs)

        return call

    fill_.shortcut = fill_shortcut

    def copy_(spec, self, src, non_blocking=False):
        dst, values = array(self), array(src)
        if dst.dtype == values.dtype:
            xp.copyto(dst, values)  # on a GPU: one copy kernel on the current stream
            return self
        values = _real_part(values, dst.dtype.kind)
        token = mute()  # a cast that overflows (3e38 to float16) gives inf without a warning, as PyTorch's does
        try:
            xp.copyto(dst, values, casting="unsafe")
        finally:
            unmute(token)
        return self

    def to_copy(spec, self, dtype=None, device=None, non_blocking=False):
        """A cast (or copy) on self's own device in one array call; a move declines to the op's device-agnostic
        kernel (the source runtime copies out, the destination's copies in)."""
        if spec.device is not self._storage.device:
            return NotImplemented
        target = spec.dtype.numpy
        values = _real_part(array(self), target.kind)
        token = mute()
        try:
            return wrap(values.astype(target, order="C"), spec)
        finally:
            unmute(token)

    return {"fill_": fill_, "copy_": copy_, "_to_copy": to_copy}
