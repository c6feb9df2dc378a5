"""The graph IR of ``core.jit``: typed values, nodes that call dispatcher ops, and the graph that holds them.

A :class:`Value` is defined once (static single assignment) and carries the
type it had at trace time: shape, dtype and device. It is one of

* ``input``  — an argument of the traced function, in order;
* ``param``  — a parameter or buffer of the traced module (or a leaf tensor
  that requires grad, captured by reference), bound by its qualified name at
  every call, so optimizer updates and ``load_state_dict`` are seen;
* ``const``  — a tensor captured by value at trace time (stored in the graph);
* ``node``   — an output of a :class:`Node`.

A :class:`Node` calls the dispatcher operator named ``op`` with ``args`` and
``kwargs`` in which tensors are replaced by the values they were at trace time
(lists and tuples of tensors included). Nodes of ``inplace`` ops (``copy_``,
``fill_``, the random fills) mutate their first argument: their output is a new
value standing for the mutated tensor, and passes treat them as barriers.
Ops of the JIT itself (``jit::fused``) are looked up in :data:`JIT_OPS`.
"""

from __future__ import annotations

import itertools

from .. import dtypes as dt

__all__ = ["Value", "Node", "Graph", "GraphError", "JIT_OPS", "RANDOM_OPS", "ALLOCATION_OPS", "SymSize",
           "map_values", "flat_values", "has_symbols"]

# Ops with no tensor-valued effects beyond their outputs but whose outputs differ run to run: never folded,
# never merged. (The in-place random fills are already excluded as mutations.)
RANDOM_OPS = frozenset({"multinomial", "dropout", "rand_like", "randn_like", "randint_like"})
# Allocations: the dispatcher's factory ``empty`` and ``jit::empty`` of graphs saved before it was one. Impure (two
# allocations are two tensors), but with no effect beyond their result: removed when unread, rewritten with their
# one writer by functionalize.
ALLOCATION_OPS = frozenset({"empty", "jit::empty"})
# Ops the JIT defines itself (op name -> object with run(node, args) and describe(node)); filled by the passes.
JIT_OPS: dict = {}


class GraphError(RuntimeError):
    """A graph that breaks an IR invariant (use before definition, unknown op, bad output)."""


class Value:
    """One SSA value: where it comes from and the type it had at trace time."""

    __slots__ = ("id", "kind", "shape", "dtype", "device", "name", "node", "index")

    def __init__(self, id: int, kind: str, shape: tuple, dtype, device, name: str = "", node=None, index: int = 0):
        self.id = id
        self.kind = kind  # "input" | "param" | "const" | "node"
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self.name = name
        self.node = node
        self.index = index

    @property
    def ref(self) -> str:
        """How the value is written in the printed graph."""
        return f"%{self.name}" if self.name else f"%{self.id}"

    def type_str(self) -> str:
        return f"{self.dtype.name}[{', '.join(str(s) for s in self.shape)}] {self.device}"

    def __repr__(self) -> str:
        return f"<Value {self.ref}: {self.type_str()} ({self.kind})>"


def map_values(obj, fn, leaf: type = Value):
    """``obj`` (nested lists/tuples/dicts) with every ``leaf`` (a :class:`Value`) replaced by ``fn(leaf)``."""
    if isinstance(obj, leaf):
        return fn(obj)
    cls = obj.__class__
    if cls is tuple or cls is list:
        return cls(map_values(x, fn, leaf) for x in obj)
    if cls is dict:
        return {k: map_values(v, fn, leaf) for k, v in obj.items()}
    return obj


class SymSize:
    """A size read at run time: dimension ``dim`` of graph input ``input`` (an argument of a node of a
    ``core.compile`` graph with dynamic shapes, in place of the integer that size had when it was traced)."""

    __slots__ = ("input", "dim")

    def __init__(self, input: int, dim: int):
        self.input = input
        self.dim = dim

    def __eq__(self, other) -> bool:
        return isinstance(other, SymSize) and (self.input, self.dim) == (other.input, other.dim)

    def __hash__(self) -> int:
        return hash((SymSize, self.input, self.dim))

    def __repr__(self) -> str:
        return f"s{self.input}.size({self.dim})"


def has_symbols(obj) -> bool:
    """Whether ``obj`` (nested lists/tuples/dicts) holds a :class:`SymSize`."""
    if isinstance(obj, SymSize):
        return True
    if isinstance(obj, (tuple, list)):
        return any(has_symbols(x) for x in obj)
    if isinstance(obj, dict):
        return any(has_symbols(x) for x in obj.values())
    return False


def flat_values(obj) -> list:
    """The :class:`Value` objects in ``obj`` (nested lists/tuples/dicts), in order."""
    out = []
    map_values(obj, out.append)
    return out


class Node:
    """A call of op ``op`` on ``args``/``kwargs`` producing ``outputs`` (Values)."""

    __slots__ = ("op", "args", "kwargs", "outputs", "out_structure", "attrs")

    def __init__(self, op: str, args: tuple, kwargs: dict, outputs: list, out_structure=None, attrs=None):
        self.op = op
        self.args = tuple(args)
        self.kwargs = dict(kwargs)
        self.outputs = list(outputs)
        # None: the op returns one tensor; else a nested structure of output indices (ints) and literals
        self.out_structure = out_structure
        self.attrs = attrs if attrs is not None else {}

    @property
    def inputs(self) -> list:
        """Every Value the node reads, in argument order (duplicates kept)."""
        return flat_values(self.args) + flat_values(self.kwargs)

    @property
    def is_inplace(self) -> bool:
        """Whether the node mutates its first argument (a side effect that passes must keep in place)."""
        spec = JIT_OPS.get(self.op)
        if spec is not None:
            return False
        from ..dispatch.operator import OPERATORS

        op = OPERATORS.get(self.op)
        return bool(op is not None and op.inplace)

    @property
    def written(self) -> list:
        """The argument Values the node may write: the first of an in-place op, and those its op declares in
        ``define(..., writes=...)`` (``batch_norm``'s running statistics)."""
        if self.op in JIT_OPS:
            return []
        from ..dispatch.operator import OPERATORS

        op = OPERATORS.get(self.op)
        if op is None or not op.writes:
            return []
        return [v for i in op.writes if i < len(self.args) for v in flat_values(self.args[i])]

    @property
    def is_pure(self) -> bool:
        """No side effects and a deterministic result: may be folded, merged or removed when unused."""
        spec = JIT_OPS.get(self.op)
        if spec is not None:
            return spec.pure
        return not self.is_inplace and not self.written and self.op not in RANDOM_OPS

    def __repr__(self) -> str:
        return f"<Node {self.op} -> {', '.join(v.ref for v in self.outputs)}>"


def _fmt_arg(a) -> str:
    if isinstance(a, Value):
        return a.ref
    if isinstance(a, dt.dtype):
        return f"core.{a.name}"
    if isinstance(a, tuple):
        return "(" + ", ".join(_fmt_arg(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join(_fmt_arg(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt_arg(v)}" for k, v in a.items()) + "}"
    return repr(a)


class Graph:
    """Inputs, parameters, constants, nodes in execution order, and the output structure."""

    def __init__(self):
        self.inputs: list = []
        self.params: dict = {}  # qualified name -> Value (kind "param")
        self.buffers: set = set()  # the names in params that are buffers, not parameters
        self.constants: dict = {}  # name -> (Value, Tensor)
        self.nodes: list = []
        self.output = None  # nested structure of Values and literals
        self._ids = itertools.count()

    # -- building ---------------------------------------------------------------------------------------
    def _new_value(self, kind: str, shape, dtype, device, name: str = "", node=None, index: int = 0) -> Value:
        return Value(next(self._ids), kind, shape, dtype, device, name, node, index)

    def add_input(self, shape, dtype, device, name: str = "") -> Value:
        """Append a graph input."""
        v = self._new_value("input", shape, dtype, device, name or f"input{len(self.inputs)}")
        self.inputs.append(v)
        return v

    def add_param(self, qualname: str, tensor, buffer: bool = False) -> Value:
        """Declare parameter (or buffer) ``qualname``, bound by name at every call."""
        v = self._new_value("param", tensor._shape, tensor.dtype, tensor.device, qualname)
        self.params[qualname] = v
        if buffer:
            self.buffers.add(qualname)
        return v

    def add_constant(self, tensor, name: str = "") -> Value:
        """Store ``tensor`` in the graph as a constant value."""
        name = name or f"const{len(self.constants)}"
        while name in self.constants:
            name += "_"
        v = self._new_value("const", tensor._shape, tensor.dtype, tensor.device, name)
        self.constants[name] = (v, tensor)
        return v

    def create_node(self, op: str, args: tuple, kwargs: dict, output_types: list, out_structure=None,
                    attrs=None, insert_at: int | None = None) -> Node:
        """A new node whose outputs have ``output_types`` ((shape, dtype, device) each); appended unless
        ``insert_at`` is given."""
        node = Node(op, args, kwargs, [], out_structure, attrs)
        node.outputs = [self._new_value("node", s, d, dev, node=node, index=i)
                        for i, (s, d, dev) in enumerate(output_types)]
        if insert_at is None:
            self.nodes.append(node)
        else:
            self.nodes.insert(insert_at, node)
        return node

    # -- queries and rewriting ------------------------------------------------------------------------------
    def output_values(self) -> list:
        """The Values the graph returns."""
        return flat_values(self.output)

    def uses(self) -> dict:
        """Value -> number of reads by nodes and the output."""
        counts: dict = {}
        for node in self.nodes:
            for v in node.inputs:
                counts[v] = counts.get(v, 0) + 1
        for v in self.output_values():
            counts[v] = counts.get(v, 0) + 1
        return counts

    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Make every reader of ``old`` read ``new`` instead."""
        swap = lambda v: new if v is old else v  # noqa: E731
        for node in self.nodes:
            node.args = map_values(node.args, swap)
            node.kwargs = map_values(node.kwargs, swap)
        self.output = map_values(self.output, swap)

    def remove_unused_constants(self) -> None:
        """Drop constants no node or output reads."""
        used = self.uses()
        self.constants = {k: (v, t) for k, (v, t) in self.constants.items() if v in used}

    def copy(self) -> "Graph":
        """A copy with new Values and Nodes (constant tensors shared) for passes to rewrite freely."""
        g = Graph()
        g._ids = self._ids
        new: dict = {}

        def clone(v: Value) -> Value:
            c = new.get(v)
            if c is None:
                c = new[v] = Value(v.id, v.kind, v.shape, v.dtype, v.device, v.name, None, v.index)
            return c

        g.inputs = [clone(v) for v in self.inputs]
        g.params = {k: clone(v) for k, v in self.params.items()}
        g.buffers = set(self.buffers)
        g.constants = {k: (clone(v), t) for k, (v, t) in self.constants.items()}
        for node in self.nodes:
            copied = Node(node.op, map_values(node.args, clone), map_values(node.kwargs, clone),
                          [clone(v) for v in node.outputs], node.out_structure, dict(node.attrs))
            for v in copied.outputs:
                v.node = copied
            g.nodes.append(copied)
        g.output = map_values(self.output, clone)
        return g

    # -- checking -------------------------------------------------------------------------------------------
    def validate(self) -> "Graph":
        """Raise :class:`GraphError` unless every value is defined once before it is read and every op exists."""
        from ..dispatch.operator import OPERATORS

        defined = set()
        for v in self.inputs + list(self.params.values()) + [v for v, _ in self.constants.values()]:
            if v in defined:
                raise GraphError(f"value {v.ref} is declared twice")
            defined.add(v)
        for i, node in enumerate(self.nodes):
            if node.op not in OPERATORS and node.op not in JIT_OPS:
                raise GraphError(f"node {i} calls unknown op '{node.op}'")
            for v in node.inputs:
                if v not in defined:
                    raise GraphError(f"node {i} ({node.op}) reads {v.ref} before it is defined")
            for v in node.outputs:
                if v in defined:
                    raise GraphError(f"node {i} ({node.op}) redefines {v.ref}")
                if v.node is not node:
                    raise GraphError(f"value {v.ref} does not point back to node {i} ({node.op})")
                defined.add(v)
        for v in self.output_values():
            if v not in defined:
                raise GraphError(f"the graph returns {v.ref}, which is never defined")
        return self

    # -- printing -------------------------------------------------------------------------------------------
    def __str__(self) -> str:
        head = [f"{v.ref} : {v.type_str()}" for v in self.inputs]
        head += [f"{v.ref} : {v.type_str()} (param)" for v in self.params.values()]
        lines = ["graph(" + (",\n      ".join(head)) + "):"]
        for v, _ in self.constants.values():
            lines.append(f"  {v.ref} : {v.type_str()} = constant")
        for node in self.nodes:
            outs = ", ".join(f"{v.ref} : {v.type_str()}" for v in node.outputs) or "()"
            spec = JIT_OPS.get(node.op)
            if spec is not None:
                call = spec.describe(node)
            else:
                parts = [_fmt_arg(a) for a in node.args] + [f"{k}={_fmt_arg(v)}" for k, v in node.kwargs.items()]
                call = f"{node.op}({', '.join(parts)})"
            lines.append(f"  {outs} = {call}")
        lines.append(f"  return {_fmt_arg(self.output)}")
        return "\n".join(lines)

    def print(self) -> None:
        """Print the graph (``str(graph)``)."""
        print(str(self))

    def __repr__(self) -> str:
        return f"<Graph: {len(self.inputs)} inputs, {len(self.params)} params, {len(self.nodes)} nodes>"
