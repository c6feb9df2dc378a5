"""The NumPy reference kernels, one module per op family.

Each module exposes ``KERNELS``: op name -> kernel. A kernel of an op with a
meta function takes the meta's spec first, then the op's arguments.
"""

from __future__ import annotations

import importlib

FAMILIES = ("elementwise", "reduction", "shape", "indexing", "linalg", "creation", "random", "sorting",
            "ranges")


def all_kernels() -> dict:
    kernels = {}
    for family in FAMILIES:
        module = importlib.import_module(f"{__name__}.{family}")
        for name, fn in module.KERNELS.items():
            if name in kernels:
                raise RuntimeError(f"numpy backend: kernel '{name}' defined in two families")
            kernels[name] = fn
    return kernels
