"""Modules of the sparse family."""

from __future__ import annotations

__all__: list = []
