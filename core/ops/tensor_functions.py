"""The torch namespace's smaller functions: aliases, ``*_copy`` and ``*_scatter`` forms of the view ops, splits,
memory constructors (``frombuffer``, ``from_file``, ``empty_permuted``) and integer/float math.

All are composites of existing ops, so they run on every device and get autograd from the ops they are built of.
The ``*_copy`` forms are ``clone`` of the view (fresh, contiguous memory); the ``*_scatter`` forms write ``src`` into
that view of a clone of ``input``.
"""

from __future__ import annotations

import math
import numbers
import os
import warnings

import numpy as np

from .. import dtypes as dt
from ..dtypes import result_type
from ..tensor import Tensor
from . import elementwise
from ._util import check_int_arg, finish_out, numel, size_args, wrap_dim
from .creation import (clone, copy_, empty, from_numpy, full, full_like, ones_like, tensor, zeros,
                       zeros_like)
from .elementwise import (add, exp2, floor, floor_divide, isfinite, log2, logaddexp, mul, remainder, where)
from .indexing import gather, index_add, scatter_reduce
from .linalg import addmv
from .ranges import arange
from .reduction import _finish_pair, return_type
from .shape import broadcast_tensors, cat, diff, repeat_interleave, stack
from .view import (alias, as_strided, chunk, diagonal, expand, narrow, permute, reshape, select, split, squeeze,
                   t, tensor_split, transpose, unbind, unfold, unsqueeze, view)

__all__: list = []
METHODS: dict = {}


def _export(fn, method: bool = True):
    """Add ``fn`` to the namespace under its ``__name__`` and, with ``method``, to Tensor's methods."""
    name = fn.__name__
    __all__.append(name)
    if method:
        METHODS[name] = fn
    globals()[name] = fn
    return fn


def _check_tensor(op: str, input, name: str = "input") -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(input).__name__}")


# -- aliases -------------------------------------------------------------------------------------------

def _alias_of(name: str, target, method: bool = True, target_name: str | None = None) -> None:
    """Export ``target`` under PyTorch's other name ``name``."""
    target_name = target_name or target.__name__

    def fn(*args, **kwargs):
        return target(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Alias of ``{target_name}`` (``torch.{name}``)."
    _export(fn, method)


for _name, _target in (("arccos_", "acos_"), ("arcsin_", "asin_"), ("arctan_", "atan_"), ("arccosh", "acosh"),
                       ("arccosh_", "acosh_"), ("arcsinh", "asinh"), ("arcsinh_", "asinh_"), ("arctanh", "atanh"),
                       ("arctanh_", "atanh_"), ("fix_", "trunc_"), ("negative_", "neg_")):
    _alias_of(_name, getattr(elementwise, _target, None) or elementwise.METHODS[_target], target_name=_target)


def detach(input: Tensor) -> Tensor:
    """A view of ``input`` cut from the autograd graph (``torch.detach``)."""
    _check_tensor("detach", input)
    return input.detach()


def detach_(input: Tensor) -> Tensor:
    """Cut ``input`` from the autograd graph in place (``torch.detach_``)."""
    _check_tensor("detach_", input)
    return input.detach_()


_export(detach, method=False)
_export(detach_, method=False)


@_export
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether two tensors have the same shape (``torch.is_same_size``)."""
    _check_tensor("is_same_size", input)
    _check_tensor("is_same_size", other, "other")
    return input.shape == other.shape


@_export
def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype is signed: every float and complex dtype and the signed ints (``torch.is_signed``)."""
    _check_tensor("is_signed", input)
    return input.dtype.is_signed


@_export
def get_device(input: Tensor) -> int:
    """The device index of ``input``; -1 for CPU tensors (``torch.get_device``)."""
    _check_tensor("get_device", input)
    device = input.device
    return -1 if device.type == "cpu" else (device.index or 0)


def fill(input: Tensor, value) -> Tensor:
    """A new tensor shaped and typed like ``input``, every element ``value`` (``torch.fill``, out-of-place)."""
    _check_tensor("fill", input)
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               "dimensions.")
        return clone(expand(value.to(device=input.device, dtype=input.dtype), input.shape))
    return full_like(input, value)


_export(fill, method=False)  # Tensor has only fill_


# -- memory constructors -------------------------------------------------------------------------------

def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False) -> Tensor:
    """An uninitialised tensor of logical shape ``size`` whose dims lie in memory in ``physical_layout`` order,
    outermost first (``torch.empty_permuted``)."""
    size = size_args("empty_permuted", (size,))
    order = [check_int_arg("empty_permuted", "physical_layout", d) for d in physical_layout]
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted(): Number of dimensions in size does not match the length of the "
                           f"physical_layout, or physical_layout is not a permutation of the dims: size "
                           f"{list(size)}, physical_layout {order}")
    physical = empty(tuple(size[d] for d in order), dtype=dtype, device=device)
    result = permute(physical, [order.index(d) for d in range(len(size))])
    return result.requires_grad_(requires_grad) if requires_grad else result


_export(empty_permuted, method=False)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor:
    """A 1-D CPU tensor over the bytes of an object with the buffer protocol, sharing its memory
    (``torch.frombuffer``)."""
    try:
        view_ = memoryview(buffer)
    except TypeError:
        raise TypeError(f"frombuffer(): object of type {type(buffer).__name__} does not implement the buffer "
                        "protocol") from None
    length, itemsize = view_.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % itemsize:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({itemsize})")
        count = (length - offset) // itemsize
    elif offset + count * itemsize > length:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({length} bytes)")
    if view_.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. "
                      "This means you can write to the underlying (supposedly non-writable) buffer using the "
                      "tensor.", UserWarning, stacklevel=2)
    array = np.frombuffer(view_.cast("B"), dtype=np.uint8, count=count * itemsize, offset=offset)
    result = from_numpy(array).view(dtype)
    return result.requires_grad_(True) if requires_grad else result


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False) -> Tensor:
    """A 1-D tensor of ``size`` elements read from a file; with ``shared=True`` it maps the file, so writes reach
    it (``torch.from_file``)."""
    dtype = dtype or dt.get_default_dtype()
    size = check_int_arg("from_file", "size", size)
    nbytes = size * dtype.itemsize
    if not os.path.isfile(filename):
        raise RuntimeError(f"from_file(): unable to open file <{filename}>: No such file or directory")
    available = os.path.getsize(filename)
    if available < nbytes:
        raise RuntimeError(f"from_file(): the file {filename} has {available} bytes, but {size} elements of "
                           f"{dtype} need {nbytes} bytes")
    if size == 0:
        data = np.empty(0, np.uint8)
    elif shared:
        data = np.memmap(filename, dtype=np.uint8, mode="r+", shape=(nbytes,))
    else:
        data = np.fromfile(filename, dtype=np.uint8, count=nbytes)
    result = from_numpy(data).view(dtype)
    if device is not None:
        result = result.to(device)
    return result.requires_grad_(True) if requires_grad else result


_export(frombuffer, method=False)
_export(from_file, method=False)


@_export
def nonzero_static(input: Tensor, *, size, fill_value=-1) -> Tensor:
    """The indices of the non-zero elements, truncated or padded with ``fill_value`` to ``size`` rows
    (``torch.nonzero_static``)."""
    _check_tensor("nonzero_static", input)
    size = check_int_arg("nonzero_static", "size", size)
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got {size}")
    found = input.nonzero()
    rows = found.shape[0]
    if rows >= size:
        return clone(found[:size])
    padding = full((size - rows, input.dim()), fill_value, dtype=dt.int64, device=input.device)
    return cat([found, padding])


# -- copies of views -----------------------------------------------------------------------------------

def _copy_of(view_op, name: str, method: bool = False):
    """Export ``name``: ``view_op``'s result (a tensor or a tuple of them) as fresh contiguous memory."""

    def fn(input, *args, **kwargs):
        _check_tensor(name, input)
        result = view_op(input, *args, **kwargs)
        return tuple(clone(r) for r in result) if isinstance(result, (tuple, list)) else clone(result)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Like ``{name[:-len('_copy')]}`` but a fresh tensor, never a view (``torch.{name}``)."
    _export(fn, method)


def _slice(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """View of ``input[start:end:step]`` along ``dim``."""
    dim = wrap_dim(dim, input.dim(), "slice")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return input[(slice(None),) * dim + (slice(start, end, step),)]


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """Views of consecutive pieces of the given sizes along ``dim`` (``torch.split_with_sizes``)."""
    _check_tensor("split_with_sizes", input)
    if isinstance(split_sizes, numbers.Integral):
        raise TypeError("split_with_sizes(): argument 'split_sizes' must be tuple of ints, but found element of "
                        "type int")
    return split(input, list(split_sizes), dim)


_export(split_with_sizes)

for _name, _op in (("alias_copy", alias), ("as_strided_copy", as_strided), ("detach_copy", detach),
                   ("diagonal_copy", diagonal), ("expand_copy", expand), ("narrow_copy", narrow),
                   ("permute_copy", permute), ("select_copy", select), ("slice_copy", _slice),
                   ("split_copy", split), ("split_with_sizes_copy", split_with_sizes),
                   ("squeeze_copy", squeeze), ("t_copy", t), ("transpose_copy", transpose),
                   ("unbind_copy", unbind), ("unfold_copy", unfold), ("unsqueeze_copy", unsqueeze),
                   ("view_copy", view)):  # view_as_real_copy and view_as_complex_copy sit beside their views
    _copy_of(_op, _name, method=_name == "narrow_copy")

# PyTorch's unsafe_* splits are its splits without autograd's view tracking: the same pieces.
_alias_of("unsafe_chunk", chunk)
_alias_of("unsafe_split", split)
_alias_of("unsafe_split_with_sizes", split_with_sizes)


def _split_along(op: str, input: Tensor, indices_or_sections, dim: int, min_dims: int) -> tuple:
    """``tensor_split`` along ``dim``, with ``torch.hsplit``'s checks: enough dims, sections that divide evenly."""
    _check_tensor(op, input)
    if input.dim() < min_dims:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.dim()} dimensions!")
    if isinstance(indices_or_sections, numbers.Integral):
        sections, length = int(indices_or_sections), input.shape[dim]
        if sections == 0 or length % sections:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {length} is not divisible by the split_size {sections}!")
    return tensor_split(input, indices_or_sections, dim)


@_export
def hsplit(input: Tensor, indices_or_sections) -> tuple:
    """Split along dim 1 (dim 0 for 1-D tensors) into equal sections or at indices (``torch.hsplit``)."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


@_export
def vsplit(input: Tensor, indices_or_sections) -> tuple:
    """Split along dim 0 of a tensor with at least 2 dims (``torch.vsplit``)."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


@_export
def dsplit(input: Tensor, indices_or_sections) -> tuple:
    """Split along dim 2 of a tensor with at least 3 dims (``torch.dsplit``)."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


# -- scatters into views -------------------------------------------------------------------------------

def _scatter_into(op: str, input: Tensor, src: Tensor, view_of) -> Tensor:
    """A clone of ``input`` with ``view_of(clone)`` overwritten by ``src`` (differentiable in both)."""
    _check_tensor(op, input)
    _check_tensor(op, src, "src")
    result = clone(input)
    target = view_of(result)
    if target.shape != src.shape:
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(target.shape)}")
    copy_(target, src)
    return result


@_export
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with ``input.select(dim, index)`` replaced by ``src``, as a new tensor (``torch.select_scatter``)."""
    return _scatter_into("select_scatter", input, src, lambda r: select(r, dim, index))


@_export
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """``input`` with ``input[start:end:step]`` along ``dim`` replaced by ``src``, as a new tensor
    (``torch.slice_scatter``)."""
    return _scatter_into("slice_scatter", input, src, lambda r: _slice(r, dim, start, end, step))


@_export
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input`` with a diagonal replaced by ``src``, as a new tensor (``torch.diagonal_scatter``)."""
    return _scatter_into("diagonal_scatter", input, src, lambda r: diagonal(r, offset, dim1, dim2))


@_export
def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``input`` with its ``as_strided(size, stride, storage_offset)`` view replaced by ``src``, as a new tensor
    (``torch.as_strided_scatter``)."""
    return _scatter_into("as_strided_scatter", input, src,
                         lambda r: as_strided(r, size, stride, storage_offset))


@_export
def slice_inverse(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """The inverse of ``slice``: ``input`` (a slice of ``src``) viewed with ``src``'s shape, strides and offset,
    so it aliases the whole of ``src`` (``torch.slice_inverse``)."""
    _check_tensor("slice_inverse", input)
    _check_tensor("slice_inverse", src, "src")
    return as_strided(input, src.shape, src.stride(), src.storage_offset())


# -- integer and float math ----------------------------------------------------------------------------

def _integer_pair(op: str, input: Tensor, other: Tensor) -> tuple:
    """``|input|`` and ``|other|`` broadcast to one integer dtype; PyTorch's error for other dtypes."""
    _check_tensor(op, input)
    _check_tensor(op, other, "other")
    dtype = result_type(input, other)
    if dtype.category != dt._INT or dtype is dt.bool:
        raise RuntimeError(f"\"{op}_cpu\" not implemented for '{dt.legacy_name(dtype)}'")
    a, b = broadcast_tensors(input.to(dtype), other.to(dtype))
    return a.abs(), b.abs()


def gcd(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Elementwise greatest common divisor of integer tensors, non-negative; ``gcd(0, 0) = 0`` (``torch.gcd``)."""
    a, b = _integer_pair("gcd", input, other)
    while bool(b.any()):  # Euclid's algorithm, on every element at once
        nonzero = b != 0
        a, b = where(nonzero, b, a), where(nonzero, remainder(a, where(nonzero, b, 1)), 0)
    return finish_out("gcd", a, out)


def lcm(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Elementwise least common multiple of integer tensors, non-negative; 0 if either is 0 (``torch.lcm``)."""
    a, b = _integer_pair("lcm", input, other)
    divisor = gcd(a, b)
    result = where(divisor == 0, 0, floor_divide(a, where(divisor == 0, 1, divisor)) * b)
    return finish_out("lcm", result, out)


def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`gcd` (``torch.gcd_``)."""
    return copy_(input, gcd(input, other))


def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`lcm` (``torch.lcm_``)."""
    return copy_(input, lcm(input, other))


def ldexp(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``input * 2 ** other``, in a floating dtype (``torch.ldexp``)."""
    _check_tensor("ldexp", input)
    return finish_out("ldexp", mul(input, exp2(other)), out)


def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`ldexp` (``torch.ldexp_``)."""
    _check_tensor("ldexp_", input)
    return input.mul_(exp2(other))


for _fn in (gcd, gcd_, lcm, lcm_, ldexp, ldexp_):
    _export(_fn)

_frexp_t = return_type("frexp", ("mantissa", "exponent"))


@_export
def frexp(input: Tensor, *, out=None):
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent`` and ``0.5 <= |mantissa| < 1``; zeros,
    infinities and NaN keep their value with exponent 0 (``torch.frexp``)."""
    _check_tensor("frexp", input)
    if input.dtype.category != dt._FLOAT:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.detach()
    regular = isfinite(x) & (x != 0)
    magnitude = where(regular, x.abs(), 1)
    exponent = floor(log2(magnitude)) + 1
    mantissa = x / exp2(exponent)
    # log2 rounds near powers of two: move one binade where the mantissa left [0.5, 1)
    high, low = mantissa.abs() >= 1, mantissa.abs() < 0.5
    exponent = exponent + high.to(exponent.dtype) - low.to(exponent.dtype)
    mantissa = where(high, mantissa / 2, where(low, mantissa * 2, mantissa))
    result = _frexp_t(where(regular, mantissa, x), where(regular, exponent, 0).to(dt.int32))
    return _finish_pair("frexp", result, out)


def _logaddexp(a: Tensor, b: Tensor) -> Tensor:
    """``log(exp(a) + exp(b))``; complex inputs factor out the one with the larger real part."""
    if not a.is_complex():
        return logaddexp(a, b)
    larger = a.real >= b.real
    high, low = where(larger, a, b), where(larger, b, a)
    return high + (1 + (low - high).exp()).log()


@_export
def logcumsumexp(input: Tensor, dim: int, *, out=None) -> Tensor:
    """``log(cumsum(exp(input), dim))`` computed stably, differentiable (``torch.logcumsumexp``)."""
    _check_tensor("logcumsumexp", input)
    if input.dtype.category not in (dt._FLOAT, dt._COMPLEX):
        raise RuntimeError(f"\"logcumsumexp_out_cpu\" not implemented for '{dt.legacy_name(input.dtype)}'")
    if input.dim() == 0:
        return finish_out("logcumsumexp", clone(input), out)
    dim = wrap_dim(dim, input.dim(), "logcumsumexp")
    result, length, shift = input, input.shape[dim], 1
    while shift < length:  # a Hillis-Steele scan: after it, element i combines elements 0..i
        head = full_like(narrow(result, dim, 0, shift), -math.inf)
        shifted = cat([head, narrow(result, dim, 0, length - shift)], dim)
        result = _logaddexp(result, shifted)
        shift *= 2
    return finish_out("logcumsumexp", result if result is not input else clone(input), out)


def addmv_(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place ``addmv``: ``input = beta * input + alpha * (mat @ vec)`` (``torch.addmv_``)."""
    _check_tensor("addmv_", input)
    return copy_(input, addmv(input, mat, vec, beta=beta, alpha=alpha))


_export(addmv_, method=False)  # Tensor.addmv_ exists already




# -- integration and Vandermonde -----------------------------------------------------------------------

def _spacing(op: str, y: Tensor, x, dx, dim: int):
    """The sample spacing of ``y`` along ``dim``: a scalar, or a tensor broadcastable to ``y``'s intervals."""
    if x is None:
        return 1 if dx is None else dx
    if dx is not None:
        raise RuntimeError(f"{op}: cannot give both x and dx")
    if not isinstance(x, Tensor):
        return x
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = y.shape[dim] - 1 if y.shape[dim] else 0
        return reshape(diff(x), shape) if y.shape[dim] else zeros(shape, dtype=x.dtype, device=x.device)
    return diff(x, dim=dim)


def _intervals(op: str, y: Tensor, x, dx, dim: int):
    """The trapezoid areas ``spacing * (y[i] + y[i+1]) / 2`` along ``dim`` and the wrapped ``dim``."""
    _check_tensor(op, y, "y")
    dim = wrap_dim(dim, y.dim(), op)
    length = y.shape[dim]
    spacing = _spacing(op, y, x, dx, dim)
    pairs = add(narrow(y, dim, 1, length - 1), narrow(y, dim, 0, length - 1)) if length else narrow(y, dim, 0, 0)
    return mul(spacing, pairs) / 2, dim


def trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``, with sample points ``x`` or a constant spacing ``dx`` (default 1)
    (``torch.trapezoid``)."""
    areas, dim = _intervals("trapezoid", y, x, dx, dim)
    return areas.sum(dim)


def trapz(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """Alias of :func:`trapezoid` (``torch.trapz``)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal rule along ``dim``, one element shorter than ``y`` (``torch.cumulative_trapezoid``)."""
    areas, dim = _intervals("cumulative_trapezoid", y, x, dx, dim)
    return areas.cumsum(dim)


for _fn in (trapezoid, trapz, cumulative_trapezoid):
    _export(_fn, method=False)




def unravel_index(indices: Tensor, shape) -> tuple:
    """Flat indices into a tensor of ``shape`` as a tuple of coordinate tensors, one per dim
    (``torch.unravel_index``)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {type(indices).__name__}")
    if indices.dtype.category != dt._INT or indices.dtype is dt.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    for s in shape:
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(s).__name__}")
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(shape)}")
    coefficients = [numel(shape[i + 1:]) for i in range(len(shape))]
    flat = indices.to(dt.int64).unsqueeze(-1)
    sizes = tensor(list(shape), dtype=dt.int64, device=indices.device)
    coords = remainder(floor_divide(flat, tensor(coefficients, dtype=dt.int64, device=indices.device)), sizes)
    return unbind(coords, -1)


_export(unravel_index, method=False)


# -- incomplete gamma ----------------------------------------------------------------------------------

def igamma(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The regularized lower incomplete gamma function (``torch.igamma``, alias of ``torch.special.gammainc``)."""
    from .. import special  # core.special is built over these ops

    return special.gammainc(input, other, out=out)


def igammac(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The regularized upper incomplete gamma function (``torch.igammac``, alias of ``torch.special.gammaincc``)."""
    from .. import special

    return special.gammaincc(input, other, out=out)


def igamma_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`igamma` (``Tensor.igamma_``)."""
    return copy_(input, igamma(input, other))


def igammac_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`igammac` (``Tensor.igammac_``)."""
    return copy_(input, igammac(input, other))


for _fn in (igamma, igammac):
    _export(_fn)
for _fn in (igamma_, igammac_):
    _export(_fn)
    __all__.remove(_fn.__name__)  # methods only, as in PyTorch


# -- reductions into indices and segments --------------------------------------------------------------

_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_along(index: Tensor, dim: int, like: Tensor) -> Tensor:
    """A 1-D ``index`` along ``dim``, expanded to ``like``'s shape (the index tensor ``scatter_reduce`` takes)."""
    shape = [1] * like.dim()
    shape[dim] = index.numel()
    return expand(reshape(index.to(dt.int64), shape), like.shape)


def _straight_through(value: Tensor, expression: Tensor) -> Tensor:
    """``value``, with the gradient of ``expression`` (which equals it up to rounding)."""
    return value + (expression - expression.detach())


def _index_extreme(input, dim, index, source, reduce, include_self, target):
    """``amax``/``amin`` of :func:`index_reduce`; its gradient is split evenly among the elements equal to the
    result, as PyTorch's is."""
    value = scatter_reduce(input, dim, target, source, reduce, include_self=include_self).detach()
    if not (input.requires_grad or source.requires_grad):
        return value
    touched = index_add(zeros_like(input), dim, index, ones_like(source)) > 0
    source_hits = source == gather(value, dim, target)
    self_hits = (input == value) & touched if include_self else zeros_like(input, dtype=dt.bool)
    count = index_add(self_hits.to(input.dtype), dim, index, source_hits.to(source.dtype))
    # where, not a product with the hits: an input of -inf (segment_reduce's start) times 0 is NaN
    total = index_add(where(self_hits, input, 0), dim, index, where(source_hits, source, 0))
    return _straight_through(value, where(touched, total / where(count == 0, 1, count), input))


def _index_prod(input, dim, index, source, include_self, target):
    """``prod`` of :func:`index_reduce`; its gradient is the product of the other factors, zeros included."""
    value = scatter_reduce(input, dim, target, source, "prod", include_self=include_self).detach()
    if not (input.requires_grad or source.requires_grad):
        return value
    x, src = input.detach(), source.detach()
    touched = index_add(zeros_like(x), dim, index, ones_like(src)) > 0
    self_zero = (x == 0) & touched if include_self else zeros_like(x, dtype=dt.bool)
    zeros_in = index_add(self_zero.to(x.dtype), dim, index, (src == 0).to(src.dtype))
    base = where(x == 0, 1, x) if include_self else ones_like(x)
    nonzero_product = scatter_reduce(base, dim, target, where(src == 0, 1, src), "prod", include_self=True)

    def others(values, zeros, product):  # d(product)/d(value): the product of the other factors
        return where(zeros == 0, product / where(values == 0, 1, values),
                     where((zeros == 1) & (values == 0), product, 0))

    self_slope = where(touched, others(x, zeros_in, nonzero_product), 1) if include_self else where(touched, 0, 1)
    source_slope = others(src, gather(zeros_in, dim, target), gather(nonzero_product, dim, target))
    linear = index_add(input * self_slope, dim, index, source * source_slope)
    return _straight_through(value, linear)


def _index_mean(input, dim, index, source, include_self):
    """``mean`` of :func:`index_reduce`, from ``index_add`` so it is differentiable."""
    count = index_add(zeros_like(input), dim, index, ones_like(source))
    total = index_add(input if include_self else zeros_like(input), dim, index, source)
    denominator = count + 1 if include_self else where(count == 0, 1, count)
    mean = total / denominator if input.dtype.category == dt._FLOAT else floor_divide(total, denominator)
    return where(count == 0, input, mean)


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """Reduce the slices of ``source`` into the slices of ``input`` picked by ``index`` along ``dim`` with
    ``prod``, ``mean``, ``amax`` or ``amin``, counting ``input``'s values when ``include_self``
    (``torch.index_reduce``)."""
    _check_tensor("index_reduce", input)
    _check_tensor("index_reduce", index, "index")
    _check_tensor("index_reduce", source, "source")
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{dt.legacy_name(index.dtype)}")
    if source.dim() != input.dim():
        raise IndexError(f"index_reduce_(): Source/destination tensor must have same number of dimensions "
                         f"({source.dim()} and {input.dim()})")
    dim = wrap_dim(dim, input.dim(), "index_reduce")
    if index.numel() != (source.shape[dim] if source.dim() else 1):
        raise IndexError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                         f"source.size(dim) ({source.shape[dim]})")
    index = reshape(index, (-1,))
    if reduce == "mean":
        return _index_mean(input, dim, index, source, include_self)
    target = _index_along(index, dim, source)
    if reduce == "prod":
        return _index_prod(input, dim, index, source, include_self, target)
    return _index_extreme(input, dim, index, source, reduce, include_self, target)


def index_reduce_(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place :func:`index_reduce` (``Tensor.index_reduce_``)."""
    return copy_(input, index_reduce(input, dim, index, source, reduce, include_self=include_self))


_export(index_reduce)
_export(index_reduce_)
__all__.remove("index_reduce_")  # a method only, as in PyTorch

_SEGMENT_IDENTITIES = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}


def _segment_lengths(data: Tensor, lengths, offsets, indices, axis: int):
    """The lengths of the segments, shaped ``data.shape[:axis] + (segments,)``, from ``lengths`` or ``offsets``."""
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined")
    if lengths is None:
        _check_tensor("segment_reduce", offsets, "offsets")
        lengths = diff(offsets, dim=-1)
    _check_tensor("segment_reduce", lengths, "lengths")
    if lengths.dim() != axis + 1 or tuple(lengths.shape[:axis]) != tuple(data.shape[:axis]):
        raise RuntimeError(f"segment_reduce(): Expected lengths (or offsets) of shape data.shape[:axis] + "
                           f"(segments,), but got {list(lengths.shape)} for data of shape {list(data.shape)} "
                           f"and axis {axis}")
    return lengths.to(dt.int64)


def segment_reduce(data: Tensor, reduce: str, *, lengths=None, indices=None, offsets=None, axis: int = 0,
                   unsafe: bool = False, initial=None) -> Tensor:
    """Reduce consecutive segments of ``data`` along ``axis`` (``sum``, ``mean``, ``max``, ``min``, ``prod``);
    segments are given by ``lengths`` or ``offsets``, and ``initial`` starts each reduction
    (``torch.segment_reduce``)."""
    _check_tensor("segment_reduce", data, "data")
    if reduce not in _SEGMENT_IDENTITIES:
        raise RuntimeError(f"segment_reduce(): unsupported reduction given! {reduce}")
    if data.dtype.category != dt._FLOAT:
        raise RuntimeError(f"\"_segment_reduce_cpu\" not implemented for '{dt.legacy_name(data.dtype)}'")
    axis = wrap_dim(axis, data.dim(), "segment_reduce")
    lengths = _segment_lengths(data, lengths, offsets, indices, axis)
    if axis == 0:
        return _segment_reduce_rows(data, reduce, lengths, unsafe, initial)
    rows = [segment_reduce(data[i], reduce, lengths=lengths[i], axis=axis - 1, unsafe=unsafe, initial=initial)
            for i in range(data.shape[0])]
    return stack(rows)


def _segment_reduce_rows(data: Tensor, reduce: str, lengths: Tensor, unsafe: bool, initial) -> Tensor:
    """:func:`segment_reduce` along dim 0 with 1-D ``lengths``."""
    if not unsafe:
        if bool((lengths < 0).any()):
            raise RuntimeError("segment_reduce(): lengths contains negative value!")
        if int(lengths.sum()) != data.shape[0]:
            raise RuntimeError(f"segment_reduce(): Expected all rows of lengths along axis to sum to "
                               f"data.size(lengths.dim()-1) = {data.shape[0]}, but got {int(lengths.sum())}")
    segments = lengths.shape[0]
    ids = repeat_interleave(arange(segments, device=data.device), lengths.to(data.device))
    start = _SEGMENT_IDENTITIES[reduce] if initial is None else float(initial)
    init = full((segments,) + tuple(data.shape[1:]), start, dtype=data.dtype, device=data.device)
    if reduce in ("sum", "mean"):
        result = index_add(init, 0, ids, data)
    else:
        name = {"max": "amax", "min": "amin", "prod": "prod"}[reduce]
        result = index_reduce(init, 0, ids, data, name, include_self=True)
    if reduce == "mean":
        count = reshape(lengths.to(device=data.device, dtype=data.dtype), (segments,) + (1,) * (data.dim() - 1))
        empty_value = math.nan if initial is None else float(initial)
        result = where(count > 0, result / where(count > 0, count, 1), empty_value)
    return result


_export(segment_reduce, method=False)


# -- sampling ------------------------------------------------------------------------------------------

def _uniform(shape, device, generator) -> Tensor:
    """float64 draws from ``[0, 1)`` through ``uniform_`` (so ``generator`` and the default seeds apply)."""
    return empty(tuple(shape), dtype=dt.float64, device=device).uniform_(generator=generator)


def _check_sampling_input(op: str, name: str, t) -> None:
    _check_tensor(op, t, name)
    if t.dtype.category != dt._FLOAT:
        raise RuntimeError(f"\"{op}_cpu\" not implemented for '{dt.legacy_name(t.dtype)}'")


def poisson(input: Tensor, generator=None) -> Tensor:
    """A draw from the Poisson distribution of rate ``input[i]`` for each element, in ``input``'s dtype
    (``torch.poisson``).

    Inversion of the CDF, all elements at once: one pass per value of ``k``, so the cost grows with the
    largest rate (about ``rate + 40 * sqrt(rate)`` passes).
    """
    _check_sampling_input("poisson", "input", input)
    if input.numel() == 0:
        return empty(input.shape, dtype=input.dtype, device=input.device)
    rate = input.detach().to(dt.float64)
    if bool((rate < 0).any()) or bool(rate.isnan().any()):
        raise RuntimeError("poisson(): invalid Poisson rate, expected rate to be non-negative")
    u = _uniform(input.shape, input.device, generator)
    positive = rate > 0
    log_rate = where(positive, rate, 1.0).log()
    largest = float(rate.max())
    last = math.ceil(largest + 40 * math.sqrt(largest) + 40)  # the tail beyond it is below float64's resolution
    count = zeros(input.shape, dtype=dt.float64, device=input.device)
    cdf = zeros(input.shape, dtype=dt.float64, device=input.device)
    for k in range(last + 1):
        cdf = cdf + (k * log_rate - rate - math.lgamma(k + 1)).exp()  # the pmf at k, in log space: no underflow
        beyond = u > cdf
        count = count + beyond.to(dt.float64)
        if k % 16 == 15 and not bool(beyond.any()):
            break
    return where(positive, count, 0.0).to(input.dtype)


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """A draw from the binomial distribution of ``count[i]`` trials of success probability ``prob[i]`` for each
    element, in ``count``'s dtype (``torch.binomial``).

    The sum of Bernoulli trials, drawn in blocks: the cost grows with the largest count.
    """
    _check_sampling_input("binomial", "count", count)
    _check_sampling_input("binomial", "prob", prob)
    trials, p = broadcast_tensors(count.detach().to(dt.float64), prob.detach().to(dt.float64, device=count.device))
    if trials.numel() and (bool((trials < 0).any()) or bool(((p < 0) | (p > 1)).any())):
        raise RuntimeError("binomial(): expected count >= 0 and 0 <= prob <= 1")
    successes = zeros(trials.shape, dtype=dt.float64, device=count.device)
    most = int(trials.max().ceil()) if trials.numel() else 0
    block = max(1, min(most, (1 << 22) // max(trials.numel(), 1)))
    for start in range(0, most, block):
        size = min(block, most - start)
        draws = _uniform((size,) + tuple(trials.shape), count.device, generator)
        trial = reshape(arange(start, start + size, dtype=dt.float64, device=count.device),
                        (size,) + (1,) * trials.dim())
        successes = successes + ((draws < p) & (trial < trials)).to(dt.float64).sum(0)
    return successes.to(count.dtype)


_export(poisson, method=False)
_export(binomial, method=False)


# -- numerical gradients ------------------------------------------------------------------------------------

def _along(values: Tensor, dim: int, ndim: int) -> Tensor:
    """A 1-D tensor of per-position factors shaped to broadcast along ``dim`` of an ``ndim``-D tensor."""
    return reshape(values, tuple(-1 if d == dim else 1 for d in range(ndim)))


def _gradient_along(f: Tensor, dim: int, h, edge_order: int) -> Tensor:
    """One partial derivative of ``f`` along ``dim``: second-order central differences inside, one-sided
    differences of order ``edge_order`` at the two ends; ``h`` is a uniform step or a 1-D tensor of coordinates."""
    n, nd = f.shape[dim], f.dim()

    def part(start: int, length: int) -> Tensor:
        return narrow(f, dim, start if start >= 0 else n + start, length)

    if isinstance(h, Tensor):  # coordinates: the steps may differ, so each position has its own weights
        dx = diff(h.to(result_type(h, f)) if not (h.is_floating_point() or h.is_complex()) else h)
        hl, hr = _along(narrow(dx, 0, 0, n - 2), dim, nd), _along(narrow(dx, 0, 1, n - 2), dim, nd)
        inner = (part(0, n - 2) * (-hr / (hl * (hl + hr))) + part(1, n - 2) * ((hr - hl) / (hl * hr))
                 + part(2, n - 2) * (hl / (hr * (hl + hr))))
        d0, d1, dm2, dm1 = (select(dx, 0, i) for i in (0, 1, -2, -1))
    else:  # a uniform step
        inner = (part(2, n - 2) - part(0, n - 2)) / (2 * h)
        d0 = d1 = dm2 = dm1 = h
    if edge_order == 1:
        first = (part(1, 1) - part(0, 1)) / d0
        last = (part(-1, 1) - part(-2, 1)) / dm1
    else:  # second-order one-sided differences over three points (NumPy's and PyTorch's weights)
        first = (part(0, 1) * (-(2 * d0 + d1) / (d0 * (d0 + d1))) + part(1, 1) * ((d0 + d1) / (d0 * d1))
                 + part(2, 1) * (-d0 / (d1 * (d0 + d1))))
        last = (part(-3, 1) * (dm1 / (dm2 * (dm2 + dm1))) + part(-2, 1) * (-(dm1 + dm2) / (dm2 * dm1))
                + part(-1, 1) * ((2 * dm1 + dm2) / (dm1 * (dm2 + dm1))))
    return cat([first, inner, last], dim)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Estimated partial derivatives of the function sampled by ``input``, one tensor per dim: second-order central
    differences inside, first- or second-order one-sided differences at the edges (``torch.gradient``).

    ``spacing`` is one step for every dim, a list of steps (one per dim), or a list of 1-D coordinate tensors.
    """
    _check_tensor("gradient", input)
    if dim is None:
        dims = list(range(input.dim()))
    else:
        dims = [wrap_dim(d, input.dim(), "gradient") for d in ([dim] if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("dim appears multiple times in the list of dims")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    steps = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(steps) == 1 and len(dims) > 1 and not isinstance(steps[0], Tensor):
        steps = steps * len(dims)
    if len(steps) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {len(steps)} "
                           f"and a dim argument of length {len(dims)}.")
    for d, step in zip(dims, steps):
        if isinstance(step, Tensor) and (step.dim() != 1 or step.shape[0] != input.shape[d]):
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and to have the same "
                               f"number of elements as input's dimension {d} ({input.shape[d]}), but got a tensor "
                               f"of shape {list(step.shape)}")
        if isinstance(step, Tensor) and step.device != input.device:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device, but got devices "
                               f"{step.device} and {input.device}!")
    return tuple(_gradient_along(input, d, step, edge_order) for d, step in zip(dims, steps))


_export(gradient, method=False)


# -- function forms of Tensor methods that torch also exposes ---------------------------------------------

def as_strided_(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``input`` made, in place, a view with the given size, stride and offset (``torch.as_strided_``)."""
    _check_tensor("as_strided_", input)
    return input.as_strided_(size, stride, storage_offset)


def resize_as_(input: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    """``input`` resized in place to the shape of ``the_template`` (``torch.resize_as_``)."""
    _check_tensor("resize_as_", input)
    _check_tensor("resize_as_", the_template, "the_template")
    return input.resize_as_(the_template, memory_format=memory_format)


def is_inference(input: Tensor) -> bool:
    """Whether ``input`` was made under ``core.inference_mode`` (``torch.is_inference``)."""
    _check_tensor("is_inference", input)
    return input.is_inference()


def is_distributed(input: Tensor) -> bool:
    """Whether ``input`` is a distributed tensor: never, here (``torch.is_distributed``)."""
    _check_tensor("is_distributed", input)
    return input.is_distributed()


for _fn in (as_strided_, resize_as_, is_inference, is_distributed):
    _export(_fn, method=False)
