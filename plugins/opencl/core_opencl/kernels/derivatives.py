"""Derivative helpers declared in core.ops.derivatives: ``tanh_backward`` and ``sigmoid_backward``."""

from __future__ import annotations

from ._common import new_tensor
from .elementwise import BINARY, run_elementwise

__all__ = ["kernels"]

_FLOATS = ("float32", "float64")


def _activation_backward(op: str):
    def kernel(grad, output):
        if grad.dtype.name not in _FLOATS or grad._shape != output._shape or grad.dtype is not output.dtype:
            return NotImplemented
        return run_elementwise(op, BINARY[op], new_tensor(grad._shape, grad.dtype, grad.device), [grad, output],
                               grad.dtype)

    return kernel


def kernels(runtime) -> dict:
    """The derivatives family: op name -> kernel."""
    return {op: _activation_backward(op) for op in ("tanh_backward", "sigmoid_backward")}
