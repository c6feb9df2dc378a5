"""The reference kernels, written once over an array module: NumPy for the ``numpy`` backend, CuPy for ``cuda``.

Each family module exposes ``kernels(ctx) -> dict`` like any backend's ``kernels/<family>.py``. ``ctx`` is an
:class:`ArrayContext`, or any object with the same attributes (the cuda runtime is one):

- ``xp``: the array module (``numpy``, ``cupy``);
- ``array(t)``: the array view of a tensor of the backend (cached on the tensor as ``t._np``);
- ``wrap(a, like)``: a tensor of the backend owning the fresh array ``a``, of ``like.dtype`` on ``like.device``
  (``like`` is the meta function's spec, or the input tensor of a composite);
- ``special``: ``scipy.special`` or ``cupyx.scipy.special`` (the sparse family picks ``scipy.sparse`` or
  ``cupyx.scipy.sparse`` from ``xp`` itself);
- ``errstate(all="ignore")``: a context silencing floating-point warnings (``numpy.errstate``; CuPy never warns);
- ``mute``/``unmute`` (optional): ``token = mute()`` silences floating-point warnings until ``unmute(token)``, the
  hot kernels' cheaper form of ``errstate`` (``numpy.errstate`` costs about 1 µs a call); :func:`silencer` builds
  them from ``errstate`` for a context without them;
- ``reduce_sum``/``reduce_prod``: ``f(a, axis=, keepdims=, dtype=)`` (NumPy's ``np.add.reduce`` skips
  ``np.sum``'s Python-level dispatch, the hot path of ``x.sum()``; CuPy has ``cupy.sum``);
- ``native_half_matmul``: whether ``xp.matmul`` multiplies float16 itself (cuBLAS: float32 accumulation).

What has no twin in every array module (``ufunc.at`` scatters, NumPy's ``Generator``, stable ``argsort``) stays
in the backend's own families: the numpy backend's index_put_/scatter_, random, sorting and ranges.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

__all__ = ["ArrayContext", "FAMILIES", "compute_np", "COMPUTE_NP", "operands", "silencer", "HALF_NAMES"]

FAMILIES = ("elementwise", "derivatives", "reduction", "shape", "indexing", "linalg", "decompositions", "creation",
            "spectral", "sparse")

HALF_NAMES = ("float16", "bfloat16")
_F32 = np.dtype(np.float32)


class ArrayContext(NamedTuple):
    """What the reference kernels need from a backend (see the module docstring)."""

    xp: object
    array: Callable
    wrap: Callable
    special: object
    errstate: Callable
    reduce_sum: Callable
    reduce_prod: Callable
    native_half_matmul: bool = False
    mute: Callable | None = None
    unmute: Callable | None = None


def compute_np(d) -> np.dtype:
    """The NumPy dtype to compute ``d`` in: half types compute in float32, as PyTorch's kernels do (opmath)."""
    return _F32 if d.name in HALF_NAMES else d.numpy


class _ComputeDtypes(dict):
    """core dtype -> :func:`compute_np` of it, filled on first use: ``COMPUTE_NP[d]`` is a dict look-up where the
    hot kernels would otherwise pay a Python call."""

    def __missing__(self, d):
        found = self[d] = compute_np(d)
        return found


COMPUTE_NP = _ComputeDtypes()


def silencer(ctx) -> tuple:
    """``(mute, unmute)`` of ``ctx``: ``token = mute()`` silences floating-point warnings until ``unmute(token)``.

    The context's own pair when it has one, else one made from ``ctx.errstate``."""
    mute = getattr(ctx, "mute", None)
    if mute is not None:
        return mute, ctx.unmute
    errstate = ctx.errstate

    def entered():
        state = errstate(all="ignore")
        state.__enter__()
        return state

    return entered, lambda state: state.__exit__(None, None, None)


def operands(ctx) -> Callable:
    """``operand(x, np_dtype)``: a tensor's array (through ``ctx.array``) or a Python scalar, in ``np_dtype``."""
    array = ctx.array

    def operand(x, np_dtype: np.dtype):
        if hasattr(x, "_storage"):
            a = x._np
            if a is None:
                a = array(x)
            return a if a.dtype == np_dtype else a.astype(np_dtype)
        if np_dtype.kind in "iub" and isinstance(x, float):
            return np.asarray(x).astype(np_dtype)[()]  # a scalar: CuPy refuses NumPy arrays as operands
        try:
            return np_dtype.type(x)
        except OverflowError:
            return np.asarray(x).astype(np_dtype)[()]

    return operand


def __getattr__(name: str):
    """The family modules (``reference.elementwise``, ...), imported on first use."""
    if name in FAMILIES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
