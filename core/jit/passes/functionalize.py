"""Functionalize: turn a fresh allocation followed by one write into a pure node.

``empty`` + ``copy_(e, x)`` (``clone``, ``.to(dtype)``, ``.contiguous()``)
becomes ``jit::copy(x, dtype)`` when shapes and devices match, and
``empty`` + ``fill_(e, value)`` (``zeros``, ``ones``, ``full``) becomes
``jit::full(shape, value, dtype, device)``. Only when the allocation has no
other reader, so nothing could observe the buffer before the write.
A same-device ``_to_copy`` (``.to(dtype)``, ``.double()``) is the same pure
cast and becomes ``jit::copy(x, dtype)`` too, so fusion and export see one form.
(``jit::empty``, from graphs saved before allocation was an op, is treated as ``empty``.)
"""

from __future__ import annotations

from .. import ops  # noqa: F401 - registers the jit:: ops
from ..ir import ALLOCATION_OPS, Graph, Node, Value, has_symbols

__all__ = ["functionalize"]


def functionalize(graph: Graph) -> Graph:
    """Rewrite allocate-then-write pairs into ``jit::copy`` / ``jit::full``; returns ``graph``."""
    uses = graph.uses()
    dropped = set()
    for node in graph.nodes:
        if node.op == "_to_copy":
            _cast_in_place_of_move(node)
            continue
        if node.op not in ("copy_", "fill_") or not node.args or not isinstance(node.args[0], Value):
            continue
        target = node.args[0]
        alloc = target.node
        if alloc is None or alloc.op not in ALLOCATION_OPS or uses.get(target, 0) != 1:
            continue
        if node.op == "copy_":
            src = node.args[1] if len(node.args) > 1 else None
            if not isinstance(src, Value) or src.shape != target.shape or src.device != target.device:
                continue
            _rewrite(node, "jit::copy", (src, target.dtype))
        else:
            value = node.args[1] if len(node.args) > 1 else node.kwargs.get("value")
            if isinstance(value, Value) or node.kwargs and set(node.kwargs) != {"value"}:
                continue
            if has_symbols(alloc.args) or has_symbols(alloc.kwargs):
                continue  # a size read at run time (dynamic shapes): jit::full would bake the traced shape
            _rewrite(node, "jit::full", (target.shape, value, target.dtype, target.device))
        dropped.add(alloc)
    graph.nodes = [n for n in graph.nodes if n not in dropped]
    return graph


def _cast_in_place_of_move(node: Node) -> None:
    """``_to_copy(x, dtype=d)`` on x's own device is ``jit::copy(x, d)``."""
    src = node.args[0] if node.args else None
    out = node.outputs[0] if len(node.outputs) == 1 else None
    if isinstance(src, Value) and out is not None and out.device == src.device and out.shape == src.shape:
        _rewrite(node, "jit::copy", (src, out.dtype))


def _rewrite(node: Node, op: str, args: tuple) -> None:
    node.op = op
    node.args = args
    node.kwargs = {}
