"""``linear`` and ``bilinear``.

``linear`` checks PyTorch's arguments and calls the ``linear`` op (declared, with its decomposition, in
``core/ops/linalg.py``; its derivative is in ``core/ops/derivatives.py``).
"""

from __future__ import annotations

from ... import ops
from ...ops.linalg import linear as linear_op

__all__ = ["linear", "bilinear"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` (``torch.nn.functional.linear``)."""
    if input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(f"linear(): mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, input.shape))} and {weight.shape[1]}x{weight.shape[0]})")
    return linear_op(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """``x1ᵀ A x2 + b`` for each output feature (``torch.nn.functional.bilinear``)."""
    out = ops.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
