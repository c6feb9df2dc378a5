"""Kernel tables: one backend's per-family ``kernels(ctx)`` tables merged into one, duplicates refused.

A table maps op names to kernels: a plain function, or a :class:`Kernel` that carries the registration's
options (the dtypes it covers, the size under which the extended backend's kernel runs instead).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

__all__ = ["Kernel", "collect", "register_all"]


class Kernel(NamedTuple):
    """A table entry with registration options: ``register(op, fn, dtypes=dtypes, min_numel=min_numel)``."""

    fn: Callable
    dtypes: tuple | None = None
    min_numel: int | None = None


def collect(families, ctx) -> dict:
    """``{op name: kernel}`` from every family's ``kernels(ctx)``; an op in two families is a RuntimeError."""
    table: dict = {}
    owner: dict = {}
    for family in families:
        name = getattr(family, "__name__", repr(family))
        for op, fn in family.kernels(ctx).items():
            if op in table:
                raise RuntimeError(f"kernel for op '{op}' defined by two families: {owner[op]} and {name}")
            table[op] = fn
            owner[op] = name
    return table


def register_all(register, table: dict) -> None:
    """Pass every entry of a kernel table to a ``register_kernels`` hook's ``register`` callback."""
    for op, entry in table.items():
        if isinstance(entry, Kernel):
            register(op, entry.fn, dtypes=entry.dtypes, min_numel=entry.min_numel)
        else:
            register(op, entry)
