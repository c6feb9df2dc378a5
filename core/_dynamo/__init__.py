"""``core._dynamo``: the names PyTorch users reach for under ``torch._dynamo`` (``reset``, ``config``, ``exc``).

``core.compile`` is built on ``core.jit``'s tracer, not on a bytecode interpreter; this package holds its
settings, errors and the dynamic-shape marks (see docs/jit.md, "core.compile").
"""

from __future__ import annotations

from . import config, exc

__all__ = ["config", "exc", "reset", "list_backends", "mark_dynamic", "maybe_mark_dynamic"]


def reset() -> None:
    """Forget every compiled graph and one-time warning (``torch._dynamo.reset``)."""
    from ..compiler import reset as compiler_reset

    compiler_reset()


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """Names of the ``core.compile`` backends, without the tagged ones (``torch._dynamo.list_backends``)."""
    from ..compiler import list_backends as compiler_list_backends

    return compiler_list_backends(exclude_tags)


def _dims(t, index, caller: str) -> list:
    dims = list(index) if isinstance(index, (list, tuple)) else [index]
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or not -t.dim() <= d < t.dim():
            raise IndexError(f"{caller}: dimension {d!r} out of range for a tensor of {t.dim()} dimensions "
                             f"(shape {list(t.shape)})")
    return [d % t.dim() for d in dims]


def mark_dynamic(t, index) -> None:
    """Mark dimension(s) ``index`` of ``t`` dynamic (``torch._dynamo.mark_dynamic``): a compiled function called
    with ``t`` makes one graph for every size of that dimension from its first call (sizes 0 and 1 excepted)."""
    dims = _dims(t, index, "mark_dynamic")
    t._dynamo_dynamic_indices = set(getattr(t, "_dynamo_dynamic_indices", ())) | set(dims)


def maybe_mark_dynamic(t, index) -> None:
    """``torch._dynamo.maybe_mark_dynamic``: as :func:`mark_dynamic` (here a dimension is dynamic only while its
    traces agree, so every mark is a "maybe")."""
    mark_dynamic(t, index)
