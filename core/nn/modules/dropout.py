"""Modules of the dropout family."""

from __future__ import annotations

__all__: list = []
