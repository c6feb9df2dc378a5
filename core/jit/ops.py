"""Ops the JIT defines itself, beside the dispatcher's: the pure forms of copies and fills, and how to run allocations.

Factories call the dispatcher's ``empty`` op (``core.zeros`` is ``empty``, then
``fill_``), which the tracer records like any op. The functionalize pass turns
``empty`` + ``copy_`` into ``jit::copy`` (``clone``, ``.to(dtype)``,
``.contiguous()``) and ``empty`` + ``fill_`` into ``jit::full`` (``zeros``,
``ones``, ``full``): pure nodes the other passes can fold, merge, fuse and
export. ``empty`` has no tensor argument, so calling its ``Operator`` finds no
key set: its entry here runs a node through the factory path
(:func:`core.ops.creation.allocate`, which dispatches on the device's backend
key) and marks it impure. ``jit::empty`` (allocation before it was an op) and
``jit::to_device`` (device moves before ``_to_copy``) remain only so that raw
graphs saved earlier still load and run.

Each entry of :data:`~core.jit.ir.JIT_OPS` provides ``pure`` (may be folded,
merged and removed), ``callable_for(node)`` (a function called like an
operator), ``describe(node)`` (its printed form) and ``profile_name(node)`` (the name of the profiler span the
interpreter opens around a node that calls no dispatcher op, else None).
"""

from __future__ import annotations

from .ir import JIT_OPS, _fmt_arg

__all__ = ["JitOp", "register"]


class JitOp:
    """One JIT-defined op: a name, purity and how to run a node of it."""

    pure = True

    def __init__(self, name: str, fn=None, pure: bool = True):
        self.name = name
        self.fn = fn
        self.pure = pure

    def callable_for(self, node):
        """A function called with the node's (filled) args and kwargs."""
        return self.fn

    def profile_name(self, node) -> str | None:
        """The name of a ``core.profiler`` span around each run of ``node``: None, as the ops a JIT op calls go
        through the dispatcher, which records them."""
        return None

    def describe(self, node) -> str:
        parts = [_fmt_arg(a) for a in node.args] + [f"{k}={_fmt_arg(v)}" for k, v in node.kwargs.items()]
        return f"{self.name}({', '.join(parts)})"


def register(op: JitOp) -> JitOp:
    """Add ``op`` to the JIT's op table."""
    JIT_OPS[op.name] = op
    return op


def _empty(shape, dtype, device):
    """A node of ``empty`` (or ``jit::empty``, whose arguments are keywords): the dispatcher's ``empty`` op."""
    from ..ops.creation import allocate

    return allocate(tuple(shape), dtype, device)


def _copy(x, dtype):
    """A new tensor holding ``x`` converted to ``dtype`` (contiguous)."""
    from ..ops.creation import allocate_raw, copy_op

    out = allocate_raw(x._shape, dtype, x.device)
    copy_op(out, x, False)
    return out


def _full(shape, value, dtype, device):
    import core

    return core.full(shape, value, dtype=dtype, device=device)


def _to_device(x, device):
    from ..ops.creation import to_copy_op

    return to_copy_op(x, device=device)


EMPTY = register(JitOp("empty", _empty, pure=False))  # distinct buffers: never merged or folded
LEGACY_EMPTY = register(JitOp("jit::empty", _empty, pure=False))  # graphs saved before allocation was the empty op
COPY = register(JitOp("jit::copy", _copy))
FULL = register(JitOp("jit::full", _full))
TO_DEVICE = register(JitOp("jit::to_device", _to_device))  # graphs saved before .to() was the _to_copy op
