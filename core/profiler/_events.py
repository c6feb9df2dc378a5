"""Recorded spans as PyTorch shows them: ``FunctionEvent``, their averages, and ``EventList`` (table, chrome trace).

Times are microseconds (floats), memory bytes, as in ``torch.autograd.profiler_util``.
"""

from __future__ import annotations

import gzip
import json
import os
from collections import OrderedDict

from ..utils.atomic import atomic_write
from ._types import DeviceType, RecordScope

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "Interval", "build_events"]


class Interval:
    """A span's start and end in microseconds (``torch.autograd.profiler_util.Interval``)."""

    def __init__(self, start: float, end: float):
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """Its length in microseconds."""
        return self.end - self.start


class FunctionEvent:
    """One recorded span with its children (``torch.autograd.profiler_util.FunctionEvent``)."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float, input_shapes=None,
                 stack=None, scope: int = 0, device_type: DeviceType = DeviceType.CPU, device_index: int = -1,
                 cpu_memory_usage: int = 0, device_memory_usage: int = 0, flops: int = 0):
        self.id = id
        self.name = name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack or []
        self.scope = scope
        self.device_type = device_type
        self.device_index = device_index
        self.cpu_children: list = []
        self.cpu_parent = None
        self.count = 1
        self.flops = flops
        self._self_cpu_memory = cpu_memory_usage
        self._self_device_memory = device_memory_usage
        self.is_user_annotation = scope == RecordScope.USER_SCOPE

    key = property(lambda self: self.name, doc="What events are grouped by: the name.")
    is_async = False

    @property
    def is_device_event(self) -> bool:
        """Whether a backend reported it as device time (not a host span)."""
        return self.device_type != DeviceType.CPU

    @property
    def cpu_time_total(self) -> float:
        """Host microseconds of the span, its children included (0 for device events)."""
        return 0.0 if self.is_device_event else self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        """Host microseconds of the span less its children's."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self) -> float:
        """Device microseconds (device events only: core does not tie them to the host op that launched them)."""
        return self.time_range.elapsed_us() if self.is_device_event else 0.0

    self_device_time_total = device_time_total
    cpu_time = property(lambda self: self.cpu_time_total / self.count, doc="Mean host microseconds per call.")
    device_time = property(lambda self: self.device_time_total / self.count, doc="Mean device microseconds.")

    @property
    def self_cpu_memory_usage(self) -> int:
        """Host bytes allocated less freed while the span itself (not its children) ran."""
        return self._self_cpu_memory

    @property
    def cpu_memory_usage(self) -> int:
        """Host bytes allocated less freed during the span, children included."""
        return self._self_cpu_memory + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self) -> int:
        """Device bytes allocated less freed while the span itself ran."""
        return self._self_device_memory

    @property
    def device_memory_usage(self) -> int:
        """Device bytes allocated less freed during the span, children included."""
        return self._self_device_memory + sum(c.device_memory_usage for c in self.cpu_children)

    def append_cpu_child(self, child: "FunctionEvent") -> None:
        """Make ``child`` a child span of this one."""
        self.cpu_children.append(child)
        child.cpu_parent = self

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total:.3f}us "
                f"self_cpu_time={self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The totals of the events of one key (``torch.autograd.profiler_util.FunctionEventAvg``)."""

    _SUMMED = ("count", "cpu_time_total", "self_cpu_time_total", "device_time_total", "self_device_time_total",
               "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage",
               "flops")

    def __init__(self):
        self.key = None
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.cpu_parent = None
        self.is_user_annotation = False
        self.device_type = DeviceType.CPU
        for name in self._SUMMED:
            setattr(self, name, 0)

    def add(self, other) -> "FunctionEventAvg":
        """Add an event (or another average) to the totals."""
        if self.key is None:
            self.key, self.input_shapes, self.stack, self.scope = other.key, other.input_shapes, other.stack, \
                other.scope
            self.cpu_parent, self.is_user_annotation = other.cpu_parent, other.is_user_annotation
            self.device_type = other.device_type
        elif other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add(): cannot add an event of key {other.key!r} to {self.key!r}")
        for name in self._SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    __iadd__ = add
    cpu_time = property(lambda self: self.cpu_time_total / max(self.count, 1), doc="Mean host microseconds.")
    device_time = property(lambda self: self.device_time_total / max(self.count, 1), doc="Mean device us.")

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time_total:.3f}us count={self.count} input_shapes={self.input_shapes}>")


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "device_time", "device_time_total",
              "self_device_time_total", "cuda_time", "cuda_time_total", "self_cuda_time_total", "cpu_memory_usage",
              "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage", "cuda_memory_usage",
              "self_cuda_memory_usage", "count", "flops")


class EventList(list):
    """A list of events (``torch.autograd.profiler_util.EventList``): averages, a text table, a chrome trace."""

    def __init__(self, *args, memory_events=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.memory_events = list(memory_events)

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of the events' self host time: every host microsecond the profile recorded, once."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> "EventList":
        """One :class:`FunctionEventAvg` per name (and input shapes / top stack frames when asked), in order of
        first appearance (``EventList.key_averages``)."""
        groups: OrderedDict = OrderedDict()
        for event in self:
            key = (event.key, str(event.input_shapes) if group_by_input_shape else "",
                   tuple(event.stack[:group_by_stack_n]) if group_by_stack_n > 0 else ())
            groups.setdefault(key, FunctionEventAvg()).add(event)
        averages = EventList(groups.values())
        for avg in averages:
            if group_by_stack_n > 0:
                avg.stack = avg.stack[:group_by_stack_n]
            if not group_by_input_shape:
                avg.input_shapes = ""
        averages._grouped = (group_by_input_shape, group_by_stack_n)
        return averages

    def total_average(self) -> FunctionEventAvg:
        """All events added into one average, keyed ``Total``."""
        total = FunctionEventAvg()
        for event in self:
            _add_any(total, event)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """The events as PyTorch's text table, sorted (descending) by ``sort_by`` and cut to ``row_limit`` rows
        (``row_limit <= 0``: all)."""
        from ._table import build_table

        if sort_by is not None and sort_by not in _SORT_KEYS:
            raise AttributeError(f"table(): unknown sort_by {sort_by!r}; expected one of {', '.join(_SORT_KEYS)}")
        grouped = getattr(self, "_grouped", (False, 0))
        return build_table(self, sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           top_level_events_only=top_level_events_only, with_shapes=grouped[0],
                           with_stack=grouped[1] > 0)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path) -> None:
        """Write the events as Chrome trace-event JSON (``chrome://tracing``, Perfetto): complete (``"X"``)
        events with ``ts``/``dur`` in microseconds, memory events as instants; atomically, gzipped for ``.gz``."""
        trace = {"schemaVersion": 1, "traceEvents": chrome_events(self), "displayTimeUnit": "ms"}
        data = json.dumps(trace).encode()
        if os.fspath(path).endswith(".gz"):
            data = gzip.compress(data)
        with atomic_write(path, "wb") as handle:
            handle.write(data)


def _add_any(total: FunctionEventAvg, event) -> None:
    for name in FunctionEventAvg._SUMMED:
        setattr(total, name, getattr(total, name) + getattr(event, name))


_CATEGORY = {RecordScope.USER_SCOPE: "user_annotation", RecordScope.KERNEL_FUNCTION_DTYPE: "kernel"}


def chrome_events(events) -> list:
    """Trace-event dicts for ``events`` and their memory events."""
    pid = os.getpid()
    out = []
    devices = set()
    for e in events:
        on_device = e.is_device_event
        args = {}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.flops:
            args["flops"] = e.flops
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        if on_device:
            args["device"] = e.device_index
        if on_device and (e.device_type, e.device_index) not in devices:  # Kineto's layout: pid = device index
            devices.add((e.device_type, e.device_index))
            out.append({"ph": "M", "name": "process_name", "pid": e.device_index, "tid": 0,
                        "args": {"name": f"{e.device_type.name} {e.device_index}"}})
        out.append({"ph": "X", "cat": _CATEGORY.get(e.scope, "cpu_op"), "name": e.name,
                    "pid": e.device_index if on_device else pid,
                    "tid": 0 if on_device else e.thread, "ts": e.time_range.start,
                    "dur": e.time_range.elapsed_us(), "args": args})
    for time_ns, nbytes, total, device_type, device_index in getattr(events, "memory_events", ()):
        out.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": pid, "tid": 0,
                    "ts": time_ns / 1000, "args": {"Device Type": int(device_type), "Device Id": device_index,
                                                   "Bytes": nbytes, "Total Allocated": total}})
    return out


def build_events(session) -> EventList:
    """The session's spans as :class:`FunctionEvent` s with their parent/child links, in start order."""
    by_record = {}
    events = EventList(memory_events=session.memory_events)
    for i, rec in enumerate(sorted(session.records + session.device_records, key=lambda r: r._start_ns)):
        event = FunctionEvent(i, rec._name, rec._thread, rec._start_ns / 1000, rec._end_ns / 1000,
                              input_shapes=rec._shapes, stack=rec._stack, scope=rec._scope,
                              device_type=rec._device_type, device_index=rec._device_index,
                              cpu_memory_usage=rec.self_memory, device_memory_usage=rec.self_device_memory,
                              flops=rec._flops)
        by_record[id(rec)] = event
        if rec.parent is not None and id(rec.parent) in by_record:
            by_record[id(rec.parent)].append_cpu_child(event)
        events.append(event)
    return events

