"""Dead code elimination: drop the nodes whose results nobody reads, then the constants nobody reads.

Removes pure nodes none of whose outputs is read by a kept node or returned,
and ``empty`` allocations nobody reads (an allocation has no effect
beyond its result). One walk from the last node to the first reaches the
fixpoint: every reader of a node comes after it, so it is decided first.

Refuses to remove the other impure nodes: in-place nodes (their output value
may be unread, but the write they make is the point — it may land in an
input, a parameter or a buffer) and random ops (they advance the generator,
so removing one would change every later random number).
"""

from __future__ import annotations

from ..ir import ALLOCATION_OPS, Graph, Node

__all__ = ["dce"]


def dce(graph: Graph) -> Graph:
    """Remove dead pure nodes, unread allocations and unread constants; returns ``graph``."""
    live = set(graph.output_values())
    kept = []
    for node in reversed(graph.nodes):
        if _needed(node, live):
            kept.append(node)
            live.update(node.inputs)
    kept.reverse()
    graph.nodes = kept
    graph.remove_unused_constants()
    return graph


def _needed(node: Node, live: set) -> bool:
    if any(v in live for v in node.outputs):
        return True
    return not node.is_pure and node.op not in ALLOCATION_OPS
