"""cuda kernels of the elementwise family: rendered CUDA C for float tensors, the kit's reference kernels elsewhere."""

from __future__ import annotations

from core.backends.api import reference

from ._rendered import with_rendered


def kernels(rt) -> dict:
    return with_rendered(rt, reference.elementwise.kernels(rt))
