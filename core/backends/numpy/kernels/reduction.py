"""NumPy kernels of the reduction family."""

from __future__ import annotations

KERNELS: dict = {}
