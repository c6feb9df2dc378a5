"""``core._dynamo``: the names PyTorch users reach for under ``torch._dynamo`` (``reset``, ``config``, ``exc``).

``core.compile`` is built on ``core.jit``'s tracer, not on a bytecode interpreter; this package only holds its
settings and errors (see docs/jit.md, "core.compile").
"""

from __future__ import annotations

from . import config, exc

__all__ = ["config", "exc", "reset", "list_backends"]


def reset() -> None:
    """Forget every compiled graph and one-time warning (``torch._dynamo.reset``)."""
    from ..compiler import reset as compiler_reset

    compiler_reset()


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """Names of the ``core.compile`` backends, without the tagged ones (``torch._dynamo.list_backends``)."""
    from ..compiler import list_backends as compiler_list_backends

    return compiler_list_backends(exclude_tags)
