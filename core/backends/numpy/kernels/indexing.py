"""NumPy kernels of the indexing family."""

from __future__ import annotations

KERNELS: dict = {}
