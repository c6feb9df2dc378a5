"""Fusion: replace chains of elementwise nodes (optionally closed by a reduction) with one ``jit::fused`` node.

A *group* is a set of pure nodes on one device whose outputs all have the
group's shape: elementwise ops with a C expression (arithmetic with tensor or
Python-scalar operands, comparisons, ``where``, ``clamp``, unary math, casts by
``jit::copy``) in float32/float64 (bool for comparison results and ``where``
conditions). Inputs of smaller shapes broadcast into it. A reduction (``sum``,
``amax``, ``amin`` over the trailing dims, all dims included) of a member
closes the group. Growing is greedy, in execution order:

* a node joins the open groups that produced its operands when their shape and
  device are its own (several such groups merge);
* a group is *sealed* (takes no more members) once a node outside it reads one
  of its values — the fused node stands where the group's last member stood,
  so nothing outside may read a member's value before that point — and every
  group is sealed at an in-place node (a later member would read memory the
  mutation already changed);
* values of a group read outside it (or returned) become outputs of the fused
  node, which keeps their Values, so readers are untouched.

Groups of one node are left alone, and so are devices whose backend does not
opt in (:meth:`core.backends.api.Runtime.supports_fusion`; the NumPy reference
does not). Each fused node carries the subgraph it replaces (run op by op when
autograd must record, see :mod:`core.jit.fused`) and the
:class:`~core.codegen.FusedKernel` its backend compiles.
"""

from __future__ import annotations

import numbers

from ...codegen import BINARY_EXPRESSIONS, UNARY_EXPRESSIONS, FusedKernel, FusedReduction, FusedStep
from .. import fused  # noqa: F401 - registers jit::fused
from ..ir import Graph, Node, Value

__all__ = ["fusion", "find_groups", "FUSIBLE_OPS"]

_FLOATS = ("float32", "float64")
_OPERAND_DTYPES = ("float32", "float64", "bool")
_UNARY = UNARY_EXPRESSIONS
_ARITHMETIC = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2")
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_REDUCTIONS = ("sum", "amax", "amin")
# templates in core.codegen's markers (any dialect renders them); a NaN input stays, a NaN bound propagates
_CLAMP_MIN = "{s:{nan:a};a;{s:a > b;a;b}}"
_CLAMP_MAX = "{s:{nan:a};a;{s:a < b;a;b}}"
FUSIBLE_OPS = frozenset({*_UNARY, *_ARITHMETIC, *_COMPARISONS, *_REDUCTIONS, "where", "clamp", "jit::copy"})


class _Prev:
    """Marks an operand that is the previous step of the same node (clamp with both bounds)."""


_PREV = _Prev()


def _is_number(x) -> bool:
    """A real Python (or NumPy) number that a C literal can spell."""
    if not isinstance(x, numbers.Real):
        return False
    try:
        float(x)
    except OverflowError:
        return False
    return True


def _operands_ok(node: Node, operands) -> bool:
    """Values of an operand dtype on the node's device, or real Python numbers."""
    dev = node.outputs[0].device
    for x in operands:
        if isinstance(x, Value):
            if x.dtype.name not in _OPERAND_DTYPES or x.device != dev:
                return False
        elif not _is_number(x):
            return False
    return True


def _elementwise_steps(node: Node) -> list | None:
    """The steps ``(op, template, operands, dtype, compute)`` computing ``node``, or None if it does not fuse."""
    if node.kwargs or len(node.outputs) != 1 or node.out_structure is not None:
        return None
    op, args, dtype = node.op, node.args, node.outputs[0].dtype.name
    if op in _COMPARISONS and len(args) == 2 and _operands_ok(node, args):
        # one float dtype among the tensors: it is the compute dtype whatever the other operand (PyTorch's
        # promotion with 0-dim tensors is not worth re-deriving here)
        tensor_dtypes = {a.dtype.name for a in args if isinstance(a, Value)}
        if len(tensor_dtypes) != 1 or not tensor_dtypes <= set(_FLOATS) or dtype != "bool":
            return None
        return [(op, BINARY_EXPRESSIONS[op], list(args), "bool", tensor_dtypes.pop())]
    if dtype not in _FLOATS:
        return None
    if op in _UNARY and len(args) == 1 and isinstance(args[0], Value) and args[0].dtype.name in _FLOATS:
        return [(op, _UNARY[op], [args[0]], dtype, dtype)]
    if op in _ARITHMETIC and len(args) in (2, 3) and _operands_ok(node, args[:2]):
        if len(args) == 3:  # add/sub's alpha: input + alpha * other, with other * alpha rounded first
            if op not in ("add", "sub") or not _is_number(args[2]):
                return None
            return [(op, f"(a {'+' if op == 'add' else '-'} b * c)", list(args), dtype, dtype)]
        return [(op, BINARY_EXPRESSIONS[op], list(args), dtype, dtype)]
    if op == "where" and len(args) == 3 and isinstance(args[0], Value) and args[0].dtype.name == "bool" \
            and _operands_ok(node, args):
        return [(op, "{s:a != 0;b;c}", list(args), dtype, dtype)]
    if op == "clamp" and 2 <= len(args) <= 3 and isinstance(args[0], Value) and _operands_ok(
            node, [a for a in args if a is not None]):
        low, high = args[1], args[2] if len(args) == 3 else None
        steps = [("clamp_min", _CLAMP_MIN, [args[0], low], dtype, dtype)] if low is not None else []
        if high is not None:
            steps.append(("clamp_max", _CLAMP_MAX, [_PREV if steps else args[0], high], dtype, dtype))
        return steps or None
    if op == "jit::copy" and len(args) == 2 and isinstance(args[0], Value) and _operands_ok(node, args[:1]):
        return [("copy", "a", [args[0]], dtype, dtype)]
    return None


def _reduction(node: Node) -> tuple | None:
    """``(op, trailing dims reduced, keepdim)`` of a fusible reduction node, else None."""
    op, args = node.op, node.args
    if op not in _REDUCTIONS or node.kwargs or len(node.outputs) != 1 or not args or not isinstance(args[0], Value):
        return None
    x, out = args[0], node.outputs[0]
    if x.dtype.name not in _FLOATS or out.dtype is not x.dtype or x.device != out.device:
        return None
    if len(args) not in ((3, 4) if op == "sum" else (3,)) or (len(args) == 4 and args[3] not in (None, x.dtype)):
        return None
    dims, keepdim, ndim = args[1], args[2], len(x.shape)
    if not isinstance(dims, (tuple, list)) or not dims or not isinstance(keepdim, bool):
        return None
    try:
        wanted = sorted(d % ndim for d in dims) if ndim else None
    except (TypeError, ZeroDivisionError):
        return None
    if wanted != list(range(ndim - len(dims), ndim)) or 0 in x.shape[ndim - len(dims):]:
        return None
    return op, len(dims), keepdim


class _Group:
    __slots__ = ("nodes", "device", "shape", "open")

    def __init__(self, node: Node, shape: tuple):
        self.nodes = [node]
        self.device = node.outputs[0].device
        self.shape = shape
        self.open = True


def _fusion_enabled(dev, cache: dict) -> bool:
    """Whether the backend serving ``dev`` compiles fused kernels (asked once per device per pass)."""
    if dev not in cache:
        from ...plugins.manager import runtime_for

        try:
            supports = getattr(runtime_for(dev.type), "supports_fusion", None)
            cache[dev] = bool(supports is not None and supports(dev))
        except Exception:  # a backend that cannot even say: no fusion
            cache[dev] = False
    return cache[dev]


def find_groups(graph: Graph) -> list:
    """The node lists (in execution order) that :func:`fusion` would fuse, groups of one included."""
    groups: list = []
    group_of: dict = {}  # member output Value -> its group
    order = {id(n): i for i, n in enumerate(graph.nodes)}
    enabled: dict = {}
    for node in graph.nodes:
        producers = {id(g): g for g in (group_of.get(v) for v in node.inputs) if g is not None}
        if node.is_inplace or node.written:  # a write closes every open group
            for g in groups:
                g.open = False
            continue
        joined = None
        reduction = _reduction(node)
        dev = node.outputs[0].device if len(node.outputs) == 1 else None
        if reduction is not None:
            g = group_of.get(node.args[0])
            if g is not None and g.open and g.device == dev and _fusion_enabled(dev, enabled):
                g.nodes.append(node)
                g.open = False
                joined = g
        elif _elementwise_steps(node) is not None and _fusion_enabled(dev, enabled):
            shape = node.outputs[0].shape
            mergeable = [g for g in producers.values() if g.open and g.device == dev and g.shape == shape]
            if mergeable:
                joined = mergeable[0]
                for other in mergeable[1:]:  # both unsealed: nothing outside read them, so they can run as one
                    joined.nodes = sorted(joined.nodes + other.nodes, key=lambda n: order[id(n)])
                    for v in [v for v, g in group_of.items() if g is other]:
                        group_of[v] = joined
                    groups.remove(other)
                joined.nodes.append(node)
            else:
                joined = _Group(node, shape)
                groups.append(joined)
            for v in node.outputs:
                group_of[v] = joined
        for g in producers.values():
            if g is not joined:
                g.open = False
    return [g.nodes for g in groups]


def fusion(graph: Graph) -> Graph:
    """Replace every group of two or more nodes by one ``jit::fused`` node; returns ``graph``."""
    uses = _readers(graph)
    for members in find_groups(graph):
        if len(members) >= 2:
            _replace(graph, members, uses)
    return graph


def _readers(graph: Graph) -> dict:
    """Value -> the nodes reading it (``None`` stands for the graph's output)."""
    readers: dict = {}
    for node in graph.nodes:
        for v in node.inputs:
            readers.setdefault(v, []).append(node)
    for v in graph.output_values():
        readers.setdefault(v, []).append(None)
    return readers


def _replace(graph: Graph, members: list, readers: dict) -> None:
    member_set = set(map(id, members))
    produced = {v for n in members for v in n.outputs}
    inputs: list = []
    for n in members:
        for v in n.inputs:
            if v not in produced and v not in inputs:
                inputs.append(v)
    read_outside = [v for n in members for v in n.outputs
                    if any(r is None or id(r) not in member_set for r in readers.get(v, ()))]
    kernel, outputs = _kernel(members, inputs, read_outside)
    sub = _subgraph(members, inputs, outputs)
    position = graph.nodes.index(members[-1])
    node = Node("jit::fused", tuple(inputs), {}, outputs, None if len(outputs) == 1 else tuple(range(len(outputs))),
                {"graph": sub, "kernel": kernel, "ops": [n.op.replace("jit::", "") for n in members]})
    for i, v in enumerate(outputs):
        v.node, v.index = node, i
    graph.nodes[position] = node
    graph.nodes = [n for n in graph.nodes if id(n) not in member_set]
    for v in inputs:  # the fused node now reads what the members read
        readers.setdefault(v, []).append(node)


def _kernel(members: list, inputs: list, read_outside: list) -> tuple:
    """The FusedKernel of a group and the Values it writes (elementwise outputs first, the reduction's last)."""
    steps: list = []
    step_of: dict = {}
    reduction = None
    last = members[-1]
    red = _reduction(last)
    body = members[:-1] if red is not None else members
    for n in body:
        for op, template, operands, dtype, compute in _elementwise_steps(n):
            refs = tuple(_ref(x, steps, step_of, inputs) for x in operands)
            steps.append(FusedStep(op, template, refs, dtype, compute))
        step_of[n.outputs[0]] = len(steps) - 1
    outputs = [v for v in read_outside if v in step_of]
    if red is not None:
        op, dims, keepdim = red
        dtype = last.outputs[0].dtype.name
        reduction = FusedReduction(op, step_of[last.args[0]], dims, keepdim, dtype,
                                   "float64" if op == "sum" else dtype)
        outputs.append(last.outputs[0])
    names = [n.op.replace("jit::", "") for n in members]
    name = "fused_" + "_".join(names[:6]) + (f"_and{len(names) - 6}" if len(names) > 6 else "")
    kernel = FusedKernel(name, tuple(body[-1].outputs[0].shape), tuple(v.dtype.name for v in inputs), tuple(steps),
                         tuple(step_of[v] for v in outputs if v in step_of), reduction)
    return kernel, outputs


def _ref(x, steps: list, step_of: dict, inputs: list) -> tuple:
    if x is _PREV:
        return ("v", len(steps) - 1)
    if isinstance(x, Value):
        return ("v", step_of[x]) if x in step_of else ("in", inputs.index(x))
    return ("lit", x)


def _subgraph(members: list, inputs: list, outputs: list) -> Graph:
    """A graph of copies of ``members`` whose inputs are the group's inputs and whose output is ``outputs``."""
    from ..ir import map_values

    sub = Graph()
    new = {v: sub.add_input(v.shape, v.dtype, v.device, f"in{k}") for k, v in enumerate(inputs)}
    for n in members:
        copied = sub.create_node(n.op, map_values(n.args, new.__getitem__), map_values(n.kwargs, new.__getitem__),
                                 [(v.shape, v.dtype, v.device) for v in n.outputs], n.out_structure, dict(n.attrs))
        new.update(zip(n.outputs, copied.outputs))
    sub.output = tuple(new[v] for v in outputs)
    return sub.validate()
