"""Functionals of the attention family."""

from __future__ import annotations

__all__: list = []
