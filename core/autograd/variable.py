"""``torch.autograd.variable``: the legacy ``Variable``, which is now the tensor itself."""

from __future__ import annotations

from ..tensor import Tensor

__all__ = ["Variable"]


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
