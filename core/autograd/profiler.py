"""``torch.autograd.profiler``: the autograd profiler's names, served by ``core.profiler``'s recorder."""

from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler._legacy import profile
from ..profiler._recorder import record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]
