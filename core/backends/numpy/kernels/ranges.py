"""NumPy kernels of the ranges family."""

from __future__ import annotations

KERNELS: dict = {}
