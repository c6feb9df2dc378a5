"""Epilogues: a ``linear`` or ``convolution`` whose only reader is an activation becomes one node that applies it.

``relu(linear(x, w, b))`` becomes ``linear_pointwise(x, w, b, "relu")`` and
``relu(convolution(x, w, b, ...))`` ``convolution_pointwise(x, w, b, ..., "relu")``
(``sigmoid`` and ``tanh`` alike). The fused ops are composites with their own
derivative, so a backend that has a kernel for them (cpu_c: oneDNN's matmul and
convolution primitives with the bias and the activation as post-ops, one pass
over the output instead of two) runs them in training too, and every other
backend runs their decomposition: the same two ops as before.

The product's value must be read by the activation alone and not returned (the
fused node no longer defines it). The fused node stands where the activation
stood and keeps its output Value, so readers are untouched; the product's
operands are all defined before it, so moving it later keeps the graph valid.
Runs before :mod:`.fusion`, which then sees the fused nodes as ordinary ops.
"""

from __future__ import annotations

from ...ops.linalg import POINTWISE_ACTIVATIONS
from ..ir import Graph, Node, Value

__all__ = ["epilogue", "FUSED"]

#: the product ops whose epilogue is fused, and the op each becomes
FUSED = {"linear": "linear_pointwise", "convolution": "convolution_pointwise"}
_ARITY = {"linear": 3, "convolution": 7}  # the positional arguments the fused op's activation follows


def epilogue(graph: Graph) -> Graph:
    """Fold each activation into the product it alone reads; returns ``graph``."""
    uses = graph.uses()
    fused_products = set()
    nodes = []
    for node in graph.nodes:
        product = _product_of(node, uses)
        if product is None:
            nodes.append(node)
            continue
        fused = Node(FUSED[product.op], product.args + (node.op,), product.kwargs, node.outputs,
                     attrs=dict(product.attrs))
        for v in fused.outputs:
            v.node = fused
        fused_products.add(product)
        nodes.append(fused)
    graph.nodes = [n for n in nodes if n not in fused_products]
    return graph


def _product_of(node: Node, uses: dict):
    """The ``linear``/``convolution`` node whose output activation ``node`` alone reads, else None."""
    if node.op not in POINTWISE_ACTIVATIONS or node.kwargs or len(node.args) != 1:
        return None
    x = node.args[0]
    if not isinstance(x, Value) or x.kind != "node" or uses.get(x) != 1:
        return None
    product = x.node
    if product.op not in FUSED or len(product.outputs) != 1 or product.kwargs:
        return None
    if len(product.args) != _ARITY[product.op]:
        return None
    return product
