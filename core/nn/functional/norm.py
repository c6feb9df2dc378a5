"""Normalisation, dropout, embedding and distance functionals, written in Tensor ops (autograd is automatic).

``batch_norm`` and ``layer_norm`` check PyTorch's arguments and call the ops of the same names (declared, with their
decompositions and backward ops, in ``core/ops/normalization.py``; their derivatives are in
``core/ops/derivatives.py``).
"""

from __future__ import annotations

import math
import numbers
import warnings

from ... import dtypes as dt, ops
from ...autograd import no_grad
from ...ops import nn_functions, normalization as norm_ops
from ...ops.normalization import affine, as_dtype, normalise, per_channel, update_running

__all__ = ["batch_norm", "instance_norm", "group_norm", "layer_norm", "rms_norm", "local_response_norm",
           "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
           "embedding", "embedding_bag", "one_hot", "normalize", "pairwise_distance", "pdist", "cosine_similarity"]


# -- shared helpers ------------------------------------------------------------------------------------------------
def _verify_batch_size(size) -> None:
    values = size[0]
    for s in size[2:]:
        values *= s
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _verify_spatial_size(size) -> None:
    values = 1
    for s in size[2:]:
        values *= s
    if values == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def _check_numel(name: str, tensor, expected: int, scale: int = 1) -> None:
    if tensor is not None and tensor.numel() * scale != expected:
        raise RuntimeError(f"{name} should contain {expected} elements not {tensor.numel() * scale}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    """Per-channel normalisation over (N, *spatial) (``torch.nn.functional.batch_norm``).

    Training normalises with the batch's biased variance and updates the running estimates in place with the
    unbiased one, as PyTorch does; evaluation normalises with the running estimates.
    """
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got 1): batch_norm "
                         f"expects input of shape (N, C, *), but got input of size {list(input.shape)}")
    if training:
        _verify_batch_size(list(input.shape))
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    channels = input.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        _check_numel(name, t, channels)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    return norm_ops.batch_norm(input, running_mean, running_var, weight, bias, bool(training), momentum, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5):
    """Normalise each (sample, channel) plane over its spatial dims (``torch.nn.functional.instance_norm``)."""
    if input.dim() < 2:
        raise IndexError(f"instance_norm expects input of shape (N, C, *), but got input of size "
                         f"{list(input.shape)}")
    if use_input_stats:
        _verify_spatial_size(list(input.shape))
    batch, channels = input.shape[0], input.shape[1]
    # PyTorch runs batch_norm on a (1, N*C, *) view with the running statistics repeated N times
    _check_numel("running_mean", running_mean, batch * channels, scale=batch)
    _check_numel("running_var", running_var, batch * channels, scale=batch)
    _check_numel("weight", weight, batch * channels, scale=batch)
    _check_numel("bias", bias, batch * channels, scale=batch)
    ndim, dtype = input.dim(), input.dtype

    def shape(v):
        return per_channel(v, ndim, dtype)

    if use_input_stats:
        dims = tuple(range(2, ndim))
        mean, centred, var = normalise(input, dims)
        count = input.numel() // max(batch * channels, 1)
        factor = 0.0 if momentum is None else momentum
        if running_mean is not None:
            update_running(running_mean, ops.mean(mean.detach(), 0), factor)
        if running_var is not None:
            update_running(running_var, ops.mean(var.detach(), 0) * (count / (count - 1)), factor)
        out = centred * ops.rsqrt(var + eps)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        out = (input - shape(running_mean)) * ops.rsqrt(shape(running_var) + eps)
    return affine(out, weight, bias, shape)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalise each sample over groups of channels (``torch.nn.functional.group_norm``)."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    batch, channels = input.shape[0], input.shape[1]
    if num_groups <= 0 or channels % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    _verify_batch_size([batch * channels // num_groups, num_groups] + list(input.shape[2:]))
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    group_size = input.numel() // max(batch * num_groups, 1)
    grouped = input.reshape(batch, num_groups, group_size)
    _, centred, var = normalise(grouped, (2,))
    out = (centred * ops.rsqrt(var + eps)).reshape(input.shape)
    ndim, dtype = input.dim(), input.dtype
    return affine(out, weight, bias, lambda v: per_channel(v, ndim, dtype))


def _trailing_dims(input, normalized_shape, separator: str = ", ") -> tuple:
    """Validate that ``input`` ends with ``normalized_shape``; return the dims to reduce over."""
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if not 0 < len(shape) <= input.dim() or tuple(input.shape[input.dim() - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*{separator}"
                           f"{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    return shape, tuple(range(-len(shape), 0))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then scale and shift."""
    shape, _ = _trailing_dims(input, normalized_shape)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(shape)}")
    return norm_ops.layer_norm(input, shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps: float | None = None):
    """``x / sqrt(mean(x²) + eps) * weight`` over the trailing dims; eps defaults to the dtype's machine epsilon."""
    shape, dims = _trailing_dims(input, normalized_shape, separator="")
    if eps is None:
        eps = dt.finfo(input.dtype).eps
    out = input * ops.rsqrt(ops.mean(input * input, dims, keepdim=True) + eps)
    return out if weight is None else out * as_dtype(weight, input.dtype)


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """Divide by ``(k + alpha * mean of squares over `size` neighbouring channels) ** beta`` (zero-padded)."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {input.dim()} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    squares = input * input
    before, after = size // 2, (size - 1) // 2
    pads = [ops.zeros((input.shape[0], n) + tuple(input.shape[2:]), dtype=input.dtype, device=input.device)
            for n in (before, after)]
    padded = ops.cat([pads[0], squares, pads[1]], 1)
    window_mean = ops.sum(padded.unfold(1, size, 1), -1) / size  # count_include_pad, like PyTorch's avg_pool
    return input / (window_mean * alpha + k) ** beta


# -- dropout -------------------------------------------------------------------------------------------------------
def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


_SELU_ALPHA = 1.7580993408473766  # -SELU's negative saturation value: scale * alpha


def _dropout_impl(input, p: float, training: bool, inplace: bool, feature: bool, alpha: bool):
    """PyTorch's ``_dropout_impl``: a Bernoulli(1 - p) mask over elements (or whole channels), rescaled."""
    _check_p(p)
    if p == 0.0 or not training or input.numel() == 0:
        return input
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        zero = ops.zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2) if feature else tuple(input.shape)
    noise = ops.empty(mask_shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    if not alpha:
        noise.div_(1 - p)
        return input.mul_(noise) if inplace else input * noise
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    shift = (noise - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p  # dropped: SELU's saturation value, shifted
    noise.mul_(a)
    return input.mul_(noise).add_(shift) if inplace else input * noise + shift


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero elements with probability ``p`` and scale the rest by 1/(1-p) while training."""
    return _dropout_impl(input, p, training, inplace, feature=False, alpha=False)


def _unbatched_feature_dropout(input, p, training, inplace, batched: bool):
    """Channel dropout on a batched input, or on an unbatched one seen as a batch of one."""
    if batched:
        return _dropout_impl(input, p, training, inplace, feature=True, alpha=False)
    result = _dropout_impl(input.unsqueeze(0), p, training, inplace, feature=True, alpha=False)
    return input if inplace else result.squeeze(0)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an (N, C, L) or (C, L) input with probability ``p`` (``F.dropout1d``)."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _unbatched_feature_dropout(input, p, training, inplace, batched=input.dim() == 3)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an (N, C, H, W) input with probability ``p`` (``F.dropout2d``; 3-D input is (N, C, L))."""
    _check_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=False)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability ``p`` (``F.dropout3d``)."""
    _check_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    return _unbatched_feature_dropout(input, p, training, inplace, batched=input.dim() == 5)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout that keeps SELU's zero mean and unit variance (``F.alpha_dropout``)."""
    return _dropout_impl(input, p, training, inplace, feature=False, alpha=True)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Alpha dropout of whole channels (``F.feature_alpha_dropout``)."""
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=True)


# -- embedding and one-hot -----------------------------------------------------------------------------------------
def _renorm_rows_(weight, indices, max_norm: float, norm_type: float) -> None:
    """Scale the rows of ``weight`` named in ``indices`` whose ``norm_type``-norm exceeds ``max_norm`` (in place)."""
    with no_grad():
        rows_index = ops.unique(indices.reshape(-1))
        rows = ops.index_select(weight, 0, rows_index)
        norms = ops.norm(rows, norm_type, 1, keepdim=True)
        scale = ops.where(norms > max_norm, max_norm / (norms + 1e-7), ops.ones_like(norms))
        weight.index_copy_(0, rows_index, rows * scale)


def embedding(input, weight, padding_idx: int | None = None, max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False):
    """Rows of ``weight`` picked by integer ``input``; the ``padding_idx`` row gets no gradient (``F.embedding``).

    ``sparse=True`` is accepted but the gradient is dense (there are no sparse tensors).
    """
    if input.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    num_embeddings = weight.shape[0]
    if padding_idx is not None:
        if padding_idx >= num_embeddings or padding_idx < -num_embeddings:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            padding_idx += num_embeddings
    if max_norm is not None:
        _renorm_rows_(weight, input, max_norm, norm_type)
    flat = input.reshape(-1)
    rows = ops.index_select(weight, 0, flat)
    if padding_idx is not None or scale_grad_by_freq:
        keep = None if padding_idx is None else (flat != padding_idx).unsqueeze(1)
        frozen = rows.detach()
        if scale_grad_by_freq:
            # same values; the gradient of each lookup is divided by how often its index occurs in the batch
            counts = ops.zeros(num_embeddings, dtype=weight.dtype, device=weight.device)
            counts.index_add_(0, flat, ops.ones(flat.shape, dtype=weight.dtype, device=weight.device))
            rows = frozen + (rows - frozen) * (1.0 / ops.index_select(counts, 0, flat)).unsqueeze(1)
        if keep is not None:
            rows = ops.where(keep, rows, frozen)  # padding lookups keep their value but pass no gradient
    return rows.reshape(tuple(input.shape) + (weight.shape[1],))


_BAG_MODES = ("sum", "mean", "max")  # ATen's mode numbers 0, 1, 2


def embedding_bag(input, weight, offsets=None, max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx: int | None = None):
    """The sum, mean or max of the ``weight`` rows of each bag of indices: the rows of a 2-D ``input``, or the
    slices of a 1-D one that ``offsets`` start (``torch.nn.functional.embedding_bag``)."""
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets).__name__}")
        offsets = ops.arange(0, input.numel(), max(input.shape[1], 1), dtype=input.dtype, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if max_norm is not None:
        _renorm_rows_(weight, input, max_norm, norm_type)
    return nn_functions.embedding_bag(weight, input, offsets, scale_grad_by_freq, _BAG_MODES.index(mode), sparse,
                                      per_sample_weights, include_last_offset, padding_idx)[0]


def one_hot(tensor, num_classes: int = -1):
    """int64 one-hot encoding with a trailing class dim; ``num_classes=-1`` infers max + 1 (``F.one_hot``)."""
    if tensor.dtype != dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        if ops.amin(tensor).item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        largest = ops.amax(tensor).item()
        if num_classes == -1:
            num_classes = largest + 1
        elif largest >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = ops.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(dt.int64)


# -- distances -----------------------------------------------------------------------------------------------------
def normalize(input, p: float = 2.0, dim=1, eps: float = 1e-12, out=None):
    """``input / max(‖input‖_p, eps)`` along ``dim`` (``F.normalize``)."""
    denom = ops.norm(input, p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom if out is None else ops.div(input, denom, out=out)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """``‖x1 - x2 + eps‖_p`` over the last dim of the broadcast inputs (``F.pairwise_distance``)."""
    last = max(x1.dim(), x2.dim()) - 1
    diff = x1 - x2 + eps
    if last < 0:
        return ops.abs(diff)
    return ops.norm(diff, p, last, keepdim=keepdim)


def pdist(input, p: float = 2):
    """The p-norm distance between every pair of rows i < j of an (N, M) input (``torch.nn.functional.pdist``)."""
    return nn_functions.pdist(input, p)


def _clamped_norm(x, dim: int, eps: float):
    """‖x‖₂ along ``dim`` clamped below at ``eps``; the clamp passes the gradient through, as PyTorch's in-place
    clamp under no_grad does."""
    norm = ops.norm(x, 2, dim, keepdim=True)
    return norm + (norm.clamp_min(eps) - norm).detach()


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """``x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps))`` along ``dim`` of the broadcast inputs."""
    dtype = dt.result_type(x1, x2)
    if not dtype.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {dt.legacy_name(dtype)}")
    x1, x2 = ops.broadcast_tensors(as_dtype(x1, dtype), as_dtype(x2, dtype))
    dim = ops.wrap_dim(dim, x1.dim())
    return ops.sum((x1 / _clamped_norm(x1, dim, eps)) * (x2 / _clamped_norm(x2, dim, eps)), dim)
