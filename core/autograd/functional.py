"""``backward`` and ``grad``: the user-facing entry points of the engine."""

from __future__ import annotations

from math import prod

from ..sparse_tensor import SparseTensor
from ..tensor import Tensor
from .engine import run_backward

__all__ = ["backward", "grad"]


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


_CREATION: list = []  # core.ops.creation, imported on first use (core.ops imports this package)


def _implicit_grad(t):
    """The gradient ``backward()`` starts from for a one-element output: ones of its shape, dtype and device
    (PyTorch's ``ones_like(output, LEGACY_CONTIGUOUS_MEMORY_FORMAT)``). For a plain Tensor, straight from the
    ``empty`` and ``fill_`` ops, without ``ones_like``'s argument handling (one element: every layout is
    contiguous)."""
    if not _CREATION:
        from ..ops import creation

        _CREATION.append(creation)
    creation = _CREATION[0]
    if t.__class__ is not Tensor:
        return creation.ones_like(t)
    g = creation.allocate(t._shape, t.dtype, t._storage.device, "backward")
    creation.fill_op(g, 1)
    return g


def _default_grads(tensors, grad_tensors, create_graph: bool) -> list:
    grads = list(_as_tuple(grad_tensors)) or [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got {len(grads)} gradients for "
                           f"{len(tensors)} tensors")
    out = []
    for t, g in zip(tensors, grads):
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _implicit_grad(t)
        elif g._shape != t._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(g._shape)} and output[0] has "
                               f"a shape of {list(t._shape)}.")
        out.append(g if create_graph else g.detach())
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (``torch.autograd.backward``)."""
    if tensors.__class__ is Tensor and grad_tensors is None and inputs is None:  # loss.backward(), in fewer frames
        if prod(tensors._shape) != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        run_backward((tensors,), [_implicit_grad(tensors)], create_graph if retain_graph is None else retain_graph,
                     create_graph, inputs=None, accumulate=True)
        return
    tensors = _as_tuple(tensors)
    grads = _default_grads(tensors, grad_tensors, create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    inputs = tuple(_grad_holder(i) for i in _as_tuple(inputs)) or None if inputs is not None else None
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


# -- torch.autograd.functional: Jacobians, Hessians and their products ---------------------------------------------
#
# Everything is reverse mode on the recorded graph. A Jacobian-vector product uses the double-vjp trick: with a
# dummy cotangent ``u`` that requires grad, ``g(u) = J^T u`` is linear in ``u`` and its vjp with ``v`` is ``J v``.
# ``vectorize=True`` is accepted and changes nothing: rows (or columns) are computed one after another.

__all__ += ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _check_tensors(values, what: str, fn_name: str) -> tuple:
    """``values`` as a tuple of tensors, with PyTorch's TypeError naming ``fn_name`` otherwise."""
    is_tuple = isinstance(values, (list, tuple))
    values = tuple(values) if is_tuple else (values,)
    for i, v in enumerate(values):
        if not hasattr(v, "_storage"):
            if what == "outputs":
                raise TypeError(f"The outputs of the user-provided function given to {fn_name} must be either a "
                                f"Tensor or a tuple of Tensors but the given outputs of the user-provided function "
                                f"has type {type(v if is_tuple else values[0])}.")
            raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                            f"value at index {i} has type {type(v)}.")
    return values


def _prepare_inputs(inputs: tuple, create_graph: bool) -> tuple:
    """Fresh differentiable stand-ins for ``inputs``: still on the caller's graph when ``create_graph``."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_(True)
                 for x in inputs)


def _finish(values: tuple, create_graph: bool) -> tuple:
    return tuple(v if v is None or create_graph else v.detach() for v in values)


def _unpack(values: tuple, was_tuple: bool):
    return values if was_tuple else values[0]


def _vjp_raw(outputs: tuple, inputs: tuple, cotangents: tuple, create_graph: bool, strict: bool,
             subject: str = "The output") -> tuple:
    """``sum_k J_k^T c_k`` per input (zeros for inputs that do not reach ``outputs``, an error when strict)."""
    from ..ops.creation import zeros_like

    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    grads = (None,) * len(inputs)
    if pairs:
        with _grad_enabled():
            grads = grad([o for o, _ in pairs], inputs, [c for _, c in pairs], retain_graph=True,
                         create_graph=create_graph, allow_unused=True)
    result = []
    for i, (g, x) in enumerate(zip(grads, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"{subject} of the user-provided function is independent of input {i}. This "
                                   f"is not allowed in strict mode.")
            g = zeros_like(x)
        result.append(g)
    return tuple(result)


def _grad_enabled():
    from .grad_mode import enable_grad

    return enable_grad()


def _run(func, inputs: tuple, fn_name: str):
    with _grad_enabled():
        out = func(*inputs)
    was_tuple = isinstance(out, (list, tuple))
    return _check_tensors(out, "outputs", fn_name), was_tuple


def _check_v(v, like: tuple, fn_name: str, what: str = "outputs") -> tuple:
    from ..ops.creation import ones_like

    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            which = ("the user-provided function returns a single Tensor" if what == "outputs" else
                     "the input to the user-provided function is a single Tensor")
            raise RuntimeError(f"The vector v can only be None if {which} with a single element.")
        return (ones_like(like[0]),)
    v = _check_tensors(v, "v", fn_name)
    if len(v) != len(like):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
    for i, (a, b) in enumerate(zip(v, like)):
        if a.shape != b.shape:
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {b.shape} but got {a.shape}.")
    return v


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs`` (``torch.autograd.functional.vjp``)."""
    was_tuple = isinstance(inputs, (list, tuple))
    inputs = _prepare_inputs(_check_tensors(inputs, "inputs", "vjp"), create_graph)
    outputs, out_tuple = _run(func, inputs, "vjp")
    v = _check_v(v, outputs, "vjp")
    result = _vjp_raw(outputs, inputs, v, create_graph, strict)
    return _unpack(_finish(outputs, create_graph), out_tuple), _unpack(_finish(result, create_graph), was_tuple)


def _jvp_raw(outputs: tuple, inputs: tuple, tangents: tuple, create_graph: bool, strict: bool) -> tuple:
    """``J t`` per output through the double-vjp trick (zeros for outputs that do not depend on the inputs)."""
    from ..ops.creation import zeros_like

    dummies = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
    with _grad_enabled():
        g = _vjp_raw(outputs, inputs, dummies, True, strict)
        pairs = [(gi, t) for gi, t in zip(g, tangents) if gi.requires_grad]
        if not pairs:
            back = (None,) * len(outputs)
        else:
            back = grad([gi for gi, _ in pairs], dummies, [t for _, t in pairs], retain_graph=True,
                        create_graph=create_graph, allow_unused=True)
    result = []
    for i, (b, o) in enumerate(zip(back, outputs)):
        if b is None:
            if strict:
                raise RuntimeError(f"The gradient with respect to the input is independent of entry {i} in the "
                                   f"grad_outputs when using the double backward trick to compute forward mode "
                                   f"gradients. This is not allowed in strict mode.")
            b = zeros_like(o)
        result.append(b)
    return tuple(result)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs``, by the double-vjp trick
    (``torch.autograd.functional.jvp``)."""
    inputs = _prepare_inputs(_check_tensors(inputs, "inputs", "jvp"), create_graph)
    v = _check_v(v, inputs, "jvp", "inputs")
    outputs, out_tuple = _run(func, inputs, "jvp")
    result = _jvp_raw(outputs, inputs, v, create_graph, strict)
    return _unpack(_finish(outputs, create_graph), out_tuple), _unpack(_finish(result, create_graph), out_tuple)


def _one_hot(like, k: int):
    """A tensor shaped like ``like``, zero but for a one at flat position ``k``."""
    from ..ops.creation import zeros

    e = zeros(like.numel(), dtype=like.dtype, device=like.device)
    e[k] = 1
    return e.reshape(like.shape)


def _jacobian_blocks(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool, strategy: str) -> list:
    """``blocks[i][j]``: d outputs[i] / d inputs[j], shaped ``outputs[i].shape + inputs[j].shape``."""
    from ..ops.creation import zeros_like
    from ..ops.shape import stack

    blocks = [[None] * len(inputs) for _ in outputs]
    if strategy == "reverse-mode":
        for i, o in enumerate(outputs):
            rows = [[] for _ in inputs]
            for k in range(o.numel()):
                g = _vjp_raw((o,), inputs, (_one_hot(o, k),), create_graph, strict, f"Output {i}")
                for j, gj in enumerate(g):
                    rows[j].append(gj)
            for j, x in enumerate(inputs):
                jac = stack(rows[j]) if rows[j] else zeros_like(x).reshape(0, *x.shape)
                blocks[i][j] = jac.reshape(*o.shape, *x.shape)
    else:
        for j, x in enumerate(inputs):
            cols = [[] for _ in outputs]
            for k in range(x.numel()):
                t = tuple(_one_hot(x, k) if m == j else zeros_like(other) for m, other in enumerate(inputs))
                for i, c in enumerate(_jvp_raw(outputs, inputs, t, create_graph, strict)):
                    cols[i].append(c)
            for i, o in enumerate(outputs):
                jac = stack(cols[i], dim=-1) if cols[i] else zeros_like(o).unsqueeze(-1)[..., :0]
                blocks[i][j] = jac.reshape(*o.shape, *x.shape)
    return blocks


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs`` (``torch.autograd.functional.jacobian``): a Tensor of shape
    ``output.shape + input.shape``, or tuples (of tuples) mirroring tuple outputs and inputs."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                         'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                         'prefer to use "reverse-mode".')
    if strict and strategy == "forward-mode":
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    in_tuple = isinstance(inputs, (list, tuple))
    inputs = _prepare_inputs(_check_tensors(inputs, "inputs", "jacobian"), create_graph)
    outputs, out_tuple = _run(func, inputs, "jacobian")
    blocks = _jacobian_blocks(outputs, inputs, create_graph, strict, strategy)
    rows = tuple(_unpack(_finish(tuple(row), create_graph), in_tuple) for row in blocks)
    return _unpack(rows, out_tuple)


def hessian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs`` (``torch.autograd.functional.hessian``): shape
    ``input.shape + input.shape``, or a tuple of tuples for tuple inputs."""
    in_tuple = isinstance(inputs, (list, tuple))
    inputs = _check_tensors(inputs, "inputs", "hessian")

    def gradient(*xs):
        out, _ = _run(func, xs, "hessian")
        if len(out) != 1 or out[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single element Tensor")
        return _vjp_raw(out, xs, (_ones(out[0]),), True, strict)

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    return result if in_tuple else result[0][0]


def _ones(t):
    from ..ops.creation import ones_like

    return ones_like(t)


def _scalar_gradient(func, inputs: tuple, strict: bool, fn_name: str):
    """``(func(inputs), its gradient)`` on the graph (``create_graph``), checking ``func`` returns one element."""
    outputs, _ = _run(func, inputs, fn_name)
    if len(outputs) != 1 or outputs[0].numel() != 1:
        raise RuntimeError(f"The function given to {fn_name} should return a single element Tensor")
    return outputs[0], _vjp_raw(outputs, inputs, (_ones(outputs[0]),), True, strict)


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``: the vector-Hessian product of a scalar function
    (``torch.autograd.functional.vhp``)."""
    was_tuple = isinstance(inputs, (list, tuple))
    inputs = _prepare_inputs(_check_tensors(inputs, "inputs", "vhp"), create_graph)
    v = _check_v(v, inputs, "vhp", "inputs")
    out, jac = _scalar_gradient(func, inputs, strict, "vhp")
    result = _vjp_raw(jac, inputs, v, create_graph, strict, "The jacobian")
    return _finish((out,), create_graph)[0], _unpack(_finish(result, create_graph), was_tuple)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``: the Hessian-vector product of a scalar function, as the forward derivative of its
    gradient by the double-vjp trick (``torch.autograd.functional.hvp``)."""
    was_tuple = isinstance(inputs, (list, tuple))
    inputs = _prepare_inputs(_check_tensors(inputs, "inputs", "hvp"), create_graph)
    v = _check_v(v, inputs, "hvp", "inputs")
    out, jac = _scalar_gradient(func, inputs, strict, "hvp")
    result = _jvp_raw(jac, inputs, v, create_graph, strict)
    return _finish((out,), create_graph)[0], _unpack(_finish(result, create_graph), was_tuple)
