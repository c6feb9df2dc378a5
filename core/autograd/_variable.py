"""``Variable`` (PyTorch's deprecated tensor wrapper, now the tensor itself) and ``is_tensor_like``."""

from __future__ import annotations

from ..tensor import Tensor

__all__ = ["Variable", "is_tensor_like"]


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """The legacy ``torch.autograd.Variable``: ``Variable(tensor, requires_grad=False)`` returns a new leaf tensor
    sharing ``tensor``'s data, and every tensor is an instance of it."""

    def __new__(cls, data, requires_grad: bool = False, volatile: bool = False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a tensor or behaves like one through ``__torch_function__``
    (``torch.autograd.is_tensor_like``)."""
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")
