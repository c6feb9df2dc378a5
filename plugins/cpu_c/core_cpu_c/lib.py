"""Loads the compiled extension: OpenBLAS first (RTLD_GLOBAL), thread pools tamed, thread count from config."""

from __future__ import annotations

import ctypes
import os

__all__ = ["load", "set_num_threads", "get_num_threads"]

_STATE: dict = {}


def _preload_openblas() -> None:
    import scipy_openblas32

    path = os.path.join(scipy_openblas32.get_lib_dir(), f"lib{scipy_openblas32.get_library()}.so")
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def load():
    """(ffi, lib) of core_cpu_c._ext, loading it on first call."""
    if "lib" not in _STATE:
        # Idle OpenMP and OpenBLAS workers spin by default, and two spinning pools on few cores slow each other
        # 2-4x: let idle workers sleep. Must be set before libgomp initialises.
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        _preload_openblas()
        from ._ext import ffi, lib

        _STATE["ffi"], _STATE["lib"] = ffi, lib
        from .runtime import _FFI

        _FFI.append(ffi)
        from core import config

        threads = config.get("num_threads")
        set_num_threads(threads if threads > 0 else os.cpu_count() or 1)
    return _STATE["ffi"], _STATE["lib"]


def probe() -> tuple:
    """(True, "") when the extension and OpenBLAS load, else (False, why)."""
    try:
        load()
    except Exception as exc:  # any failure means "unavailable", never a broken core
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""


def set_num_threads(n: int) -> None:
    """Set OpenMP's and OpenBLAS' thread counts to the same ``n`` >= 1 (``torch.set_num_threads``)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads(): expected a positive int, got {n!r}")
    _, lib = load() if "lib" not in _STATE else (None, _STATE["lib"])
    lib.ccc_set_num_threads(n)


def get_num_threads() -> int:
    """OpenMP's thread count, kept equal to OpenBLAS' (``torch.get_num_threads``)."""
    _, lib = load()
    return lib.ccc_get_num_threads()
