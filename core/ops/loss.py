"""Losses: the ``cross_entropy_loss`` op and its one-node derivative ``cross_entropy_loss_backward``.

``F.cross_entropy`` over class indices of a batched input (no label smoothing, a class weight that needs no
gradient) checks PyTorch's arguments in ``core/nn/functional/loss.py`` and calls ``cross_entropy_loss``; both ops
are composites that backends may fuse (cpu_c does). :func:`nll` is also ``F.nll_loss``'s and the other cross
entropies' arithmetic. The derivative formula is in ``core/ops/derivatives.py``.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..dispatch import define
from .creation import zeros_like
from .elementwise import log_softmax, softmax, where
from .indexing import gather, index_select, scatter
from .reduction import aminmax

__all__: list = []
METHODS: dict = {}


def _checked_targets(target, classes: int, ignore_index: int):
    """``(target as int64, mask of non-ignored entries or None)``; raises for out-of-range non-ignored targets."""
    if target.dtype != dt.int64:
        target = target.long()
    if target.numel() == 0 or target.device.type == "meta":  # meta has no values to check, as in PyTorch
        return target, None
    low, high = (int(v.item()) for v in aminmax(target))
    # the common case costs one reduction: every target valid and ignore_index outside their range
    if 0 <= low and high < classes and not low <= ignore_index <= high:
        return target, None
    valid = target != ignore_index
    out_of_range = valid & ((target < 0) | (target >= classes))
    if bool(out_of_range.any().item()):
        raise IndexError(f"Target {int(target[out_of_range].reshape(-1)[0].item())} is out of bounds.")
    return target, valid


def _pick_class(log_probs, target):
    """``log_probs[n, target[n, ...], ...]``: a gather along the class dim (dim 0 for unbatched input)."""
    if log_probs.dim() == 1:
        return gather(log_probs, 0, target.reshape(1)).reshape(target.shape)
    return gather(log_probs, 1, target.unsqueeze(1)).squeeze(1)


def nll(log_probs, target, weight, ignore_index: int, reduction: str):
    """Negative log-likelihood of checked class indices; the weighted mean divides by the picked weights' sum."""
    classes = log_probs.shape[0 if log_probs.dim() == 1 else 1]
    if log_probs.dim() == 1 and target.dim() == 1:  # (C) input with a one-element batch of targets
        log_probs = log_probs.unsqueeze(0)
    target, valid = _checked_targets(target, classes, ignore_index)
    safe_target = target if valid is None else where(valid, target, 0)
    loss = -_pick_class(log_probs, safe_target)
    sample_weight = None
    if weight is not None:
        sample_weight = index_select(weight, 0, safe_target.reshape(-1)).reshape(safe_target.shape)
        if valid is not None:
            sample_weight = where(valid, sample_weight, 0)
        loss = loss * sample_weight
    elif valid is not None:
        sample_weight = valid.to(loss.dtype)
        loss = where(valid, loss, 0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if sample_weight is None else loss.sum() / sample_weight.sum()


def _cross_entropy_loss_parts(input, target, weight, reduction, ignore_index):
    return nll(log_softmax(input, 1), target, weight, ignore_index, reduction)


cross_entropy_loss = define(
    "cross_entropy_loss", decomposition=_cross_entropy_loss_parts,
    doc="cross_entropy_loss(input, target, weight, reduction, ignore_index): -log_softmax(input, 1)[n, target[n, "
        "...], ...] times weight[target] (weight None or of shape (C)), 0 where target == ignore_index, reduced by "
        "reduction ('none', 'sum' or 'mean': divided by the kept weights' sum); input (N, C, d...), integer target "
        "(N, d...) of class indices (IndexError for others but ignore_index). A composite with its own derivative "
        "that backends may fuse")


def _cross_entropy_loss_backward_parts(grad, input, target, weight, reduction, ignore_index):
    """d loss / d input = (softmax(input) - one_hot(target)) * weight[target] * the reduction's scale of ``grad``,
    0 on ignored entries; written in Tensor ops, so it is differentiable itself (double backward)."""
    target = target if target.dtype == dt.int64 else target.long()
    valid = target != ignore_index
    safe_target = where(valid, target, 0)
    if weight is None:
        sample_weight = valid.to(input.dtype)
    else:
        picked = index_select(weight, 0, safe_target.reshape(-1)).reshape(safe_target.shape)
        sample_weight = where(valid, picked.to(input.dtype), 0)
    if reduction == "mean":
        grad = grad / sample_weight.sum()
    scale = where(valid, sample_weight * grad, 0).unsqueeze(1)  # 0, not nan, when every entry is ignored
    one_hot = scatter(zeros_like(input), 1, safe_target.unsqueeze(1), 1.0)
    return (softmax(input, 1) - one_hot) * scale


cross_entropy_loss_backward = define(
    "cross_entropy_loss_backward", decomposition=_cross_entropy_loss_backward_parts,
    doc="cross_entropy_loss_backward(grad, input, target, weight, reduction, ignore_index): the input's gradient "
        "of cross_entropy_loss, (softmax(input, 1) - one_hot(target)) * weight[target] * grad (divided by the kept "
        "weights' sum for 'mean'), 0 where target == ignore_index. A composite (differentiable for double backward) "
        "that backends may fuse")
