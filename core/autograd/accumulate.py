"""Leaves' gradients into ``.grad``: the engine's last step for each leaf (PyTorch's AccumulateGrad).

Kept out of the compiled hot modules (core/_hot.py): the rule that takes the incoming gradient itself counts
references with ``sys.getrefcount``, and the count a function sees depends on whether it is compiled. The engine
measures the count of a gradient only it holds, through the same call, into :data:`SOLE`.
"""

from __future__ import annotations

from sys import getrefcount as _getrefcount

from ..dispatch import get_operator
from ..dispatch.keys import tls
from ..tensor import Tensor

__all__ = ["accumulate", "count_references", "SOLE"]

SOLE = [3]  # the reference count accumulate() sees for a gradient only the engine's list holds (the engine sets it)


def count_references(grad) -> int:
    """``sys.getrefcount`` of ``grad`` as :func:`accumulate` sees its argument (the engine's calibration)."""
    return _getrefcount(grad)


def _is_non_overlapping_and_dense(shape: tuple, stride: tuple) -> bool:
    """Whether the elements fill their span of the storage exactly once, in some order of the dims."""
    expected = 1
    for size, step in sorted(((n, st) for n, st in zip(shape, stride) if n != 1), key=lambda d: d[1]):
        if step != expected:
            return False
        expected *= size
    return True


def _new_grad(variable, grad):
    """A fresh ``.grad`` holding ``grad`` in PyTorch's gradient layout: the variable's strides when its elements
    are non-overlapping and dense, else row-major contiguous."""
    from ..ops.creation import empty_strided
    from ..tensor import contiguous_strides

    shape = variable._shape
    dense = _is_non_overlapping_and_dense(shape, variable._stride)
    out = empty_strided(shape, variable._stride if dense else contiguous_strides(shape), dtype=grad.dtype,
                        device=grad.device)
    get_operator("copy_")(out, grad, False)
    return out


def accumulate(variable, grad, create_graph: bool) -> None:
    """Add ``grad`` into ``variable.grad`` (or make it ``.grad``), as PyTorch's AccumulateGrad does."""
    wanted = variable.__dict__.get("_grad_dtype", grad.dtype)  # Tensor.grad_dtype, when set
    if wanted is not None and grad.dtype is not wanted:
        grad = grad.to(wanted)
    if grad._shape != variable._shape:
        grad = grad.expand(variable._shape) if grad.numel() == 1 else grad
    if variable.grad is None:
        # PyTorch's rule: take the incoming gradient itself when nothing else can see it (only the engine's
        # list, this frame and getrefcount hold the tensor; only the tensor holds its storage) and it has the
        # variable's layout; otherwise copy, since it may be the caller's tensor or shared by other edges
        # (under enforce_grad_layout_policy(False) a stealable gradient is taken whatever its strides)
        if not create_graph and _getrefcount(grad) <= SOLE[0] and _getrefcount(grad._storage) <= 2 \
                and grad.grad_fn is None and grad._offset == 0 and grad.dtype is variable.dtype \
                and (grad._stride == variable._stride or not tls.grad_layout_policy) \
                and (grad._storage.device is variable._storage.device
                     or grad._storage.device == variable._storage.device):
            variable.grad = grad
        else:
            variable.grad = grad.clone() if create_graph else _new_grad(variable, grad)
    elif create_graph:
        variable.grad = variable.grad + grad
    else:  # in place, as PyTorch accumulates; straight to the ops (grad mode is off here)
        if not _ADD_COPY:
            _ADD_COPY.extend((get_operator("add_"), get_operator("add"), get_operator("copy_")))
        add_, add, copy_ = _ADD_COPY
        target = variable.grad
        if target.dtype is grad.dtype and target.__class__ is Tensor and grad.__class__ is Tensor \
                and target._storage.device is grad._storage.device:
            add_(target, grad)  # one write into .grad where the backend runs add_ in place
        else:
            copy_(target, add(target, grad), False)
        target._storage.version += 1


_ADD_COPY: list = []  # add_, add and copy_ operators, looked up on first use (core.ops defines them after this)
