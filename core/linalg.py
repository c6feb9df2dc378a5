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
from .ops.linalg import multi_dot
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
