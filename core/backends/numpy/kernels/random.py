"""NumPy kernels of the random family."""

from __future__ import annotations

KERNELS: dict = {}
