"""Differentiable collectives (``torch.distributed.nn.functional``): they return new tensors and backward
communicates the gradients."""

from __future__ import annotations

from ...autograd.function import Function
from .. import distributed_c10d as c10d
from ..backends import ReduceOp

__all__ = ["all_reduce"]


class _AllReduceSum(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        out = tensor.clone()
        c10d.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        # d(sum over ranks of x_r)/dx_mine reaches every rank's output: the gradient is the sum of theirs
        grad = grad.clone()
        c10d.all_reduce(grad, group=ctx.group)
        return None, grad


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """The sum of ``tensor`` over every rank of ``group``, as a new tensor whose backward sums the gradients over
    the ranks (``torch.distributed.nn.functional.all_reduce``); only ReduceOp.SUM is differentiable here."""
    if op is not ReduceOp.SUM:
        raise ValueError(f"core.distributed.nn.functional.all_reduce: only ReduceOp.SUM is supported, got {op}")
    return _AllReduceSum.apply(c10d._group(group), tensor)
