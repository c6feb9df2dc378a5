"""The webgpu backend's kernels, one module per core/ops family, each exposing ``kernels(runtime) -> dict``."""

from __future__ import annotations

import importlib

from core.backends.api import collect

__all__ = ["FAMILIES", "all_kernels"]

FAMILIES = ("creation", "elementwise", "derivatives", "reduction", "shape", "linalg", "nn", "indexing", "optim")


def all_kernels(runtime) -> dict:
    """Every kernel of the backend: ``{op name: fn(spec, *args)}``."""
    return collect([importlib.import_module(f"{__name__}.{family}") for family in FAMILIES], runtime)
