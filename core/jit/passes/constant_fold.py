"""Constant folding: run the pure nodes whose inputs are all constants once, and store their results.

A pure node reading only ``const`` values (or nothing, as ``jit::full``) is
run at optimisation time through the dispatcher with tracing and autograd off,
and its outputs become new constants; chains fold in one walk. A result that
shares storage with a constant it was computed from (a view) or is not
contiguous is stored as a contiguous copy of its own.

Refuses to fold

* impure nodes (in-place, random, ``empty``);
* nodes whose outputs would hold more than ``max(elements read, FOLD_LIMIT)``
  elements, so ``expand`` of a scalar or a big ``zeros`` is not stored in the
  graph (the size is read from the graph's types, before running anything);
* nodes that read or produce a value an in-place node may write (see
  :mod:`.rewriting`): the stored constant would be changed by a run;
* nodes whose output the graph returns: every call would hand out the one
  stored tensor, which the caller could modify.
"""

from __future__ import annotations

from math import prod

from ..ir import JIT_OPS, Graph, GraphError, Node, has_symbols, map_values
from ..tracer import _flat_tensors, _untraced
from .rewriting import mutable_values, renamed

__all__ = ["constant_fold", "FOLD_LIMIT"]

# Results up to this many elements are stored even when larger than what they are computed from.
FOLD_LIMIT = 4096


def constant_fold(graph: Graph) -> Graph:
    """Replace every foldable node by constants holding its results; returns ``graph``."""
    tensors = {v: t for v, t in graph.constants.values()}
    refused = mutable_values(graph) | set(graph.output_values())
    renames: dict = {}
    kept = []
    for node in graph.nodes:
        node.args, node.kwargs = renamed(node.args, renames), renamed(node.kwargs, renames)
        if not _foldable(node, tensors, refused):
            kept.append(node)
            continue
        for v, t in zip(node.outputs, _evaluate(node, tensors)):
            const = graph.add_constant(t)
            tensors[const] = t
            renames[v] = const
    graph.nodes = kept
    graph.output = renamed(graph.output, renames)
    return graph


def _foldable(node: Node, tensors: dict, refused: set) -> bool:
    inputs = node.inputs
    if not node.outputs or not node.is_pure or any(v not in tensors or v in refused for v in inputs):
        return False
    if any(v in refused for v in node.outputs) or has_symbols(node.args) or has_symbols(node.kwargs):
        return False  # (a size read at run time is no constant)
    produced = sum(prod(v.shape) for v in node.outputs)
    read = sum(prod(v.shape) for v in set(inputs))
    return produced <= max(read, FOLD_LIMIT)


def _evaluate(node: Node, tensors: dict) -> list:
    """The node's output tensors, computed from the constants, each with storage of its own."""
    from ...dispatch.operator import OPERATORS

    spec = JIT_OPS.get(node.op)
    fn = spec.callable_for(node) if spec is not None else OPERATORS[node.op]
    args, kwargs = map_values(node.args, tensors.__getitem__), map_values(node.kwargs, tensors.__getitem__)
    results = _flat_tensors(_untraced(lambda: fn(*args, **kwargs)))
    if [(t._shape, t.dtype, t.device) for t in results] != [(v.shape, v.dtype, v.device) for v in node.outputs]:
        raise GraphError(f"constant_fold: {node.op} returned {[t.dtype.name + str(list(t._shape)) for t in results]} "
                         f"but the graph types its outputs {[v.type_str() for v in node.outputs]}")
    storages = {id(tensors[v]._storage) for v in node.inputs}
    return [_untraced(lambda t=t: _own_contiguous(t, storages)) for t in results]


def _own_contiguous(t, storages: set):
    if not t.is_contiguous():
        t = t.contiguous()
    return t.clone() if id(t._storage) in storages else t
