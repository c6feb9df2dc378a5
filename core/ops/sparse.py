"""Sparse tensors (``torch.sparse_coo_tensor`` and the compressed formats): construction, conversion, products.

A sparse tensor (``core/sparse_tensor.py``) holds dense component tensors. Everything here is a composite over
them (``index_add``, ``index_select``, ``unique``, ``searchsorted``), so sparse tensors work on every device and
autograd records through the components (sparse @ dense is the ``sparse_mm`` op: its kernels call ``scipy.sparse``
on cpu and ``cupyx.scipy.sparse`` on cuda, its composite runs elsewhere). ``to_dense``, the products and the
constructors are differentiable in the values. The ``Sparse`` dispatch key routes ops given a sparse operand to
the kernels registered at the end of this file; every other op raises ``NotImplementedError`` naming the op and
the layout.
"""

from __future__ import annotations

import builtins
import numbers

from .. import dtypes as dt
from .. import layouts as L
from ..dispatch import TensorSpec, define
from ..dispatch.keys import Sparse
from ..dispatch.operator import get_operator, set_functionality_fallback
from ..sparse_tensor import COMPRESSED_LAYOUTS, SPARSE_LAYOUTS, SparseTensor, make_sparse
from ..tensor import Tensor, contiguous_strides
from ._util import exporter, finish_out, numel, wrap_dim, wrap_dims
from .creation import tensor, zeros
from .elementwise import floor_divide, mul, remainder
from .indexing import index_add, index_select, nonzero
from .ranges import arange
from .reduction import cumsum
from .shape import cat, repeat_interleave, stack
from .sorting import searchsorted, unique
from .statistics import bincount
from .view import reshape

__all__: list = []
METHODS: dict = {}


_export = exporter(__all__, METHODS)


def _rebuild_sparse(layout, shape, values, indices, compressed, plain, coalesced, device, requires_grad):
    """Unpickle a sparse tensor (what ``SparseTensor.__reduce_ex__`` names)."""
    parts = [None if p is None else p.to(device) for p in (indices, compressed, plain)]
    values = values.to(device)
    if requires_grad:
        values = values.detach().requires_grad_()
    return make_sparse(layout, shape, values, *parts, coalesced=coalesced)


def _is_sparse(t) -> bool:
    return isinstance(t, SparseTensor)


def expect_layout(op: str, t, layouts: tuple) -> None:
    """Raise PyTorch's error when ``t``'s layout is not one of ``layouts``."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}")
    if t.layout not in layouts:
        names = " or ".join(repr(lay) for lay in layouts)
        raise RuntimeError(f"{op}(): expected a tensor with layout {names}, but got {t.layout!r}")


def _as_index(op: str, name: str, data, device) -> Tensor:
    """An int64 index tensor from a tensor or nested list (PyTorch requires int32/int64 indices)."""
    t = data if isinstance(data, Tensor) else tensor(data, dtype=dt.int64, device=device)
    if t.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"{op}(): {name} must be an int64 or int32 tensor, but got {t.dtype!r}")
    t = t.to(dt.int64)
    return t if device is None else t.to(device)


def _as_values(data, dtype, device, requires_grad: bool) -> Tensor:
    """The values tensor: converted like ``core.tensor``; a fresh leaf when ``requires_grad`` is asked for."""
    if isinstance(data, Tensor):
        values = data.to(dtype=dtype) if dtype is not None else data
        values = values if device is None else values.to(device)
    else:
        values = tensor(data, dtype=dtype, device=device)
    if requires_grad:
        values = values.detach().requires_grad_()
    return values


def _max_plus_one(index: Tensor) -> int:
    return int(index.max()) + 1 if index.numel() else 0


def _check_bounds(op: str, index: Tensor, size: int, dim: int) -> None:
    if index.numel() == 0:
        return
    low, high = int(index.min()), int(index.max())
    if low < 0:
        raise RuntimeError(f"{op}(): found negative index {low} for dim {dim}")
    if high >= size:
        raise RuntimeError(f"{op}(): size is inconsistent with indices: for dim {dim}, size is {size} but found "
                           f"index {high}")


# -- construction --------------------------------------------------------------------------------------

def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor with ``values`` at ``indices`` (sparse_dim x nnz) (``torch.sparse_coo_tensor``)."""
    values = _as_values(values, dtype, device, requires_grad)
    indices = _as_index("sparse_coo_tensor", "indices", indices, values.device)
    if indices.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor(): indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if values.ndim == 0:
        raise RuntimeError("sparse_coo_tensor(): values must have at least one dimension (nnz x dense dims)")
    sparse_dim, nnz = indices.shape
    if values.shape[0] != nnz:
        raise RuntimeError(f"sparse_coo_tensor(): indices and values must have same nnz, but got nnz from "
                           f"indices: {nnz}, nnz from values: {values.shape[0]}")
    if size is None:
        size = tuple(_max_plus_one(indices[d]) for d in range(sparse_dim)) + tuple(values.shape[1:])
    size = tuple(builtins.int(s) for s in size)
    if len(size) != sparse_dim + values.ndim - 1:
        raise RuntimeError(f"sparse_coo_tensor(): number of dimensions must be sparse_dim ({sparse_dim}) + "
                           f"dense_dim ({values.ndim - 1}), but got {len(size)}")
    if tuple(values.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError(f"sparse_coo_tensor(): values has incorrect size, expected {[nnz, *size[sparse_dim:]]}, "
                           f"got {list(values.shape)}")
    for d in range(sparse_dim):
        _check_bounds("sparse_coo_tensor", indices[d], size[d], d)
    return make_sparse(L.sparse_coo, size, values, indices=indices, coalesced=builtins.bool(is_coalesced))


_BLOCKED = (L.sparse_bsr, L.sparse_bsc)
_ROW_COMPRESSED = (L.sparse_csr, L.sparse_bsr)
_COMPRESSED_NAMES = {L.sparse_csr: ("crow_indices", "col_indices"), L.sparse_bsr: ("crow_indices", "col_indices"),
                     L.sparse_csc: ("ccol_indices", "row_indices"), L.sparse_bsc: ("ccol_indices", "row_indices")}


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *, dtype=None, layout=None,
                             device=None, pin_memory=False, requires_grad=False, check_invariants=None):
    """A compressed sparse tensor of ``layout`` (CSR, CSC, BSR or BSC) (``torch.sparse_compressed_tensor``).

    Rows (CSR, BSR) or columns (CSC, BSC) are compressed: entry ``i`` of ``compressed_indices`` is where row or
    column ``i`` starts among the ``plain_indices`` and ``values``. Batch dimensions are not supported.
    """
    op = f"sparse_{layout.name[7:]}_tensor" if layout in COMPRESSED_LAYOUTS else "sparse_compressed_tensor"
    if layout not in COMPRESSED_LAYOUTS:
        raise RuntimeError(f"{op}(): expected one of sparse_csr, sparse_csc, sparse_bsr or sparse_bsc layouts, "
                           f"but got {layout!r}")
    cname, pname = _COMPRESSED_NAMES[layout]
    values = _as_values(values, dtype, device, requires_grad)
    compressed = _as_index(op, cname, compressed_indices, values.device)
    plain = _as_index(op, pname, plain_indices, values.device)
    if compressed.ndim != 1 or plain.ndim != 1:
        raise RuntimeError(f"{op}(): {cname} and {pname} must be 1-D (batch dimensions are not supported), but got "
                           f"{compressed.ndim}-D and {plain.ndim}-D")
    nnz = plain.shape[0]
    if values.ndim == 0 or values.shape[0] != nnz:
        raise RuntimeError(f"{op}(): {pname} and values must have the same number of elements, but got "
                           f"{nnz} and {values.shape[0] if values.ndim else 0}")
    block = tuple(values.shape[1:3]) if layout in _BLOCKED else (1, 1)
    if layout in _BLOCKED and values.ndim != 3:
        raise RuntimeError(f"{op}(): values must be a 3-D tensor (nnz x blocksize), but got {values.ndim}-D")
    row_major = layout in _ROW_COMPRESSED
    if size is None:
        counts = (compressed.shape[0] - 1, _max_plus_one(plain))
        blocks = counts if row_major else counts[::-1]
        size = (blocks[0] * block[0], blocks[1] * block[1]) + tuple(values.shape[3 if layout in _BLOCKED else 1:])
    size = tuple(builtins.int(s) for s in size)
    if len(size) < 2:
        raise RuntimeError(f"{op}(): size must have at least 2 dimensions, but got {len(size)}")
    if size[0] % block[0] or size[1] % block[1]:
        raise RuntimeError(f"{op}(): the size {size[:2]} must be divisible by the blocksize {block}")
    compressed_count = size[0] // block[0] if row_major else size[1] // block[1]
    plain_count = size[1] // block[1] if row_major else size[0] // block[0]
    if compressed.shape[0] != compressed_count + 1:
        raise RuntimeError(f"{op}(): {cname} must have length {compressed_count + 1} (the compressed size + 1), "
                           f"but got {compressed.shape[0]}")
    if int(compressed[0]) != 0 or int(compressed[-1]) != nnz:
        raise RuntimeError(f"{op}(): {cname} must start with 0 and end with nnz ({nnz})")
    if compressed.shape[0] > 1 and builtins.bool(((compressed[1:] - compressed[:-1]) < 0).any()):
        raise RuntimeError(f"{op}(): {cname} must be a non-decreasing sequence")
    _check_bounds(op, plain, plain_count, 1 if row_major else 0)
    return make_sparse(layout, size, values, compressed=compressed, plain=plain)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A sparse CSR tensor: row pointers, column indices, values (``torch.sparse_csr_tensor``)."""
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype, layout=L.sparse_csr,
                                    device=device, requires_grad=requires_grad)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A sparse CSC tensor: column pointers, row indices, values (``torch.sparse_csc_tensor``)."""
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype, layout=L.sparse_csc,
                                    device=device, requires_grad=requires_grad)


def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A block-sparse-row tensor: block-row pointers, block-column indices, blocks (``torch.sparse_bsr_tensor``).

    ``values`` holds the (nnz, R, C) blocks."""
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype, layout=L.sparse_bsr,
                                    device=device, requires_grad=requires_grad)


def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A block-sparse-column tensor: block-column pointers, block-row indices, blocks (``torch.sparse_bsc_tensor``).

    ``values`` holds the (nnz, R, C) blocks."""
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype, layout=L.sparse_bsc,
                                    device=device, requires_grad=requires_grad)


for _fn in (sparse_coo_tensor, sparse_compressed_tensor, sparse_csr_tensor, sparse_csc_tensor, sparse_bsr_tensor,
            sparse_bsc_tensor):
    _export(_fn, method=False)


# -- components ----------------------------------------------------------------------------------------

def _component(op: str, t, layouts: tuple, attribute: str) -> Tensor:
    expect_layout(op, t, layouts)
    return getattr(t, attribute)


def indices(self) -> Tensor:
    """The (sparse_dim, nnz) indices of a coalesced COO tensor (``torch.Tensor.indices``)."""
    if _is_sparse(self) and self.layout is L.sparse_coo and not self._coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return _component("indices", self, (L.sparse_coo,), "_indices")


def values(self) -> Tensor:
    """The stored values (nnz, *dense dims) of a sparse tensor (``torch.Tensor.values``); differentiable."""
    if _is_sparse(self) and self.layout is L.sparse_coo and not self._coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    return _component("values", self, SPARSE_LAYOUTS, "_values")


def crow_indices(self) -> Tensor:
    """The compressed row indices of a CSR or BSR tensor (``torch.Tensor.crow_indices``)."""
    return _component("crow_indices", self, _ROW_COMPRESSED, "_compressed")


def col_indices(self) -> Tensor:
    """The column indices of a CSR or BSR tensor (``torch.Tensor.col_indices``)."""
    return _component("col_indices", self, _ROW_COMPRESSED, "_plain")


def ccol_indices(self) -> Tensor:
    """The compressed column indices of a CSC or BSC tensor (``torch.Tensor.ccol_indices``)."""
    return _component("ccol_indices", self, (L.sparse_csc, L.sparse_bsc), "_compressed")


def row_indices(self) -> Tensor:
    """The row indices of a CSC or BSC tensor (``torch.Tensor.row_indices``)."""
    return _component("row_indices", self, (L.sparse_csc, L.sparse_bsc), "_plain")


def sparse_dim(self) -> int:
    """Number of sparse dimensions (``torch.Tensor.sparse_dim``); 0 for a dense tensor."""
    if not _is_sparse(self):
        return 0
    return self._indices.shape[0] if self.layout is L.sparse_coo else 2


def dense_dim(self) -> int:
    """Number of dense dimensions (``torch.Tensor.dense_dim``); ``ndim`` for a dense tensor."""
    return self.ndim - sparse_dim(self)


def _nnz(self) -> int:
    """Number of stored elements (blocks for BSR/BSC) (``torch.Tensor._nnz``)."""
    expect_layout("_nnz", self, SPARSE_LAYOUTS)
    return self._values.shape[0]


def is_coalesced(self) -> bool:
    """Whether a COO tensor's indices are sorted and unique (``torch.Tensor.is_coalesced``)."""
    expect_layout("is_coalesced", self, (L.sparse_coo,))
    return self._coalesced


for _fn in (indices, values, crow_indices, col_indices, ccol_indices, row_indices, sparse_dim, dense_dim, _nnz,
            is_coalesced):
    _export(_fn, function=False)


def _copy_of(accessor):
    def copy(input, *, out=None):
        return finish_out(f"{accessor.__name__}_copy", accessor(input).clone(), out)

    copy.__name__ = f"{accessor.__name__}_copy"
    copy.__doc__ = f"A copy of ``input.{accessor.__name__}()`` (``torch.{accessor.__name__}_copy``)."
    return copy


indices_copy, values_copy, crow_indices_copy, col_indices_copy, ccol_indices_copy, row_indices_copy = (
    _copy_of(fn) for fn in (indices, values, crow_indices, col_indices, ccol_indices, row_indices))
for _fn in (indices_copy, values_copy, crow_indices_copy, col_indices_copy, ccol_indices_copy, row_indices_copy):
    _export(_fn, method=False)


# -- element coordinates, coalescing, densifying ---------------------------------------------------------

def _expand_compressed(compressed: Tensor, nnz: int) -> Tensor:
    """The row (column) of each stored entry from the compressed pointers (``crow = [0, 2, 3]`` -> ``[0, 0, 1]``)."""
    positions = arange(nnz, dtype=dt.int64, device=compressed.device)
    return searchsorted(compressed[1:], positions, right=True)


def coo_parts(t: SparseTensor) -> tuple:
    """(indices, values) of ``t`` as an elementwise COO tensor: indices (sparse_dim, n), values (n, *dense dims).

    Compressed layouts expand their pointers; block layouts expand each (R, C) block into its R*C elements.
    """
    if t.layout is L.sparse_coo:
        return t._indices, t._values
    nnz = t._plain.shape[0]
    outer = _expand_compressed(t._compressed, nnz)
    rows, cols = (outer, t._plain) if t.layout in _ROW_COMPRESSED else (t._plain, outer)
    if t.layout not in _BLOCKED:
        return stack([rows, cols]), t._values
    r, c = t._values.shape[1:3]
    device = t._values.device
    rows = (reshape(rows, (nnz, 1, 1)) * r + reshape(arange(r, device=device), (1, r, 1))).expand(nnz, r, c)
    cols = (reshape(cols, (nnz, 1, 1)) * c + reshape(arange(c, device=device), (1, 1, c))).expand(nnz, r, c)
    return stack([rows.reshape(-1), cols.reshape(-1)]), t._values.reshape((nnz * r * c,) + t._values.shape[3:])


def linear_index(index: Tensor, sizes: tuple) -> Tensor:
    """Row-major position of each column of ``index`` (sparse_dim, n) in a tensor of shape ``sizes``."""
    linear = zeros(index.shape[1], dtype=dt.int64, device=index.device)
    for d, size in enumerate(sizes):
        linear = linear * size + index[d]
    return linear


def _unravel(linear: Tensor, sizes: tuple) -> Tensor:
    """Inverse of :func:`linear_index`: the (len(sizes), n) coordinates of row-major positions."""
    rows = []
    for size in reversed(sizes):
        rows.append(remainder(linear, size))
        linear = floor_divide(linear, size)
    if not rows:  # no sparse dims (a 0-d tensor): every element sits at the empty coordinate
        return zeros((0, linear.shape[0]), dtype=dt.int64, device=linear.device)
    return stack(rows[::-1])


def coalesced_coo(index: Tensor, values: Tensor, shape: tuple) -> SparseTensor:
    """The coalesced COO tensor of ``shape`` with duplicate coordinates of ``index`` summed (in ``values``)."""
    sizes = shape[:index.shape[0]]
    if index.shape[1] == 0:
        return make_sparse(L.sparse_coo, shape, values, indices=index, coalesced=True)
    positions, inverse = unique(linear_index(index, sizes), sorted=True, return_inverse=True)
    summed = index_add(zeros((positions.shape[0],) + tuple(values.shape[1:]), dtype=values.dtype,
                             device=values.device), 0, inverse, values)
    return make_sparse(L.sparse_coo, shape, summed, indices=_unravel(positions, sizes), coalesced=True)


def coalesce(self) -> SparseTensor:
    """The COO tensor with sorted, unique indices, duplicates summed (``torch.Tensor.coalesce``); self if already."""
    expect_layout("coalesce", self, (L.sparse_coo,))
    if self._coalesced:
        return self
    return coalesced_coo(self._indices, self._values, self._shape)


def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
    """The dense (strided) tensor with the same elements (``torch.Tensor.to_dense``); differentiable in values."""
    if not _is_sparse(self):
        return self if dtype is None else self.to(dtype)
    index, vals = coo_parts(self)
    sparse_shape = self._shape[:index.shape[0]]
    flat = zeros((numel(sparse_shape),) + tuple(vals.shape[1:]), dtype=vals.dtype, device=vals.device)
    dense = index_add(flat, 0, linear_index(index, sparse_shape), vals).reshape(self._shape)
    return dense if dtype is None else dense.to(dtype)


_export(coalesce, function=False)
_export(to_dense, function=False)


# -- dense to sparse -----------------------------------------------------------------------------------

def to_sparse_coo(self, sparse_dim=None) -> SparseTensor:
    """A coalesced COO tensor of the nonzero elements (``torch.Tensor.to_sparse_coo``).

    With ``sparse_dim`` only the first dimensions are sparse; the rest stay dense in the values."""
    if _is_sparse(self):
        if self.layout is L.sparse_coo:
            return self
        index, vals = coo_parts(self)
        return coalesced_coo(index, vals, self._shape)
    sparse_dim = self.ndim if sparse_dim is None else sparse_dim
    if not (0 < sparse_dim <= self.ndim or sparse_dim == self.ndim == 0):
        raise RuntimeError(f"to_sparse(): sparse_dim argument must be in [1, {self.ndim}] (0 only for a 0-d tensor), "
                           f"but got {sparse_dim}")
    flat = self.reshape((numel(self._shape[:sparse_dim]),) + self._shape[sparse_dim:])
    present = flat != 0 if flat.ndim == 1 else (flat != 0).reshape(flat.shape[0], -1).any(1)
    positions = nonzero(present).reshape(-1)
    index = _unravel(positions, self._shape[:sparse_dim])
    return make_sparse(L.sparse_coo, self._shape, index_select(flat, 0, positions), indices=index, coalesced=True)


def _blocks(dense: Tensor, blocksize: tuple, op: str) -> Tensor:
    """A 2-D tensor cut into its (rows/R, cols/C, R, C) blocks."""
    r, c = blocksize
    n, m = dense.shape[:2]
    if n % r or m % c:
        raise RuntimeError(f"{op}(): tensor shape ({n}, {m}) must be divisible by blocksize {tuple(blocksize)}")
    return dense.reshape(n // r, r, m // c, c).permute(0, 2, 1, 3)


def _compress(layout, shape: tuple, outer: Tensor, inner: Tensor, values: Tensor, outer_count: int):
    """A compressed tensor from entries sorted by (outer, inner): pointers from the counts per outer index."""
    counts = bincount(outer, minlength=outer_count)
    compressed = cat([zeros(1, dtype=dt.int64, device=outer.device), cumsum(counts, 0)])
    return make_sparse(layout, shape, values, compressed=compressed, plain=inner)


def _sparse_to_compressed(self, layout) -> SparseTensor:
    """A sparse tensor (2 sparse dims) in CSR or CSC, its stored entries kept (duplicates summed), never densified."""
    index, vals = coo_parts(self)
    row_major = layout in _ROW_COMPRESSED
    if not row_major:  # sort by (column, row)
        index = index.flip(0)
    sizes = tuple(self._shape[:2]) if row_major else (self._shape[1], self._shape[0])
    coo = coalesced_coo(index, vals, sizes + tuple(self._shape[2:]))
    return _compress(layout, self._shape, coo._indices[0], coo._indices[1], coo._values, sizes[0])


def _to_compressed(self, layout, blocksize, op: str) -> SparseTensor:
    """``self`` (dense 2-D, or sparse with 2 sparse dims) in a compressed layout."""
    if _is_sparse(self) and self.layout is layout:
        return self
    blocked = layout in _BLOCKED
    if _is_sparse(self) and not blocked and sparse_dim(self) == 2:
        return _sparse_to_compressed(self, layout)
    if self.ndim != 2:
        raise RuntimeError(f"{op}(): only 2-D tensors are supported (batch and dense dimensions are not), but got "
                           f"{self.ndim}-D")
    if blocked and (blocksize is None or len(blocksize) != 2):
        raise RuntimeError(f"{op}(): blocksize must be a tuple of two ints, but got {blocksize!r}")
    dense = to_dense(self)  # dense input, or a sparse one going to blocks
    row_major = layout in _ROW_COMPRESSED
    grid = _blocks(dense, blocksize, op) if blocked else dense.reshape(dense.shape + (1, 1))
    if not row_major:
        grid = grid.permute(1, 0, 2, 3)
    outer, inner = grid.shape[:2]
    cells = grid.reshape(outer * inner, *grid.shape[2:])
    positions = nonzero((cells != 0).reshape(outer * inner, -1).any(1)).reshape(-1)
    stored = index_select(cells, 0, positions)
    values = stored if blocked else stored.reshape(-1)
    return _compress(layout, self._shape, floor_divide(positions, inner), remainder(positions, inner), values, outer)


def to_sparse_csr(self, dense_dim=None) -> SparseTensor:
    """The tensor in CSR layout (``torch.Tensor.to_sparse_csr``)."""
    return _to_compressed(self, L.sparse_csr, None, "to_sparse_csr")


def to_sparse_csc(self, dense_dim=None) -> SparseTensor:
    """The tensor in CSC layout (``torch.Tensor.to_sparse_csc``)."""
    return _to_compressed(self, L.sparse_csc, None, "to_sparse_csc")


def to_sparse_bsr(self, blocksize, dense_dim=None) -> SparseTensor:
    """The tensor in BSR layout with (R, C) blocks (``torch.Tensor.to_sparse_bsr``)."""
    return _to_compressed(self, L.sparse_bsr, tuple(blocksize), "to_sparse_bsr")


def to_sparse_bsc(self, blocksize, dense_dim=None) -> SparseTensor:
    """The tensor in BSC layout with (R, C) blocks (``torch.Tensor.to_sparse_bsc``)."""
    return _to_compressed(self, L.sparse_bsc, tuple(blocksize), "to_sparse_bsc")


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> SparseTensor:
    """The tensor in a sparse ``layout`` (COO by default) (``torch.Tensor.to_sparse``)."""
    if layout is None or layout is L.sparse_coo:
        return to_sparse_coo(self, sparse_dim)
    if layout in _BLOCKED:
        return _to_compressed(self, layout, None if blocksize is None else tuple(blocksize), "to_sparse")
    if layout in COMPRESSED_LAYOUTS:
        return _to_compressed(self, layout, None, "to_sparse")
    raise RuntimeError(f"to_sparse(): expected a sparse layout, but got {layout!r}")


def sparse_mask(self, mask) -> SparseTensor:
    """The elements of dense ``self`` at the stored positions of sparse ``mask`` (``torch.Tensor.sparse_mask``)."""
    expect_layout("sparse_mask", mask, SPARSE_LAYOUTS)
    if tuple(self.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(self.shape)} but "
                           f"mask has size {list(mask.shape)}")
    if mask.layout is not L.sparse_coo:
        coo = sparse_mask(self, to_sparse_coo(mask))
        return _to_compressed(coo, mask.layout, tuple(mask._values.shape[1:3]) if mask.layout in _BLOCKED else None,
                              "sparse_mask")
    sdim = mask._indices.shape[0]
    flat = to_dense(self).reshape((numel(self.shape[:sdim]),) + tuple(self.shape[sdim:]))
    picked = index_select(flat, 0, linear_index(mask._indices, tuple(self.shape[:sdim])))
    return make_sparse(L.sparse_coo, tuple(self.shape), picked, indices=mask._indices, coalesced=mask._coalesced)


for _fn in (to_sparse, to_sparse_coo, to_sparse_csr, to_sparse_csc, to_sparse_bsr, to_sparse_bsc, sparse_mask):
    _export(_fn, function=False)


# -- sums ------------------------------------------------------------------------------------------------

def sum_sparse(input, dim=None, dtype=None):
    """Sum over ``dim`` (all when None): dense when every sparse dim is summed, else a coalesced COO tensor
    (what ``torch.sparse.sum`` and ``torch.sum`` of a sparse tensor compute)."""
    coo = to_sparse_coo(input)
    values = coo._values if dtype is None else coo._values.to(dtype)
    if dim is None:
        return values.sum()
    dims = wrap_dims(dim if isinstance(dim, (list, tuple)) else (dim,), input.ndim, "sum")
    sparse_dims = coo._indices.shape[0]
    kept_sparse = [d for d in range(sparse_dims) if d not in dims]
    summed_dense = tuple(d - sparse_dims + 1 for d in dims if d >= sparse_dims)
    if summed_dense:
        values = values.sum(summed_dense)
    if not kept_sparse:
        return values.sum(0)
    shape = tuple(s for d, s in enumerate(input.shape) if d not in dims)
    return coalesced_coo(coo._indices[kept_sparse], values, shape)


# -- resizing ------------------------------------------------------------------------------------------

def _resize_parts(op: str, self, size, sparse_dim: int, dense_dim: int) -> tuple:
    expect_layout(op, self, (L.sparse_coo,))
    size = tuple(builtins.int(s) for s in size)
    if sparse_dim + dense_dim != len(size):
        raise RuntimeError(f"{op}(): number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim "
                           f"({dense_dim}), but got {len(size)}")
    return size


def sparse_resize_and_clear_(self, size, sparse_dim, dense_dim) -> SparseTensor:
    """Resize a COO tensor in place and drop its elements (``torch.Tensor.sparse_resize_and_clear_``).

    The new ``size`` splits into ``sparse_dim`` sparse and ``dense_dim`` dense dimensions."""
    size = _resize_parts("sparse_resize_and_clear_", self, size, sparse_dim, dense_dim)
    device = self._values.device
    self._indices = zeros((sparse_dim, 0), dtype=dt.int64, device=device)
    self._values = zeros((0,) + size[sparse_dim:], dtype=self.dtype, device=device)
    self._shape, self._stride, self._coalesced = size, contiguous_strides(size), True
    return self


def sparse_resize_(self, size, sparse_dim, dense_dim) -> SparseTensor:
    """Resize a COO tensor in place, keeping its elements (``torch.Tensor.sparse_resize_``).

    A non-empty tensor keeps its sparse/dense dims and dense sizes and cannot shrink its sparse sizes."""
    size = _resize_parts("sparse_resize_", self, size, sparse_dim, dense_dim)
    if self._values.shape[0] == 0:
        return sparse_resize_and_clear_(self, size, sparse_dim, dense_dim)
    if sparse_dim != self._indices.shape[0] or dense_dim != self._values.ndim - 1:
        raise RuntimeError(f"sparse_resize_(): resizing a non-empty sparse tensor needs the same sparse_dim "
                           f"({self._indices.shape[0]}) and dense_dim ({self._values.ndim - 1}), but got "
                           f"{sparse_dim} and {dense_dim}")
    if size[sparse_dim:] != tuple(self._values.shape[1:]):
        raise RuntimeError("sparse_resize_(): resizing dense dimensions of a non-empty sparse tensor is not "
                           "supported")
    if any(new < old for new, old in zip(size[:sparse_dim], self._shape[:sparse_dim])):
        raise RuntimeError("sparse_resize_(): shrinking the size of sparse dimensions (from "
                           f"{list(self._shape[:sparse_dim])} to {list(size[:sparse_dim])}) on a non-empty sparse "
                           "tensor is not supported")
    self._shape, self._stride = size, contiguous_strides(size)
    return self


def resize_as_sparse_(self, src) -> SparseTensor:
    """Resize COO ``self`` in place to ``src``'s size and sparse/dense dims (``torch.resize_as_sparse_``)."""
    expect_layout("resize_as_sparse_", src, (L.sparse_coo,))
    if (sparse_dim(self), dense_dim(self), tuple(self.shape)) != (sparse_dim(src), dense_dim(src), tuple(src.shape)):
        sparse_resize_(self, src.shape, sparse_dim(src), dense_dim(src))
    return self


_export(sparse_resize_, function=False)
_export(sparse_resize_and_clear_, function=False)
_export(resize_as_sparse_)


# -- products ------------------------------------------------------------------------------------------

def _check_product(op: str, mat1, mat2) -> None:
    """mat1 a 2-D sparse matrix (no dense dims), mat2 a dense matrix it can multiply, same dtype."""
    expect_layout(op, mat1, SPARSE_LAYOUTS)
    if not isinstance(mat2, Tensor) or _is_sparse(mat2):
        raise RuntimeError(f"{op}(): expected mat2 to be a dense (strided) tensor, but got "
                           f"{getattr(mat2, 'layout', type(mat2).__name__)!r}")
    if mat1.ndim != 2 or dense_dim(mat1) != 0 or mat2.ndim != 2:
        raise RuntimeError(f"{op}(): expected 2-D matrices (mat1 sparse with no dense dimensions), but got "
                           f"{mat1.ndim}-D and {mat2.ndim}-D")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"{op}(): mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"{op}(): expected mat1 and mat2 to have the same dtype, but got: {mat1.dtype!r} != "
                           f"{mat2.dtype!r}")


def _sparse_mm_meta(rows, cols, values, dense, size, compressed, transpose):
    """The (m, n) or, transposed, (k, n) dense result of the (m, k) sparse matrix given by its components times
    ``dense``; checks the components' shapes, dtypes and the inner dimension."""
    for name, t in (("rows", rows), ("cols", cols), ("values", values), ("dense", dense)):
        if not isinstance(t, Tensor) or _is_sparse(t):
            raise TypeError(f"sparse_mm(): argument '{name}' must be a dense Tensor, not {type(t).__name__}")
    if rows.dtype is not dt.int64 or cols.dtype is not dt.int64:
        raise RuntimeError(f"sparse_mm(): rows and cols must be int64 tensors, but got {rows.dtype!r} and "
                           f"{cols.dtype!r}")
    m, k = (builtins.int(s) for s in size)
    nnz = values.shape[0] if values.ndim == 1 else -1
    if cols.ndim != 1 or cols.shape[0] != nnz or rows.ndim != 1 \
            or rows.shape[0] != (m + 1 if compressed else nnz):
        raise RuntimeError(f"sparse_mm(): expected 1-D values and cols of one length (nnz) and rows of length "
                           f"{'m + 1' if compressed else 'nnz'}, but got {list(values.shape)}, {list(cols.shape)} "
                           f"and {list(rows.shape)}")
    inner, outer = (m, k) if transpose else (k, m)
    if dense.ndim != 2 or dense.shape[0] != inner:
        raise RuntimeError(f"sparse_mm(): the sparse matrix ({m}x{k}{', transposed' if transpose else ''}) and "
                           f"dense {list(dense.shape)} cannot be multiplied")
    if values.dtype is not dense.dtype:
        raise RuntimeError(f"sparse_mm(): expected values and dense to have the same dtype, but got: "
                           f"{values.dtype!r} != {dense.dtype!r}")
    return TensorSpec((outer, dense.shape[1]), dense.dtype, dense.device)


def element_rows(rows: Tensor, cols: Tensor, compressed: bool) -> Tensor:
    """The row of each stored entry: ``rows`` itself (COO) or its pointers expanded (CSR)."""
    return _expand_compressed(rows, cols.shape[0]) if compressed else rows


def _sparse_mm_composite(rows, cols, values, dense, size, compressed, transpose):
    """sparse_mm on a device without the library kernel: each stored entry (i, j, v) adds ``v * dense[j]`` to
    row i of the result (``index_select`` + ``index_add``)."""
    spec = _sparse_mm_meta(rows, cols, values, dense, size, compressed, transpose)
    rows = element_rows(rows, cols, compressed)
    out_index, in_index = (cols, rows) if transpose else (rows, cols)
    contributions = values.reshape(-1, 1) * index_select(dense, 0, in_index)
    return index_add(zeros(spec.shape, dtype=dense.dtype, device=dense.device), 0, out_index, contributions)


sparse_mm = define(
    "sparse_mm", meta=_sparse_mm_meta, decomposition=_sparse_mm_composite,
    doc="op(S) @ dense for the (m, k) sparse matrix S with entries values at (rows, cols) (compressed: rows are CSR "
        "row pointers), op the transpose when transpose; the reference kernel calls scipy.sparse (NumPy) or "
        "cupyx.scipy.sparse (CuPy), other devices run the index_select/index_add composite")


def spmm(input, mat2) -> Tensor:
    """Sparse ``input`` times dense ``mat2``, a dense matrix (``torch.spmm``); differentiable in both.

    COO, CSR and CSC run the ``sparse_mm`` op on their components (SciPy's or cuSPARSE's kernel where the
    backend has one), BSR and BSC as their elementwise COO form. The gradient of the values is the sampled
    product ``(grad[i] * mat2[j]).sum()``, that of ``mat2`` the transposed product ``input.T @ grad``.
    """
    _check_product("spmm", input, mat2)
    shape = tuple(input.shape)
    if input.layout is L.sparse_coo:
        return sparse_mm(input._indices[0], input._indices[1], input._values, mat2, shape, False, False)
    if input.layout is L.sparse_csr:
        return sparse_mm(input._compressed, input._plain, input._values, mat2, shape, True, False)
    if input.layout is L.sparse_csc:  # its pointers are those of the CSR transpose
        return sparse_mm(input._compressed, input._plain, input._values, mat2, shape[::-1], True, True)
    index, vals = coo_parts(input)
    return sparse_mm(index[0], index[1], vals, mat2, shape, False, False)


def sparse_sparse_mm(mat1, mat2) -> SparseTensor:
    """Product of two 2-D sparse matrices, a coalesced COO result (CSR when ``mat1`` is CSR), never densified.

    Every stored entry (i, j, v) of ``mat1`` meets the entries of row j of ``mat2`` (found through its CSR row
    pointers): the pairs are enumerated with ``repeat_interleave``, multiplied, and coalesced into (i, k) sums;
    differentiable in both operands' values.
    """
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        if t.ndim != 2 or dense_dim(t) != 0:
            raise RuntimeError(f"sparse.mm(): expected {name} to be a 2-D sparse matrix without dense dimensions, "
                               f"but got {t.ndim}-D with {dense_dim(t)} dense dimensions")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"sparse.mm(): mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} "
                           f"and {mat2.shape[0]}x{mat2.shape[1]})")
    index, vals = coo_parts(mat1)
    rows_of_mat2 = _to_compressed(mat2, L.sparse_csr, None, "sparse.mm")
    pointers, columns = rows_of_mat2._compressed, rows_of_mat2._plain
    starts = index_select(pointers, 0, index[1])
    counts = index_select(pointers, 0, index[1] + 1) - starts
    owner = repeat_interleave(counts)  # the mat1 entry of each pair
    offset = arange(owner.shape[0], dtype=dt.int64, device=owner.device) - index_select(cumsum(counts, 0) - counts,
                                                                                          0, owner)
    partner = index_select(starts, 0, owner) + offset  # the mat2 entry of each pair
    pairs = stack([index_select(index[0], 0, owner), index_select(columns, 0, partner)])
    product = index_select(vals, 0, owner) * index_select(rows_of_mat2._values, 0, partner)
    result = coalesced_coo(pairs, product, (mat1.shape[0], mat2.shape[1]))
    return _sparse_to_compressed(result, L.sparse_csr) if mat1.layout is L.sparse_csr else result


def dsmm(input, mat2) -> Tensor:
    """Sparse times dense into a dense matrix: the legacy name of :func:`spmm` (``torch.dsmm``)."""
    return spmm(input, mat2)


def hspmm(mat1, mat2) -> SparseTensor:
    """Sparse times dense into a hybrid COO tensor: the product's rows that ``mat1`` touches (``torch.hspmm``).

    The result has 1 sparse and 1 dense dimension."""
    _check_product("hspmm", mat1, mat2)
    index, _ = coo_parts(mat1)
    rows = unique(index[0]) if index.shape[1] else index[0]
    product_rows = index_select(spmm(mat1, mat2), 0, rows)
    return make_sparse(L.sparse_coo, (mat1.shape[0], mat2.shape[1]), product_rows, indices=rows.reshape(1, -1),
                       coalesced=True)


def hsmm(mat1, mat2) -> SparseTensor:
    """Hybrid sparse product: the legacy name of :func:`hspmm` (``torch.hsmm``)."""
    return hspmm(mat1, mat2)


def _flatten_hybrid(t: SparseTensor) -> tuple:
    """(indices, values) of a (1 sparse + 1 dense dim) COO tensor as a 2-D elementwise COO tensor."""
    rows, width = t._indices[0], t._values.shape[1]
    columns = arange(width, dtype=dt.int64, device=rows.device)
    grid_rows = rows.reshape(-1, 1).expand(rows.shape[0], width).reshape(-1)
    grid_cols = columns.reshape(1, -1).expand(rows.shape[0], width).reshape(-1)
    return stack([grid_rows, grid_cols]), t._values.reshape(-1)


def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None) -> SparseTensor:
    """``beta * input + alpha * (mat1 @ mat2)``, sparse ``input`` and ``mat1``, a sparse result (``torch.sspaddmm``)."""
    expect_layout("sspaddmm", input, (L.sparse_coo,))
    _check_product("sspaddmm", mat1, mat2)
    if tuple(input.shape) != (mat1.shape[0], mat2.shape[1]):
        raise RuntimeError(f"sspaddmm(): input has size {list(input.shape)} but the product has size "
                           f"{[mat1.shape[0], mat2.shape[1]]}")
    product_index, product_values = _flatten_hybrid(hspmm(mat1, mat2))
    own_index, own_values = coo_parts(input)
    return coalesced_coo(cat([own_index, product_index], 1),
                          cat([own_values * beta, product_values * alpha]), tuple(input.shape))


def saddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None) -> SparseTensor:
    """Sparse ``beta * input + alpha * (mat1 @ mat2)``: the legacy name of :func:`sspaddmm` (``torch.saddmm``)."""
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha)


def smm(input, mat) -> SparseTensor:
    """Sparse ``input`` times dense ``mat``, a sparse COO result (``torch.smm``)."""
    _check_product("smm", input, mat)
    index, values = _flatten_hybrid(hspmm(input, mat))
    return coalesced_coo(index, values, (input.shape[0], mat.shape[1]))


for _fn in (spmm, dsmm, hspmm, hsmm, saddmm):
    _export(_fn, method=False)
_export(sspaddmm)
_export(smm)


# -- the Sparse dispatch key -------------------------------------------------------------------------------

def _not_implemented(op, below, *args, **kwargs):
    """Every op without a Sparse kernel: PyTorch's NotImplementedError for the sparse operand's backend."""
    sparse = next(a for a in _flat(args, kwargs) if _is_sparse(a))
    raise NotImplementedError(f"{op.name}(): could not run with arguments from the '{sparse.dispatch_name}' backend "
                              f"(layout {sparse.layout!r}): the op has no sparse kernel; convert with .to_dense() "
                              f"first")


def _flat(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


def _sparse_kernel(name: str):
    """Register the decorated function as op ``name``'s Sparse-key kernel (it is called without ``op``/``below``)."""
    def register(fn):
        def kernel(op, below, *args, **kwargs):
            out = fn(*args, **kwargs)
            if out is NotImplemented:
                return _not_implemented(op, below, *args, **kwargs)
            return out

        get_operator(name).register_kernel(Sparse, kernel, owner="core.ops.sparse")
        return fn

    return register


@_sparse_kernel("batched_matmul")
def _matmul_sparse(a, b):
    """``mm``, ``matmul``, ``addmm``, ``mv`` with a 2-D sparse operand: sparse @ dense, dense @ sparse, and
    sparse @ sparse (a sparse result)."""
    if _is_sparse(a) and not _is_sparse(b) and a.ndim == 2:
        return spmm(a, b)
    if _is_sparse(a) and _is_sparse(b):
        return sparse_sparse_mm(a, b)
    if _is_sparse(b) and not _is_sparse(a) and b.ndim == 2 and a.ndim == 2:  # (Sᵀ @ aᵀ)ᵀ
        index, vals = coo_parts(b)
        transposed = make_sparse(L.sparse_coo, (b.shape[1], b.shape[0]), vals, indices=index.flip(0))
        return spmm(transposed, a.T).T
    return NotImplemented


@_sparse_kernel("_to_copy")
def _to_copy_sparse(self, dtype=None, device=None, non_blocking=False):
    """``t.to(dtype/device)`` of a sparse tensor: every component moved, the values cast."""
    parts = [None if p is None else p.to(device) for p in (self._indices, self._compressed, self._plain)]
    values = self._values.to(device=device, dtype=dtype)
    return make_sparse(self.layout, self._shape, values, *parts, coalesced=self._coalesced)


@_sparse_kernel("sum")
def _sum_kernel(input, dims, keepdim=False, dtype=None):
    """``torch.sum`` of a sparse tensor (``keepdim`` is not supported, as in PyTorch)."""
    if keepdim:
        return NotImplemented
    return sum_sparse(input, None if len(dims) == input.ndim else dims, dtype)


_TRANSPOSED_LAYOUT = {L.sparse_csr: L.sparse_csc, L.sparse_csc: L.sparse_csr, L.sparse_bsr: L.sparse_bsc,
                      L.sparse_bsc: L.sparse_bsr}


@_sparse_kernel("transpose")
def _transpose_sparse(self, dim0, dim1):
    """``t()``/``transpose`` of sparse dims: COO swaps index rows (uncoalesced, as in PyTorch); CSR and CSC (BSR and
    BSC, blocks transposed) trade places over the same arrays."""
    dim0, dim1 = wrap_dim(dim0, self.ndim, "transpose"), wrap_dim(dim1, self.ndim, "transpose")
    shape = list(self._shape)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    if dim0 == dim1:
        return self
    if max(dim0, dim1) >= sparse_dim(self):
        raise RuntimeError(f"transpose(): transposing a sparse dimension with a dense one is not supported "
                           f"(layout {self.layout!r}, sparse_dim {sparse_dim(self)})")
    if self.layout is L.sparse_coo:
        order = list(range(self._indices.shape[0]))
        order[dim0], order[dim1] = order[dim1], order[dim0]
        return make_sparse(L.sparse_coo, tuple(shape), self._values, indices=self._indices[order])
    values = self._values.transpose(1, 2) if self.layout in _BLOCKED else self._values
    return make_sparse(_TRANSPOSED_LAYOUT[self.layout], tuple(shape), values, compressed=self._compressed,
                       plain=self._plain)


@_sparse_kernel("permute")
def _permute_sparse(self, dims):
    """``permute`` (and ``.T``) within the sparse dims and within the dense dims; 2-D compressed: a transpose."""
    dims = [wrap_dim(d, self.ndim, "permute") for d in dims]
    if sorted(dims) != list(range(self.ndim)):
        raise RuntimeError(f"permute(): dims {dims} are not a permutation of the {self.ndim} dimensions")
    sdim = sparse_dim(self)
    if sorted(dims[:sdim]) != list(range(sdim)):
        raise RuntimeError(f"permute(): sparse and dense dimensions cannot be exchanged (layout {self.layout!r}, "
                           f"sparse_dim {sdim}, dims {dims})")
    if self.layout is not L.sparse_coo:
        return _transpose_sparse(self, 0, 1) if dims[:2] == [1, 0] else self
    values = self._values.permute([0] + [d - sdim + 1 for d in dims[sdim:]])
    return make_sparse(L.sparse_coo, tuple(self._shape[d] for d in dims), values, indices=self._indices[dims[:sdim]])


def _scaled_by(t, alpha):
    return t if alpha == 1 else t * alpha


@_sparse_kernel("add")
def _add_sparse(input, other, alpha=1):
    """sparse + sparse (one shape and layout, COO/CSR/CSC: duplicates summed, the layout kept); sparse + dense
    is dense, as in PyTorch."""
    if _is_sparse(input) and _is_sparse(other):
        if input.layout is not other.layout or tuple(input.shape) != tuple(other.shape) or input.layout in _BLOCKED:
            return NotImplemented
        (a_index, a_values), (b_index, b_values) = coo_parts(input), coo_parts(other)
        total = coalesced_coo(cat([a_index, b_index], 1), cat([a_values, _scaled_by(b_values, alpha)]),
                              tuple(input.shape))
        return total if input.layout is L.sparse_coo else _sparse_to_compressed(total, input.layout)
    if _is_sparse(input):
        return to_dense(input) + _scaled_by(other, alpha)
    return input + _scaled_by(to_dense(other), alpha)


def _scaled(input, other, scale):
    """sparse * number, sparse / number: the values scaled, the pattern kept."""
    if _is_sparse(input) and isinstance(other, numbers.Number):
        return input.with_values(scale(input._values, other))
    return NotImplemented


def _times_dense(input, other):
    """sparse * dense of the same shape: a sparse result on the sparse operand's pattern (as in PyTorch)."""
    if not (_is_sparse(input) and isinstance(other, Tensor) and not _is_sparse(other)
            and tuple(other.shape) == tuple(input.shape)):
        return NotImplemented
    index, vals = coo_parts(input)
    sizes = tuple(input.shape[:index.shape[0]])
    flat = other.reshape((numel(sizes),) + tuple(other.shape[len(sizes):]))
    picked = index_select(flat, 0, linear_index(index, sizes))
    return input.with_values((vals * picked).reshape(input._values.shape))


@_sparse_kernel("mul")
def _mul_sparse(input, other):
    """sparse * number (either side) and sparse * dense of the same shape (either side)."""
    if not _is_sparse(input):
        input, other = other, input
    if isinstance(other, numbers.Number):
        return _scaled(input, other, mul)
    return _times_dense(input, other)


_sparse_kernel("div")(lambda a, b, rounding_mode=None: _scaled(a, b, lambda v, s: v / s)
                      if rounding_mode is None else NotImplemented)
_sparse_kernel("neg")(lambda a: a.with_values(-a._values))

set_functionality_fallback(Sparse, _not_implemented)
