"""Fused activation derivatives (core.ops.derivatives): ``tanh_backward(g, y)``, ``sigmoid_backward(g, y)``,
``relu_backward(g, x)``, composites with optional kernels (no spec), generated C loops like the elementwise family's
(renderer.py)."""

from __future__ import annotations

from core.backends.api import Kernel

from .elementwise import DERIVATIVES as OPS
from .elementwise import composite, min_numel

__all__ = ["kernels", "OPS"]


def kernels(ctx) -> dict:
    """{op: Kernel}, sized as the elementwise ops (:func:`.elementwise.min_numel`)."""
    sized = min_numel(ctx)
    return {op: Kernel(composite(ctx, op, base), min_numel=sized)
            for op in OPS if (base := ctx.reference(op)) is not None}
