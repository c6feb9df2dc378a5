"""Epilogues: a ``linear`` or ``convolution`` followed by an addition and an activation becomes one node.

``relu(linear(x, w, b))`` becomes ``linear_pointwise(x, w, b, "relu")``, ``linear(x, w, b) + r`` becomes
``linear_pointwise(x, w, b, None, r)`` and ``relu(linear(x, w, b) + r)`` ``linear_pointwise(x, w, b, "relu", r)``
(the residual ``r`` of the same dtype, broadcasting to the product's shape); ``convolution`` alike into
``convolution_pointwise``; the activations: ``relu``, ``sigmoid``, ``tanh``, and GELU (``gelu(x, "none")`` becomes
activation ``"gelu"``, ``gelu(x, "tanh")`` ``"gelu_tanh"``). The fused ops are composites with their own derivative,
so a backend that has a kernel for them (cpu_c: oneDNN's matmul and convolution primitives with the bias, the
residual and the activation as post-ops, one pass over the output instead of two or three) runs them in training
too, and every other backend runs their decomposition: the ops it replaced. GELU's gradient needs the product, which
the fused op does not keep: where autograd records such a call it runs as its parts (``Operator.records_parts``), so
GELU epilogues fuse in inference and cost nothing in training.

Each value folded in must be read by the next step alone and not returned (the fused node no longer defines it).
The fused node stands where the last step stood and keeps its output Value, so readers are untouched; everything
the earlier steps read is defined before them, so moving them later keeps the graph valid. Runs before
:mod:`.fusion`, which then sees the fused nodes as ordinary ops.
"""

from __future__ import annotations

from ...ops.linalg import POINTWISE_ACTIVATIONS
from ..ir import Graph, Node, Value

__all__ = ["epilogue", "FUSED"]

#: the product ops whose epilogue is fused, and the op each becomes
FUSED = {"linear": "linear_pointwise", "convolution": "convolution_pointwise"}
_ARITY = {"linear": 3, "convolution": 7}  # the positional arguments the fused op's activation and residual follow
_PRODUCTS = {**_ARITY, "linear_pointwise": 3, "convolution_pointwise": 7}


def epilogue(graph: Graph) -> Graph:
    """Fold each addition, then each activation, into the product it alone reads; returns ``graph``."""
    graph.nodes = _fold(graph, _residual_of)
    graph.nodes = _fold(graph, _activation_of)
    return graph


def _fold(graph: Graph, match) -> list:
    """The nodes with each ``match(node, uses) -> (product node, args of the fused node) or None`` folded."""
    uses = graph.uses()
    folded = set()
    nodes = []
    for node in graph.nodes:
        found = match(node, uses)
        if found is None:
            nodes.append(node)
            continue
        product, args = found
        op = FUSED.get(product.op, product.op)
        fused = Node(op, args, {}, node.outputs, attrs=dict(product.attrs))
        for v in fused.outputs:
            v.node = fused
        folded.add(product)
        nodes.append(fused)
    return [n for n in nodes if n not in folded]


def _sole_product(x, uses: dict, fused_ok: bool):
    """The product node (``linear``/``convolution``, or with ``fused_ok`` a fused node with no activation yet) whose
    one output ``x`` is, read once; None otherwise."""
    if not isinstance(x, Value) or x.kind != "node" or uses.get(x) != 1:
        return None
    product = x.node
    arity = _PRODUCTS.get(product.op)
    if arity is None or product.kwargs or len(product.outputs) != 1:
        return None
    if product.op in FUSED:
        return product if len(product.args) == arity else None
    if not fused_ok or product.args[arity] is not None:  # already has an activation
        return None
    return product


def _residual_of(node: Node, uses: dict):
    """``add(product, r)`` or ``add(r, product)`` (alpha 1, r a tensor of the product's dtype that broadcasts to its
    shape): (the product, its args + (None, r))."""
    if node.op != "add" or node.kwargs or len(node.args) != 2:
        return None
    for i in (0, 1):
        product = _sole_product(node.args[i], uses, fused_ok=False)
        residual = node.args[1 - i]
        out = node.outputs[0]
        if product is not None and isinstance(residual, Value) and residual is not node.args[i] \
                and residual.dtype is out.dtype is node.args[i].dtype and out.shape == node.args[i].shape \
                and residual.device == out.device:
            return product, product.args + (None, residual)
    return None


def _activation_name(node: Node):
    """The epilogue activation ``node`` applies to its one tensor argument (``relu``, ``sigmoid``, ``tanh``, ``gelu``,
    ``gelu_tanh``); None if it is not one."""
    if node.kwargs:
        return None
    if node.op in POINTWISE_ACTIVATIONS and len(node.args) == 1:
        return node.op
    if node.op == "gelu" and len(node.args) == 2 and node.args[1] in ("none", "tanh"):
        return "gelu" if node.args[1] == "none" else "gelu_tanh"
    return None


def _activation_of(node: Node, uses: dict):
    """``act(product)`` of a product, or of a fused node with a residual and no activation: (the product, its args
    with the activation)."""
    activation = _activation_name(node)
    if activation is None:
        return None
    product = _sole_product(node.args[0], uses, fused_ok=True)
    if product is None:
        return None
    arity = _PRODUCTS[product.op]
    return product, product.args[:arity] + (activation,) + product.args[arity + 1:]
