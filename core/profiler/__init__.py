"""Profiling (``torch.profiler``): per-op host time, call counts, input shapes, memory and backend device time.

Recording is the ``Profiler`` dispatch key (``core/profiler/_recorder.py``): a profile block puts it into its
thread's included key set, so every op call is timed; outside a block nothing on the hot path changes.
"""

from ._events import EventList, FunctionEvent, FunctionEventAvg
from ._recorder import record_function
from ._types import DeviceType, ProfilerAction, ProfilerActivity, RecordScope
from .profiler import (KinetoStepTracker, is_fbcode, kineto_available, profile, schedule, supported_activities,
                       tensorboard_trace_handler)

__all__ = ["profile", "schedule", "record_function", "tensorboard_trace_handler", "supported_activities",
           "kineto_available", "ProfilerActivity", "ProfilerAction", "DeviceType", "RecordScope", "EventList",
           "FunctionEvent", "FunctionEventAvg", "KinetoStepTracker", "is_fbcode"]
