"""The toy device's kernels: one module per core/ops family, each exposing ``kernels(ctx) -> dict``."""

from core.backends.api import collect, reference

from . import elementwise, linalg, reduction

FAMILIES = (reference.creation, elementwise, reduction, linalg)  # creation (fill_, copy_): the kit's, whole


def all_kernels(ctx):
    """``{op name: kernel}`` of every family, over ``ctx``: the toy runtime."""
    return collect(FAMILIES, ctx)
