"""Sorting ops: sort, argsort, topk, kthvalue, unique, searchsorted and friends.

The primitives a backend implements are ``sort`` (stable, NaN largest, as
PyTorch orders), ``searchsorted``, ``unique`` and ``unique_consecutive`` (the
last two have data-dependent output shapes: their meta functions give each
output's dtype and ``shape=None``). argsort, msort, topk, kthvalue and
bucketize are composites.
"""

from __future__ import annotations

import numbers

from .. import dtypes as dt
from ..dispatch import TensorSpec, define
from ..tensor import Tensor
from ._util import check_int_arg, common_device, exporter, finish_out, wrap_dim
from .creation import empty, tensor as _as_tensor, zeros
from .reduction import _finish_pair, return_type

__all__: list = []
METHODS: dict = {}

_sort_t, _topk_t, _kthvalue_t = (return_type(n, ("values", "indices")) for n in ("sort", "topk", "kthvalue"))


def _check_tensor(op: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")


_export = exporter(__all__, METHODS)


# -- sort and what is built on it ----------------------------------------------------------------------

def _sort_meta(input, dim, descending=False):
    _check_tensor("sort", input)
    device = input._storage.device
    return TensorSpec(input._shape, input.dtype, device), TensorSpec(input._shape, dt.int64, device)


_sort = define("sort", meta=_sort_meta, primitive=True,
               doc="stable sort along one normalised dim (0 on 0-d tensors), ascending or descending; NaN "
                   "counts as the largest value and equal elements keep their order; returns (values, indices)")


def sort(input, dim=-1, descending=False, *, stable=False, out=None):
    """``(values, indices)`` sorted along ``dim``; NaN sorts as the largest value (``torch.sort``).

    The sort is always stable, which satisfies ``stable=False`` too.
    """
    _check_tensor("sort", input)
    result = _sort_t(*_sort(input, wrap_dim(dim, input.ndim, "sort"), bool(descending)))
    return _finish_pair("sort", result, out)


def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort ``input`` along ``dim`` (``torch.argsort``)."""
    return sort(input, dim, descending, stable=stable).indices


def msort(input, *, out=None):
    """``input`` sorted along dim 0 (``torch.msort``)."""
    return finish_out("msort", sort(input, 0).values, out)


def _k_arg(op: str, input, k, dim):
    _check_tensor(op, input)
    k = check_int_arg(op, "k", k)
    d = wrap_dim(dim, input.ndim, op)
    return k, d, input._shape[d] if input._shape else 1


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):  # noqa: A002 - torch's name
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices (``torch.topk``)."""
    k, d, size = _k_arg("topk", input, k, dim)
    if k < 0 or k > size:
        raise RuntimeError(f"topk(): selected index k out of range (k = {k}, size of dim {d} = {size})")
    values, indices = _sort(input, d, bool(largest))
    if input._shape:
        values, indices = values.narrow(d, 0, k).contiguous(), indices.narrow(d, 0, k).contiguous()
    return _finish_pair("topk", _topk_t(values, indices), out)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest element (1-based) along ``dim`` and its index (``torch.kthvalue``)."""
    k, d, size = _k_arg("kthvalue", input, k, dim)
    if k < 1 or k > size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if input.numel() == 0:  # nothing to select from (and no view of an empty buffer at an offset)
        shape = tuple(1 if i == d else s for i, s in enumerate(input._shape) if keepdim or i != d)
        return _finish_pair("kthvalue", _kthvalue_t(empty(shape, dtype=input.dtype, device=input.device),
                                                    empty(shape, dtype=dt.int64, device=input.device)), out)
    values, indices = _sort(input, d, False)
    if input._shape:
        values, indices = values.select(d, k - 1), indices.select(d, k - 1)
        if keepdim:
            values, indices = values.unsqueeze(d), indices.unsqueeze(d)
    return _finish_pair("kthvalue", _kthvalue_t(values.contiguous(), indices.contiguous()), out)


for _fn in (sort, argsort, msort, topk, kthvalue):
    _export(_fn)


# -- unique --------------------------------------------------------------------------------------------

def _unique_meta(op: str):
    def meta(input, dim=None):
        _check_tensor(op, input)
        device = input._storage.device
        if device.type == "meta":
            raise NotImplementedError(f"{op}(): the output shape depends on the data, so it cannot run on the "
                                      f"meta device")
        if dim is not None:
            empty = [i for i, s in enumerate(input._shape) if s == 0 and i != dim]
            if empty:
                raise RuntimeError(f"{op}(): There are 0 sized dimensions, and they aren't selected, so unique "
                                   f"cannot be applied")
        inverse_shape = input._shape if dim is None else (input._shape[dim],)
        return (TensorSpec(None, input.dtype, device), TensorSpec(inverse_shape, dt.int64, device),
                TensorSpec(None, dt.int64, device))

    return meta


_UNIQUE_DOC = ("over the flattened input (dim None) or slices along one normalised dim; returns (values, "
               "inverse, counts): inverse maps each element (slice) to its position in values and has the "
               "input's shape (dim None) or the size of dim; NaNs are never equal")
_unique = define("unique", meta=_unique_meta("unique"), primitive=True,
                 doc="sorted distinct elements " + _UNIQUE_DOC)
_unique_consecutive = define("unique_consecutive", meta=_unique_meta("unique_consecutive"), primitive=True,
                             doc="the first of each run of equal consecutive elements " + _UNIQUE_DOC)


def _unique_result(op, input, sorted, return_inverse, return_counts, dim):
    _check_tensor(op, input)
    d = None if dim is None else wrap_dim(dim, input.ndim, op)
    if d is not None and not input._shape:
        d = None
    values, inverse, counts = (_unique if op == "unique" else _unique_consecutive)(input, d)
    if not return_inverse and not return_counts:
        return values
    return (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Sorted distinct elements (or slices along ``dim``), optionally with inverse and counts (``torch.unique``).

    The output is sorted even with ``sorted=False``, as PyTorch's CPU kernel does.
    """
    return _unique_result("unique", input, sorted, return_inverse, return_counts, dim)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``) (``torch.unique_consecutive``)."""
    return _unique_result("unique_consecutive", input, True, return_inverse, return_counts, dim)


_export(unique)
_export(unique_consecutive)


# -- searchsorted and bucketize --------------------------------------------------------------------

def _searchsorted_meta(sorted_sequence, values, right=False, sorter=None, out_int32=False):
    for name, t in (("sorted_sequence", sorted_sequence), ("input", values)):
        if not isinstance(t, Tensor):
            raise TypeError(f"searchsorted(): argument '{name}' must be Tensor, not {type(t).__name__}")
    seq_shape, val_shape = sorted_sequence._shape, values._shape
    if not seq_shape:
        raise RuntimeError("searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if len(seq_shape) > 1 and seq_shape[:-1] != val_shape[:-1]:
        raise RuntimeError(f"searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                           f"of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(seq_shape)} and input value tensor {list(val_shape)}")
    if sorter is not None:
        if not isinstance(sorter, Tensor) or sorter._shape != seq_shape or sorter.dtype is not dt.int64:
            raise RuntimeError("searchsorted(): sorter must be an int64 tensor of the same shape as the boundaries")
    device = common_device("searchsorted", [t for t in (sorted_sequence, values, sorter) if t is not None])
    compute = dt.promote_types(sorted_sequence.dtype, values.dtype)
    return TensorSpec(val_shape, dt.int32 if out_int32 else dt.int64, device, compute)


_searchsorted = define("searchsorted", meta=_searchsorted_meta, primitive=True,
                       doc="insertion points of values into the last dim of sorted_sequence (1-D, or with the "
                           "leading dims of values), compared in spec.compute_dtype; right=True takes the last "
                           "valid point; sorter (optional) orders an unsorted sequence; NaN is the largest value")


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Indices where ``input`` would be inserted into ``sorted_sequence``'s last dim (``torch.searchsorted``)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("searchsorted(): side and right can't be set to opposites, got side of left while "
                               "right was True")
        right = side == "right"
    if not isinstance(input, Tensor) and isinstance(input, numbers.Number) and isinstance(sorted_sequence, Tensor):
        input = _as_tensor(input, device=sorted_sequence.device)
    result = _searchsorted(sorted_sequence, input, bool(right), sorter, bool(out_int32))
    return finish_out("searchsorted", result, out)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """Index of the bucket of each element given 1-D sorted ``boundaries`` (``torch.bucketize``)."""
    if isinstance(boundaries, Tensor) and boundaries.ndim != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return finish_out("bucketize", searchsorted(boundaries, input, out_int32=out_int32, right=right), out)


_export(searchsorted, method=False)
_export(bucketize, method=False)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` is in ``test_elements`` (either may be a scalar) (``torch.isin``)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments - got (elements and test_elements "
                        "both scalars); expected at least one Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(elements, Tensor):
        elements = _as_tensor(elements, device=like.device)
    if not isinstance(test_elements, Tensor):
        test_elements = _as_tensor(test_elements, device=like.device)
    common_device("isin", [elements, test_elements])
    compute = dt.promote_types(elements.dtype, test_elements.dtype)
    if test_elements.numel() == 0:
        found = zeros(elements.shape, dtype=dt.bool, device=elements.device)
    else:
        pool = sort(test_elements.reshape(-1).to(compute)).values
        values = elements.to(compute)
        position = searchsorted(pool, values.contiguous()).clamp(max=pool.numel() - 1)
        found = pool[position.reshape(-1)].reshape(values.shape) == values
    return found.logical_not() if invert else found


_export(isin, method=False)
