"""``core.cuda.amp`` and ``core.cpu.amp``: torch's deprecated per-device-type spellings of ``torch.amp``.

PyTorch keeps ``torch.cuda.amp.autocast/GradScaler/custom_fwd/custom_bwd`` and ``torch.cpu.amp.autocast/
GradScaler``, each warning (FutureWarning) that ``torch.amp``'s name with the device type is the one to use.
"""

from __future__ import annotations

import functools
import types
import warnings

from .. import dtypes
from .autocast_mode import autocast, custom_bwd, custom_fwd
from .grad_scaler import GradScaler

__all__ = ["device_amp"]

_MODULES: dict = {}


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3)


def _build(device_type: str) -> types.ModuleType:
    default_dtype = dtypes.float16 if device_type == "cuda" else dtypes.bfloat16

    class DeviceAutocast(autocast):
        __doc__ = f"``core.amp.autocast('{device_type}', ...)`` under its deprecated name " \
                  f"(``torch.{device_type}.amp.autocast``)."

        def __init__(self, enabled: bool = True, dtype=default_dtype, cache_enabled: bool = True):
            _deprecated(f"core.{device_type}.amp.autocast", f"core.amp.autocast('{device_type}', args...)")
            super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class DeviceGradScaler(GradScaler):
        __doc__ = f"``core.amp.GradScaler('{device_type}', ...)`` under its deprecated name " \
                  f"(``torch.{device_type}.amp.GradScaler``)."

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            _deprecated(f"core.{device_type}.amp.GradScaler", f"core.amp.GradScaler('{device_type}', args...)")
            super().__init__(device_type, init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    for cls, name in ((DeviceAutocast, "autocast"), (DeviceGradScaler, "GradScaler")):
        cls.__name__ = cls.__qualname__ = name
    module = types.ModuleType(f"core.{device_type}.amp", f"torch.{device_type}.amp's deprecated names.")
    module.autocast, module.GradScaler = DeviceAutocast, DeviceGradScaler
    if device_type == "cuda":
        @functools.wraps(custom_fwd)
        def cuda_custom_fwd(fwd=None, *, cast_inputs=None):
            """``core.amp.custom_fwd(device_type='cuda')`` under its deprecated name."""
            _deprecated("core.cuda.amp.custom_fwd", "core.amp.custom_fwd(args..., device_type='cuda')")
            return custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)

        @functools.wraps(custom_bwd)
        def cuda_custom_bwd(bwd):
            """``core.amp.custom_bwd(device_type='cuda')`` under its deprecated name."""
            _deprecated("core.cuda.amp.custom_bwd", "core.amp.custom_bwd(args..., device_type='cuda')")
            return custom_bwd(bwd, device_type="cuda")

        module.custom_fwd, module.custom_bwd = cuda_custom_fwd, cuda_custom_bwd
    return module


def device_amp(device_type: str) -> types.ModuleType:
    """``torch.cuda.amp`` / ``torch.cpu.amp`` for ``device_type``; AttributeError for other device types."""
    if device_type not in ("cuda", "cpu"):
        raise AttributeError(f"core.{device_type} has no attribute 'amp': only core.cuda.amp and core.cpu.amp "
                             f"exist (deprecated); use core.amp")
    if device_type not in _MODULES:
        _MODULES[device_type] = _build(device_type)
    return _MODULES[device_type]
