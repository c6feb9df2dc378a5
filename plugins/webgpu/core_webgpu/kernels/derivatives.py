"""Derivative helpers declared in core.ops.derivatives: ``tanh_backward``, ``sigmoid_backward`` (from the output y)
and ``relu_backward`` (from the input x), each one elementwise kernel over ``(g, y or x)``."""

from __future__ import annotations

from .elementwise import BINARY, fresh, like

__all__ = ["kernels"]

_TEMPLATES = {"tanh_backward": BINARY["tanh_backward"], "sigmoid_backward": BINARY["sigmoid_backward"],
              "relu_backward": "{s:b > 0;a;{c:0}}"}  # 0 where x is NaN, as the composite


def _backward(op: str):
    def kernel(grad, other):
        if not grad.dtype.is_floating_point or grad._shape != other._shape or grad.dtype is not other.dtype:
            return NotImplemented
        return fresh(like(grad), op, _TEMPLATES[op], [grad, other])

    return kernel


def kernels(runtime) -> dict:
    """The derivatives family: op name -> kernel."""
    return {op: _backward(op) for op in _TEMPLATES}
