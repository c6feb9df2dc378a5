"""Activations and softmax (numerically stable)."""

from __future__ import annotations

from ... import ops

__all__ = ["relu", "softmax", "log_softmax"]


def _dim(input, dim):
    if dim is None:  # PyTorch's legacy implicit dim
        return 0 if input.dim() in (0, 1, 3) else 1
    return dim


def relu(input, inplace: bool = False):
    """max(x, 0) (``torch.nn.functional.relu``)."""
    out = ops.clamp(input, min=0)
    return input.copy_(out) if inplace else out


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """exp(x - max) / sum(exp(x - max)) along ``dim``."""
    dim = _dim(input, dim)
    if dtype is not None:
        input = input.to(dtype)
    shifted = input - ops.amax(input, dim, keepdim=True).detach()
    e = ops.exp(shifted)
    return e / ops.sum(e, dim, keepdim=True)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """x - logsumexp(x) along ``dim``."""
    dim = _dim(input, dim)
    if dtype is not None:
        input = input.to(dtype)
    shifted = input - ops.amax(input, dim, keepdim=True).detach()
    return shifted - ops.log(ops.sum(ops.exp(shifted), dim, keepdim=True))
