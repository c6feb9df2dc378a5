"""The objects ``core.compile`` returns: a guarded cache of captured graphs per function or module.

The first call with a new guard key (see :mod:`.guards`) traces the program with ``core.jit``'s tracer — that
run *is* the call, so its result is returned and side effects happen once — and hands the captured graph to
the backend. Later calls with the same key run the backend's callable. A capture that cannot be trusted (the
program read tensor data into Python, called a ``core.compiler.disable``'d function, or the tracer refused it)
runs eagerly for that key instead, with a one-time warning, or raises ``Unsupported`` under ``fullgraph=True``.
"""

from __future__ import annotations

import functools
import threading
import warnings
import weakref

from .._dynamo import config
from .._dynamo.exc import FailOnRecompileLimitHit, Unsupported
from ..nn.modules.module import Module
from .backends import GraphModule
from .dynamic import DynamicState, matches, symbolize
from .guards import GuardBuilder, Unguardable, rebuild_args

__all__ = ["CompiledFunction", "OptimizedModule", "is_compiling", "graph_break", "reset"]

_EAGER = object()  # cache entry: this guard key runs eagerly
_LIMIT_MESSAGE = ("cache_size_limit ({}) reached: calls with new shapes, dtypes or argument values run eagerly "
                  "(raise core._dynamo.config.cache_size_limit to keep more graphs)")


class _State(threading.local):
    def __init__(self):
        self.breaks = None  # list of graph-break reasons while a capture runs in this thread


_STATE = _State()
_LIVE: weakref.WeakSet = weakref.WeakSet()  # the compiled objects still referenced, for reset()


def is_compiling() -> bool:
    """Whether this thread is capturing a graph for ``core.compile`` (``torch.compiler.is_compiling``)."""
    return _STATE.breaks is not None


def graph_break(reason: str) -> None:
    """Mark the capture running in this thread as unusable (it will run eagerly, or raise under fullgraph)."""
    if _STATE.breaks is not None:
        _STATE.breaks.append(reason)


def reset() -> None:
    """Drop every compiled graph and one-time warning; the next calls capture again (``torch.compiler.reset``)."""
    for compiled in list(_LIVE):
        compiled.clear()


class CompiledFunction:
    """A function or module call compiled with ``core.compile``: a cache of graphs per guard key, and the
    dynamic-shape graphs per shape-erased guard key (see :mod:`.dynamic`)."""

    def __init__(self, fn, module: Module | None, backend, fullgraph: bool, name: str, dynamic=None):
        self.fn = fn
        self.module = module
        self.backend = backend
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.name = name
        self.cache: dict = {}  # guard key -> backend callable, or _EAGER
        self.dynamic_states: dict = {}  # shape-erased guard key -> DynamicState
        self.graphs = 0  # graphs handed to the backend, against config.cache_size_limit
        self.warned: set = set()
        self._guards = None
        _LIVE.add(self)
        functools.update_wrapper(self, fn, updated=())

    def clear(self) -> None:
        """Forget every graph and one-time warning."""
        self.cache.clear()
        self.dynamic_states.clear()
        self.graphs = 0
        self.warned.clear()

    def _warn_once(self, kind: str, message: str) -> None:
        if kind not in self.warned:
            self.warned.add(kind)
            warnings.warn(f"core.compile({self.name}): {message}", stacklevel=3)

    def __call__(self, *args, **kwargs):
        if is_compiling():  # called from inside another capture: inline, the outer trace records the ops
            return self.fn(*args, **kwargs)
        if self._guards is None:
            self._guards = GuardBuilder(self.fn, self.module)
        tensors: list = []
        try:
            key = self._guards.key(args, kwargs, tensors)
        except Unguardable as e:
            return self._eager("unguardable", f"{e} cannot be guarded; running eagerly", args, kwargs)
        entry = self.cache.get(key)
        if entry is _EAGER:
            return self.fn(*args, **kwargs)
        if entry is not None:
            return entry(*tensors)
        if self.graphs >= config.cache_size_limit and not self._has_template(args, kwargs):
            self._limit_reached()
            return self._eager("cache_size_limit", _LIMIT_MESSAGE.format(config.cache_size_limit), args, kwargs)
        return self._capture(key, tensors, args, kwargs)

    def _has_template(self, args, kwargs) -> bool:
        """Whether a dynamic-shape graph may serve this call's sizes (checking them needs no new graph)."""
        state = self.dynamic_states.get(self._guards.key(args, kwargs, [], shapes=False))
        return state is not None and state.run is not None and not state.failed

    def _limit_reached(self) -> None:
        if self.fullgraph:
            raise FailOnRecompileLimitHit(
                f"core.compile({self.name}): cache_size_limit ({config.cache_size_limit}) reached with "
                f"fullgraph=True; each new shape, dtype or argument value needs a graph: raise "
                f"core._dynamo.config.cache_size_limit if these recompilations are expected")

    def _eager(self, kind: str, message: str, args, kwargs):
        if self.fullgraph:
            raise Unsupported(f"core.compile({self.name}, fullgraph=True): {message}")
        self._warn_once(kind, message)
        return self.fn(*args, **kwargs)

    def _capture(self, key, tensors: list, args, kwargs):
        """Trace this call (its result is returned) and cache what serves its key: a graph of its own, the
        dynamic-shape graph of its shape-erased key, or eager execution."""
        from ..jit.tracer import is_tracing

        if is_tracing():  # inside core.jit.trace: run the program, the outer trace records its ops
            return self.fn(*args, **kwargs)
        value, graph, captured = self._trace(tensors, args, kwargs)
        if graph is None:
            self.cache[key] = _EAGER
            return value
        if self.dynamic is False:
            self._install(key, graph, captured, tensors)
            return value
        state_key = self._guards.key(args, kwargs, [], shapes=False)
        sizes = tuple(t._shape for t in tensors)
        state = self.dynamic_states.get(state_key)
        if state is None:
            state = self.dynamic_states[state_key] = DynamicState(graph, sizes)
            dims = _marked(tensors, sizes, everything=self.dynamic is True)
        else:
            dims = state.wanted(sizes, _marked(tensors, sizes, everything=self.dynamic is True))
        if state.failed or not dims or any(sizes[i][d] < 2 for i, d in dims):
            self._install(key, graph, captured, tensors)  # sizes 0 and 1 are specialized, as in torch
        elif state.run is not None and dims == state.dims and matches(state.template, state.sizes, graph, sizes,
                                                                          dims):
            self.cache[key] = state.run  # these sizes are the template's program: it serves them
        else:
            self._generalize(state, key, graph, captured, tensors, sizes, dims)
        return value

    def _generalize(self, state: DynamicState, key, graph, captured: dict, tensors: list, sizes: tuple,
                    dims: frozenset) -> None:
        """Make ``graph`` (traced at ``sizes``) the template of ``state`` when the last trace is that template
        at its own sizes; else ``graph`` serves its own key and the dimensions stay static."""
        template = symbolize(graph, sizes, dims)
        earlier = state.graph is not graph and all(state.sizes[i][d] >= 2 for i, d in dims)
        if earlier and not matches(template, sizes, state.graph, state.sizes, dims):
            state.failed = True
            self._install(key, graph, captured, tensors)
            return
        state.graph, state.sizes, state.dims, state.template = graph, sizes, dims, template
        state.run = self._install(key, template, captured, tensors)

    def _trace(self, tensors: list, args, kwargs) -> tuple:
        """(the call's result, its graph, the leaf tensors it captured); the graph is None when the capture
        cannot be trusted (a graph break: the call ran eagerly, with a one-time warning)."""
        from ..jit.tracer import GraphTracer, TracingError
        from ..jit.traced import build_graph

        def flat_fn(*inputs):
            rebuilt_args, rebuilt_kwargs = rebuild_args((args, kwargs), iter(inputs))
            return self.fn(*rebuilt_args, **rebuilt_kwargs)

        result = {}

        def recording(*inputs):
            result["value"] = flat_fn(*inputs)
            return result["value"]

        _STATE.breaks = breaks = []
        tracer = GraphTracer()
        try:
            graph, captured = build_graph(recording, tuple(tensors), self.module, tracer)
        except TracingError as e:
            breaks.append(f"the tracer cannot capture it ({e})")
            graph = captured = None
        finally:
            _STATE.breaks = None
        breaks.extend(_data_reads(tracer.data_reads))
        if breaks:
            if self.fullgraph:
                raise Unsupported(f"core.compile({self.name}, fullgraph=True): cannot capture one graph: {breaks[0]}")
            self._warn_once("graph_break", f"graph break: {breaks[0]}; calls with these inputs run eagerly")
            return (result["value"] if "value" in result else self.fn(*args, **kwargs)), None, None
        return result["value"], graph, captured

    def _install(self, key, graph, captured: dict, tensors: list):
        """Hand ``graph`` to the backend; its callable serves ``key`` and is returned (None, and ``key`` runs
        eagerly, when ``config.cache_size_limit`` graphs exist)."""
        if self.graphs >= config.cache_size_limit:
            self._limit_reached()
            self._warn_once("cache_size_limit", _LIMIT_MESSAGE.format(config.cache_size_limit))
            self.cache[key] = _EAGER
            return None
        gm = GraphModule(graph, self._param_binder(captured, list(graph.params)), self.name)
        run = self.cache[key] = self.backend(gm, list(tensors))
        self.graphs += 1
        return run

    def _param_binder(self, captured: dict, names: list):
        """A function returning the tensors the graph reads by name (``names``): the captured leaves, and the
        module's parameters and buffers as they are now, looked up along their qualified names."""
        module = self.module
        if module is None:
            return lambda: captured
        paths = [(name, name.split(".")) for name in names if name not in captured]

        def params():
            bound = dict(captured)
            for name, parts in paths:
                owner = module
                for part in parts[:-1]:
                    owner = owner._modules[part]
                leaf = parts[-1]
                tensor = owner._parameters.get(leaf)
                bound[name] = tensor if tensor is not None else owner._buffers[leaf]
            return bound

        return params


def _marked(tensors: list, sizes: tuple, everything: bool = False) -> frozenset:
    """The dimensions ``(input, dim)`` marked with ``core._dynamo.mark_dynamic`` (every one: ``everything``)."""
    if everything:  # dynamic=True: every dimension but those of size 0 and 1, which torch specializes too
        return frozenset((i, d) for i, shape in enumerate(sizes) for d, n in enumerate(shape) if n >= 2)
    return frozenset((i, d) for i, t in enumerate(tensors) for d in getattr(t, "_dynamo_dynamic_indices", ())
                     if d < len(sizes[i]))


def _data_reads(reads: list) -> list:
    return [f"the program read a {dtype.name}{list(shape)} tensor's value into Python (.item(), bool(), "
            f".tolist(), ...), so its control flow may depend on data" for shape, dtype in reads[:1]]


class OptimizedModule(Module):
    """A module compiled with ``core.compile``: calls run the compiled graphs of the wrapped ``_orig_mod``,
    whose parameters, buffers and ``state_dict`` (keys prefixed ``_orig_mod.``, as in PyTorch) it shares."""

    def __init__(self, mod: Module, compiled: CompiledFunction):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "training", mod.training)

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def forward(self, *args, **kwargs):
        """Run the compiled module."""
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("_orig_mod"), name)

    def _get_name(self) -> str:
        return "OptimizedModule"
