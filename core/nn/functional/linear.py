"""``linear`` and ``bilinear``."""

from __future__ import annotations

from ... import ops
from ...dispatch import define
from ...ops.derivatives import derivative

__all__ = ["linear", "bilinear"]


def _linear_parts(input, weight, bias):
    out = ops.matmul(input, weight.t())
    return out if bias is None else out + bias


_linear_op = define("linear", decomposition=_linear_parts,
                    doc="linear(input, weight, bias): input @ weight.T + bias over the last dim of input; "
                        "bias may be None. A composite that backends may fuse")


@derivative("linear")
def _linear_derivative(ctx, g):
    """One node per linear layer; the weight's gradient is computed as ``g.T @ input``, already in the weight's
    (contiguous) layout, so the engine can hand it to ``.grad`` without a copy."""
    input, weight, bias = ctx.input(0), ctx.input(1), ctx.args[2]
    grad_input = ops.matmul(g, weight) if input.requires_grad else None
    rows = g.reshape(-1, g.shape[-1]) if weight.requires_grad or bias is not None else None
    grad_weight = ops.matmul(rows.t(), input.reshape(-1, input.shape[-1])) if weight.requires_grad else None
    grad_bias = rows.sum(0) if bias is not None and bias.requires_grad else None
    return grad_input, grad_weight, grad_bias


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` (``torch.nn.functional.linear``)."""
    if input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(f"linear(): mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, input.shape))} and {weight.shape[1]}x{weight.shape[0]})")
    return _linear_op(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """``x1ᵀ A x2 + b`` for each output feature (``torch.nn.functional.bilinear``)."""
    out = ops.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
