"""Loads the compiled extension: OpenBLAS first (RTLD_GLOBAL), thread pools tamed, thread count from config."""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["load", "load_onednn", "onednn_status", "set_num_threads", "get_num_threads"]

_STATE: dict = {}


def _preload_openblas() -> None:
    import scipy_openblas32

    path = os.path.join(scipy_openblas32.get_lib_dir(), f"lib{scipy_openblas32.get_library()}.so")
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def load():
    """(ffi, lib) of core_cpu_c._ext, loading it on first call."""
    if "lib" not in _STATE:
        # OpenMP's waiting policy is libgomp's default, as in PyTorch: idle workers spin ~3 ms, then sleep. Waking a
        # sleeping worker costs ~50 us here, more than most ops take (docs/backends/cpu_c.md, "Threads").
        # OpenBLAS' workers spin 2**28 cycles (~0.1 s) after each GEMM by default, taking the cores oneDNN's OpenMP
        # threads then need: 2**4 makes them sleep at once (measured: the referee's CNN step 15 -> 9.3 ms with
        # oneDNN, unchanged without it). Read when OpenBLAS initialises, below.
        os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
        _preload_openblas()
        from ._ext import ffi, lib

        _STATE["ffi"], _STATE["lib"] = ffi, lib
        from .runtime import _FFI

        _FFI.append(ffi)
        from core import config

        threads = config.get("num_threads")
        set_num_threads(threads if threads > 0 else os.cpu_count() or 1)
        # OpenBLAS's parallel jobs on the OpenMP team (csrc/blas.c, "One thread pool"); CORE_CPU_C_BLAS_POOL=0
        # leaves OpenBLAS its own pool
        _STATE["blas_pool"] = bool(os.environ.get("CORE_CPU_C_BLAS_POOL", "1") != "0" and lib.ccc_blas_pool(1))
    return _STATE["ffi"], _STATE["lib"]


def _onednn_library() -> str:
    """The path of libdnnl.so.3: from the ``onednn-cpu-gomp`` wheel's file list, else CORE_ONEDNN_PREFIX's or the
    environment prefix's lib/ (the soname alone, for the loader's search path, when none has it)."""
    from importlib import metadata

    try:
        for f in metadata.distribution("onednn-cpu-gomp").files or ():
            if str(f).endswith("libdnnl.so.3"):
                return str(f.locate())
    except metadata.PackageNotFoundError:
        pass
    for prefix in (os.environ.get("CORE_ONEDNN_PREFIX"), sys.prefix):
        if prefix and os.path.isfile(os.path.join(prefix, "lib", "libdnnl.so.3")):
            return os.path.join(prefix, "lib", "libdnnl.so.3")
    return "libdnnl.so.3"


def load_onednn():
    """(ffi, lib) of core_cpu_c._onednn (oneDNN's convolution), or None where it is not there: not built (no
    oneDNN headers at install), libdnnl.so.3 missing, or CORE_CPU_C_ONEDNN=0 (read once). :func:`onednn_status`
    says why."""
    if "onednn" not in _STATE:
        _STATE["onednn"], _STATE["onednn_why"] = None, "disabled by CORE_CPU_C_ONEDNN=0"
        if os.environ.get("CORE_CPU_C_ONEDNN", "1") != "0":
            try:
                load()  # libgomp and the thread count first: oneDNN shares the extension's OpenMP runtime
                ctypes.CDLL(_onednn_library(), mode=ctypes.RTLD_GLOBAL)
                from ._onednn import ffi, lib

                _STATE["onednn"] = (ffi, lib)
                version = lib.ccc_dnnl_version()
                _STATE["onednn_why"] = f"oneDNN {version // 10000}.{version // 100 % 100}.{version % 100}"
            except Exception as exc:  # not installed or not built: cpu_c's own kernels serve
                _STATE["onednn_why"] = f"oneDNN unavailable ({type(exc).__name__}: {exc})"
    return _STATE["onednn"]


def onednn_status() -> str:
    """"oneDNN X.Y.Z" when :func:`load_onednn` found it, else why not."""
    load_onednn()
    return _STATE["onednn_why"]


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
