"""core.jit: trace eager code into a graph, optimise it, fuse elementwise chains, save and load it.

See docs/jit.md. ``trace`` records the dispatcher ops a function or module runs
on example inputs; the result replays the optimised graph, checks its inputs
against the traced shapes (a guard), and differentiates like eager code.
"""

from __future__ import annotations

from .ir import Graph, GraphError, Node, Value
from .tracer import TracingError, is_tracing
from .traced import GuardError, TracedFunction, TracedModule, trace

__all__ = ["trace", "TracedFunction", "TracedModule", "Graph", "Node", "Value", "GraphError", "GuardError",
           "TracingError", "is_tracing"]
from .serialization import SerializationError, load, save
__all__ += ["save", "load", "SerializationError"]
from .export_c import ExportError, export_c  # noqa: E402  (one line per feature, as above)
__all__ += ["export_c", "ExportError"]
