"""``linear`` and ``bilinear``."""

from __future__ import annotations

from ... import ops
from ...dispatch import define

__all__ = ["linear", "bilinear"]


def _linear_parts(input, weight, bias):
    out = ops.matmul(input, weight.t())
    return out if bias is None else out + bias


_linear_op = define("linear", decomposition=_linear_parts,
                    doc="linear(input, weight, bias): input @ weight.T + bias over the last dim of input; "
                        "bias may be None. A composite that backends may fuse")


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
