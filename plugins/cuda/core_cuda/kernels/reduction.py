"""cuda kernels of the reduction family: the kit's reference reductions, arg-reductions and scans over CuPy."""

from __future__ import annotations

from core.backends.api import reference

# cummax/cummin run ``ufunc.accumulate`` on maximum/minimum, which CuPy does not promise: the CPU fallback runs them
_NOT_ON_CUPY = ("cummax", "cummin")


def kernels(rt) -> dict:
    return {op: fn for op, fn in reference.reduction.kernels(rt).items() if op not in _NOT_ON_CUPY}
