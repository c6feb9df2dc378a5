"""The torch-level functions of the nn ops (``torch.conv2d``, ``torch.batch_norm``, ``torch.lstm``, ...).

PyTorch exposes its nn kernels in the ``torch`` namespace with ATen's signatures, which often differ from
``torch.nn.functional``'s (``torch.embedding(weight, indices, ...)``, ``torch.dropout(input, p, train)``, losses with
an integer ``reduction``: 0 none, 1 mean, 2 sum). Where ``core.nn.functional`` already has the math, these adapt the
signature and call it; ``core.nn.functional`` is built of ``core.ops``, so it is imported inside each call, never at
import time. Where it has not (grid sampling, embedding bags, the SyncBatchNorm statistics, flat-weight RNNs,
``native_*`` variants with their saved statistics), the math is here, as composites of Tensor ops: every device and
autograd come free, and ``core.nn.functional`` calls down to these (as PyTorch's F calls torch).
"""

from __future__ import annotations

import itertools
import math
import numbers

from .. import dtypes as dt
from ..tensor import Tensor
from ._util import wrap_dim
from .creation import empty, full, ones, tensor, zeros
from .elementwise import abs as abs_, floor, fmod, relu as relu_, round as round_, rsqrt, sigmoid, tanh, where
from .indexing import gather, index_select
from .linalg import matmul
from .random import bernoulli
from .ranges import arange, linspace
from .reduction import mean as mean_, norm as norm_, sum as sum_
from .shape import cat, stack
from .sorting import searchsorted

__all__: list = []
METHODS: dict = {}

_REDUCTIONS = ("none", "mean", "sum")  # ATen's Reduction enum: 0, 1, 2


def _export(fn, method: bool = False):
    __all__.append(fn.__name__)
    if method:
        METHODS[fn.__name__] = fn
    return fn


def _reduction(op: str, reduction) -> str:
    """ATen's integer reduction (0 none, 1 mean, 2 sum) as F's name."""
    if isinstance(reduction, bool) or not isinstance(reduction, numbers.Integral) or not 0 <= reduction <= 2:
        raise ValueError(f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), but got {reduction!r}")
    return _REDUCTIONS[reduction]


def _reduce(loss, reduction: str):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def _stride(stride):
    """ATen's ``stride=[]`` (the default) means the kernel size, F's ``None``."""
    return None if stride is None or (not isinstance(stride, int) and len(stride) == 0) else stride


# -- pooling ------------------------------------------------------------------------------------------------------
def adaptive_avg_pool1d(input, output_size):
    """Average over ``output_size`` adaptive windows of the last dim (``torch.adaptive_avg_pool1d``)."""
    from ..nn import functional as F
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """``(values, indices)`` of the max over adaptive windows of the last dim (``torch.adaptive_max_pool1d``)."""
    from ..nn import functional as F
    return tuple(F.adaptive_max_pool1d(input, output_size, return_indices=True))


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling (``torch.avg_pool1d``; ``stride=()`` means the kernel size)."""
    from ..nn import functional as F
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def _max_pool(nd: int, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices: bool):
    from ..nn import functional as F
    pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
    return pool(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, return_indices)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """1-D max pooling (``torch.max_pool1d``; ``stride=()`` means the kernel size)."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, False)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """2-D max pooling (``torch.max_pool2d``; ``stride=()`` means the kernel size)."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, False)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """3-D max pooling (``torch.max_pool3d``; ``stride=()`` means the kernel size)."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, False)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``(values, indices)`` of 1-D max pooling (``torch.max_pool1d_with_indices``)."""
    return tuple(_max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, True))


for _fn in (adaptive_avg_pool1d, adaptive_max_pool1d, avg_pool1d, max_pool1d, max_pool2d, max_pool3d,
            max_pool1d_with_indices):
    _export(_fn)


# -- dropout ------------------------------------------------------------------------------------------------------
def _dropout(input, p, train, inplace: bool, feature: bool, alpha: bool):
    from ..nn.functional.norm import _dropout_impl
    return _dropout_impl(input, p, bool(train), inplace, feature=feature, alpha=alpha)


def dropout(input, p, train):
    """Zero elements with probability ``p``, scaling the rest by 1/(1-p), when ``train`` (``torch.dropout``)."""
    return _dropout(input, p, train, False, feature=False, alpha=False)


def dropout_(input, p, train):
    """In-place :func:`dropout` (``torch.dropout_``)."""
    return _dropout(input, p, train, True, feature=False, alpha=False)


def feature_dropout(input, p, train):
    """Zero whole channels (dim 1) with probability ``p`` when ``train`` (``torch.feature_dropout``)."""
    return _dropout(input, p, train, False, feature=True, alpha=False)


def feature_dropout_(input, p, train):
    """In-place :func:`feature_dropout` (``torch.feature_dropout_``)."""
    return _dropout(input, p, train, True, feature=True, alpha=False)


def alpha_dropout(input, p, train):
    """Dropout that keeps SELU's mean and variance (``torch.alpha_dropout``)."""
    return _dropout(input, p, train, False, feature=False, alpha=True)


def alpha_dropout_(input, p, train):
    """In-place :func:`alpha_dropout` (``torch.alpha_dropout_``)."""
    return _dropout(input, p, train, True, feature=False, alpha=True)


def feature_alpha_dropout(input, p, train):
    """Alpha dropout of whole channels (``torch.feature_alpha_dropout``)."""
    return _dropout(input, p, train, False, feature=True, alpha=True)


def feature_alpha_dropout_(input, p, train):
    """In-place :func:`feature_alpha_dropout` (``torch.feature_alpha_dropout_``)."""
    return _dropout(input, p, train, True, feature=True, alpha=True)


def native_dropout(input, p, train=None):
    """``(output, mask)``: ``input * mask / (1 - p)`` with a bool keep-mask drawn with probability 1 - p; outside
    training the input's copy and an all-True mask (``torch.native_dropout``; ``train=None`` means training)."""
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if train is not None and not train:
        return input.clone(), ones(input.shape, dtype=dt.bool, device=input.device)
    keep = 1.0 - p
    mask = bernoulli(full(input.shape, keep, dtype=dt.float32, device=input.device)).to(dt.bool)
    scale = 0.0 if keep == 0 else 1.0 / keep
    return input * mask * scale, mask


for _fn in (dropout, dropout_, feature_dropout, feature_dropout_, alpha_dropout, alpha_dropout_, feature_alpha_dropout,
            feature_alpha_dropout_, native_dropout):
    _export(_fn)


# -- normalisation -----------------------------------------------------------------------------------------------
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    """Per-channel normalisation with ATen's argument order (``torch.batch_norm``; ``cudnn_enabled`` is unused)."""
    from ..nn import functional as F
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled=True):
    """Normalise each (sample, channel) plane, ATen's argument order (``torch.instance_norm``)."""
    from ..nn import functional as F
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """Normalise each sample over groups of channels (``torch.group_norm``)."""
    from ..nn import functional as F
    return F.group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """Normalise over the trailing ``normalized_shape`` dims (``torch.layer_norm``)."""
    from ..nn import functional as F
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x²) + eps) * weight`` over the trailing dims (``torch.rms_norm``)."""
    from ..nn import functional as F
    return F.rms_norm(input, normalized_shape, weight, eps)


def _affine(out, weight, bias, view):
    if weight is not None:
        out = out * view(weight)
    return out if bias is None else out + view(bias)


def _channel_view(ndim: int):
    """(C,) -> (1, C, 1, ...) for an ``ndim``-d (N, C, *) input."""
    return lambda v: v.reshape((1, -1) + (1,) * (ndim - 2))


def _statistics(x, dims):
    """Mean and biased variance over ``dims``, keepdim."""
    mean = mean_(x, dims, keepdim=True)
    centred = x - mean
    return mean, mean_(centred * centred, dims, keepdim=True)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(out, mean, rstd)``: layer norm and the statistics it used, shaped ``input.shape[:axis] + (1,) * k``
    (``torch.native_layer_norm``)."""
    from ..nn.functional.norm import _trailing_dims
    shape, dims = _trailing_dims(input, normalized_shape)
    mean, var = _statistics(input, dims)
    rstd = rsqrt(var + eps)
    out = _affine((input - mean) * rstd, weight, bias, lambda v: v)
    return out, mean, rstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):  # noqa: N803 - ATen's names
    """``(out, mean, rstd)``: group norm of an (N, C, *) input and its (N, group) statistics
    (``torch.native_group_norm``)."""
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements (N={N}, C={C}, HxW={HxW}), but got "
                           f"input of size {list(input.shape)}")
    if group <= 0 or C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={group}")
    grouped = input.reshape(N, group, -1)
    mean, var = _statistics(grouped, (2,))
    rstd = rsqrt(var + eps)
    out = ((grouped - mean) * rstd).reshape(input.shape)
    out = _affine(out, weight, bias, _channel_view(input.dim()))
    return out, mean.reshape(N, group), rstd.reshape(N, group)


def _update_running(running, value, momentum) -> None:
    if running is not None:
        running.mul_(1 - momentum).add_(value.detach().to(running.dtype) * momentum)


def batch_norm_stats(input, eps):
    """``(mean, invstd)`` of each channel (dim 1) over every other dim, biased variance
    (``torch.batch_norm_stats``)."""
    dims = (0,) + tuple(range(2, input.dim()))
    mean, var = _statistics(input, dims)
    return mean.reshape(-1), rsqrt(var + eps).reshape(-1)


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    """``(input - mean) * invstd * weight + bias`` per channel (``torch.batch_norm_elemt``)."""
    view = _channel_view(input.dim())
    return _affine((input - view(mean)) * view(invstd), weight, bias, view)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``(out, save_mean, save_invstd)``: batch norm and, when training, the batch statistics it used (running
    estimates updated in place with the unbiased variance); in evaluation the saved ones are empty
    (``torch.native_batch_norm``)."""
    if training:
        mean, invstd = batch_norm_stats(input, eps)
        count = input.numel() // input.shape[1]
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, (1 / invstd ** 2 - eps) * (count / max(count - 1, 1)), momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean, invstd = running_mean, rsqrt(running_var + eps)
    out = batch_norm_elemt(input, weight, bias, mean, invstd, eps)
    if not training:
        mean = invstd = empty(0, dtype=input.dtype, device=input.device)
    return out, mean, invstd


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """``(mean, var)`` of each channel (biased variance), updating the running estimates in place with the unbiased
    one (``torch.batch_norm_update_stats``)."""
    dims = (0,) + tuple(range(2, input.dim()))
    mean, var = _statistics(input, dims)
    mean, var = mean.reshape(-1), var.reshape(-1)
    count = input.numel() // input.shape[1]
    _update_running(running_mean, mean, momentum)
    _update_running(running_var, var * (count / max(count - 1, 1)), momentum)
    return mean, var


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    """``(mean, invstd)`` of all processes' (P, C) statistics, each over ``counts[p]`` values; updates the running
    estimates (``torch.batch_norm_gather_stats_with_counts``, SyncBatchNorm's reduction)."""
    counts = counts.to(mean.dtype).reshape(-1, 1)
    total = sum_(counts)
    global_mean = sum_(mean * counts, 0) / total
    local_var = 1 / (invstd * invstd) - eps
    var = sum_((local_var + (mean - global_mean) ** 2) * counts, 0) / total
    _update_running(running_mean, global_mean, momentum)
    _update_running(running_var, var * total / (total - 1), momentum)
    return global_mean, rsqrt(var + eps)


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps, count):
    """:func:`batch_norm_gather_stats_with_counts` with every process over ``count`` values
    (``torch.batch_norm_gather_stats``)."""
    counts = full((mean.shape[0],), count, dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    """``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)`` per channel, each None where its flag is False
    (``torch.batch_norm_backward_reduce``)."""
    dims = (0,) + tuple(range(2, input.dim()))
    view = _channel_view(input.dim())
    sum_dy = sum_(grad_out, dims)
    sum_dy_xmu = sum_(grad_out * (input - view(mean)), dims)
    return (sum_dy if input_g else None, sum_dy_xmu if input_g else None,
            sum_dy_xmu * invstd if weight_g else None, sum_dy if bias_g else None)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    """The input gradient of batch norm from the channel sums of all processes, ``count`` values per process
    (``torch.batch_norm_backward_elemt``)."""
    view = _channel_view(input.dim())
    total = sum_(count.to(mean.dtype)) if isinstance(count, Tensor) else float(count)
    mean_dy, mean_dy_xmu = view(sum_dy / total), view(sum_dy_xmu / total)
    scale = view(invstd) if weight is None else view(invstd * weight)
    centred = input - view(mean)
    return (grad_out - mean_dy - centred * view(invstd * invstd) * mean_dy_xmu) * scale


def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The ``p``-norm of all elements, or over ``dim`` (``torch.native_norm``; PyTorch has it for sparse tensors
    only, here it is the dense norm)."""
    x = input if dtype is None else input.to(dtype)
    return norm_(x, 2 if p is None else p, dim, keepdim=keepdim)


def norm_except_dim(v, pow=2, dim=0):  # noqa: A002 - PyTorch's name
    """The ``pow``-norm of each slice of ``v`` along ``dim`` over every other dim, keeping ``v``'s rank (size 1
    elsewhere); ``dim=-1`` is the norm of all of ``v`` (``torch.norm_except_dim``, weight_norm's helper)."""
    if dim == -1:
        return norm_(v, pow)
    dim = wrap_dim(dim, v.dim(), "norm_except_dim")
    others = tuple(d for d in range(v.dim()) if d != dim)
    return norm_(v, pow, others, keepdim=True) if others else abs_(v)


for _fn in (batch_norm, instance_norm, group_norm, layer_norm, rms_norm, native_layer_norm, native_group_norm,
            native_batch_norm, batch_norm_stats, batch_norm_elemt, batch_norm_update_stats, batch_norm_gather_stats,
            batch_norm_gather_stats_with_counts, batch_norm_backward_reduce, batch_norm_backward_elemt, native_norm,
            norm_except_dim):
    _export(_fn)


# -- losses and distances ------------------------------------------------------------------------------------------
def bilinear(input1, input2, weight, bias=None):
    """``x1ᵀ A x2 + b`` for each output feature (``torch.bilinear``)."""
    from ..nn import functional as F
    return F.bilinear(input1, input2, weight, bias)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    """BCE of sigmoid(input) computed stably (``torch.binary_cross_entropy_with_logits``; reduction 0/1/2)."""
    from ..nn import functional as F
    name = _reduction("binary_cross_entropy_with_logits", reduction)
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=name, pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """1 - cos for y = 1, max(0, cos - margin) for y = -1 (``torch.cosine_embedding_loss``; reduction 0/1/2)."""
    from ..nn import functional as F
    name = _reduction("cosine_embedding_loss", reduction)
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=name)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    """Connectionist temporal classification loss (``torch.ctc_loss``; reduction 0/1/2)."""
    from ..nn import functional as F
    name = _reduction("ctc_loss", reduction)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, name, zero_infinity)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    """``x`` where y != -1 plus ``max(0, margin - x)`` where y != 1 (``torch.hinge_embedding_loss``; reduction
    0/1/2)."""
    name = _reduction("hinge_embedding_loss", reduction)
    margin_part = where(target != 1, (margin - input).clamp_min(0), 0.0)
    return _reduce(margin_part + where(target != -1, input, 0.0), name)


def kl_div(input, target, reduction=1, log_target=False):
    """Pointwise KL divergence ``y (log y - x)`` with ``input`` x = log q (``torch.kl_div``; reduction 0/1/2)."""
    from .elementwise import exp, xlogy
    name = _reduction("kl_div", reduction)
    loss = exp(target) * (target - input) if log_target else xlogy(target, target) - target * input
    return _reduce(loss, name)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """``max(0, -y (x1 - x2) + margin)`` (``torch.margin_ranking_loss``; reduction 0/1/2)."""
    from ..nn import functional as F
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """Poisson negative log likelihood: ``exp(x) - y x`` (log_input) or ``x - y log(x + eps)``, plus Stirling's
    ``y log y - y + log(2πy)/2`` for y > 1 when ``full`` (``torch.poisson_nll_loss``; reduction 0/1/2)."""
    from .elementwise import exp, log, xlogy
    name = _reduction("poisson_nll_loss", reduction)
    loss = exp(input) - target * input if log_input else input - target * log(input + eps)
    if full:
        safe = where(target > 1, target, 1.0)
        stirling = xlogy(safe, safe) - safe + 0.5 * log(2 * math.pi * safe)
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, name)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction=1):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with pairwise p-norm distances; ``swap`` takes the smaller of d(a, n)
    and d(p, n) (``torch.triplet_margin_loss``; reduction 0/1/2)."""
    from ..nn import functional as F
    name = _reduction("triplet_margin_loss", reduction)
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           f"inputs")
    d_pos = F.pairwise_distance(anchor, positive, p, eps)
    d_neg = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_swap = F.pairwise_distance(positive, negative, p, eps)
        d_neg = where(d_swap < d_neg, d_swap, d_neg)
    return _reduce((margin + d_pos - d_neg).clamp_min(0), name)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (``torch.cosine_similarity``)."""
    from ..nn import functional as F
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """``‖x1 - x2 + eps‖_p`` over the last dim (``torch.pairwise_distance``)."""
    from ..nn import functional as F
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2):
    """The p-norm distance between every pair of rows ``i < j`` of an (N, M) input, row-major (``torch.pdist``)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if not pairs:
        return zeros(0, dtype=input.dtype, device=input.device)
    rows = [i for i, _ in pairs], [j for _, j in pairs]
    left, right = (index_select(input, 0, tensor(r, dtype=dt.int64, device=input.device)) for r in rows)
    return norm_(left - right, p, 1)


for _fn in (bilinear, binary_cross_entropy_with_logits, cosine_embedding_loss, ctc_loss, hinge_embedding_loss, kl_div,
            margin_ranking_loss, poisson_nll_loss, triplet_margin_loss, cosine_similarity, pairwise_distance, pdist):
    _export(_fn)


# -- activations ---------------------------------------------------------------------------------------------------
def celu(input, alpha=1.0):
    """``max(0, x) + min(0, alpha (exp(x / alpha) - 1))`` (``torch.celu``)."""
    from ..nn import functional as F
    return F.celu(input, alpha)


def celu_(input, alpha=1.0):
    """In-place :func:`celu` (``torch.celu_``)."""
    from ..nn import functional as F
    return F.celu_(input, alpha)


def selu(input):
    """``scale * elu(x, alpha)`` with the self-normalising constants (``torch.selu``)."""
    from ..nn import functional as F
    return F.selu(input)


def selu_(input):
    """In-place :func:`selu` (``torch.selu_``)."""
    from ..nn import functional as F
    return F.selu_(input)


def prelu(input, weight):
    """``x`` if x > 0 else ``a x``, one ``a`` per channel or one shared (``torch.prelu``)."""
    from ..nn import functional as F
    return F.prelu(input, weight)


def threshold(input, threshold, value):
    """``x`` if x > threshold else ``value`` (``torch.threshold``)."""
    from ..nn import functional as F
    return F.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """In-place :func:`threshold` (``torch.threshold_``)."""
    from ..nn import functional as F
    return F.threshold_(input, threshold, value)


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0 (``torch.hardshrink``)."""
    return where(abs_(input) > lambd, input, 0.0).to(input.dtype)


def _rrelu_slopes(input, lower, upper, training, generator):
    if not training:
        return (lower + upper) / 2
    return empty(input.shape, dtype=input.dtype, device=input.device).uniform_(lower, upper, generator=generator)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element while training, and is
    (lower + upper) / 2 otherwise (``torch.rrelu``)."""
    if lower > upper:
        raise RuntimeError(f"Lower bound should be less than or equal to the upper bound, got lower={lower} and "
                           f"upper={upper}")
    return where(input >= 0, input, input * _rrelu_slopes(input, lower, upper, training, generator))


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """In-place :func:`rrelu` (``torch.rrelu_``)."""
    return input.copy_(rrelu(input, lower, upper, training, generator))


for _fn in (celu, celu_, selu, selu_, threshold, threshold_, rrelu, rrelu_):
    _export(_fn)
_export(prelu, method=True)
_export(hardshrink, method=True)


# -- convolution, padding, shuffles ----------------------------------------------------------------------------------
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation (``torch.conv1d``)."""
    from ..nn import functional as F
    return F.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation (``torch.conv2d``)."""
    from ..nn import functional as F
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D cross-correlation (``torch.conv3d``)."""
    from ..nn import functional as F
    return F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution (``torch.conv_transpose1d``)."""
    from ..nn import functional as F
    return F.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution (``torch.conv_transpose2d``)."""
    from ..nn import functional as F
    return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution (``torch.conv_transpose3d``)."""
    from ..nn import functional as F
    return F.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """N-d (transposed) convolution, N from ``weight``'s rank (``torch.convolution``)."""
    nd = weight.dim() - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution(): expected a 3-, 4- or 5-dimensional weight, but got weight of size "
                           f"{list(weight.shape)}")
    if transposed:
        transpose = (conv_transpose1d, conv_transpose2d, conv_transpose3d)[nd - 1]
        return transpose(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return (conv1d, conv2d, conv3d)[nd - 1](input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution of a (time, batch, channels) input with a (width, in, out) weight and (out,) bias, zero-padded
    by ``pad`` on both ends of time (``torch.conv_tbc``)."""
    if input.dim() != 3 or weight.dim() != 3 or bias.dim() != 1:
        raise RuntimeError(f"conv_tbc: expected a 3-D input, a 3-D weight and a 1-D bias, but got sizes "
                           f"{list(input.shape)}, {list(weight.shape)} and {list(bias.shape)}")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError(f"conv_tbc: input channels ({input.shape[2]}) must match the weight's dim 1 "
                           f"({weight.shape[1]})")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError(f"conv_tbc: bias size ({bias.shape[0]}) must match the weight's dim 2 ({weight.shape[2]})")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)


def constant_pad_nd(input, pad, value=0):
    """Pad (or, with negative amounts, crop) the last ``len(pad) // 2`` dims with ``value``
    (``torch.constant_pad_nd``)."""
    from ..nn import functional as F
    return F.pad(input, pad, "constant", value)


def channel_shuffle(input, groups):
    """Interleave the channels (dim 1) of ``groups`` equal groups: ``(N, g·k, *) -> (N, k·g, *)``
    (``torch.channel_shuffle``)."""
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    channels = input.shape[1]
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} channels and {groups} "
                           f"groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    grouped = input.reshape((n, groups, channels // groups) + rest)
    return grouped.transpose(1, 2).reshape(input.shape)


def native_channel_shuffle(input, groups):
    """:func:`channel_shuffle` (``torch.native_channel_shuffle``)."""
    return channel_shuffle(input, groups)


def pixel_shuffle(input, upscale_factor):
    """``(*, C·r², H, W) -> (*, C, H·r, W·r)`` (``torch.pixel_shuffle``)."""
    from ..nn import functional as F
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H·r, W·r) -> (*, C·r², H, W)`` (``torch.pixel_unshuffle``)."""
    from ..nn import functional as F
    return F.pixel_unshuffle(input, downscale_factor)


for _fn in (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, convolution, conv_tbc,
            constant_pad_nd, channel_shuffle, native_channel_shuffle, pixel_shuffle, pixel_unshuffle):
    _export(_fn)


# -- embeddings ---------------------------------------------------------------------------------------------------
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by ``indices``; a ``padding_idx`` >= 0 row gets no gradient (``torch.embedding``)."""
    from ..nn import functional as F
    padding = padding_idx if padding_idx is not None and padding_idx >= 0 else None
    return F.embedding(indices, weight, padding, None, 2.0, scale_grad_by_freq, sparse)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale, in place, the rows of ``input`` named in ``indices`` whose ``norm_type``-norm exceeds ``max_norm``
    to that norm (``torch.embedding_renorm_``)."""
    from ..nn.functional.norm import _renorm_rows_
    if input.dim() != 2:
        raise RuntimeError(f"embedding_renorm_(): expected a 2-D weight, but got {input.dim()}-D")
    _renorm_rows_(input, indices, max_norm, norm_type)
    return input


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """``(output, offset2bag, bag_size, max_indices)``: the sum (mode 0), mean (1) or max (2) of the ``weight`` rows
    of each bag, bag ``b`` being ``indices[offsets[b]:offsets[b + 1]]`` (``torch.embedding_bag``).

    ``offset2bag`` is each index's bag, ``bag_size`` each bag's count of non-padding indices, ``max_indices`` the row
    each max came from (max mode; zeros otherwise); empty bags give zeros.
    """
    if mode not in (0, 1, 2):
        raise RuntimeError(f"embedding_bag(): mode must be 0 (sum), 1 (mean) or 2 (max), but got {mode}")
    if indices.dim() != 1 or offsets.dim() != 1:
        raise ValueError(f"embedding_bag(): input has to be 1-D with 1-D offsets, but got input {indices.dim()}-D "
                         f"and offsets {offsets.dim()}-D")
    if per_sample_weights is not None and (mode != 0 or per_sample_weights.shape != indices.shape):
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  "supported for mode='sum' and must have the shape of input")
    n = indices.shape[0]
    starts = [int(o) for o in offsets.tolist()]
    ends = starts[1:] + ([] if include_last_offset else [n])
    if include_last_offset:
        starts = starts[:-1]
    if starts and (starts[0] != 0 or any(b < a for a, b in zip(starts, ends)) or ends[-1] > n):
        raise ValueError(f"embedding_bag(): offsets must start at 0, be non-decreasing and not exceed the input "
                         f"length {n}, but got {starts + ends[-1:]}")
    bags, longest = len(starts), max([e - s for s, e in zip(starts, ends)] + [1])
    device = weight.device
    # each bag's positions into ``indices``, padded to the longest bag; ``member`` marks the real ones
    layout = [[s + k if s + k < e else 0 for k in range(longest)] for s, e in zip(starts, ends)]
    member = tensor([[s + k < e for k in range(longest)] for s, e in zip(starts, ends)], dtype=dt.bool,
                    device=device).reshape(bags, longest)
    position = tensor(layout, dtype=dt.int64, device=device).reshape(bags, longest)
    picked = index_select(indices.to(dt.int64), 0, position.reshape(-1)).reshape(bags, longest)
    if padding_idx is not None:
        padding = padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx
        member = member & (picked != padding)
    from ..nn import functional as F
    looked_up = F.embedding(indices, weight, None, None, 2.0, scale_grad_by_freq)  # frequencies over the real indices
    rows = index_select(looked_up, 0, position.reshape(-1)).reshape(bags, longest, weight.shape[1])
    bag_size = sum_(member.to(dt.int64), 1)
    offset2bag = searchsorted(tensor(starts or [0], dtype=dt.int64, device=device),
                              arange(n, device=device), right=True) - 1
    if mode == 2:
        masked = where(member.unsqueeze(-1), rows, -math.inf)
        values, best = masked.max(1)
        filled = (bag_size > 0).unsqueeze(-1)
        output = where(filled, values, 0.0).to(weight.dtype)
        max_indices = where(filled, gather(picked, 1, best), 0)
        return output, offset2bag, bag_size, max_indices
    scale = member.to(weight.dtype)
    if per_sample_weights is not None:
        scale = scale * index_select(per_sample_weights, 0, position.reshape(-1)).reshape(bags, longest)
    output = sum_(rows * scale.unsqueeze(-1), 1)
    if mode == 1:
        output = output / bag_size.clamp_min(1).to(weight.dtype).unsqueeze(-1)
    return output, offset2bag, bag_size, zeros(bags, dtype=dt.int64, device=device)


for _fn in (embedding, embedding_renorm_, embedding_bag):
    _export(_fn)


# -- grid sampling -------------------------------------------------------------------------------------------------
_PADDINGS = ("zeros", "border", "reflection")  # ATen's GridSamplerPadding: 0, 1, 2


def affine_grid_generator(theta, size, align_corners):
    """The (N, *spatial, nd) sampling grid of the affine maps ``theta`` (N, nd, nd + 1) over normalised output
    coordinates in [-1, 1] (x first), for an output of ``size`` (N, C, *spatial) (``torch.affine_grid_generator``)."""
    nd = len(size) - 2
    if nd not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {list(size)}.")
    if tuple(theta.shape) != (size[0], nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size "
                         f"{list(size)}. Got {list(theta.shape)}.")
    spatial = tuple(size[2:])
    axes = []
    for n in reversed(spatial):  # x (the last dim) first
        line = linspace(-1, 1, n, dtype=theta.dtype, device=theta.device)
        axes.append(line * ((n - 1) / n) if not align_corners and n > 1 else
                    line if n > 1 else zeros(1, dtype=theta.dtype, device=theta.device))
    mesh = []
    for k, line in enumerate(axes):  # coordinate k varies along spatial dim nd - 1 - k
        shape = [1] * nd
        shape[nd - 1 - k] = spatial[nd - 1 - k]
        mesh.append(line.reshape(shape).expand(spatial))
    mesh.append(ones(spatial, dtype=theta.dtype, device=theta.device))
    base = stack(mesh, -1).reshape(1, -1, nd + 1)  # (1, prod(spatial), nd + 1)
    return matmul(base, theta.transpose(1, 2)).reshape((size[0],) + spatial + (nd,))


def _unnormalize(coord, n: int, align_corners: bool):
    """[-1, 1] -> pixel coordinates: the corner pixels' centres (align_corners) or their outer edges."""
    return (coord + 1) / 2 * (n - 1) if align_corners else ((coord + 1) * n - 1) / 2


def _reflect(coord, twice_low: int, twice_high: int):
    """Reflect ``coord`` into [twice_low / 2, twice_high / 2] (ATen's reflect_coordinates)."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = abs_(coord - low)
    extra, flips = fmod(distance, span), floor(distance / span)
    return where(fmod(flips, 2) == 0, extra + low, span - extra + low)


def _pad_coordinate(coord, n: int, padding: str, align_corners: bool):
    """A pixel coordinate moved inside [0, n - 1] by reflection or clamping (zeros padding leaves it)."""
    if padding == "reflection":
        coord = _reflect(coord, 0, 2 * (n - 1)) if align_corners else _reflect(coord, -1, 2 * n - 1)
    return coord if padding == "zeros" else coord.clamp(0, n - 1)


_CUBIC_A = -0.75  # the bicubic convolution constant PyTorch uses


def _cubic_weights(t) -> list:
    """The four bicubic weights of taps at -1, 0, 1, 2 for a fraction ``t`` (ATen's
    get_cubic_upsample_coefficients)."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(coord, n: int, mode: int, padding: str, align_corners: bool) -> list:
    """The (integer position, weight or None) pairs one spatial dim contributes for an unnormalised coordinate."""
    if mode == 2:  # bicubic: pad each integer tap, not the coordinate (ATen's get_value_bounded)
        low = floor(coord)
        weights = _cubic_weights(coord - low)
        return [(round_(_pad_coordinate(low + k, n, padding, align_corners)), w)
                for k, w in zip((-1, 0, 1, 2), weights)]
    coord = _pad_coordinate(coord, n, padding, align_corners)
    if mode == 1:
        return [(round_(coord), None)]  # round half to even, as nearbyint
    low = floor(coord)
    fraction = coord - low
    return [(low, 1 - fraction), (low + 1, fraction)]


def _gather_points(flat, points: list, spatial: tuple):
    """``flat`` (N, C, prod(spatial)) at integer points (one (N, P) tensor per spatial dim, out-of-range ones read
    as 0): (N, C, P)."""
    inside, linear = None, None
    for p, n in zip(points, spatial):
        ok = (p >= 0) & (p <= n - 1)
        inside = ok if inside is None else inside & ok
        clamped = p.clamp(0, n - 1).to(dt.int64)
        linear = clamped if linear is None else linear * n + clamped
    index = linear.unsqueeze(1).expand(flat.shape[0], flat.shape[1], linear.shape[1])
    return where(inside.unsqueeze(1), gather(flat, 2, index), 0.0)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """Sample an (N, C, *spatial) input (2 or 3 spatial dims) at the normalised [-1, 1] points of an
    (N, *out, nd) grid (x first): bilinear (0), nearest (1) or bicubic (2, 2-D only) interpolation, zeros (0),
    border (1) or reflection (2) padding (``torch.grid_sampler``). Differentiable in ``input`` and ``grid``."""
    nd = input.dim() - 2
    if nd not in (2, 3) or grid.dim() != nd + 2 or grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions and a "
                           f"last grid dim of the spatial rank, but got input of size {list(input.shape)} and grid "
                           f"of size {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if interpolation_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), "
                           f"but got {interpolation_mode}")
    if interpolation_mode == 2 and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if padding_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), but got "
                           f"{padding_mode}")
    padding = _PADDINGS[padding_mode]
    n, channels, spatial = input.shape[0], input.shape[1], tuple(input.shape[2:])
    out_spatial = tuple(grid.shape[1:-1])
    flat = input.reshape(n, channels, -1)
    points = grid.to(input.dtype).reshape(n, -1, nd)
    # grid's last dim is (x, y[, z]): x indexes the last spatial dim
    taps = [_taps(_unnormalize(points[..., nd - 1 - d], spatial[d], align_corners), spatial[d], interpolation_mode,
                  padding, align_corners) for d in range(nd)]
    out = None
    for combination in itertools.product(*taps):  # every corner (bilinear) or tap (bicubic), one per spatial dim
        term = _gather_points(flat, [position for position, _ in combination], spatial)
        weights = [w for _, w in combination if w is not None]
        if weights:
            weight = weights[0]
            for w in weights[1:]:
                weight = weight * w
            term = term * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape((n, channels) + out_spatial)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` of a 4-D input (``torch.grid_sampler_2d``)."""
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input of size {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` of a 5-D input (``torch.grid_sampler_3d``)."""
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, but got input of size {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


for _fn in (affine_grid_generator, grid_sampler, grid_sampler_2d, grid_sampler_3d):
    _export(_fn)


# -- recurrent layers with flat weights ----------------------------------------------------------------------------
# one time step; ``x_gates`` is the input's share ``x W_ihᵀ + b_ih`` (for all gates at once)
def rnn_step(x_gates, h, w_hh, b_hh, relu: bool):
    """h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)."""
    pre = x_gates + matmul(h, w_hh.t())
    if b_hh is not None:
        pre = pre + b_hh
    return relu_(pre) if relu else tanh(pre)


def lstm_step(x_gates, h, c, w_hh, b_hh, w_hr=None):
    """PyTorch's LSTM step, gates in the order i, f, g, o; ``w_hr`` projects h (``proj_size``): (h', c')."""
    gates = x_gates + matmul(h, w_hh.t())
    if b_hh is not None:
        gates = gates + b_hh
    # one sigmoid over all four gates is fewer ops than three; its g slice is simply unused
    i, f, _, o = sigmoid(gates).chunk(4, -1)
    c = f * c + i * tanh(gates.chunk(4, -1)[2])
    h = o * tanh(c)
    if w_hr is not None:
        h = matmul(h, w_hr.t())
    return h, c


def gru_step(x_gates, h, w_hh, b_hh):
    """PyTorch's GRU step, gates r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn))."""
    h_gates = matmul(h, w_hh.t())
    if b_hh is not None:
        h_gates = h_gates + b_hh
    x_r, x_z, x_n = x_gates.chunk(3, -1)
    h_r, h_z, h_n = h_gates.chunk(3, -1)
    r = sigmoid(x_r + h_r)
    z = sigmoid(x_z + h_z)
    n = tanh(x_n + r * h_n)
    return n + z * (h - n)  # (1 - z) * n + z * h


def _step(kind: str, x_gates, states: tuple, w_hh, b_hh, w_hr=None) -> tuple:
    """The new (h,) or (h, c) of one step of a ``kind`` cell."""
    if kind == "lstm":
        return lstm_step(x_gates, states[0], states[1], w_hh, b_hh, w_hr)
    if kind == "gru":
        return (gru_step(x_gates, states[0], w_hh, b_hh),)
    return (rnn_step(x_gates, states[0], w_hh, b_hh, relu=kind == "rnn_relu"),)


def _input_gates(x, w_ih, b_ih):
    gates = matmul(x, w_ih.t())
    return gates if b_ih is None else gates + b_ih


def _cell(kind: str, input, states, w_ih, w_hh, b_ih, b_hh):
    return _step(kind, _input_gates(input, w_ih, b_ih), states, w_hh, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (``torch.rnn_tanh_cell``)."""
    return _cell("rnn_tanh", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``relu(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (``torch.rnn_relu_cell``)."""
    return _cell("rnn_relu", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``(h', c')`` of one LSTM step from ``hx = (h, c)``, gates i, f, g, o (``torch.lstm_cell``)."""
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell(): expected hx to hold two tensors (h, c), but got {len(hx)}")
    return _cell("lstm", input, tuple(hx), w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``h'`` of one GRU step, gates r, z, n (``torch.gru_cell``)."""
    return _cell("gru", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def _recurrent(kind: str, input, states: list, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first, batch_sizes=None):
    """Every layer and direction of a stacked RNN over flat ``params`` (per layer and direction: w_ih, w_hh, then
    b_ih, b_hh when ``has_biases``, then LSTM's w_hr when projecting): (output, *final states).

    With ``batch_sizes`` (a list of ints) the input is a packed sequence's data, (sum of lengths, F) in time-major
    order with the sequences sorted longest first, and so is the output (PyTorch's ``lstm(data, batch_sizes, ...)``).
    """
    directions = 2 if bidirectional else 1
    groups = num_layers * directions
    params = list(params)
    if groups == 0 or len(params) % groups:
        raise RuntimeError(f"{kind}(): got {len(params)} parameters, not a multiple of num_layers * directions = "
                           f"{groups}")
    per = len(params) // groups
    expected = 2 + 2 * bool(has_biases)
    if per not in (expected, expected + (kind == "lstm")):
        raise RuntimeError(f"{kind}(): expected {expected} parameters per layer and direction, but got {per}")
    x = input.transpose(0, 1) if batch_first else input
    finals = [[] for _ in states]
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            out, last = _run_direction(kind, x, tuple(s[index] for s in states), params[index * per:(index + 1) * per],
                                       has_biases, direction == 1, batch_sizes)
            outputs.append(out)
            for final, s in zip(finals, last):
                final.append(s)
        x = outputs[0] if directions == 1 else cat(outputs, -1)
        if dropout and train and layer < num_layers - 1:
            x = native_dropout(x, dropout, True)[0]
    output = x.transpose(0, 1) if batch_first and batch_sizes is None else x
    return (output,) + tuple(stack(final) for final in finals)


def _run_direction(kind: str, x, states: tuple, weights: list, has_biases, reverse: bool, batch_sizes=None):
    """One layer in one direction over a (T, N, F) input, or packed data with ``batch_sizes``: (output (T, N, H_out)
    or packed (sum, H_out), last states)."""
    w_ih, w_hh = weights[0], weights[1]
    b_ih, b_hh = (weights[2], weights[3]) if has_biases else (None, None)
    w_hr = weights[-1] if len(weights) > 2 + 2 * bool(has_biases) else None
    if kind != "gru" and b_hh is not None:
        # b_hh adds to the same pre-activation as b_ih: fold it into the input projection once
        b_ih, b_hh = b_ih + b_hh, None
    # the input's share of every gate for every step in one matmul; each step then adds h W_hhᵀ
    x_gates = _input_gates(x, w_ih, b_ih)
    if batch_sizes is not None:
        run = _run_packed_reverse if reverse else _run_packed
        return run(kind, x_gates, states, batch_sizes, w_hh, b_hh, w_hr)
    outputs = []
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        states = _step(kind, x_gates[t], states, w_hh, b_hh, w_hr)
        outputs.append(states[0])
    if reverse:
        outputs.reverse()
    return stack(outputs), states


def _run_packed(kind: str, x_gates, states: tuple, batch_sizes: list, w_hh, b_hh, w_hr):
    """Forward in time over packed gates: step t advances the first ``batch_sizes[t]`` sequences only, so a batch
    costs one step per time step; a sequence's final states are set aside when it ends (PyTorch's packed loop)."""
    outputs, ended, offset = [], [], 0
    for size in batch_sizes:
        if size < states[0].shape[0]:  # the sequences past ``size`` have ended: keep their last states
            ended.append(tuple(s[size:] for s in states))
            states = tuple(s[:size] for s in states)
        states = _step(kind, x_gates[offset:offset + size], states, w_hh, b_hh, w_hr)
        outputs.append(states[0])
        offset += size
    ended.append(states)
    ended.reverse()  # the longest sequences come first, as in the initial states
    return cat(outputs), tuple(cat([part[k] for part in ended]) for k in range(len(states)))


def _run_packed_reverse(kind: str, x_gates, initial: tuple, batch_sizes: list, w_hh, b_hh, w_hr):
    """Backward in time over packed gates: each sequence starts from its initial states at its own last step, as
    the batch grows back from ``batch_sizes[-1]`` to ``batch_sizes[0]``."""
    outputs, end = [], x_gates.shape[0]
    states = tuple(s[:0] for s in initial)
    for size in reversed(batch_sizes):
        if size > states[0].shape[0]:  # sequences whose last step this is join with their initial states
            states = tuple(cat([s, s0[s.shape[0]:size]]) for s, s0 in zip(states, initial))
        states = _step(kind, x_gates[end - size:end], states, w_hh, b_hh, w_hr)
        outputs.append(states[0])
        end -= size
    outputs.reverse()
    return cat(outputs), states


def rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``(output, h_n)`` of a stacked tanh RNN with flat weights (``torch.rnn_tanh``)."""
    return _recurrent("rnn_tanh", input, [hx], params, has_biases, num_layers, dropout, train, bidirectional,
                      batch_first)


def rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``(output, h_n)`` of a stacked ReLU RNN with flat weights (``torch.rnn_relu``)."""
    return _recurrent("rnn_relu", input, [hx], params, has_biases, num_layers, dropout, train, bidirectional,
                      batch_first)


def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``(output, h_n)`` of a stacked GRU with flat weights (``torch.gru``)."""
    return _recurrent("gru", input, [hx], params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``(output, h_n, c_n)`` of a stacked LSTM with flat weights from ``hx = (h_0, c_0)`` (``torch.lstm``)."""
    if len(hx) != 2:
        raise RuntimeError(f"lstm(): expected hx to hold two tensors (h_0, c_0), but got {len(hx)}")
    return _recurrent("lstm", input, list(hx), params, has_biases, num_layers, dropout, train, bidirectional,
                      batch_first)


for _fn in (rnn_tanh_cell, rnn_relu_cell, lstm_cell, gru_cell, rnn_tanh, rnn_relu, gru, lstm):
    _export(_fn)
