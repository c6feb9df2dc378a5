"""Parametrisations (``torch.nn.utils.parametrize``): ``module.weight`` becomes a property computed by small modules
from the stored ``module.parametrizations.weight.original`` (or ``original0``, ``original1``, ... when the first
parametrisation's ``right_inverse`` returns several tensors); assigning ``module.weight = X`` stores
``right_inverse(X)``."""

from __future__ import annotations

import contextlib

from ...autograd import no_grad
from ...tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["ParametrizationList", "register_parametrization", "remove_parametrizations", "is_parametrized",
           "cached", "type_before_parametrizations"]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Within this context each parametrised tensor is computed once, on first use, and reused
    (``torch.nn.utils.parametrize.cached``)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_tensor(module, name: str, value) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


class ParametrizationList(ModuleList):
    """The parametrisations of one tensor, applied in order to ``original`` (or ``original0``, ...)
    (``torch.nn.utils.parametrize.ParametrizationList``)."""

    def __init__(self, modules, original, unsafe: bool = False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        new = original
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if tuple(new.shape) != tuple(original.shape) or new.dtype != original.dtype:
                original = type(original)(new.detach().clone(), original.requires_grad) \
                    if isinstance(original, Parameter) else new.detach().clone()
            else:
                with no_grad():
                    original.copy_(new)
            _register_tensor(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...)."
                                     f" Got element {i} of the sequence with type {type(part).__name__}.")
                if isinstance(original, Parameter):
                    part = Parameter(part.detach().clone(), original.requires_grad)
                _register_tensor(self, f"original{i}", part)

    def right_inverse(self, value) -> None:
        """Store ``value`` by running the ``right_inverse`` of every parametrisation, last first."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, part in enumerate(value):
                    getattr(self, f"original{i}").copy_(part)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module) -> None:
    """Give ``module`` a class of its own (a subclass of its class) to hold the parametrised properties."""
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"_before_parametrizations": cls})


def _inject_property(module, tensor_name: str) -> None:
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrisation (on ``tensor_name``, if given)
    (``torch.nn.utils.parametrize.is_parametrized``)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def type_before_parametrizations(module) -> type:
    """The class ``module`` had before it was parametrised (``torch.nn.utils.parametrize.type_before_...``)."""
    return module.__class__._before_parametrizations if is_parametrized(module) else type(module)


def register_parametrization(module, tensor_name: str, parametrization, *, unsafe: bool = False):
    """Make ``module.tensor_name`` the output of ``parametrization`` applied to the stored original (after the
    parametrisations already there) (``torch.nn.utils.parametrize.register_parametrization``). Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            out = parametrization(current)
            if not isinstance(out, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(out).__name__}.")
            if out.dtype != current.dtype or tuple(out.shape) != tuple(current.shape):
                raise ValueError(f"Registering a parametrization may not change the shape or dtype of the tensor, "
                                 f"unless `unsafe` flag is enabled.\nunparametrized dtype: {current.dtype}\n"
                                 f"parametrized dtype: {out.dtype}\nunparametrized shape: {tuple(current.shape)}\n"
                                 f"parametrized shape: {tuple(out.shape)}")
        module.parametrizations[tensor_name].append(parametrization)
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' parametrization does not have a parameter, a buffer, or a parametrized "
                         f"element with name '{tensor_name}'")
    return module


def remove_parametrizations(module, tensor_name: str, leave_parametrized: bool = True):
    """Remove the parametrisations on ``tensor_name``; it becomes a plain parameter (or buffer) holding the current
    parametrised value, or the stored original with ``leave_parametrized=False``
    (``torch.nn.utils.parametrize.remove_parametrizations``). Returns ``module``."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            if isinstance(original, Parameter):
                original = Parameter(value.detach().clone(), original.requires_grad)
            else:
                original = value.detach().clone()
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                             "in terms of a sequence of tensors.")
        with no_grad():
            value = getattr(module, tensor_name)
        original = Parameter(value.detach().clone(), parametrizations.original0.requires_grad) \
            if isinstance(parametrizations.original0, Parameter) else value.detach().clone()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_tensor(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__._before_parametrizations
    return module
