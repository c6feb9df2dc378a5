"""NumPy kernels of the sorting family."""

from __future__ import annotations

KERNELS: dict = {}
