"""Structured control flow with PyTorch's eager semantics: ``cond`` runs one of two branches on its operands and
``while_loop`` runs a body until a predicate is false (``torch.cond``, ``torch.while_loop``).

Both call the user's functions directly, so autograd records the branch taken and every iteration run; what they
add is PyTorch's checks of the predicate and of what the functions take and return.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..tensor import Tensor

__all__ = ["cond", "while_loop"]
METHODS: dict = {}


def _check_operands(op: str, name: str, operands) -> tuple:
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"{op}: expected {name} to be a tuple or list of tensors, but got "
                           f"{type(operands).__name__}")
    return tuple(operands)


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if pred else ``false_fn(*operands)``; pred a bool or a one-element tensor
    (``torch.cond``, eager)."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"cond: expected pred to be bool or single-element tensor, but got a tensor of shape "
                               f"{list(pred.shape)}")
        pred = bool(pred.item())
    elif not isinstance(pred, bool):
        raise RuntimeError(f"cond: expected pred to be bool or tensor, but got {type(pred).__name__}")
    if not (callable(true_fn) and callable(false_fn)):
        raise RuntimeError("cond: expected both branches to be callable")
    operands = _check_operands("cond", "operands", operands)
    return (true_fn if pred else false_fn)(*operands)


def _truth(pred) -> bool:
    if isinstance(pred, bool):
        return pred
    if isinstance(pred, Tensor) and pred.ndim == 0 and pred.dtype is dt.bool:
        return bool(pred.item())
    raise RuntimeError(f"while_loop: cond_fn must return a boolean scalar tensor or a boolean but got {pred!r}")


def while_loop(cond_fn, body_fn, carried_inputs):
    """The carried values after ``carried = body_fn(*carried)`` ran while ``cond_fn(*carried)`` held: a tuple of as
    many values as ``carried_inputs`` (``torch.while_loop``, eager)."""
    if not (callable(cond_fn) and callable(body_fn)):
        raise RuntimeError("while_loop: expected cond_fn and body_fn to be callable")
    carried = _check_operands("while_loop", "carried_inputs", carried_inputs)
    while _truth(cond_fn(*carried)):
        out = body_fn(*carried)
        if not isinstance(out, (tuple, list)):
            raise RuntimeError(f"while_loop: body_fn should return a tuple but got {type(out).__name__}")
        if len(out) != len(carried):
            raise RuntimeError(f"while_loop: body_fn should return the same number of elements as carried_inputs "
                               f"({len(carried)}), but returned {len(out)}")
        for before, after in zip(carried, out):
            if isinstance(before, Tensor) and (not isinstance(after, Tensor) or after.shape != before.shape
                                               or after.dtype is not before.dtype):
                raise RuntimeError(f"while_loop: body_fn should return tensors of the carried shapes and dtypes, "
                                   f"but {_describe(before)} became {_describe(after)}")
        carried = tuple(out)
    return carried


def _describe(value) -> str:
    if isinstance(value, Tensor):
        return f"a {value.dtype.name} tensor of shape {list(value.shape)}"
    return type(value).__name__
