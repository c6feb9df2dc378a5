"""Modules of the normalization family."""

from __future__ import annotations

__all__: list = []
