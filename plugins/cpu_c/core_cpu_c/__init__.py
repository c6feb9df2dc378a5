"""cpu_c: compiled C kernels (cffi, OpenMP) and OpenBLAS for core's ``cpu`` device.

Importing this package is cheap; the extension is loaded on the backend's first
use (see :mod:`core_cpu_c.lib`). ``set_num_threads``/``get_num_threads`` set the
OpenMP and OpenBLAS thread counts together; ``set_min_numel`` the size under
which NumPy's kernels run instead of C.
"""

from __future__ import annotations

from pathlib import Path

from core._hot import HotSet

# The plugin's Python that every C call passes through, compiled by core's Cython build like core's own (core/_hot.py,
# `python -m core compile`): operand checks and pointers, the kernel builders. Not runtime.py: its buffer cache
# counts references, which compiled code counts differently.
HOT = HotSet("core_cpu_c", Path(__file__).resolve().parent.parent, (
    "core_cpu_c.lib",
    "core_cpu_c.runtime",
    "core_cpu_c.layout",
    "core_cpu_c.context",
    "core_cpu_c.kernels.linalg",
    "core_cpu_c.kernels.elementwise",
    "core_cpu_c.kernels.optimizers",
    "core_cpu_c.kernels.reduction",
    "core_cpu_c.kernels.loss",
))
HOT.install_guard()  # before any of them is imported: those changed since their build import from source

from .lib import get_num_threads, set_num_threads  # noqa: E402 - import-light: the extension loads on first call

__all__ = ["set_num_threads", "get_num_threads", "set_min_numel", "HOT"]


def set_min_numel(n: int) -> int:
    """Run NumPy's kernels for calls under ``n`` elements (0: C for every size); returns the previous value.

    The same setting as ``[tool.core.plugin.cpu_c] min_numel`` and ``CORE_CPU_C_MIN_NUMEL``.
    """
    from .plugin import set_min_numel as _set

    return _set(n)
