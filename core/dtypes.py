"""dtypes and PyTorch's type-promotion rules.

A :class:`dtype` names an element type; its NumPy counterpart is the storage
format every backend agrees on at the host boundary. bfloat16 comes from
``ml_dtypes`` (NumPy has none of its own).
"""

from __future__ import annotations

import builtins
import threading

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "float16", "half", "bfloat16", "float32", "float", "float64", "double",
    "int8", "uint8", "int16", "short", "int32", "int", "int64", "long", "bool",
    "complex64", "cfloat", "complex128", "cdouble", "promote_types", "result_type",
    "get_default_dtype", "set_default_dtype", "can_cast", "finfo", "iinfo",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3
# The module defines dtypes called bool/int/float (torch's names); keep the builtins at hand.
_pybool, _pyint, _pyfloat = builtins.bool, builtins.int, builtins.float


class dtype:
    """An element type, named and behaving like ``torch.dtype``."""

    __slots__ = ("name", "itemsize", "numpy", "category", "is_signed", "_rank")

    def __init__(self, name: str, numpy_dtype, category: int, rank: int):
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.itemsize = self.numpy.itemsize
        self.category = category
        self.is_signed = category != _BOOL and name != "uint8"
        self._rank = rank

    @property
    def is_floating_point(self) -> bool:
        return self.category == _FLOAT

    @property
    def is_complex(self) -> bool:
        return self.category == _COMPLEX

    def __repr__(self) -> str:
        return f"core.{self.name}"

    def __reduce__(self):
        return (by_name, (self.name,))

    def to_real(self) -> "dtype":
        """The real counterpart of a complex dtype (itself otherwise)."""
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> "dtype":
        """The complex counterpart of a floating dtype (itself otherwise)."""
        return {float64: complex128}.get(self, complex64) if self.category == _FLOAT else self


float16 = half = dtype("float16", np.float16, _FLOAT, 0)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, _FLOAT, 0)
float32 = float = dtype("float32", np.float32, _FLOAT, 1)
float64 = double = dtype("float64", np.float64, _FLOAT, 2)
int8 = dtype("int8", np.int8, _INT, 0)
uint8 = dtype("uint8", np.uint8, _INT, 0)
int16 = short = dtype("int16", np.int16, _INT, 1)
int32 = int = dtype("int32", np.int32, _INT, 2)
int64 = long = dtype("int64", np.int64, _INT, 3)
bool = dtype("bool", np.bool_, _BOOL, 0)  # noqa: A001 - torch.bool
complex64 = cfloat = dtype("complex64", np.complex64, _COMPLEX, 0)
complex128 = cdouble = dtype("complex128", np.complex128, _COMPLEX, 1)

ALL_DTYPES = (float16, bfloat16, float32, float64, int8, uint8, int16, int32, int64, bool,
              complex64, complex128)
FLOATING_DTYPES = (float16, bfloat16, float32, float64)
INTEGRAL_DTYPES = (int8, uint8, int16, int32, int64)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES}


def by_name(name: str) -> dtype:
    """The dtype called ``name`` (``"float32"``); KeyError if there is none."""
    return _BY_NAME[name]


_by_name = by_name  # the name pickles made before by_name was public refer to


def from_numpy_dtype(np_dtype) -> dtype:
    """The core dtype whose NumPy format is ``np_dtype``; TypeError if there is none."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, bfloat16, complex64, complex128, int64, int32, int16, "
            "int8, uint8, and bool."
        ) from None


def _promote_same_category(a: dtype, b: dtype) -> dtype:
    if a._rank != b._rank:
        return a if a._rank > b._rank else b
    if a is b:
        return a
    # same rank, different types: int8/uint8 -> int16, float16/bfloat16 -> float32
    return int16 if a.category == _INT else float32


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both can be cast to, per PyTorch's promotion table."""
    if type1 is type2:
        return type1
    if type1.category != type2.category:
        hi, lo = (type1, type2) if type1.category > type2.category else (type2, type1)
        if hi.category == _COMPLEX and lo is float64:
            return complex128
        return hi
    return _promote_same_category(type1, type2)


_state = threading.local()
_global_default = [float32]


def get_default_dtype() -> dtype:
    """The dtype of Python floats turned into tensors (``torch.get_default_dtype``)."""
    return _global_default[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype; only float32, float64, float16 and bfloat16 are allowed."""
    if not isinstance(d, dtype) or d.category != _FLOAT:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _global_default[0] = d


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes when it becomes a tensor on its own."""
    if isinstance(value, _pybool):
        return bool
    if isinstance(value, _pyint):
        return int64
    if isinstance(value, _pyfloat):
        return get_default_dtype()
    if isinstance(value, complex):
        return complex128 if get_default_dtype() is float64 else complex64
    if isinstance(value, np.generic):
        return from_numpy_dtype(value.dtype)
    raise TypeError(f"expected a number, got {type(value).__name__}")


def _combine_categories(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # PyTorch's c10 combine_categories: a lower-priority participant only matters
    # when it is of a higher category than the higher-priority result.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == _COMPLEX:
        return higher
    if lower.category == _COMPLEX:
        return higher.to_complex() if higher.category == _FLOAT else lower
    if higher.category == _FLOAT:
        return higher
    if higher is bool or lower.category == _FLOAT:
        return promote_types(higher, lower)
    return higher


def result_type(*operands) -> dtype:
    """The dtype of an elementwise op over tensors and scalars (``torch.result_type``).

    Dimensioned tensors outrank 0-d tensors, which outrank Python scalars; a lower
    rank only changes the result when it is of a higher category (bool < int <
    float < complex).
    """
    dim_result = zero_result = wrapped_result = None
    for operand in operands:
        d = getattr(operand, "dtype", None)
        if d is not None and hasattr(operand, "_shape"):
            if operand._shape:
                dim_result = d if dim_result is None else promote_types(dim_result, d)
            else:
                zero_result = d if zero_result is None else promote_types(zero_result, d)
        elif operand is not None:
            d = scalar_dtype(operand)
            if isinstance(operand, np.generic):
                zero_result = d if zero_result is None else promote_types(zero_result, d)
            else:
                wrapped_result = d if wrapped_result is None else promote_types(wrapped_result, d)
    result = _combine_categories(dim_result, _combine_categories(zero_result, wrapped_result))
    if result is None:
        raise TypeError("result_type() needs at least one tensor or scalar operand")
    return result


_LEGACY_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                 "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def legacy_name(d: dtype) -> str:
    """PyTorch's scalar-type name used in error messages: ``Float``, ``Long``, ``Bool``…"""
    return _LEGACY_NAMES[d.name]


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether PyTorch allows casting ``from_`` to ``to`` in in-place ops (no category demotion)."""
    return from_.category <= to.category


class finfo:
    """Machine limits of a floating dtype, like ``torch.finfo``."""

    def __init__(self, type: dtype | None = None):  # noqa: A002 - PyTorch's name
        type = type or get_default_dtype()
        if not isinstance(type, dtype) or type.category < _FLOAT:
            raise TypeError(f"finfo() requires a floating point input type. Use iinfo to handle '{type}'")
        type = type.to_real() if type.category == _COMPLEX else type  # a complex dtype's parts, as PyTorch
        info = ml_dtypes.finfo(type.numpy) if type is bfloat16 else np.finfo(type.numpy)
        self.dtype = type.name
        self.bits = type.itemsize * 8
        self.eps = _pyfloat(info.eps)
        self.max = _pyfloat(info.max)
        self.min = _pyfloat(info.min)
        self.tiny = self.smallest_normal = _pyfloat(info.tiny)
        self.resolution = _pyfloat(info.resolution)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integral dtype, like ``torch.iinfo``."""

    def __init__(self, type: dtype):  # noqa: A002
        if not isinstance(type, dtype) or type.category > _INT:
            raise TypeError(f"iinfo() requires an integer input type. Use finfo to handle '{type}'")
        if type is bool:
            self.bits, self.min, self.max = 8, 0, 1
        else:
            info = np.iinfo(type.numpy)
            self.bits, self.min, self.max = info.bits, _pyint(info.min), _pyint(info.max)
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
