"""Creating tensors and moving them between devices and dtypes.

``empty`` is the dispatcher op that asks the device's backend runtime for a
buffer: factories call it through :func:`allocate` (dispatched on the device's
backend key, so a trace records it), kernels making their own outputs call
:func:`allocate_raw` (no dispatch). ``tensor`` and ``from_numpy`` go through
the runtime's host transfer; ``copy_`` and ``fill_`` are the
primitive writes every other in-place op is built on.
"""

from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

from .. import dtypes as dt
from ..device import as_device, device as _device, get_default_device
from ..dispatch import TensorSpec, define, tls
from ..dispatch.keys import Tracer
from ..errors import allocate_buffer, op_error
from ..global_state import are_deterministic_algorithms_enabled
from ..memory_formats import contiguous_format, layout_strides, strides_for
from ..plugins.manager import runtime_for
from ..storage import Storage
from ..tensor import Size, Tensor, contiguous_strides
from ._util import broadcast_shapes, documented, size_args

__all__ = ["empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
           "full_like", "tensor", "as_tensor", "asarray", "from_numpy", "scalar_tensor", "clone", "is_tensor",
           "numel", "is_floating_point", "is_complex", "is_signed", "is_nonzero"]

_NORMALIZED: dict = {}


def resolve_device(dev) -> _device:
    """The canonical device for ``dev`` (``None`` = default device), checked by its backend."""
    dev = get_default_device() if dev is None else dev if isinstance(dev, _device) else as_device(dev)
    norm = _NORMALIZED.get(dev)
    if norm is None:
        norm = _NORMALIZED[dev] = runtime_for(dev.type).normalize_device(dev)
    return norm


def _check_dtype(op: str, d) -> dt.dtype:
    if d is None:
        return dt.get_default_dtype()
    if not isinstance(d, dt.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be core.dtype, not {type(d).__name__}")
    return d


def _runtime_holding(op: str, d: dt.dtype, dev: _device):
    """The runtime of ``dev``, if tensors of ``d`` can live there: RuntimeError for a dtype no tensor holds
    (``core.uint4``...), TypeError for one the device's backend lacks."""
    if d.numpy is None:
        raise RuntimeError(f"{op}(): no tensor can hold dtype {d}: core defines it as a dtype object only, as "
                           f"PyTorch does for packed and sub-byte types")
    runtime = runtime_for(dev.type)
    if not runtime.supports_dtype(d):
        raise TypeError(f"{op}(): device {dev} (backend {runtime.name}) does not support dtype {d.name}")
    return runtime


# The largest byte count one storage can have: an int64 (PyTorch's size_t on 64-bit hosts, NumPy's intp).
MAX_STORAGE_NBYTES = 2**63 - 1


def _too_large(op: str, shape: tuple, d: dt.dtype, dev: _device, nbytes: int) -> RuntimeError:
    """The error for a size whose byte count no storage can address (PyTorch: "Storage size calculation
    overflowed"); an allocation the device merely lacks memory for is the runtime's out-of-memory error."""
    return op_error(RuntimeError, op, f"storage size calculation overflowed with sizes={list(shape)}: "
                    f"{math.prod(shape)} elements of {d.name} ({d.itemsize} bytes each) are {nbytes} bytes "
                    f"requested on device {dev}, more than the {MAX_STORAGE_NBYTES} bytes a storage can address")


def allocate_raw(shape: tuple, d: dt.dtype, dev: _device, op: str = "empty") -> Tensor:
    """A fresh contiguous tensor of ``shape``, ``d`` on ``dev`` (uninitialized), without dispatch.

    What kernels call for their own outputs: the dispatcher (and a trace) already saw the op they implement.
    ``op`` names the caller in errors.
    """
    return _fresh(_runtime_holding(op, d, dev), shape, d, dev, op)


def _fresh(runtime, shape: tuple, d: dt.dtype, dev: _device, op: str) -> Tensor:
    """:func:`allocate_raw` once ``runtime`` is known to hold ``d`` on ``dev``."""
    nbytes = d.itemsize
    for s in shape:
        nbytes *= s
    if nbytes > MAX_STORAGE_NBYTES:
        raise _too_large(op, shape, d, dev, nbytes)
    storage = Storage(allocate_buffer(runtime, nbytes, dev, op), nbytes, dev, runtime, runtime.key.mask)
    return Tensor._make(storage, shape, contiguous_strides(shape), 0, d)


def _empty_meta(size, dtype, device):
    return TensorSpec(tuple(size), dtype, device)


def _empty_kernel(size, dtype, device) -> Tensor:
    """The device-agnostic kernel of ``empty``: the device's runtime allocates (a backend may register its own)."""
    return allocate_raw(tuple(size), dtype, device)


empty_op = define("empty", meta=_empty_meta, default=_empty_kernel,
                  doc="An uninitialised contiguous tensor of size, dtype on device (torch.empty); a factory, "
                      "dispatched on the backend key of device.")


def allocate(shape: tuple, d: dt.dtype, dev: _device, op: str = "empty") -> Tensor:
    """A fresh contiguous tensor of ``shape``, ``d`` on ``dev`` (uninitialized) from the ``empty`` op.

    What factories call. There is no tensor argument to dispatch on, so the key set is the backend key of
    ``dev`` plus the thread's included keys (a trace's ``Tracer`` records the op); ``op`` names the caller in
    errors.
    """
    runtime = _runtime_holding(op, d, dev)
    mask = (runtime.key.mask | tls.include) & ~tls.exclude
    if empty_op._cache.get(mask) is _empty_kernel:  # the default kernel, nothing to record: allocate here
        return _fresh(runtime, shape, d, dev, op)
    if math.prod(shape) * d.itemsize > MAX_STORAGE_NBYTES:  # checked here too, to name the factory called
        raise _too_large(op, shape, d, dev, math.prod(shape) * d.itemsize)
    return empty_op.redispatch(mask, shape, d, dev)


def _uninitialised(t: Tensor) -> Tensor:
    """``t`` as ``empty`` returns it: left as allocated, or, under ``core.use_deterministic_algorithms(True)``,
    filled with NaN (floating and complex) or the largest value (integral and bool), as PyTorch's
    ``fill_uninitialized_memory``."""
    if are_deterministic_algorithms_enabled() and t.numel():
        if t.dtype.category >= dt._FLOAT:
            _fill_fresh(t, math.nan)
        else:
            _fill_fresh(t, True if t.dtype is dt.bool else dt.iinfo(t.dtype).max)
    return t


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, pin_memory=False,
          memory_format=None) -> Tensor:
    """An uninitialised tensor of ``size``, laid out in ``memory_format`` (``torch.empty``)."""
    shape = size_args("empty", size)
    t = allocate(shape, _check_dtype("empty", dtype), resolve_device(device))
    return _finish(_uninitialised(_laid_out("empty", t, memory_format)), requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor with the given strides (``torch.empty_strided``)."""
    shape = size_args("empty_strided", (size,))
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(shape):
        raise RuntimeError(f"empty_strided(): mismatch in length of strides and shape ({len(stride)} vs {len(shape)})")
    extent = 1 + builtins.sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else 0
    base = allocate((extent,), _check_dtype("empty_strided", dtype), resolve_device(device), "empty_strided")
    return _finish(_uninitialised(base)._alias(shape, stride, 0), requires_grad)


def _like(op: str, input: Tensor, dtype, device) -> tuple:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input._shape, dtype or input.dtype, resolve_device(device) if device is not None else input.device


def _laid_out(op: str, t: Tensor, memory_format, like: Tensor | None = None) -> Tensor:
    """The fresh contiguous ``t`` seen with the strides of ``memory_format``; for a ``*_like`` factory (``like``
    given) None means ``preserve_format``: ``like``'s own layout."""
    if like is not None:
        strides = layout_strides(op, like._shape, like._stride, memory_format)
    else:
        strides = t._stride if memory_format is None else strides_for(t._shape, memory_format, op)
    return t if strides == t._stride else t._alias(t._shape, strides, 0)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    """An uninitialised tensor shaped like ``input``, laid out as ``memory_format`` says (``input``'s layout by
    default)."""
    shape, d, dev = _like("empty_like", input, dtype, device)
    return _finish(_uninitialised(_laid_out("empty_like", allocate(shape, d, dev), memory_format, input)),
                   requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``; dtype inferred from the value (``torch.full``)."""
    shape = size_args("full", (size,))
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = dtype if dtype is not None else dt.scalar_dtype(fill_value)
    t = allocate(shape, _check_dtype("full", d), resolve_device(device), "full")
    _fill_fresh(t, fill_value)
    return _finish(t, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    """A tensor of zeros (``torch.zeros``)."""
    t = allocate(size_args("zeros", size), _check_dtype("zeros", dtype), resolve_device(device), "zeros")
    _fill_fresh(t, 0)
    return _finish(t, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    """A tensor of ones (``torch.ones``)."""
    t = allocate(size_args("ones", size), _check_dtype("ones", dtype), resolve_device(device), "ones")
    _fill_fresh(t, 1)
    return _finish(t, requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    """A tensor shaped like ``input`` filled with ``fill_value``."""
    shape, d, dev = _like("full_like", input, dtype, device)
    t = allocate(shape, d, dev)
    _fill_fresh(t, fill_value)
    return _finish(_laid_out("full_like", t, memory_format, input), requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    """Zeros shaped like ``input``."""
    return full_like(input, 0, dtype=dtype, device=device, requires_grad=requires_grad, memory_format=memory_format)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    """Ones shaped like ``input``."""
    return full_like(input, 1, dtype=dtype, device=device, requires_grad=requires_grad, memory_format=memory_format)


# -- from Python data and NumPy ---------------------------------------------------------------

def _infer_array(op: str, data, dtype) -> tuple:
    """``data`` as a C-contiguous host array and the core dtype it should get."""
    if isinstance(data, Tensor):
        array = to_numpy(data, force=True)
        return array, dtype or data.dtype
    if isinstance(data, (np.ndarray, np.generic)):
        array = np.asarray(data)
        inferred = dt.from_numpy_dtype(array.dtype)
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flatten_first(data)):
            data = _tensors_to_lists(data)
        try:
            array = np.asarray(data)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{op}(): could not build a tensor from {type(data).__name__}: {exc}") from None
        kind = array.dtype.kind
        if kind == "u" or array.dtype == object or (kind == "f" and isinstance(_first_leaf(data), int)):
            array, kind = _wide_ints(op, data, array, dtype)  # NumPy's answers to ints beyond int64
        if kind == "f":
            inferred = dt.get_default_dtype()
        elif kind == "c":
            inferred = dt.complex128 if dt.get_default_dtype() is dt.float64 else dt.complex64
        elif kind in "iu":
            inferred = dt.int64
        elif kind == "b":
            inferred = dt.bool
        elif array.dtype == object or kind in "USV":
            raise TypeError(f"{op}(): could not infer dtype of {type(_first_leaf(data)).__name__}")
        else:
            inferred = dt.from_numpy_dtype(array.dtype)
    d = _check_dtype(op, dtype) if dtype is not None else inferred
    if array.dtype != d.numpy:
        if d.category < 2 and array.dtype.kind == "f" and not np.all(np.isfinite(array)):
            raise RuntimeError(f"{op}(): cannot convert non-finite values to integral dtype {d.name}")
        array = array.astype(d.numpy)
    return np.asarray(array, order="C"), d


def _wide_ints(op: str, data, array: np.ndarray, dtype) -> tuple:
    """``(array, kind)`` for data holding Python ints beyond int64: converted when ``dtype`` is floating or
    complex (or uint64 and they fit), else PyTorch's "Overflow when unpacking long" (a RuntimeError) naming
    the value."""
    leaves = list(_leaves(data))
    wide = next((x for x in leaves if isinstance(x, int) and not -2**63 <= x < 2**63), None)
    if wide is None:
        return array, array.dtype.kind
    floating = isinstance(dtype, dt.dtype) and dtype.category >= 2
    if floating or not all(isinstance(x, int) for x in leaves):  # PyTorch converts such ints through double
        complex_ = (dtype.category == 3) if floating else any(isinstance(x, complex) for x in leaves)
        array = np.asarray(data, dtype=np.complex128 if complex_ else np.float64)
        return array, array.dtype.kind
    if dtype is dt.uint64 and all(isinstance(x, int) and 0 <= x < 2**64 for x in leaves):
        array = np.asarray(data, dtype=np.uint64)
        return array, "u"
    raise op_error(RuntimeError, op, f"Overflow when unpacking long: {wide} does not fit in int64")


def _leaves(data):
    if isinstance(data, (list, tuple)):
        for item in data:
            yield from _leaves(item)
    else:
        yield data


def _flatten_first(data):
    while isinstance(data, (list, tuple)) and data:
        yield from (x for x in data if isinstance(x, Tensor))
        data = data[0]


def _first_leaf(data):
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return data


def _tensors_to_lists(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_tensors_to_lists(x) for x in data]
    return data


def _from_host(array: np.ndarray, d: dt.dtype, dev: _device) -> Tensor:
    runtime = _runtime_holding("tensor", d, dev)
    shape = array.shape
    storage = Storage(runtime.from_host(array, dev), array.nbytes, dev, runtime, runtime.key.mask)
    t = Tensor._make(storage, shape, contiguous_strides(shape), 0, d, array if dev.type == "cpu" else None)
    if tls.recording is not None:  # a whole-step capture makes it again from this data on each replay
        from ..dispatch.capture import note_host_tensor

        note_host_tensor(t, array)
    return t


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (``torch.tensor``)."""
    array, d = _infer_array("tensor", data, dtype)
    if isinstance(data, (Tensor, np.ndarray, np.generic)) or not array.flags.owndata:
        array = array.copy()  # torch.tensor always copies; np.asarray may have returned the caller's memory
    dev = resolve_device(device) if device is not None else (
        data.device if isinstance(data, Tensor) else resolve_device(None))
    return _finish(_from_host(array, d, dev), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory when it already is one (or a CPU NumPy array) of that dtype/device."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (device is not None or dtype is not None) else data
    if isinstance(data, np.ndarray) and (device is None or resolve_device(device).type == "cpu") and \
            resolve_device(device).type == "cpu":
        t = from_numpy(data)
        return t if dtype is None or dtype is t.dtype else t.to(dtype)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """``obj`` as a tensor: ``copy=None`` shares memory with a tensor or CPU NumPy array when dtype and device allow,
    ``copy=True`` always copies, ``copy=False`` shares or raises ValueError (``torch.asarray``)."""
    if copy:
        if isinstance(obj, Tensor):
            result = obj.detach().to(device=device if device is not None else obj.device,
                                     dtype=dtype or obj.dtype)
            result = clone(result) if result._storage is obj._storage else result
        else:
            result = tensor(obj, dtype=dtype, device=device)
    else:
        result = as_tensor(obj, dtype=dtype, device=device)
        if copy is False:
            shared = isinstance(obj, Tensor) and result._storage is obj._storage
            if isinstance(obj, np.ndarray):
                shared = result.device.type == "cpu" and np.shares_memory(to_numpy(result), obj)
            if not shared:
                raise ValueError(f"asarray(): can't alias {type(obj).__name__} as a tensor of dtype "
                                 f"{(dtype or result.dtype).name} on {result.device} without copying "
                                 f"(copy=False)")
    return result.detach().requires_grad_(True) if requires_grad else result


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``array`` (``torch.from_numpy``)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    return share_array("from_numpy", array, resolve_device("cpu"))


def share_array(op: str, array, dev: _device) -> Tensor:
    """A tensor on ``dev`` over the memory of ``array``, an ndarray of the device's array module (NumPy on the
    CPU, CuPy on cuda), keeping its strides."""
    d = dt.from_numpy_dtype(array.dtype)
    isz = array.itemsize
    if any(s < 0 for s in array.strides):
        raise ValueError(f"{op}(): At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably work around "
                         "this by making a copy of your array with array.copy().)")
    if any(s % isz for s in array.strides):
        raise ValueError(f"{op}(): given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    runtime = runtime_for(dev.type)
    xp = getattr(runtime, "xp", np)
    strides = tuple(s // isz for s in array.strides)
    extent = 1 + builtins.sum((n - 1) * s for n, s in zip(array.shape, strides)) if array.size else 0
    flat = xp.lib.stride_tricks.as_strided(array, shape=(extent,), strides=(isz,)).view(np.uint8) \
        if extent else xp.empty(0, np.uint8)
    storage = Storage(flat, extent * isz, dev, runtime, runtime.key.mask)
    if tls.recording is not None:
        from ..dispatch.capture import note_uncapturable

        note_uncapturable(f"a tensor over host memory was made ({op})")
    return Tensor._make(storage, tuple(array.shape), strides, 0, d, array)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A 0-d tensor holding ``s`` (default dtype, as ``torch.scalar_tensor``)."""
    return full((), s, dtype=dtype or dt.get_default_dtype(), device=device, requires_grad=requires_grad)


def to_numpy(t: Tensor, force: bool = False) -> np.ndarray:
    """The tensor as a host array: shares memory on the CPU; ``force`` allows copies (and grad tensors)."""
    if not force:
        if t.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if t.device.type != "cpu":
            raise TypeError(f"can't convert {t.device} device type tensor to numpy. Use Tensor.cpu() to copy "
                            f"the tensor to host memory first.")
    if tls.include & ~tls.exclude & Tracer.mask:  # traced code reads data (.item(), bool()): a trace bakes it in
        from ..jit.tracer import note_data_read  # imported late: core.jit sits above the ops

        note_data_read(t)
    if tls.recording is not None:  # a whole-step capture: Python reads data a replay would not read again
        from ..dispatch.capture import note_host_read

        note_host_read(f"{t.dtype.name} tensor of shape {tuple(t._shape)} to the host")
    return t._storage.backend.to_host(t)


def _rebuild_tensor(array, device, requires_grad):
    return tensor(array, device=device, requires_grad=requires_grad)


def is_floating_point(input: Tensor) -> bool:
    """Whether ``input``'s dtype is floating (``torch.is_floating_point``)."""
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:
    """Whether ``input``'s dtype is complex."""
    return input.is_complex()


def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype is signed: not bool nor an unsigned integer type (``torch.is_signed``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_signed(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input.dtype.is_signed


def is_nonzero(input: Tensor) -> bool:
    """Whether a single-element tensor is non-zero (``torch.is_nonzero``)."""
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous" if input.numel()
                           else "Boolean value of Tensor with no values is ambiguous")
    return builtins.bool(input.item())


def numel(input: Tensor) -> int:
    """Number of elements (``torch.numel``)."""
    return input.numel()


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a core Tensor (``torch.is_tensor``)."""
    return isinstance(obj, Tensor)


# -- the primitive writes ------------------------------------------------------------------------

def _fill_meta(self, value):
    if not isinstance(self, Tensor):
        raise TypeError(f"fill_(): argument 'self' must be Tensor, not {type(self).__name__}")
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{len(value._shape)} dimensions.")
    elif value.__class__ not in _PLAIN_NUMBERS and not isinstance(value, (numbers.Number, np.generic)):
        raise TypeError(f"fill_(): argument 'value' must be a number, not {type(value).__name__}")
    return TensorSpec(self._shape, self.dtype, self._storage.device)


_PLAIN_NUMBERS = frozenset((int, float, bool, complex))  # numbers.Number, checked without the abstract-class machinery


fill_op = define("fill_", meta=_fill_meta, primitive=True, inplace=True,
                 doc="Write one value into every element of self (through views).")


def fill_(self: Tensor, value) -> Tensor:
    """Fill ``self`` with ``value`` in place."""
    _fill_fresh(self, value)
    self._storage.version += 1
    return self


def _fill_fresh(self: Tensor, value) -> Tensor:
    """Fill a tensor nobody has seen yet (factories): no version bump, so new tensors start at version 0."""
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{len(value._shape)} dimensions.")
        value = value.item()
    if isinstance(value, (complex, np.complexfloating)) and self.dtype.category < dt._COMPLEX:
        if value.imag != 0:  # PyTorch's overflow check for a complex scalar written into a real dtype
            raise RuntimeError(f"fill_(): value cannot be converted to type {self.dtype.name} without overflow")
        value = value.real
    _check_fits("fill_", value, self.dtype)
    fill_op(self, value)
    return self


def _check_fits(op: str, value, d) -> None:
    """PyTorch refuses scalars that overflow the destination dtype."""
    if d.category == 1 and isinstance(value, numbers.Real) and not isinstance(value, builtins.bool):
        info = np.iinfo(d.numpy)
        if math.isfinite(value) and not info.min <= int(value) <= info.max or not math.isfinite(value):
            raise RuntimeError(f"{op}(): value cannot be converted to type {d.name} without overflow")
    elif d.category == 2 and isinstance(value, numbers.Real) and math.isfinite(value) and \
            abs(value) > dt.finfo(d).max:
        raise RuntimeError(f"{op}(): value cannot be converted to type {d.name} without overflow")


def zero_(self: Tensor) -> Tensor:
    """Fill ``self`` with zeros in place."""
    return fill_(self, 0)


def _copy_meta(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src._shape != self._shape:
        target = broadcast_shapes(self._shape, src._shape, op="copy_")
        if target != self._shape:
            raise op_error(RuntimeError, "copy_", f"the source of shape {list(src._shape)} cannot be broadcast "
                           f"to the destination of shape {list(self._shape)}", self, src)
    return TensorSpec(self._shape, self.dtype, self._storage.device)


copy_op = define("copy_", meta=_copy_meta, primitive=True, inplace=True,
                 doc="Copy src (same device, broadcastable, any dtype) into self, casting.")


def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` into ``self`` in place, broadcasting and casting; ``src`` may be on another device."""
    if isinstance(src, Tensor) and src._storage.device != self._storage.device:
        src = to_copy_op(src, device=self._storage.device)  # recorded: autograd and the JIT see the move
    _check_overlap(self, src)
    copy_op(self, src, non_blocking)
    self._storage.version += 1
    return self


def _check_overlap(dst: Tensor, src) -> None:
    """PyTorch refuses writes where one memory location is written twice or read after being overwritten."""
    if any(st == 0 and n > 1 for n, st in zip(dst._shape, dst._stride)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                           "memory location. Please clone() the tensor before performing the operation.")
    if not isinstance(src, Tensor) or src._storage is not dst._storage or not dst.numel() or not src.numel():
        return
    if _same_elements(src, dst):
        return  # the same elements: copying onto itself is harmless
    if dst.is_contiguous() and src.is_contiguous():
        d0, d1 = dst._offset, dst._offset + dst.numel()
        s0, s1 = src._offset, src._offset + src.numel()
        if d0 < s1 and s0 < d1:
            raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                               "refer to a single memory location. Please clone() the tensor before performing the "
                               "operation.")


def _same_elements(a: Tensor, b: Tensor) -> bool:
    """Whether two views of one storage address the same elements (strides of size-1 dims do not matter)."""
    if a._offset != b._offset or a._shape != b._shape:
        return False
    return all(sa == sb for n, sa, sb in zip(a._shape, a._stride, b._stride) if n > 1)


def _transfer(t: Tensor, dev: _device) -> Tensor:
    """A contiguous copy of ``t`` on another device: the source runtime's to_host, the destination's from_host."""
    if dev.type == "meta":  # no data to carry: only the shape and dtype move
        return allocate_raw(t._shape, t.dtype, dev)
    if t.device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    host = np.asarray(t._storage.backend.to_host(t), order="C")
    if (dev.type != "cpu" or t.device.type == "cpu") and (host.base is not None or dev.type == "cpu"):
        host = host.copy()
    return _from_host(host, t.dtype, dev)


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy of ``input`` with its own storage, laid out as ``memory_format`` says (``torch.clone``).

    Unlike PyTorch, whose default is ``preserve_format``, no ``memory_format`` gives a contiguous copy: core's
    own ops rely on that; ``preserve_format`` keeps ``input``'s layout when it is dense."""
    out = allocate(input._shape, input.dtype, input.device)
    if memory_format is not None:
        out = _laid_out("clone", out, memory_format, input)
    copy_op(out, input, False)  # a fresh tensor: no version bump
    return out


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """``input`` if it is laid out densely in ``memory_format`` (row-major by default), else a copy that is
    (``torch.Tensor.contiguous``)."""
    memory_format = contiguous_format if memory_format is None else memory_format
    return input if input.is_contiguous(memory_format) else clone(input, memory_format=memory_format)


def _to_copy_meta(self, dtype=None, device=None, non_blocking=False):
    here = self._storage.device
    return TensorSpec(self._shape, self.dtype if dtype is None else dtype,
                      here if device is None or device is here else resolve_device(device))


def _to_copy_kernel(self: Tensor, dtype=None, device=None, non_blocking=False) -> Tensor:
    """The device-agnostic kernel of ``_to_copy``: a cast on the device that supports it, a move through host memory.

    The key set holds only the source's backend key (``device`` is no tensor), so this one kernel serves every
    pair of devices: the source backend's runtime copies out, the destination's copies in.
    """
    d = self.dtype if dtype is None else dtype
    here = self._storage.device
    dev = here if device is None or device is here else resolve_device(device)
    if dev is here:
        out = allocate_raw(self._shape, d, dev)
        copy_op(out, self, False)
        return out
    if d is not self.dtype and not runtime_for(dev.type).supports_dtype(self.dtype):
        return _transfer(_to_copy_kernel(self, dtype=d), dev)  # e.g. float64 -> float32 onto a float32-only device
    moved = _transfer(self, dev)
    return moved if d is self.dtype else _to_copy_kernel(moved, dtype=d)


to_copy_op = define("_to_copy", meta=_to_copy_meta, default=_to_copy_kernel,
                    doc="A copy of self converted to dtype and/or moved to device (torch._to_copy); "
                        "differentiable across devices.")


def to_copy(t: Tensor, device=None, dtype=None, non_blocking=False, copy=False) -> Tensor:
    """What ``Tensor.to`` does: ``t`` itself when nothing changes and ``copy`` is false, else ``_to_copy``."""
    here = t._storage.device
    dev = here if device is None else resolve_device(device)
    d = t.dtype if dtype is None else _check_dtype("to", dtype)
    if dev is here and d is t.dtype and not copy:
        return t
    return to_copy_op(t, dtype=d, device=dev, non_blocking=non_blocking)


def _resize_(self: Tensor, *size) -> Tensor:
    """Give ``self`` the shape ``size`` in place, contiguous, reallocating when its storage is too small (the new
    elements are uninitialised) (``torch.Tensor.resize_``)."""
    shape = size_args("resize_", size)
    n = 1
    for s in shape:
        n *= s
    if n * self.dtype.itemsize + self._offset * self.dtype.itemsize > self._storage.nbytes:
        fresh = allocate_raw(shape, self.dtype, self.device)
        self._storage, self._offset = fresh._storage, 0
    self._shape, self._stride, self._np = shape, contiguous_strides(shape), None
    return self


METHODS = {"fill_": fill_, "zero_": zero_, "copy_": copy_, "clone": clone, "contiguous": contiguous,
           "is_signed": is_signed,
           "new_empty": documented(
               "An uninitialised tensor of ``size`` with self's dtype and device unless given "
               "(``torch.Tensor.new_empty``).",
               lambda self, *size, dtype=None, device=None, requires_grad=False: empty(
                   *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)),
           "new_zeros": documented(
               "Zeros of ``size`` with self's dtype and device unless given (``torch.Tensor.new_zeros``).",
               lambda self, *size, dtype=None, device=None, requires_grad=False: zeros(
                   *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)),
           "new_ones": documented(
               "Ones of ``size`` with self's dtype and device unless given (``torch.Tensor.new_ones``).",
               lambda self, *size, dtype=None, device=None, requires_grad=False: ones(
                   *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)),
           "new_full": documented(
               "``size`` filled with ``fill_value``, with self's dtype and device unless given "
               "(``torch.Tensor.new_full``).",
               lambda self, size, fill_value, *, dtype=None, device=None, requires_grad=False: full(
                   size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                   requires_grad=requires_grad)),
           "new_tensor": documented(
               "A tensor of ``data`` with self's dtype and device unless given (``torch.Tensor.new_tensor``).",
               lambda self, data, *, dtype=None, device=None, requires_grad=False: tensor(
                   data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)),
           "resize_": _resize_}
__all__ += ["fill_", "zero_", "copy_", "contiguous", "to_copy", "to_numpy", "resolve_device",
            "Size"]
