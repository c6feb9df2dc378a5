"""``core.sparse``: torch.sparse's functions over sparse tensors (``torch.sparse``).

Sparse tensors and their constructors are in ``core`` (``core.sparse_coo_tensor``...); this namespace holds the
products and the reductions that keep sparsity. All are composites over the component tensors
(``core/ops/sparse.py``), so they run on every device and are differentiable in the values and dense operands;
sparse @ dense is the ``sparse_mm`` op, on SciPy's (cpu) or cuSPARSE's (cuda) kernel where the backend has it.
"""

from __future__ import annotations


from . import layouts as _layout
from .ops import sparse as _sp
from .ops._util import wrap_dims as _wrap_dims
from .ops.creation import zeros as _zeros
from .ops.elementwise import exp as _exp, log as _log
from .ops.indexing import index_add as _index_add, index_select as _index_select, scatter_reduce as _scatter_reduce
from .ops.sorting import unique as _unique
from .sparse_tensor import SparseTensor as _SparseTensor

__all__ = ["addmm", "log_softmax", "mm", "sampled_addmm", "softmax", "sum"]


def mm(mat1, mat2, reduce=None):
    """Product of sparse ``mat1`` and a dense or sparse ``mat2`` (``torch.sparse.mm``).

    Dense ``mat2`` gives a dense result, sparse ``mat2`` a coalesced COO one (CSR for CSR ``mat1``); gradients
    flow to both operands' values (sparse gradients for sparse leaves) and to a dense ``mat2``.

    ``reduce`` (PyTorch's CSR-only row reduction) accepts ``None`` and ``"sum"``.
    """
    if reduce not in (None, "sum"):
        raise RuntimeError(f"sparse.mm(): reduce={reduce!r} is not supported here (only None and 'sum')")
    if isinstance(mat2, _SparseTensor):
        _sp.expect_layout("sparse.mm", mat1, _sp.SPARSE_LAYOUTS)
        return _sp.sparse_sparse_mm(mat1, mat2)
    return _sp.spmm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)``, sparse ``mat1``, dense ``mat`` and ``mat2`` (``torch.sparse.addmm``)."""
    return mat * beta + _sp.spmm(mat1, mat2) * alpha


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` at ``input``'s stored positions (``torch.sparse.sampled_addmm``).

    ``input`` is CSR; so is the result, on its pattern."""
    _sp.expect_layout("sampled_addmm", input, (_layout.sparse_csr,))
    if mat1.ndim != 2 or mat2.ndim != 2 or mat1.shape[1] != mat2.shape[0] \
            or tuple(input.shape) != (mat1.shape[0], mat2.shape[1]):
        raise RuntimeError(f"sampled_addmm(): expected input {list(input.shape)} = mat1 {list(mat1.shape)} @ mat2 "
                           f"{list(mat2.shape)} (2-D matrices)")
    index, vals = _sp.coo_parts(input)
    sampled = (_index_select(mat1, 0, index[0]) * _index_select(mat2.T, 0, index[1])).sum(1)
    return input.with_values(vals * beta + sampled * alpha)


def sum(input, dim=None, dtype=None):  # noqa: A001 - torch.sparse.sum
    """Sum of a sparse tensor's elements over ``dim``, all when None (``torch.sparse.sum``).

    The result is dense when every sparse dimension is summed, else a coalesced COO tensor over the others."""
    _sp.expect_layout("sparse.sum", input, _sp.SPARSE_LAYOUTS)
    return _sp.sum_sparse(input, dim, dtype)


def _softmax(op: str, input, dim: int, dtype, log: bool):
    """Softmax over the stored entries along ``dim`` (absent entries count as -inf, so they stay absent); a CSR
    input runs as COO and comes back as CSR."""
    _sp.expect_layout(op, input, (_layout.sparse_coo, _layout.sparse_csr))
    if input.layout is _layout.sparse_csr:
        return _sp.to_sparse_csr(_softmax(op, _sp.to_sparse_coo(input), dim, dtype, log))
    coo = _sp.coalesce(input)
    values = coo._values if dtype is None else coo._values.to(dtype)
    (dim,) = _wrap_dims((dim,), input.ndim, op)
    sparse_dims = coo._indices.shape[0]
    if dim >= sparse_dims:  # a dense dimension: an ordinary softmax of the values
        dense_dim = dim - sparse_dims + 1
        result = values.log_softmax(dense_dim) if log else values.softmax(dense_dim)
        return coo.with_values(result)
    others = [d for d in range(sparse_dims) if d != dim]
    if others:
        line = _sp.linear_index(coo._indices[others], tuple(input.shape[d] for d in others))
        _, group = _unique(line, return_inverse=True)
    else:
        group = _zeros(values.shape[0], dtype=values.dtype, device=values.device).long()
    groups = int(group.max()) + 1 if values.shape[0] else 0
    shape = (groups,) + tuple(values.shape[1:])
    index = group.reshape((-1,) + (1,) * (values.ndim - 1)).expand(values.shape)
    peak = _scatter_reduce(_zeros(shape, dtype=values.dtype, device=values.device), 0, index, values.detach(), "amax",
                           include_self=False)
    shifted = values - _index_select(peak, 0, group)  # softmax is shift-invariant: the detached max is exact
    total = _index_add(_zeros(shape, dtype=values.dtype, device=values.device), 0, group, _exp(shifted))
    result = shifted - _log(_index_select(total, 0, group)) if log else _exp(shifted) / _index_select(total, 0, group)
    return coo.with_values(result)


def softmax(input, dim, *, dtype=None):
    """Softmax of a sparse COO or CSR tensor along ``dim`` over its stored entries (``torch.sparse.softmax``)."""
    return _softmax("sparse.softmax", input, dim, dtype, log=False)


def log_softmax(input, dim, *, dtype=None):
    """Log-softmax of a sparse COO or CSR tensor along ``dim`` over stored entries (``torch.sparse.log_softmax``)."""
    return _softmax("sparse.log_softmax", input, dim, dtype, log=True)
