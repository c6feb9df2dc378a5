"""Common subexpression elimination: a pure node equal to an earlier one is dropped, its readers read the earlier.

Two nodes are equal when they call the same op on the same values with the
same literal arguments. Literals compare by type and exact value: ``1``,
``1.0`` and ``True`` differ (they promote differently), so do ``0.0`` and
``-0.0`` (floats compare by their bits, so two NaN literals are equal);
dtypes and devices compare by equality, tuples, lists, dicts and slices
element by element. Nodes are visited in order with the inputs already merged,
so whole duplicate chains merge in one walk.

Refuses to merge

* impure nodes (in-place, random, ``empty``: two allocations are two
  tensors);
* nodes with an argument it cannot compare (any type not listed above);
* nodes whose outputs an in-place node may write (see :mod:`.rewriting`):
  the merged readers would see each other's writes;
* nodes reading a value an in-place node may write, across an in-place node:
  the graph is cut into segments at in-place nodes and such nodes only merge
  within one segment, where they see the same contents;
* two nodes that are both returned: the caller would get one tensor twice.
"""

from __future__ import annotations

import struct
import types

from ... import dtypes as dt
from ...device import device as Device
from ..ir import Graph, Node, Value
from .rewriting import mutable_values, renamed

__all__ = ["cse"]


def cse(graph: Graph) -> Graph:
    """Merge duplicate pure nodes into their first occurrence; returns ``graph``."""
    mutable = mutable_values(graph)
    returned = set(graph.output_values())
    first_of: dict = {}
    renames: dict = {}
    kept = []
    segment = 0
    for node in graph.nodes:
        node.args, node.kwargs = renamed(node.args, renames), renamed(node.kwargs, renames)
        segment += node.is_inplace or bool(node.written)  # in-place ops, and ops that write some argument
        key = _node_key(node, segment, mutable)
        first = first_of.setdefault(key, node) if key is not None else node
        if first is node or not _mergeable(first, node, returned):
            kept.append(node)
            continue
        for dup, kept_value in zip(node.outputs, first.outputs):
            renames[dup] = kept_value
            if dup in returned:
                returned.add(kept_value)
    graph.nodes = kept
    graph.output = renamed(graph.output, renames)
    return graph


def _mergeable(first: Node, node: Node, returned: set) -> bool:
    if any(v in returned for v in first.outputs) and any(v in returned for v in node.outputs):
        return False
    return [(v.shape, v.dtype, v.device) for v in first.outputs] == [(v.shape, v.dtype, v.device) for v in node.outputs]


def _node_key(node: Node, segment: int, mutable: set):
    """What makes two nodes equal, or None when ``node`` must not be merged."""
    if not node.is_pure or not node.outputs or any(v in mutable for v in node.outputs):
        return None
    parts = (_literal_key(node.args), _literal_key(node.kwargs), _literal_key(node.attrs))
    if any(p is None for p in parts):
        return None
    reads_mutable = any(v in mutable for v in node.inputs)
    return node.op, segment if reads_mutable else None, node.out_structure, parts


_BITS = struct.Struct("<d")
_PLAIN = (bool, int, str, type(None), types.EllipsisType)


def _literal_key(obj):
    """A hashable key equal for two arguments exactly when they behave alike, or None when unknown."""
    cls = obj.__class__
    if cls is Value:
        return obj  # values compare by identity
    if cls is float:
        return cls, _BITS.pack(obj)
    if cls is complex:
        return cls, _BITS.pack(obj.real), _BITS.pack(obj.imag)
    if cls in _PLAIN:
        return cls, obj
    if cls is dt.dtype or cls is Device:
        return cls, obj
    if cls is tuple or cls is list:
        parts = tuple(_literal_key(x) for x in obj)
        return None if any(p is None for p in parts) else (cls, parts)
    if cls is dict:
        if not all(isinstance(k, str) for k in obj):
            return None
        parts = tuple((k, _literal_key(obj[k])) for k in sorted(obj))
        return None if any(p is None for _, p in parts) else (cls, parts)
    if cls is slice:
        bounds = _literal_key((obj.start, obj.stop, obj.step))
        return None if bounds is None else (cls, bounds)
    return None
