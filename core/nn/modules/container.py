"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``."""

from __future__ import annotations

import operator
import warnings
from collections import OrderedDict

from ..parameter import Parameter
from .module import Module

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(length: int, idx: int, kind: str) -> int:
    idx = operator.index(idx)
    if not -length <= idx < length:
        raise IndexError(f"index {idx} is out of range")
    return idx % length


class Container(Module):
    """A module holding the child modules given as keyword arguments; deprecated in PyTorch in favour of
    subclassing ``Module`` (``torch.nn.Container``)."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.", stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)


class Sequential(Module):
    """Modules applied in order; ``Sequential(a, b)`` or ``Sequential(OrderedDict(name=module))``."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(len(self), idx, "Sequential")]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules.keys())[_index(len(self), idx, "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules.keys())
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(len(self), idx, "Sequential")]]):
            del self._modules[key]
        # keep the names 0..n-1, as PyTorch does
        modules = list(self._modules.values())
        self._modules.clear()
        for i, module in enumerate(modules):
            self._modules[str(i)] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other: "Sequential") -> "Sequential":
        return Sequential(*self, *other)

    def append(self, module: Module) -> "Sequential":
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: int) -> Module:
        """Remove and return the module at ``key``."""
        value = self[key]
        del self[key]
        return value

    def insert(self, index: int, module: Module) -> "Sequential":
        """Insert ``module`` before position ``index``."""
        modules = list(self._modules.values())
        if not -len(modules) <= index <= len(modules):
            raise IndexError(f"Index out of range: {index}")
        modules.insert(index if index >= 0 else len(modules) + index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m
        return self

    def extend(self, modules) -> "Sequential":
        """Append every module of ``modules``."""
        for module in modules:
            self.append(module)
        return self

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so their parameters are found."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(len(self), idx, "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index(len(self), idx, "ModuleList")), module)

    def __delitem__(self, idx) -> None:
        modules = list(self._modules.values())
        del modules[idx]
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __repr__(self) -> str:
        """Like PyTorch's: runs of children with the same repr collapse to ``(i-j): n x Child(...)``."""
        children = [repr(m) for m in self._modules.values()]
        if not children:
            return f"{self._get_name()}()"
        lines, start = [], 0
        for end in range(1, len(children) + 1):
            if end == len(children) or children[end] != children[start]:
                text = children[start].replace("\n", "\n  ")
                label = f"({start})" if end - start == 1 else f"({start}-{end - 1}): {end - start} x"
                lines.append(f"{label}: {text}" if end - start == 1 else f"{label} {text}")
                start = end
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"

    def __iadd__(self, modules) -> "ModuleList":
        return self.extend(modules)

    def append(self, module: Module) -> "ModuleList":
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> "ModuleList":
        """Append every module of ``modules``."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m


class ModuleDict(Module):
    """A dict of modules, registered so their parameters are found."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key: str) -> Module:
        """Remove and return the module under ``key``."""
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        """Add modules from a mapping or an iterable of (key, module) pairs."""
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module


class ParameterList(Module):
    """A list of parameters, registered on the module."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([getattr(self, str(i)) for i in range(*idx.indices(len(self)))])
        return getattr(self, str(_index(len(self), idx, "ParameterList")))

    def __setitem__(self, idx: int, param) -> None:
        setattr(self, str(_index(len(self), idx, "ParameterList")), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return (getattr(self, str(i)) for i in range(len(self)))

    def append(self, value) -> "ParameterList":
        """Add a parameter at the end."""
        setattr(self, str(self._size), _as_parameter(value))
        self._size += 1
        return self

    def extend(self, values) -> "ParameterList":
        """Append every value."""
        for value in values:
            self.append(value)
        return self

    def __repr__(self) -> str:
        lines = [f"    ({i}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                 for i, p in enumerate(self)]
        return "ParameterList(" + ("\n" + "\n".join(lines) + "\n" if lines else "") + ")"


class ParameterDict(Module):
    """A dict of parameters, registered on the module."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): Parameter containing: [{p.type()} of size {'x'.join(map(str, p.shape))}]"
                         for k, p in self._parameters.items())

    def update(self, parameters) -> None:
        """Add parameters from a mapping or an iterable of (key, value) pairs."""
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in items:
            self[key] = value


def _as_parameter(value):
    from ...tensor import Tensor

    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value
