"""The ``__torch_function__`` protocol (``torch.overrides``' helpers that ``torch.autograd`` re-exports): a type that
defines ``__torch_function__(func, types, args, kwargs)`` takes over the functions that pass it to
:func:`handle_torch_function`, as in PyTorch's "Extending torch with a Tensor-like type"."""

from __future__ import annotations

from ..tensor import Tensor

__all__ = ["is_tensor_like", "has_torch_function", "handle_torch_function"]


def _overrides(cls) -> bool:
    """Whether ``cls`` defines a ``__torch_function__`` of its own (core.Tensor's, if it ever has one, does not
    count: plain tensors are not dispatchable)."""
    method = getattr(cls, "__torch_function__", None)
    return method is not None and method is not getattr(Tensor, "__torch_function__", None)


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a tensor or behaves like one through ``__torch_function__``
    (``torch.autograd.is_tensor_like``)."""
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")


def has_torch_function(relevant_args) -> bool:
    """Whether one of ``relevant_args`` has a type that overrides ``__torch_function__``
    (``torch.overrides.has_torch_function``): the guard before :func:`handle_torch_function`."""
    return any(_overrides(type(arg)) for arg in relevant_args)


def _overloaded_args(relevant_args) -> list:
    """One argument per overriding type, in PyTorch's order: first seen first, but subclasses before superclasses."""
    seen, ordered = set(), []
    for arg in relevant_args:
        cls = type(arg)
        if cls in seen or not _overrides(cls):
            continue
        seen.add(cls)
        index = next((i for i, old in enumerate(ordered) if issubclass(cls, type(old))), len(ordered))
        ordered.insert(index, arg)
    return ordered


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the ``__torch_function__(public_api, types, args, kwargs)`` overrides of ``relevant_args`` in order
    until one returns something other than NotImplemented (``torch.overrides.handle_torch_function``); TypeError
    when all decline."""
    overloaded = _overloaded_args(relevant_args)
    types = tuple(type(arg) for arg in overloaded)
    for arg in overloaded:
        result = arg.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = f"{public_api.__module__}.{public_api.__name__}"
    raise TypeError(f"no implementation found for '{name}' on types that implement __torch_function__: "
                    f"{[type(arg) for arg in overloaded]}")
