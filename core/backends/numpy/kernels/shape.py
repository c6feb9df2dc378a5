"""NumPy kernels of the shape family."""

from __future__ import annotations

KERNELS: dict = {}
