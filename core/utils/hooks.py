"""``RemovableHandle``: what every hook registration returns (modules, optimizers)."""

from __future__ import annotations

import itertools

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """``handle.remove()`` unregisters the hook it was returned for; usable as a context manager."""

    _ids = itertools.count()

    def __init__(self, registry: dict):
        self.registry = registry
        self.id = next(self._ids)

    def remove(self) -> None:
        self.registry.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
