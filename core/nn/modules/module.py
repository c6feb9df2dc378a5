"""``Module``: the base class of every layer, with PyTorch's registration, state-dict and hook rules."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Callable, Iterator

from ... import ops
from ...autograd import Function, no_grad
from ...tensor import Tensor
from ...utils.hooks import RemovableHandle
from ..parameter import Buffer, Parameter, is_lazy

__all__ = ["Module"]

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Base class of all layers (``torch.nn.Module``): assign Parameters, buffers and Modules as attributes."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        super().__setattr__("training", True)
        super().__setattr__("_parameters", OrderedDict())
        super().__setattr__("_buffers", OrderedDict())
        super().__setattr__("_non_persistent_buffers_set", set())
        super().__setattr__("_modules", OrderedDict())
        super().__setattr__("_forward_pre_hooks", OrderedDict())
        super().__setattr__("_forward_hooks", OrderedDict())
        super().__setattr__("_backward_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        """The computation; subclasses override it and call the module, not ``forward``."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # -- attribute registration -------------------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, keep="_parameters")  # re-assigning keeps its place in the order
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(core.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if self.__dict__.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, keep="_modules")
            self._modules[name] = value
        elif self.__dict__.get("_modules") is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(core.nn.Module or None expected)")
            self._modules[name] = value
        elif isinstance(value, Buffer):
            self._remove_from(name)
            self.register_buffer(name, value, persistent=value.persistent)
        elif self.__dict__.get("_buffers") is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(core.Tensor or None expected)")
            self._buffers[name] = value
        else:
            super().__setattr__(name, value)

    def _remove_from(self, name: str, keep: str | None = None) -> None:
        self.__dict__.pop(name, None)
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry != keep:
                getattr(self, registry).pop(name, None)
        if keep != "_buffers":
            self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers_set.discard(name)
                return
        super().__delattr__(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def _check_name(self, kind: str, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None) under ``name``."""
        self._check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            f"(core.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (a tensor that is state but not a parameter); non-persistent ones stay out of state_dict."""
        self._check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(core.Tensor or None required)")
        if isinstance(tensor, Buffer):
            tensor = tensor.detach() if not tensor.requires_grad else tensor
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target`` (``""`` is self)."""
        module = self
        for item in target.split(".") if target else ():
            if not hasattr(module, item):
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``."""
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter `{name}`")
        return module._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._buffers:
            raise AttributeError(f"{type(module).__name__} has no buffer `{name}`")
        return module._buffers[name]

    # -- iteration ------------------------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """``(dotted name, module)`` for self and every descendant."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        """Self and every descendant module."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """``(name, module)`` for the immediate children."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator["Module"]:
        """The immediate child modules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(dotted name, parameter)`` pairs."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter (each once)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(dotted name, buffer)`` pairs."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    # -- modes and conversion ----------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (dropout active, batch norm updating its statistics) on self and children."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for module in self.children():  # through train(), so subclasses that override it take part
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` of every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to None by default)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = p.grad.detach()
                p.grad.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every submodule (children first) and on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> "Module":
        """Convert every parameter and buffer with ``fn``, keeping Parameter objects (optimizers hold them)."""
        for module in self.modules():
            with no_grad():
                for param in module._parameters.values():
                    if param is None:
                        continue
                    converted = fn(param)
                    if converted is not param:
                        param.data = converted
                    if param.grad is not None:
                        param.grad = fn(param.grad)
                for name, buffer in module._buffers.items():
                    if is_lazy(buffer):  # a lazy module's placeholder stays one, on the new device / dtype
                        buffer.data = fn(buffer)
                    elif buffer is not None:
                        module._buffers[name] = fn(buffer)
        return self

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Every parameter and buffer replaced by an uninitialised tensor of its shape on ``device``, e.g. to
        materialise a module built on the meta device (``torch.nn.Module.to_empty``)."""
        modules = self.modules() if recurse else [self]
        for module in modules:
            with no_grad():
                for param in module._parameters.values():
                    if param is not None:
                        param.data = ops.empty_like(param, device=device)
                for name, buffer in module._buffers.items():
                    if buffer is not None:
                        module._buffers[name] = ops.empty_like(buffer, device=device)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``."""
        from ...dtypes import dtype as dtype_class

        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        for a in args:
            if isinstance(a, dtype_class):
                dtype = a
            elif isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            else:
                device = a
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype="
                            f"{dtype}")

        def convert(t: Tensor) -> Tensor:
            target = dtype if dtype is not None and (t.is_floating_point() or t.is_complex()) else None
            return t.to(device=device, dtype=target)

        return self._apply(convert)

    def cpu(self) -> "Module":
        """Move everything to the CPU."""
        return self.to("cpu")

    def cuda(self, device=None) -> "Module":
        """Move everything to a CUDA device."""
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    def type(self, dst_type) -> "Module":
        """Cast every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: t.to(dst_type))

    def float(self) -> "Module":
        """Cast floating parameters and buffers to float32."""
        from ...dtypes import float32

        return self._apply(lambda t: t.to(float32) if t.is_floating_point() else t)

    def double(self) -> "Module":
        """Cast floating parameters and buffers to float64."""
        from ...dtypes import float64

        return self._apply(lambda t: t.to(float64) if t.is_floating_point() else t)

    def half(self) -> "Module":
        """Cast floating parameters and buffers to float16."""
        from ...dtypes import float16

        return self._apply(lambda t: t.to(float16) if t.is_floating_point() else t)

    def bfloat16(self) -> "Module":
        """Cast floating parameters and buffers to bfloat16."""
        from ...dtypes import bfloat16

        return self._apply(lambda t: t.to(bfloat16) if t.is_floating_point() else t)

    # -- state dict -------------------------------------------------------------------------------------------
    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name, detached unless ``keep_vars``."""
        if args:  # the deprecated positional form state_dict(destination, prefix, keep_vars)
            destination = args[0]
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy tensors from ``state_dict`` into parameters and buffers; returns (missing_keys, unexpected_keys)."""
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        for module_prefix, module in self.named_modules():  # lazy modules take their shapes from the dict first
            lazy_load_hook = getattr(module, "_lazy_load_hook", None)
            if lazy_load_hook is not None:
                lazy_load_hook(state_dict, module_prefix + "." if module_prefix else "")
        expected = {}
        for module_prefix, module in self.named_modules():
            base = module_prefix + "." if module_prefix else ""
            for name, param in module._parameters.items():
                if param is not None:
                    expected[base + name] = (module, name, "_parameters")
            for name, buffer in module._buffers.items():
                if buffer is not None and name not in module._non_persistent_buffers_set:
                    expected[base + name] = (module, name, "_buffers")
        missing = [k for k in expected if k not in state_dict]
        unexpected = [k for k in state_dict.keys() if k not in expected]
        errors = []
        with no_grad():
            for key, (module, name, registry) in expected.items():
                if key not in state_dict:
                    continue
                value = state_dict[key]
                if not isinstance(value, Tensor):
                    errors.append(f'While copying the parameter named "{key}", expected core.Tensor or '
                                  f'Tensor-like object from checkpoint but received {type(value)}')
                    continue
                target = getattr(module, registry)[name]
                if value.shape != target.shape:
                    errors.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {target.shape}.")
                    continue
                if assign:
                    replacement = Parameter(value, target.requires_grad) if registry == "_parameters" else value
                    getattr(module, registry)[name] = replacement
                else:
                    target.copy_(value)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # -- hooks and calling ---------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args)`` before forward; may return replacement args."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = (hook, with_kwargs)
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args, output)`` after forward; may return a replacement output."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = (hook, with_kwargs)
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` when the gradients of the module's inputs are computed."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    _compiled_call_impl = None  # set by Module.compile(): calls then run the compiled graphs

    def __call__(self, *args, **kwargs):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place with :func:`core.compile` and its arguments
        (``torch.nn.Module.compile``); ``state_dict`` keys stay as they are."""
        from ...compiler import compile_module_in_place

        compile_module_in_place(self, *args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        """One call: forward pre-hooks, ``forward``, backward hooks, forward hooks."""
        for hook, with_kwargs in list(self._forward_pre_hooks.values()):
            if with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        if self._backward_hooks:
            args, state = _BackwardHookState.wrap_inputs(self, args)
        output = self.forward(*args, **kwargs)
        if self._backward_hooks:
            output = state.wrap_outputs(output)
        for hook, with_kwargs in list(self._forward_hooks.values()):
            result = hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
            if result is not None:
                output = result
        return output

    # -- printing -------------------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (constructor arguments)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, module in self._modules.items():
            text = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)


class _BackwardHookState:
    """Identity nodes around a module call so full backward hooks see grad_input and grad_output together."""

    def __init__(self, module: Module, tensor_count: int, grad_slots: list):
        self.module = module
        self.grad_outputs = None
        self.tensor_count = tensor_count  # grad_input has one entry per tensor argument, as in PyTorch
        self.grad_slots = grad_slots  # which of those entries receive a gradient

    @classmethod
    def wrap_inputs(cls, module: Module, args: tuple):
        tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        grad_positions = [i for i in tensor_positions if args[i].requires_grad]
        state = cls(module, len(tensor_positions), [tensor_positions.index(i) for i in grad_positions])
        if not grad_positions:
            return args, state
        wrapped = _InputHook.apply(state, *[args[i] for i in grad_positions])
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        args = list(args)
        for i, t in zip(grad_positions, wrapped):
            args[i] = t
        return tuple(args), state

    def wrap_outputs(self, output):
        outputs = output if isinstance(output, tuple) else (output,)
        positions = [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]
        if not positions:
            return output
        wrapped = _OutputHook.apply(self, *[outputs[i] for i in positions])
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        outputs = list(outputs)
        for i, t in zip(positions, wrapped):
            outputs[i] = t
        return tuple(outputs) if isinstance(output, tuple) else outputs[0]

    def call_hooks(self, grads: tuple) -> tuple:
        """Run the hooks with one grad_input entry per tensor argument; returns the (possibly replaced) grads."""
        grad_input = [None] * self.tensor_count
        for slot, g in zip(self.grad_slots, grads):
            grad_input[slot] = g
        for hook in list(self.module._backward_hooks.values()):
            result = hook(self.module, tuple(grad_input), self.grad_outputs)
            if result is not None:
                grad_input = list(result)
        return tuple(grad_input[slot] for slot in self.grad_slots)


class _OutputHook(Function):
    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        return tuple(t.view_as(t) for t in tensors) if len(tensors) > 1 else tensors[0].view_as(tensors[0])

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        state.grad_outputs = grads
        if not state.grad_slots:  # no input needs a gradient: the hooks run now, with grad_input all None
            state.call_hooks(())
        return (None, *grads)


class _InputHook(Function):
    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        return tuple(t.view_as(t) for t in tensors) if len(tensors) > 1 else tensors[0].view_as(tensors[0])

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.state.call_hooks(grads))
