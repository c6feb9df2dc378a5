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
from .guards import GuardBuilder, Unguardable, rebuild_args

__all__ = ["CompiledFunction", "OptimizedModule", "is_compiling", "graph_break", "reset"]

_EAGER = object()  # cache entry: this guard key runs eagerly


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
        compiled.cache.clear()
        compiled.warned.clear()


class CompiledFunction:
    """A function or module call compiled with ``core.compile``: a cache of graphs per guard key."""

    def __init__(self, fn, module: Module | None, backend, fullgraph: bool, name: str):
        self.fn = fn
        self.module = module
        self.backend = backend
        self.fullgraph = fullgraph
        self.name = name
        self.cache: dict = {}  # guard key -> backend callable, or _EAGER
        self.warned: set = set()
        self._guards = None
        _LIVE.add(self)
        functools.update_wrapper(self, fn, updated=())

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
        if len(self.cache) >= config.cache_size_limit:
            if self.fullgraph:
                raise FailOnRecompileLimitHit(
                    f"core.compile({self.name}): cache_size_limit ({config.cache_size_limit}) reached with "
                    f"fullgraph=True; each new shape, dtype or argument value needs a graph: raise "
                    f"core._dynamo.config.cache_size_limit if these recompilations are expected")
            return self._eager("cache_size_limit", f"cache_size_limit ({config.cache_size_limit}) reached: calls "
                               f"with new shapes, dtypes or argument values run eagerly (raise "
                               f"core._dynamo.config.cache_size_limit to keep more graphs)", args, kwargs)
        return self._capture(key, tensors, args, kwargs)

    def _eager(self, kind: str, message: str, args, kwargs):
        if self.fullgraph:
            raise Unsupported(f"core.compile({self.name}, fullgraph=True): {message}")
        self._warn_once(kind, message)
        return self.fn(*args, **kwargs)

    def _capture(self, key, tensors: list, args, kwargs):
        from ..jit.tracer import GraphTracer, TracingError, is_tracing
        from ..jit.traced import build_graph

        if is_tracing():  # inside core.jit.trace: run the program, the outer trace records its ops
            return self.fn(*args, **kwargs)

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
            self.cache[key] = _EAGER
            return result["value"] if "value" in result else self.fn(*args, **kwargs)
        params = self._param_binder(captured)
        gm = GraphModule(graph, params, self.name)
        self.cache[key] = self.backend(gm, list(tensors))
        return result["value"]

    def _param_binder(self, captured: dict):
        module = self.module
        if module is None:
            return lambda: captured

        def params():
            bound = dict(module.named_parameters())
            bound.update(module.named_buffers())
            bound.update(captured)
            return bound

        return params


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
