"""Inference tensors outside ``inference_mode``: the InferenceTensor key's kernel and the save-for-backward check.

A storage allocated inside ``inference_mode`` carries the InferenceTensor dispatch key (see ``core/storage.py``),
so only calls with an inference tensor among their arguments, made outside the mode, pay for these rules
(inside it, the mode excludes the key). They follow PyTorch's "Inference Mode" note: such tensors may be read by
any op, but not written in place, and not saved for backward by an op that records the graph.
"""

from __future__ import annotations

from ..dispatch.keys import InferenceTensor
from ..dispatch.operator import set_functionality_fallback

__all__ = ["inference_tensor_kernel", "refuse_inference_write", "check_saveable", "INPLACE_ERROR", "SAVED_ERROR",
           "install"]

INPLACE_ERROR = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
                 "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                 "more details.")
SAVED_ERROR = ("Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal "
               "tensor and use it in autograd.")


def _is_inference(value) -> bool:
    return hasattr(value, "_storage") and value._storage.inference


def refuse_inference_write(op, args: tuple, kwargs: dict) -> None:
    """RuntimeError (PyTorch's message) if ``op`` writes in place (or through ``out=``) into an inference tensor."""
    written = [args[i] for i in op.writes if i < len(args)]
    out = kwargs.get("out")
    written.extend(out if isinstance(out, (list, tuple)) else (out,))
    if any(_is_inference(t) for t in written):
        raise RuntimeError(INPLACE_ERROR)


def inference_tensor_kernel(op, below: int, *args, **kwargs):
    """Refuse an in-place write (or an ``out=``) into an inference tensor, then run the op below."""
    refuse_inference_write(op, args, kwargs)
    return op.redispatch(below, *args, **kwargs)


def check_saveable(tensors) -> None:
    """RuntimeError (PyTorch's message) if one of ``tensors`` is an inference tensor: it has no version counter
    to check when backward reads it."""
    if any(_is_inference(t) for t in tensors):
        raise RuntimeError(SAVED_ERROR)


def install() -> None:
    """Make :func:`inference_tensor_kernel` the InferenceTensor key's kernel for every op."""
    set_functionality_fallback(InferenceTensor, inference_tensor_kernel)
