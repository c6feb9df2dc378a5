"""PyTorch's legacy typed tensor constructors: ``core.FloatTensor(2, 3)``, ``core.LongTensor([1, 2])``.

Each name is a class whose metaclass makes it callable as a constructor of CPU tensors of one dtype and makes
``isinstance(t, core.FloatTensor)`` true for a CPU float32 tensor, as in PyTorch. ``Tensor.type()`` names these
types and ``Tensor.type(core.DoubleTensor)`` / ``Tensor.type("core.DoubleTensor")`` casts to them.
"""

from __future__ import annotations

import numbers

from . import dtypes as dt
from .device import device as _device
from .tensor import Size, Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
           "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"]

def _type_name(d: dt.dtype) -> str:
    """PyTorch's legacy type name of a dtype: ``FloatTensor``, ``UInt16Tensor``, ``Float8_e4m3fnTensor``."""
    return dt.legacy_name(d) + "Tensor"


_DTYPE_OF_NAME = {_type_name(d): d for d in dt.ALL_DTYPES}


class _LegacyTensorType(type):
    """The metaclass of the typed constructors: calling one makes a tensor; isinstance checks dtype and device."""

    def __call__(cls, *args, device=None):
        """``T()`` empty, ``T(*sizes)`` / ``T(Size)`` uninitialised, ``T(data)`` a copy, ``T(tensor)`` an alias."""
        from . import ops

        if device is not None and _device(device).type != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                               f"{_device(device).type} was passed")
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype is not cls.dtype:
                raise TypeError(f"expected {dt.legacy_name(cls.dtype)} (got {dt.legacy_name(args[0].dtype)})")
            return args[0].detach()
        if len(args) == 1 and isinstance(args[0], Size):
            args = tuple(args[0])
        if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return ops.empty(*args, dtype=cls.dtype, device="cpu") if args else ops.empty(0, dtype=cls.dtype)
        if len(args) == 1:
            return ops.tensor(args[0], dtype=cls.dtype, device="cpu")
        raise TypeError(f"{cls.__name__}(): expected sizes (ints) or one sequence of data, got "
                        f"({', '.join(type(a).__name__ for a in args)})")

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, Tensor) and instance.dtype is cls.dtype and instance.device.type == "cpu"

    def __repr__(cls) -> str:
        return f"<class 'core.{cls.__name__}'>"


def _legacy_type(name: str):
    d = _DTYPE_OF_NAME[name]
    doc = f"A {d.name} CPU tensor: the legacy typed constructor (``torch.{name}``)."
    return _LegacyTensorType(name, (), {"dtype": d, "is_cuda": False, "is_sparse": False, "__doc__": doc,
                                         "__module__": "core"})


FloatTensor = _legacy_type("FloatTensor")
DoubleTensor = _legacy_type("DoubleTensor")
HalfTensor = _legacy_type("HalfTensor")
BFloat16Tensor = _legacy_type("BFloat16Tensor")
ByteTensor = _legacy_type("ByteTensor")
CharTensor = _legacy_type("CharTensor")
ShortTensor = _legacy_type("ShortTensor")
IntTensor = _legacy_type("IntTensor")
LongTensor = _legacy_type("LongTensor")
BoolTensor = _legacy_type("BoolTensor")


def type_name(t: Tensor) -> str:
    """PyTorch's legacy type string of a tensor: ``core.FloatTensor``, ``core.cuda.FloatTensor``."""
    prefix = "core." if t.device.type == "cpu" else f"core.{t.device.type}."
    return prefix + _type_name(t.dtype)


def parse_type(spec) -> tuple:
    """``(dtype, device type or None)`` named by a legacy type: a typed constructor, ``"torch.cuda.FloatTensor"``
    or ``"core.DoubleTensor"``; ValueError for a string that names none."""
    if isinstance(spec, _LegacyTensorType):
        return spec.dtype, "cpu"
    if not isinstance(spec, str):
        raise TypeError(f"type(): expected a dtype, a tensor type or a type name, got {type(spec).__name__}")
    parts = spec.split(".")
    if len(parts) in (2, 3) and parts[0] in ("torch", "core") and parts[-1] in _DTYPE_OF_NAME:
        return _DTYPE_OF_NAME[parts[-1]], parts[1] if len(parts) == 3 else "cpu"
    raise ValueError(f"invalid type: '{spec}'")
