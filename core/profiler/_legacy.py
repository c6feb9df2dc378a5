"""``torch.autograd.profiler.profile``: one recording, entered and left as a context manager."""

from __future__ import annotations

from ._events import EventList, build_events
from ._recorder import Session
from ._types import ProfilerActivity, ProfilerConfig, ProfilerState, activity_of

__all__ = ["profile"]


class profile:
    """Record this thread's op calls and ``record_function`` blocks inside the ``with`` block
    (``torch.autograd.profiler.profile``); read them with :meth:`key_averages`, :meth:`table`,
    :meth:`export_chrome_trace`. ``use_device`` (or ``use_cuda``) also asks that device's backend for its
    device-time events; ``use_cpu=False`` keeps only those."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False):
        if use_cuda and use_device not in (None, "cuda"):
            raise ValueError(f"profile(): use_cuda=True conflicts with use_device={use_device!r}")
        self.enabled = enabled
        self.use_device = "cuda" if use_cuda else use_device
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.config = ProfilerConfig(ProfilerState.KINETO if use_kineto else ProfilerState.CPU, record_shapes,
                                     profile_memory, with_stack, with_flops, with_modules, experimental_config)
        self.activities = {ProfilerActivity.CPU} | ({activity_of(self.use_device)} if self.use_device else set())
        self.function_events = None
        self.entered = False
        self._session = None

    # -- recording -------------------------------------------------------------------------------------------
    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        session = Session(self.config, self.activities, {self.use_device} if self.use_device else None)
        session.start()
        self._session, self.entered = session, True
        return self

    def __exit__(self, *exc):
        if not self.enabled or self._session is None:
            return False
        self._session.stop()
        events = build_events(self._session)
        if not self.use_cpu:
            events = EventList([e for e in events if e.is_device_event], memory_events=events.memory_events)
        if self.acc_events and self.function_events is not None:
            events = EventList(list(self.function_events) + list(events),
                               memory_events=self.function_events.memory_events + events.memory_events)
        self.function_events = events
        self._session = None
        self.entered = False
        return False

    # -- results ---------------------------------------------------------------------------------------------
    def _check_finish(self) -> None:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Per-name totals (see :meth:`EventList.key_averages`)."""
        self._check_finish()
        if group_by_input_shape and not self.config.report_input_shapes:
            raise RuntimeError("key_averages(group_by_input_shape=True) needs the profile to record_shapes=True")
        if group_by_stack_n > 0 and not self.config.with_stack:
            raise RuntimeError("key_averages(group_by_stack_n>0) needs the profile to run with_stack=True")
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header=None,
              top_level_events_only: bool = False) -> str:
        """The recorded events (not averaged) as a text table (see :meth:`EventList.table`)."""
        self._check_finish()
        return self.function_events.table(sort_by, row_limit, max_src_column_width, max_name_column_width,
                                          max_shapes_column_width, header, top_level_events_only)

    def export_chrome_trace(self, path) -> None:
        """Write the events as Chrome trace-event JSON (see :meth:`EventList.export_chrome_trace`)."""
        self._check_finish()
        self.function_events.export_chrome_trace(path)

    def total_average(self):
        """All events in one average."""
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Every host microseconds recorded, once (the sum of self times)."""
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def __str__(self) -> str:
        self._check_finish()
        return str(self.function_events)
