"""Modules of the transformer family."""

from __future__ import annotations

__all__: list = []
