"""What a ``core.compile`` graph depends on, as one hashable key per call (the *guards*).

A trace bakes in everything it read in Python. The key holds what can be read cheaply before a call:

* every tensor argument's shape, dtype, device and ``requires_grad``, and which arguments share storage;
* every other argument's type and value (``==``), nested in lists, tuples and dicts;
* for a module, the ``training`` flag and the simple (number, string, bool, None) attributes of every submodule,
  and the shape, dtype, device and ``requires_grad`` of its parameters and buffers;
* the simple values of the globals and closure variables that the function's code (and the user functions
  it names, transitively) refers to, of small lists and dicts of simple values among them (by their items),
  and of attributes named in that code on the user modules, classes and objects it refers to;
* tensors among those attributes, globals and closure variables (which a trace stores as constants) by
  identity and version counter, so replacing or writing one captures again; a leaf that requires grad (a
  weight, bound by reference) by identity only, so optimizer steps do not;
* global state: grad mode, the default dtype and device, and autocast's state.

A program whose Python reads something else (a list's contents, an attribute of an arbitrary object, a
global read only by library code) is not guarded: see docs/jit.md, "core.compile".
"""

from __future__ import annotations

import types

from .. import dtypes as dt
from .._hot import is_function
from ..amp.state import STATE as AUTOCAST
from ..autograd import is_grad_enabled
from ..device import device as _device, get_default_device
from ..nn.modules.module import Module
from ..tensor import Tensor

__all__ = ["Unguardable", "flatten_args", "GuardBuilder"]

_SIMPLE = (type(None), bool, int, float, complex, str, bytes, dt.dtype, _device)
_MISSING = object()
_MAX_DEPTH = 4  # how far the global walk follows user functions named by the compiled code
_MAX_CONTAINER = 64  # lists and dicts of simple values up to this length are guarded by their items


class Unguardable(Exception):
    """An argument whose value cannot be part of a guard (an arbitrary object)."""


def _snapshot(value):
    """What a guard compares for a global, closure or attribute value (see the module docstring)."""
    if isinstance(value, Tensor):
        by_reference = value.requires_grad and value.grad_fn is None
        return Tensor, id(value), None if by_reference else value._storage.version
    if isinstance(value, (list, dict)):
        items = tuple(value.items()) if isinstance(value, dict) else tuple(value)
        if len(items) <= _MAX_CONTAINER and all(_is_simple(item) for item in items):
            return type(value), items
        return object()  # no longer guardable: never equal, so every call captures again (then runs eagerly)
    return value


def _guarded(value) -> bool:
    if isinstance(value, (list, dict)):
        return len(value) <= _MAX_CONTAINER
    return isinstance(value, Tensor) or _is_simple(value)


def _is_simple(value) -> bool:
    if isinstance(value, _SIMPLE):
        return True
    return isinstance(value, (tuple, frozenset)) and all(_is_simple(v) for v in value)


def flatten_args(obj, tensors: list, shapes: bool = True):
    """The guard key of ``obj`` with its tensors appended to ``tensors`` (and replaced by their index); with
    ``shapes=False`` a tensor's key holds its rank instead of its shape (the key of dynamic-shape graphs)."""
    if isinstance(obj, Tensor):
        tensors.append(obj)
        return ("T", obj._shape if shapes else len(obj._shape), obj.dtype, obj.device, obj.requires_grad)
    cls = obj.__class__
    if cls is tuple or cls is list:
        return (cls, tuple(flatten_args(x, tensors, shapes) for x in obj))
    if cls is dict:
        return (dict, tuple((k, flatten_args(v, tensors, shapes)) for k, v in obj.items()))
    if _is_simple(obj) or is_function(obj) or isinstance(obj, (types.BuiltinFunctionType, type)):
        return (cls, obj)
    raise Unguardable(f"an argument of type {cls.__name__}")


def rebuild_args(obj, tensors, leaf=Tensor):
    """``obj`` with its tensors (instances of ``leaf``) replaced, in order, by the next ones of the iterator
    ``tensors``."""
    if isinstance(obj, leaf):
        return next(tensors)
    cls = obj.__class__
    if cls is tuple or cls is list:
        return cls(rebuild_args(x, tensors, leaf) for x in obj)
    if cls is dict:
        return {k: rebuild_args(v, tensors, leaf) for k, v in obj.items()}
    return obj


def _modules(module: Module, out: list, seen: set) -> list:
    """``module`` and its descendants, each once, in ``modules()`` order (without its generators: every call of
    a compiled module reads them)."""
    seen.add(id(module))
    out.append(module)
    for child in module._modules.values():
        if child is not None and id(child) not in seen:
            _modules(child, out, seen)
    return out


def _aliasing(tensors: list) -> tuple:
    first: dict = {}
    return tuple(first.setdefault(id(t._storage), i) for i, t in enumerate(tensors))


def _code_names(code: types.CodeType) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _is_library(obj) -> bool:
    if isinstance(obj, types.ModuleType):
        module = obj.__name__
    elif isinstance(obj, type) or is_function(obj):
        module = obj.__module__ or ""
    else:
        module = type(obj).__module__
    return module.split(".")[0] in ("core", "numpy", "builtins")


class GuardBuilder:
    """Collects, once per compiled object, the Python values its guard key reads at every call."""

    def __init__(self, fn, module: Module | None):
        self.module = module
        self.reads: list = []  # (description, zero-argument reader)
        self._seen: set = set()
        if module is not None:
            self._module_attributes(module)
            for m in module.modules():
                if not _is_library(type(m)):
                    self._function(type(m).forward, 0)
        else:
            self._function(fn, 0)

    def _module_attributes(self, module: Module) -> None:
        for name, m in module.named_modules():
            for attr, value in vars(m).items():
                if not attr.startswith("_") and _guarded(value):
                    self.reads.append((f"{name or 'self'}.{attr}",
                                       lambda m=m, a=attr: _snapshot(getattr(m, a, _MISSING))))

    def _function(self, fn, depth: int) -> None:
        owner = getattr(fn, "__self__", None)  # a bound method's object: its attributes the code names count
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None or id(fn) in self._seen or depth > _MAX_DEPTH:
            return
        self._seen.add(id(fn))
        names = _code_names(code)
        if owner is not None and not isinstance(owner, types.ModuleType):
            self._value("self", lambda: owner, owner, names, depth)
        scope = fn.__globals__
        for name in sorted(names & scope.keys()):
            self._value(f"global {name}", lambda s=scope, n=name: s.get(n, _MISSING), scope[name], names, depth)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # not yet assigned
                continue
            self._value(f"closure {name}", lambda c=cell: c.cell_contents, value, names, depth)

    def _value(self, label: str, read, value, names: set, depth: int) -> None:
        """Guard ``read()`` when ``value`` can be guarded; else follow a user function or the attributes the code
        names on a user module, class or object."""
        if _guarded(value):
            self.reads.append((label, lambda: _snapshot(read())))
        elif is_function(value):
            if not _is_library(value):
                self._function(value, depth + 1)
        elif isinstance(getattr(value, "__dict__", None), (dict, types.MappingProxyType)) and not _is_library(value):
            scope = value.__dict__
            for name in sorted(names & scope.keys()):
                if _guarded(scope[name]):
                    self.reads.append((f"{label}.{name}", lambda s=scope, n=name: _snapshot(s.get(n, _MISSING))))

    def key(self, args: tuple, kwargs: dict, tensors: list, shapes: bool = True) -> tuple:
        """The guard key of one call; fills ``tensors`` with the call's tensor arguments in order. With
        ``shapes=False``, the arguments' ranks stand for their shapes (see :mod:`.dynamic`)."""
        arg_key = flatten_args((args, kwargs), tensors, shapes)
        state = (is_grad_enabled(), dt.get_default_dtype(), get_default_device(),
                 frozenset(AUTOCAST.enabled.items()), frozenset(AUTOCAST.dtype.items()))
        module = self.module
        if module is None:
            owned = ()
        else:  # the training flags, and the parameters' and buffers' types (a trace bakes what it read of them)
            modules = _modules(module, [], set())
            owned = (tuple(m.training for m in modules),
                     tuple((t._shape, t.dtype, t.device, t.requires_grad) for m in modules
                           for t in (*m._parameters.values(), *m._buffers.values()) if t is not None))
        return arg_key, _aliasing(tensors), state, owned, tuple(read() for _, read in self.reads)
