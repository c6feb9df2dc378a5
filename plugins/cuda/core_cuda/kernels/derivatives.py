"""cuda kernels of the fused activation backwards: rendered CUDA C for float tensors, the reference elsewhere."""

from __future__ import annotations

from core.backends.api import reference

from ._rendered import with_rendered


def kernels(rt) -> dict:
    return with_rendered(rt, reference.derivatives.kernels(rt))
