"""Normalisation, dropout and embedding functionals."""

from __future__ import annotations

from ... import ops

__all__ = ["dropout", "layer_norm"]


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero elements with probability ``p`` and scale the rest by 1/(1-p) while training."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        keep = ops.empty_like(input).bernoulli_(1 - p)
        out = input * keep / (1 - p)
    return input.copy_(out) if inplace else out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then scale and shift."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[-len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, "
                           f"{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    dims = tuple(range(-len(shape), 0))
    mean = ops.mean(input, dims, keepdim=True)
    centred = input - mean
    var = ops.mean(centred * centred, dims, keepdim=True)
    out = centred * ops.rsqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out
