"""Helpers shared by the distributions (``torch.distributions.utils``)."""

from __future__ import annotations

import numbers

import core

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs", "lazy_property"]


def broadcast_all(*values):
    """The arguments as tensors of one broadcast shape (``torch.distributions.utils.broadcast_all``): numbers take
    the dtype and device of the tensor arguments (the default dtype when there is none)."""
    if not all(isinstance(v, (core.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or torch.tensor.")
    tensors = [v for v in values if isinstance(v, core.Tensor)]
    dtype = tensors[0].dtype if tensors else core.get_default_dtype()
    device = tensors[0].device if tensors else None
    if dtype.is_floating_point is False:
        dtype = core.get_default_dtype()
    values = [v if isinstance(v, core.Tensor) else core.tensor(float(v), dtype=dtype, device=device) for v in values]
    return tuple(core.broadcast_tensors(*values))


def clamp_probs(probs):
    """``probs`` clamped into ``[eps, 1 - eps]`` of its dtype (``torch.distributions.utils.clamp_probs``)."""
    eps = core.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities from logits: sigmoid when ``is_binary``, else softmax over the last dim
    (``torch.distributions.utils.logits_to_probs``)."""
    return core.sigmoid(logits) if is_binary else core.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits from probabilities: ``log(p) - log1p(-p)`` when ``is_binary``, else ``log(p)``, with ``p`` clamped
    away from 0 and 1 (``torch.distributions.utils.probs_to_logits``)."""
    p = clamp_probs(probs)
    return core.log(p) - core.log1p(-p) if is_binary else core.log(p)


class lazy_property:
    """A property computed on first access and then stored on the instance
    (``torch.distributions.utils.lazy_property``)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with core.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
