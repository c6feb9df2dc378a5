"""Decompositions and what is built on them: inv, det, slogdet, solve, cholesky, qr, eigh, svd (``torch.linalg``).

Each primitive works on stacks of matrices ``(..., m, n)`` and returns a tuple where the factorisation has several
parts; the reference kernels call the array module's ``linalg`` (LAPACK on the CPU, cuSOLVER under CuPy). Failures
are data, not exceptions: ``linalg_inv_ex``, ``linalg_solve_ex`` and ``linalg_cholesky_ex`` return LAPACK's
``info`` per matrix, and the front ends in :mod:`core.linalg` raise PyTorch's :class:`~core.errors.LinAlgError`
from it. Everything else in ``core.linalg`` (matrix_power, pinv, matrix_rank, multi_dot, ...) is a composite.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import dtypes as dt
from ..dispatch import TensorSpec, define
from ..errors import LinAlgError
from ..tensor import Tensor
from ._util import broadcast_shapes, common_device, finish_out, wrap_dim
from .creation import ones, tensor, zeros
from .elementwise import abs, div, gt, log, mul, where
from .linalg import matmul
from .ranges import eye
from .reduction import amax, amin, norm as _norm, return_type, sum
from .shape import cat
from .view import expand, squeeze, unsqueeze

# torch-level names; the rest of the front ends below are ``core.linalg``'s (see core/linalg.py)
__all__ = ["cholesky", "cholesky_inverse", "cholesky_solve", "det", "inverse", "logdet", "matrix_exp", "matrix_power",
           "pinverse", "slogdet"]

_inv_ex_t = return_type("linalg_inv_ex", ("inverse", "info"))
_solve_ex_t = return_type("linalg_solve_ex", ("result", "info"))
_cholesky_ex_t = return_type("linalg_cholesky_ex", ("L", "info"))
_linalg_slogdet_t = return_type("linalg_slogdet", ("sign", "logabsdet"))
_qr_t = return_type("linalg_qr", ("Q", "R"))
_eigh_t = return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
_svd_t = return_type("linalg_svd", ("U", "S", "Vh"))
_eig_t = return_type("linalg_eig", ("eigenvalues", "eigenvectors"))
_lu_factor_t = return_type("linalg_lu_factor", ("LU", "pivots"))
_lu_factor_ex_t = return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_lu_t = return_type("linalg_lu", ("P", "L", "U"))
_lstsq_t = return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))

_INFO = dt.int32


def check_matrix_input(op: str, A, name: str = "A", square: bool = True) -> None:
    """PyTorch's checks of a linalg input: a Tensor, at least 2-D, square when asked, floating point or complex."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if square and A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are {A._shape[-2]} by "
                           f"{A._shape[-1]} matrices")
    check_float_input(op, A)


def check_float_input(op: str, A) -> None:
    """Floating point or complex, and not a half type (LAPACK has none)."""
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{dt.legacy_name(A.dtype)}")
    if A.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {dt.legacy_name(A.dtype)}")


def _spec(A, shape, dtype=None):
    return TensorSpec(tuple(shape), A.dtype if dtype is None else dtype, A.device)


def _inv_ex_meta(A):
    check_matrix_input("linalg.inv_ex", A)
    return _spec(A, A._shape), _spec(A, A._shape[:-2], _INFO)


linalg_inv_ex = define(
    "linalg_inv_ex", meta=_inv_ex_meta, primitive=True,
    doc="(inverse, info) of a stack of square matrices (..., n, n); info (int32, per matrix) is LAPACK getrf's: "
        "0, or the 1-based index of the first zero pivot of the partial-pivoting LU (the inverse is then "
        "unspecified)")


def _det_meta(A):
    check_matrix_input("linalg.det", A)
    return _spec(A, A._shape[:-2])


linalg_det = define("linalg_det", meta=_det_meta, primitive=True,
                    doc="determinants of a stack of square matrices (..., n, n); 1 for 0 by 0 matrices")


def _slogdet_meta(A):
    check_matrix_input("linalg.slogdet", A)
    return _spec(A, A._shape[:-2]), _spec(A, A._shape[:-2], A.dtype.to_real())


linalg_slogdet = define(
    "linalg_slogdet", meta=_slogdet_meta, primitive=True,
    doc="(sign, logabsdet) of a stack of square matrices: det = sign * exp(logabsdet); sign 0 and logabsdet -inf "
        "for a singular matrix; logabsdet is real")


def _solve_ex_meta(A, B):
    check_matrix_input("linalg.solve", A)
    if not isinstance(B, Tensor) or B.ndim != A.ndim or B._shape[:-1] != A._shape[:-1]:
        raise RuntimeError("linalg_solve_ex: expected A (..., n, n) and B (..., n, k) with equal batch dims")
    if B.dtype is not A.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{dt.legacy_name(A.dtype)} and B of type {dt.legacy_name(B.dtype)} instead")
    common_device("linalg.solve", (A, B))
    return _spec(B, B._shape), _spec(A, A._shape[:-2], _INFO)


linalg_solve_ex = define(
    "linalg_solve_ex", meta=_solve_ex_meta, primitive=True,
    doc="(X, info) with A @ X = B for A (..., n, n) and B (..., n, k) with EQUAL batch dims (callers broadcast) and "
        "the same dtype; info as linalg_inv_ex's")


def _cholesky_ex_meta(A, upper=False):
    check_matrix_input("linalg.cholesky", A)
    return _spec(A, A._shape), _spec(A, A._shape[:-2], _INFO)


linalg_cholesky_ex = define(
    "linalg_cholesky_ex", meta=_cholesky_ex_meta, primitive=True,
    doc="(L, info): A = L @ L^H with L lower triangular (or A = U^H @ U with U upper triangular, when upper) for "
        "Hermitian positive-definite A, read from its lower (upper) triangle; info is 0, or the order of the first "
        "leading minor that is not positive-definite")


def _qr_meta(A, mode="reduced"):
    check_matrix_input("linalg.qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    batch, (m, n) = A._shape[:-2], A._shape[-2:]
    k = m if mode == "complete" else min(m, n)
    q_shape = (0,) if mode == "r" else batch + (m, k)
    return _spec(A, q_shape), _spec(A, batch + (k, n))


linalg_qr = define(
    "linalg_qr", meta=_qr_meta, primitive=True,
    doc="(Q, R) with A = Q @ R, Q with orthonormal columns, R upper triangular, for A (..., m, n); mode 'reduced' "
        "(k = min(m, n)), 'complete' (Q square) or 'r' (Q empty)")


def _eigh_meta(A, UPLO="L"):
    check_matrix_input("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return _spec(A, A._shape[:-1], A.dtype.to_real()), _spec(A, A._shape)


linalg_eigh = define(
    "linalg_eigh", meta=_eigh_meta, primitive=True,
    doc="(eigenvalues, eigenvectors) of Hermitian matrices (..., n, n) read from the UPLO triangle; eigenvalues "
        "real and ascending, eigenvectors the columns")


def _svd_meta(A, full_matrices=True):
    check_matrix_input("linalg.svd", A, square=False)
    batch, (m, n) = A._shape[:-2], A._shape[-2:]
    k = min(m, n)
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    return (_spec(A, batch + (m, u_cols)), _spec(A, batch + (k,), A.dtype.to_real()),
            _spec(A, batch + (vh_rows, n)))


linalg_svd = define(
    "linalg_svd", meta=_svd_meta, primitive=True,
    doc="(U, S, Vh) with A = U @ diag(S) @ Vh for A (..., m, n); S real and descending; U and Vh square when "
        "full_matrices, else (m, k) and (k, n) with k = min(m, n)")


def _svdvals_meta(A):
    check_matrix_input("linalg.svdvals", A, square=False)
    return _spec(A, A._shape[:-2] + (min(A._shape[-2:]),), A.dtype.to_real())


linalg_svdvals = define("linalg_svdvals", meta=_svdvals_meta, primitive=True,
                        doc="the singular values of A (..., m, n), real and descending: (..., min(m, n))")


def _lu_factor_ex_meta(A, pivot=True):
    check_matrix_input("linalg.lu_factor_ex", A, square=False)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    batch, (m, n) = A._shape[:-2], A._shape[-2:]
    return _spec(A, A._shape), _spec(A, batch + (min(m, n),), _INFO), _spec(A, batch, _INFO)


linalg_lu_factor_ex = define(
    "linalg_lu_factor_ex", meta=_lu_factor_ex_meta, primitive=True,
    doc="(LU, pivots, info): LAPACK getrf of A (..., m, n) with partial pivoting: L (unit diagonal, below) and U "
        "packed in one matrix, pivots the 1-based row swaps (int32, (..., min(m, n))), info the first zero pivot")


def _eig_meta(A):
    check_matrix_input("linalg.eig", A)
    complex_dtype = A.dtype.to_complex()
    return _spec(A, A._shape[:-1], complex_dtype), _spec(A, A._shape, complex_dtype)


linalg_eig = define(
    "linalg_eig", meta=_eig_meta, primitive=True,
    doc="(eigenvalues, eigenvectors) of general square matrices (..., n, n), always complex, in LAPACK geev's order; "
        "eigenvectors are the columns, each of norm 1 with its largest component real")



# -- front ends (core.linalg) --------------------------------------------------------------------------

def raise_for_info(op: str, info: Tensor, is_matrix: bool) -> None:
    """Raise PyTorch's :class:`LinAlgError` for the first matrix whose LAPACK ``info`` is not 0."""
    if info.device.type == "meta":  # no data: a shape computation, as in PyTorch
        return
    values = info.reshape(-1).tolist()
    failed = next((i for i, v in enumerate(values) if v != 0), None)
    if failed is None:
        return
    code = values[failed]
    batch = "" if is_matrix else f": (Batch element {failed})"
    if "cholesky" in op:
        raise LinAlgError(f"{op}{batch}: The factorization could not be completed because the input is not "
                          f"positive-definite (the leading minor of order {code} is not positive-definite).")
    if "lu_factor" in op:
        raise LinAlgError(f"{op}{batch}: U[{code},{code}] is zero and using it on lu_solve would result in a division "
                          f"by zero. If you still want to perform the factorization, consider calling "
                          f"linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    if "solve" in op:
        raise LinAlgError(f"{op}{batch}: The solver failed because the input matrix is singular.")
    raise LinAlgError(f"{op}{batch}: The diagonal element {code} is zero, the inversion could not be completed "
                      f"because the input matrix is singular.")


def _finish_pair(op: str, result: tuple, out, cls):
    if out is not None:
        result = tuple(finish_out(op, r, o) for r, o in zip(result, out))
    return cls(*result)


def inv_ex(A, *, check_errors=False, out=None):
    """Inverse of square matrices and LAPACK's info per matrix, not raising unless asked (``torch.linalg.inv_ex``)."""
    check_matrix_input("linalg.inv_ex", A)
    inverse, info = linalg_inv_ex(A)
    if check_errors:
        raise_for_info("linalg.inv_ex", info, A.ndim == 2)
    return _finish_pair("linalg.inv_ex", (inverse, info), out, _inv_ex_t)


def inv(A, *, out=None):
    """Inverse of square matrices; a singular one raises :class:`LinAlgError` (``torch.linalg.inv``)."""
    check_matrix_input("linalg.inv", A)
    inverse, info = linalg_inv_ex(A)
    raise_for_info("linalg.inv", info, A.ndim == 2)
    return finish_out("linalg.inv", inverse, out)


def inverse(input, *, out=None):
    """``linalg.inv`` (``torch.inverse``)."""
    return inv(input, out=out)


def det(A, *, out=None):
    """Determinants of square matrices (``torch.linalg.det``, ``torch.det``)."""
    check_matrix_input("linalg.det", A)
    return finish_out("linalg.det", linalg_det(A), out)


def slogdet(A, *, out=None):
    """(sign, logabsdet) of square matrices: det = sign * exp(logabsdet) (``torch.linalg.slogdet``/``slogdet``)."""
    check_matrix_input("linalg.slogdet", A)
    return _finish_pair("linalg.slogdet", linalg_slogdet(A), out, _linalg_slogdet_t)


def logdet(input):
    """log(det(A)): NaN for a negative determinant, -inf for a singular matrix (``torch.logdet``)."""
    check_matrix_input("logdet", input)
    sign, logabsdet = linalg_slogdet(input)
    if input.is_complex():
        return log(sign) + logabsdet
    return where(sign.lt(0), math.nan, logabsdet)


def _solve_operands(A, B, left: bool):
    """A and B broadcast to (..., n, n) and (..., n, k), and whether B was a (batch of) vector(s)."""
    check_matrix_input("linalg.solve", A)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.solve(): argument 'B' must be Tensor, not {type(B).__name__}")
    if B.dtype is not A.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{dt.legacy_name(A.dtype)} and B of type {dt.legacy_name(B.dtype)} instead")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B._shape == A._shape[:-1])
    if not left:  # X A = B is A^T X^T = B^T
        A = A.mT
        B = B if vector else B.mT
    if vector:
        B = unsqueeze(B, -1)
    n = A._shape[-1]
    if B.ndim < 2 or B._shape[-2] != n:
        shown = B._shape[-2:] if B.ndim >= 2 else B._shape
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {'x'.join(map(str, shown))})")
    batch = broadcast_shapes(A._shape[:-2], B._shape[:-2], op="linalg.solve")
    return expand(A, batch + A._shape[-2:]), expand(B, batch + B._shape[-2:]), vector


def _solve_result(X, vector: bool, left: bool):
    if vector:
        return squeeze(X, -1)
    return X if left else X.mT


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(X, info) with A X = B (or X A = B when not ``left``), broadcasting (``torch.linalg.solve_ex``)."""
    A_, B_, vector = _solve_operands(A, B, left)
    X, info = linalg_solve_ex(A_, B_)
    if check_errors:
        raise_for_info("torch.linalg.solve_ex", info, A_.ndim == 2)
    return _finish_pair("linalg.solve_ex", (_solve_result(X, vector, left), info), out, _solve_ex_t)


def solve(A, B, *, left=True, out=None):
    """X with A X = B (or X A = B when not ``left``); B is (..., n) or (..., n, k), batches broadcast
    (``torch.linalg.solve``)."""
    A_, B_, vector = _solve_operands(A, B, left)
    X, info = linalg_solve_ex(A_, B_)
    raise_for_info("torch.linalg.solve", info, A_.ndim == 2)
    return finish_out("linalg.solve", _solve_result(X, vector, left), out)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): partial-pivoting LU packed as LAPACK's getrf, not raising unless asked
    (``torch.linalg.lu_factor_ex``)."""
    check_matrix_input("linalg.lu_factor_ex", A, square=False)
    result = linalg_lu_factor_ex(A, bool(pivot))
    if check_errors:
        raise_for_info("torch.linalg.lu_factor_ex", result[2], A.ndim == 2)
    return _finish_pair("linalg.lu_factor_ex", result, out, _lu_factor_ex_t)


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots): partial-pivoting LU packed as LAPACK's getrf; a zero pivot raises (``torch.linalg.lu_factor``)."""
    check_matrix_input("linalg.lu_factor", A, square=False)
    LU, pivots, info = linalg_lu_factor_ex(A, bool(pivot))
    raise_for_info("torch.linalg.lu_factor", info, A.ndim == 2)
    return _finish_pair("linalg.lu_factor", (LU, pivots), out, _lu_factor_t)


def _permutation(pivots, m: int, like):
    """P with A = P L U from LAPACK's 1-based row swaps (..., k): the swaps applied in order to the identity's rows
    (on the host: the swaps are sequential, and P is a constant of the graph)."""
    batch = pivots._shape[:-1]
    if like.device.type == "meta":
        return zeros(batch + (m, m), dtype=like.dtype, device=like.device)
    swaps = pivots.detach().cpu().numpy().reshape(-1, pivots._shape[-1]) - 1
    order = np.tile(np.arange(m), (swaps.shape[0], 1))
    for k in range(swaps.shape[1]):  # row k was swapped with row swaps[:, k]
        rows = np.arange(swaps.shape[0])
        order[rows, k], order[rows, swaps[:, k]] = order[rows, swaps[:, k]], order[rows, k]
    P = np.zeros((swaps.shape[0], m, m), dtype=like.dtype.numpy)
    P[np.arange(swaps.shape[0])[:, None], order, np.arange(m)[None, :]] = 1  # row order[j] of A is row j of L U
    return tensor(P.reshape(batch + (m, m)), dtype=like.dtype, device=like.device)


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U, L unit lower (m, k), U upper (k, n), k = min(m, n) (``torch.linalg.lu``)."""
    check_matrix_input("linalg.lu", A, square=False)
    LU, pivots, _ = linalg_lu_factor_ex(A, bool(pivot))
    L, U = unpack_lu(LU)
    return _finish_pair("linalg.lu", (_permutation(pivots, A._shape[-2], A), L, U), out, _lu_t)


def unpack_lu(LU):
    """(L, U) from getrf's packed (..., m, n): L unit lower (m, k) below the diagonal, U upper (k, n), k = min(m, n)."""
    m, n = LU._shape[-2:]
    k = min(m, n)
    L = LU.narrow(-1, 0, k).tril(-1) + eye(m, k, dtype=LU.dtype, device=LU.device)
    return L, LU.narrow(-2, 0, k).triu()


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (A^H X = B when ``adjoint``; X A = B when not ``left``) from ``lu_factor``'s (LU, pivots)
    (``torch.linalg.lu_solve``)."""
    check_matrix_input("linalg.lu_solve", LU, name="LU")
    if not isinstance(B, Tensor) or B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if not left:  # X A = B is A^H X^H = B^H; X A^H = B is A X^H = B^H
        return finish_out("linalg.lu_solve", lu_solve(LU, pivots, B.mH, adjoint=not adjoint).mH, out)
    n = LU._shape[-1]
    if B._shape[-2] != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
                           f"{B._shape[-2]}x{B._shape[-1]})")
    P = _permutation(pivots, n, LU)
    if adjoint:  # A^H = U^H L^H P^H: X = P L^{-H} U^{-H} B
        Y = solve_triangular(LU.mH, B, upper=False)
        X = matmul(P, solve_triangular(LU.mH, Y, upper=True, unitriangular=True))
    else:  # A = P L U: X = U^{-1} L^{-1} P^T B
        Y = solve_triangular(LU, matmul(P.mT, B), upper=False, unitriangular=True)
        X = solve_triangular(LU, Y, upper=True)
    return finish_out("linalg.lu_solve", X, out)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): the Cholesky factor and LAPACK's info per matrix (``torch.linalg.cholesky_ex``)."""
    check_matrix_input("linalg.cholesky_ex", A)
    L, info = linalg_cholesky_ex(A, bool(upper))
    if check_errors:
        raise_for_info("linalg.cholesky_ex", info, A.ndim == 2)
    return _finish_pair("linalg.cholesky_ex", (L, info), out, _cholesky_ex_t)


def cholesky(A, upper=False, *, out=None):
    """L with A = L L^H (U with A = U^H U when ``upper``) of Hermitian positive-definite matrices
    (``torch.linalg.cholesky``, ``torch.cholesky``)."""
    check_matrix_input("linalg.cholesky", A)
    L, info = linalg_cholesky_ex(A, bool(upper))
    raise_for_info("linalg.cholesky", info, A.ndim == 2)
    return finish_out("linalg.cholesky", L, out)


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B from A's Cholesky factor L (A = L L^H, or U^H U when ``upper``), batches broadcast
    (``torch.cholesky_solve``)."""
    for name, t in (("input", B), ("input2", L)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cholesky_solve(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if B.ndim < 2 or L.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions instead"
                           if B.ndim < 2 else f"u should have at least 2 dimensions, but has {L.ndim} dimensions "
                           f"instead")
    lower = L.mH if upper else L
    Y = solve_triangular(lower, B, upper=False)
    return finish_out("cholesky_solve", solve_triangular(lower.mH, Y, upper=True), out)


def cholesky_inverse(L, upper=False, *, out=None):
    """A^{-1} from A's Cholesky factor L (A = L L^H, or U^H U when ``upper``) (``torch.cholesky_inverse``)."""
    check_matrix_input("cholesky_inverse", L, name="input")
    identity = expand(eye(L._shape[-1], dtype=L.dtype, device=L.device), L._shape)
    return finish_out("cholesky_inverse", cholesky_solve(identity, L, upper), out)


def vander(x, *, N=None):
    """The Vandermonde matrices of x (..., n): columns x^0, x^1, ..., x^(N-1), N = n by default
    (``torch.linalg.vander``)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg.vander(): argument 'x' must be Tensor, not {type(x).__name__}")
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    n = x._shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    x = x.to(dt.promote_types(x.dtype, dt.int64)) if not (x.dtype.is_floating_point or x.dtype.is_complex) else x
    columns = expand(unsqueeze(x, -1), x._shape + (n - 1,))
    first = ones(x._shape + (1,), dtype=x.dtype, device=x.device)
    return cat([first, columns], -1).cumprod(-1)  # cumulative products: exact for integers too, as PyTorch


def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = Q R; mode 'reduced', 'complete' or 'r' (``torch.linalg.qr``)."""
    check_matrix_input("linalg.qr", A, square=False)
    return _finish_pair("linalg.qr", linalg_qr(A, mode), out, _qr_t)


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues, eigenvectors) of Hermitian matrices, ascending, from the UPLO triangle (``torch.linalg.eigh``)."""
    check_matrix_input("linalg.eigh", A)
    return _finish_pair("linalg.eigh", linalg_eigh(A, UPLO), out, _eigh_t)


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues of Hermitian matrices, ascending (``torch.linalg.eigvalsh``)."""
    check_matrix_input("linalg.eigvalsh", A)
    return finish_out("linalg.eigvalsh", linalg_eigh(A, UPLO)[0], out)


def eig(A, *, out=None):
    """(eigenvalues, eigenvectors) of general square matrices, complex even for real input; differentiable for
    distinct eigenvalues and losses independent of the eigenvectors' phases (``torch.linalg.eig``)."""
    check_matrix_input("linalg.eig", A)
    return _finish_pair("linalg.eig", linalg_eig(A), out, _eig_t)


def eigvals(A, *, out=None):
    """The eigenvalues of general square matrices, complex (``torch.linalg.eigvals``)."""
    check_matrix_input("linalg.eigvals", A)
    return finish_out("linalg.eigvals", linalg_eig(A)[0], out)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending (``torch.linalg.svd``; ``driver`` is cuSOLVER's, ignored)."""
    check_matrix_input("linalg.svd", A, square=False)
    return _finish_pair("linalg.svd", linalg_svd(A, bool(full_matrices)), out, _svd_t)


def svdvals(A, *, driver=None, out=None):
    """The singular values, descending (``torch.linalg.svdvals``)."""
    check_matrix_input("linalg.svdvals", A, square=False)
    return finish_out("linalg.svdvals", linalg_svdvals(A), out)


def matrix_power(A, n, *, out=None):
    """A to the integer power n by repeated squaring; negative n inverts first (``torch.linalg.matrix_power``)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_power(): argument 'A' must be Tensor, not {type(A).__name__}")
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A._shape[-2]} by {A._shape[-1]} matrices")
    if n == 0:
        result = expand(eye(A._shape[-1], dtype=A.dtype, device=A.device), A._shape).clone()
    else:
        base = inv(A) if n < 0 else A
        n, result = -n if n < 0 else n, None
        while True:  # repeated squaring: log2(n) products, each a matmul (so differentiable)
            if n & 1:
                result = base if result is None else matmul(result, base)
            n >>= 1
            if not n:
                break
            base = matmul(base, base)
        if result is A:
            result = A.clone()
    return finish_out("linalg.matrix_power", result, out)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with T X = B (X T = B when not ``left``) for the upper or lower triangle T of A, its diagonal taken as ones
    when ``unitriangular``; batches broadcast (``torch.linalg.solve_triangular``). A zero on T's diagonal gives NaN."""
    op = "linalg.solve_triangular"
    check_matrix_input(op, A)
    if not isinstance(B, Tensor):
        raise TypeError(f"{op}(): argument 'B' must be Tensor, not {type(B).__name__}")
    if B.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    if B.dtype is not A.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{dt.legacy_name(A.dtype)} and B of type {dt.legacy_name(B.dtype)} instead")
    T = A.triu() if upper else A.tril()
    if unitriangular:
        identity = eye(A._shape[-1], dtype=A.dtype, device=A.device)
        T = T * (1 - identity) + identity
    if not left:
        T, B = T.mT, B.mT
    n = T._shape[-1]
    if B._shape[-2] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
                           f"({n}x{n} and {B._shape[-2]}x{B._shape[-1]})")
    batch = broadcast_shapes(T._shape[:-2], B._shape[:-2], op=op)
    X = linalg_solve_ex(expand(T, batch + T._shape[-2:]), expand(B, batch + B._shape[-2:]))[0]
    return finish_out(op, X if left else X.mT, out)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares (minimum-norm) solution of A X = B, with the residuals (m > n and full rank only), the rank
    (drivers gelsy, gelsd, gelss) and the singular values (gelsd, gelss), as the CPU drivers report them; the
    solution is pinv(A) @ B, so it differentiates through the SVD (``torch.linalg.lstsq``)."""
    op = "torch.linalg.lstsq"
    check_matrix_input("linalg.lstsq", A, square=False)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.lstsq(): argument 'B' must be Tensor, not {type(B).__name__}")
    if B.dtype is not A.dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{A.dtype.name} and other's dtype {B.dtype.name}")
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of ('gels', 'gelsy', 'gelsd', 'gelss')")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B._shape == A._shape[:-1])  # PyTorch's rule, as solve's
    if vector:
        B = unsqueeze(B, -1)
    m, n = A._shape[-2:]
    if B.ndim < 2 or B._shape[-2] != m:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    batch = broadcast_shapes(A._shape[:-2], B._shape[:-2], op=op)
    A, B = expand(A, batch + A._shape[-2:]), expand(B, batch + B._shape[-2:])
    real = A.dtype.to_real()
    rtol = dt.finfo(real).eps * max(m, n) if rcond is None or rcond < 0 else rcond
    solution = matmul(pinv(A, rtol=rtol), B)
    rank = matrix_rank(A, rtol=rtol) if driver != "gels" else zeros((0,), dtype=dt.int64, device=A.device)
    full_rank = m > n and (driver == "gels" or bool((matrix_rank(A, rtol=rtol) == n).all()))
    if full_rank:
        difference = matmul(A, solution) - B
        residuals = sum((difference * difference.conj()).real if A.is_complex() else difference * difference, -2)
    else:
        residuals = zeros((0,), dtype=real, device=A.device)
    values = linalg_svdvals(A) if driver in ("gelsd", "gelss") else zeros((0,), dtype=real, device=A.device)
    if vector:
        solution = squeeze(solution, -1)
        residuals = squeeze(residuals, -1) if full_rank else residuals
    return _lstsq_t(solution, residuals, rank, values)


def cond(A, p=None, *, out=None):
    """The condition number in the p-norm: the ratio of extreme singular values for p None, 2 or -2, else
    ``matrix_norm(A, p) * matrix_norm(inv(A), p)`` (inf for a singular matrix) (``torch.linalg.cond``)."""
    if p not in (None, 2, -2) and p not in _MATRIX_ORDERS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    check_matrix_input("linalg.cond", A, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        values = linalg_svdvals(A)
        largest, smallest = values.narrow(-1, 0, 1).squeeze(-1), values.narrow(-1, values._shape[-1] - 1, 1).squeeze(-1)
        result = div(largest, smallest) if p != -2 else div(smallest, largest)
    else:
        inverse, info = linalg_inv_ex(A)
        failed = info.ne(0)
        inverse = where(failed.unsqueeze(-1).unsqueeze(-1), 0.0, inverse)  # a singular matrix's "inverse" is NaN
        result = where(failed, math.inf, matrix_norm(A, p) * matrix_norm(inverse, p))
    return finish_out("linalg.cond", result, out)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A seen as a linear map from its first ``ind`` dims to the rest (``torch.linalg.tensorinv``)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.tensorinv(): argument 'A' must be Tensor, not {type(A).__name__}")
    if not isinstance(ind, int) or ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A._shape[:ind]), math.prod(A._shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    result = inv(A.reshape(rows, cols)).reshape(A._shape[ind:] + A._shape[:ind])
    return finish_out("linalg.tensorinv", result, out)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with ``tensordot(A, X, X.ndim) = B``; ``dims`` of A move to the end first (``torch.linalg.tensorsolve``)."""
    for name, t in (("A", A), ("B", B)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg.tensorsolve(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if dims is not None:
        dims = [wrap_dim(d, A.ndim, "linalg.tensorsolve") for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    result_shape = A._shape[B.ndim:]
    rows, cols = B.numel(), math.prod(result_shape)
    if A._shape[:B.ndim] != B._shape or rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    result = solve(A.reshape(rows, cols), B.reshape(rows)).reshape(result_shape)
    return finish_out("linalg.tensorsolve", result, out)


def _tolerance(op: str, S, atol, rtol, shape_mn):
    """PyTorch's cut-off max(atol, rtol * S_max) per matrix; rtol defaults to eps * max(m, n) when atol is unset."""
    real = S.dtype
    if rtol is None:
        rtol = 0.0 if atol is not None and not (isinstance(atol, Tensor)) and atol > 0 else \
            dt.finfo(real).eps * max(shape_mn)
    atol = 0.0 if atol is None else atol
    s_max = amax(S, -1, keepdim=True) if S._shape[-1] else zeros(S._shape[:-1] + (1,), dtype=real, device=S.device)
    rtol_t = rtol if not isinstance(rtol, Tensor) else unsqueeze(rtol, -1)
    atol_t = atol if not isinstance(atol, Tensor) else unsqueeze(atol, -1)
    return (rtol_t * s_max).clamp_min(atol_t) if not isinstance(atol_t, Tensor) else where(
        gt(atol_t, rtol_t * s_max), atol_t, rtol_t * s_max)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """How many singular values (|eigenvalues| when ``hermitian``) exceed max(atol, rtol * largest)
    (``torch.linalg.matrix_rank``)."""
    check_matrix_input("linalg.matrix_rank", A, square=bool(hermitian))
    S = abs(linalg_eigh(A, "L")[0]) if hermitian else linalg_svdvals(A)
    tol = _tolerance("linalg.matrix_rank", S, atol, rtol, A._shape[-2:])
    return finish_out("linalg.matrix_rank", sum(gt(S, tol), -1), out)


def _pinv_parts(A, atol, rtol, hermitian, /):
    if hermitian:
        w, V = linalg_eigh(A, "L")
        S, U, Vh = abs(w), V, V.mH
        signs = where(w.lt(0), -1.0, 1.0).to(A.dtype)
    else:
        U, S, Vh = linalg_svd(A, False)
        signs = None
    tol = _tolerance("linalg.pinv", S, atol, rtol, A._shape[-2:])
    keep = gt(S, tol)
    s_inv = where(keep, div(1.0, where(keep, S, 1.0)), 0.0).to(A.dtype)
    if signs is not None:
        s_inv = mul(s_inv, signs)
    return matmul(mul(Vh.mH, unsqueeze(s_inv, -2)), U.mH)


linalg_pinv = define(
    "linalg_pinv", decomposition=_pinv_parts,
    doc="linalg_pinv(A, atol, rtol, hermitian, /): the Moore-Penrose pseudo-inverse of A (..., m, n) from the SVD "
        "(the eigendecomposition when hermitian), singular values at or below max(atol, rtol * largest) dropped; "
        "its derivative is PyTorch's pinv_backward, from A and the result alone (no division by singular values)")


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Moore-Penrose pseudo-inverse from the SVD (the eigendecomposition when ``hermitian``), singular values
    below max(atol, rtol * largest) dropped (``torch.linalg.pinv``)."""
    check_matrix_input("linalg.pinv", A, square=bool(hermitian))
    return finish_out("linalg.pinv", linalg_pinv(A, atol, rtol, bool(hermitian)), out)


def pinverse(input, rcond=1e-15, hermitian=False):
    """Pseudo-inverse dropping singular values below rcond * the largest (``torch.pinverse``)."""
    return pinv(input, rtol=rcond, hermitian=hermitian)


# -- norms --------------------------------------------------------------------------------------------

def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """sum(|x|^ord)^(1/ord) over ``dim`` (all dims when None); ord may be inf, -inf or 0
    (``torch.linalg.vector_norm``)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg.vector_norm(): argument 'x' must be Tensor, not {type(x).__name__}")
    check_float_input("linalg.vector_norm", x if dtype is None else x.to(dtype))
    if isinstance(ord, str) or isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"linalg.vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    dims = (dim,) if isinstance(dim, int) else dim
    return _norm(x, float(ord), dims, keepdim, out=out, dtype=dtype)


_MATRIX_ORDERS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Frobenius, nuclear, 1, inf and 2 (spectral) norms of the matrices over the two ``dim``
    (``torch.linalg.matrix_norm``)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_norm(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    check_float_input("linalg.matrix_norm", A)
    if ord not in _MATRIX_ORDERS or isinstance(ord, bool):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    rows, cols = (wrap_dim(d, A.ndim, "linalg.matrix_norm") for d in dim)
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    real = A.dtype.to_real()
    if ord == "fro":
        return _norm(A, 2.0, (rows, cols), keepdim, out=out)
    if ord in ("nuc", 2, -2):
        values = linalg_svdvals(A.movedim((rows, cols), (-2, -1)))
        result = sum(values, -1) if ord == "nuc" else (amax if ord == 2 else amin)(values, -1)
        if keepdim:
            for d in sorted((rows, cols)):
                result = unsqueeze(result, d)
        return finish_out("linalg.matrix_norm", result, out)
    summed, reduced = (rows, cols) if ord in (1, -1) else (cols, rows)  # 1: the largest column sum; inf: row sum
    result = (amax if ord > 0 else amin)(sum(abs(A).to(real), summed, keepdim=True), reduced, keepdim=True)
    if not keepdim:
        result = squeeze(squeeze(result, max(rows, cols)), min(rows, cols))
    return finish_out("linalg.matrix_norm", result, out)


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """A vector norm, or a matrix norm when ``ord`` is a string or ``dim`` names two dims (``torch.linalg.norm``)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.norm(): argument 'A' must be Tensor, not {type(A).__name__}")
    dims = (dim,) if isinstance(dim, int) else (tuple(dim) if dim is not None else None)
    if dims is not None and len(dims) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, dims, keepdim, dtype=dtype, out=out)
    if dims is None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{A.ndim}D.")
        dims = tuple(range(A.ndim))
    if isinstance(ord, str) or len(dims) == 2:
        return matrix_norm(A, ord, dims, keepdim, dtype=dtype, out=out)
    return vector_norm(A, ord, dims, keepdim, dtype=dtype, out=out)


# Higham's (2005) degree-13 Pade approximant: its coefficients, and the 1-norm up to which it is exact to double
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def matrix_exp(A):
    """exp(A) of square matrices by scaling and squaring with a degree-13 Pade approximant, built from matmul and
    solve (so it runs and differentiates on every device) (``torch.linalg.matrix_exp``, ``torch.matrix_exp``)."""
    check_matrix_input("linalg.matrix_exp", A)
    if A.numel() == 0:
        return A.clone()
    norm = amax(sum(abs(A), -2)).item()  # the largest 1-norm of the batch: one scaling for all
    norm = norm.real if isinstance(norm, complex) else norm  # abs of a complex tensor is complex here (see tests)
    squarings = max(0, math.ceil(math.log2(norm / _THETA13))) if norm > _THETA13 else 0
    A = A / 2.0 ** squarings if squarings else A
    b = _PADE13
    identity = eye(A._shape[-1], dtype=A.dtype, device=A.device)
    A2 = matmul(A, A)
    A4 = matmul(A2, A2)
    A6 = matmul(A4, A2)
    U = matmul(A, matmul(A6, b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2
               + b[1] * identity)
    V = matmul(A6, b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * identity
    result = linalg_solve_ex(V - U, V + U)[0]
    for _ in range(squarings):
        result = matmul(result, result)
    return result


METHODS = {"cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse, "det": det, "inverse": inverse,
           "cholesky": cholesky, "slogdet": slogdet, "logdet": logdet, "matrix_exp": matrix_exp,
           "matrix_power": matrix_power, "pinverse": pinverse}
