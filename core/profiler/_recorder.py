"""Recording spans: the ``Profiler`` dispatch key's kernel, ``record_function`` blocks and memory events.

A :class:`Session` puts ``Profiler`` into its thread's included key set while it runs, so every operator call
reaches :func:`_profiler_kernel`, which opens a span, runs the op below itself (Autograd, then the backend)
and closes the span. The key stays included during the call, so the ops a composite calls are recorded as its
children: a span's self time is its time less its children's. Outside a session the key is simply not in the
include set: the dispatcher never sees the profiler (zero cost).

With ``profile_memory``, each new storage an op returns (one that no input and no earlier op of this session
returned) counts as allocated by that op; a weak reference reports its release, counted against the span open
when it dies (or a top-level ``[memory]`` span).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import traceback
import weakref

from ..dispatch.keys import Profiler, tls
from ..dispatch.operator import functionality_fallback, set_functionality_fallback
from ._types import DeviceType, ProfilerConfig, ProfilerState, RecordScope, activity_of, device_type_of

__all__ = ["ProfilerEvent", "Session", "record_function", "current_session"]

_PROFILER_MASK = Profiler.mask
_CORE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ProfilerEvent:
    """One recorded span: an op call, a ``record_function`` block, a memory event or a backend's device event
    (``torch.autograd.ProfilerEvent``; read it through its methods)."""

    __slots__ = ("_name", "_start_ns", "_end_ns", "_thread", "_shapes", "_scope", "_device_type", "_device_index",
                 "_stack", "_flops", "self_memory", "self_device_memory", "parent", "children")

    def __init__(self, name: str, start_ns: int, thread: int, shapes=None, scope: RecordScope = RecordScope.FUNCTION,
                 device_type: DeviceType = DeviceType.CPU, device_index: int = -1):
        self._name = name
        self._start_ns = self._end_ns = start_ns
        self._thread = thread
        self._shapes = shapes if shapes is not None else []
        self._scope = scope
        self._device_type = device_type
        self._device_index = device_index
        self._stack = []
        self._flops = 0
        self.self_memory = 0  # bytes of host memory allocated (less freed) while this span itself ran
        self.self_device_memory = 0  # the same for device memory
        self.parent = None
        self.children = []

    def name(self) -> str:
        """The span's name (``aten::<op>`` for an op call)."""
        return self._name

    def thread_id(self) -> int:
        """The id of the thread that recorded it."""
        return self._thread

    def start_us(self) -> float:
        """When it began, in microseconds (``time.perf_counter_ns`` clock)."""
        return self._start_ns / 1000

    def duration_us(self) -> float:
        """How long it lasted, in microseconds."""
        return (self._end_ns - self._start_ns) / 1000

    def cpu_elapsed_us(self, other: "ProfilerEvent") -> float:
        """Microseconds from this event's start to ``other``'s start."""
        return (other._start_ns - self._start_ns) / 1000

    def shapes(self) -> list:
        """The input shapes (recorded with ``record_shapes``): a list per tensor, ``[]`` for other arguments."""
        return self._shapes

    def cpu_memory_usage(self) -> int:
        """Host bytes allocated less freed while the span itself ran (``profile_memory``)."""
        return self.self_memory

    def device(self) -> int:
        """The device index of a device event; -1 for host spans."""
        return self._device_index

    def scope(self) -> int:
        """Its :class:`RecordScope`."""
        return int(self._scope)

    def __repr__(self) -> str:
        return f"<ProfilerEvent {self._name} {self.duration_us():.3f}us>"


class _State(threading.local):
    def __init__(self):
        self.session = None


_STATE = _State()


def current_session():
    """The session recording in this thread, or None."""
    return _STATE.session


def _shape_of(arg) -> list:
    if hasattr(arg, "_storage"):
        return list(arg._shape)
    if arg.__class__ in (list, tuple) and arg and all(hasattr(a, "_storage") for a in arg):
        return [list(a._shape) for a in arg]
    return []


def _storages(obj, out: list) -> list:
    if hasattr(obj, "_storage"):
        out.append(obj._storage)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _storages(item, out)
    return out


def _flops(name: str, args: tuple, result, parent) -> int:
    """Multiply-adds counted as two FLOPs, for the ops PyTorch counts (matmul and convolution); a matmul inside a
    convolution's decomposition counts nothing (the convolution counted it)."""
    if name == "batched_matmul" and hasattr(result, "_shape"):
        while parent is not None:
            if parent._name == "aten::convolution":
                return 0
            parent = parent.parent
        k = args[0]._shape[-1] if args[0]._shape else 1
        return 2 * _numel(result._shape) * k
    if name == "convolution" and hasattr(result, "_shape"):
        weight = args[1]
        return 2 * _numel(result._shape) * _numel(weight._shape[1:])  # in_channels/groups * kernel per output
    return 0


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _user_stack() -> list:
    """The Python frames of the caller outside core, innermost first, as ``file(line): function``."""
    frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_CORE_DIR)]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)]


class Session:
    """One recording in the current thread: spans, memory events and the device events of the backends asked."""

    def __init__(self, config: ProfilerConfig, activities=None, device_types=None):
        if config.state is ProfilerState.Disabled:
            raise RuntimeError("profiler: cannot start a session whose ProfilerConfig state is Disabled")
        self.config = config
        self.activities = set(activities) if activities is not None else None
        self.device_types = set(device_types) if device_types is not None else None  # None: every device type
        self.records: list = []
        self.memory_events: list = []  # (time_ns, bytes, total allocated, device_type, device_index)
        self.device_records: list = []
        self.stack: list = []
        self.thread = threading.get_ident()
        self.active = False
        self._runtimes: list = []
        self._accounted = weakref.WeakSet()
        self._live: dict = {}
        self._allocated = 0

    # -- on and off ----------------------------------------------------------------------------------------
    def start(self) -> None:
        """Begin recording this thread's op calls (and ask backends to record device time)."""
        if _STATE.session is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        if functionality_fallback(Profiler) is not _profiler_kernel:
            set_functionality_fallback(Profiler, _profiler_kernel)
        self._runtimes = [rt for rt in _loaded_runtimes() if self._wants(rt) and rt.start_profiling()]
        self.active = True
        _STATE.session = self
        tls.include |= _PROFILER_MASK

    def stop(self) -> None:
        """Stop recording; spans still open (a ``record_function`` not yet left) end now."""
        tls.include &= ~_PROFILER_MASK
        _STATE.session = None
        self.active = False
        now = time.perf_counter_ns()
        while self.stack:
            self.stack.pop()._end_ns = now
        for runtime in self._runtimes:
            self._add_device_events(runtime, runtime.stop_profiling())
        self._runtimes = []
        self._live.clear()  # the weak references die with it: later releases are not reported

    def _wants(self, runtime) -> bool:
        return (self.activities is None or activity_of(runtime.device_type) in self.activities) and \
            (self.device_types is None or runtime.device_type in self.device_types)

    def _add_device_events(self, runtime, events) -> None:
        kind = device_type_of(runtime.device_type)
        for event in events:
            start_ns = int(event.start_us * 1000)
            rec = ProfilerEvent(event.name, start_ns, 0, scope=RecordScope.KERNEL_FUNCTION_DTYPE, device_type=kind,
                                device_index=event.device_index)
            rec._end_ns = start_ns + int(event.duration_us * 1000)
            self.device_records.append(rec)

    # -- spans -----------------------------------------------------------------------------------------------
    def open(self, name: str, args=(), kwargs=None, scope: RecordScope = RecordScope.FUNCTION) -> ProfilerEvent:
        """Open a span (its parent is the innermost open span)."""
        shapes = None
        if self.config.report_input_shapes:
            shapes = [_shape_of(a) for a in args]
            if kwargs:
                shapes.extend(_shape_of(v) for v in kwargs.values())
        rec = ProfilerEvent(name, 0, self.thread, shapes, scope)
        if self.config.with_stack:
            rec._stack = _user_stack()
        if self.stack:
            rec.parent = self.stack[-1]
            rec.parent.children.append(rec)
        self.records.append(rec)
        self.stack.append(rec)
        rec._start_ns = rec._end_ns = time.perf_counter_ns()
        return rec

    def close(self, rec: ProfilerEvent) -> None:
        """Close ``rec`` (and any span opened inside it and left open)."""
        now = time.perf_counter_ns()
        if rec not in self.stack:
            return
        while self.stack:
            top = self.stack.pop()
            top._end_ns = now
            if top is rec:
                break

    def spanned(self, name: str, fn):
        """``fn`` recording each call as a span ``name`` (input shapes and new storages as for an op): for work
        that bypasses the dispatcher, such as a JIT fused kernel."""

        def call(*args, **kwargs):
            rec = self.open(name, args, kwargs)
            try:
                result = fn(*args, **kwargs)
                if self.config.profile_memory:
                    self.count_outputs(rec, args, kwargs, result)
            finally:
                self.close(rec)
            return result

        return call

    # -- memory ----------------------------------------------------------------------------------------------
    def count_outputs(self, rec: ProfilerEvent, args: tuple, kwargs: dict, result) -> None:
        """Count the new storages among ``result``'s tensors as allocated by ``rec``."""
        inputs = {id(s) for s in _storages(args, [])}
        if kwargs:
            inputs.update(id(s) for s in _storages(tuple(kwargs.values()), []))
        for storage in _storages(result, []):
            if id(storage) in inputs or storage in self._accounted:
                continue
            self._accounted.add(storage)
            ref = weakref.ref(storage, self._released)
            self._live[id(ref)] = (ref, storage.nbytes, storage.device)
            self._memory(storage.nbytes, storage.device, rec)

    def _released(self, ref) -> None:
        entry = self._live.pop(id(ref), None)
        if entry is not None and self.active:
            self._memory(-entry[1], entry[2], self.stack[-1] if self.stack else None)

    def _memory(self, nbytes: int, device, rec) -> None:
        if rec is None:  # released outside any span: a top-level [memory] span, as in PyTorch
            rec = ProfilerEvent("[memory]", time.perf_counter_ns(), self.thread, [] if
                                self.config.report_input_shapes else None)
            self.records.append(rec)
        on_host = device.type == "cpu"
        if on_host:
            rec.self_memory += nbytes
        else:
            rec.self_device_memory += nbytes
        self._allocated += nbytes
        self.memory_events.append((time.perf_counter_ns(), nbytes, self._allocated, device_type_of(device.type),
                                   -1 if on_host else (device.index or 0)))


def _profiler_kernel(op, below: int, *args, **kwargs):
    session = _STATE.session
    if session is None:  # another thread's include set cannot leak here, but stay safe
        return op.redispatch(below, *args, **kwargs)
    rec = session.open("aten::" + op.name, args, kwargs)
    try:
        result = op.redispatch(below, *args, **kwargs)
        if session.config.profile_memory:
            session.count_outputs(rec, args, kwargs, result)
        if session.config.with_flops:
            rec._flops = _flops(op.name, args, result, rec.parent)
    finally:
        session.close(rec)
    return result


def _loaded_runtimes() -> list:
    """The runtimes of the backends loaded so far (profiling never loads a backend)."""
    from ..plugins.manager import _MANAGER

    if not _MANAGER:
        return []
    return [info.instance for info in _MANAGER[0].backends.values()
            if info.status == "loaded" and info.instance is not None and hasattr(info.instance, "start_profiling")]


class record_function(contextlib.ContextDecorator):
    """Label a block (or, as a decorator, each call of a function) with ``name``: its own span in the profile,
    the parent of the ops it runs (``torch.profiler.record_function`` / ``torch.autograd.profiler.record_function``).
    Outside a profile it costs a check and records nothing."""

    def __init__(self, name: str, args: str | None = None):
        if not isinstance(name, str):
            raise TypeError(f"record_function(): name must be a str, got {type(name).__name__}")
        self.name = name
        self.args = args
        self._spans: list = []  # (session, span) per entry still open, so a decorator can nest

    def __enter__(self):
        session = _STATE.session
        span = session.open(self.name, scope=RecordScope.USER_SCOPE) if session is not None else None
        self._spans.append((session, span))
        return self

    def __exit__(self, *exc):
        session, span = self._spans.pop()
        if span is not None and session.active:
            session.close(span)
        return False

    def _recreate_cm(self):
        return record_function(self.name, self.args)  # each decorated call gets its own spans

