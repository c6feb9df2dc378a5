"""The cuda backend's kernels: the kit's reference families over the runtime's array module, plus the rendered path.

``all_kernels(rt)`` binds every family to runtime ``rt`` (the kit's array context): the CUDA runtime (CuPy) in
production, a host-memory runtime (NumPy) in the tests, which runs this same code on a machine without a GPU.
elementwise and derivatives launch rendered CUDA C for float tensors (``_rendered``) before the reference
code; reduction leaves out what CuPy has no twin of. decompositions (cuSOLVER through ``cupy.linalg``), spectral
(cuFFT through ``cupy.fft``) and sparse (cuSPARSE through ``cupyx.scipy.sparse``) are the reference's; a routine
CuPy lacks (``eig``) declines to the CPU fallback.
"""

from __future__ import annotations

import functools

from core.backends.api import collect, reference
from core.dtypes import ALL_DTYPES, SHELL_DTYPES, dtype

from ..arrays import storage_only

from . import derivatives, elementwise, reduction

FAMILIES = (elementwise, derivatives, reference.creation, reduction, reference.linalg, reference.shape,
            reference.indexing, reference.decompositions, reference.spectral, reference.sparse)


def all_kernels(rt) -> dict:
    """op name -> kernel bound to runtime ``rt`` (each run on its output's device when there are several), each
    declining calls that involve a storage-only dtype (bfloat16, float8: the CPU fallback runs them)."""
    table = collect(FAMILIES, rt)
    if rt.device_count() > 1:  # one device: skip the per-call device switch
        table = {name: _on_device(rt, fn) for name, fn in table.items()}
    table = {name: _declining_storage_only(fn) for name, fn in table.items()}
    table["copy_"] = _copying_bits(table["copy_"].__wrapped__)
    return table


_STORAGE_ONLY = frozenset(d for d in ALL_DTYPES + SHELL_DTYPES if d.numpy is not None and storage_only(d))


def _declining_storage_only(fn):
    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        for a in (*args, *kwargs.values()):
            if a.__class__ is tuple or a.__class__ is list:  # multi-output specs, cat/stack operands
                if any(getattr(b, "dtype", None).__class__ is dtype and b.dtype in _STORAGE_ONLY for b in a):
                    return NotImplemented
            elif getattr(a, "dtype", None).__class__ is dtype and a.dtype in _STORAGE_ONLY:
                return NotImplemented
        return fn(*args, **kwargs)
    return kernel


def _on_device(rt, fn):
    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        with rt.scope(_device_of(args)):
            return fn(*args, **kwargs)
    return kernel


def _device_of(args):
    """The device a kernel runs on: its spec's (the output's), else its first tensor's."""
    first = args[0]
    if isinstance(first, tuple):  # multi-output spec
        first = first[0]
    return first.device


def _copying_bits(copy_):
    """copy_ between tensors of one storage-only dtype copies their bits (the fallback's own way back to the
    device); a cast from or to such a dtype declines."""
    @functools.wraps(copy_)
    def kernel(spec, self, src, non_blocking=False):
        if self.dtype is not src.dtype and (self.dtype in _STORAGE_ONLY or src.dtype in _STORAGE_ONLY):
            return NotImplemented
        return copy_(spec, self, src, non_blocking)
    return kernel
