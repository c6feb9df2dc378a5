"""Indexing ops: ``t[index]``, ``t[index] = value``, gather/scatter, the index_*/masked_* families, nonzero, take.

Basic indices (ints, slices, None, Ellipsis, Python bools) become view ops over
the same storage; advanced indices (integer and boolean tensors, lists, arrays)
go to two primitives, ``index`` and ``index_put_``, with PyTorch's (NumPy's)
placement rule for the broadcast index dims. Every index value is checked
against its dimension before a kernel runs (``_out_of_range``), so kernels
never see an out-of-range index.

Primitives (the backend's to-do list): ``index``, ``index_put_``, ``gather``,
``scatter_`` (assign or reduce sum/prod/amax/amin) and ``nonzero``; the rest
are composites of those and of the view/elementwise ops.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .. import dtypes as dt
from ..dispatch import TensorSpec, define
from ..dispatch.capture import launch as capture_launch
from ..errors import op_error
from ..tensor import Tensor
from ._util import broadcast_shapes, finish_out, wrap_dim
from .creation import clone, copy_, fill_, full, tensor, to_numpy
from .elementwise import clamp, div, floor_divide, mul, where
from .view import _view_kernel, alias, expand, reshape, select, squeeze, unbind, unsqueeze

__all__ = ["getitem", "setitem", "index_put", "index_put_", "gather", "scatter", "scatter_add", "scatter_reduce",
           "index_select", "index_add", "index_copy", "index_fill", "masked_fill", "masked_select",
           "masked_scatter", "nonzero", "argwhere", "take", "take_along_dim", "put"]

_INDEX_INTS = (dt.int64, dt.int32)
_SCALARS = (numbers.Number, np.generic)


# -- index validation -------------------------------------------------------------------------------

def _out_of_range(index: Tensor, low: int, high: int):
    """The first value of ``index`` (row-major) outside ``[low, high)``, or None when all are inside.

    Reads the values on the host: a view on the CPU, a copy from other devices.
    """
    if index.numel() == 0 or index._storage.device.type == "meta":
        return None
    values = to_numpy(index, force=True)
    if values.min() >= low and values.max() < high:
        return None
    return int(values[(values < low) | (values >= high)].flat[0])


def _raise_out_of_range(index: Tensor, low: int, high: int, exc, message: str) -> None:
    bad = _out_of_range(index, low, high)
    if bad is not None:
        raise exc(message.format(bad=bad))


def _check_range(index: Tensor, low: int, high: int, exc, message: str) -> None:
    """Raise ``exc(message)`` (``{bad}``: the first value outside) unless every value of ``index`` is in ``[low,
    high)``. A whole-step capture records the check as a call of its own, so every replay checks its indices."""
    capture_launch("index bounds check", _raise_out_of_range, index, low, high, exc, message)


def _check_dim_index(index: Tensor, size: int, dim: int, exc=IndexError, negative: bool = True,
                     prefix: str = "") -> None:
    """PyTorch's "index 5 is out of bounds for dimension 0 with size 3" unless every value fits."""
    _check_range(index, -size if negative else 0, size, exc,
                 f"{prefix}index {{bad}} is out of bounds for dimension {dim} with size {size}")


def _check_index_dtype(op: str, index, allowed=_INDEX_INTS, exc=RuntimeError, what: str = "") -> None:
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype not in allowed:
        names = " or ".join(d.name for d in allowed)
        raise exc(what or f"{op}(): Expected dtype {names} for index, but got {index.dtype.name}")


def _long(index: Tensor, device) -> Tensor:
    """``index`` as int64 on ``device`` (kernels get int64 indices only)."""
    if index.dtype is not dt.int64:
        index = index.to(dt.int64)
    return index if index._storage.device == device else index.to(device)


def _ensure_dim(n: int) -> int:
    return n if n else 1  # PyTorch's ensure_nonempty_dim: a 0-d tensor counts as 1-d in gather/scatter


def _ensure_size(t: Tensor, d: int) -> int:
    return t._shape[d] if t._shape else 1


# -- the advanced-indexing primitives ---------------------------------------------------------------

def _indexed_shape(op: str, input: Tensor, indices) -> tuple:
    """Shape of ``input[indices]``: broadcast index dims in place when adjacent, else in front (NumPy's rule)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}(): argument 'indices' must be a tuple of Tensors or None")
    n = len(input._shape)
    if len(indices) > n:
        raise IndexError(f"too many indices for tensor of dimension {n} (got {len(indices)})")
    positions = []
    for d, index in enumerate(indices):
        if index is None:
            continue
        if not isinstance(index, Tensor) or index.dtype is not dt.int64:
            raise IndexError(f"{op}(): indices must be None or int64 tensors (bool masks and int32 are converted "
                             f"by the front-end), got {getattr(index, 'dtype', type(index).__name__)}")
        if index._storage.device != input._storage.device:
            raise op_error(RuntimeError, op, "indices must be on the device of the indexed tensor", input, index)
        size = input._shape[d]
        if size == 0 and index.numel():
            raise IndexError("index is out of bounds for dimension with size 0")
        _check_dim_index(index, size, len(positions))  # PyTorch numbers the index tensors, not the dims
        positions.append(d)
    if not positions:
        raise IndexError(f"{op}(): expected at least one index tensor")
    tensors = [indices[d] for d in positions]
    try:
        shape = broadcast_shapes(*(t._shape for t in tensors))
    except RuntimeError:
        listed = ", ".join(str(list(t._shape)) for t in tensors)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"{listed}") from None
    rest = [input._shape[d] for d in range(n) if d not in positions]
    if positions[-1] - positions[0] + 1 == len(positions):
        first = positions[0]
        return tuple(input._shape[:first]) + shape + tuple(input._shape[positions[-1] + 1:])
    return shape + tuple(rest)


def _index_meta(input, indices):
    return TensorSpec(_indexed_shape("index", input, indices), input.dtype, input._storage.device)


_index_op = define("index", meta=_index_meta, primitive=True, doc=(
    "input[indices] for a tuple of None (whole dim) or int64 index tensors, one per leading dim, on input's "
    "device and validated in [-size, size) (negative values count from the end). The index tensors broadcast "
    "together; their dims replace the indexed dims when the tensors are adjacent, else they come first "
    "(NumPy's rule). At least one entry is a tensor. Returns a new contiguous tensor."))


def _index_put_meta(self, indices, values, accumulate=False):
    shape = _indexed_shape("index_put_", self, indices)
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' must be Tensor, not {type(values).__name__}")
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{dt.legacy_name(self.dtype)} for the destination and "
                           f"{dt.legacy_name(values.dtype)} for the source.")
    if values._storage.device != self._storage.device:
        raise op_error(RuntimeError, "index_put_", "values must be on the device of self", self, values)
    if values._shape != shape:
        try:
            ok = broadcast_shapes(shape, values._shape) == shape
        except RuntimeError:
            ok = False
        if not ok:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(values._shape)} cannot be broadcast "
                               f"to indexing result of shape {list(shape)}")
    return TensorSpec(self._shape, self.dtype, self._storage.device)


_index_put_op = define("index_put_", meta=_index_put_meta, primitive=True, inplace=True, doc=(
    "self[indices] = values (or += when accumulate, summing duplicates), in place; indices as for 'index'; "
    "values has self's dtype and broadcasts to the shape of self[indices]. Returns self."))


# -- t[index] and t[index] = value ----------------------------------------------------------------

def _as_tuple(index) -> tuple:
    """PyTorch's (NumPy's legacy) rule: a short list holding a sequence, slice, None or ... is a tuple."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and len(index) < 32 and any(
            isinstance(x, (Tensor, list, tuple, slice, np.ndarray)) or x is None or x is Ellipsis for x in index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; use x[tuple(seq)] "
                      "instead of x[seq]", UserWarning, stacklevel=3)
        return tuple(index)
    return (index,)


def _to_index_tensor(entry, device) -> Tensor:
    """A list or array index as a tensor on ``device`` (an empty list is an empty int64 index)."""
    if isinstance(entry, np.ndarray):
        array = entry
    else:
        try:
            array = np.asarray(entry)
        except ValueError:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             "valid indices (got a ragged list)") from None
        if array.size == 0:
            array = array.astype(np.int64)
    if array.dtype.kind in "iu" and array.dtype != np.uint8:
        array = array.astype(np.int64)
    elif array.dtype.kind not in "bu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return tensor(array, device=device)


def _classify(t: Tensor, entries: tuple) -> tuple:
    """Each entry as (kind, value), lists/arrays made tensors; the dims they consume; whether any is advanced."""
    items, consumed, advanced, seen_ellipsis, bools = [], 0, False, False, 0
    for entry in entries:
        if entry is None:
            items.append(("none", None))
        elif entry is Ellipsis:
            if seen_ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            items.append(("ellipsis", None))
        elif isinstance(entry, (bool, np.bool_)):
            items.append(("bool", bool(entry)))
            bools += 1
        elif isinstance(entry, slice):
            items.append(("slice", entry))
            consumed += 1
        elif isinstance(entry, (numbers.Integral, np.integer)):
            items.append(("int", int(entry)))
            consumed += 1
        else:
            if not isinstance(entry, Tensor):
                if isinstance(entry, (list, tuple, np.ndarray)):
                    entry = _to_index_tensor(entry, t._storage.device)
                elif hasattr(entry, "__index__"):
                    items.append(("int", entry.__index__()))
                    consumed += 1
                    continue
                else:
                    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                     f"Variables are valid indices (got {type(entry).__name__})")
            d = entry.dtype
            if d is dt.uint8:
                warnings.warn("indexing with dtype core.uint8 is now deprecated, please use a dtype core.bool "
                              "instead.", UserWarning, stacklevel=4)
                entry, d = entry.to(dt.bool), dt.bool
            if d is dt.bool:
                items.append(("mask", entry))
                consumed += entry.dim()
                advanced = True
            elif d in _INDEX_INTS:
                if entry.dim() == 0:
                    items.append(("int", int(entry.item())))  # PyTorch selects: a view, like a Python int
                else:
                    items.append(("tensor", entry))
                    advanced = True
                consumed += 1
            else:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if consumed > t.dim():
        if t.dim() == 0 and any(k == "int" for k, _ in items):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python to convert a 0-dim "
                             "tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {t.dim()}")
    # a lone Python bool is a view; several broadcast together as indices, as PyTorch's do
    return items, consumed, advanced or bools > 1


def _bool_index(value: bool, device) -> Tensor:
    """The index a scalar bool becomes among advanced indices: [0] (True) or [] (False) on a new size-1 dim."""
    return tensor(np.zeros(1 if value else 0, np.int64), device=device)


def _mask_indices(mask: Tensor) -> tuple:
    """One int64 index tensor per dim of a bool ``mask`` (its nonzero positions)."""
    return unbind(nonzero(mask), 1)


def _apply_index(t: Tensor, index) -> tuple:
    """``t`` narrowed by the basic indices (a view) and, if any, the advanced indices left to apply to it."""
    items, consumed, advanced = _classify(t, _as_tuple(index))
    device = t._storage.device
    result, indices, dim, real_dim = t, [], 0, 0
    for kind, value in items:
        if kind == "int":
            size = result._shape[dim]
            if value < -size or value >= size:
                raise IndexError(f"index {value} is out of bounds for dimension {real_dim} with size {size}")
            result = select(result, dim, value)
            real_dim += 1
        elif kind == "slice":
            result = _slice_dim(result, dim, value)
            indices.append(None)
            dim += 1
            real_dim += 1
        elif kind == "none":
            result = unsqueeze(result, dim)
            indices.append(None)
            dim += 1
        elif kind == "ellipsis":
            skip = t.dim() - consumed
            indices.extend([None] * skip)
            dim += skip
            real_dim += skip
        elif kind == "bool":
            result = unsqueeze(result, dim)
            if advanced:
                indices.append(_bool_index(value, device))
            else:  # no tensor index anywhere: a view (PyTorch copies here)
                if not value:
                    result = _slice(result, dim, 0, 0, 1)
                indices.append(None)
            dim += 1
        elif kind == "tensor":
            indices.append(_long(value, device))
            dim += 1
            real_dim += 1
        elif kind == "mask":
            k = value.dim()
            if k == 0:
                result = unsqueeze(result, dim)
                indices.append(_bool_index(bool(value.item()), device))
                dim += 1
                continue
            for j in range(k):
                if value._shape[j] != result._shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(value._shape)} at index {j} does not match the "
                                     f"shape of the indexed tensor {list(result._shape)} at index {dim + j}")
            indices.extend(_mask_indices(value if value._storage.device == device else value.to(device)))
            dim += k
            real_dim += k
    if not advanced:
        return (alias(result) if result is t else result), None
    while indices and indices[-1] is None:
        indices.pop()
    return result, tuple(indices)


def _slice_geometry(input, dim, start, stop, step):
    """Elements ``start:stop:step`` of dim ``dim`` (``start``/``stop`` already clamped to the size, ``step > 0``)."""
    shape, stride = list(input._shape), list(input._stride)
    offset = input._offset + start * stride[dim]
    shape[dim] = max(0, -(-(stop - start) // step))
    stride[dim] *= step
    return tuple(shape), tuple(stride), offset


_slice = _view_kernel("slice", _slice_geometry)


def _slice_dim(t: Tensor, dim: int, s: slice) -> Tensor:
    step = 1 if s.step is None else s.step.__index__()
    if step <= 0:
        raise ValueError("step must be greater than zero")
    size = t._shape[dim]
    start = None if s.start is None else s.start.__index__()
    stop = None if s.stop is None else s.stop.__index__()
    start, stop, _ = slice(start, stop, step).indices(size)
    if start == 0 and stop >= size and step == 1:
        return t
    return _slice(t, dim, start, max(stop, start), step)


def getitem(input: Tensor, index) -> Tensor:
    """``input[index]`` (``Tensor.__getitem__``): a view for basic indices, a copy when a tensor index is present."""
    result, indices = _apply_index(input, index)
    return result if indices is None else _index_op(result, indices)


def _value_tensor(value, like: Tensor) -> Tensor:
    """An assigned value as a tensor of ``like``'s dtype and device."""
    if isinstance(value, Tensor):
        return value.to(device=like._storage.device, dtype=like.dtype)
    return tensor(value, dtype=like.dtype, device=like._storage.device)


def _strip_leading_ones(value: Tensor) -> Tensor:
    """Drop leading size-1 dims, as PyTorch does to a value assigned through an index."""
    k = 0
    while k < value.dim() and value._shape[k] == 1:
        k += 1
    return squeeze(value, tuple(range(k))) if k else value


def setitem(input: Tensor, index, value) -> None:
    """``input[index] = value`` (``Tensor.__setitem__``): copy into the view, or ``index_put_`` for tensor indices."""
    target, indices = _apply_index(input, index)
    if indices is None:
        if isinstance(value, _SCALARS):
            fill_(target, value)
        elif isinstance(value, Tensor):
            copy_(target, _strip_leading_ones(value))
        else:
            copy_(target, _value_tensor(value, input))
        return
    if isinstance(value, _SCALARS):
        values = full((), value, dtype=input.dtype, device=input._storage.device)
    else:
        if isinstance(value, Tensor) and value.dtype is not input.dtype:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                               f"{dt.legacy_name(input.dtype)} for the destination and "
                               f"{dt.legacy_name(value.dtype)} for the source.")
        values = _strip_leading_ones(_value_tensor(value, input))
    _index_put_op(target, indices, values, False)
    input._storage.version += 1


# -- index_put / take / put -----------------------------------------------------------------------

def _tensor_indices(self: Tensor, indices) -> tuple:
    """User ``indices`` (tensors or None; bool masks expand to one index per dim) as the primitive wants them."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put_(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    out, device = [], self._storage.device
    for index in indices:
        if index is None:
            out.append(None)
            continue
        if not isinstance(index, Tensor):
            index = _to_index_tensor(index, device)
        if index.dtype in (dt.bool, dt.uint8):
            out.extend(_mask_indices(index.to(dt.bool).to(device)))
        elif index.dtype in _INDEX_INTS:
            out.append(_long(index, device))
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return tuple(out)


def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """``input[indices] = values`` in place, or ``+=`` with ``accumulate`` (``Tensor.index_put_``)."""
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' must be Tensor, not {type(values).__name__}")
    if values._storage.device != input._storage.device:
        values = values.to(input._storage.device)
    _index_put_op(input, _tensor_indices(input, indices), values, bool(accumulate))
    input._storage.version += 1
    return input


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place :func:`index_put_` (``torch.index_put``)."""
    return index_put_(clone(input), indices, values, accumulate)


def _check_take_index(op: str, input: Tensor, index) -> None:
    _check_index_dtype(op, index, (dt.int64,), what=f"{op}(): Expected a long tensor for index, but got "
                       f"{dt.legacy_name(index.dtype) if isinstance(index, Tensor) else ''}")
    n = input.numel()
    _check_range(index, -n, n, IndexError, f"out of range: tried to access index {{bad}} on a tensor of {n} elements.")


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened ``input`` at ``index`` (negative counts from the end), shaped like ``index``."""
    _check_take_index("take", input, index)
    return _index_op(reshape(input, (-1,)), (_long(index, input._storage.device),))


def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Write ``source`` into the flattened ``input`` at ``index`` in place (``Tensor.put_``)."""
    _check_take_index("put_", input, index)
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    flat_index = reshape(_long(index, input._storage.device), (-1,))
    values = reshape(source, (-1,))
    if input.is_contiguous():
        index_put_(reshape(input, (-1,)), (flat_index,), values, accumulate)
    else:  # no flat view exists: work on a contiguous copy and write it back
        work = index_put_(reshape(clone(input), (-1,)), (flat_index,), values, accumulate)
        copy_(input, reshape(work, input._shape))
    return input


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place :func:`put_` (``torch.put``)."""
    return put_(clone(input), index, source, accumulate)


# -- index_select / index_add / index_copy / index_fill --------------------------------------------

def _dim_index(input: Tensor, dim: int, index: Tensor) -> tuple:
    """The ``index`` primitive's indices that pick ``index`` (1-d) along ``dim``."""
    return (None,) * dim + (reshape(_long(index, input._storage.device), (-1,)),)


def _vector_index(op: str, index: Tensor, allowed) -> None:
    _check_index_dtype(op, index, allowed)
    if index.dim() > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{dt.legacy_name(index.dtype)} and size: {list(index._shape)}")


def index_select(input: Tensor, dim: int, index: Tensor, *, out=None) -> Tensor:
    """Slices of ``input`` along ``dim`` at the positions in the vector ``index`` (``torch.index_select``)."""
    _vector_index("index_select", index, _INDEX_INTS)
    dim = wrap_dim(dim, input.dim(), "index_select")
    size = _ensure_size(input, dim)
    _check_range(index, 0, size, IndexError, "index out of range in self")
    if input.dim() == 0:
        result = reshape(_index_op(reshape(input, (1,)), _dim_index(input, 0, index)), ())
    else:
        result = _index_op(input, _dim_index(input, dim, index))
    return finish_out("index_select", result, out)


def _check_source(op: str, input: Tensor, dim: int, index: Tensor, source: Tensor) -> None:
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not {type(source).__name__}")
    n = index.numel()
    source_n = _ensure_size(source, dim) if source.dim() == input.dim() else -1
    if source_n != n:
        raise RuntimeError(f"{op}(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({source_n if source_n >= 0 else list(source._shape)}), for dim: {dim}")
    for d in range(input.dim()):
        if d != dim and source._shape[d] != input._shape[d]:
            raise RuntimeError(f"{op}(): source {list(source._shape)} and self {list(input._shape)} must have the "
                               f"same size apart from dimension {dim}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): self ({dt.legacy_name(input.dtype)}) and source "
                           f"({dt.legacy_name(source.dtype)}) must have the same scalar type")


def _put_along(input: Tensor, dim: int, index: Tensor, values: Tensor, accumulate: bool) -> Tensor:
    if input.dim() == 0:
        _index_put_op(reshape(input, (1,)), _dim_index(input, 0, index), reshape(values, (-1,)), accumulate)
    else:
        _index_put_op(input, _dim_index(input, dim, index), values, accumulate)
    input._storage.version += 1
    return input


def index_add_(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """``input[..., index[i], ...] += alpha * source[..., i, ...]`` along ``dim``, in place (``Tensor.index_add_``)."""
    _vector_index("index_add_", index, _INDEX_INTS)
    dim = wrap_dim(dim, input.dim(), "index_add_")
    _check_source("index_add_", input, dim, index, source)
    _check_dim_index(index, _ensure_size(input, dim), dim, RuntimeError, negative=False)
    if alpha != 1:
        source = mul(source, alpha).to(input.dtype)
    return _put_along(input, dim, index, source, True)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1, out=None) -> Tensor:
    """Out-of-place :func:`index_add_` (``torch.index_add``)."""
    return finish_out("index_add", index_add_(clone(input), dim, index, source, alpha=alpha), out)


def index_copy_(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """Copy ``source``'s slices into ``input`` along ``dim`` at ``index``, in place (``Tensor.index_copy_``)."""
    _check_index_dtype("index_copy_", index, (dt.int64,), what=f"index_copy_(): Expected a long tensor for index, "
                       f"but got {dt.legacy_name(index.dtype) if isinstance(index, Tensor) else ''}")
    _vector_index("index_copy_", index, (dt.int64,))
    dim = wrap_dim(dim, input.dim(), "index_copy_")
    _check_source("index_copy_", input, dim, index, source)
    _check_dim_index(index, _ensure_size(input, dim), dim, negative=False, prefix="index_copy_(): ")
    return _put_along(input, dim, index, source, False)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """Out-of-place :func:`index_copy_` (``torch.index_copy``)."""
    return index_copy_(clone(input), dim, index, source)


def _scalar_value(op: str, value, like: Tensor) -> Tensor:
    """A fill value (number or 0-d tensor) as a 0-d tensor of ``like``'s dtype and device."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        return value.to(device=like._storage.device, dtype=like.dtype)
    if not isinstance(value, _SCALARS):
        raise TypeError(f"{op}(): argument 'value' must be a number, not {type(value).__name__}")
    return full((), value, dtype=like.dtype, device=like._storage.device)


def index_fill_(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """Fill the slices of ``input`` along ``dim`` at ``index`` with ``value``, in place (``Tensor.index_fill_``)."""
    _check_index_dtype("index_fill_", index, (dt.int64,), IndexError, "index_fill_(): Expected dtype int64 for index.")
    _vector_index("index_fill_", index, (dt.int64,))
    dim = wrap_dim(dim, input.dim(), "index_fill_")
    _check_dim_index(index, _ensure_size(input, dim), dim)
    return _put_along(input, dim, index, _scalar_value("index_fill_", value, input), False)


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """Out-of-place :func:`index_fill_` (``torch.index_fill``)."""
    return index_fill_(clone(input), dim, index, value)


# -- gather / scatter -----------------------------------------------------------------------------

def _check_gather_shapes(op: str, input: Tensor, dim: int, index: Tensor, src: Tensor | None) -> None:
    if _ensure_dim(index.dim()) != _ensure_dim(input.dim()):
        name = "input" if src is None else "self"
        raise RuntimeError(f"Index tensor must have the same number of dimensions as {name} tensor")
    if src is not None and _ensure_dim(src.dim()) != _ensure_dim(index.dim()):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for d in range(index.dim()):
        too_big_self = d != dim and index._shape[d] > _ensure_size(input, d)
        too_big_src = src is not None and src.dim() and index._shape[d] > src._shape[d]
        if too_big_self or too_big_src:
            if src is None:
                raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index._shape)} to be "
                                   f"no larger than self {list(input._shape)} apart from dimension {dim}")
            raise RuntimeError(f"Expected index {list(index._shape)} to be no larger than self {list(input._shape)} "
                               f"apart from dimension {dim} and to be no larger size than src {list(src._shape)}")


def _gather_meta(input, dim, index):
    if not isinstance(input, Tensor):
        raise TypeError(f"gather(): argument 'input' must be Tensor, not {type(input).__name__}")
    _check_index_dtype("gather", index, (dt.int64,), what="gather(): Expected dtype int64 for index")
    dim = wrap_dim(dim, input.dim(), "gather")
    _check_gather_shapes("gather", input, dim, index, None)
    if index._storage.device != input._storage.device:
        raise op_error(RuntimeError, "gather", "index must be on the device of input", input, index)
    _check_dim_index(index, _ensure_size(input, dim), dim, RuntimeError, negative=False)
    return TensorSpec(index._shape, input.dtype, input._storage.device)


_gather_op = define("gather", meta=_gather_meta, primitive=True, doc=(
    "out[i][j][k] = input[index[i][j][k]][j][k] (for dim 0; likewise for any dim): out has index's shape; "
    "index is int64 with values in [0, input.size(dim)) and no larger than input in the other dims."))


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False, out=None) -> Tensor:
    """Values of ``input`` along ``dim`` picked by ``index`` (``torch.gather``)."""
    return finish_out("gather", _gather_op(input, dim, index), out)


_REDUCE_IDENTITY = {"sum": 0, "prod": 1}
_SCATTER_REDUCTIONS = (None, "sum", "prod", "amax", "amin")


def _scatter_meta(self, dim, index, src, reduce=None, include_self=True):
    if not isinstance(self, Tensor):
        raise TypeError(f"scatter(): argument 'self' must be Tensor, not {type(self).__name__}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter(): argument 'src' must be Tensor, not {type(src).__name__}")
    _check_index_dtype("scatter", index, (dt.int64,), what="scatter(): Expected dtype int64 for index")
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce not in _SCATTER_REDUCTIONS:
        raise RuntimeError(f"scatter_(): reduce must be one of {_SCATTER_REDUCTIONS}, got {reduce!r}")
    dim = wrap_dim(dim, self.dim(), "scatter")
    _check_gather_shapes("scatter", self, dim, index, src)
    if index._storage.device != self._storage.device or src._storage.device != self._storage.device:
        raise op_error(RuntimeError, "scatter", "index and src must be on the device of self", self, index, src)
    _check_dim_index(index, _ensure_size(self, dim), dim, RuntimeError, negative=False)
    return TensorSpec(self._shape, self.dtype, self._storage.device)


_scatter_op = define("scatter_", meta=_scatter_meta, primitive=True, inplace=True, doc=(
    "In place, for every position p of index (for dim 0): self[index[p]][p1][p2] = src[p] (reduce None; "
    "duplicates: any one wins) or combined with reduce 'sum', 'prod', 'amax' or 'amin' (include_self=False: "
    "the positions written start from the reduction's identity instead of self's value). index is int64 "
    "with values in [0, self.size(dim)), no larger than self apart from dim and no larger than src; src has "
    "self's dtype. Returns self."))


def _scatter_src(input: Tensor, index: Tensor, src, value) -> Tensor:
    if src is None:
        src = value
    if isinstance(src, Tensor):
        return src if src._storage.device == input._storage.device else src.to(input._storage.device)
    if src is None:
        raise TypeError("scatter(): expected a src tensor or a value")
    return expand(_scalar_value("scatter", src, input), index._shape)


def scatter_(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
    """Write ``src`` (a tensor or a number) into ``input`` at ``index`` along ``dim`` (``Tensor.scatter_``)."""
    modes = {None: None, "add": "sum", "multiply": "prod"}
    if reduce not in modes:
        raise RuntimeError("reduce argument must be either add or multiply.")
    _scatter_op(input, dim, index, _scatter_src(input, index, src, value), modes[reduce], True)
    input._storage.version += 1
    return input


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
    """Out-of-place :func:`scatter_` (``torch.scatter``)."""
    return scatter_(clone(input), dim, index, src, value=value, reduce=reduce)


def scatter_add_(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Add ``src`` into ``input`` at ``index`` along ``dim``, summing duplicates (``Tensor.scatter_add_``)."""
    _scatter_op(input, dim, index, _scatter_src(input, index, src, None), "sum", True)
    input._storage.version += 1
    return input


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Out-of-place :func:`scatter_add_` (``torch.scatter_add``)."""
    return scatter_add_(clone(input), dim, index, src)


def scatter_reduce_(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """Reduce ``src`` into ``input`` at ``index`` with sum/prod/mean/amax/amin (``Tensor.scatter_reduce_``)."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    src = _scatter_src(input, index, src, None)
    if reduce != "mean":
        _scatter_op(input, dim, index, src, reduce, bool(include_self))
        input._storage.version += 1
        return input
    # mean = sum / count, counting self when it is included; untouched positions divide by 1
    counts = full(input._shape, 1 if include_self else 0, dtype=input.dtype, device=input._storage.device)
    _scatter_op(counts, dim, index, full(src._shape, 1, dtype=input.dtype, device=input._storage.device), "sum", True)
    _scatter_op(input, dim, index, src, "sum", bool(include_self))
    counts = clamp(counts, min=1)
    copy_(input, div(input, counts) if input.dtype.category >= 2 else floor_divide(input, counts))
    return input


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Out-of-place :func:`scatter_reduce_` (``torch.scatter_reduce``)."""
    return scatter_reduce_(clone(input), dim, index, src, reduce, include_self=include_self)


def take_along_dim(input: Tensor, indices: Tensor, dim=None, *, out=None) -> Tensor:
    """``gather`` with ``input`` and ``indices`` broadcast apart from ``dim`` (``torch.take_along_dim``)."""
    if not isinstance(indices, Tensor) or indices.dtype is not dt.int64:
        got = dt.legacy_name(indices.dtype) if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(f"take_along_dim(): dtype of indices should be Long but got {got}")
    if dim is None:
        return finish_out("take_along_dim", gather(reshape(input, (-1,)), 0, reshape(indices, (-1,))), out)
    if input.dim() != indices.dim():
        raise RuntimeError(f"core.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.dim()} dimensions for input, and {indices.dim()} dimensions for indices")
    dim = wrap_dim(dim, input.dim(), "take_along_dim")
    shape_in, shape_ix = list(input._shape), list(indices._shape)
    shape_in[dim] = shape_ix[dim] = 1
    common = list(broadcast_shapes(tuple(shape_in), tuple(shape_ix), op="take_along_dim"))
    input_shape, index_shape = list(common), list(common)
    input_shape[dim], index_shape[dim] = input._shape[dim], indices._shape[dim]
    result = gather(expand(input, input_shape), dim, expand(indices, index_shape))
    return finish_out("take_along_dim", result, out)


# -- masks ----------------------------------------------------------------------------------------

def _check_mask(op: str, mask) -> None:
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask.dtype is not dt.bool:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype {mask.dtype.name}")


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``value`` where ``mask`` (broadcast) is true, else ``input`` (``torch.masked_fill``)."""
    _check_mask("masked_fill_", mask)
    return where(mask, _scalar_value("masked_fill_", value, input), input)


def masked_fill_(input: Tensor, mask: Tensor, value) -> Tensor:
    """In-place :func:`masked_fill`; ``mask`` must broadcast to ``input``'s shape (``Tensor.masked_fill_``)."""
    result = masked_fill(input, mask, value)
    if result._shape != input._shape:
        raise RuntimeError(f"output with shape {list(input._shape)} doesn't match the broadcast shape "
                           f"{list(result._shape)}")
    return copy_(input, result)


def masked_select(input: Tensor, mask: Tensor, *, out=None) -> Tensor:
    """The elements of ``input`` where ``mask`` is true, as a 1-d tensor (both broadcast; ``torch.masked_select``)."""
    if not isinstance(mask, Tensor) or mask.dtype is not dt.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(input._shape, mask._shape, op="masked_select")
    flat_input = reshape(expand(input, shape), (-1,))
    flat_mask = reshape(expand(mask.to(input._storage.device), shape), (-1,))
    return finish_out("masked_select", _index_op(flat_input, (select(nonzero(flat_mask), 1, 0),)), out)


def masked_scatter_(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Copy ``source``'s leading elements into ``input`` where ``mask`` is true (``Tensor.masked_scatter_``)."""
    if not isinstance(mask, Tensor) or mask.dtype is not dt.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{dt.legacy_name(mask.dtype) if isinstance(mask, Tensor) else type(mask).__name__}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{dt.legacy_name(input.dtype)} and {dt.legacy_name(source.dtype)}")
    mask = expand(mask.to(input._storage.device), input._shape)
    positions = reshape(nonzero(reshape(mask, (-1,))), (-1,))
    n = positions.numel()
    if source.numel() < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    values = reshape(source, (-1,))[:n]
    flat = reshape(input, (-1,)) if input.is_contiguous() else None
    if flat is not None:
        _index_put_op(flat, (positions,), values.to(input._storage.device), False)
        input._storage.version += 1
        return input
    work = reshape(clone(input), (-1,))
    _index_put_op(work, (positions,), values.to(input._storage.device), False)
    return copy_(input, reshape(work, input._shape))


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Out-of-place :func:`masked_scatter_`; ``input`` and ``mask`` broadcast (``torch.masked_scatter``)."""
    if isinstance(mask, Tensor):
        shape = broadcast_shapes(input._shape, mask._shape, op="masked_scatter")
        input = expand(input, shape)
    return masked_scatter_(clone(input), mask, source)


# -- nonzero --------------------------------------------------------------------------------------

def _nonzero_meta(input):
    if not isinstance(input, Tensor):
        raise TypeError(f"nonzero(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._storage.device.type == "meta":
        raise NotImplementedError("nonzero(): the output's size depends on the data, which meta tensors lack")
    return TensorSpec((None, input.dim()), dt.int64, input._storage.device)


_nonzero_op = define("nonzero", meta=_nonzero_meta, primitive=True, doc=(
    "The int64 coordinates of input's nonzero elements in row-major order, shape (count, input.dim()); the "
    "count is data-dependent, so the spec's first size is None and the kernel decides it."))


def nonzero(input: Tensor, *, out=None, as_tuple: bool = False):
    """Coordinates of the nonzero elements: an (n, ndim) tensor, or one 1-d tensor per dim (``torch.nonzero``)."""
    if as_tuple:
        result = _nonzero_op(input if input.dim() else reshape(input, (1,)))
        return unbind(result, 1)
    return finish_out("nonzero", _nonzero_op(input), out)


def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)`` (``torch.argwhere``)."""
    return _nonzero_op(input)


METHODS = {"index_put_": index_put_, "index_put": index_put, "gather": gather, "scatter_": scatter_,
           "scatter": scatter, "scatter_add_": scatter_add_, "scatter_add": scatter_add,
           "scatter_reduce_": scatter_reduce_, "scatter_reduce": scatter_reduce, "index_select": index_select,
           "index_add_": index_add_, "index_add": index_add, "index_copy_": index_copy_, "index_copy": index_copy,
           "index_fill_": index_fill_, "index_fill": index_fill, "masked_fill_": masked_fill_,
           "masked_fill": masked_fill, "masked_select": masked_select, "masked_scatter_": masked_scatter_,
           "masked_scatter": masked_scatter, "nonzero": nonzero, "argwhere": argwhere, "take": take,
           "take_along_dim": take_along_dim, "put_": put_, "put": put}
