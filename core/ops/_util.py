"""Helpers every op declaration uses: dims, shapes, broadcasting, device checks, ``out=``."""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import warnings

from .. import dtypes
from .._hot import is_function

from ..errors import op_error
from ..tensor import Size, Tensor

__all__ = ["add_numpy_names", "documented", "exporter", "with_numpy_names", "wrap_dim", "wrap_dims", "broadcast_shapes",
           "common_device", "size_args", "is_tensor", "finish_out", "check_int_arg", "numel", "sum_to_shape",
           "check_computable"]


_NUMPY_NAMES = (("axis", "dim"), ("keepdims", "keepdim"))  # NumPy's spelling -> PyTorch's parameter
_WRAPPED: dict = {}  # function -> its wrapper


def with_numpy_names(fn):
    """``fn`` also taking NumPy's ``axis=``/``keepdims=`` for its ``dim``/``keepdim``, as PyTorch's argument parser
    does for every function; ``fn`` itself when it has neither parameter."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn
    renames = tuple((alias, name) for alias, name in _NUMPY_NAMES if name in params and alias not in params)
    if not renames or getattr(fn, "numpy_names", False):  # nothing to rename, or wrapped already
        return fn
    if fn in _WRAPPED:  # one wrapper per function: core.special.logsumexp stays core.logsumexp
        return _WRAPPED[fn]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs:
            for alias, name in renames:
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}() got multiple values for argument '{name}' (also given "
                                        f"as '{alias}')")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    call.numpy_names = True
    _WRAPPED[fn] = call
    return call


def add_numpy_names(namespace) -> None:
    """Give every public function of ``namespace`` (a module's dict, or a class such as Tensor) NumPy's spellings."""
    items = vars(namespace) if isinstance(namespace, type) else namespace
    for name, value in list(items.items()):
        if is_function(value) and not name.startswith("_"):
            wrapped = with_numpy_names(value)
            if wrapped is not value:
                if isinstance(namespace, type):
                    setattr(namespace, name, wrapped)
                else:
                    namespace[name] = wrapped


def exporter(names: list, methods: dict):
    """An ops family's ``_export``: ``fn`` joins ``names`` (the family's ``__all__``: ``core.<name>``; not with
    ``function=False``) and, with ``method=True``, ``methods`` (its Tensor methods)."""
    def export(fn, method: bool = True, function: bool = True):
        if function:
            names.append(fn.__name__)
        if method:
            methods[fn.__name__] = fn
        return fn
    return export


def documented(doc: str, fn):
    """``fn`` (a lambda, usually) with ``doc`` as its doc string: what docs/ops.md shows for it."""
    fn.__doc__ = doc
    return fn


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a core Tensor (``torch.is_tensor``)."""
    return isinstance(obj, Tensor)


def check_computable(op: str, d) -> None:
    """PyTorch's RuntimeError for arithmetic on a float8 dtype (it implements casts, copies and comparisons
    only for them)."""
    if d in dtypes.FLOAT8_DTYPES:
        raise RuntimeError(f"\"{op}\" not implemented for '{dtypes.legacy_name(d)}'")


numel = math.prod  # the product of a shape's sizes (1 for ()), in C


def wrap_dim(dim, ndim: int, op: str = "op") -> int:
    """``dim`` normalised to ``[0, ndim)``; IndexError like PyTorch's otherwise (0-d tensors accept -1/0)."""
    if dim.__class__ is not int and (not isinstance(dim, numbers.Integral) or isinstance(dim, bool)):
        raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__}")
    bound = ndim if ndim > 0 else 1
    if dim < -bound or dim >= bound:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of "
                         f"[{-bound}, {bound - 1}], but got {dim})")
    return dim + bound if dim < 0 else dim


def wrap_dims(dims, ndim: int, op: str = "op") -> tuple:
    """A tuple of distinct normalised dims (``None`` means all dims)."""
    if dims is None:
        return tuple(range(ndim))
    if dims.__class__ is int or (dims.__class__ is not tuple and dims.__class__ is not list
                                 and isinstance(dims, numbers.Integral)):
        dims = (dims,)
    out = tuple(wrap_dim(d, ndim, op) for d in dims)
    if len(set(out)) != len(out):
        repeated = next(d for i, d in enumerate(out) if d in out[:i])
        raise RuntimeError(f"{op}(): dim {repeated} appears multiple times in the list of dims")
    return out


def broadcast_shapes(*shapes, op: str = "broadcast_shapes") -> tuple:
    """The shape that all ``shapes`` broadcast to; RuntimeError naming them otherwise."""
    ndim = max(len(s) for s in shapes)
    result = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, size in enumerate(shape):
            current = result[offset + i]
            if size == current or size == 1:
                continue
            if current == 1:
                result[offset + i] = size
            else:
                listed = " and ".join(str(list(s)) for s in shapes)
                dim = offset + i
                raise RuntimeError(
                    f"{op}(): The size of tensor a ({current}) must match the size of tensor b ({size}) at "
                    f"non-singleton dimension {dim} (shapes {listed} are not broadcastable)")
    return tuple(result)


def common_device(op: str, tensors) -> object:
    """The device all tensors share; 0-d CPU tensors may join any device, as in PyTorch."""
    device = first = None
    for t in tensors:
        d = t._storage.device
        if first is None:
            first = d
        if d.type == "cpu" and not t._shape:
            continue
        if device is None:
            device = d
        elif d is not device:
            raise op_error(RuntimeError, op, f"Expected all tensors to be on the same device, but found at "
                           f"least two devices, {device} and {d}!", *tensors)
    return device or first


def size_args(op: str, size) -> tuple:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` all mean shape (2, 3); sizes must be non-negative ints."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.__index__()
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(f"{op}(): size must be a sequence of ints, but got {type(s).__name__} ({s!r})")
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def check_int_arg(op: str, name: str, value) -> int:
    """An int argument, TypeError naming it otherwise."""
    if isinstance(value, Tensor) and value.numel() == 1 and value.dtype.category <= 1:
        return int(value.item())
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(value).__name__}")
    return int(value)


def finish_out(op: str, result: Tensor, out: Tensor | None) -> Tensor:
    """Honour ``out=``: resize an empty ``out`` or check its shape, then copy the result in."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if result.dtype is not out.dtype and not dtypes.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"{op}(): result type {dtypes.legacy_name(result.dtype)} can't be cast to the desired "
                           f"output type {dtypes.legacy_name(out.dtype)}")
    if out._shape != result._shape:
        if out.numel() != 0:
            warnings.warn(f"{op}(): An output with one or more elements was resized since it had shape "
                          f"{list(out._shape)}, which does not match the required output shape "
                          f"{list(result._shape)}.", UserWarning, stacklevel=3)
        out.resize_(result._shape)
    out.copy_(result)
    return out


def sum_to_shape(grad: Tensor, shape: tuple) -> Tensor:
    """Sum a broadcast gradient back to ``shape`` (the inverse of broadcasting, for derivative formulas)."""
    if grad._shape == tuple(shape):
        return grad
    from .reduction import sum as sum_

    lead = len(grad._shape) - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and grad._shape[lead + i] != 1)
    result = sum_(grad, dims, keepdim=True) if dims else grad
    if lead:
        result = result.reshape(shape)
    return result
