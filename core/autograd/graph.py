"""The recorded graph: one :class:`Node` per differentiable op call, edges to the nodes of its inputs.

A node keeps what its derivative needs in a :class:`SavedContext`; saved
tensors remember their version and refuse to be used after an in-place change,
with PyTorch's message. Outputs are saved as detached aliases (no reference
back to the node), so the graph has no reference cycles and is freed as soon
as the last output tensor goes.
"""

from __future__ import annotations

import weakref

from ..tensor import RemovableHandle

__all__ = ["Node", "AccumulateGrad", "SavedContext", "SavedTensor", "node_class", "edge_of", "saved_tensors_hooks",
           "save_on_cpu", "disable_saved_tensors_hooks", "register_multi_grad_hook", "GradientEdge",
           "get_gradient_edge", "increment_version"]

_SAVED_HOOKS: list = []  # the (pack, unpack) pairs of the open saved_tensors_hooks contexts, innermost last
_HOOKS_DISABLED: list = []  # the messages of the open disable_saved_tensors_hooks contexts


class _Packed:
    """What a pack hook returned for one saved tensor (so that unpacking knows which values to pass back)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _map_tensors(fn, values, packed: bool = False):
    """``values`` with ``fn`` applied to each saved tensor (inside lists and tuples too): packs, or unpacks.

    The hooks run with saved_tensors_hooks suspended, so that ops inside a pack hook do not pack again."""
    hooks = _SAVED_HOOKS[:]
    _SAVED_HOOKS.clear()
    try:
        return _map_each(fn, values, packed)
    finally:
        _SAVED_HOOKS[:] = hooks


def _map_each(fn, values, packed: bool):
    out = []
    for v in values:
        if packed and isinstance(v, _Packed):
            v = fn(v.value)
        elif not packed and hasattr(v, "_storage"):
            v = _Packed(fn(v))
        elif v.__class__ is list or v.__class__ is tuple:
            v = v.__class__(_map_each(fn, v, packed))
        out.append(v)
    return tuple(out) if values.__class__ is tuple else out


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it go through ``pack_hook(tensor)`` when saved and
    ``unpack_hook(packed)`` when backward needs them (``torch.autograd.graph.saved_tensors_hooks``)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _HOOKS_DISABLED:
            raise RuntimeError(_HOOKS_DISABLED[-1])
        _SAVED_HOOKS.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc) -> None:
        _SAVED_HOOKS.pop()


class save_on_cpu(saved_tensors_hooks):
    """Context manager: tensors saved for backward are kept on the CPU and copied back to their device when
    backward needs them (``torch.autograd.graph.save_on_cpu``; ``pin_memory`` changes nothing here)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(tensor):
            return tensor.device, tensor.cpu()

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager in which entering ``saved_tensors_hooks`` raises RuntimeError(``error_message``)
    (``torch.autograd.graph.disable_saved_tensors_hooks``)."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        _HOOKS_DISABLED.append(self.error_message)
        return self

    def __exit__(self, *exc) -> None:
        _HOOKS_DISABLED.pop()

_RELEASED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
             "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
             "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
             "or if you need to access saved tensors after calling backward.")


def _version_error(t, saved_version: int, node_name: str) -> RuntimeError:
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[core.{type(t).__name__}[{', '.join(map(str, t._shape))}] {t.dtype.name}], which is output 0 of "
        f"{node_name}, is at version {t._storage.version}; expected version {saved_version} instead. Hint: "
        f"enable anomaly detection to find the operation that failed to compute its gradient, with "
        f"core.autograd.set_detect_anomaly(True).")


class SavedContext:
    """The arguments and outputs of one op call, as its derivative formula sees them.

    Under :class:`saved_tensors_hooks` each saved tensor is kept as what the pack hook returned and comes back
    through the unpack hook when backward first needs it (no in-place check then: the unpacked tensor is new)."""

    __slots__ = ("_args", "kwargs", "_versions", "_outputs", "_out_versions", "node", "released", "extra", "_unpack",
                 "_unpacked", "_slot_hooks")

    def __init__(self, args: tuple, kwargs: dict, outputs: tuple):
        self.kwargs = kwargs
        # plain loops, not comprehensions: each comprehension is a Python frame, and one context is made per op
        versions = []
        for a in args:
            versions.append(a._storage.version if hasattr(a, "_storage") else None)
        self._versions = versions
        aliases, out_versions = [], []
        for o in outputs:
            if hasattr(o, "_storage"):
                aliases.append(o._alias(o._shape, o._stride, o._offset))
                out_versions.append(o._storage.version)
            else:
                aliases.append(o)
                out_versions.append(None)
        outputs = aliases
        self._out_versions = out_versions
        hooks = _SAVED_HOOKS[-1] if _SAVED_HOOKS else None
        self._unpack = hooks[1] if hooks else None
        self._unpacked = None
        self._args = _map_tensors(hooks[0], args) if hooks else args
        self._outputs = _map_tensors(hooks[0], outputs) if hooks else outputs
        self.node = None
        self.released = False
        self.extra = None
        self._slot_hooks = None  # ("arg" | "out", index) -> (packed, unpack_hook): SavedTensor.register_hooks

    @property
    def args(self) -> tuple:
        """The op's arguments (through the unpack hooks, once, when saved under saved_tensors_hooks or hooked
        through a SavedTensor)."""
        if self._args is None or (self._unpack is None and self._slot_hooks is None):
            return self._args
        if self._unpacked is None:
            if self._unpack is not None:
                args = _map_tensors(self._unpack, self._args, packed=True)
                outs = _map_tensors(self._unpack, self._outputs, packed=True)
            else:
                args, outs = list(self._args), list(self._outputs)
                for (kind, i), (packed, unpack) in self._slot_hooks.items():
                    (args if kind == "arg" else outs)[i] = unpack(packed)
                args = tuple(args)
            self._unpacked = (args, outs)
        return self._unpacked[0]

    def _hooked(self, kind: str, i: int) -> bool:
        """Whether slot ``i`` comes back through hooks (then it is a new tensor: no in-place check)."""
        return self._unpack is not None or (self._slot_hooks is not None and (kind, i) in self._slot_hooks)

    def input(self, i: int):
        """Tensor argument ``i``, checked against in-place changes since the forward."""
        if self.released:
            raise RuntimeError(_RELEASED)
        t = self.args[i]
        if hasattr(t, "_storage") and t._storage.version != self._versions[i] and not self._hooked("arg", i):
            raise _version_error(t, self._versions[i], self._node_name())
        return t

    def arg(self, i: int, default=None):
        """Non-tensor argument ``i`` (``default`` when it was not passed)."""
        args = self.args
        return args[i] if i < len(args) else default

    def output(self, i: int = 0):
        """Output ``i`` of the forward, checked against in-place changes; part of the graph when recording."""
        if self.released:
            raise RuntimeError(_RELEASED)
        if not self._hooked("out", i):
            o = self._outputs[i]
            if o._storage.version != self._out_versions[i]:
                raise _version_error(o, self._out_versions[i], self._node_name())
        else:
            self.args  # noqa: B018 - unpacks the outputs along with the arguments
            o = self._unpacked[1][i]
        from .grad_mode import is_grad_enabled

        node = self.node() if self.node is not None else None
        if is_grad_enabled() and node is not None:  # create_graph: the output's grad_fn is this node
            o = o._alias(o._shape, o._stride, o._offset)
            o.requires_grad = True
            o.grad_fn = node
            o.__dict__["_output_nr"] = i
        return o

    def _node_name(self) -> str:
        node = self.node() if self.node is not None else None
        return node.name() if node is not None else "?"

    def release(self) -> None:
        self._args = self.kwargs = self._outputs = self._unpacked = self._slot_hooks = None
        self.released = True


class SavedTensor:
    """One tensor a node saved for backward, as ``grad_fn._raw_saved_<name>`` returns it
    (``torch._C._autograd.SavedTensor``): :meth:`register_hooks` routes it through a pack/unpack pair."""

    __slots__ = ("_ctx", "_kind", "_index")

    def __init__(self, ctx: SavedContext, kind: str, index: int):
        self._ctx, self._kind, self._index = ctx, kind, index

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Call ``pack_hook(tensor)`` now and keep only its result; backward (and ``grad_fn._saved_<name>``) get
        ``unpack_hook(packed)`` instead of the tensor."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): pack_hook and unpack_hook must be callables")
        ctx = self._ctx
        if ctx.released:
            raise RuntimeError(_RELEASED)
        if ctx._hooked(self._kind, self._index):
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: "
                               "only one pair of hooks is allowed at a time.")
        tensor = self._value()
        if tensor is None:
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")
        packed = pack_hook(tensor)
        if ctx._slot_hooks is None:
            ctx._slot_hooks = {}
        ctx._slot_hooks[(self._kind, self._index)] = (packed, unpack_hook)
        ctx._unpacked = None
        values = list(ctx._args if self._kind == "arg" else ctx._outputs)
        values[self._index] = None  # only the packed value is kept, as in PyTorch
        if self._kind == "arg":
            ctx._args = tuple(values)
        else:
            ctx._outputs = values

    def _value(self):
        return (self._ctx._args if self._kind == "arg" else self._ctx._outputs)[self._index]

    def unpack(self):
        """The saved value: through the unpack hook when one is registered (called on every access)."""
        ctx = self._ctx
        if ctx.released:
            raise RuntimeError(_RELEASED)
        hooks = ctx._slot_hooks.get((self._kind, self._index)) if ctx._slot_hooks is not None else None
        if hooks is not None:
            return hooks[1](hooks[0])
        return ctx.input(self._index) if self._kind == "arg" else ctx.output(self._index)

    def __repr__(self) -> str:
        return f"<core.autograd.SavedTensor of {'output' if self._kind == 'out' else 'argument'} {self._index}>"


def _saved_slot(node, name: str):
    """The (kind, index) of the saved value called ``name`` on ``node`` (PyTorch's names: ``self``, ``other``, ...,
    ``result`` for the output), or None."""
    if name == "result":
        return ("out", 0)
    import inspect

    from .. import ops
    from ..dispatch.operator import OPERATORS

    op = OPERATORS.get(node.op_name)
    public = getattr(ops, node.op_name, None)  # its argument names are PyTorch's; the op's own may be a, b
    fn = public if callable(public) else op and (op.meta or op.decomposition or op.default)
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    if params and params[0] == "input":
        params[0] = "self"  # PyTorch's native functions call their first tensor ``self``
    if name in params and params.index(name) < len(node.ctx._versions):
        return ("arg", params.index(name))
    return None


_CLASSES: dict = {}


def node_class(op_name: str) -> type:
    """The Node subclass named like PyTorch's (``mul`` -> ``MulBackward0``)."""
    cls = _CLASSES.get(op_name)
    if cls is None:
        base = op_name.split("::")[-1].replace(".", "_").rstrip("_")
        name = "".join(part.capitalize() for part in base.split("_")) + "Backward0"
        cls = _CLASSES[op_name] = type(name, (Node,), {"__slots__": ()})
    return cls


class Node:
    """A backward function (``grad_fn``): applies a derivative formula to output gradients."""

    __slots__ = ("next_functions", "ctx", "formula", "num_outputs", "op_name", "_hooks", "_pre_hooks",
                 "_output_meta", "_metadata", "__weakref__")

    def __init__(self, formula, ctx, next_functions: tuple, output_meta: tuple, op_name: str):
        self.formula = formula
        self.ctx = ctx
        self.next_functions = next_functions
        self.num_outputs = len(output_meta)
        self._output_meta = output_meta  # (shape, dtype, device) per output: zeros for missing grads
        self.op_name = op_name
        self._hooks = None
        self._pre_hooks = None
        self._metadata = None  # made on first use: most nodes never have any
        if ctx is not None:
            ctx.node = weakref.ref(self)  # weak: the node owns the context, not the other way round

    def name(self) -> str:
        """The node's class name, e.g. ``MulBackward0``."""
        return type(self).__name__

    @property
    def metadata(self) -> dict:
        """A dict for the user's (and anomaly mode's) notes on this node (``torch.autograd.graph.Node.metadata``)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def __getattr__(self, name: str):
        """``_raw_saved_<arg>`` (a :class:`SavedTensor`) and ``_saved_<arg>`` (its value, through its unpack hook),
        as PyTorch's nodes have them."""
        raw = name.startswith("_raw_saved_")
        if (raw or name.startswith("_saved_")) and self.ctx is not None:
            slot = _saved_slot(self, name[len("_raw_saved_" if raw else "_saved_"):])
            if slot is not None:
                ctx = self.ctx
                if ctx.released:
                    raise RuntimeError(_RELEASED)
                value = (ctx._args if slot[0] == "arg" else ctx._outputs)[slot[1]]
                saved = hasattr(value, "_storage") or value is None or isinstance(value, _Packed)
                if raw and saved:
                    return SavedTensor(ctx, *slot)
                if not raw:
                    return SavedTensor(ctx, *slot).unpack() if saved else value
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    def register_hook(self, hook):
        """``hook(grad_inputs, grad_outputs)`` after the node runs; may return replacement grad_inputs."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return RemovableHandle(self._hooks, hook)

    def register_prehook(self, hook):
        """``hook(grad_outputs)`` before the node runs; may return replacement grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(hook)
        return RemovableHandle(self._pre_hooks, hook)

    def apply(self, grads: list) -> tuple:
        """Input gradients for the output gradients ``grads`` (None entries become zeros)."""
        if self.ctx is not None and self.ctx.released:
            raise RuntimeError(_RELEASED)
        for g in grads:  # not ``None in grads``: that compares tensors with ==
            if g is None:
                from ..ops.creation import zeros

                grads = [g if g is not None else zeros(meta[0], dtype=meta[1], device=meta[2])
                         for g, meta in zip(grads, self._output_meta)]
                break
        result = self.formula(self.ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        return result

    def release(self) -> None:
        if self.ctx is not None:
            self.ctx.release()


class AccumulateGrad(Node):
    """The sink of a leaf tensor's gradient: adds into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        Node.__init__(self, None, None, (), ((variable._shape, variable.dtype, variable._storage.device),),
                      "AccumulateGrad")
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"


def edge_of(t):
    """``(node, output_nr)`` through which gradient flows into ``t``; ``(None, 0)`` if it needs none."""
    if t.grad_fn is not None:
        return (t.grad_fn, t.__dict__.get("_output_nr", 0))
    if not t.requires_grad:
        return (None, 0)
    ref = t.__dict__.get("_accumulator")
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t.__dict__["_accumulator"] = weakref.ref(node)
    return (node, 0)


class _MultiHandle:
    """The handle of :func:`register_multi_grad_hook`: ``remove()`` unregisters every per-tensor hook."""

    def __init__(self, handles: list):
        self._handles = handles

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """Call ``fn`` once per backward pass that computes gradients of ``tensors``
    (``torch.autograd.graph.register_multi_grad_hook``): with ``mode="all"``, after the pass with the list of
    their gradients (None for those it did not compute); with ``mode="any"``, with the first gradient computed."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    from .engine import queue_callback

    tensors = tuple(tensors)
    state = {"grads": None}

    def make_hook(i: int):
        def hook(grad):
            first = state["grads"] is None
            if first:
                state["grads"] = [None] * len(tensors)
                queue_callback(finish)
                if mode == "any":
                    fn(grad)
            state["grads"][i] = grad

        return hook

    def finish():
        grads, state["grads"] = state["grads"], None
        if mode == "all":
            fn(grads)

    return _MultiHandle([t.register_hook(make_hook(i)) for i, t in enumerate(tensors) if t.requires_grad])


class GradientEdge(tuple):
    """``(node, output_nr)``: where a tensor's gradient enters the graph (``torch.autograd.graph.GradientEdge``)."""

    __slots__ = ()

    def __new__(cls, node, output_nr: int):
        return super().__new__(cls, (node, output_nr))

    node = property(lambda self: self[0], doc="The graph node (grad_fn, or a leaf's AccumulateGrad).")
    output_nr = property(lambda self: self[1], doc="Which output of ``node`` the tensor is.")

    def __repr__(self) -> str:
        return f"GradientEdge(node={self.node!r}, output_nr={self.output_nr})"


def get_gradient_edge(tensor) -> GradientEdge:
    """The :class:`GradientEdge` of ``tensor`` (``torch.autograd.graph.get_gradient_edge``)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    return GradientEdge(*edge_of(tensor))


def increment_version(tensor) -> None:
    """Bump ``tensor``'s version counter, as an in-place change would (``torch.autograd.graph.increment_version``):
    backward then refuses to use it where it was saved."""
    for t in tensor if isinstance(tensor, (list, tuple)) else (tensor,):
        t._storage.version += 1
