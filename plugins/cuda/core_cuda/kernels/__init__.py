"""The cuda backend's kernels, one module per op family, each written once over the runtime's array module.

``build_kernels(rt)`` binds every family to runtime ``rt``: the CUDA runtime (CuPy) in production, a
host-memory runtime (NumPy) in the tests, which runs this same code on a machine without a GPU.
"""

from __future__ import annotations

import functools
import importlib

from core.backends.api import collect

FAMILIES = ("elementwise", "creation", "reduction", "linalg", "shape", "indexing")


def build_kernels(rt) -> dict:
    """op name -> kernel bound to runtime ``rt`` (each run on its output's device when there are several)."""
    table = collect([importlib.import_module(f"{__name__}.{family}") for family in FAMILIES], rt)
    if rt.device_count() > 1:  # one device: skip the per-call device switch
        table = {name: _on_device(rt, fn) for name, fn in table.items()}
    return table


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
