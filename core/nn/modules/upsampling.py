"""Modules of the upsampling family."""

from __future__ import annotations

__all__: list = []
