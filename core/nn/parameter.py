"""``Parameter``: a tensor that a Module registers as learnable when assigned as an attribute."""

from __future__ import annotations

from ..tensor import Tensor

__all__ = ["Parameter", "Buffer", "is_parameter"]


class Parameter(Tensor):
    """A leaf tensor that requires grad (by default) and is registered by ``Module.__setattr__``."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from ..ops.creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        self = object.__new__(cls)
        self._storage, self._shape, self._stride = data._storage, data._shape, data._stride
        self._offset, self.dtype, self._np = data._offset, data.dtype, data._np
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)
        return self

    def __init__(self, data=None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        result = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (Parameter, (self.detach().clone(), self.requires_grad))


class Buffer(Tensor):
    """Marks a tensor as a buffer when assigned to a Module (``torch.nn.Buffer``)."""

    def __new__(cls, data: Tensor, *, persistent: bool = True):
        self = object.__new__(cls)
        self._storage, self._shape, self._stride = data._storage, data._shape, data._stride
        self._offset, self.dtype, self._np = data._offset, data.dtype, data._np
        self.requires_grad = data.requires_grad
        self.persistent = persistent
        return self

    def __init__(self, data=None, *, persistent: bool = True):
        pass


def is_parameter(obj) -> bool:
    """Whether ``obj`` is a Parameter."""
    return isinstance(obj, Parameter)
