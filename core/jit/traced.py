"""``core.jit.trace`` and the objects it returns: :class:`TracedFunction` and :class:`TracedModule`.

A trace runs the program once on example inputs and records the ops it calls
(see :mod:`core.jit.tracer`); Python control flow, shapes read in Python and
values read with ``.item()`` are baked in, as with ``torch.jit.trace``. The
traced object checks every call's inputs against the shapes, dtypes and
devices it was traced with (a *guard*) and raises :class:`GuardError` when they
differ — or traces again for the new signature when ``retrace=True``.
"""

from __future__ import annotations

import inspect

from ..nn.modules.module import Module
from ..tensor import Tensor
from .interpreter import Program
from .ir import Graph
from .tracer import GraphTracer, TracingError, tracing

__all__ = ["trace", "TracedFunction", "TracedModule", "GuardError", "build_graph"]


class GuardError(RuntimeError):
    """A traced program was called with inputs that do not match the ones it was traced with."""


def _input_names(fn, n: int) -> list:
    target = fn.forward if isinstance(fn, Module) else fn
    try:
        params = [p.name for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = params[:n] + [f"input{i}" for i in range(len(params), n)]
    return [name if name.isidentifier() else f"input{i}" for i, name in enumerate(names)]


def _as_inputs(example_inputs) -> tuple:
    inputs = (example_inputs,) if isinstance(example_inputs, Tensor) else tuple(example_inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"core.jit.trace(): example input {i} must be a Tensor, got {type(t).__name__} "
                            f"(pass non-tensor arguments by closing over them)")
    return inputs


def _lift_output(tracer: GraphTracer, result):
    if isinstance(result, Tensor):
        return tracer.value_of(result)
    cls = result.__class__
    if cls is tuple or cls is list:
        return cls(_lift_output(tracer, r) for r in result)
    if isinstance(result, tuple):  # named tuples come back as plain tuples
        return tuple(_lift_output(tracer, r) for r in result)
    if cls is dict:
        return {k: _lift_output(tracer, v) for k, v in result.items()}
    if result is None or isinstance(result, (bool, int, float, str)):
        return result
    raise TracingError(f"core.jit.trace(): the traced program returned a {type(result).__name__}; expected tensors "
                       f"(or tuples, lists and dicts of them)")


def build_graph(fn, inputs: tuple, module: Module | None = None, tracer: GraphTracer | None = None) -> tuple:
    """Trace ``fn(*inputs)`` into a validated, unoptimised graph; returns (graph, captured leaf tensors).

    ``tracer`` (a fresh :class:`GraphTracer` by default) is what records; pass one to read what else it saw
    (``core.compile`` reads its ``data_reads``)."""
    tracer = tracer if tracer is not None else GraphTracer()
    seen, distinct = set(), []
    for t in inputs:  # the same tensor passed twice must become two inputs: trace with a second object
        if id(t) in seen:
            alias = t._alias(t._shape, t._stride, t._offset)
            alias.requires_grad = t.requires_grad
            t = alias
        seen.add(id(t))
        distinct.append(t)
    inputs = tuple(distinct)
    for name, t in zip(_input_names(fn, len(inputs)), inputs):
        tracer.add_input(t, name)
    if module is not None:
        for name, p in module.named_parameters():
            tracer.add_param(name, p)
        for name, b in module.named_buffers():
            tracer.add_param(name, b, buffer=True)
    with tracing(tracer):
        result = fn(*inputs)
        tracer.graph.output = _lift_output(tracer, result)
    return tracer.graph.validate(), tracer.captured


def _signature(inputs) -> tuple:
    return tuple((t._shape, t.dtype, t.device) if isinstance(t, Tensor) else type(t) for t in inputs)


def check_inputs(graph: Graph, inputs: tuple, what: str) -> None:
    """Raise :class:`GuardError` unless ``inputs`` match the graph's inputs in number, shape, dtype and device."""
    if len(inputs) != len(graph.inputs):
        raise GuardError(f"{what} was traced with {len(graph.inputs)} input(s), got {len(inputs)}")
    for i, (t, v) in enumerate(zip(inputs, graph.inputs)):
        if not isinstance(t, Tensor):
            raise GuardError(f"{what}: input {i} ('{v.name}') must be a Tensor, got {type(t).__name__}")
        if t._shape != v.shape or t.dtype is not v.dtype or t.device != v.device:
            raise GuardError(
                f"{what}: input {i} ('{v.name}') was traced as {v.type_str()}, got "
                f"{t.dtype.name}[{', '.join(map(str, t._shape))}] {t.device}; shapes, dtypes and devices are baked "
                f"into a trace — trace again with these inputs, or pass retrace=True to core.jit.trace()")


def _optimized(graph: Graph, optimize: bool) -> Graph:
    if not optimize:
        return graph
    from .passes import optimize as run_passes

    return run_passes(graph)


class TracedFunction:
    """A traced plain function: call it like the original."""

    def __init__(self, raw_graph: Graph, params: dict, fn=None, retrace: bool = False, optimize: bool = True):
        self.raw_graph = raw_graph
        self.graph = graph = _optimized(raw_graph, optimize)
        self._params = params
        self._fn = fn
        self._retrace = retrace
        self._optimize = optimize
        self._programs = {_graph_signature(graph): Program(graph)}
        self.__name__ = getattr(fn, "__name__", "traced")
        self.__doc__ = getattr(fn, "__doc__", None)

    def _program(self, inputs) -> Program:
        program = self._programs.get(_signature(inputs))
        if program is not None:
            return program
        if not self._retrace or self._fn is None:
            check_inputs(self.graph, inputs, f"traced function '{self.__name__}'")
            raise GuardError(f"traced function '{self.__name__}': inputs do not match the trace")
        graph, captured = build_graph(self._fn, inputs)
        self._params.update(captured)  # noqa: the new trace's leaves are bound by the same names
        program = self._programs[_signature(inputs)] = Program(_optimized(graph, self._optimize))
        return program

    def __call__(self, *inputs):
        return self._program(inputs).run(inputs, self._params)

    def save(self, path) -> None:
        """Write graph and captured tensors to ``path`` (see :func:`core.jit.save`)."""
        from .serialization import save

        save(self, path)

    def __repr__(self) -> str:
        return f"TracedFunction({self.__name__}, {len(self.graph.nodes)} nodes)"


def _graph_signature(graph: Graph) -> tuple:
    return tuple((v.shape, v.dtype, v.device) for v in graph.inputs)


class TracedModule(Module):
    """A traced module: the same parameters, buffers, children, ``state_dict`` and ``train``/``eval``.

    Made by :func:`trace` it shares the original's parameters, buffers and submodules (so an optimizer on either
    trains both); made by :func:`core.jit.load` it owns plain containers holding the saved tensors under the same
    names. A graph exists per mode (training / eval); switching mode traces again when the original module is
    at hand, else the mode must have been saved.
    """

    def __init__(self, raw_graphs: dict, original: Module | None = None, example_inputs: tuple = (),
                 retrace: bool = False, optimize: bool = True, name: str = "TracedModule"):
        super().__init__()
        object.__setattr__(self, "_raw_graphs", dict(raw_graphs))
        object.__setattr__(self, "_graphs", {mode: _optimized(g, optimize) for mode, g in raw_graphs.items()})
        object.__setattr__(self, "_programs", {})
        object.__setattr__(self, "_original", original)
        object.__setattr__(self, "_example_inputs", tuple(example_inputs))
        object.__setattr__(self, "_retrace", retrace)
        object.__setattr__(self, "_optimize", optimize)
        object.__setattr__(self, "_original_name", name)
        object.__setattr__(self, "_getters", None)
        if original is not None:
            object.__setattr__(self, "_parameters", original._parameters)
            object.__setattr__(self, "_buffers", original._buffers)
            object.__setattr__(self, "_non_persistent_buffers_set", original._non_persistent_buffers_set)
            object.__setattr__(self, "_modules", original._modules)
            object.__setattr__(self, "training", original.training)

    @property
    def graph(self) -> Graph:
        """The (optimised) graph of the current mode."""
        graph = self._graphs.get(self.training)
        if graph is None:
            graph = self._trace_mode(self._example_inputs)
        return graph

    @property
    def raw_graph(self) -> Graph:
        """The graph of the current mode as traced, before the passes (what is saved and exported)."""
        if self.training not in self._raw_graphs:
            self._trace_mode(self._example_inputs)
        return self._raw_graphs[self.training]

    @property
    def original_name(self) -> str:
        """The class name of the module that was traced."""
        return self._original_name

    def train(self, mode: bool = True) -> "TracedModule":
        super().train(mode)
        if self._original is not None:
            object.__setattr__(self._original, "training", mode)
        return self

    def _trace_mode(self, inputs: tuple) -> Graph:
        if self._original is None:
            mode = "training" if self.training else "eval"
            raise RuntimeError(f"this traced {self._original_name} has no graph for {mode} mode (it was saved with "
                               f"{', '.join('training' if m else 'eval' for m in self._graphs)} only) and the "
                               f"original module is not available to trace it")
        raw, _ = build_graph(self._original, inputs, self._original)
        self._raw_graphs[self.training] = raw
        graph = self._graphs[self.training] = _optimized(raw, self._optimize)
        return graph

    def _param_getters(self) -> list:
        getters = self._getters
        if getters is None:
            getters = []
            for name in self.graph.params:
                owner, _, leaf = name.rpartition(".")
                module = self.get_submodule(owner) if owner else self
                registry = module._buffers if leaf in module._buffers else module._parameters
                getters.append((name, registry, leaf))
            object.__setattr__(self, "_getters", getters)
        return getters

    def forward(self, *inputs):
        mode = self.training
        key = (mode, _signature(inputs))
        program = self._programs.get(key)
        if program is None:
            graph = self._graphs.get(mode)
            if graph is None or _graph_signature(graph) != key[1]:
                if graph is not None and not self._retrace:
                    check_inputs(graph, inputs, f"traced {self._original_name}")
                graph = self._trace_mode(inputs)
            program = self._programs[key] = Program(graph)
            object.__setattr__(self, "_getters", None)
        params = {name: registry[leaf] for name, registry, leaf in self._param_getters()}
        return program.run(inputs, params)

    def save(self, path) -> None:
        """Write graphs, parameters and buffers to ``path`` (see :func:`core.jit.save`)."""
        from .serialization import save

        save(self, path)

    def extra_repr(self) -> str:
        return f"original={self._original_name}"

    def _get_name(self) -> str:
        return f"Traced{self._original_name}" if not self._original_name.startswith("Traced") else self._original_name


def trace(fn, example_inputs, *, optimize: bool = True, retrace: bool = False):
    """Record ``fn(*example_inputs)`` into a graph and return a callable that replays it.

    ``fn`` is a function or a :class:`core.nn.Module`; ``example_inputs`` a tensor or a tuple of tensors. The
    result runs the (optimised, when ``optimize``) graph: a :class:`TracedModule` for a module, a
    :class:`TracedFunction` otherwise. Calls with inputs of another shape, dtype or device raise
    :class:`GuardError`, or trace again when ``retrace=True``. Control flow is recorded as it ran on the
    example inputs (``torch.jit.trace`` semantics).
    """
    inputs = _as_inputs(example_inputs)
    if isinstance(fn, Module):
        graph, captured = build_graph(fn, inputs, fn)
        if captured:
            raise TracingError(f"core.jit.trace(): {type(fn).__name__} uses tensors that require grad but are not "
                               f"its registered parameters ({len(captured)} found); register them with "
                               f"nn.Parameter so the traced module can bind them")
        return TracedModule({fn.training: graph}, fn, inputs, retrace, optimize, type(fn).__name__)
    if not callable(fn):
        raise TypeError(f"core.jit.trace(): expected a function or a Module, got {type(fn).__name__}")
    graph, captured = build_graph(fn, inputs)
    return TracedFunction(graph, captured, fn, retrace, optimize)

