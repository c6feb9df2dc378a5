"""The opencl backend's kernels, one module per family, each exposing ``kernels(runtime) -> dict``."""

from __future__ import annotations

from core.backends.api import collect

__all__ = ["all_kernels"]


def all_kernels() -> dict:
    """Every kernel of the backend: ``{op name: fn(spec, *args)}`` (composites: ``fn(*args)``)."""
    from ..runtime import RUNTIME
    from . import elementwise, matmul, reduction

    return collect((elementwise, reduction, matmul), RUNTIME)
