"""Normalisation: the ``batch_norm`` and ``layer_norm`` ops and their one-node derivatives ``batch_norm_backward``
and ``layer_norm_backward``.

All four are composites written in Tensor ops that backends may fuse (cpu_c does); the ``F.batch_norm`` and
``F.layer_norm`` wrappers in ``core/nn/functional/norm.py`` check PyTorch's arguments and call them. The helpers
below are shared with the other normalisations there (instance, group, RMS). The derivative formulas are in
``core/ops/derivatives.py``.
"""

from __future__ import annotations

from ..dispatch.keys import grad_disabled
from ..dispatch import define
from .elementwise import rsqrt
from .reduction import mean, sum

__all__: list = []
METHODS: dict = {}


def per_channel(vector, ndim: int, dtype):
    """A (C,) vector shaped (C, 1, ..., 1) to broadcast against an (N, C, *spatial) input, in its dtype."""
    vector = vector.reshape((vector.numel(),) + (1,) * (ndim - 2))
    return vector if vector.dtype == dtype else vector.to(dtype)


def as_dtype(tensor, dtype):
    return tensor if tensor is None or tensor.dtype == dtype else tensor.to(dtype)


def affine(out, weight, bias, shape_fn):
    """``out * weight + bias`` with each (optional) vector reshaped by ``shape_fn``."""
    if weight is not None:
        out = out * shape_fn(weight)
    if bias is not None:
        out = out + shape_fn(bias)
    return out


def normalise(input, dims):
    """The pieces of ``(input - mean) / sqrt(var)`` over ``dims``: (mean, centred input, biased variance), keepdim."""
    average = mean(input, dims, keepdim=True)
    centred = input - average
    return average, centred, mean(centred * centred, dims, keepdim=True)


def update_running(running, batch_value, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch_value`` in place, outside autograd."""
    with grad_disabled():
        running.mul_(1 - momentum).add_(batch_value.reshape(running.shape).to(running.dtype), alpha=momentum)


# -- normalisation -------------------------------------------------------------------------------------------------
def _batch_norm_parts(input, running_mean, running_var, weight, bias, training, momentum, eps):
    """batch_norm on validated operands; in training the running estimates are updated in place (unbiased var)."""
    ndim, dtype = input.dim(), input.dtype

    def shape(v):
        return per_channel(v, ndim, dtype)

    if training:
        if input.numel() == 0:  # PyTorch returns an empty result and leaves the running statistics alone
            return input.clone()
        dims = (0,) + tuple(range(2, ndim))
        batch_mean, centred, var = normalise(input, dims)
        if running_mean is not None or running_var is not None:
            count = input.numel() // input.shape[1]
            factor = 0.0 if momentum is None else momentum
            if running_mean is not None:
                update_running(running_mean, batch_mean.detach(), factor)
            if running_var is not None:
                update_running(running_var, var.detach() * (count / (count - 1)), factor)
        scale = rsqrt(var + eps)
        if weight is not None:  # fold the weight into the (C,)-sized factor: one fewer full-size op
            scale = scale * shape(weight)
        out = centred * scale
        return out if bias is None else out + shape(bias)
    # evaluation: out = input * scale + shift with per-channel scale and shift
    scale = rsqrt(as_dtype(running_var, dtype) + eps)
    if weight is not None:
        scale = scale * as_dtype(weight, dtype)
    shift = -as_dtype(running_mean, dtype) * scale
    if bias is not None:
        shift = shift + as_dtype(bias, dtype)
    return input * shape(scale) + shape(shift)


batch_norm = define("batch_norm", decomposition=_batch_norm_parts, writes=(1, 2),
                    doc="batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps): "
                        "per-channel (x - mean) / sqrt(var + eps) * weight + bias of an (N, C, *) input; "
                        "training uses the batch statistics (biased variance) and updates running_mean and "
                        "running_var in place (unbiased variance; each may be None), evaluation uses them. A "
                        "composite with its own derivative that backends may fuse")


def _batch_norm_backward_parts(grad, input, running_mean, running_var, weight, training, eps, output_mask):
    """(grad_input, grad_weight, grad_bias) of batch_norm, each None where ``output_mask`` says so. Training
    recomputes the batch statistics from the input, evaluation reads the running ones; written in Tensor ops, so it
    is differentiable itself (double backward)."""
    ndim, dtype = input.dim(), input.dtype
    dims = (0,) + tuple(range(2, ndim))
    if training:
        _, centred, var = normalise(input, dims)
        rstd = rsqrt(var + eps)
    else:
        centred = input - per_channel(running_mean, ndim, dtype)
        rstd = per_channel(rsqrt(as_dtype(running_var, dtype) + eps), ndim, dtype)
    normalised = centred * rstd
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        g_normalised = grad if weight is None else grad * per_channel(weight, ndim, dtype)
        if training:
            g_normalised = (g_normalised - mean(g_normalised, dims, keepdim=True)
                            - normalised * mean(g_normalised * normalised, dims, keepdim=True))
        grad_input = g_normalised * rstd
    if output_mask[1]:
        grad_weight = sum(grad * normalised, dims)
    if output_mask[2]:
        grad_bias = sum(grad, dims)
    return grad_input, grad_weight, grad_bias


batch_norm_backward = define(
    "batch_norm_backward", decomposition=_batch_norm_backward_parts,
    doc="batch_norm_backward(grad, input, running_mean, running_var, weight, training, eps, output_mask): "
        "(grad_input, grad_weight, grad_bias) of batch_norm, each None where the 3-bool output_mask is False "
        "(grad_weight and grad_bias of shape (C,)). Training recomputes the batch statistics from input; evaluation "
        "uses the running ones. A composite (differentiable for double backward) that backends may fuse")



def _layer_norm_parts(input, normalized_shape, weight, bias, eps):
    _, centred, var = normalise(input, tuple(range(-len(normalized_shape), 0)))
    return affine(centred * rsqrt(var + eps), weight, bias, lambda v: as_dtype(v, input.dtype))


layer_norm = define("layer_norm", decomposition=_layer_norm_parts,
                    doc="layer_norm(input, normalized_shape, weight, bias, eps): (x - mean) / sqrt(var + eps) "
                        "over the trailing dims normalized_shape (a tuple; biased variance), then * weight + "
                        "bias (each None or of shape normalized_shape); a composite with its own derivative "
                        "that backends may fuse")


def _layer_norm_backward_parts(grad, input, normalized_shape, weight, bias, eps, output_mask):
    """(grad_input, grad_weight, grad_bias) of layer_norm, each None where ``output_mask`` says so. The statistics
    are recomputed from the input; written in Tensor ops, so it is differentiable itself (double backward)."""
    dims = tuple(range(-len(normalized_shape), 0))
    leading = tuple(range(input.dim() - len(normalized_shape)))
    _, centred, var = normalise(input, dims)
    rstd = rsqrt(var + eps)
    normalised = centred * rstd
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        g_normalised = grad if weight is None else grad * as_dtype(weight, input.dtype)
        grad_input = (g_normalised - mean(g_normalised, dims, keepdim=True)
                      - normalised * mean(g_normalised * normalised, dims, keepdim=True)) * rstd
    if output_mask[1]:
        grad_weight = grad * normalised
        grad_weight = sum(grad_weight, leading) if leading else grad_weight
    if output_mask[2]:
        grad_bias = sum(grad, leading) if leading else grad
    return grad_input, grad_weight, grad_bias


layer_norm_backward = define(
    "layer_norm_backward", decomposition=_layer_norm_backward_parts,
    doc="layer_norm_backward(grad, input, normalized_shape, weight, bias, eps, output_mask): (grad_input, "
        "grad_weight, grad_bias) of layer_norm, each None where the 3-bool output_mask is False (grad_weight and "
        "grad_bias of shape normalized_shape). A composite (differentiable for double backward) that backends may "
        "fuse")
