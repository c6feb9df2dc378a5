"""cpu_c's kernel tables, one module per core.ops family (an op's kernel lives in the module named for the last part
of ``get_operator(op).declared_in``), each exposing ``kernels(ctx) -> {op: fn or Kernel}`` over one
:class:`core_cpu_c.context.Context`. Every kernel keeps ``ctx.reference(op)`` for the calls C does not take."""

from __future__ import annotations

from core.backends.api import Kernel, collect

from . import (conv, creation, derivatives, elementwise, indexing, linalg, loss, normalization, optimizers, pooling,
               ranges, reduction, shape)

__all__ = ["FAMILIES", "all_kernels", "thresholds"]

FAMILIES = (elementwise, derivatives, linalg, reduction, creation, ranges, shape, indexing, conv, pooling,
            normalization, loss, optimizers)


def all_kernels(ctx) -> dict:
    """{op: kernel} of every family; an op claimed by two families is an error."""
    return collect(FAMILIES, ctx)


def thresholds(ctx) -> dict:
    """{op: dispatcher threshold} of the sized kernels at ``ctx.min_numel`` (the tables are rebuilt to read them,
    under a millisecond; the registered kernels read ``ctx`` and stay)."""
    return {op: entry.min_numel for op, entry in all_kernels(ctx).items()
            if isinstance(entry, Kernel) and entry.min_numel is not None}
