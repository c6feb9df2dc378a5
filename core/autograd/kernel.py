"""The Autograd dispatch key's kernel, shared by every op: run below, then record a Node.

An op with a derivative formula (``op.derivative``) runs its backend kernel
with Autograd excluded and, when an input requires grad, gets a Node whose
formula is that derivative. A composite op without a formula runs its
decomposition with Autograd still on, so its parts record themselves. Views
remember their base; in-place ops check the leaf rules and re-point
``grad_fn`` of the tensor they wrote.
"""

from __future__ import annotations

from ..dispatch.keys import Autograd, InferenceTensor, tls
from ..tensor import Tensor
from ..dispatch.operator import set_functionality_fallback
from .anomaly import _state as _anomaly, record_forward
from .graph import SavedContext, edge_of, node_class
from .inference import check_saveable, refuse_inference_write

__all__ = ["autograd_kernel", "install"]

_MASK = Autograd.mask
_COMPLEX = 3  # core.dtypes' category of complex dtypes
_INFERENCE_MASK = InferenceTensor.mask


def _tensor_inputs(args) -> list:
    found = []
    for a in args:
        if hasattr(a, "_storage"):
            found.append(a)
        elif a.__class__ is list or a.__class__ is tuple:
            for b in a:  # a loop, not a generator: no Python frame for the usual tuple of ints (dims, sizes)
                if hasattr(b, "_storage"):
                    found.append(b)
    return found


def _not_implemented(op_name: str):
    def formula(ctx, *grads):
        raise RuntimeError(f"the derivative for '{op_name}' is not implemented")

    return formula


_WRAPPED: dict = {}
_PREPARED: dict = {}  # op name -> (wrapped formula, Node class); formulas are attached once, at import
_NO_EDGE = (None, 0)


def _per_tensor_input(formula):
    """Adapt a formula's per-argument gradients to the node's edges: tensor inputs only, each summed back to
    its input's shape (undoing broadcasting) and cast to its dtype and device."""
    wrapped = _WRAPPED.get(formula)
    if wrapped is not None:
        return wrapped

    def run(ctx, *grads):
        per_arg = formula(ctx, *grads)
        flat = []
        for i, arg in enumerate(ctx.args):
            g = per_arg[i] if i < len(per_arg) else None
            if hasattr(arg, "_storage"):
                flat.append(_fit(g, arg))
            elif arg.__class__ is list or arg.__class__ is tuple:
                parts = g if g is not None else [None] * len(arg)
                for p, a in zip(parts, arg):
                    if hasattr(a, "_storage"):
                        flat.append(_fit(p, a))
        return tuple(flat)

    _WRAPPED[formula] = run
    return run


def _fit(g, like):
    if g is None or like.dtype.category < 2:
        return None
    if g._shape == like._shape and g.dtype is like.dtype and g._storage.device is like._storage.device \
            and (like.grad_fn is not None or "_grad_dtype" not in like.__dict__):
        return g  # the common case: nothing to sum, cast or move
    if g._shape != like._shape:
        from ..ops._util import sum_to_shape

        g = sum_to_shape(g, like._shape)
    # PyTorch's handle_r_to_c: a real input's gradient is real
    if g.dtype.category == _COMPLEX and like.dtype.category != _COMPLEX:
        g = g.real
    target = like.dtype
    if like.grad_fn is None and "_grad_dtype" in like.__dict__:  # a leaf's Tensor.grad_dtype (None: keep g's)
        target = like.__dict__["_grad_dtype"] or g.dtype
    g_device, like_device = g._storage.device, like._storage.device
    if g.dtype is not target or g_device is not like_device:
        g = g.to(like_device, target)  # e.g. a 0-d CPU operand of an op that ran on another device
    return g


def autograd_kernel(op, below: int, *args, **kwargs):
    """Record ``op`` in the graph when an input requires grad, then return the outputs."""
    if below & _INFERENCE_MASK and op.writes:  # an inference tensor among the inputs (only outside inference_mode)
        refuse_inference_write(op, args, kwargs)
    formula = op.derivative
    if (formula is None and op.decomposition is not None and op.default is None) \
            or (op.records_parts is not None and op.records_parts(*args, **kwargs)):
        return op.decomposition(*args, **kwargs)  # the parts record themselves
    inputs = _tensor_inputs(args)
    if below & _INFERENCE_MASK:
        if all(t._storage.inference for t in inputs):  # PyTorch: such tensors carry no Autograd key
            return op.redispatch(below, *args, **kwargs)
        if op.inplace and op.saves_inputs:
            check_saveable(inputs)  # refused before the write, as PyTorch does
    if op.inplace:
        _check_inplace(inputs[0])
    previous = tls.exclude
    tls.exclude = previous | _MASK
    try:  # op.redispatch(below, ...) without its frame
        kernel = op._cache.get(below) or op._resolve(below)
        out = kernel(*args, **kwargs)
        if out is NotImplemented:
            out = op._declined(below, args, kwargs)
    finally:
        tls.exclude = previous
    if out.__class__ is Tensor:  # the common single-output case, without the generic loops below
        if out.dtype.category < 2 or not op.differentiable:
            return out
        outs = (out,)
        meta = ((out._shape, out.dtype, out._storage.device),)
    else:
        if not op.differentiable:
            return out
        outs = out if isinstance(out, tuple) else (out,)
        if not any(hasattr(o, "_storage") and o.dtype.category >= 2 for o in outs):
            return out
        meta = tuple((o._shape, o.dtype, o.device) if hasattr(o, "_storage") else ((), None, None) for o in outs)
    if below & _INFERENCE_MASK:  # an inference tensor among the inputs (only outside inference_mode)
        if not op.inplace and getattr(outs[0], "_storage", None) is inputs[0]._storage:
            return out  # a view of an inference tensor is an inference tensor outside the graph, as in PyTorch
        if op.saves_inputs:
            check_saveable(inputs)
    prepared = _PREPARED.get(op.name)
    if prepared is None:
        prepared = _PREPARED[op.name] = (_per_tensor_input(formula or _not_implemented(op.name)), node_class(op.name))
    ctx = SavedContext(args, kwargs, outs)
    edges = []
    for t in inputs:  # edge_of(t), inlined for inputs that need no gradient and for non-leaves
        if not t.requires_grad:
            edges.append(_NO_EDGE)
        elif t.grad_fn is not None:
            edges.append((t.grad_fn, t.__dict__.get("_output_nr", 0)))
        else:
            edges.append(edge_of(t))
    node = prepared[1](prepared[0], ctx, tuple(edges), meta, op.name)
    if _anomaly.enabled:  # is_anomaly_enabled(), without its frame
        record_forward(node)
    for i, o in enumerate(outs):
        if hasattr(o, "_storage") and o.dtype.category >= 2:
            o.requires_grad = True
            o.grad_fn = node
            if i:
                o.__dict__["_output_nr"] = i
    if op.inplace and inputs[0]._base is not None:
        _rebase_view(inputs[0], node)
    return out


def _in_dtype_of(t, view):
    """``t`` seen in ``view``'s dtype, whose geometry counts those elements: a real view (real, imag,
    view_as_real) of a complex tensor counts real ones."""
    if t.dtype is view.dtype:
        return t
    from ..ops.view import view_as_complex, view_as_real

    return view_as_real(t) if t.dtype.is_complex else view_as_complex(t)


def _rebase_view(view, node) -> None:
    """After an in-place write into ``view``, its base's gradient flows through the write (PyTorch's CopySlices)."""
    base = view._base
    size, stride, offset = view._shape, view._stride, view._offset - _in_dtype_of(base, view)._offset
    inner_edges = node.next_functions[1:]
    edges = (edge_of(base) if base.requires_grad else (None, 0),) + inner_edges

    def copy_slices(ctx, grad):
        from ..ops.creation import empty_strided

        g = empty_strided(base._shape, base._stride, dtype=grad.dtype, device=grad.device)
        g.copy_(grad)
        region = _in_dtype_of(g, view).as_strided(size, stride, offset)
        inner = node.formula(node.ctx, region.clone())
        if inner[0] is None:
            region.zero_()
        else:
            region.copy_(inner[0])
        return (g,) + tuple(inner[1:])

    slices = node_class("copy_slices")(copy_slices, None, edges, ((base._shape, base.dtype, base.device),),
                                       node.op_name)
    slices.metadata["inner"] = node
    base.requires_grad = True
    base.grad_fn = slices
    base.__dict__["_output_nr"] = 0
    # the view now reads its gradient out of the base's new history (we run with grad mode on here)
    fresh = _in_dtype_of(base, view).as_strided(size, view._stride, view._offset)
    view.grad_fn = fresh.grad_fn
    view.__dict__["_output_nr"] = 0


def _check_inplace(target) -> None:
    if target.requires_grad and target.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = target._base
    if base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def install() -> None:
    """Make :func:`autograd_kernel` the Autograd key's kernel for every op."""
    set_functionality_fallback(Autograd, autograd_kernel)

