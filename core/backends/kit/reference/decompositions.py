"""Reference kernels of the decompositions family over ``ctx.xp.linalg`` (NumPy's LAPACK, CuPy's cuSOLVER).

``xp.linalg`` works on stacks of matrices. Failures become LAPACK's ``info`` per matrix: NumPy raises
``LinAlgError`` for the whole stack and CuPy returns NaNs, so on either sign the kernel recomputes ``info`` with a
small batched elimination (the rare, failing path only).
"""

from __future__ import annotations

import numpy as np

from ....errors import LinAlgError
from . import operands

# PyTorch's words when LAPACK does not converge: for non-finite input (every routine), and otherwise (eigh, eig)
_NON_FINITE = "The algorithm failed to converge because the input matrix contained non-finite values."
_ILL_CONDITIONED = "The algorithm failed to converge because the input matrix is ill-conditioned or has too many " \
    "repeated eigenvalues."


def _lu_packed(xp, a):
    """LAPACK getrf over a stack (..., m, n): the packed LU (unit L below the diagonal, U on and above), the 1-based
    row swaps (int32, (..., min(m, n))) and info (the first zero pivot, else 0). Partial pivoting picks the largest
    |re| + |im| (LAPACK's i?amax), the first on ties."""
    m, n = a.shape[-2:]
    batch, steps = a.shape[:-2], min(m, n)
    a = a.reshape((-1, m, n)).copy()
    pivots = xp.zeros((a.shape[0], steps), dtype=np.int32)
    info = xp.zeros(a.shape[0], dtype=np.int32)
    rows = xp.arange(a.shape[0])
    for k in range(steps):
        column = a[:, k:, k]
        size = xp.abs(column.real) + xp.abs(column.imag) if a.dtype.kind == "c" else xp.abs(column)
        p = k + xp.argmax(size, axis=1)
        pivots[:, k] = p + 1
        pivot_rows = a[rows, p].copy()
        a[rows, p] = a[:, k]
        a[:, k] = pivot_rows
        pivot = a[:, k, k]
        zero = pivot == 0
        info = xp.where((info == 0) & zero, k + 1, info).astype(np.int32)
        a[:, k + 1:, k] /= xp.where(zero, 1, pivot)[:, None]
        a[:, k + 1:, k + 1:] -= a[:, k + 1:, k, None] * a[:, None, k, k + 1:]
    return a.reshape(batch + (m, n)), pivots.reshape(batch + (steps,)), info.reshape(batch)


def _first_zero_pivot(xp, a):
    """LAPACK getrf's info per matrix: the 1-based index of the first zero pivot of partial-pivoting LU, else 0."""
    return _lu_packed(xp, a)[2]


def _first_non_positive_minor(xp, a):
    """LAPACK potrf's info per matrix: the order of the first leading minor that is not positive-definite, else 0."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    a = a.reshape((-1, n, n))
    lower = xp.zeros_like(a)
    info = xp.zeros(a.shape[0], dtype=np.int32)
    for j in range(n):
        row = lower[:, j, :j]
        d = (a[:, j, j] - (row * row.conj()).sum(-1)).real
        bad = ~(d > 0)
        info = xp.where((info == 0) & bad, j + 1, info).astype(np.int32)
        root = xp.sqrt(xp.where(bad, 1, d))
        lower[:, j, j] = root
        lower[:, j + 1:, j] = (a[:, j + 1:, j] - (lower[:, j + 1:, :j] * row.conj()[:, None, :]).sum(-1)) \
            / root[:, None]
    return info.reshape(batch)


def kernels(ctx) -> dict:
    """linalg_inv_ex, linalg_det, linalg_slogdet, linalg_solve_ex, linalg_cholesky_ex, linalg_qr, linalg_eigh,
    linalg_eig, linalg_svd, linalg_svdvals and linalg_lu_factor_ex over ``ctx``."""
    xp, wrap, errstate = ctx.xp, ctx.wrap, ctx.errstate
    linalg = xp.linalg
    failure = getattr(linalg, "LinAlgError", np.linalg.LinAlgError)
    operand = operands(ctx)

    def matrices(a):
        return operand(a, a.dtype.numpy)

    def converged(op: str, compute, a, **kwargs):
        """``compute(a, **kwargs)``; LAPACK's failure to converge as PyTorch's LinAlgError. Non-finite input is
        refused first: LAPACK raises for it, but cuSOLVER returns NaNs silently."""
        if not bool(xp.isfinite(a).all()):
            raise LinAlgError(f"{op}: {_NON_FINITE}")
        try:
            return compute(a, **kwargs)
        except failure:
            raise LinAlgError(f"{op}: {_ILL_CONDITIONED}") from None

    def with_info(compute, a, info_of):
        """``compute(a)`` and LAPACK's info; failing matrices are replaced by the identity to compute the rest."""
        try:
            with errstate(all="ignore"):
                result = compute(a)
            bad = not all(bool(xp.isfinite(r).all()) for r in (result if isinstance(result, tuple) else (result,)))
        except failure:
            bad = True
        info = xp.zeros(a.shape[:-2], dtype=np.int32)
        if not bad or a.size == 0:
            return result, info
        info = info_of(xp, a)
        failed = (info != 0)[..., None, None]
        eye = xp.eye(a.shape[-1], dtype=a.dtype)
        with errstate(all="ignore"):
            result = compute(xp.where(failed, eye, a))
        nan = xp.asarray(float("nan"), dtype=a.dtype)
        if isinstance(result, tuple):
            return tuple(xp.where(failed, nan, r) for r in result), info
        return xp.where(failed, nan, result), info

    def linalg_inv_ex(spec, A):
        inverse, info = with_info(linalg.inv, matrices(A), _first_zero_pivot)
        return wrap(inverse, spec[0]), wrap(info, spec[1])

    def linalg_det(spec, A):
        with errstate(all="ignore"):
            return wrap(xp.asarray(linalg.det(matrices(A))), spec)

    def linalg_slogdet(spec, A):
        with errstate(all="ignore"):
            sign, logabsdet = linalg.slogdet(matrices(A))
        return wrap(xp.asarray(sign), spec[0]), wrap(xp.asarray(logabsdet), spec[1])

    def linalg_solve_ex(spec, A, B):
        a, b = matrices(A), matrices(B)
        try:
            with errstate(all="ignore"):
                x = linalg.solve(a, b)
            bad = not bool(xp.isfinite(x).all())
        except failure:
            bad = True
        info = xp.zeros(a.shape[:-2], dtype=np.int32)
        if bad and a.size:
            info = _first_zero_pivot(xp, a)
            failed = (info != 0)[..., None, None]
            with errstate(all="ignore"):
                x = xp.where(failed, float("nan"), linalg.solve(xp.where(failed, xp.eye(a.shape[-1], dtype=a.dtype),
                                                                         a), b))
        return wrap(x.astype(a.dtype, copy=False), spec[0]), wrap(info, spec[1])

    def linalg_cholesky_ex(spec, A, upper=False):
        a = matrices(A)
        if upper:  # LAPACK's uplo='U' reads the upper triangle: that is the lower one of A^H, whose L is U^H
            a = xp.swapaxes(a, -1, -2).conj()
        lower, info = with_info(linalg.cholesky, a, _first_non_positive_minor)
        if upper:
            lower = xp.ascontiguousarray(xp.swapaxes(lower, -1, -2).conj())
        return wrap(lower, spec[0]), wrap(info, spec[1])

    def linalg_qr(spec, A, mode="reduced"):
        a = matrices(A)
        if mode == "r":
            r = linalg.qr(a, mode="r") if a.size else xp.zeros(spec[1].shape, dtype=a.dtype)
            return wrap(xp.zeros((0,), dtype=a.dtype), spec[0]), wrap(r, spec[1])
        if a.size == 0:  # no LAPACK call: Q is the identity's first columns, R zeros
            m = a.shape[-2]
            q = xp.broadcast_to(xp.eye(m, spec[0].shape[-1], dtype=a.dtype), spec[0].shape).copy()
            return wrap(q, spec[0]), wrap(xp.zeros(spec[1].shape, dtype=a.dtype), spec[1])
        q, r = linalg.qr(a, mode=mode)
        return wrap(q, spec[0]), wrap(r, spec[1])

    def linalg_eigh(spec, A, UPLO="L"):
        a = matrices(A)
        if a.size == 0:
            return wrap(xp.zeros(spec[0].shape, dtype=spec[0].dtype.numpy), spec[0]), wrap(a.copy(), spec[1])
        w, v = converged("linalg.eigh", linalg.eigh, a, UPLO=UPLO)
        return wrap(w, spec[0]), wrap(v, spec[1])

    def linalg_svd(spec, A, full_matrices=True):
        a = matrices(A)
        if a.size == 0:
            eye_u = xp.broadcast_to(xp.eye(*spec[0].shape[-2:], dtype=a.dtype), spec[0].shape).copy()
            eye_v = xp.broadcast_to(xp.eye(*spec[2].shape[-2:], dtype=a.dtype), spec[2].shape).copy()
            return (wrap(eye_u, spec[0]), wrap(xp.zeros(spec[1].shape, dtype=spec[1].dtype.numpy), spec[1]),
                    wrap(eye_v, spec[2]))
        u, s, vh = converged("linalg.svd", linalg.svd, a, full_matrices=full_matrices)
        return wrap(u, spec[0]), wrap(s, spec[1]), wrap(vh, spec[2])

    def linalg_svdvals(spec, A):
        a = matrices(A)
        if a.size == 0:
            return wrap(xp.zeros(spec.shape, dtype=spec.dtype.numpy), spec)
        return wrap(converged("linalg.svd", linalg.svd, a, compute_uv=False), spec)

    def linalg_eig(spec, A):
        if not hasattr(linalg, "eig"):  # CuPy has no general eigensolver: the CPU fallback takes the call
            return NotImplemented
        a = matrices(A)
        complex_dtype = spec[0].dtype.numpy
        if a.size == 0:
            return wrap(xp.zeros(spec[0].shape, dtype=complex_dtype), spec[0]), wrap(a.astype(complex_dtype), spec[1])
        w, v = converged("linalg.eig", linalg.eig, a)
        return wrap(w.astype(complex_dtype, copy=False), spec[0]), wrap(v.astype(complex_dtype, copy=False), spec[1])

    def linalg_lu_factor_ex(spec, A, pivot=True):
        with errstate(all="ignore"):
            lu, pivots, info = _lu_packed(xp, matrices(A))
        return wrap(lu, spec[0]), wrap(pivots, spec[1]), wrap(info, spec[2])

    return {"linalg_lu_factor_ex": linalg_lu_factor_ex,
            "linalg_inv_ex": linalg_inv_ex, "linalg_det": linalg_det, "linalg_slogdet": linalg_slogdet,
            "linalg_solve_ex": linalg_solve_ex, "linalg_cholesky_ex": linalg_cholesky_ex, "linalg_qr": linalg_qr,
            "linalg_eigh": linalg_eigh, "linalg_eig": linalg_eig, "linalg_svd": linalg_svd,
            "linalg_svdvals": linalg_svdvals}
