"""Custom differentiable functions: subclass :class:`Function`, write ``forward``/``backward``, call ``apply``."""

from __future__ import annotations

from .grad_mode import is_grad_enabled, is_inference_mode_enabled, no_grad
from .inference import SAVED_ERROR
from .graph import Node, edge_of

__all__ = ["Function", "FunctionCtx", "NestedIOFunction"]


class FunctionCtx:
    """The ``ctx`` of a custom Function: saved tensors and flags shared by forward and backward."""

    def __init__(self):
        self.saved_tensors_ = ()
        self._versions = ()
        self._unpack = None
        self.needs_input_grad = ()
        self.dirty = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self._released = False
        self._saved_inference = False

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors for backward (checked against in-place changes; through the pack hook of an open
        ``saved_tensors_hooks``, unchecked, when there is one)."""
        from .graph import _SAVED_HOOKS, _map_tensors

        self._versions = tuple(t._storage.version if t is not None else None for t in tensors)
        self._saved_inference = any(t is not None and t._storage.inference for t in tensors)
        self._unpack = _SAVED_HOOKS[-1][1] if _SAVED_HOOKS else None
        self.saved_tensors_ = _map_tensors(_SAVED_HOOKS[-1][0], tensors) if _SAVED_HOOKS else tensors

    @property
    def saved_tensors(self) -> tuple:
        from .graph import _RELEASED, _version_error

        if self._released:
            raise RuntimeError(_RELEASED)
        if self._unpack is not None:
            from .graph import _map_tensors

            return _map_tensors(self._unpack, self.saved_tensors_, packed=True)
        for t, v in zip(self.saved_tensors_, self._versions):
            if t is not None and t._storage.version != v:
                raise _version_error(t, v, "a custom Function")
        return self.saved_tensors_

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward modified in place."""
        self.dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that have no gradient."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether missing output gradients reach backward as zeros (True) or None."""
        self.materialize_grads = value


class _FunctionNode(Node):
    __slots__ = ("function_ctx", "cls")

    def name(self) -> str:
        return f"{self.cls.__name__}Backward"

    def release(self) -> None:
        self.function_ctx._released = True


class Function:
    """Base class of custom autograd functions (``torch.autograd.Function``)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the outputs; save what backward needs on ``ctx``."""
        raise NotImplementedError("a Function subclass must implement forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Return one gradient per forward input (None for non-tensor or non-differentiable inputs)."""
        raise NotImplementedError("a Function subclass must implement backward(ctx, ...)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward without recording its inside, then record one node whose backward is ``cls.backward``."""
        ctx = FunctionCtx()
        tensor_positions = [i for i, a in enumerate(args) if hasattr(a, "_storage")]
        ctx.needs_input_grad = tuple(hasattr(a, "_storage") and a.requires_grad for a in args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not (is_grad_enabled() and any(ctx.needs_input_grad)):
            return out
        if ctx._saved_inference and not is_inference_mode_enabled():
            raise RuntimeError(SAVED_ERROR)
        outs = out if isinstance(out, tuple) else (out,)
        edges = tuple(edge_of(args[i]) if args[i].requires_grad else (None, 0) for i in tensor_positions)
        meta = tuple((o._shape, o.dtype, o.device) if hasattr(o, "_storage") else ((), None, None) for o in outs)

        def formula(_ctx, *grads):
            if not ctx.materialize_grads:
                grads = tuple(grads)
            result = cls.backward(ctx, *grads)
            result = result if isinstance(result, tuple) else (result,)
            if len(result) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                                   f"(expected {len(args)}, got {len(result)})")
            return tuple(result[i] for i in tensor_positions)

        node = _FunctionNode(formula, None, edges, meta, cls.__name__)
        node.function_ctx = ctx
        node.cls = cls
        non_diff = {id(t) for t in ctx.non_differentiable}
        for i, o in enumerate(outs):
            if hasattr(o, "_storage") and o.dtype.category >= 2 and id(o) not in non_diff:
                if any(o is a for a in args) and not any(o is d for d in ctx.dirty):
                    o = o.view_as(o)  # an input returned as is becomes a new tensor of the graph
                    outs = outs[:i] + (o,) + outs[i + 1:]
                o.requires_grad = True
                o.grad_fn = node
                o.__dict__["_output_nr"] = i
        return outs if isinstance(out, tuple) else outs[0]


def _iter_tensors(nested):
    """The tensors of a nest of lists and tuples, depth first (PyTorch's ``_iter_tensors``)."""
    if hasattr(nested, "_storage"):
        yield nested
    elif isinstance(nested, (list, tuple)):
        for item in nested:
            yield from _iter_tensors(item)


def _grads_at_tensors(proto, grads):
    """The entries of the nest ``grads`` that stand where ``proto`` (the nested inputs) has tensors, in order; a
    None in place of a whole sub-nest gives None for each of its tensors."""
    if hasattr(proto, "_storage"):
        yield grads
    elif isinstance(proto, (list, tuple)):
        for i, item in enumerate(proto):
            yield from _grads_at_tensors(item, None if grads is None else grads[i])


def _unflatten(flat, proto):
    """``flat``'s entries put back into ``proto``'s nesting: every tensor (or None) of ``proto`` takes the next."""
    flat = iter(flat)

    def rebuild(p):
        if p is None or hasattr(p, "_storage"):
            return next(flat)
        if isinstance(p, (list, tuple)):
            return type(p)(rebuild(item) for item in p)
        return p

    return rebuild(proto)


class _NestedApply(Function):
    """The node a :class:`NestedIOFunction` call records: flat tensors in and out, the nesting kept on the instance."""

    @staticmethod
    def forward(ctx, fn, *flat):
        fn._ctx = ctx
        fn.needs_input_grad = ctx.needs_input_grad[1:]
        nested = _unflatten([t.detach() for t in flat], fn._nested_input)
        fn._nested_output = fn.forward_extended(*nested)
        return tuple(_iter_tensors(fn._nested_output))

    @staticmethod
    def backward(ctx, *grads):
        fn = ctx.fn
        result = fn.backward_extended(*_unflatten(grads, fn._nested_output))
        if len(fn._nested_input) == 1 and not isinstance(result, tuple):
            result = (result,)
        return (None,) + tuple(_grads_at_tensors(fn._nested_input, result))


class NestedIOFunction:
    """The legacy custom Function with nested inputs and outputs (``torch.autograd.NestedIOFunction``): subclass it
    with instance methods ``forward_extended(*inputs)`` and ``backward_extended(*grad_outputs)``, where inputs,
    outputs and gradients may be nests of lists and tuples of tensors, and call an instance on the inputs.
    ``backward_extended`` returns one gradient per input, nested like that input (None for non-tensors)."""

    def __call__(self, *inputs):
        self._nested_input = inputs
        flat = tuple(_iter_tensors(inputs))
        out = _NestedApply.apply(self, *flat)
        out = out if isinstance(out, tuple) else (out,)
        self._ctx.fn = self
        return _unflatten(out, self._nested_output)

    def forward_extended(self, *inputs):
        """Compute the (nested) outputs from the (nested) inputs; override it."""
        raise NotImplementedError("a NestedIOFunction subclass must implement forward_extended(self, *inputs)")

    def backward_extended(self, *grad_outputs):
        """Return the (nested) gradients of the inputs from those of the outputs; override it."""
        raise NotImplementedError("a NestedIOFunction subclass must implement backward_extended(self, *grads)")

    def save_for_backward(self, *args) -> None:
        """Keep the tensors of a nest for backward (checked against in-place changes, like a Function's)."""
        self._to_save_nested = args
        self._ctx.save_for_backward(*_iter_tensors(args))

    @property
    def saved_tensors(self):
        """The nest given to :meth:`save_for_backward`, with its tensors."""
        return _unflatten(self._ctx.saved_tensors, self._to_save_nested)

    def mark_dirty(self, *args, **kwargs) -> None:
        """Declare the tensors of a nest of inputs that forward_extended modified in place."""
        self._ctx.mark_dirty(*_iter_tensors((args, tuple(kwargs.values()))))

    def mark_non_differentiable(self, *args, **kwargs) -> None:
        """Declare the tensors of a nest of outputs that have no gradient."""
        self._ctx.mark_non_differentiable(*_iter_tensors((args, tuple(kwargs.values()))))
