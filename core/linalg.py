"""``core.linalg``: linear algebra with PyTorch's names, signatures and errors (``torch.linalg``).

The decompositions and what is built on them are declared in ``core/ops/decompositions.py``, the products in
``core/ops/linalg.py``; this module is the namespace. Every function takes stacks of matrices ``(..., m, n)``.
"""

from __future__ import annotations

from .errors import LinAlgError
from .ops import linalg as _products
from .ops._util import finish_out as _finish_out
from .ops.decompositions import (cholesky, cholesky_ex, cond, det, eig, eigh, eigvals, eigvalsh, inv, inv_ex, lstsq, lu,
                                 lu_factor, lu_factor_ex, lu_solve, matrix_exp, matrix_norm, matrix_power, matrix_rank,
                                 pinv, qr, slogdet, solve, solve_ex, solve_triangular, svd, svdvals, tensorinv,
                                 tensorsolve, vander, vector_norm)
from .ops.decompositions import linalg_norm as norm
from .ops.elementwise import conj as _conj, mul as _mul
from .ops.legacy_linalg import householder_product, ldl_factor, ldl_factor_ex, ldl_solve
from .ops.reduction import sum as _sum
from .ops.view import diagonal as _diagonal
from .tensor import Tensor as _Tensor

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

matmul = _products.matmul  # torch.linalg.matmul is torch.matmul


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of matrices, a view (``torch.linalg.diagonal``: ``torch.diagonal`` with the last two dims)."""
    return _diagonal(A, offset, dim1, dim2)


def cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along ``dim`` (default the last), broadcasting (``torch.linalg.cross``)."""
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, _Tensor):
            raise TypeError(f"linalg.cross(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    for t in (input, other):
        if not -t.ndim <= dim < max(t.ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-t.ndim}, {t.ndim - 1}], but "
                             f"got {dim})")
        if t._shape[dim] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                               f"{input._shape[dim]} and {other._shape[dim]}")
    return _products.cross(input, other, dim, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) over ``dim``, broadcasting (``torch.linalg.vecdot``)."""
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, _Tensor):
            raise TypeError(f"linalg.vecdot(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{x.dtype.name} and y of type {y.dtype.name} instead")
    return _finish_out("linalg.vecdot", _sum(_mul(_conj(x) if x.is_complex() else x, y), dim), out)


def multi_dot(tensors, *, out=None):
    """The product of matrices, the first and last may be vectors, multiplied in the cheapest order
    (``torch.linalg.multi_dot``)."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        end = i in (0, n - 1)
        if t.ndim not in ((1, 2) if end else (2,)):
            which = "the first tensor" if i == 0 else "the last tensor" if i == n - 1 else f"tensor {i}"
            raise RuntimeError(f"multi_dot(): {which} must be {'1D or 2D' if end else '2D'} but got {t.ndim}D")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{tensors[0].dtype.name} and tensor {i} is {t.dtype.name}")
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = [tensors[0].unsqueeze(0) if first_vector else tensors[0]] + tensors[1:-1] + \
        [tensors[-1].unsqueeze(1) if last_vector else tensors[-1]]
    for i in range(n - 1):
        if mats[i]._shape[1] != mats[i + 1]._shape[0]:
            a, b = mats[i]._shape, mats[i + 1]._shape
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes ({a[0]}, {a[1]}) and "
                               f"({b[0]}, {b[1]}) cannot be multiplied")
    result = _chain(mats, _order([m._shape[0] for m in mats] + [mats[-1]._shape[1]]), 0, n - 1)
    if first_vector:
        result = result.squeeze(0)
    if last_vector:
        result = result.squeeze(-1)
    return _finish_out("linalg.multi_dot", result, out)


def _order(dims: list) -> list:
    """The split points of the cheapest parenthesisation (the matrix-chain dynamic programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats: list, split: list, i: int, j: int):
    if i == j:
        return mats[i]
    k = split[i][j]
    return _products.mm(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))
