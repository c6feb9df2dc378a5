"""Errors of ``core.compile`` (``torch._dynamo.exc``)."""

from __future__ import annotations

__all__ = ["Unsupported", "InvalidBackend", "FailOnRecompileLimitHit"]


class Unsupported(RuntimeError):
    """The program cannot be captured as one graph (raised with ``fullgraph=True``; otherwise it runs eagerly)."""


class InvalidBackend(RuntimeError):
    """``core.compile(backend=...)`` names no known backend (``torch._dynamo.exc.InvalidBackend``)."""

    def __init__(self, name: str):
        super().__init__(f"Invalid backend: {name!r}, see `core._dynamo.list_backends()` for available backends.")


class FailOnRecompileLimitHit(RuntimeError):
    """A ``fullgraph=True`` compiled object needs more graphs than ``config.cache_size_limit`` allows."""
