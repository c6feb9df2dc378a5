"""Fused activation derivatives (core.ops.derivatives): ``tanh_backward(g, y)``, ``sigmoid_backward(g, y)``,
``relu_backward(g, x)``, generated C loops like the elementwise family's (renderer.py)."""

from __future__ import annotations

from core.backends.api import Kernel

from .elementwise import c_entries, min_numel, run

__all__ = ["kernels"]

OPS = ("tanh_backward", "sigmoid_backward", "relu_backward")


def _activation_backward(ctx, op: str, base):
    """tanh_backward(g, y) / sigmoid_backward(g, y) / relu_backward(g, x): composites with optional kernels (no
    spec)."""
    entries = c_entries(ctx, op)

    def kernel(g, y):
        entry = entries.get(g.dtype.name)
        out = None
        if entry is not None and g._shape == y._shape:
            out = run(ctx, op, entry, g._shape, g.dtype, (g.dtype, g.dtype), (g, y))
        return base(g, y) if out is None else out

    return kernel


def kernels(ctx) -> dict:
    """{op: Kernel}, sized as the elementwise ops (:func:`.elementwise.min_numel`)."""
    sized = min_numel(ctx)
    return {op: Kernel(_activation_backward(ctx, op, base), min_numel=sized)
            for op in OPS if (base := ctx.reference(op)) is not None}
