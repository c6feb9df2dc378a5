"""Functionals of the loss family."""

from __future__ import annotations

__all__: list = []
