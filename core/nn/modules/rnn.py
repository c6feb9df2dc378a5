"""Modules of the rnn family."""

from __future__ import annotations

__all__: list = []
