"""Tensor methods with no torch-level function: in-place aliases, in-place view ops, element-wise Python callables,
the legacy constructors and resizes, and small queries (``Tensor.sum_to_size``, ``Tensor.dim_order``, ...).

All are composites of existing ops (or geometry changes on ``self``), so they run on every device and, where PyTorch
differentiates them, get autograd from the ops they are built of.
"""

from __future__ import annotations

import builtins
import numbers
import warnings

from .. import dtypes as dt
from ..autograd.kernel import _check_inplace
from ..dispatch.keys import is_grad_enabled
from ..storage import Storage, TypedStorage
from ..tensor import Size, Tensor, contiguous_strides
from ._util import broadcast_shapes, size_args, sum_to_shape
from .creation import _resize_, empty, empty_strided, is_nonzero, resolve_device, tensor
from .elementwise import METHODS as _ELEMENTWISE, _inplace, float_power
from .ranges import arange
from .reduction import cumprod, cumsum
from .view import as_strided, squeeze, swapaxes, swapdims, t, transpose, unsqueeze

__all__: list = []
METHODS: dict = {}


def _method(fn):
    METHODS[fn.__name__] = fn
    return fn


# -- in-place aliases --------------------------------------------------------------------------------

for _alias, _target in (("absolute_", "abs_"), ("arctan2_", "atan2_"), ("greater_", "gt_"),
                        ("greater_equal_", "ge_"), ("less_", "lt_"), ("less_equal_", "le_"),
                        ("not_equal_", "ne_")):
    METHODS[_alias] = _ELEMENTWISE[_target]

_cumsum_ = _inplace("cumsum", cumsum)
_cumprod_ = _inplace("cumprod", cumprod)


@_method
def cumsum_(self, dim, dtype=None):
    """In-place running sum along ``dim`` (``torch.Tensor.cumsum_``)."""
    return _cumsum_(self, dim, dtype=dtype)


@_method
def cumprod_(self, dim, dtype=None):
    """In-place running product along ``dim`` (``torch.Tensor.cumprod_``)."""
    return _cumprod_(self, dim, dtype=dtype)


_float_power_ = _inplace("float_power", float_power)


@_method
def float_power_(self, exponent):
    """In-place ``float_power``; self must already be double (or complex double) (``torch.Tensor.float_power_``)."""
    wanted = dt.complex128 if self.is_complex() or (isinstance(exponent, Tensor) and exponent.is_complex()) \
        or isinstance(exponent, complex) else dt.float64
    if self.dtype is not wanted:
        raise RuntimeError(f"the base given to float_power_ has dtype {dt.legacy_name(self.dtype)} but the "
                           f"operation's result requires dtype {dt.legacy_name(wanted)}")
    return _float_power_(self, exponent)


# -- in-place view ops: self takes the view's shape and strides ---------------------------------------

def _inplace_view(name: str, view_fn):
    def method(self, *args, **kwargs):
        recording = is_grad_enabled()
        if recording:
            _check_inplace(self)
        # The view is taken of a snapshot of self: its backward node must keep self's old geometry.
        before = self._alias(self._shape, self._stride, self._offset)
        before._base, before.requires_grad, before.grad_fn = self._base, self.requires_grad, self.grad_fn
        if "_output_nr" in self.__dict__:
            before.__dict__["_output_nr"] = self.__dict__["_output_nr"]
        view = view_fn(before, *args, **kwargs)
        self._shape, self._stride, self._offset, self._np = view._shape, view._stride, view._offset, None
        if recording and view.grad_fn is not None:
            self.grad_fn = view.grad_fn
            self.__dict__["_output_nr"] = view.__dict__.get("_output_nr", 0)
        self._storage.version += 1
        return self

    method.__name__ = name
    method.__doc__ = (f"In-place ``{name[:-1]}``: self's shape and strides change, its data stays "
                      f"(``torch.Tensor.{name}``).")
    return method


for _name, _view in (("t_", t), ("transpose_", transpose), ("swapaxes_", swapaxes), ("swapdims_", swapdims),
                     ("squeeze_", squeeze), ("unsqueeze_", unsqueeze), ("as_strided_", as_strided)):
    METHODS[_name] = _inplace_view(_name, _view)


# -- element-wise Python callables (CPU only, as in PyTorch) -------------------------------------------

def _map_elements(name: str, self, others, fn) -> Tensor:
    """Replace each element of self by ``fn(self_element, *other_elements)``, others broadcast to self's shape."""
    for t_ in (self, *others):
        if not isinstance(t_, Tensor):
            raise TypeError(f"{name}(): expected Tensor arguments, got {type(t_).__name__}")
        if t_.device.type != "cpu":
            raise TypeError(f"{name} is only implemented on CPU tensors")
    if not callable(fn):
        raise TypeError(f"{name}(): expected a callable, got {type(fn).__name__}")
    columns = [self.reshape(-1).tolist()]
    for other in others:
        if broadcast_shapes(self._shape, other._shape, op=name) != self._shape:
            raise RuntimeError(f"{name}(): the shape of the other tensor {list(other._shape)} must be broadcastable "
                               f"to self's {list(self._shape)}")
        columns.append(other.expand(self._shape).reshape(-1).tolist())
    values = [fn(*elements) for elements in zip(*columns)]
    return self.copy_(tensor(values, dtype=self.dtype).reshape(self._shape))


@_method
def apply_(self, callable):  # noqa: A002 - PyTorch's name
    """Replace each element ``x`` by ``callable(x)``; CPU tensors only (``torch.Tensor.apply_``)."""
    return _map_elements("apply_", self, (), callable)


@_method
def map_(self, tensor, callable):  # noqa: A002 - PyTorch's names
    """Replace each element ``x`` by ``callable(x, y)``, ``y`` from ``tensor`` broadcast to self; CPU only
    (``torch.Tensor.map_``)."""
    return _map_elements("map_", self, (tensor,), callable)


@_method
def map2_(self, x, y, callable):  # noqa: A002 - PyTorch's name
    """Replace each element ``s`` by ``callable(s, a, b)``, ``a``/``b`` from ``x``/``y`` broadcast to self; CPU only
    (``torch.Tensor.map2_``)."""
    return _map_elements("map2_", self, (x, y), callable)


# -- diagonal fill -------------------------------------------------------------------------------------

@_method
def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all indices equal) with ``fill_value``; a tall matrix restarts it every ``cols + 1``
    rows when ``wrap`` (``torch.Tensor.fill_diagonal_``)."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    rows, cols = self._shape[0], self._shape[1]
    if self.dim() > 2 and any(s != rows for s in self._shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.dim() == 2 and wrap and rows > cols + 1:
        flat = range(0, rows * cols, cols + 1)  # positions in the row-major order
        index = (tensor([p // cols for p in flat], device=self.device), tensor([p % cols for p in flat],
                                                                                device=self.device))
    else:
        diagonal = arange(builtins.min(self._shape), device=self.device)
        index = (diagonal,) * self.dim()
    self[index] = fill_value
    return self


# -- conversions, legacy constructors, resizes --------------------------------------------------------

@_method
def type_as(self, other):
    """Self cast to ``other``'s dtype, and moved to its device type if that differs (``torch.Tensor.type_as``,
    which is ``self.type(other.type())``)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    if other.device.type != self.device.type:
        return self.to(other.device.type, other.dtype)
    return self.to(other.dtype)


@_method
def sum_to_size(self, *size):
    """Sum self down to ``size``, which must be expandable to self's shape (``torch.Tensor.sum_to_size``)."""
    shape = size_args("sum_to_size", size)
    lead = len(self._shape) - len(shape)
    if lead < 0 or any(s != 1 and s != self._shape[lead + i] for i, s in enumerate(shape)):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(self._shape)}}}.")
    return sum_to_shape(self, shape)


@_method
def new(self, *args, device=None):
    """The legacy constructor (``torch.Tensor.new``): ``new()`` empty, ``new(*sizes)`` / ``new(Size)`` uninitialised,
    ``new(data)`` from data, ``new(tensor)`` an alias of it, ``new(storage)`` over it; self's dtype and device."""
    device = self.device if device is None else resolve_device(device)
    if not args:
        return empty(0, dtype=self.dtype, device=device)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        if first.dtype is not self.dtype:
            raise TypeError(f"expected {dt.legacy_name(self.dtype)} (got {dt.legacy_name(first.dtype)})")
        return first.detach()
    if len(args) == 1 and isinstance(first, (Storage, TypedStorage)):
        return empty(0, dtype=self.dtype, device=first.device).set_(first)
    if len(args) == 1 and not isinstance(first, (numbers.Integral, Size)):
        return tensor(first, dtype=self.dtype, device=device)
    return empty(*args, dtype=self.dtype, device=device)


@_method
def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    """An uninitialised tensor of ``size`` and ``stride``, self's dtype and device by default
    (``torch.Tensor.new_empty_strided``)."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def _resized(self, shape) -> Tensor:
    # autograd's legacy Resize: a view of self's (contiguous) data with another shape of the same size
    numel = 1
    for s in shape:
        numel *= s
    if numel != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({numel} elements in total), but the "
                           f"given tensor has a size of {'x'.join(map(str, self._shape))} ({self.numel()} "
                           f"elements). autograd's resize can only change the shape of a given tensor, while "
                           f"preserving the number of elements. ")
    return self.contiguous().view(shape)


@_method
def resize(self, *sizes):
    """Deprecated out-of-place resize: self's elements viewed with shape ``sizes``, which must hold as many
    (``torch.Tensor.resize``)."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    return _resized(self, size_args("resize", sizes))


@_method
def resize_as(self, tensor):  # noqa: A002 - PyTorch's name
    """Deprecated out-of-place ``resize`` to ``tensor``'s shape (``torch.Tensor.resize_as``)."""
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    return _resized(self, tensor._shape)


@_method
def resize_as_(self, tensor, memory_format=None):  # noqa: A002 - PyTorch's name
    """In-place ``resize_`` to ``tensor``'s shape (``torch.Tensor.resize_as_``)."""
    return _resize_(self, tensor._shape)


# -- storage identity ---------------------------------------------------------------------------------

@_method
def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make self look at other memory (``torch.Tensor.set_``): ``set_()`` an empty storage, ``set_(tensor)`` that
    tensor's storage and geometry, ``set_(storage, storage_offset=0, size=None, stride=None)`` a storage."""
    if is_grad_enabled():
        _check_inplace(self)
        if self.grad_fn is not None:
            raise RuntimeError("set_(): not differentiable; call it on a tensor that is not part of a graph "
                               "(detach() it) or under core.no_grad()")
    if source is None:
        source = empty(0, dtype=self.dtype, device=self.device)
    if isinstance(source, Tensor):
        if source.dtype is not self.dtype:
            raise RuntimeError(f"Could not set tensor of type {dt.legacy_name(source.dtype)} to a tensor of type "
                               f"{dt.legacy_name(self.dtype)}")
        storage, offset, shape, strides = source._storage, source._offset, source._shape, source._stride
    elif isinstance(source, (Storage, TypedStorage)):
        if isinstance(source, TypedStorage):
            if source.dtype is not self.dtype:
                raise RuntimeError(f"Expected a Storage of type {dt.legacy_name(self.dtype)} but got type "
                                   f"{dt.legacy_name(source.dtype)} for argument 1 'storage'")
            source = source.untyped()
        storage, offset = source, storage_offset
        shape = (source.nbytes // self.dtype.itemsize,) if size is None else size_args("set_", (size,))
        strides = contiguous_strides(shape) if stride is None else tuple(int(s) for s in stride)
        if len(strides) != len(shape):
            raise RuntimeError(f"set_(): mismatch in length of strides and shape ({len(strides)} vs {len(shape)})")
        extent = offset + 1 + builtins.sum((n - 1) * st for n, st in zip(shape, strides)) if all(shape) else 0
        if offset < 0 or extent * self.dtype.itemsize > storage.nbytes:
            raise RuntimeError(f"set_(): sizes {list(shape)}, strides {list(strides)} and storage offset {offset} "
                               f"need {extent * self.dtype.itemsize} bytes, but the storage holds {storage.nbytes} "
                               f"bytes")
    else:
        raise TypeError(f"set_(): expected a Tensor or a Storage, got {type(source).__name__}")
    if storage.device != self.device:
        raise RuntimeError(f"set_(): expected the source on {self.device}, got {storage.device}")
    self._storage, self._offset, self._shape, self._stride, self._np = storage, offset, shape, strides, None
    self.__dict__.pop("_base", None)  # no longer a view of what it was: in-place writes must not rebase that
    storage.version += 1
    return self


@_method
def is_set_to(self, tensor):  # noqa: A002 - PyTorch's name
    """Whether both tensors use the same storage, offset, shape and strides (``torch.Tensor.is_set_to``)."""
    return (self._storage is tensor._storage and self._offset == tensor._offset and self._shape == tensor._shape
            and self._stride == tensor._stride)


# -- queries ------------------------------------------------------------------------------------------

METHODS["is_nonzero"] = is_nonzero


@_method
def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory, by stride (``torch.Tensor.dim_order``); with
    ``ambiguity_check=True``, RuntimeError when more than one order fits (a size-1 dim, or neighbours with equal
    strides). Core has no memory formats, so a list of them can only be empty (then it acts as True)."""
    if not isinstance(ambiguity_check, builtins.bool) and ambiguity_check != []:
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    ndim = self.dim()
    shape, strides = self._shape, self._stride
    if ambiguity_check is not False and (1 in shape or any(a == b for a, b in zip(strides, strides[1:]))):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                           "memory formats.")

    def should_swap(a: int, b: int) -> int:  # PyTorch's comparison: 1 when b goes outside a
        if strides[a] == 0 or strides[b] == 0:
            return 0
        if strides[a] != strides[b]:
            return -1 if strides[a] < strides[b] else 1
        return 1 if shape[a] > shape[b] else 0

    perm = list(reversed(range(ndim)))  # innermost first; an insertion sort that keeps ambiguous pairs in place
    for i in range(1, ndim):
        dim1 = i
        for dim0 in reversed(range(i)):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    return tuple(reversed(perm))


@_method
def module_load(self, other, assign=False):
    """What ``nn.Module.load_state_dict`` stores for parameter ``self`` given the loaded ``other``
    (``torch.Tensor.module_load``): ``other.detach()`` when ``assign``, else ``self.copy_(other).detach()``."""
    if not isinstance(other, Tensor):
        raise TypeError(f"module_load(): argument 'other' must be Tensor, not {type(other).__name__}")
    if assign:
        return other.detach()
    return self.copy_(other).detach()
