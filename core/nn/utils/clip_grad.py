"""Gradient clipping by total norm or by value (``torch.nn.utils.clip_grad``)."""

from __future__ import annotations

import functools
import types
import warnings

from ... import ops
from ...autograd import no_grad
from ...tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _no_grad(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with no_grad():
            return fn(*args, **kwargs)
    return wrapper


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


@_no_grad
def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` seen as one vector (``torch.nn.utils.get_total_norm``).

    ``foreach`` is accepted for compatibility; the per-tensor norms are always computed one by one.
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ops.tensor(0.0)
    first_device = tensors[0].device
    norms = [ops.norm(t.reshape(-1), norm_type).to(first_device) for t in tensors]
    total_norm = ops.norm(ops.stack(norms), norm_type)
    if error_if_nonfinite and not bool(ops.isfinite(total_norm).item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total_norm


@_no_grad
def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale the gradients by ``min(1, max_norm / (total_norm + 1e-6))`` (``torch.nn.utils.clip_grads_with_norm_``)."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    # multiply even when the coefficient is 1: no data-dependent branch, hence no device synchronisation
    coefficient = ops.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
    for grad in grads:
        grad.mul_(coefficient.to(grad.device))


@_no_grad
def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Rescale gradients in place so their total ``norm_type``-norm is at most ``max_norm``; returns the total norm
    before clipping (``torch.nn.utils.clip_grad_norm_``)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)  # a generator would be exhausted by the first pass
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn("`core.nn.utils.clip_grad_norm` is now deprecated in favor of `core.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient into ``[-clip_value, clip_value]`` in place (``torch.nn.utils.clip_grad_value_``)."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
