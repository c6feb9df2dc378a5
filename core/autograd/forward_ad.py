"""``core.autograd.forward_ad``: forward-mode AD's API (``torch.autograd.forward_ad``) over the reverse-mode graph.

A dual tensor is its primal on the recorded graph plus a tangent kept by the current level. Tangents are not
pushed through each op as the ops run: ``unpack_dual`` computes the tangent of the tensor it is given when asked,
as the Jacobian-vector product of that tensor with respect to every dual tensor of the level, by the double-vjp
trick (see :mod:`core.autograd.functional`). The answers are PyTorch's; the differences are that a dual tensor
(and what is computed from it) reports ``requires_grad=True`` while its level is open, and that each
``unpack_dual`` of a computed tensor costs two backward passes.
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = ("``(primal, tangent)`` of a dual tensor "
                              "(``torch.autograd.forward_ad.UnpackedDualTensor``).")

_levels: list = []  # the open levels: each a list of (dual tensor, tangent, primal had a graph of its own)


def enter_dual_level() -> int:
    """Open a new forward AD level and return its index (``torch.autograd.forward_ad.enter_dual_level``)."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append([])
    return len(_levels) - 1


def exit_dual_level(*, level=None) -> None:
    """Close the current level: its dual tensors lose their tangents (``torch.autograd.forward_ad.exit_dual_level``)."""
    current = len(_levels) - 1
    if level is None:
        level = current
    if level != current or current < 0:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _levels.pop()


class dual_level:
    """Context manager of a forward AD level: ``with dual_level(): ...`` (``torch.autograd.forward_ad.dual_level``)."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _level(level, fn_name: str) -> list:
    current = len(_levels) - 1
    if level is None:
        level = current
    if level < 0:
        if fn_name == "make_dual":
            raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                               "enter_dual_level() first.")
        return None
    if level != current:
        raise RuntimeError(f"{fn_name}: forward AD level {level} does not exist (the current level is {current})")
    return _levels[level]


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: ``tensor`` carrying ``tangent`` as its forward gradient at ``level``
    (``torch.autograd.forward_ad.make_dual``)."""
    duals = _level(level, "make_dual")
    for what, t in (("primal", tensor), ("tangent", tangent)):
        if not hasattr(t, "_storage"):
            raise TypeError(f"make_dual: expected {what} to be a Tensor, got {type(t).__name__}")
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise ValueError(f"Expected {what} to be floating point or complex, but got: {t.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    has_graph = tensor.requires_grad
    dual = tensor.view_as(tensor) if has_graph else tensor.detach().requires_grad_(True)
    duals.append((dual, tangent, has_graph))
    return dual


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level``; the tangent is None when ``tensor`` does not depend on a
    dual tensor (``torch.autograd.forward_ad.unpack_dual``)."""
    duals = _level(level, "unpack_dual")
    if not duals or not tensor.requires_grad:
        return UnpackedDualTensor(tensor, None)
    for dual, tangent, has_graph in duals:
        if dual is tensor:
            return UnpackedDualTensor(tensor if has_graph else tensor.detach(), tangent)
    from ..ops.creation import zeros_like
    from .functional import grad
    from .grad_mode import enable_grad

    inputs = tuple(d for d, _, _ in duals)
    with enable_grad():
        dummy = zeros_like(tensor).requires_grad_(True)
        pulled = grad(tensor, inputs, dummy, retain_graph=True, create_graph=True, allow_unused=True)
        pairs = [(g, t) for g, (_, t, _) in zip(pulled, duals) if g is not None and g.requires_grad]
        tangent = None
        if pairs:
            tangent = grad([g for g, _ in pairs], dummy, [t for _, t in pairs], allow_unused=True)[0]
            tangent = zeros_like(tensor) if tangent is None else tangent
    keep = any(has_graph for _, _, has_graph in duals)
    return UnpackedDualTensor(tensor if keep else tensor.detach(), tangent)
