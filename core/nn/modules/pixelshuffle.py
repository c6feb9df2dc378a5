"""Modules of the pixelshuffle family."""

from __future__ import annotations

__all__: list = []
