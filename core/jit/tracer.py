"""Recording ops into a :class:`~core.jit.ir.Graph`: the ``Tracer`` dispatch key.

While a trace runs, the thread's included key set holds ``Tracer``, the
highest functionality key, so every operator call reaches :func:`_tracer_kernel`
first. It maps the tensor arguments to graph values, runs the op below itself
(Autograd, then the backend) with ``Tracer`` excluded — ops that a composite
calls internally are therefore *not* recorded, only the op the program called —
and appends a node whose outputs stand for the returned tensors.

A tensor the trace has not seen is one of: an alias made without a kernel
(``detach``, ``.data``) of a known value, which reuses that value; a leaf that
requires grad (a parameter a function closes over), captured by reference as a
``param``; or anything else, captured by value as a ``const`` (a snapshot taken
when first seen, so later in-place writes during the trace do not change it).
An in-place op on a constant first clones it, so every call starts from the
snapshot.

Device moves and casts (``.to()``, ``.cpu()``, ``.double()``) are the
``_to_copy`` operator and factory allocations (``core.zeros``, ``clone``) the
``empty`` operator, dispatched on the device's backend key plus the included
keys: both are recorded like any other op, with no hook.
"""

from __future__ import annotations

import threading

from ..dispatch.keys import Tracer, tls
from ..dispatch.operator import functionality_fallback, set_functionality_fallback
from ..tensor import Tensor
from .ir import Graph, Value

__all__ = ["GraphTracer", "tracing", "is_tracing", "TracingError", "note_data_read"]

_TRACER_MASK = Tracer.mask


class TracingError(RuntimeError):
    """The program did something a trace cannot record faithfully."""


class _State(threading.local):
    def __init__(self):
        self.tracer = None


_STATE = _State()


def is_tracing() -> bool:
    """Whether this thread is inside :func:`core.jit.trace`."""
    return _STATE.tracer is not None


def _alias_key(t: Tensor) -> tuple:
    return id(t._storage), t._shape, t._stride, t._offset, t.dtype


def _flat_tensors(result) -> list:
    if isinstance(result, Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out.extend(_flat_tensors(r))
        return out
    return []


class GraphTracer:
    """Builds one graph: the tensor -> value maps and the recording of each op call."""

    def __init__(self, graph: Graph | None = None):
        self.graph = graph or Graph()
        # id(tensor) -> (tensor, Value, its alias key then); the tensor is kept alive so ids are not reused
        self._by_id: dict = {}
        self._by_alias: dict = {}
        self.captured: dict = {}  # param name -> tensor, for leaves that require grad met during the trace
        # (shape, dtype) of each tensor whose data the program read in Python (.item(), bool(), .tolist()):
        # the trace baked those values in; core.compile treats a read as a graph break
        self.data_reads: list = []

    # -- binding tensors to values ---------------------------------------------------------------------------
    def bind(self, t: Tensor, v: Value) -> Value:
        """Make ``t`` stand for ``v`` from now on."""
        key = _alias_key(t)
        self._by_id[id(t)] = (t, v, key)
        self._by_alias[key] = v
        return v

    def add_input(self, t: Tensor, name: str = "") -> Value:
        """Declare ``t`` as the next graph input."""
        return self.bind(t, self.graph.add_input(t._shape, t.dtype, t.device, name))

    def add_param(self, qualname: str, t: Tensor, buffer: bool = False) -> Value:
        """Declare ``t`` as parameter (or buffer) ``qualname``."""
        return self.bind(t, self.graph.add_param(qualname, t, buffer))

    def value_of(self, t: Tensor, mutated: bool = False) -> Value:
        """The value ``t`` stands for, capturing it when unseen."""
        hit = self._by_id.get(id(t))
        # a tensor whose geometry changed in place (t_, squeeze_, set_, ...) stands for the view it now matches
        if hit is not None and hit[0] is t and hit[2] == _alias_key(t):
            v = hit[1]
        else:
            v = self._by_alias.get(_alias_key(t))
            if v is not None:
                self.bind(t, v)
            elif t.requires_grad and t.grad_fn is None:
                name = f"captured{len(self.captured)}"
                self.captured[name] = t
                v = self.add_param(name, t)
            else:
                v = self.bind(t, self.graph.add_constant(_untraced(lambda: t.detach().clone())))
        if mutated and v.kind == "const":
            node = self.graph.create_node("jit::copy", (v, v.dtype), {}, [(v.shape, v.dtype, v.device)])
            v = self.bind(t, node.outputs[0])
        return v

    def lift(self, obj, mutated_first: bool = False):
        """``obj`` (an argument structure) with tensors replaced by their values."""
        if isinstance(obj, Tensor):
            return self.value_of(obj, mutated_first)
        cls = obj.__class__
        if cls is tuple or cls is list:
            return cls(self.lift(x, mutated_first and i == 0) for i, x in enumerate(obj))
        if cls is dict:
            return {k: self.lift(v) for k, v in obj.items()}
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple of tensors
            return tuple(self.lift(x) for x in obj)
        return obj

    # -- recording ---------------------------------------------------------------------------------------------
    def record(self, op_name: str, args: tuple, kwargs: dict, result) -> None:
        """Append the node of one op call whose (already lifted) arguments are ``args``/``kwargs``."""
        outs = _flat_tensors(result)
        node = self.graph.create_node(op_name, args, kwargs, [(t._shape, t.dtype, t.device) for t in outs],
                                      out_structure=None if isinstance(result, Tensor) else _structure(result))
        for t, v in zip(outs, node.outputs):
            self.bind(t, v)


def _structure(result, counter=None):
    """The shape of an op's return value with tensors numbered in flattening order."""
    counter = counter if counter is not None else [0]
    if isinstance(result, Tensor):
        counter[0] += 1
        return counter[0] - 1
    if isinstance(result, (tuple, list)):
        return tuple(_structure(r, counter) for r in result)
    return ("literal", result)


def note_data_read(t: Tensor) -> None:
    """Record that the program being traced read ``t``'s values into Python (called by ``to_numpy``)."""
    tracer = _STATE.tracer
    if tracer is not None:
        tracer.data_reads.append((t._shape, t.dtype))


def _untraced(fn):
    prev_inc, prev_exc = tls.include, tls.exclude
    tls.exclude = prev_exc | _TRACER_MASK
    try:
        from ..autograd.grad_mode import no_grad

        with no_grad():
            return fn()
    finally:
        tls.include, tls.exclude = prev_inc, prev_exc


def _tracer_kernel(op, below: int, *args, **kwargs):
    tracer = _STATE.tracer
    if tracer is None:  # another thread's include set cannot leak here, but stay safe
        return op.redispatch(below, *args, **kwargs)
    vargs = tracer.lift(args, mutated_first=op.inplace)
    vkwargs = tracer.lift(kwargs) if kwargs else {}
    # arguments the op declares it may write (besides an in-place op's first): watched through their versions
    watched = [(i, args[i], args[i]._storage.version) for i in op.writes
               if i < len(args) and isinstance(args[i], Tensor)] if op.writes and not op.inplace else ()
    prev = tls.exclude
    tls.exclude = prev | _TRACER_MASK
    try:
        result = op.redispatch(below, *args, **kwargs)
    finally:
        tls.exclude = prev
    if any(t._storage.version != v for _, t, v in watched):
        vargs = list(vargs)
        for i, t, v in watched:
            if t._storage.version != v:  # it was written: a constant is copied first, as for an in-place op
                vargs[i] = tracer.value_of(t, mutated=True)
        vargs = tuple(vargs)
    tracer.record(op.name, vargs, vkwargs, result)
    return result


set_functionality_fallback(Tracer, _tracer_kernel)


class tracing:
    """Context manager: record every op this thread runs into ``tracer``."""

    def __init__(self, tracer: GraphTracer):
        self.tracer = tracer

    def __enter__(self):
        if _STATE.tracer is not None:
            raise TracingError("core.jit.trace() cannot be nested: a trace is already running in this thread")
        from . import ops  # noqa: F401 - registers how graphs run the empty op

        if functionality_fallback(Tracer) is not _tracer_kernel:  # someone replaced it: take the key back
            set_functionality_fallback(Tracer, _tracer_kernel)
        _STATE.tracer = self.tracer
        self._prev = tls.include
        tls.include = self._prev | _TRACER_MASK
        return self.tracer

    def __exit__(self, *exc):
        tls.include = self._prev
        _STATE.tracer = None
        return False
