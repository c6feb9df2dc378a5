"""What the rewriting passes share: which values may be written in place, and renaming the values nodes read.

Replacing one value by another (``simplify``, ``constant_fold``, ``cse``) is
sound only for values whose contents never change once defined. A value may
change when it shares storage with the first argument of an in-place node
(``copy_``, ``fill_``, ``index_put_``, the random fills). Storage is shared

* between an in-place node's output and its first argument (the same tensor);
* between the outputs and inputs of every dispatcher op that is not primitive:
  views (``view``, ``transpose``, ``expand``, ...) alias their input, and a
  composite may return a view or the input itself — only primitives and the
  ``jit::`` ops are sure to write new memory;
* among all inputs and parameters: the caller may pass views of one tensor,
  and modules may share storage between buffers, so once any of them may be
  written, all of them are.
"""

from __future__ import annotations

from ..ir import JIT_OPS, Graph, Node, Value, map_values

__all__ = ["mutable_values", "shares_storage", "renamed"]


def shares_storage(node: Node) -> bool:
    """Whether ``node``'s outputs may share storage with its inputs (in-place ops, views, composites)."""
    if node.op in JIT_OPS:
        return False
    if node.is_inplace:
        return True
    from ...dispatch.operator import OPERATORS

    op = OPERATORS.get(node.op)
    return op is None or not op.primitive


class _Classes:
    """Union-find over values: the classes of values that may share storage."""

    def __init__(self):
        self.parent: dict = {}

    def find(self, v: Value) -> Value:
        root = v
        while self.parent.get(root, root) is not root:
            root = self.parent[root]
        while v is not root:  # path compression
            self.parent[v], v = root, self.parent.get(v, v)
        return root

    def union(self, a: Value, b: Value) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb


def mutable_values(graph: Graph) -> set:
    """Every value of ``graph`` that shares (or may share) storage with a tensor some in-place node writes."""
    classes = _Classes()
    written = []
    for node in graph.nodes:
        written += node.written
        if not shares_storage(node):
            continue
        sources = node.inputs
        if node.is_inplace and node.args and isinstance(node.args[0], Value):
            sources = [node.args[0]]
        for out in node.outputs:
            for v in sources:
                classes.union(out, v)
    if not written:
        return set()
    roots = {classes.find(v) for v in written}
    external = graph.inputs + list(graph.params.values())
    if any(classes.find(v) in roots for v in external):
        roots.update(classes.find(v) for v in external)
    values = external + [v for v, _ in graph.constants.values()] + [v for n in graph.nodes for v in n.outputs]
    return {v for v in values if classes.find(v) in roots}


def renamed(obj, renames: dict):
    """``obj`` (a node's args or kwargs, or the graph output) reading ``renames[v]`` for every ``v`` renamed."""
    if not renames:
        return obj
    return map_values(obj, lambda v: renames.get(v, v))
