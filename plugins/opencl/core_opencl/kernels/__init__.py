"""The opencl backend's kernels, by family; ``all_kernels()`` is what ``register_kernels`` registers."""

from __future__ import annotations

__all__ = ["all_kernels"]


def all_kernels() -> dict:
    """Every kernel of the backend: ``{op name: fn(spec, *args)}`` (composites: ``fn(*args)``)."""
    from . import elementwise, matmul, reduction

    kernels = {}
    for family in (elementwise, reduction, matmul):
        kernels.update(family.KERNELS)
    return kernels
