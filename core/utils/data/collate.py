"""Collation: merge a list of samples into a batch (``default_collate``) or only convert them (``default_convert``)."""

from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

from ... import dtypes as dt
from ...ops.creation import as_tensor, tensor
from ...ops.shape import stack
from ...tensor import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

# NumPy dtype strings of bytes, unicode and object arrays, which have no tensor counterpart
_STRING_OR_OBJECT = re.compile(r"[SaUO]")

_COLLATE_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def default_convert(data):
    """NumPy arrays and scalars to tensors, recursing into mappings and sequences (``default_convert``).

    What the DataLoader applies to each sample when automatic batching is off; tuples become lists as in PyTorch.
    """
    if isinstance(data, Tensor):
        return data
    if type(data).__module__ == "numpy" and not isinstance(data, (np.str_, np.bytes_)):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def collate(batch, *, collate_fn_map=None):
    """Merge samples by the type of ``batch[0]``: ``collate_fn_map`` first (exact type, then ``isinstance``), then
    mappings, namedtuples and sequences recursively (``torch.utils.data._utils.collate.collate``)."""
    elem = batch[0]
    if collate_fn_map is not None:
        fn = collate_fn_map.get(type(elem))
        if fn is None:
            fn = next((f for kind, f in collate_fn_map.items() if isinstance(elem, kind)), None)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                       for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return fields  # a list, as PyTorch returns for tuples
        return _rebuild_sequence(elem, fields)
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def _rebuild_mapping(like, values: dict):
    """``values`` in a mapping of ``like``'s type when it can be made so, else a plain dict."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)  # keeps the type and any extra attributes
            clone.update(values)
            return clone
        return type(like)(values)
    except TypeError:
        return values


def _rebuild_sequence(like, values: list):
    """``values`` in a sequence of ``like``'s type when it can be made so, else a list."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(like)(values)
    except TypeError:
        return values


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Tensors of one shape stacked along a new dim 0."""
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """NumPy arrays become tensors, then are stacked; string and object arrays are refused."""
    if _STRING_OR_OBJECT.search(batch[0].dtype.str) is not None:
        raise TypeError(_COLLATE_ERROR.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars become a 1-d tensor of their dtype."""
    return as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    """Python floats become float64, as in PyTorch (not the default dtype)."""
    return tensor(batch, dtype=dt.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    """Python ints become int64 and bools become bool."""
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings and bytes stay a list."""
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack tensors, arrays and numbers into tensors with a batch dim, recursing into dicts, namedtuples, tuples and
    lists (``torch.utils.data.default_collate``)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
