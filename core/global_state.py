"""Process-wide switches of torch's namespace: determinism, float32 matmul precision, CPU threads, warnings,
anomaly mode, the default tensor type, denormals.

This module sits low (the dispatcher reads ``is_warn_always_enabled``): what it needs from above is imported
inside the functions that need it.
"""

from __future__ import annotations

import os

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads",
           "init_num_threads", "set_flush_denormal", "set_warn_always", "is_warn_always_enabled",
           "set_anomaly_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_default_tensor_type",
           "typename", "is_storage"]

_state = {"deterministic": False, "warn_only": False, "matmul_precision": "highest", "warn_always": False,
          "interop_threads": None}
_DEBUG_MODES = ("default", "warn", "error")
_PRECISIONS = ("highest", "high", "medium")


# -- determinism -----------------------------------------------------------------------------------------------

def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (``torch.use_deterministic_algorithms``); while on, ``empty`` and its kin
    fill their memory (NaN, or the largest integer) as PyTorch's ``fill_uninitialized_memory`` does."""
    if not isinstance(mode, bool) or not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): expected bools for mode and warn_only, got "
                        f"{type(mode).__name__} and {type(warn_only).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, mode and warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether deterministic algorithms are on (``torch.are_deterministic_algorithms_enabled``)."""
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode only warns (``torch.is_deterministic_algorithms_warn_only_enabled``)."""
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """Determinism as a debug level: ``"default"``/0 off, ``"warn"``/1 warn only, ``"error"``/2 on
    (``torch.set_deterministic_debug_mode``)."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = _DEBUG_MODES.index(debug_mode)
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """The determinism debug level: 0 off, 1 warn only, 2 error (``torch.get_deterministic_debug_mode``)."""
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


# -- float32 matmul precision ----------------------------------------------------------------------------------

def set_float32_matmul_precision(precision: str) -> None:
    """Set the internal precision of float32 matrix products: ``"highest"``, ``"high"`` or ``"medium"``
    (``torch.set_float32_matmul_precision``). Every backend computes float32 products in float32 (as
    ``"highest"``); the lower settings allow, but do not promise, faster formats."""
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Invalid precision {precision!r}: expected one of 'highest', 'high', 'medium'")
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision setting (``torch.get_float32_matmul_precision``)."""
    return _state["matmul_precision"]


# -- threads ---------------------------------------------------------------------------------------------------

def _loaded_cpu_runtimes() -> list:
    """The loaded cpu backends' runtimes that manage a thread count (loading none)."""
    from .plugins.manager import get_manager

    return [b.instance for b in get_manager().backends.values()
            if b.device_type == "cpu" and b.status == "loaded" and hasattr(b.instance, "set_num_threads")]


def set_num_threads(num: int) -> None:
    """Set the threads of intra-op parallelism on the CPU (``torch.set_num_threads``): the loaded CPU backends
    change at once, those loaded later start with it (config key ``num_threads``)."""
    from . import config

    if isinstance(num, bool) or not isinstance(num, int):
        raise TypeError(f"set_num_threads(): argument 'int' must be int, not {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("Expected positive number of threads")
    config.set("num_threads", num)
    for runtime in _loaded_cpu_runtimes():
        runtime.set_num_threads(num)


def get_num_threads() -> int:
    """The threads of intra-op parallelism on the CPU (``torch.get_num_threads``)."""
    from . import config

    runtimes = _loaded_cpu_runtimes()
    if runtimes:
        return runtimes[0].get_num_threads()
    return config.get("num_threads") or os.cpu_count() or 1


def init_num_threads() -> None:
    """Apply the configured thread count to the loaded CPU backends (``torch.init_num_threads``)."""
    from . import config

    threads = config.get("num_threads")
    if threads:
        for runtime in _loaded_cpu_runtimes():
            runtime.set_num_threads(threads)


def set_num_interop_threads(num: int) -> None:
    """Set the threads that run ``core.fork`` tasks (``torch.set_num_interop_threads``): once, before the first
    fork, as in PyTorch."""
    from .futures import pool_started

    if isinstance(num, bool) or not isinstance(num, int):
        raise TypeError(f"set_num_interop_threads(): argument 'int' must be int, not {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("Expected positive number of threads")
    if pool_started() or _state["interop_threads"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _state["interop_threads"] = num


def get_num_interop_threads() -> int:
    """The threads that run ``core.fork`` tasks (``torch.get_num_interop_threads``)."""
    return _state["interop_threads"] or os.cpu_count() or 1


# -- warnings, anomaly mode, denormals -------------------------------------------------------------------------

def set_warn_always(b: bool) -> None:
    """Make core's warn-once warnings (the CPU fallback's) warn every time (``torch.set_warn_always``)."""
    _state["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether warn-once warnings warn every time (``torch.is_warn_always_enabled``)."""
    return _state["warn_always"]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn autograd's anomaly detection on or off (``torch.set_anomaly_enabled``), as
    ``core.autograd.set_detect_anomaly(enabled, check_nan)``."""
    from .autograd.anomaly import set_detect_anomaly

    set_detect_anomaly(enabled, check_nan)


def is_anomaly_enabled() -> bool:
    """Whether autograd's anomaly detection is on (``torch.is_anomaly_enabled``)."""
    from .autograd.anomaly import is_anomaly_enabled as enabled

    return enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks backward results for NaN (``torch.is_anomaly_check_nan_enabled``)."""
    from .autograd.anomaly import is_anomaly_check_nan_enabled as check_nan

    return check_nan()


def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing denormals to zero could be set (``torch.set_flush_denormal``): always False here, since
    NumPy and the C and OpenCL kernels offer no switch for it, and nothing changes."""
    return False


# -- types -----------------------------------------------------------------------------------------------------

def set_default_tensor_type(t) -> None:
    """Set the default floating dtype (and device type) from a legacy type: ``core.DoubleTensor`` or
    ``"torch.DoubleTensor"`` (``torch.set_default_tensor_type``)."""
    from .device import get_default_device, set_default_device
    from .dtypes import set_default_dtype
    from .legacy_tensors import parse_type

    dtype, device_type = parse_type(t)
    set_default_dtype(dtype)
    if get_default_device().type != device_type:
        set_default_device(device_type)


def typename(obj) -> str:
    """The type of a tensor (``'core.FloatTensor'``) or the qualified name of any other object's type
    (``torch.typename``)."""
    from .tensor import Tensor

    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_storage(obj) -> bool:
    """Whether ``obj`` is a storage (``torch.is_storage``)."""
    from .storage import Storage

    return isinstance(obj, Storage)
