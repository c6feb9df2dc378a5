"""Loss functionals (``torch.nn.functional``), written in Tensor ops so autograd and every device come free.

``cross_entropy`` over class indices of a batched input checks PyTorch's arguments and calls the
``cross_entropy_loss`` op (declared, with its decomposition and backward op, in ``core/ops/loss.py``; its derivative
is in ``core/ops/derivatives.py``).
"""

from __future__ import annotations

import math
import warnings

from ... import dtypes as dt, ops
from ...ops import nn_functions
from ...ops.loss import cross_entropy_loss, nll
from .activation import log_softmax, logsigmoid

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss", "margin_ranking_loss", "ctc_loss",
           "hinge_embedding_loss", "poisson_nll_loss", "triplet_margin_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "gaussian_nll_loss",
           "triplet_margin_with_distance_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(size_average, reduce, reduction: str, allowed=_REDUCTIONS) -> str:
    """The reduction name, from the deprecated ``size_average``/``reduce`` flags when given (PyTorch's rule)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                      stacklevel=3)
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.", stacklevel=3)
        reduction = "mean"
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction: str):
    """Apply ``reduction`` ('none', 'mean' or 'sum') to an elementwise loss."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _weighted_reduce(loss, weight, reduction: str, mean_by_weight: bool):
    """``loss * weight`` reduced; the mean divides by the weights' sum when ``mean_by_weight`` (mse/l1's rule)."""
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(loss.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _warn_if_broadcasting(input, target) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    """(x - y)² reduced (``torch.nn.functional.mse_loss``)."""
    _warn_if_broadcasting(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    difference = input - target
    return _weighted_reduce(difference * difference, weight, reduction, mean_by_weight=True)


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    """|x - y| reduced (``torch.nn.functional.l1_loss``)."""
    _warn_if_broadcasting(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    return _weighted_reduce(ops.abs(input - target), weight, reduction, mean_by_weight=True)


def _quadratic_then_linear(difference, knee: float, linear_scale: float, quadratic_scale: float):
    """quadratic_scale * d²/2 inside |d| < knee, linear_scale * (|d| - knee/2) outside: smooth-L1/Huber's shape."""
    magnitude = ops.abs(difference)
    quadratic = difference * difference * (0.5 * quadratic_scale)
    return ops.where(magnitude < knee, quadratic, (magnitude - 0.5 * knee) * linear_scale)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
    """0.5 d² / beta where |d| < beta, else |d| - beta / 2 (``torch.nn.functional.smooth_l1_loss``)."""
    _warn_if_broadcasting(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    difference = input - target
    if beta == 0:
        return _reduce(ops.abs(difference), reduction)
    return _reduce(_quadratic_then_linear(difference, beta, 1.0, 1.0 / beta), reduction)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    """0.5 d² where |d| < delta, else delta (|d| - delta / 2) (``torch.nn.functional.huber_loss``)."""
    _warn_if_broadcasting(input, target)
    reduction = _reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    loss = _quadratic_then_linear(input - target, delta, delta, 1.0)
    return _weighted_reduce(loss, weight, reduction, mean_by_weight=False)


# -- classification -----------------------------------------------------------------------------------------------

def _check_class_weight(weight, classes: int, prefix: str = "") -> None:
    if weight is not None and (weight.dim() != 1 or weight.numel() != classes):
        raise RuntimeError(f"{prefix}weight tensor should be defined either for all {classes} classes or no classes "
                           f"but got weight tensor of shape: {list(weight.shape)}")


def _check_index_target(input, target) -> None:
    """PyTorch's shape rules for class-index targets: (C)->(), (N, C)->(N), (N, C, d1, ...)->(N, d1, ...)."""
    if target.dtype.category >= 2 or target.dtype == dt.bool:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_dtype_title(target.dtype)}")
    if input.dim() == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if input.dim() >= 2 and target.dim() >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if input.dim() <= 2:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if input.dim() == 1 and target.numel() != 1:
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)}, target: {list(target.shape)})")
        return
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target.shape) != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target.shape)}")


def _dtype_title(dtype) -> str:
    """PyTorch's scalar-type spelling in messages: Long, Float, Double..."""
    names = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
             "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}
    return names.get(dtype.name, dtype.name)




def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean"):
    """-input[n, target[n]] (weighted), ignoring ``ignore_index`` (``torch.nn.functional.nll_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_index_target(input, target)
    _check_class_weight(weight, input.shape[0 if input.dim() == 1 else 1])
    return nll(input, target, weight, ignore_index, reduction)


def _class_weight_view(weight, ndim: int, class_dim: int):
    """``weight`` (C) shaped to broadcast along ``class_dim`` of an ``ndim``-d input."""
    shape = [1] * ndim
    shape[class_dim] = weight.numel()
    return weight.reshape(shape)


def _cross_entropy_probabilities(log_probs, target, weight, reduction: str, label_smoothing: float, class_dim: int):
    """Cross entropy against class probabilities (PyTorch's ``cross_entropy_loss_prob_target``)."""
    classes = log_probs.shape[class_dim]
    if target.dtype.category < 2:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_dtype_title(target.dtype)}")
    _check_class_weight(weight, classes, "cross_entropy: ")
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    products = log_probs * target
    if weight is not None:
        products = products * _class_weight_view(weight, log_probs.dim(), class_dim)
    if reduction == "none":
        return -products.sum(class_dim)
    total = -products.sum()
    if reduction == "sum":
        return total
    return total / (log_probs.numel() // classes) if log_probs.numel() else total * float("nan")


def _cross_entropy_smoothed(log_probs, target, weight, ignore_index: int, reduction: str, label_smoothing: float,
                            class_dim: int):
    """(1 - ε) nll + ε/C Σ_c -w_c log p_c for class indices (PyTorch's ``cross_entropy_loss_label_smoothing``)."""
    classes = log_probs.shape[class_dim]
    nll_term = nll(log_probs, target, weight, ignore_index, reduction)
    if weight is not None:
        log_probs = log_probs * _class_weight_view(weight, log_probs.dim(), class_dim)
    smooth = -log_probs.sum(class_dim)
    if log_probs.dim() == 1 and target.dim() == 1:
        smooth = smooth.reshape(target.shape)
    ignored = target == ignore_index
    smooth = ops.where(ignored, 0.0, smooth)
    if reduction == "sum":
        smooth = smooth.sum()
    elif reduction == "mean":
        kept = ops.logical_not(ignored)
        if weight is not None:
            safe_target = ops.where(ignored, 0, target.long())
            picked = ops.index_select(weight, 0, safe_target.reshape(-1)).reshape(safe_target.shape)
            smooth = smooth.sum() / ops.where(kept, picked, 0).sum()
        else:
            smooth = smooth.sum() / kept.sum()
    return nll_term * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _fused_cross_entropy_applies(input, target, weight, label_smoothing: float) -> bool:
    """Whether ``cross_entropy`` runs as the ``cross_entropy_loss`` op: a batched input with class-index targets, no
    label smoothing and a class weight (if any) that needs no gradient."""
    return (input.dim() >= 2 and target.dim() == input.dim() - 1 and label_smoothing == 0
            and (weight is None or not weight.requires_grad))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """log_softmax over the class dim, then nll (class indices) or -Σ p log q (class probabilities).

    Follows ``torch.nn.functional.cross_entropy``: input (C), (N, C) or (N, C, d1, ...); targets of class indices
    with ``ignore_index``/``weight``/``label_smoothing``, or class probabilities of the input's shape.
    """
    reduction = _reduction(size_average, reduce, reduction)
    class_dim = 0 if input.dim() == 1 else 1
    if input.dim() == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if _fused_cross_entropy_applies(input, target, weight, label_smoothing):
        _check_index_target(input, target)
        _check_class_weight(weight, input.shape[1])
        return cross_entropy_loss(input, target, weight, reduction, ignore_index)
    log_probs = log_softmax(input, class_dim)
    if tuple(input.shape) == tuple(target.shape):
        return _cross_entropy_probabilities(log_probs, target, weight, reduction, label_smoothing, class_dim)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    _check_index_target(input, target)
    _check_class_weight(weight, input.shape[class_dim])
    if label_smoothing > 0:
        return _cross_entropy_smoothed(log_probs, target, weight, ignore_index, reduction, label_smoothing, class_dim)
    return nll(log_probs, target, weight, ignore_index, reduction)


# -- binary -------------------------------------------------------------------------------------------------------

def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    """-(y log x + (1 - y) log(1 - x)), each log clamped at -100 (``torch.nn.functional.binary_cross_entropy``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.")
    if input.numel():
        low, high = (float(v.item()) for v in ops.aminmax(input.detach()))
        if low < 0 or high > 1:
            raise RuntimeError("all elements of input should be between 0 and 1")
    loss = -(target * _clamped_log(input) + (1 - target) * _clamped_log(1 - input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _clamped_log(x):
    """max(log x, -100) with a finite gradient at x = 0 (PyTorch's BCE clamp)."""
    positive = x > 0
    return ops.where(positive, ops.clamp(ops.log(ops.where(positive, x, 1.0)), min=-100), -100.0)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None):
    """BCE of sigmoid(x), computed stably as (1 - y) x - logsigmoid(x) (``binary_cross_entropy_with_logits``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    log_sigmoid = logsigmoid(input)
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sigmoid
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
    """Pointwise KL divergence y (log y - x) with ``input`` x = log q (``torch.nn.functional.kl_div``)."""
    legacy = size_average is not None or reduce is not None
    reduction = _reduction(size_average, reduce, reduction, _REDUCTIONS + ("batchmean",))
    if reduction == "mean" and not legacy:
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    loss = nn_functions.kl_div(input, target, 0, log_target)
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.dim() else total
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                          reduction: str = "mean"):
    """1 - cos(x1, x2) for y = 1, max(0, cos(x1, x2) - margin) for y = -1 (``cosine_embedding_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    expected = target.dim() + 1
    if input1.dim() != expected or input2.dim() != expected:
        raise RuntimeError(f"{target.dim()}D target tensor expects {expected}D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    epsilon = 1e-12  # PyTorch's: keeps zero vectors from dividing by zero
    dim = expected - 1
    products = (input1 * input2).sum(dim)
    squares1 = (input1 * input1).sum(dim) + epsilon
    squares2 = (input2 * input2).sum(dim) + epsilon
    cosine = products / ops.sqrt(squares1 * squares2)
    positive = ops.where(target == 1, 1 - cosine, 0.0)
    negative = ops.where(target == -1, ops.clamp(cosine - margin, min=0), 0.0)
    return _reduce(positive + negative, reduction)


def margin_ranking_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """max(0, -y (x1 - x2) + margin) (``torch.nn.functional.margin_ranking_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce(ops.clamp(-target * (input1 - input2) + margin, min=0), reduction)


# -- connectionist temporal classification -----------------------------------------------------------------------

def _lengths(lengths, batch: int, name: str) -> list:
    """``input_lengths``/``target_lengths`` (tensor, int or sequence) as a host list of ``batch`` ints."""
    values = lengths.reshape(-1).tolist() if hasattr(lengths, "_storage") else (
        [lengths] if isinstance(lengths, int) else list(lengths))
    if len(values) != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return [int(v) for v in values]


def _padded_targets(targets, target_lengths: list, device):
    """Targets as an (N, S) int64 tensor from padded (N, S) or concatenated (sum of lengths) form."""
    batch, longest = len(target_lengths), max(target_lengths, default=0)
    targets = targets.long() if targets.dtype != dt.int64 else targets
    if targets.dim() == 2:
        if targets.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss)")
        return targets
    if targets.dim() != 1:
        raise RuntimeError(f"ctc_loss(): targets must be 1-d (concatenated) or 2-d (padded), got {targets.dim()}-d")
    total = sum(target_lengths)
    if targets.numel() < total:
        raise RuntimeError(f"ctc_loss(): concatenated targets have {targets.numel()} elements but target_lengths "
                           f"sum to {total}")
    if longest == 0:
        return ops.zeros((batch, 0), dtype=dt.int64, device=device)
    starts = [sum(target_lengths[:n]) for n in range(batch)]
    positions = ops.tensor(starts, device=device).unsqueeze(1) + ops.arange(longest, device=device)
    return ops.take(targets, ops.clamp(positions, max=max(total - 1, 0)))


def _logsumexp_stack(*terms):
    """log Σ exp(terms) elementwise; all -inf gives -inf with a zero (not NaN) gradient."""
    peak = terms[0].detach()
    for term in terms[1:]:
        peak = ops.maximum(peak, term.detach())
    peak = ops.where(ops.isinf(peak), 0.0, peak)
    total = ops.exp(terms[0] - peak)
    for term in terms[1:]:
        total = total + ops.exp(term - peak)
    reachable = total > 0
    return ops.where(reachable, ops.log(ops.where(reachable, total, 1.0)) + peak, float("-inf"))


def _ctc_negative_log_likelihood(log_probs, targets, input_lengths: list, target_lengths: list, blank: int):
    """-log p(target | input) per batch entry by the CTC forward (alpha) recursion in log space, one step per time."""
    steps, batch, classes = log_probs.shape
    device = log_probs.device
    targets = _padded_targets(targets, target_lengths, device)
    longest = targets.shape[1]
    target_length = ops.tensor(target_lengths, device=device)
    in_target = ops.arange(longest, device=device) < target_length.unsqueeze(1)
    targets = ops.where(in_target, targets, blank)  # padding may hold anything: read it as blanks
    if targets.numel():
        low, high = (int(v.item()) for v in ops.aminmax(targets))
        if low < 0 or high >= classes:
            raise IndexError(f"Target {low if low < 0 else high} is out of bounds.")
    # the extended label sequence: blank, l1, blank, l2, ..., blank, of length 2S + 1
    blanks = ops.full((batch, longest), blank, dtype=dt.int64, device=device)
    extended = ops.stack([blanks, targets], 2).reshape(batch, 2 * longest)
    extended = ops.cat([extended, blanks[:, :1] if longest else ops.full((batch, 1), blank, dtype=dt.int64,
                                                                             device=device)], 1)
    width = extended.shape[1]
    # a path may skip the blank between two different labels: s-2 -> s
    skip = (extended[:, 2:] != blank) & (extended[:, 2:] != extended[:, :-2])
    skip = ops.cat([ops.zeros((batch, min(2, width)), dtype=dt.bool, device=device), skip], 1)
    emissions = ops.gather(log_probs, 2, extended.unsqueeze(0).expand(steps, batch, width))  # (T, N, 2S+1)
    position = ops.arange(width, device=device)
    start = (position < 1) | ((position < 2) & (target_length.unsqueeze(1) > 0))
    impossible = ops.full((batch, 2), float("-inf"), dtype=log_probs.dtype, device=device)
    alpha = ops.where(start, emissions[0], float("-inf"))
    input_length = ops.tensor(input_lengths, device=device).unsqueeze(1)
    shortest = min(input_lengths, default=0)
    for t in range(1, max(input_lengths, default=0)):
        padded = ops.cat([impossible, alpha], 1)
        previous, skipped = padded[:, 1:width + 1], ops.where(skip, padded[:, :width], float("-inf"))
        step = _logsumexp_stack(alpha, previous, skipped) + emissions[t]
        # entries whose input has ended keep their alpha; when none has, the select is skipped
        alpha = step if t < shortest else ops.where(t < input_length, step, alpha)
    last = (target_length * 2).unsqueeze(1)
    end_blank = ops.gather(alpha, 1, last).squeeze(1)
    end_label = ops.where(target_length > 0, ops.gather(alpha, 1, ops.clamp(last - 1, min=0)).squeeze(1),
                          float("-inf"))
    losses = -_logsumexp_stack(end_blank, end_label)
    if shortest == 0:  # an empty input emits only the empty target
        empty_input = input_length.squeeze(1) == 0
        losses = ops.where(empty_input, ops.where(target_length > 0, float("inf"), 0.0), losses)
    return losses


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False):
    """Connectionist temporal classification loss (``torch.nn.functional.ctc_loss``).

    ``log_probs`` (T, N, C) or unbatched (T, C); targets padded (N, S) or concatenated; 'mean' divides each loss
    by its target length, then averages. The gradient comes from autograd through the alpha recursion.
    """
    reduction = _reduction(None, None, reduction)
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss(): log_probs must be (T, N, C) or (T, C), got shape {list(log_probs.shape)}")
    steps, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    input_lengths = _lengths(input_lengths, batch, "input_lengths")
    target_lengths = _lengths(target_lengths, batch, "target_lengths")
    for length in input_lengths:
        if not 0 <= length <= steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {length} "
                               f"(while checking arguments for ctc_loss)")
    dtype = log_probs.dtype
    low_precision = dtype in (dt.float16, dt.bfloat16)  # the recursion sums many terms: run it in float32
    losses = _ctc_negative_log_likelihood(log_probs.float() if low_precision else log_probs, targets,
                                          input_lengths, target_lengths, blank)
    if zero_infinity:
        losses = ops.where(ops.isinf(losses), 0.0, losses)
    losses = losses.to(dtype) if low_precision else losses
    if reduction == "mean":
        divisor = ops.clamp(ops.tensor(target_lengths, device=log_probs.device), min=1).to(losses.dtype)
        return (losses / divisor).mean()
    if reduction == "sum":
        return losses.sum()
    return losses.squeeze(0) if unbatched else losses


# -- losses whose math is the torch-level function (core/ops/nn_functions.py) --------------------------------------

def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
    """x for y = 1, max(0, margin - x) for y = -1 (``torch.nn.functional.hinge_embedding_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    return nn_functions.hinge_embedding_loss(input, target, margin, _REDUCTIONS.index(reduction))


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                     reduce=None, reduction: str = "mean"):
    """Poisson negative log likelihood of ``target`` under rate ``input`` (or exp(input) when ``log_input``)
    (``torch.nn.functional.poisson_nll_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    return nn_functions.poisson_nll_loss(input, target, log_input, full, eps, _REDUCTIONS.index(reduction))


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with p-norm pairwise distances
    (``torch.nn.functional.triplet_margin_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    return nn_functions.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                            _REDUCTIONS.index(reduction))


# -- margin and likelihood losses written in Tensor ops ---------------------------------------------------------------

def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """log(1 + exp(-y x)), the two-class logistic loss (``torch.nn.functional.soft_margin_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(ops.logaddexp(ops.zeros_like(input), -target * input), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    """The class-averaged binary cross entropy of logits against 0/1 multi-label targets
    (``torch.nn.functional.multilabel_soft_margin_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    return _reduce(loss.sum(dim=class_dim) / input.shape[class_dim], reduction)


def _class_scores(name: str, input, target):
    """``input`` as (N, C) and ``target`` as (N, ...) for the margin losses, which take 1-D or 2-D input."""
    if input.dim() not in (1, 2) or input.numel() == 0 and input.dim() != 2:
        raise RuntimeError(f"{name}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if input.dim() == 1:
        return input.unsqueeze(0), target.reshape(1, -1), True
    return input, target.reshape(input.shape[0], -1), False


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                      reduction: str = "mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C, the multi-class hinge loss
    (``torch.nn.functional.multi_margin_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    scores, target, unbatched = _class_scores("multi_margin_loss", input, target)
    n, classes = scores.shape
    if target.shape[1] != 1:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size, expected {n} but got "
                           f"{list(target.shape)}")
    target = target.to(dt.int64)
    if target.numel() and (int(target.min()) < 0 or int(target.max()) >= classes):
        raise IndexError(f"multi_margin_loss: target out of range for {classes} classes")
    correct = ops.gather(scores, 1, target)  # (N, 1)
    hinge = ops.clamp(margin - correct + scores, min=0) ** p
    if weight is not None:
        hinge = hinge * ops.index_select(weight, 0, target.reshape(-1)).unsqueeze(1)
    others = ops.arange(classes, device=scores.device).unsqueeze(0) != target
    loss = ops.where(others, hinge, ops.zeros_like(hinge)).sum(dim=1) / classes
    return _reduce(loss.squeeze(0) if unbatched else loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])) / C; each row of ``target``
    lists class indices up to its first -1 (``torch.nn.functional.multilabel_margin_loss``)."""
    reduction = _reduction(size_average, reduce, reduction)
    scores, target, unbatched = _class_scores("multilabel_margin_loss", input, target)
    classes = scores.shape[1]
    if tuple(target.shape) != tuple(scores.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(scores.shape)}")
    target = target.to(dt.int64)
    listed = ops.cumprod((target >= 0).to(dt.int64), dim=1) > 0  # entries before the first -1
    index = ops.where(listed, target, ops.zeros_like(target))
    if index.numel() and int(index.max()) >= classes:
        raise IndexError(f"multilabel_margin_loss: target out of range for {classes} classes")
    hits = (index.unsqueeze(2) == ops.arange(classes, device=scores.device)) & listed.unsqueeze(2)
    is_target = hits.any(dim=1)  # (N, C)
    gap = 1 - ops.gather(scores, 1, index).unsqueeze(2) + scores.unsqueeze(1)  # (N, listed j, class i)
    pairs = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = ops.where(pairs, ops.clamp(gap, min=0), ops.zeros_like(gap)).sum(dim=(1, 2)) / classes
    return _reduce(loss.squeeze(0) if unbatched else loss, reduction)


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """0.5 (log(var) + (input - target)^2 / var), the Gaussian negative log likelihood with ``var`` clamped to
    ``eps`` (``torch.nn.functional.gaussian_nll_loss``)."""
    if isinstance(var, (int, float)):
        var = ops.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)  # one variance per sample, homoscedastic over the last dim
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var + (ops.clamp(var, min=eps) - var).detach()  # clamped value, gradient as if unclamped (PyTorch's rule)
    loss = 0.5 * (ops.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with any distance ``d`` (pairwise_distance by default)
    (``torch.nn.functional.triplet_margin_with_distance_loss``)."""
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    if distance_function is None:
        from .norm import pairwise_distance
        distance_function = pairwise_distance
    positive_distance = distance_function(anchor, positive)
    negative_distance = distance_function(anchor, negative)
    if swap:
        negative_distance = ops.minimum(negative_distance, distance_function(positive, negative))
    return _reduce(ops.clamp(positive_distance - negative_distance + margin, min=0), reduction)
