"""Linear algebra in the torch namespace outside ``torch.linalg``: the older names (svd with V, qr with ``some``,
lu, lu_solve, lu_unpack, triangular_solve), LAPACK's compact Householder form (geqrf, orgqr, ormqr), the norms
and matrix helpers kept at the top level (nuclear_norm, frobenius_norm, dist, renorm, adjoint, vander), and the
names PyTorch 2 removed (eig, symeig, lstsq, solve, matrix_rank).

All are composites of ``core.linalg``'s decompositions (so they run on every device and differentiate where the
decompositions do), except geqrf and the LDL^T factorisation (``core.linalg.ldl_factor``/``ldl_solve``), which
PyTorch does not differentiate and which run LAPACK's geqrf, sytrf/hetrf and sytrs/hetrs on the host (NumPy,
SciPy). The removed names follow their PyTorch 1.x documentation and warn with their replacement.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg.lapack

from .. import dtypes as dt
from ..tensor import Tensor
from .creation import empty, ones, tensor, zeros
from ._util import broadcast_shapes, exporter, finish_out, wrap_dim
from .decompositions import (_permutation, check_float_input, check_matrix_input, eigh, linalg_eig, linalg_svd,
                             lu_factor, lu_factor_ex, lu_solve as _linalg_lu_solve, matrix_norm,
                             matrix_rank as _linalg_matrix_rank, pinv, qr as _linalg_qr, solve as _linalg_solve,
                             solve_triangular, unpack_lu, vander as _linalg_vander, vector_norm)
from .elementwise import conj, gt, where
from .linalg import _inplace, matmul
from .ranges import eye
from .reduction import return_type
from .shape import cat, stack
from .view import expand, unsqueeze

__all__: list = []
METHODS: dict = {}

_svd_t = return_type("svd", ("U", "S", "V"))
_qr_t = return_type("qr", ("Q", "R"))
_geqrf_t = return_type("geqrf", ("a", "tau"))
_lu_unpack_t = return_type("lu_unpack", ("P", "L", "U"))
_triangular_solve_t = return_type("triangular_solve", ("solution", "cloned_coefficient"))
_eig_t = return_type("eig", ("eigenvalues", "eigenvectors"))
_symeig_t = return_type("symeig", ("eigenvalues", "eigenvectors"))
_lstsq_t = return_type("lstsq", ("solution", "QR"))
_solve_t = return_type("solve", ("solution", "LU"))
_ldl_factor_t = return_type("linalg_ldl_factor", ("LD", "pivots"))
_ldl_factor_ex_t = return_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))


_export = exporter(__all__, METHODS)


def _method_less(fn):
    """Export a torch-level name that torch.Tensor has no method for."""
    return _export(fn, method=False)


def _removed(name: str, replacement: str) -> None:
    """The warning of a name PyTorch 2 removed (PyTorch 1.x's deprecation warning, with its replacement)."""
    warnings.warn(f"torch.{name} is deprecated in favor of {replacement} and will be removed in a future PyTorch "
                  f"release.", UserWarning, stacklevel=3)


def _check_tensor(op: str, name: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")


# -- the older names of the decompositions -----------------------------------------------------------------

@_export
def svd(input, some=True, compute_uv=True, *, out=None):
    """(U, S, V) with input = U diag(S) V^H (V, not Vh); reduced when ``some``; U and V are zero matrices (m, m)
    and (n, n) when not ``compute_uv`` (``torch.svd``)."""
    check_matrix_input("svd", input, name="input", square=False)
    if not compute_uv:
        m, n = input._shape[-2:]
        S = linalg_svd(input, False)[1]
        batch = input._shape[:-2]
        result = (zeros(batch + (m, m), dtype=input.dtype, device=input.device), S,
                  zeros(batch + (n, n), dtype=input.dtype, device=input.device))
    else:
        U, S, Vh = linalg_svd(input, not some)
        result = (U, S, Vh.mH)
    return _finish("svd", result, out, _svd_t)


@_export
def qr(input, some=True, *, out=None):
    """(Q, R) with input = Q R; reduced when ``some``, complete otherwise (``torch.qr``)."""
    return _finish("qr", tuple(_linalg_qr(input, "reduced" if some else "complete")), out, _qr_t)


@_export
def lu(A, pivot=True, get_infos=False, out=None):
    """(A_LU, pivots), with LAPACK's infos too when ``get_infos`` (then a failure does not raise), as
    ``torch.linalg.lu_factor(_ex)`` (``torch.lu``)."""
    result = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    result = result if get_infos else tuple(result[:2])
    return result if out is None else tuple(finish_out("lu", r, o) for r, o in zip(result, out))


@_export
def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """x with A x = b from ``lu``'s (LU_data, LU_pivots) of A (``torch.lu_solve``)."""
    return _linalg_lu_solve(LU_data, LU_pivots, b, out=out)


@_method_less
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) with A = P L U from ``lu``'s packed factors; the parts not unpacked are empty tensors
    (``torch.lu_unpack``)."""
    _check_tensor("lu_unpack", "LU_data", LU_data)
    _check_tensor("lu_unpack", "LU_pivots", LU_pivots)
    if LU_data.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    if LU_pivots.dtype is not dt.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype. "
                           "Note: this function is intended to be used with the output produced by torch.linalg."
                           "lu_factor")
    none = empty(0, dtype=LU_data.dtype, device=LU_data.device)
    L, U = unpack_lu(LU_data) if unpack_data else (none, none)
    P = _permutation(LU_pivots, LU_data._shape[-2], LU_data) if unpack_pivots else none
    return _finish("lu_unpack", (P, L, U), out, _lu_unpack_t)


@_export
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """(X, A's clone) with T X = b (T^T X = b when ``transpose``) for the upper or lower triangle T of A, batches
    broadcast (``torch.triangular_solve``)."""
    _check_tensor("triangular_solve", "input", b)
    _check_tensor("triangular_solve", "A", A)
    if b.ndim < 2 or A.ndim < 2:
        which = "b" if b.ndim < 2 else "A"
        raise RuntimeError(f"torch.triangular_solve: Expected {which} to have at least 2 dimensions, but it has "
                           f"{(b if which == 'b' else A).ndim} dimensions instead")
    T = A.mT if transpose else A
    X = solve_triangular(T, b, upper=bool(upper) != bool(transpose), unitriangular=unitriangular)
    batch = X._shape[:-2]
    return _finish("triangular_solve", (X, expand(A, batch + A._shape[-2:]).clone()), out, _triangular_solve_t)


def _finish(op: str, result: tuple, out, cls):
    if out is not None:
        result = tuple(finish_out(op, r, o) for r, o in zip(result, out))
    return cls(*result)


# -- Householder reflectors: LAPACK's geqrf, orgqr, ormqr -----------------------------------------------------

@_export
def geqrf(input, *, out=None):
    """(a, tau): QR in LAPACK's compact form, R on and above a's diagonal, the Householder vectors below it and
    their scales in tau; not differentiable, as in PyTorch (``torch.geqrf``)."""
    check_matrix_input("geqrf", input, name="input", square=False)
    m, n = input._shape[-2:]
    batch = input._shape[:-2]
    matrices = input.detach().cpu().numpy().reshape((-1, m, n))
    a = np.empty_like(matrices)
    tau = np.empty((matrices.shape[0], min(m, n)), dtype=matrices.dtype)
    for i, matrix in enumerate(matrices):  # numpy's raw mode is geqrf on the transposed (Fortran-ordered) matrix
        h, tau[i] = np.linalg.qr(matrix, mode="raw")
        a[i] = h.T
    result = (tensor(a.reshape(batch + (m, n)), dtype=input.dtype, device=input.device),
              tensor(tau.reshape(batch + (min(m, n),)), dtype=input.dtype, device=input.device))
    return _finish("geqrf", result, out, _geqrf_t)


def _matrices(t):
    """t's matrices on the host, as an (N, m, n) NumPy array."""
    return t.detach().cpu().numpy().reshape((-1,) + t._shape[-2:])


def _lapack(name: str, hermitian: bool, array):
    """LAPACK's ``sy<name>`` (``he<name>`` for Hermitian complex matrices) for array's type."""
    prefix = "he" if hermitian and np.iscomplexobj(array) else "sy"
    return scipy.linalg.lapack.get_lapack_funcs(prefix + name, (array,))


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info): the Bunch-Kaufman LDL^T (LDL^H when ``hermitian``) factorisation of symmetric matrices
    from their lower triangle, compact as LAPACK's sytrf (the strict upper triangle zeroed); not differentiable, as
    in PyTorch (``torch.linalg.ldl_factor_ex``)."""
    check_matrix_input("linalg.ldl_factor_ex", A)
    factor = _lapack("trf", hermitian, _matrices(A))
    parts = [factor(matrix, lower=1) for matrix in _matrices(A)]
    batch, n = A._shape[:-2], A._shape[-1]
    LD = np.tril(np.stack([p[0] for p in parts])) if parts else np.zeros((0, n, n), dtype=A.dtype.numpy)
    result = (tensor(LD.reshape(batch + (n, n)), dtype=A.dtype, device=A.device),
              tensor(np.array([p[1] for p in parts], dtype=np.int32).reshape(batch + (n,)), dtype=dt.int32,
                     device=A.device),
              tensor(np.array([p[2] for p in parts], dtype=np.int32).reshape(batch), dtype=dt.int32, device=A.device))
    if check_errors and any(p[2] < 0 for p in parts):
        raise RuntimeError(f"torch.linalg.ldl_factor_ex: Argument {-min(p[2] for p in parts)} has illegal value.")
    return _finish("linalg.ldl_factor_ex", result, out, _ldl_factor_ex_t)


def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots): ``ldl_factor_ex`` without the info (``torch.linalg.ldl_factor``)."""
    LD, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return _finish("linalg.ldl_factor", (LD, pivots), out, _ldl_factor_t)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from ``ldl_factor``'s (LD, pivots) of A, as LAPACK's sytrs (``torch.linalg.ldl_solve``)."""
    op = "torch.linalg.ldl_solve"
    check_matrix_input("linalg.ldl_solve", LD, name="LD")
    _check_tensor("linalg.ldl_solve", "B", B)
    if B.ndim < 2 or B._shape[-2] != LD._shape[-1]:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({LD._shape[-2]}x{LD._shape[-1]} and {'x'.join(map(str, B._shape[-2:]))})")
    if pivots.dtype is not dt.int32:
        raise RuntimeError(f"{op}: Expected LU_pivots to have the int32 dtype, but got {pivots.dtype.name}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"{op}: Expected LD and B to have the same dtype, but got LD of type "
                           f"{dt.legacy_name(LD.dtype)} and B of type {dt.legacy_name(B.dtype)} instead")
    batch = broadcast_shapes(LD._shape[:-2], B._shape[:-2], op=op)
    factors = _matrices(expand(LD, batch + LD._shape[-2:]))
    rights = _matrices(expand(B, batch + B._shape[-2:]))
    swaps = pivots.detach().cpu().numpy().reshape(-1, LD._shape[-1])
    swaps = np.broadcast_to(swaps.reshape(LD._shape[:-2] + swaps.shape[-1:]), batch + swaps.shape[-1:]).reshape(
        -1, swaps.shape[-1])
    solve_with = _lapack("trs", hermitian, factors)
    X = np.stack([solve_with(f, p, b, lower=1)[0] for f, p, b in zip(factors, swaps, rights)]) if len(factors) \
        else np.zeros(rights.shape, dtype=rights.dtype)
    return finish_out("linalg.ldl_solve", tensor(X.reshape(batch + B._shape[-2:]), dtype=B.dtype, device=B.device),
                      out)


def _check_reflectors(op: str, input, tau) -> None:
    _check_tensor(op, "input", input)
    _check_tensor(op, "tau", tau)
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    check_float_input(op, input)
    if tau.ndim != input.ndim - 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {input.ndim}")
    if tau._shape[-1] > input._shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.dtype is not input.dtype:
        raise RuntimeError(f"{op}: tau dtype {tau.dtype.name} does not match input dtype {input.dtype.name}")


def _reflector(input, i: int):
    """The i-th Householder vector (..., m, 1): zeros above row i, 1 at row i, input's column i below."""
    batch, m = input._shape[:-2], input._shape[-2]
    head = [zeros(batch + (i, 1), dtype=input.dtype, device=input.device),
            expand(eye(1, dtype=input.dtype, device=input.device), batch + (1, 1))]
    return cat(head + [input[..., i + 1:m, i:i + 1]], -2)


def _apply_reflectors(input, tau, other, left: bool, adjoint: bool):
    """Q other, Q^H other, other Q or other Q^H for Q = H_0 H_1 ... H_(k-1), H_i = I - tau_i v_i v_i^H."""
    k = tau._shape[-1]
    # Q C applies H_(k-1) first; Q^H C applies H_0^H first; on the right the order turns round
    order = range(k - 1, -1, -1) if left != adjoint else range(k)
    for i in order:
        v = _reflector(input, i)
        scale = unsqueeze(unsqueeze(tau[..., i], -1), -1)
        scale = conj(scale) if adjoint and scale.is_complex() else scale
        if left:  # C - tau v (v^H C)
            other = other - scale * matmul(v, matmul(v.mH, other))
        else:  # C - tau (C v) v^H
            other = other - scale * matmul(matmul(other, v), v.mH)
    return other


def householder_product(A, tau, *, out=None):
    """The first n columns of H_0 H_1 ... H_(k-1), H_i = I - tau_i v_i v_i^H with v_i below A's diagonal (unit on
    it), as LAPACK's orgqr; differentiable (``torch.linalg.householder_product``)."""
    op = "torch.linalg.householder_product"
    _check_reflectors(op, A, tau)
    m, n = A._shape[-2:]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    batch = A._shape[:-2]
    identity = expand(eye(m, n, dtype=A.dtype, device=A.device), batch + (m, n))
    return finish_out("linalg.householder_product", _apply_reflectors(A, tau, identity, left=True, adjoint=False), out)


@_export
def orgqr(input, tau):
    """The explicit Q of geqrf's compact form: ``torch.linalg.householder_product`` (``torch.orgqr``)."""
    return householder_product(input, tau)


@_export
def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """Q other (other Q when not ``left``; Q^H when ``transpose``) for geqrf's compact Q, without forming Q
    (``torch.ormqr``)."""
    op = "torch.ormqr"
    _check_reflectors(op, input, tau)
    _check_tensor(op, "other", other)
    if other.ndim != input.ndim:
        raise RuntimeError(f"{op}: input and other must have the same number of dimensions.")
    side = other._shape[-2] if left else other._shape[-1]
    if side != input._shape[-2]:
        which = "other.shape[-2]" if left else "other.shape[-1]"
        raise RuntimeError(f"{op}: {which} must be equal to input.shape[-2] (got {side} and {input._shape[-2]})")
    if other.dtype is not input.dtype:
        raise RuntimeError(f"{op}: other dtype {other.dtype.name} does not match input dtype {input.dtype.name}")
    return finish_out("ormqr", _apply_reflectors(input, tau, other, bool(left), bool(transpose)), out)


# -- norms kept at the top level --------------------------------------------------------------------------

@_method_less
def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of the singular values over the two ``dim`` (a 2-D input's when None) (``torch.nuclear_norm``)."""
    _check_tensor("nuclear_norm", "input", input)
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim) is the overload without dims
        dim, keepdim = None, dim
    if dim is None:
        if input.ndim != 2:
            raise RuntimeError(f"nuclear_norm: Expected a tensor with 2 dimensions, but got a tensor with {input.ndim} "
                               f"dimension{'' if input.ndim == 1 else 's'} instead.")
        dim = (0, 1)
    return matrix_norm(input, "nuc", tuple(dim), keepdim, out=out)


@_method_less
def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """sqrt of the sum of squared magnitudes over one or two ``dim`` (``torch.frobenius_norm``)."""
    _check_tensor("frobenius_norm", "input", input)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) not in (1, 2):
        raise RuntimeError(f"frobenius norm expects one or two dims, got {len(dims)}")
    return vector_norm(input, 2, dims, keepdim, out=out)


@_export
def dist(input, other, p=2):
    """The p-norm of ``input - other`` over all elements, broadcasting (``torch.dist``)."""
    _check_tensor("dist", "input", input)
    _check_tensor("dist", "other", other)
    return vector_norm(input - other, p)  # PyTorch's at::norm(self - other, p): integers raise there


@_export
def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to it, as maxnorm / (norm + 1e-7)
    (``torch.renorm``)."""
    _check_tensor("renorm", "input", input)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    dim = wrap_dim(dim, input.ndim, "renorm")
    norms = vector_norm(input, p, tuple(d for d in range(input.ndim) if d != dim), keepdim=True)
    factor = where(gt(norms, maxnorm), maxnorm / (norms + 1e-7), 1.0).to(input.dtype)
    return finish_out("renorm", input * factor, out)


METHODS["renorm_"] = _inplace("renorm", renorm)


@_export
def adjoint(input):
    """The conjugate transpose of the last two dims, a view (``torch.adjoint``, ``Tensor.mH``)."""
    _check_tensor("adjoint", "input", input)
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return input.mH


@_method_less
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D x: columns x^(N-1), ..., x^0 (x^0 first when ``increasing``), N = len(x) by
    default; integers promote to int64 (``torch.vander``)."""
    _check_tensor("vander", "x", x)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    N = x._shape[0] if N is None else N
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = x.dtype if x.dtype.is_floating_point or x.is_complex() else dt.int64
    if N <= 1:
        result = ones((x._shape[0], N), dtype=dtype, device=x.device)
    else:
        result = _linalg_vander(x, N=N)
    return result if increasing else result.flip(-1)


# -- names PyTorch 2 removed, with their PyTorch 1.x semantics ------------------------------------------------

@_method_less
def matrix_rank(input, tol=None, symmetric=False):
    """How many singular values (|eigenvalues| when ``symmetric``) exceed ``tol``, by default
    max(m, n) * eps * the largest; removed in PyTorch 2 for ``torch.linalg.matrix_rank`` (``torch.matrix_rank``)."""
    _removed("matrix_rank", "torch.linalg.matrix_rank")
    if tol is None:
        return _linalg_matrix_rank(input, hermitian=symmetric)
    return _linalg_matrix_rank(input, atol=tol, rtol=0.0, hermitian=symmetric)


@_export
def eig(input, eigenvectors=False):
    """(eigenvalues as (n, 2) real and imaginary parts, eigenvectors in LAPACK's real packing: a complex pair's
    vector v in two columns Re v, Im v; empty unless asked) of a real square matrix; removed in PyTorch 2 for
    ``torch.linalg.eig`` (``torch.eig``)."""
    _removed("eig", "torch.linalg.eig")
    check_matrix_input("eig", input, name="input")
    if input.ndim != 2 or input.is_complex():
        raise RuntimeError(f"eig: Expected a real 2-D square matrix, got {input.ndim}-D {dt.legacy_name(input.dtype)}")
    w, V = linalg_eig(input)
    values = stack([w.real, w.imag], -1)
    if not eigenvectors:
        return _eig_t(values, empty(0, dtype=input.dtype, device=input.device))
    # geev's packing: the pair's first vector (imaginary part > 0) is Re v, the second Im v = -Im of its conjugate
    second_of_pair = unsqueeze(w.imag < 0, -2)
    return _eig_t(values, where(second_of_pair, -V.imag, V.real))


@_export
def symeig(input, eigenvectors=False, upper=True):
    """(eigenvalues ascending, eigenvectors or an empty tensor) of symmetric matrices from their upper (or lower)
    triangle; removed in PyTorch 2 for ``torch.linalg.eigh`` (``torch.symeig``)."""
    _removed("symeig", "torch.linalg.eigh")
    values, vectors = eigh(input, "U" if upper else "L")
    if not eigenvectors:
        vectors = empty(0, dtype=input.dtype, device=input.device)
    return _symeig_t(values, vectors)


@_export
def lstsq(input, A):
    """(solution, QR) of min ||A X - B|| for A (m, n), B (m, k): the solution's first n rows solve it, rows n..m
    of (m > n) are Q^T B's residual part; QR is geqrf's (gelqf's for m < n) compact form of A; removed in PyTorch 2
    for ``torch.linalg.lstsq`` (``torch.lstsq(B, A)``)."""
    _removed("lstsq", "torch.linalg.lstsq")
    B = input
    for name, t in (("input", B), ("A", A)):
        check_matrix_input("lstsq", t, name=name, square=False)
        if t.ndim != 2:
            raise RuntimeError(f"torch.lstsq: {name} should have 2 dimensions, but has {t.ndim}")
    m, n = A._shape
    if B._shape[0] != m:
        raise RuntimeError(f"torch.lstsq: Expected A and B to have the same number of rows, got {m} and "
                           f"{B._shape[0]}")
    X = matmul(pinv(A), B)
    if m > n:
        Q = _linalg_qr(A, "complete")[0]
        X = cat([X, matmul(Q.mH, B)[n:]], 0)
        compact = geqrf(A)[0]
    else:
        compact = geqrf(A.mT)[0].mT
    return _lstsq_t(X, compact)


@_export
def solve(input, A, *, out=None):
    """(X, LU) with A X = B and A's packed LU factor, batches broadcast; removed in PyTorch 2 for
    ``torch.linalg.solve`` (``torch.solve(B, A)``)."""
    _removed("solve", "torch.linalg.solve")
    _check_tensor("solve", "input", input)
    X = _linalg_solve(A, input)
    LU = lu_factor(expand(A, X._shape[:-2] + A._shape[-2:]))[0]
    return _finish("solve", (X, LU), out, _solve_t)

