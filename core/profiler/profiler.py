"""``torch.profiler``: the ``profile`` context manager with a step ``schedule``, and the trace handlers."""

from __future__ import annotations

import os
import socket
import time
import warnings

from ..utils.atomic import atomic_write
from ._legacy import profile as _legacy_profile
from ._types import ProfilerAction, ProfilerActivity, activity_of

__all__ = ["profile", "schedule", "tensorboard_trace_handler", "supported_activities", "kineto_available",
           "is_fbcode", "KinetoStepTracker"]

_PROFILER_STEP = "ProfilerStep"


def kineto_available() -> bool:
    """Whether the Kineto profiling library is there (``torch.profiler.kineto_available``): always False in core,
    whose profiler is its own dispatch-key recorder."""
    return False


def is_fbcode() -> bool:
    """Whether this is Meta's internal build (``torch.profiler.is_fbcode``): never, for core."""
    return False


class KinetoStepTracker:
    """The global step count that several step sources share (``torch.profiler.KinetoStepTracker``): each
    requester (``profile.step``, an optimizer) counts its own steps, and the global step is the largest count."""

    _current_step = 0
    _step_dict: dict = {}

    @classmethod
    def init_step_count(cls, requester: str) -> None:
        """Start counting ``requester``'s steps at the current global step."""
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester: str) -> bool:
        """Stop counting ``requester``; whether it was counted."""
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester: str) -> int:
        """Count one step of ``requester``; the global step after it."""
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        cls._current_step = max(cls._current_step, max(cls._step_dict.values()))
        return cls._current_step

    @classmethod
    def current_step(cls) -> int:
        """The global step."""
        return cls._current_step


def supported_activities() -> set:
    """The activities a profile can record (``torch.profiler.supported_activities``): ``CPU``, plus the device
    activity of each loaded backend whose runtime reports device time (``Runtime.start_profiling``)."""
    from ..backends.api import Runtime
    from ._recorder import _loaded_runtimes

    found = {ProfilerActivity.CPU}
    for runtime in _loaded_runtimes():
        if type(runtime).start_profiling is not Runtime.start_profiling:
            found.add(activity_of(runtime.device_type))
    return found


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """A step -> :class:`ProfilerAction` function (``torch.profiler.schedule``): after ``skip_first`` steps, cycles
    of ``wait`` idle, ``warmup`` warming and ``active`` recording steps (the last ``RECORD_AND_SAVE``),
    ``repeat`` times (0: forever). ``skip_first_wait`` skips the first cycle's wait."""
    for name, value in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                        ("skip_first", skip_first)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"schedule(): {name} must be a non-negative int, got {value!r}")
    if active <= 0:
        raise ValueError(f"schedule(): active must be positive, got {active}")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", UserWarning, stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError(f"schedule: step must be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name: str | None = None, use_gzip: bool = False):
    """An ``on_trace_ready`` handler writing ``<worker_name>.<time in ms>.pt.trace.json[.gz]`` into ``dir_name``
    (``torch.profiler.tensorboard_trace_handler``; the worker name defaults to ``<host>_<pid>``)."""

    def handler_fn(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{name}.{int(time.time() * 1000)}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


class profile:
    """Profile this thread's op calls (``torch.profiler.profile``): a context manager, or ``start()`` /
    ``stop()``, with ``step()`` at each training step when a ``schedule`` decides which steps are recorded;
    ``on_trace_ready(prof)`` runs at the end of each ``RECORD_AND_SAVE`` step (and at ``stop()``)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None, acc_events: bool = False):
        self.activities = set(activities) if activities is not None else supported_activities()
        bad = [a for a in self.activities if not isinstance(a, ProfilerActivity)]
        if bad:
            raise TypeError(f"profile(): activities must be ProfilerActivity values, got {bad[0]!r}")
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.options = dict(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                            with_flops=with_flops, with_modules=with_modules,
                            experimental_config=experimental_config, acc_events=acc_events)
        self.profiler = None  # the autograd profile of the current (or last) recording
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._step_span = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- the step machine (torch.profiler.profile's transitions) ---------------------------------------------
    def start(self) -> None:
        """Begin: act on step 0's action."""
        KinetoStepTracker.init_step_count(_PROFILER_STEP)
        self._transit(ProfilerAction.NONE, self.current_action)
        self._enter_step()

    def stop(self) -> None:
        """End: finish a recording in progress (and hand it to ``on_trace_ready``)."""
        self._leave_step()
        KinetoStepTracker.erase_step_count(_PROFILER_STEP)
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Mark the end of a training step: move to the next step's action."""
        self._leave_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        KinetoStepTracker.increment_step(_PROFILER_STEP)
        self._enter_step()

    def _enter_step(self) -> None:
        if self.record_steps:
            from ._recorder import record_function

            self._step_span = record_function(f"ProfilerStep#{self.step_num}")
            self._step_span.__enter__()

    def _leave_step(self) -> None:
        if self._step_span is not None:
            self._step_span.__exit__(None, None, None)
            self._step_span = None

    def _transit(self, current, following) -> None:
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if current is ProfilerAction.RECORD and following in (ProfilerAction.NONE, ProfilerAction.WARMUP):
            warnings.warn(f"Incorrect schedule: RECORD followed by {following.name}", UserWarning, stacklevel=3)
        if current is ProfilerAction.WARMUP and following is ProfilerAction.NONE:
            warnings.warn("Incorrect schedule: WARMUP followed by NONE", UserWarning, stacklevel=3)
        if current in recording and (following is None or current is ProfilerAction.RECORD_AND_SAVE
                                     or following not in recording):
            self._stop_trace(save=current is ProfilerAction.RECORD_AND_SAVE or following is None)
        if following in recording and self._session_idle():
            self._start_trace()

    def _session_idle(self) -> bool:
        return self.profiler is None or not self.profiler.entered

    def _start_trace(self) -> None:
        self.profiler = _legacy_profile(use_device=None, **self.options)
        self.profiler.activities = set(self.activities)
        self.profiler.__enter__()

    def _stop_trace(self, save: bool) -> None:
        if self.profiler is None or not self.profiler.entered:
            return
        self.profiler.__exit__(None, None, None)
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # -- results ---------------------------------------------------------------------------------------------
    def _finished(self):
        if self.profiler is None:
            raise RuntimeError("profile: nothing was recorded yet (no step reached a RECORD action)")
        self.profiler._check_finish()
        return self.profiler

    def events(self):
        """The recorded events (an :class:`EventList` of ``FunctionEvent``)."""
        return self._finished().function_events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False):
        """Per-name totals of the last recording (see ``EventList.key_averages``)."""
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path) -> None:
        """Write the last recording as Chrome trace-event JSON (``.gz``: gzipped), atomically."""
        self._finished().export_chrome_trace(path)

    def export_stacks(self, path, metric: str = "self_cpu_time_total") -> None:
        """Write ``frame;frame;...;op value`` lines (flame-graph input; needs ``with_stack=True``), ``metric``
        in whole microseconds per event."""
        if not self.options["with_stack"]:
            raise RuntimeError("export_stacks() needs the profile to run with with_stack=True")
        lines = []
        for event in self.events():
            value = int(getattr(event, metric))
            if event.stack and value > 0:
                lines.append(";".join(list(reversed(event.stack)) + [event.name]) + f" {value}\n")
        with atomic_write(path, "w") as handle:
            handle.writelines(lines)
