"""``Optimizer``: param groups, per-parameter state, state dicts and step hooks (``torch.optim.Optimizer``)."""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain
from typing import Any, Callable

from .. import dtypes as dt
from ..autograd import enable_grad, set_grad_enabled
from ..dispatch.keys import tls
from ..utils.hooks import RemovableHandle
from ..ops.creation import tensor as _tensor
from ..ops.view import view_as_real
from ..tensor import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks a default that every param group must give (``torch.optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _scalar(value):
    """A hyper-parameter as a Python number (a 1-element Tensor ``lr`` is read with ``item()``)."""
    return value.item() if isinstance(value, Tensor) else value


def _step_tensor(value: float = 0.0) -> Tensor:
    """A step counter as PyTorch keeps it: a 0-d float32 tensor on the CPU (cheap to read each step)."""
    return _tensor(value, dtype=dt.float32)


def _real_views(param: Tensor, *tensors):
    """For a complex parameter, real views (a trailing dim of 2) of it and its tensors, as PyTorch updates them."""
    if not param.is_complex():
        return (param, *tensors)
    return tuple(t if t is None else view_as_real(t) for t in (param, *tensors))


def _check_hyper(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _check_fused(differentiable: bool, fused: bool | None) -> None:
    """PyTorch's fused kernels are not differentiable: asking for both is an error."""
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")


def _lr(group: dict[str, Any]):
    """The group's learning rate: a tensor stays one in a differentiable step (autograd reaches it), else a number."""
    lr = group["lr"]
    return lr if isinstance(lr, Tensor) and group.get("differentiable", False) else _scalar(lr)


def _with_step_hooks(step: Callable) -> Callable:
    """Wrap an optimizer's ``step`` so it runs the step hooks and records that it was called."""
    if getattr(step, "_with_step_hooks", False):
        return step

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for pre_hook in list(self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{pre_hook} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
                args, kwargs = result
        if tls.recording is not None:  # a whole-step capture replays only while the hyper-parameters stay
            from ..dispatch.capture import note_object

            note_object(self, self._hyper_parameters)
        out = step(self, *args, **kwargs)
        self._opt_called = True  # lets an LR scheduler warn when it is stepped before the optimizer
        for post_hook in list(self._optimizer_step_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out

    wrapper._with_step_hooks = True
    return wrapper


class Optimizer:
    """Base class of all optimizers (``torch.optim.Optimizer``).

    Subclasses either implement ``_update(p, grad, group)`` (one parameter with a gradient; the base ``step``
    calls it under ``no_grad`` after negating the gradient for ``maximize``) or override ``step``.

    With ``differentiable=True`` the base ``step`` runs with grad mode on instead (PyTorch's
    ``_use_grad_for_differentiable``): the in-place updates are recorded, so the new parameters are functions of the
    old ones, their gradients, the state and a tensor ``lr``; the parameters are then non-leaf tensors (e.g. clones).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _with_step_hooks(cls.__dict__["step"])

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state: defaultdict[Tensor, dict] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def _init_hooks(self) -> None:
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    #: Options older checkpoints may lack, filled into every param group on unpickling (PyTorch's __setstate__).
    _GROUP_DEFAULTS: dict = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_hooks()
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._GROUP_DEFAULTS.items():
                group.setdefault(key, value)
        for param_state in self.state.values():
            # Old PyTorch checkpoints keep the step as a Python number; steps count in a float32 tensor now.
            if isinstance(param_state, dict) and "step" in param_state and not isinstance(param_state["step"], Tensor):
                param_state["step"] = _step_tensor(float(param_state["step"]))

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- hooks --------------------------------------------------------------------------------------------
    def _register(self, registry: OrderedDict, hook: Callable, prepend: bool = False) -> RemovableHandle:
        handle = RemovableHandle(registry)
        registry[handle.id] = hook
        if prepend:
            registry.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs before ``step``; it may return new ``(args, kwargs)``."""
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after ``step``."""
        return self._register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs before ``state_dict`` builds the dict."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs after ``state_dict``; it may return a replacement dict."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs before ``load_state_dict``; it may return a replacement dict."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs after ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dicts --------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` (PyTorch's layout)."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        index_of: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index_of[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _cast_state(param: Tensor, value, key=None):
        """A loaded state value moved to the parameter's device (and its dtype when floating; ``step`` stays)."""
        if isinstance(value, Tensor):
            if key == "step":
                return value
            if param.is_floating_point():
                return value.to(dtype=param.dtype, device=param.device)
            return value.to(device=param.device)
        if isinstance(value, dict):
            return {k: Optimizer._cast_state(param, v, k) for k, v in value.items()}
        if isinstance(value, Iterable) and not isinstance(value, str):
            return type(value)(Optimizer._cast_state(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a dict from ``state_dict()`` (``torch.optim.Optimizer.load_state_dict``)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict[Tensor, dict] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = self._cast_state(id_map[k], v)
            else:
                state[k] = v
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- gradients and steps ------------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to ``None``, or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None):
        """One optimization step; ``closure`` re-evaluates the model and returns the loss."""
        if type(self)._update is Optimizer._update:
            raise NotImplementedError
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        differentiable = bool(self.defaults.get("differentiable", False))
        with set_grad_enabled(differentiable):
            for group in self.param_groups:
                maximize = group.get("maximize", False)
                for p in group["params"]:
                    if p.grad is not None:
                        if differentiable:
                            self._copy_state(p)
                        self._update(p, -p.grad if maximize else p.grad, group)
        return loss

    step = _with_step_hooks(step)

    def _hyper_parameters(self) -> tuple:
        """Every group's settings (a tensor by identity and version) and size: what a captured step baked in."""
        return tuple((len(g["params"]), tuple((k, (id(v), v._storage.version) if isinstance(v, Tensor) else v)
                                              for k, v in g.items() if k != "params"))
                     for g in self.param_groups)

    def _copy_state(self, p: Tensor) -> None:
        """Give ``p``'s state fresh tensors before a differentiable step updates them in place.

        Earlier steps' graphs saved the old state tensors (``exp_avg * adaptive_lr`` saves ``exp_avg``); writing
        into those would invalidate them. The step counter never enters a graph and is kept.
        """
        state = self.state[p]
        for key, value in state.items():
            if isinstance(value, Tensor) and key != "step":
                state[key] = value.clone()

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        """Update one parameter in place from its (already ``maximize``-negated) gradient."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options; missing options take the defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param._retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(id(p) for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return "core.Tensor"
    module = type(obj).__module__
    return type(obj).__qualname__ if module in ("builtins", None) else f"{module}.{type(obj).__qualname__}"
