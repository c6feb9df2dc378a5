"""Dynamic shapes for ``core.compile``: one graph that serves every size of some input dimensions.

``core.jit`` traces record Python integers: a ``view(x, [64, -1])`` whose 64 was ``x.size(0)`` looks like one
whose 64 was a constant. So a dynamic graph is made from traces, not from symbolic integers:

* :func:`symbolize` turns a traced graph into a *template*: every integer argument equal to the size of a
  dynamic dimension (2 or more) becomes a :class:`~core.jit.ir.SymSize` that reads that size at run time;
* :func:`matches` checks that another trace of the same program, at other sizes, is the template read at those
  sizes: the same ops in the same order, equal constants and literals, each symbol equal to its size, and each
  value's shape equal but for the dynamic dimensions.

A template is made from one trace and checked against an earlier trace at other sizes when there is one. Every
new combination of sizes is then checked once more: its call is captured (it runs eagerly while recording) and
must match the template before the template's graph serves those sizes; a call that does not match gets a
graph of its own and stops the dimension from being dynamic. A graph therefore never runs on sizes at which
tracing would have recorded a different program: a branch on a size, a loop over it, a reshape that computed
from it all show up as a mismatch. What the check cannot see is a backend pass that decided on the traced
sizes; ``core.jit``'s passes decide on equal or broadcast dimensions, which sizes of 2 or more keep.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # core.jit loads on the first capture, not with ``import core``
    from ..jit.ir import Graph

__all__ = ["symbolize", "matches", "DynamicState"]


class DynamicState:
    """What one shape-erased guard key knows: the last trace (``graph`` at ``sizes``), the dynamic dimensions
    (``dims``, pairs ``(input, dim)``), the template's compiled callable (``run``) and whether the dimensions
    were found not to be dynamic (``failed``)."""

    __slots__ = ("graph", "sizes", "dims", "template", "run", "failed")

    def __init__(self, graph: Graph, sizes: tuple):
        self.graph = graph
        self.sizes = sizes
        self.dims: frozenset = frozenset()
        self.template = None
        self.run = None
        self.failed = False

    def wanted(self, sizes: tuple, marked: frozenset) -> frozenset:
        """The dynamic dimensions a call with ``sizes`` asks for: those already dynamic, the marked ones, and the
        ones whose size differs from the last trace's (automatic dynamic shapes)."""
        changed = {(i, d) for i, (a, b) in enumerate(zip(self.sizes, sizes)) for d, (m, n) in enumerate(zip(a, b))
                   if m != n}
        return self.dims | marked | changed


def symbolize(graph: Graph, sizes: tuple, dims: frozenset) -> Graph:
    """A copy of ``graph`` (traced with input shapes ``sizes``) in which each integer argument equal to the size
    of a dimension in ``dims`` (2 or more) is that size read at run time; the first such dimension wins."""
    from ..jit.ir import SymSize

    by_size: dict = {}
    for i, d in sorted(dims):
        by_size.setdefault(sizes[i][d], SymSize(i, d))
    by_size = {n: s for n, s in by_size.items() if n >= 2}

    def sym(obj):
        cls = obj.__class__
        if cls is int:
            return by_size.get(obj, obj)
        if cls is tuple or cls is list:
            return cls(sym(x) for x in obj)
        if cls is dict:
            return {k: sym(v) for k, v in obj.items()}
        return obj

    template = graph.copy()
    for node in template.nodes:
        node.args, node.kwargs = sym(node.args), sym(node.kwargs)
    return template


def matches(template: Graph, sizes: tuple, graph: Graph, graph_sizes: tuple, dims: frozenset) -> bool:
    """Whether ``graph`` (traced at input shapes ``graph_sizes``) is ``template`` (made at ``sizes``) with its
    symbols read at ``graph_sizes``: see the module docstring."""
    from ..jit.ir import SymSize, Value

    if len(template.inputs) != len(graph.inputs) or len(template.nodes) != len(graph.nodes):
        return False
    if template.params.keys() != graph.params.keys() or template.constants.keys() != graph.constants.keys():
        return False
    dyn = [(sizes[i][d], graph_sizes[i][d]) for i, d in dims]
    mapping: dict = {}

    def same_type(a: Value, b: Value) -> bool:
        if a.dtype != b.dtype or a.device != b.device or len(a.shape) != len(b.shape):
            return False
        return all(m == n or (m, n) in dyn for m, n in zip(a.shape, b.shape))

    def bind(a: Value, b: Value) -> bool:
        mapping[a] = b
        return same_type(a, b)

    def same(a, b) -> bool:
        if isinstance(a, Value):
            return isinstance(b, Value) and mapping.get(a) is b
        if isinstance(a, SymSize):
            return b.__class__ is int and b == graph_sizes[a.input][a.dim]
        if a.__class__ is not b.__class__:
            return False
        if isinstance(a, (tuple, list)):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, float) and math.isnan(a):
            return math.isnan(b)
        return a == b

    if not all(bind(a, b) for a, b in zip(template.inputs, graph.inputs)):
        return False
    if not all(bind(v, graph.params[k]) for k, v in template.params.items()):
        return False
    for name, (v, t) in template.constants.items():
        w, u = graph.constants[name]
        if not bind(v, w) or not _equal_tensors(t, u):
            return False
    for a, b in zip(template.nodes, graph.nodes):
        if a.op != b.op or a.out_structure != b.out_structure or len(a.outputs) != len(b.outputs):
            return False
        if not same(a.args, b.args) or not same(a.kwargs, b.kwargs) or a.attrs != b.attrs:
            return False
        if not all(bind(v, w) for v, w in zip(a.outputs, b.outputs)):
            return False
    return same(template.output, graph.output)


def _equal_tensors(a, b) -> bool:
    """Whether two captured constants hold the same values (NaNs equal)."""
    if a is b:
        return True
    if a._shape != b._shape or a.dtype != b.dtype or a.device != b.device:
        return False
    x, y = a.cpu().numpy(), b.cpu().numpy()
    try:
        import numpy as np

        return bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
    except TypeError:
        return bool((x == y).all())
