"""Modules of the activation family."""

from __future__ import annotations

__all__: list = []
