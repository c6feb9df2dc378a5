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
from core.dtypes import ALL_DTYPES, SHELL_DTYPES

from ..arrays import storage_only
from ..bfloat16 import computing_bfloat16

from . import derivatives, elementwise, reduction

FAMILIES = (elementwise, derivatives, reference.creation, reduction, reference.linalg, reference.shape,
            reference.indexing, reference.decompositions, reference.spectral, reference.sparse)


def all_kernels(rt) -> dict:
    """op name -> kernel bound to runtime ``rt`` (each run on its output's device when there are several), each
    computing calls that involve bfloat16 in float32 and declining those with a float8 dtype (the CPU fallback runs
    them; :mod:`core_cuda.bfloat16`)."""
    table = collect(FAMILIES, rt)
    if rt.device_count() > 1:  # one device: skip the per-call device switch
        table = {name: _on_device(rt, fn) for name, fn in table.items()}
    return {name: computing_bfloat16(rt, name, fn, _STORAGE_ONLY) for name, fn in table.items()}


_STORAGE_ONLY = frozenset(d for d in ALL_DTYPES + SHELL_DTYPES if d.numpy is not None and storage_only(d))


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


