"""Running a graph: each node becomes one prepared call of its dispatcher operator.

The interpreter calls operators through the dispatcher, so a traced program
runs on whatever device its inputs are on, records autograd like eager code
does, and is traced again if someone traces it. Values live in a flat list
indexed by slot; each step fills its argument template from that list.

Dispatcher ops record themselves in a ``core.profiler`` block; a JIT op that calls none (``jit::fused``
launching its kernel) gets a span here, named by its ``profile_name``. Outside a profile that costs one check
per run.
"""

from __future__ import annotations

from ..profiler._recorder import current_session
from ..tensor import Tensor
from .ir import JIT_OPS, Graph, SymSize, Value, map_values

__all__ = ["Program"]


def _flat(result, out: list) -> list:
    if isinstance(result, Tensor):
        out.append(result)
    elif isinstance(result, (tuple, list)):
        for r in result:
            _flat(r, out)
    return out


def _filler(obj, slots: dict):
    """A function env -> obj with values read from ``env`` (None when ``obj`` holds no values)."""
    if isinstance(obj, Value):
        s = slots[obj]
        return lambda env: env[s]
    if isinstance(obj, SymSize):  # inputs fill the first slots, in order
        i, d = obj.input, obj.dim
        return lambda env: env[i]._shape[d]
    cls = obj.__class__
    if cls is tuple or cls is list:
        parts = [_filler(x, slots) for x in obj]
        if all(p is None for p in parts):
            return None
        fns = [p if p is not None else (lambda env, x=x: x) for p, x in zip(parts, obj)]
        return lambda env: cls(f(env) for f in fns)
    if cls is dict:
        parts = {k: _filler(v, slots) for k, v in obj.items()}
        if all(p is None for p in parts.values()):
            return None
        return lambda env: {k: (p(env) if p is not None else obj[k]) for k, p in parts.items()}
    return None


class _Step:
    __slots__ = ("fn", "template", "holes", "nested", "kwargs", "kw_fill", "outs", "single", "node", "span")

    def __init__(self, node, fn, slots: dict, span: str | None = None):
        self.node = node
        self.fn = fn
        self.span = span  # the profiler span's name, for a node the dispatcher does not record
        self.template = list(node.args)
        self.holes = []
        self.nested = []
        for i, a in enumerate(node.args):
            if isinstance(a, Value):
                self.holes.append((i, slots[a]))
            else:
                f = _filler(a, slots)
                if f is not None:
                    self.nested.append((i, f))
        self.kwargs = node.kwargs
        self.kw_fill = _filler(node.kwargs, slots) if node.kwargs else None
        self.outs = [slots[v] for v in node.outputs]
        self.single = len(self.outs) == 1 and node.out_structure is None


class Program:
    """A graph prepared for repeated execution."""

    def __init__(self, graph: Graph):
        from ..dispatch.operator import OPERATORS

        self.graph = graph
        slots: dict = {}
        for v in graph.inputs:
            slots[v] = len(slots)
        self.param_slots = []
        for name, v in graph.params.items():
            slots[v] = len(slots)
            self.param_slots.append((name, slots[v]))
        self.constants = []
        for v, t in graph.constants.values():
            slots[v] = len(slots)
            self.constants.append((slots[v], t))
        for node in graph.nodes:
            for v in node.outputs:
                slots[v] = len(slots)
        self.n_slots = len(slots)
        self.n_inputs = len(graph.inputs)
        self.steps = []
        for node in graph.nodes:
            spec = JIT_OPS.get(node.op)
            if spec is None:
                self.steps.append(_Step(node, OPERATORS[node.op], slots))
            else:
                self.steps.append(_Step(node, spec.callable_for(node), slots, spec.profile_name(node)))
        self.output = map_values(graph.output, lambda v: _Slot(slots[v]))

    def run(self, inputs, params: dict):
        """Execute with ``inputs`` (in order) and ``params`` (qualified name -> tensor); the output structure."""
        env = [None] * self.n_slots
        env[:self.n_inputs] = inputs
        for name, s in self.param_slots:
            env[s] = params[name]
        for s, t in self.constants:
            env[s] = t
        session = current_session()
        for step in self.steps:
            args = step.template
            if step.holes or step.nested:
                args = args.copy()
                for i, s in step.holes:
                    args[i] = env[s]
                for i, f in step.nested:
                    args[i] = f(env)
            fn = step.fn if session is None or step.span is None else session.spanned(step.span, step.fn)
            if step.kw_fill is not None:
                result = fn(*args, **step.kw_fill(env))
            elif step.kwargs:
                result = fn(*args, **step.kwargs)
            else:
                result = fn(*args)
            if step.single:
                env[step.outs[0]] = result
            else:
                for s, t in zip(step.outs, _flat(result, [])):
                    env[s] = t
        return map_values(self.output, lambda slot: env[slot.s], _Slot)


class _Slot:
    __slots__ = ("s",)

    def __init__(self, s: int):
        self.s = s
