"""``Parameter``: a tensor that a Module registers as learnable when assigned as an attribute."""

from __future__ import annotations

from ..tensor import PLAIN_CLASSES, Tensor

__all__ = ["Parameter", "Buffer", "is_parameter", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


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


PLAIN_CLASSES.update((Parameter, Buffer))  # in-place arithmetic on them writes in place (core/tensor.py)


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet: it holds no elements until :meth:`materialize`."""

    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give it storage of ``shape`` (uninitialised values) and make it a plain Parameter / Tensor."""
        from ..ops.creation import empty

        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = empty(tuple(shape), device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def _empty_placeholder(device, dtype):
    from ..ops.creation import empty

    return empty(0, device=device, dtype=dtype)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape a lazy module infers on its first forward (``torch.nn.UninitializedParameter``)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Parameter.__new__(cls, _empty_placeholder(device, dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        result = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape a lazy module infers on its first forward (``torch.nn.UninitializedBuffer``)."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        data = _empty_placeholder(device, dtype)
        self = object.__new__(cls)
        self._storage, self._shape, self._stride = data._storage, data._shape, data._stride
        self._offset, self.dtype, self._np = data._offset, data.dtype, data._np
        self.requires_grad = requires_grad
        self.persistent = persistent
        return self

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        pass

    def __deepcopy__(self, memo):
        result = type(self)(self.requires_grad, self.device, self.dtype, self.persistent)
        memo[id(self)] = result
        return result


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialised parameter or buffer of a lazy module."""
    return isinstance(param, UninitializedTensorMixin)


def is_parameter(obj) -> bool:
    """Whether ``obj`` is a Parameter."""
    return isinstance(obj, Parameter)
