"""Automatic mixed precision (``torch.amp``): ``autocast`` regions run each op in the dtype that suits it, and
``GradScaler`` scales the loss so low-precision gradients neither underflow nor poison a step.

``autocast`` works through the ``Autocast`` dispatch key (core/amp/autocast_mode.py); the per-op lists are in
core/amp/policy.py, this thread's state (``core.is_autocast_enabled`` and friends) in core/amp/state.py.
"""

from __future__ import annotations

from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "GradScaler"]
