"""Printing tensors the way PyTorch does (placeholder until the full formatter lands)."""

from __future__ import annotations

import numpy as np

__all__: list = []
METHODS: dict = {}


def format_tensor(t) -> str:
    """``repr(tensor)``."""
    return f"tensor({np.asarray(t.detach().cpu().numpy())})"
