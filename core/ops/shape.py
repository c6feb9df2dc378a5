"""Shape ops that copy: joining (cat/stack), repeating, flipping and rolling, triangles and diagonals.

Two primitives do the data movement, ``cat`` and ``flip``; everything else is a
composite of them and of the view ops (``expand`` + ``reshape`` is a copying
repeat, ``diagonal(...).copy_`` builds diagonal matrices).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .. import dtypes as dt
from ..dispatch import TensorSpec, define
from ..tensor import Tensor
from ._util import broadcast_shapes, common_device, finish_out, wrap_dim
from .creation import clone, copy_, tensor, to_numpy, zeros
from .elementwise import where
from .view import _shape_arg, expand, flatten, narrow, reshape, transpose, unsqueeze, view
from .view import diagonal as _diagonal

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack",
           "repeat_interleave", "tile", "flip", "fliplr", "flipud", "roll", "rot90", "tril", "triu", "atleast_1d",
           "atleast_2d", "atleast_3d", "broadcast_to", "broadcast_tensors", "meshgrid", "diag", "diag_embed",
           "diagflat", "block_diag", "diff", "ravel", "cartesian_prod", "combinations"]


def _tensor_list(op: str, tensors) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return list(tensors)


def _legacy_empty(t: Tensor) -> bool:
    return t._shape == (0,)  # PyTorch still skips 1-d empty tensors when joining tensors of other ranks


# -- cat and friends ------------------------------------------------------------------------------

def _cat_meta(tensors, dim=0):
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not t._shape:
            raise RuntimeError(f"cat(): zero-dimensional tensor (at position {i}) cannot be concatenated")
    d = tensors[0].dtype
    for t in tensors[1:]:
        d = dt.promote_types(d, t.dtype)
    device = common_device("cat", tensors)
    kept = [(i, t) for i, t in enumerate(tensors) if not _legacy_empty(t)]
    if not kept:
        return TensorSpec((0,), d, device)
    ref = kept[0][1]
    n = len(ref._shape)
    dim = wrap_dim(dim, n, "cat")
    total = 0
    for i, t in kept:
        if len(t._shape) != n:
            raise RuntimeError(f"cat(): Tensors must have same number of dimensions: got {n} and {len(t._shape)}")
        for k in range(n):
            if k != dim and t._shape[k] != ref._shape[k]:
                raise RuntimeError(f"cat(): Sizes of tensors must match except in dimension {dim}. Expected size "
                                   f"{ref._shape[k]} but got size {t._shape[k]} for tensor number {i} in the list.")
        total += t._shape[dim]
    return TensorSpec(ref._shape[:dim] + (total,) + ref._shape[dim + 1:], d, device)


_cat_op = define("cat", meta=_cat_meta, primitive=True, doc=(
    "Join a list of tensors along dim (in [0, ndim)), casting each to the promoted dtype. Inputs with no "
    "elements contribute nothing and must be skipped: PyTorch's legacy rule lets 1-d empty tensors appear "
    "among tensors of other ranks."))


def cat(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Concatenate tensors along an existing dim, promoting dtypes (``torch.cat``)."""
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    ref = next((t for t in tensors if not _legacy_empty(t) and t._shape), None)
    if ref is not None and isinstance(dim, numbers.Integral):
        dim = wrap_dim(dim, ref.dim(), "cat")  # kernels get a non-negative dim
    return finish_out("cat", _cat_op(tensors, dim), out)


concat = cat


def concatenate(tensors, axis: int = 0, out=None) -> Tensor:
    """``cat`` with NumPy's ``axis`` name (``torch.concatenate``)."""
    return cat(tensors, axis, out=out)


def stack(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Join same-shaped tensors along a new dim (``torch.stack``)."""
    tensors = _tensor_list("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._shape
    for i, t in enumerate(tensors):
        if t._shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 and "
                               f"{list(t._shape)} at entry {i}")
    dim = wrap_dim(dim, len(shape) + 1, "stack")
    return cat([unsqueeze(t, dim) for t in tensors], dim, out=out)


def hstack(tensors, *, out=None) -> Tensor:
    """Concatenate column-wise: along dim 0 for 1-d inputs, else dim 1 (``torch.hstack``)."""
    tensors = atleast_1d(_tensor_list("hstack", tensors))
    if not tensors:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(tensors, 0 if tensors[0].dim() == 1 else 1, out=out)


def vstack(tensors, *, out=None) -> Tensor:
    """Concatenate row-wise after ``atleast_2d`` (``torch.vstack``)."""
    tensors = atleast_2d(_tensor_list("vstack", tensors))
    return cat(tensors, 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None) -> Tensor:
    """Concatenate depth-wise (dim 2) after ``atleast_3d`` (``torch.dstack``)."""
    tensors = atleast_3d(_tensor_list("dstack", tensors))
    return cat(tensors, 2, out=out)


def column_stack(tensors, *, out=None) -> Tensor:
    """Stack 0-d and 1-d tensors as columns, then ``hstack`` (``torch.column_stack``)."""
    tensors = _tensor_list("column_stack", tensors)
    columns = [reshape(t, (t.numel(), 1)) if t.dim() <= 1 else t for t in tensors]
    return hstack(columns, out=out)


def block_diag(*tensors) -> Tensor:
    """A block-diagonal matrix of 0-d, 1-d and 2-d tensors (``torch.block_diag``)."""
    blocks = []
    for i, t in enumerate(_tensor_list("block_diag", tensors)):
        if t.dim() > 2:
            raise RuntimeError(f"core.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        blocks.append(reshape(t, (1, t.numel())) if t.dim() < 2 else t)
    if not blocks:
        return zeros((1, 0))
    d = dt.result_type(*tensors)
    device = common_device("block_diag", blocks)
    out = zeros((sum(b._shape[0] for b in blocks), sum(b._shape[1] for b in blocks)), dtype=d, device=device)
    row = col = 0
    for b in blocks:
        rows, cols = b._shape
        copy_(narrow(narrow(out, 0, row, rows), 1, col, cols), b)
        row, col = row + rows, col + cols
    return out


# -- atleast / broadcast / meshgrid (views) -------------------------------------------------------

def _each(fn, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(fn(t) for t in tensors[0])
    if len(tensors) == 1:
        return fn(tensors[0])
    return tuple(fn(t) for t in tensors)


def atleast_1d(*tensors):
    """Each tensor viewed with at least 1 dim (``torch.atleast_1d``)."""
    return _each(lambda t: reshape(t, (1,)) if t.dim() == 0 else t, tensors)


def atleast_2d(*tensors):
    """Each tensor viewed with at least 2 dims: a 1-d tensor becomes a row (``torch.atleast_2d``)."""
    return _each(lambda t: reshape(t, (1,) * (2 - t.dim()) + t._shape) if t.dim() < 2 else t, tensors)


def _to_3d(t: Tensor) -> Tensor:
    if t.dim() == 0:
        return reshape(t, (1, 1, 1))
    if t.dim() == 1:
        return reshape(t, (1, t._shape[0], 1))
    if t.dim() == 2:
        return unsqueeze(t, 2)
    return t


def atleast_3d(*tensors):
    """Each tensor viewed with at least 3 dims, NumPy's way: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    return _each(_to_3d, tensors)


def broadcast_to(input: Tensor, size) -> Tensor:
    """``input`` expanded to ``size`` (a view; ``torch.broadcast_to``)."""
    return expand(input, size)


def broadcast_tensors(*tensors) -> tuple:
    """Views of all tensors expanded to their common shape (``torch.broadcast_tensors``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t._shape for t in tensors), op="broadcast_tensors")
    return tuple(expand(t, shape) for t in tensors)


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 0-d/1-d tensors as expanded views, ``indexing`` 'ij' or 'xy' (``torch.meshgrid``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("core.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"core.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"core.meshgrid: Expected 0D or 1D tensor in the tensor list but got a tensor of "
                               f"shape {list(t._shape)}")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    common_device("meshgrid", tensors)
    sizes = [t.numel() for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for t, axis in zip(tensors, axes):
        shape = [1] * len(tensors)
        shape[axis] = -1
        grids.append(expand(reshape(t, tuple(shape)), tuple(sizes)))
    return tuple(grids)


# -- repeat / tile / repeat_interleave ------------------------------------------------------------

def _fresh(result: Tensor, input: Tensor) -> Tensor:
    """``result``, copied if the view ops returned a view of ``input`` (these ops always return new memory)."""
    return clone(result) if result._storage is input._storage else result


def repeat(input: Tensor, *sizes) -> Tensor:
    """``input`` tiled ``sizes[i]`` times along each dim; extra sizes add leading dims (``Tensor.repeat``)."""
    sizes = _shape_arg("repeat", sizes)
    n = input.dim()
    if len(sizes) < n:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    shape = (1,) * (len(sizes) - n) + input._shape
    for r in sizes:
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {r}: "
                               f"{[a * b for a, b in zip(shape, sizes)]}")
    # view as (1, s0, 1, s1, ...), expand to (r0, s0, r1, s1, ...) and copy once into (r0*s0, r1*s1, ...)
    paired = reshape(input, tuple(x for s in shape for x in (1, s)))
    expanded = expand(paired, tuple(x for s, r in zip(shape, sizes) for x in (r, s)))
    return _fresh(reshape(expanded, tuple(s * r for s, r in zip(shape, sizes))), input)


def tile(input: Tensor, dims) -> Tensor:
    """``repeat`` with fewer ``dims`` than the tensor's padded with ones in front (``torch.tile``)."""
    dims = _shape_arg("tile", (dims,))
    return repeat(input, (1,) * (input.dim() - len(dims)) + dims)


def _repeats_index(repeats: Tensor, device) -> Tensor:
    """``[0]*r0 + [1]*r1 + ...`` for the 1-d ``repeats``, computed on the host (its length is data-dependent)."""
    counts = to_numpy(repeats, force=True)
    if counts.size and counts.min() < 0:
        raise RuntimeError("repeats can not be negative")
    return tensor(np.repeat(np.arange(counts.size, dtype=np.int64), counts), device=device)


def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *, output_size: int | None = None):
    """Repeat each element (or slice along ``dim``) ``repeats`` times in place (``torch.repeat_interleave``)."""
    if repeats is None:  # repeat_interleave(repeats): the index that repeats each position
        if input.dim() > 1 or input.dtype not in (dt.int64, dt.int32):
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return _repeats_index(input, input._storage.device)
    if dim is None:
        input, dim = flatten(input), 0
    dim = wrap_dim(dim, input.dim(), "repeat_interleave")
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.dim() <= 1:
        repeats = int(repeats.item())
    if isinstance(repeats, Tensor):
        if repeats.dim() != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if repeats._shape[0] != input._shape[dim]:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats._shape[0]} and input.size({dim}) = {input._shape[dim]}")
        from .indexing import index_select

        return index_select(input, dim, _repeats_index(repeats, input._storage.device))
    if not isinstance(repeats, numbers.Integral) or isinstance(repeats, bool):
        raise TypeError(f"repeat_interleave(): argument 'repeats' must be int or Tensor, not {type(repeats).__name__}")
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if input.dim() == 0:
        input, dim = reshape(input, (1,)), 0
    shape = input._shape
    expanded = expand(unsqueeze(input, dim + 1), shape[:dim + 1] + (repeats,) + shape[dim + 1:])
    return _fresh(reshape(expanded, shape[:dim] + (shape[dim] * repeats,) + shape[dim + 1:]), input)


# -- flip / roll / rot90 --------------------------------------------------------------------------

def _distinct_dims(op: str, dims, ndim: int) -> tuple:
    """``dims`` wrapped to [0, ndim); PyTorch's RuntimeError naming the first repeated dim."""
    wrapped = tuple(wrap_dim(d, ndim, op) for d in dims)
    for i, d in enumerate(wrapped):
        if d in wrapped[:i]:
            raise RuntimeError(f"{op}(): dim {d} appears multiple times in the list of dims")
    return wrapped


def _flip_meta(input, dims):
    if not isinstance(input, Tensor):
        raise TypeError(f"flip(): argument 'input' must be Tensor, not {type(input).__name__}")
    _distinct_dims("flip", dims, input.dim())
    return TensorSpec(input._shape, input.dtype, input._storage.device)


_flip_op = define("flip", meta=_flip_meta, primitive=True,
                  doc="A contiguous copy of input with the order of elements reversed along each of dims "
                      "(a tuple of distinct dims in [0, ndim)).")


def flip(input: Tensor, *args, dims=None) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy; ``torch.flip``)."""
    if dims is None:
        dims = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    elif isinstance(dims, numbers.Integral):
        dims = (dims,)
    dims = _distinct_dims("flip", dims, input.dim())
    return input.clone() if input.dim() == 0 else _flip_op(input, dims)


def fliplr(input: Tensor) -> Tensor:
    """Flip dim 1 (left/right) of a tensor of at least 2 dims (``torch.fliplr``)."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    """Flip dim 0 (up/down) of a tensor of at least 1 dim (``torch.flipud``)."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements cyclically along ``dims`` (the flattened tensor when None; ``torch.roll``)."""
    shifts = (shifts,) if isinstance(shifts, numbers.Integral) else tuple(shifts)
    if input.dim() == 0:
        return input.clone()
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return view(roll(flatten(input), shifts, 0), input._shape)
    dims = (dims,) if isinstance(dims, numbers.Integral) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    result = input
    for shift, d in zip(shifts, dims):
        d = wrap_dim(d, input.dim(), "roll")
        size = result._shape[d]
        shift = int(shift) % size if size else 0
        if shift:
            result = cat([narrow(result, d, size - shift, shift), narrow(result, d, 0, size - shift)], d)
    return _fresh(result, input)


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate ``k`` quarter turns in the plane of ``dims``, from the first dim towards the second (``torch.rot90``)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    n = input.dim()
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = wrap_dim(dims[0], n, "rot90"), wrap_dim(dims[1], n, "rot90")
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return transpose(flip(input, (d0,)), d0, d1)
    return clone(input)


# -- triangles and diagonals ----------------------------------------------------------------------

def _triangle(op: str, input: Tensor, diagonal: int, lower: bool) -> Tensor:
    if input.dim() < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    rows, cols = input._shape[-2:]
    keep = np.tri(rows, cols, diagonal, dtype=bool) if lower else ~np.tri(rows, cols, diagonal - 1, dtype=bool)
    mask = tensor(keep, device=input._storage.device)
    return where(mask, input, zeros((), dtype=input.dtype, device=input._storage.device))


def tril(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    """The lower triangle (on and below ``diagonal``) of the last two dims, zeros elsewhere (``torch.tril``)."""
    return finish_out("tril", _triangle("tril", input, diagonal, True), out)


def triu(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    """The upper triangle (on and above ``diagonal``) of the last two dims, zeros elsewhere (``torch.triu``)."""
    return finish_out("triu", _triangle("triu", input, diagonal, False), out)


def tril_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place :func:`tril`."""
    return copy_(input, tril(input, diagonal))


def triu_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place :func:`triu`."""
    return copy_(input, triu(input, diagonal))


def diag(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    """A 1-d tensor as the ``diagonal``-th diagonal of a square matrix, or a matrix's diagonal (``torch.diag``)."""
    if input.dim() == 1:
        n = input._shape[0] + abs(diagonal)
        result = zeros((n, n), dtype=input.dtype, device=input._storage.device)
        copy_(_diagonal(result, diagonal, 0, 1), input)
    elif input.dim() == 2:
        result = clone(_diagonal(input, diagonal, 0, 1))
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    return finish_out("diag", result, out)



def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Batches of diagonal matrices whose ``offset`` diagonals (in ``dim1``/``dim2``) are ``input``'s last dim."""
    n = input.dim() + 1
    d1, d2 = wrap_dim(dim1, n, "diag_embed"), wrap_dim(dim2, n, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    size = (input._shape[-1] if input._shape else 1) + abs(offset)
    shape = list(input._shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, size)
    result = zeros(tuple(shape), dtype=input.dtype, device=input._storage.device)
    copy_(_diagonal(result, offset, d1, d2), input)
    return result


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened ``input`` as the ``offset``-th diagonal of a square matrix (``torch.diagflat``)."""
    return diag(reshape(input, (-1,)), offset)


# -- differences, flattening and products of sets -------------------------------------------------------

def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None, *, out=None) -> Tensor:
    """The ``n``-th forward difference along ``dim``, after joining ``prepend`` and ``append`` (``torch.diff``)."""
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.dim(), "diff")
    parts = []
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            continue
        if not isinstance(extra, Tensor):
            shape = list(input._shape)
            shape[d] = 1
            extra = expand(tensor(extra, dtype=input.dtype, device=input.device), tuple(shape))
        if extra.dim() != input.dim():
            raise RuntimeError(f"diff expects {name} or append to be the same dimension as input")
        parts.append((name, extra))
    if parts and n:  # as PyTorch (and NumPy): the 0-th difference is the input alone
        before = [t for name, t in parts if name == "prepend"]
        after = [t for name, t in parts if name == "append"]
        input = cat(before + [input] + after, d)
    for _ in range(n):
        length = input._shape[d]
        if length == 0:
            break
        upper, lower = narrow(input, d, 1, length - 1), narrow(input, d, 0, length - 1)
        input = (upper != lower) if input.dtype is dt.bool else upper - lower
    return finish_out("diff", input if n else clone(input), out)


def ravel(input: Tensor) -> Tensor:
    """``input`` as a 1-D tensor, a view when possible (``torch.ravel``)."""
    return reshape(input, (-1,))


def _vectors(op: str, tensors) -> tuple:
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._shape)}")
    return tensors


def cartesian_prod(*tensors) -> Tensor:
    """Cartesian product of 1-D tensors, one row per combination (``torch.cartesian_prod``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _vectors("cartesian_prod", tensors)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Length-``r`` combinations of a 1-D tensor's elements, one per row (``torch.combinations``)."""
    import itertools

    _vectors("combinations", (input,))
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return zeros(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input._shape[0]), r))
    index = tensor(rows if rows else np.zeros((0, r), np.int64), dtype=dt.int64, device=input.device)
    return input[reshape(index, (-1,))].reshape(len(rows), r)


METHODS = {"repeat": repeat, "repeat_interleave": repeat_interleave, "tile": tile, "flip": flip,
           "fliplr": fliplr, "flipud": flipud, "roll": roll, "rot90": rot90, "tril": tril, "triu": triu,
           "tril_": tril_, "triu_": triu_, "broadcast_to": broadcast_to, "diag": diag, "diag_embed": diag_embed,
           "diagflat": diagflat, "diff": diff, "ravel": ravel}
