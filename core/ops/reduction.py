"""Ops of the reduction family."""

from __future__ import annotations

__all__: list = []
METHODS: dict = {}
