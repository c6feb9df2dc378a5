"""Activation checkpointing: keep only the inputs of a block and recompute it during backward."""

from __future__ import annotations

from ..autograd import Function, backward as autograd_backward, enable_grad
from ..ops.random import get_rng_state, set_rng_state

__all__ = ["checkpoint"]


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, fn, preserve_rng_state, *args):
        ctx.fn = fn
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.save_for_backward(*(a for a in args if hasattr(a, "_storage")))
        ctx.layout = [hasattr(a, "_storage") for a in args]
        ctx.others = [None if is_tensor else a for a, is_tensor in zip(args, ctx.layout)]
        return fn(*args)  # runs under no_grad: nothing inside is kept

    @staticmethod
    def backward(ctx, *grads):
        saved = iter(ctx.saved_tensors)
        inputs = [next(saved).detach().requires_grad_(t.requires_grad) if is_tensor else other
                  for is_tensor, other, t in zip(ctx.layout, ctx.others, _tensors_or_none(ctx))]
        if ctx.rng_state is not None:
            current = get_rng_state()
            set_rng_state(ctx.rng_state)
        try:
            with enable_grad():
                outputs = ctx.fn(*inputs)
        finally:
            if ctx.rng_state is not None:
                set_rng_state(current)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if hasattr(o, "_storage") and o.requires_grad]
        if pairs:  # like PyTorch's reentrant checkpoint: parameters used inside accumulate their .grad too
            autograd_backward([o for o, _ in pairs], [g for _, g in pairs])
        input_grads = [x.grad if hasattr(x, "_storage") and x.requires_grad else None for x in inputs]
        return (None, None, *input_grads)


def _tensors_or_none(ctx):
    saved = iter(ctx.saved_tensors)
    return [next(saved) if is_tensor else None for is_tensor in ctx.layout]


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state: bool = True, **kwargs):
    """``function(*args)`` without storing its intermediate activations; they are recomputed in backward.

    Like ``torch.utils.checkpoint.checkpoint``: saves memory at the cost of a second forward pass.
    """
    if kwargs:
        raise ValueError(f"checkpoint(): unexpected keyword arguments {sorted(kwargs)}")
    return _Checkpoint.apply(function, preserve_rng_state, *args)
