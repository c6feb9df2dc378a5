"""Kernel tables: one backend's per-family ``kernels(ctx)`` tables merged into one, duplicates refused."""

from __future__ import annotations

__all__ = ["collect"]


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
