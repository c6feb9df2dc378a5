"""``backward`` and ``grad``: the user-facing entry points of the engine."""

from __future__ import annotations

from ..sparse_tensor import SparseTensor
from .engine import run_backward

__all__ = ["backward", "grad"]


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


def _default_grads(tensors, grad_tensors, create_graph: bool) -> list:
    from ..ops.creation import ones_like

    grads = list(_as_tuple(grad_tensors)) or [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got {len(grads)} gradients for "
                           f"{len(tensors)} tensors")
    out = []
    for t, g in zip(tensors, grads):
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = ones_like(t)
        elif g._shape != t._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(g._shape)} and output[0] has "
                               f"a shape of {list(t._shape)}.")
        out.append(g if create_graph else g.detach())
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (``torch.autograd.backward``)."""
    tensors = _as_tuple(tensors)
    grads = _default_grads(tensors, grad_tensors, create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    inputs = tuple(_grad_holder(i) for i in _as_tuple(inputs)) or None
    run_backward(tensors, grads, retain, create_graph, inputs=inputs, accumulate=True)


def _grad_holder(t):
    """What autograd differentiates for ``t``: ``t`` itself, or a sparse tensor's values (its gradient's home)."""
    return t.grad_holder if isinstance(t, SparseTensor) else t


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused: bool = False, materialize_grads: bool = False) -> tuple:
    """Gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad`` (``torch.autograd.grad``)."""
    outputs = _as_tuple(outputs)
    inputs_t = _as_tuple(inputs)
    grads = _default_grads(outputs, grad_outputs, create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(outputs, grads, retain, create_graph, inputs=tuple(_grad_holder(i) for i in inputs_t),
                          allow_unused=allow_unused or materialize_grads, accumulate=False)
    result = tuple(g if g is None or not isinstance(i, SparseTensor) else i.with_values(g)
                   for g, i in zip(result, inputs_t))
    if materialize_grads:
        from ..ops.creation import zeros_like

        result = tuple(zeros_like(i) if g is None else g for g, i in zip(result, inputs_t))
    return result
