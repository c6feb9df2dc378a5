"""cpu_c: compiled C kernels (cffi, OpenMP) and OpenBLAS for core's ``cpu`` device.

Importing this package is cheap; the extension is loaded on the backend's first
use (see :mod:`core_cpu_c.lib`). ``set_num_threads``/``get_num_threads`` set the
OpenMP and OpenBLAS thread counts together; ``set_min_numel`` the size under
which NumPy's kernels run instead of C.
"""

from __future__ import annotations

from .lib import get_num_threads, set_num_threads  # import-light: the extension loads on first call

__all__ = ["set_num_threads", "get_num_threads", "set_min_numel"]


def set_min_numel(n: int) -> int:
    """Run NumPy's kernels for calls under ``n`` elements (0: C for every size); returns the previous value.

    The same setting as ``[tool.core.plugin.cpu_c] min_numel`` and ``CORE_CPU_C_MIN_NUMEL``.
    """
    from .plugin import set_min_numel as _set

    return _set(n)
