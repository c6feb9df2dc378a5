"""Loss (core.ops.loss, csrc/loss.c): fused ``cross_entropy_loss`` / ``cross_entropy_loss_backward``, one C pass per
row of logits instead of the log_softmax + nll_loss ops of the decompositions.

C takes (N, C) logits with int64 targets (N) and a class weight (None or (C)); (N, C, d...) logits are the same loss
over N * d... rows: the class dim is moved last and the targets flattened (one copy), and 'none' results and
gradients are given the input's shapes back. C checks the targets before it reads any logit; a target outside
0..C-1 that is not ignore_index raises the decomposition's IndexError.
"""

from __future__ import annotations

from core import dtypes as dt
from core.backends.api import planning

from ..context import FLOATS, Family
from ..layout import noted

__all__ = ["kernels", "OPS"]

OPS = ("cross_entropy_loss", "cross_entropy_loss_backward")
_REDUCTIONS = {"none": 0, "sum": 1, "mean": 2}


def _fits(input, target, weight, reduction) -> bool:
    """Whether C takes these operands: non-empty (N, C, d...) float32/float64 logits, int64 targets (N, d...), a
    weight None or (C) of the logits' dtype, all on one device, and a known reduction."""
    shape = tuple(input.shape)
    return (input.dtype.name in FLOATS and input.dim() >= 2 and input.numel() > 0 and reduction in _REDUCTIONS
            and target.dtype == dt.int64 and tuple(target.shape) == shape[:1] + shape[2:]
            and target._storage.device is input._storage.device
            and (weight is None or (weight.dtype is input.dtype and tuple(weight.shape) == shape[1:2]
                                    and weight._storage.device is input._storage.device)))


def _rows(input):
    """(N * d..., C) contiguous logits: the input itself when it already is, else the class dim moved last (a copy;
    reshape alone may give a strided view)."""
    if input.dim() == 2:
        return input.contiguous()
    return input.movedim(1, -1).reshape(-1, input.shape[1]).contiguous()


class _Loss(Family):
    ops = OPS

    def _check(self, op: str, status: int, target) -> None:
        """Raise for a nonzero status of a C kernel: 1 + a row with a bad target, or -1 for no memory."""
        self.check_scratch(op, status < 0)
        if status:
            raise IndexError(f"Target {int(target[status - 1].item())} is out of bounds.")

    def cross_entropy_loss(self, input, target, weight, reduction, ignore_index):
        """-log_softmax(input)[n, target[n]] * weight[target[n]], 0 where ignored, reduced."""
        op = "cross_entropy_loss"
        if not _fits(input, target, weight, reduction):
            return self.base[op](input, target, weight, reduction, ignore_index)
        x, t, w = _rows(input), target.contiguous().reshape(-1), self.contiguous(weight)
        rows, classes = x.shape
        shape = tuple(target.shape) if reduction == "none" else ()
        out, buf = self.empty(shape, x.dtype)
        fn = self.c[op, x.dtype.name]
        status = fn(rows, classes, self.pointer(op, x), self.pointer(op, t), self.pointer(op, w), int(ignore_index),
                    _REDUCTIONS[reduction], buf)
        self._check(op, status, t)
        if planning():  # a capture: the replay calls C itself (a bad target there: this kernel raises)
            self.note(fn, (rows, classes, noted(self.ffi, x), noted(self.ffi, t), noted(self.ffi, w), int(ignore_index),
                           _REDUCTIONS[reduction], noted(self.ffi, out)), shape, x.dtype)
        return out

    def cross_entropy_loss_backward(self, grad, input, target, weight, reduction, ignore_index):
        """(softmax(input) - one_hot(target)) * weight[target] * grad (over the kept weights' sum for 'mean')."""
        op = "cross_entropy_loss_backward"
        per_row = reduction == "none"
        grad_shape = tuple(target.shape) if per_row else ()
        if not _fits(input, target, weight, reduction) or grad.dtype is not input.dtype or tuple(
                grad.shape) != grad_shape or grad._storage.device is not input._storage.device:
            return self.base[op](grad, input, target, weight, reduction, ignore_index)
        g, x, t, w = grad.contiguous(), _rows(input), target.contiguous().reshape(-1), self.contiguous(weight)
        rows, classes = x.shape
        out, buf = self.empty(tuple(x.shape), x.dtype)
        fn = self.c[op, x.dtype.name]
        status = fn(rows, classes, self.pointer(op, g), int(per_row), self.pointer(op, x), self.pointer(op, t),
                    self.pointer(op, w), int(ignore_index), _REDUCTIONS[reduction], buf)
        self._check(op, status, t)
        if input.dim() == 2:
            if planning():  # a capture: the replay calls C itself
                ffi = self.ffi
                self.note(fn, (rows, classes, noted(ffi, g), int(per_row), noted(ffi, x), noted(ffi, t), noted(ffi, w),
                               int(ignore_index), _REDUCTIONS[reduction], noted(ffi, out)), tuple(x.shape),
                          x.dtype)
            return out
        # rows back to (N, d..., C), then the class dim back to 1: the gradient has the input's shape (a
        # channels-last layout, as the rows were computed)
        return out.reshape(*target.shape, classes).movedim(-1, 1)


def kernels(ctx) -> dict:
    """{op: kernel} for :data:`OPS`."""
    return _Loss(ctx).kernels()
