"""Graph passes: each takes a :class:`~core.jit.ir.Graph`, rewrites it and returns it.

:func:`optimize` runs the default pipeline on a copy of the graph; every pass
is also usable alone (on ``graph.copy()`` when the original must stay).
"""

from __future__ import annotations

from .constant_fold import constant_fold
from .cse import cse
from .dce import dce
from .epilogue import epilogue
from .functionalize import functionalize
from .fusion import fusion
from .simplify import simplify

__all__ = ["optimize", "pipeline", "PIPELINE", "functionalize", "simplify", "constant_fold", "cse", "dce", "epilogue",
           "fusion"]

# (name, function graph -> graph), in order: make copies/fills pure, simplify algebra, fold constants, merge
# duplicates, drop dead code, fold activations into the GEMMs and convolutions before them, then fuse what is left
# (fusion must see the final, smallest graph).
PIPELINE: list = [("functionalize", functionalize), ("simplify", simplify), ("constant_fold", constant_fold),
                  ("cse", cse), ("dce", dce), ("epilogue", epilogue), ("fusion", fusion)]


def pipeline() -> list:
    """(name, fn) of every pass in order: :data:`PIPELINE` with the passes plugins add (``register_passes``)
    placed before the pass each names."""
    from ...plugins.manager import get_manager

    order = list(PIPELINE)
    for name, fn, before in get_manager().jit_passes(tuple(n for n, _ in PIPELINE)):
        at = next((i for i, (n, _) in enumerate(order) if n == before), len(order))
        order.insert(at, (name, fn))
    return order


def optimize(graph, passes=None):
    """Run ``passes`` (names; default: every pass of :func:`pipeline`) on a copy of ``graph``; validated result."""
    graph = graph.copy()
    for name, run in pipeline():
        if passes is None or name in passes:
            graph = run(graph)
    return graph.validate()
