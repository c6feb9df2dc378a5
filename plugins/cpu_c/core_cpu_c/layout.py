"""Validation of tensor layouts before any C runs: dtypes, shapes, strides, bounds (coalescing: the kit's).

A C kernel trusts the offsets and strides it is given, so every operand is checked here first: non-negative strides,
offset and farthest element inside the storage's bytes. What C cannot take (negative strides, other dtypes) makes the
caller use the NumPy kernel instead.
"""

from __future__ import annotations

from operator import mul as _mul
from typing import NamedTuple

import numpy as np
from core.backends.api import Ptr

__all__ = ["Operand", "operand", "pointer", "LayoutError", "remember", "MISSING"]

MISSING = object()  # what a layout cache's ``get`` returns for a key it does not hold (None is a value)


class LayoutError(RuntimeError):
    """A tensor's view points outside its storage (a bug upstream): refused before C reads it."""


class Operand(NamedTuple):
    """One validated kernel input: its buffer, element offset, and strides aligned to the output's shape."""

    buffer: object
    offset: int
    strides: tuple
    shape: tuple


def remember(cache: dict, key, value, limit: int = 512):
    """Store ``value`` under ``key`` in the per-layout ``cache`` (cleared when it holds ``limit`` entries, so a
    program walking ever new shapes keeps it bounded) and return it. Callers look up first and call this on a miss:
    the hit path stays one ``dict.get``."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value


def check_bounds(op: str, t) -> None:
    """Raise LayoutError unless every element of tensor ``t`` lies inside its storage."""
    shape, stride, offset = t._shape, t._stride, t._offset
    if 0 in shape:
        return
    if stride and min(stride) < 0:
        raise LayoutError(f"{op}: cpu_c kernels take non-negative strides, got {stride}")
    last = offset + sum(map(_mul, shape, stride)) - sum(stride)  # the sum of (size - 1) * stride, in C
    storage = t._storage
    if offset < 0 or (last + 1) * t.dtype.itemsize > min(storage.nbytes, storage.data.nbytes):
        raise LayoutError(f"{op}: view of shape {tuple(shape)}, strides {tuple(stride)}, offset {offset} "
                          f"reaches element {last} of a storage of {storage.nbytes} bytes ({t.dtype.name})")


def pointer(ffi, op: str, t):
    """A C pointer to the first element of tensor ``t``, after checking that its view lies inside its storage."""
    check_bounds(op, t)
    return first_element(ffi, t)


def first_element(ffi, t):
    """A C pointer to the first element of tensor ``t`` (its bounds already checked), NULL for None."""
    return ffi.NULL if t is None else ffi.from_buffer(t._storage.data) + t._offset * t.dtype.itemsize


def noted(ffi, t):
    """:func:`first_element` as a capture's note of a C call takes it (``core.backends.api.Ptr``: made again from
    each replay's tensor); NULL for None."""
    return ffi.NULL if t is None else Ptr(t._storage.data, t._offset * t.dtype.itemsize)


_tuple_new = tuple.__new__  # an Operand without NamedTuple's Python-level __new__ frame


def operand(op: str, x, dtype, shape: tuple, contiguous: tuple, n: int):
    """An Operand for tensor or Python scalar ``x`` broadcast to ``shape`` in ``dtype``; None if C cannot take it.

    ``contiguous`` and ``n`` are the output's strides and element count (the fast path's check).
    """
    if hasattr(x, "_storage"):
        if x.dtype != dtype:
            return None
        if x._stride == contiguous and x._shape == shape:  # dense and full-size: one bounds check
            if x._offset < 0 or (x._offset + n) * dtype.itemsize > min(x._storage.nbytes, x._storage.data.nbytes):
                check_bounds(op, x)
            return _tuple_new(Operand, (x._storage.data, x._offset, contiguous, shape))
        if min(x._stride, default=0) < 0:
            return None
        check_bounds(op, x)
        xs, st = x._shape, x._stride
        lead = len(shape) - len(xs)
        if lead < 0:
            raise LayoutError(f"{op}: operand of shape {tuple(xs)} has more dims than the output {tuple(shape)}")
        strides = [0] * lead
        for d, (size, stride) in enumerate(zip(xs, st)):
            if size == shape[lead + d]:
                strides.append(stride if size != 1 else 0)
            elif size == 1:
                strides.append(0)
            else:
                raise LayoutError(f"{op}: operand of shape {tuple(xs)} does not broadcast to {tuple(shape)}")
        return _tuple_new(Operand, (x._storage.data, x._offset, tuple(strides), xs))
    if isinstance(x, (bool, int, float)):
        return Operand(np.array([x], dtype.numpy), 0, (0,) * len(shape), ())
    return None
