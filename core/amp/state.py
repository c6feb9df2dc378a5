"""This thread's autocast state: per device type whether autocast is on and its dtype, the weight-cast cache
and the nesting count (``torch.is_autocast_enabled``, ``torch.set_autocast_dtype``, ...).

Autocast is on for a device type exactly when its flag here is set; the ``Autocast`` dispatch key is in the
thread's included key set while any device type's flag is set, so ops outside autocast regions never reach the
autocast kernel. The lower-precision dtype of a device type defaults to what its backend's runtime prefers
(``autocast_dtypes``, see core/amp/policy.py), else bfloat16 on ``cpu`` and float16 elsewhere.
"""

from __future__ import annotations

import threading

from .. import dtypes
from ..dispatch.keys import Autocast, tls

__all__ = ["is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "autocast_increment_nesting", "autocast_decrement_nesting",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype",
           "is_autocast_ipu_enabled", "set_autocast_ipu_enabled", "get_autocast_ipu_dtype", "set_autocast_ipu_dtype",
           "is_autocast_xla_enabled", "set_autocast_xla_enabled", "get_autocast_xla_dtype", "set_autocast_xla_dtype"]

_AUTOCAST_MASK = Autocast.mask


class _AutocastState(threading.local):
    def __init__(self):
        self.enabled: dict = {}  # device type -> True while autocast is on for it
        self.dtype: dict = {}  # device type -> dtype set by set_autocast_dtype / an autocast region
        self.cache_enabled = True
        self.nesting = 0
        self.cache: dict = {}  # id(weight) -> (weight, its cast), cleared when the outermost region exits


STATE = _AutocastState()


def _check_device_type(fn: str, device_type) -> None:
    if not isinstance(device_type, str):
        raise TypeError(f"{fn}(): argument 'device_type' must be str, not {type(device_type).__name__}")


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on in this thread for ``device_type`` (``'cuda'`` when omitted)
    (``torch.is_autocast_enabled``)."""
    device_type = "cuda" if device_type is None else device_type
    _check_device_type("is_autocast_enabled", device_type)
    return STATE.enabled.get(device_type, False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Turn autocast on or off in this thread for ``device_type``; ``set_autocast_enabled(flag)`` alone means
    ``'cuda'`` (``torch.set_autocast_enabled``)."""
    if enabled is None and isinstance(device_type, bool):
        device_type, enabled = "cuda", device_type
    _check_device_type("set_autocast_enabled", device_type)
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' must be bool, not {type(enabled).__name__}")
    if enabled:
        STATE.enabled[device_type] = True
    else:
        STATE.enabled.pop(device_type, None)
    if STATE.enabled:
        tls.include |= _AUTOCAST_MASK
    else:
        tls.include &= ~_AUTOCAST_MASK


def get_autocast_dtype(device_type: str):
    """The lower-precision dtype autocast uses on ``device_type`` in this thread (``torch.get_autocast_dtype``)."""
    _check_device_type("get_autocast_dtype", device_type)
    dtype = STATE.dtype.get(device_type)
    if dtype is None:
        from .policy import preferred_dtypes

        dtype = preferred_dtypes(device_type)[0]
    return dtype


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the lower-precision dtype autocast uses on ``device_type`` in this thread
    (``torch.set_autocast_dtype``)."""
    _check_device_type("set_autocast_dtype", device_type)
    if not isinstance(dtype, dtypes.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' must be core.dtype, not {type(dtype).__name__}")
    STATE.dtype[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether autocast regions cache the casts of weights (``torch.is_autocast_cache_enabled``)."""
    return STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the weight-cast cache of autocast regions on or off (``torch.set_autocast_cache_enabled``)."""
    STATE.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Forget every cached weight cast of this thread (``torch.clear_autocast_cache``)."""
    STATE.cache.clear()


def autocast_increment_nesting() -> int:
    """Count one more open autocast region; returns the new depth (``torch.autocast_increment_nesting``)."""
    STATE.nesting += 1
    return STATE.nesting


def autocast_decrement_nesting() -> int:
    """Count one autocast region closed; returns the new depth (``torch.autocast_decrement_nesting``)."""
    STATE.nesting -= 1
    return STATE.nesting


def _legacy(device_type: str):
    """The pre-2.4 per-device accessors torch keeps: is/set enabled, get/set dtype of one fixed device type."""

    def is_enabled() -> bool:
        return is_autocast_enabled(device_type)

    def set_enabled(enabled: bool) -> None:
        set_autocast_enabled(device_type, enabled)

    def get_dtype():
        return get_autocast_dtype(device_type)

    def set_dtype(dtype) -> None:
        set_autocast_dtype(device_type, dtype)

    label = "gpu" if device_type == "cuda" else device_type
    for fn, name, doc in (
            (is_enabled, f"is_autocast_{label}_enabled", f"Whether autocast is on for '{device_type}'"),
            (set_enabled, f"set_autocast_{label}_enabled", f"Turn autocast on or off for '{device_type}'"),
            (get_dtype, f"get_autocast_{label}_dtype", f"The autocast dtype of '{device_type}'"),
            (set_dtype, f"set_autocast_{label}_dtype", f"Set the autocast dtype of '{device_type}'")):
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = f"{doc} (``torch.{name}``)."
    return is_enabled, set_enabled, get_dtype, set_dtype


is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype = _legacy("cpu")
_, _, get_autocast_gpu_dtype, set_autocast_gpu_dtype = _legacy("cuda")
is_autocast_ipu_enabled, set_autocast_ipu_enabled, get_autocast_ipu_dtype, set_autocast_ipu_dtype = _legacy("ipu")
is_autocast_xla_enabled, set_autocast_xla_enabled, get_autocast_xla_dtype, set_autocast_xla_dtype = _legacy("xla")
