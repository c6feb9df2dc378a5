"""DataPipes (``torch.utils.data.datapipes``): datasets that chain by functional names, with optional type checks.

``IterDataPipe`` / ``MapDataPipe`` are iterable / map-style datasets. A class decorated with
``@functional_datapipe("name")`` becomes a method of every DataPipe of its kind: ``dp.name(*args)``
is ``Cls(dp, *args)``. ``IterDataPipe[T]`` records the element type ``T``; ``@argument_validation``
checks DataPipe arguments against such hints and ``@runtime_validation`` checks each element an
``__iter__`` yields. PyTorch has deprecated DataPipes; core keeps this core of them for old code.
"""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any, get_type_hints

from .dataset import Dataset, IterableDataset

__all__ = ["DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe", "argument_validation",
           "functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic", "runtime_validation",
           "runtime_validation_disabled"]


# -- element types ----------------------------------------------------------------------------------------------------

def _issubtype(left, right) -> bool:
    """Whether type hint ``left`` is a subtype of ``right`` (Any, Union, classes and generic containers)."""
    if right is Any or left == right:
        return True
    if typing.get_origin(left) is typing.Union:
        return all(_issubtype(a, right) for a in typing.get_args(left))
    if typing.get_origin(right) is typing.Union:
        return any(_issubtype(left, a) for a in typing.get_args(right))
    if left is Any:
        return False
    lo, ro = typing.get_origin(left) or left, typing.get_origin(right) or right
    if not (isinstance(lo, type) and isinstance(ro, type) and issubclass(lo, ro)):
        return False
    largs, rargs = typing.get_args(left), typing.get_args(right)
    if not rargs:
        return True
    return len(largs) == len(rargs) and all(_issubtype(a, b) for a, b in zip(largs, rargs))


def _issubinstance(obj, hint) -> bool:
    """Whether ``obj`` is an instance of type hint ``hint``, elements of list/set/tuple/dict hints included."""
    if hint is Any:
        return True
    if isinstance(hint, typing.TypeVar):
        return hint.__bound__ is None or _issubinstance(obj, hint.__bound__)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return any(_issubinstance(obj, a) for a in args)
    if origin is None:
        return isinstance(obj, hint)
    if not isinstance(obj, origin):
        return False
    if not args:
        return True
    if issubclass(origin, dict):
        return all(_issubinstance(k, args[0]) and _issubinstance(v, args[1]) for k, v in obj.items())
    if issubclass(origin, tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_issubinstance(v, args[0]) for v in obj)
        return len(obj) == len(args) and all(_issubinstance(v, a) for v, a in zip(obj, args))
    if issubclass(origin, (list, set, frozenset)):
        return all(_issubinstance(v, args[0]) for v in obj)
    return True  # other generics (Iterator[int], ...): their elements can't be checked without consuming them


class _DataPipeType:
    """The element type ``T`` of an ``IterDataPipe[T]``: a type hint with subtype/instance checks."""

    def __init__(self, param):
        self.param = param

    def __repr__(self) -> str:
        return getattr(self.param, "__name__", None) or repr(self.param)

    def __eq__(self, other) -> bool:
        return isinstance(other, _DataPipeType) and self.param == other.param

    def __hash__(self) -> int:
        return hash(self.param)

    def issubtype(self, other) -> bool:
        """Whether this type is a subtype of ``other`` (a ``_DataPipeType`` or a type hint)."""
        return _issubtype(self.param, other.param if isinstance(other, _DataPipeType) else other)

    def issubtype_of_instance(self, other) -> bool:
        """Whether the object ``other`` is an instance of this type."""
        return _issubinstance(other, self.param)


# -- the DataPipe classes ----------------------------------------------------------------------------------------------

class _FunctionalMixin:
    """The functional-name registry and ``__getattr__`` lookup shared by ``IterDataPipe`` and ``MapDataPipe``;
    each of the two keeps its own ``functions`` dict, returned by its ``_registry()``."""

    type = _DataPipeType(Any)

    def __class_getitem__(cls, param):
        name = f"{cls.__name__}[{_DataPipeType(param)!r}]"
        return type(name, (cls,), {"type": _DataPipeType(param), "__module__": cls.__module__})

    def __getattr__(self, attribute_name):
        functions = type(self)._registry()
        if attribute_name in functions:
            return functools.partial(functions[attribute_name], self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attribute_name}'")

    @classmethod
    def register_function(cls, function_name, function) -> None:
        """Makes ``dp.function_name(*args)`` call ``function(dp, *args)`` on every DataPipe of this kind."""
        cls._registry()[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register, enable_df_api_tracing=False) -> None:
        """Makes ``dp.function_name(*args, **kwargs)`` construct ``cls_to_register(dp, *args, **kwargs)``."""
        functions = cls._registry()
        if function_name in functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is already taken")

        def class_function(source_dp, *args, **kwargs):
            return cls_to_register(source_dp, *args, **kwargs)

        class_function.__name__ = class_function.__qualname__ = function_name
        class_function.__doc__ = cls_to_register.__doc__
        functions[function_name] = class_function

    def __repr__(self) -> str:
        return type(self).__qualname__

    def __str__(self) -> str:
        return type(self).__qualname__

    def __dir__(self):
        return list(super().__dir__()) + list(type(self)._registry())

    def reset(self) -> None:
        """Called when a new iteration starts; a DataPipe with per-epoch state overrides it (a no-op here)."""


class IterDataPipe(_FunctionalMixin, IterableDataset):
    """An iterable-style DataPipe; ``IterDataPipe[T]`` yields ``T`` (``torch.utils.data.IterDataPipe``)."""

    functions: dict = {}

    @classmethod
    def _registry(cls) -> dict:
        return IterDataPipe.functions


class DFIterDataPipe(IterDataPipe):
    """An ``IterDataPipe`` that yields DataFrames (``torch.utils.data.DFIterDataPipe``)."""

    def _is_dfpipe(self) -> bool:
        return True


class MapDataPipe(_FunctionalMixin, Dataset):
    """A map-style DataPipe: ``__getitem__`` and ``__len__`` (``torch.utils.data.MapDataPipe``)."""

    functions: dict = {}

    @classmethod
    def _registry(cls) -> dict:
        return MapDataPipe.functions


class DataChunk(list):
    """A list of samples that a DataPipe passes on as one item, e.g. a batch (``torch.utils.data.DataChunk``)."""

    def __init__(self, items):
        super().__init__(items)
        self.items = items

    def as_str(self, indent: str = "") -> str:
        """``indent`` followed by the items' ``str`` in brackets, comma separated."""
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self):
        yield from super().__iter__()

    def raw_iterator(self):
        """Iterates the ``items`` the chunk was built from."""
        yield from self.items


# -- decorators -------------------------------------------------------------------------------------------------------

class functional_datapipe:
    """Class decorator: registers a DataPipe class under a functional name (``torch.utils.data.functional_datapipe``).

    ``@functional_datapipe("name")`` on ``class Cls(IterDataPipe)`` makes ``dp.name(*args)``
    equal ``Cls(dp, *args)`` for every ``IterDataPipe`` (likewise for ``MapDataPipe``).
    """

    def __init__(self, name: str, enable_df_api_tracing=False) -> None:
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        target = cls.cls if isinstance(cls, non_deterministic) else cls
        if isinstance(target, type) and issubclass(target, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls, self.enable_df_api_tracing)
        elif isinstance(target, type) and issubclass(target, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        else:
            raise TypeError(f"`functional_datapipe` can only decorate IterDataPipe or MapDataPipe, but got {cls!r}")
        return cls


_determinism = False


class guaranteed_datapipes_determinism:
    """Context manager: constructing a ``non_deterministic`` DataPipe inside raises TypeError
    (``torch.utils.data.guaranteed_datapipes_determinism``)."""

    def __init__(self) -> None:
        global _determinism
        self.prev = _determinism
        _determinism = True

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        global _determinism
        _determinism = self.prev


class non_deterministic:
    """Marks an ``IterDataPipe`` class (or, given a predicate of its arguments, some of its instances) as
    non-deterministic, so that ``guaranteed_datapipes_determinism`` refuses it (``torch.utils.data.non_deterministic``).

    ``@non_deterministic`` on a class: always non-deterministic. ``@non_deterministic(fn)``: non-deterministic
    when ``fn(*args, **kwargs)`` (the constructor's arguments) returns True.
    """

    cls = None

    def __init__(self, arg) -> None:
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TypeError("Only `IterDataPipe` can be decorated with `non_deterministic`, "
                                f"but {arg.__name__} is found")
            self.cls = arg
        elif callable(arg):
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _determinism:
                raise TypeError(f"{self.cls.__name__} is non-deterministic, but you set "
                                "'guaranteed_datapipes_determinism'. You can turn off determinism for this "
                                "DataPipe if that is acceptable for your application")
            return self.cls(*args, **kwargs)
        if not (args and isinstance(args[0], type) and issubclass(args[0], IterDataPipe)):
            found = getattr(args[0], "__name__", repr(args[0])) if args else "nothing"
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {found} is found")
        self.cls = args[0]
        return self.deterministic_wrapper_fn

    def deterministic_wrapper_fn(self, *args, **kwargs):
        """Constructs the DataPipe, refusing if ``deterministic_fn`` says these arguments are non-deterministic."""
        res = self.deterministic_fn(*args, **kwargs)
        if not isinstance(res, bool):
            raise TypeError("deterministic_fn of `non_deterministic` decorator is required to return a boolean "
                            f"value, but {type(res)} is found")
        if _determinism and res:
            raise TypeError(f"{self.cls.__name__} is non-deterministic with the inputs, but you set "
                            "'guaranteed_datapipes_determinism'. You can turn off determinism for this "
                            "DataPipe if that is acceptable for your application")
        return self.cls(*args, **kwargs)


def argument_validation(f):
    """Decorator: checks that arguments hinted ``IterDataPipe[T]`` are IterDataPipes whose type is a subtype
    of ``T``, raising TypeError otherwise (``torch.utils.data.argument_validation``)."""
    signature = inspect.signature(f)
    hints = get_type_hints(f)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            hint = hints.get(name)
            if not (isinstance(hint, type) and issubclass(hint, IterDataPipe)):
                continue
            if not isinstance(value, IterDataPipe):
                raise TypeError(f"Expected argument '{name}' as a IterDataPipe, but found {type(value)}")
            if not value.type.issubtype(hint.type.param):
                raise TypeError(f"Expected type of argument '{name}' as a subtype of hint {hint.type}, "
                                f"but found {value.type}")
        return f(*args, **kwargs)

    return wrapper


_runtime_validation_enabled = True


class runtime_validation_disabled:
    """Context manager: no ``runtime_validation`` checks inside it
    (``torch.utils.data.runtime_validation_disabled``)."""

    def __init__(self) -> None:
        global _runtime_validation_enabled
        self.prev = _runtime_validation_enabled
        _runtime_validation_enabled = False

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        global _runtime_validation_enabled
        _runtime_validation_enabled = self.prev


def runtime_validation(f):
    """Decorator of an ``__iter__``: each yielded element must be an instance of the DataPipe's ``type``,
    else RuntimeError (``torch.utils.data.runtime_validation``)."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @functools.wraps(f)
    def wrapper(self):
        for d in f(self):
            if _runtime_validation_enabled and not self.type.issubtype_of_instance(d):
                raise RuntimeError(f"Expected an instance as subtype of {self.type}, but found {d}({type(d)})")
            yield d

    return wrapper
