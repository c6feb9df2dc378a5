"""What a ``core.compile`` graph depends on, as one hashable key per call (the *guards*).

A trace bakes in everything it read in Python. The key holds what can be read cheaply before a call:

* every tensor argument's shape, dtype, device and ``requires_grad``, and which arguments share storage;
* every other argument's type and value (``==``), nested in lists, tuples and dicts;
* for a module, the ``training`` flag and the simple (number, string, bool, None) attributes of every submodule;
* the simple values of the globals and closure variables that the function's code (and the user functions
  it names, transitively) refers to, and of attributes named in that code on modules it refers to;
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
from ..amp.state import STATE as AUTOCAST
from ..autograd import is_grad_enabled
from ..device import device as _device, get_default_device
from ..nn.modules.module import Module
from ..tensor import Tensor

__all__ = ["Unguardable", "flatten_args", "GuardBuilder"]

_SIMPLE = (type(None), bool, int, float, complex, str, bytes, dt.dtype, _device)
_MISSING = object()
_MAX_DEPTH = 4  # how far the global walk follows user functions named by the compiled code


class Unguardable(Exception):
    """An argument whose value cannot be part of a guard (an arbitrary object)."""


def _snapshot(value):
    """What a guard compares for a global, closure or attribute value (see the module docstring)."""
    if isinstance(value, Tensor):
        by_reference = value.requires_grad and value.grad_fn is None
        return Tensor, id(value), None if by_reference else value._storage.version
    return value


def _guarded(value) -> bool:
    return isinstance(value, Tensor) or _is_simple(value)


def _is_simple(value) -> bool:
    if isinstance(value, _SIMPLE):
        return True
    return isinstance(value, (tuple, frozenset)) and all(_is_simple(v) for v in value)


def flatten_args(obj, tensors: list):
    """The guard key of ``obj`` with its tensors appended to ``tensors`` (and replaced by their index)."""
    if isinstance(obj, Tensor):
        tensors.append(obj)
        return ("T", obj._shape, obj.dtype, obj.device, obj.requires_grad)
    cls = obj.__class__
    if cls is tuple or cls is list:
        return (cls, tuple(flatten_args(x, tensors) for x in obj))
    if cls is dict:
        return (dict, tuple((k, flatten_args(v, tensors)) for k, v in obj.items()))
    if _is_simple(obj) or isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type)):
        return (cls, obj)
    raise Unguardable(f"an argument of type {cls.__name__}")


def rebuild_args(obj, tensors):
    """``obj`` with its tensors replaced, in order, by the next ones of the iterator ``tensors``."""
    if isinstance(obj, Tensor):
        return next(tensors)
    cls = obj.__class__
    if cls is tuple or cls is list:
        return cls(rebuild_args(x, tensors) for x in obj)
    if cls is dict:
        return {k: rebuild_args(v, tensors) for k, v in obj.items()}
    return obj


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
    module = getattr(obj, "__module__", None) or ""
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
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None or id(fn) in self._seen or depth > _MAX_DEPTH:
            return
        self._seen.add(id(fn))
        names = _code_names(code)
        scope = fn.__globals__
        for name in sorted(names):
            value = scope.get(name, _MISSING)
            if _guarded(value):
                self.reads.append((f"global {name}", lambda s=scope, n=name: _snapshot(s.get(n, _MISSING))))
            elif isinstance(value, types.ModuleType) and not _is_library(value) and value.__name__ != "builtins":
                self._module_names(value, names)
            elif isinstance(value, types.FunctionType) and not _is_library(value):
                self._function(value, depth + 1)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # not yet assigned
                continue
            if _guarded(value):
                self.reads.append((f"closure {name}", lambda c=cell: _snapshot(c.cell_contents)))
            elif isinstance(value, types.FunctionType) and not _is_library(value):
                self._function(value, depth + 1)

    def _module_names(self, pymodule: types.ModuleType, names: set) -> None:
        scope = vars(pymodule)
        for name in sorted(names):
            if _guarded(scope.get(name, _MISSING)):
                self.reads.append((f"{pymodule.__name__}.{name}",
                                   lambda s=scope, n=name: _snapshot(s.get(n, _MISSING))))

    def key(self, args: tuple, kwargs: dict, tensors: list) -> tuple:
        """The guard key of one call; fills ``tensors`` with the call's tensor arguments in order."""
        arg_key = flatten_args((args, kwargs), tensors)
        state = (is_grad_enabled(), dt.get_default_dtype(), get_default_device(),
                 frozenset(AUTOCAST.enabled.items()), frozenset(AUTOCAST.dtype.items()))
        training = tuple(m.training for m in self.module.modules()) if self.module is not None else ()
        return arg_key, _aliasing(tensors), state, training, tuple(read() for _, read in self.reads)
