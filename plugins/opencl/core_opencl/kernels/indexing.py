"""The indexing family: gather, scatter_ (assign or reduce), index, index_put_ (assign or accumulate), nonzero.

float16 and bfloat16 are copied as their 16 bits; scatter's reductions and accumulating puts combine them in a
float32 copy of the target, written back rounded once, as the reference kernels compute. One rendered template
serves the four indexed copies (``OpenCLRenderer.render_indexed``): the tensor that is
indexed is addressed through its strides over the iteration shape plus ``index value * stride`` per int64 index
tensor; the other tensor is a plain strided operand. Index values were validated by the front-end.
"""

from __future__ import annotations

import numpy as np

from core.backends.api import broadcast_strides, coalesce

from ..programs import get_kernel
from ._common import HALF, RENDERER, arithmetic_dtypes_ok, launch_1d, new_tensor, numel, padded, rank_bucket, slot_of

__all__ = ["kernels", "run_indexed"]


def _int64(*indices) -> bool:
    return all(i.dtype.name == "int64" for i in indices)


def run_indexed(write: bool, shape: tuple, indexed, indexed_strides, other, other_strides, indices: list,
                combine=None, identity=None, serial: int = 1):
    """One indexed copy over ``shape``: ``indices`` are ``(index tensor, its strides over shape, dim size, dim
    stride)``; ``serial`` elements in a row run on one work-item, in order (see ``render_indexed``)."""
    n = numel(shape)
    if n == 0:
        return
    index_tensors = [i for i, _, _, _ in indices]
    dims, strides = coalesce(shape, [indexed_strides, other_strides] + [s for _, s, _, _ in indices])
    rank = rank_bucket(len(dims), allow_zero=True)
    if rank is None:
        raise NotImplementedError  # more than 8 dims that do not coalesce: the callers check first
    dtype = indexed.dtype.name
    slot = slot_of(indexed)
    key = ("indexed", write, dtype, len(indices), rank, combine, identity)
    kernel = get_kernel(slot, key, "indexed", lambda: {
        "indexed": RENDERER.render_indexed(write, dtype, len(indices), rank, combine, identity)})
    buf, i64 = slot.index_buffer, np.int64
    args = [i64(n // serial), i64(serial), buf(padded(dims, rank, 1)),
            indexed._storage.data, buf(padded(strides[0], rank, 0)), i64(indexed._offset),
            other._storage.data, buf(padded(strides[1], rank, 0)), i64(other._offset),
            buf(tuple(size for _, _, size, _ in indices)), buf(tuple(step for _, _, _, step in indices))]
    for t, st in zip(index_tensors, strides[2:]):
        args += [t._storage.data, buf(padded(st, rank, 0)), i64(t._offset)]
    launch_1d(slot, kernel, n // serial, args)


def _without(strides: tuple, dim: int) -> tuple:
    return tuple(0 if d == dim else s for d, s in enumerate(strides))


def gather(spec, input, dim, index):
    if not arithmetic_dtypes_ok(input) or not _int64(index) or index.dim() > 8:
        return NotImplemented
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    if input.dim() == 0:
        dim, size, step, strides = 0, 1, 0, (0,) * index.dim()
    else:
        dim %= input.dim()
        size, step, strides = input._shape[dim], input._stride[dim], _without(input._stride, dim)
    run_indexed(False, index._shape, input, strides, out, out._stride, [(index, index._stride, size, step)])
    return out


def _identity(reduce: str, dtype) -> str:
    if reduce in ("sum", "prod"):
        return "0" if reduce == "sum" else "1"
    if dtype.name == "bool":
        return "0" if reduce == "amax" else "1"
    if dtype.name in ("float32", "float64"):
        return "-INFINITY" if reduce == "amax" else "INFINITY"
    info = np.iinfo(dtype.numpy)
    return f"{info.min}L" if reduce == "amax" else f"{info.max}L"


def _combined_in_float32(kernel, spec, self, args: tuple, at: int):
    """``kernel(spec, self, *args)``, which writes into the half tensor ``self``, run on a float32 copy of it (and
    of the tensor ``args[at]`` it combines in), then written back into ``self``, rounded once."""
    wide = self.float()
    args = args[:at] + (args[at].float(),) + args[at + 1:]
    if kernel(spec, wide, *args) is NotImplemented:
        return NotImplemented
    return self.copy_(wide)


def scatter_(spec, self, dim, index, src, reduce=None, include_self=True):
    if not arithmetic_dtypes_ok(self, src) or not _int64(index) or index.dim() > 8 or src.dim() != index.dim():
        return NotImplemented
    if reduce is not None and self.dtype.name in HALF:
        return _combined_in_float32(scatter_, spec, self, (dim, index, src, reduce, include_self), 2)
    if index.numel() == 0:
        return self
    if self.dim() == 0:
        run_indexed(True, index._shape, self, (0,) * index.dim(), src, src._stride, [(index, index._stride, 1, 0)],
                    reduce, None if include_self or reduce is None else _identity(reduce, self.dtype), index.numel())
        return self
    dim %= self.dim()
    # dim last: each work-item runs one line along dim in order, so the lines' targets never collide and
    # duplicates within a line combine (or, without reduce, the last one wins) as in the reference
    order = [d for d in range(index.dim()) if d != dim] + [dim]
    shape = tuple(index._shape[d] for d in order)
    self_strides = tuple(_without(self._stride, dim)[d] for d in order)
    run_indexed(True, shape, self, self_strides, src, tuple(src._stride[d] for d in order),
                [(index, tuple(index._stride[d] for d in order), self._shape[dim], self._stride[dim])],
                reduce, None if include_self or reduce is None else _identity(reduce, self.dtype),
                index._shape[dim])
    return self


def _broadcast_shape(shapes) -> tuple:
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        for d, n in enumerate(s, rank - len(s)):
            out[d] = n if out[d] == 1 else out[d]
    return tuple(out)


def _advanced_layout(t, indices, shape: tuple):
    """Strides of ``t`` over the result shape of ``t[indices]`` and the ``run_indexed`` index entries."""
    tensors = [i for i in indices if i is not None]
    positions = [d for d, i in enumerate(indices) if i is not None]
    sliced = [d for d in range(t.dim()) if d >= len(indices) or indices[d] is None]
    broadcast = _broadcast_shape([i._shape for i in tensors])
    nb = len(broadcast)
    adjacent = positions[-1] - positions[0] + 1 == len(positions)
    first = sum(1 for d in sliced if d < positions[0]) if adjacent else 0  # where the broadcast dims go
    t_strides = tuple(t._stride[d] for d in sliced)
    t_strides = t_strides[:first] + (0,) * nb + t_strides[first:]
    after = len(shape) - first - nb
    entries = [(i, (0,) * first + broadcast_strides(i._shape, i._stride, broadcast) + (0,) * after,
                t._shape[d], t._stride[d]) for i, d in zip(tensors, positions)]
    return t_strides, entries


def _indices_ok(t, indices, shape) -> bool:
    tensors = [i for i in indices if i is not None]
    return bool(tensors) and _int64(*tensors) and arithmetic_dtypes_ok(t) and len(shape) <= 8


def index(spec, input, indices):
    if not _indices_ok(input, indices, spec.shape):
        return NotImplemented
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    strides, entries = _advanced_layout(input, indices, spec.shape)
    run_indexed(False, spec.shape, input, strides, out, out._stride, entries)
    return out


def index_put_(spec, self, indices, values, accumulate=False):
    if not any(i is not None for i in indices):
        return NotImplemented
    shape = _indexed_shape(self, indices)
    if not _indices_ok(self, indices, shape) or not arithmetic_dtypes_ok(values):
        return NotImplemented
    if accumulate and self.dtype.name in HALF:
        return _combined_in_float32(index_put_, spec, self, (indices, values, accumulate), 1)
    strides, entries = _advanced_layout(self, indices, shape)
    # accumulating: targets may collide anywhere, so one work-item adds them all in order (exact, deterministic)
    run_indexed(True, shape, self, strides, values, broadcast_strides(values._shape, values._stride, shape), entries,
                "sum" if accumulate else None, None, numel(shape) if accumulate else 1)
    return self


def _indexed_shape(t, indices) -> tuple:
    """The shape of ``t[indices]`` (NumPy's placement of the broadcast index dims)."""
    positions = [d for d, i in enumerate(indices) if i is not None]
    sliced = [t._shape[d] for d in range(t.dim()) if d >= len(indices) or indices[d] is None]
    broadcast = _broadcast_shape([i._shape for i in indices if i is not None])
    adjacent = positions[-1] - positions[0] + 1 == len(positions)
    first = sum(1 for d in range(positions[0]) if indices[d] is None) if adjacent else 0
    return tuple(sliced[:first]) + broadcast + tuple(sliced[first:])


def nonzero(spec, input):
    if not arithmetic_dtypes_ok(input) or input.dim() > 8:
        return NotImplemented
    count = int((input != 0).sum().item()) if input.numel() else 0  # the output's size: a device reduction
    out = new_tensor((count, input.dim()), spec.dtype, spec.device)
    if count == 0 or input.dim() == 0:
        return out
    dtype, rank, slot = input.dtype.name, input.dim(), slot_of(input)
    kernel = get_kernel(slot, ("nonzero", dtype, rank), "nonzero", lambda: {
        "nonzero": RENDERER.render_nonzero(dtype, rank)})
    buf = slot.index_buffer
    launch_1d(slot, kernel, 1, [np.int64(input.numel()), buf(input._shape), input._storage.data, buf(input._stride),
                                np.int64(input._offset), out._storage.data])
    return out


def kernels(runtime) -> dict:
    """The indexing family: op name -> kernel."""
    return {"gather": gather, "scatter_": scatter_, "index": index, "index_put_": index_put_, "nonzero": nonzero}
