"""dtypes and PyTorch's type-promotion rules.

A :class:`dtype` names an element type; its NumPy counterpart is the storage
format every backend agrees on at the host boundary. bfloat16 and the float8
types come from ``ml_dtypes`` (NumPy has none of its own).

PyTorch's "limited support" dtypes keep their limits here: uint16/32/64 promote
only with floating types; float8 tensors are created, cast, copied, compared and
printed, but arithmetic on them raises; the sub-byte and bits dtypes (``uint4``,
``bits8``...) are dtype objects only: no tensor holds them.
"""

from __future__ import annotations

import builtins
import math
import threading

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "float16", "half", "bfloat16", "float32", "float", "float64", "double",
    "int8", "uint8", "int16", "short", "int32", "int", "int64", "long", "bool",
    "complex64", "cfloat", "complex128", "cdouble", "promote_types", "result_type",
    "get_default_dtype", "set_default_dtype", "can_cast", "finfo", "iinfo",
    "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e8m0fnu", "float4_e2m1fn_x2", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
    "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6",
    "uint7", "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3
# The module defines dtypes called bool/int/float (torch's names); keep the builtins at hand.
_pybool, _pyint, _pyfloat = builtins.bool, builtins.int, builtins.float


class dtype:
    """An element type, named and behaving like ``torch.dtype``.

    ``numpy`` is the storage format; it is None for the dtypes no tensor can hold (``uint4``, ``bits8``...).
    """

    __slots__ = ("name", "itemsize", "numpy", "category", "is_signed", "is_floating_point", "is_complex", "_rank")

    def __init__(self, name: str, numpy_dtype, category: int, rank: int, *, itemsize: int = 0,
                 signed: _pybool | None = None):
        self.name = name
        self.numpy = None if numpy_dtype is None else np.dtype(numpy_dtype)
        self.itemsize = itemsize or self.numpy.itemsize
        self.category = category
        self.is_floating_point = category == _FLOAT  # attributes, not properties: read on every op
        self.is_complex = category == _COMPLEX
        self.is_signed = (category != _BOOL and not name.startswith(("uint", "bits"))) if signed is None else signed
        self._rank = rank

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

# PyTorch's "barebones" unsigned types: they promote only with floating types (rank unused)
uint16 = dtype("uint16", np.uint16, _INT, -1)
uint32 = dtype("uint32", np.uint32, _INT, -1)
uint64 = dtype("uint64", np.uint64, _INT, -1)
UNSIGNED_DTYPES = (uint16, uint32, uint64)

# float8: storage, casts, copies and comparisons only, as in PyTorch
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, _FLOAT, -1)
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, _FLOAT, -1)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, _FLOAT, -1)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, _FLOAT, -1)
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, _FLOAT, -1, signed=False)
FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)

# dtype objects that no tensor holds here (PyTorch uses them for packed data and tensor subclasses)
float4_e2m1fn_x2 = dtype("float4_e2m1fn_x2", None, _FLOAT, -1, itemsize=1)
bits8 = dtype("bits8", None, _INT, -1, itemsize=1)
bits16 = dtype("bits16", None, _INT, -1, itemsize=2)
bits1x8 = dtype("bits1x8", None, _INT, -1, itemsize=1)
bits2x4 = dtype("bits2x4", None, _INT, -1, itemsize=1)
bits4x2 = dtype("bits4x2", None, _INT, -1, itemsize=1)
int1, int2, int3, int4, int5, int6, int7 = (dtype(f"int{n}", None, _INT, -1, itemsize=1) for n in range(1, 8))
uint1, uint2, uint3, uint4, uint5, uint6, uint7 = (dtype(f"uint{n}", None, _INT, -1, itemsize=1)
                                                   for n in range(1, 8))
SHELL_DTYPES = (float4_e2m1fn_x2, bits8, bits16, bits1x8, bits2x4, bits4x2, int1, int2, int3, int4, int5, int6,
                int7, uint1, uint2, uint3, uint4, uint5, uint6, uint7)

# quantized dtypes: a quantized tensor (core/quantized.py) stores their values as an integer tensor of
# QUANTIZED_STORAGE's dtype; quint4x2/quint2x4 keep one 4-/2-bit value per uint8 element (PyTorch packs them)
qint8 = dtype("qint8", None, _INT, -1, itemsize=1, signed=True)
quint8 = dtype("quint8", None, _INT, -1, itemsize=1, signed=False)
qint32 = dtype("qint32", None, _INT, -1, itemsize=4, signed=True)
quint4x2 = dtype("quint4x2", None, _INT, -1, itemsize=1, signed=False)
quint2x4 = dtype("quint2x4", None, _INT, -1, itemsize=1, signed=False)
QUANTIZED_DTYPES = (qint8, quint8, qint32, quint4x2, quint2x4)
QUANTIZED_STORAGE = {qint8: int8, quint8: uint8, qint32: int32, quint4x2: uint8, quint2x4: uint8}
QUANTIZED_RANGE = {qint8: (-128, 127), quint8: (0, 255), qint32: (-(2 ** 31), 2 ** 31 - 1), quint4x2: (0, 15),
                   quint2x4: (0, 3)}

ALL_DTYPES = (float16, bfloat16, float32, float64, int8, uint8, int16, int32, int64, bool,
              complex64, complex128, *UNSIGNED_DTYPES, *FLOAT8_DTYPES)  # those tensors can hold
FLOATING_DTYPES = (float16, bfloat16, float32, float64)
INTEGRAL_DTYPES = (int8, uint8, int16, int32, int64)
_BY_NAME = {d.name: d for d in ALL_DTYPES + SHELL_DTYPES + QUANTIZED_DTYPES}
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
            "float64, float32, float16, bfloat16, the float8 types, complex64, complex128, int64, int32, int16, "
            "int8, uint64, uint32, uint16, uint8, and bool."
        ) from None


def _promote_same_category(a: dtype, b: dtype) -> dtype:
    if a._rank != b._rank:
        return a if a._rank > b._rank else b
    if a is b:
        return a
    # same rank, different types: int8/uint8 -> int16, float16/bfloat16 -> float32
    return int16 if a.category == _INT else float32


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both can be cast to, per PyTorch's promotion table (RuntimeError for the pairs
    PyTorch refuses: float8 with another type, uint16/32/64 with a non-floating one, the bits types)."""
    if type1 is type2:
        return type1
    if type1.numpy is None or type2.numpy is None:
        raise RuntimeError(f"Promotion for {legacy_name(type1)} and {legacy_name(type2)} is not supported: "
                           f"no tensor holds {type1 if type1.numpy is None else type2}")
    if type1 in FLOAT8_DTYPES or type2 in FLOAT8_DTYPES:
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                           f"{legacy_name(type1)} and {legacy_name(type2)}")
    if type1 in UNSIGNED_DTYPES or type2 in UNSIGNED_DTYPES:
        for t in (type1, type2):
            if t.category == _FLOAT:
                return t
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{legacy_name(type1)} and {legacy_name(type2)}")
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
                 "complex64": "ComplexFloat", "complex128": "ComplexDouble",
                 "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "float8_e4m3fn": "Float8_e4m3fn",
                 "float8_e5m2": "Float8_e5m2", "float8_e4m3fnuz": "Float8_e4m3fnuz",
                 "float8_e5m2fnuz": "Float8_e5m2fnuz", "float8_e8m0fnu": "Float8_e8m0fnu",
                 "float4_e2m1fn_x2": "Float4_e2m1fn_x2", "bits8": "Bits8", "bits16": "Bits16", "bits1x8": "Bits1x8",
                 "bits2x4": "Bits2x4", "bits4x2": "Bits4x2",
                 "qint8": "QInt8", "quint8": "QUInt8", "qint32": "QInt32", "quint4x2": "QUInt4x2",
                 "quint2x4": "QUInt2x4",
                 **{f"int{n}": f"Int{n}" for n in range(1, 8)}, **{f"uint{n}": f"UInt{n}" for n in range(1, 8)}}


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
        if type.numpy is None:
            raise TypeError(f"finfo() is not defined for {type}: no tensor holds it")
        native = type in (float16, float32, float64)  # the others are ml_dtypes' types
        info = np.finfo(type.numpy) if native else ml_dtypes.finfo(type.numpy)
        self.dtype = type.name
        self.bits = type.itemsize * 8
        self.eps = _pyfloat(info.eps)
        self.max = _pyfloat(info.max)
        self.min = _pyfloat(info.min)
        self.tiny = self.smallest_normal = _pyfloat(info.tiny)
        # 10 ** -(decimal digits of the mantissa), PyTorch's rule; ml_dtypes computes float8's differently
        self.resolution = _pyfloat(info.resolution) if native else \
            10.0 ** -math.floor(info.nmant * math.log10(2))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integral dtype, like ``torch.iinfo``."""

    def __init__(self, type: dtype):  # noqa: A002
        if not isinstance(type, dtype) or type.category > _INT:
            raise TypeError(f"iinfo() requires an integer input type. Use finfo to handle '{type}'")
        if type.numpy is None:
            raise TypeError(f"iinfo() is not defined for {type}: no tensor holds it")
        if type is bool:
            self.bits, self.min, self.max = 8, 0, 1
        else:
            info = np.iinfo(type.numpy)
            self.bits, self.min, self.max = info.bits, _pyint(info.min), _pyint(info.max)
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
