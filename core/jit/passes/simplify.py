"""Algebraic simplification: nodes that compute one of their inputs unchanged are bypassed.

Rewrites (their readers then read ``x``; ``dce`` removes what became dead):

* ``x * 1``, ``1 * x``, ``x / 1``, ``x ** 1`` -> ``x``;
* ``x - 0`` -> ``x``, and ``x + 0``, ``0 + x`` -> ``x`` for integral ``x`` (for
  floating ``x`` only with ``-0.0``: IEEE gives ``-0.0 + 0 == +0.0``, while
  ``x - 0`` and ``x + -0.0`` keep every ``x``); ``add``/``sub`` only in their
  two-argument form, without ``alpha``;
* ``neg(neg(x))`` -> ``x``;
* ``transpose``/``permute`` of a ``transpose``/``permute`` -> ``x`` when the
  two compose to the identity, else one ``permute(x, dims)``; a lone identity
  ``transpose(x, d, d)`` or ``permute(x, (0, 1, ...))`` -> ``x``.

The literal must be a real Python number (``bool``, ``int``, ``float``).

Refuses to rewrite

* unless the node's output has exactly ``x``'s shape, dtype and device
  (broadcasting and type promotion change results: ``int_tensor * 1.0`` is
  float); complex ``x`` is left alone (``(a+bj) * 1`` is not exact with
  infinities and signed zeros);
* values an in-place node may write (see :mod:`.rewriting`): readers of the
  output would see writes made to ``x`` or the other way round;
* when the graph would return an input, parameter or constant itself, or
  return ``x`` twice: the caller would get (or get twice) a tensor it
  already holds, not a new one as eager code gives.
"""

from __future__ import annotations

import math

from ..ir import Graph, Node, Value
from .rewriting import mutable_values, renamed

__all__ = ["simplify"]


def simplify(graph: Graph) -> Graph:
    """Bypass identity nodes and merge chains of dimension permutations; returns ``graph``."""
    refused = mutable_values(graph)
    returned = set(graph.output_values())
    renames: dict = {}
    for node in graph.nodes:
        node.args, node.kwargs = renamed(node.args, renames), renamed(node.kwargs, renames)
        if node.kwargs or len(node.outputs) != 1 or node.outputs[0] in refused or not node.is_pure:
            continue
        out = node.outputs[0]
        x = _identity_operand(node, refused)
        if x is not None and _may_forward(out, x, refused, returned):
            renames[out] = x
            if out in returned:
                returned.add(x)
    graph.output = renamed(graph.output, renames)
    return graph


def _may_forward(out: Value, x: Value, refused: set, returned: set) -> bool:
    """Whether readers of ``out`` may read ``x`` instead."""
    if x in refused or (out.shape, out.dtype, out.device) != (x.shape, x.dtype, x.device):
        return False
    return not (out in returned and (x.kind != "node" or x in returned))


def _identity_operand(node: Node, refused: set) -> Value | None:
    """The input that ``node`` returns unchanged, or None; merges permutation chains into ``node`` on the way."""
    if node.op in _IDENTITIES:
        return _arithmetic_operand(node)
    if node.op == "neg":
        inner = _producer(node.args[0], ("neg",), refused) if len(node.args) == 1 else None
        return inner.args[0] if inner is not None and len(inner.args) == 1 else None
    dims = _permutation(node)
    if dims is None:
        return None
    y = node.args[0]
    inner = _producer(y, ("transpose", "permute"), refused)
    inner_dims = _permutation(inner) if inner is not None else None
    if inner_dims is not None:
        y, dims = inner.args[0], tuple(inner_dims[d] for d in dims)
        node.op, node.args = "permute", (y, dims)
    return y if dims == tuple(range(len(dims))) else None


def _producer(v, ops, refused: set) -> Node | None:
    """The node defining ``v`` when it is one of ``ops``, takes no kwargs and ``v`` is never written."""
    if not isinstance(v, Value) or v.node is None or v in refused:
        return None
    node = v.node
    return node if node.op in ops and not node.kwargs and node.args and isinstance(node.args[0], Value) else None


# -- x (op) literal ---------------------------------------------------------------------------------------------------
def _is_one(c, x: Value) -> bool:
    return c == 1


def _is_additive_identity(c, x: Value) -> bool:
    return c == 0 and (math.copysign(1.0, c) < 0 or not x.dtype.is_floating_point)


def _is_plus_zero(c, x: Value) -> bool:
    return c == 0 and math.copysign(1.0, c) > 0


# op -> (whether the tensor may be either operand, the test a literal passes when the op returns the tensor)
_IDENTITIES = {"mul": (True, _is_one), "add": (True, _is_additive_identity), "sub": (False, _is_plus_zero),
               "div": (False, _is_one), "pow": (False, _is_one)}


def _arithmetic_operand(node: Node) -> Value | None:
    if len(node.args) != 2:
        return None
    either, test = _IDENTITIES[node.op]
    a, b = node.args
    for x, c in ((a, b), (b, a)) if either else ((a, b),):
        if isinstance(x, Value) and isinstance(c, (int, float)) and not x.dtype.is_complex and test(c, x):
            return x
    return None


# -- transpose / permute ----------------------------------------------------------------------------------------------
def _permutation(node: Node) -> tuple | None:
    """The dims of a ``transpose``/``permute`` node as a permutation (output dim i is input dim p[i]), or None."""
    if node.kwargs or not node.args or not isinstance(node.args[0], Value):
        return None
    n = len(node.args[0].shape)
    if node.op == "transpose" and len(node.args) == 3 and _valid_dims(node.args[1:], n):
        order = list(range(n))
        if n:
            a, b = (d % n for d in node.args[1:])
            order[a], order[b] = order[b], order[a]
        return tuple(order)
    if node.op == "permute" and len(node.args) == 2 and isinstance(node.args[1], (tuple, list)) \
            and len(node.args[1]) == n and _valid_dims(node.args[1], n):
        order = tuple(d % n for d in node.args[1])
        return order if sorted(order) == list(range(n)) else None
    return None


def _valid_dims(dims, n: int) -> bool:
    bound = max(n, 1)  # a 0-d tensor accepts dims 0 and -1
    return all(isinstance(d, int) and not isinstance(d, bool) and -bound <= d < bound for d in dims)
