"""Modules of the pooling family."""

from __future__ import annotations

__all__: list = []
