"""Reference kernels of the fused activation backwards (composites declared with the derivatives: (g, y))."""

from __future__ import annotations

from . import compute_np, operands


def kernels(ctx) -> dict:
    """tanh_backward / sigmoid_backward / relu_backward over ``ctx``: they get (g, y) or (g, x), no spec."""
    xp, wrap = ctx.xp, ctx.wrap
    operand = operands(ctx)

    def fused(fn):
        def kernel(g, y):
            cd = compute_np(g.dtype)
            return wrap(fn(operand(g, cd), operand(y, cd)), g)

        return kernel

    return {"tanh_backward": fused(lambda g, y: g * (1 - y * y)),
            "sigmoid_backward": fused(lambda g, y: g * y * (1 - y)),
            "relu_backward": fused(lambda g, x: xp.where(x > 0, g, 0))}
