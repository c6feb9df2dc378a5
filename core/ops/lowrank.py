"""Iterative and randomized spectral methods: LOBPCG for a few extreme eigenpairs of symmetric (generalized)
eigenproblems, and the randomized low-rank SVD and PCA of Halko, Martinsson and Tropp (``torch.lobpcg``,
``torch.svd_lowrank``, ``torch.pca_lowrank``).

All are composites of matmul, qr, eigh and svd, so they run on every device; the random draws come from core's
generator of the input's device (``core.manual_seed`` makes them repeatable).
"""

from __future__ import annotations

import types

from .. import dtypes as dt
from ..tensor import Tensor
from .decompositions import check_matrix_input, eigh, linalg_qr, linalg_svd
from .elementwise import sqrt
from .linalg import matmul
from .random import randn
from .reduction import mean
from .shape import cat, stack
from .view import expand, unsqueeze

__all__ = ["lobpcg", "pca_lowrank", "svd_lowrank"]
METHODS: dict = {}


# -- randomized low-rank SVD and PCA (Halko et al. 2009) ------------------------------------------------------

def _approximate_basis(A, q: int, niter: int, M):
    """Q (..., m, q) with orthonormal columns whose span approximates A's range: a random projection refined by
    ``niter`` power iterations (Halko et al., algorithm 4.4); A - M when M is given."""
    def product(X, adjoint: bool):
        left = A.mH if adjoint else A
        result = matmul(left, X)
        return result if M is None else result - matmul(M.mH if adjoint else M, X)

    R = randn(A._shape[-1], q, dtype=A.dtype, device=A.device)
    Q = linalg_qr(product(R, False), "reduced")[0]
    for _ in range(niter):
        Q = linalg_qr(product(Q, True), "reduced")[0]
        Q = linalg_qr(product(Q, False), "reduced")[0]
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V): an approximate rank-q SVD of A (of A - M when M is given) by a random projection with ``niter``
    power iterations, A ~ U diag(S) V^H (``torch.svd_lowrank``)."""
    check_matrix_input("svd_lowrank", A, name="A", square=False)
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A._shape[-2:]
    if M is not None:
        M = expand(M, A._shape)
    if m < n:  # work on the tall orientation
        A, M = A.mH, (M.mH if M is not None else None)
    Q = _approximate_basis(A, q, niter, M)
    B = matmul(Q.mH, A) if M is None else matmul(Q.mH, A) - matmul(Q.mH, M)
    U, S, Vh = linalg_svd(B, False)
    U, V = matmul(Q, U), Vh.mH
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V): the approximate principal components of the rows of A (centred by the column means when
    ``center``), rank q = min(6, m, n) by default, from ``svd_lowrank`` (``torch.pca_lowrank``)."""
    check_matrix_input("pca_lowrank", A, name="A", square=False)
    m, n = A._shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (isinstance(q, int) and 0 <= q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (isinstance(niter, int) and niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - mean(A, -2, keepdim=True)
    return svd_lowrank(A, q, niter=niter)


# -- LOBPCG ---------------------------------------------------------------------------------------------

def _b_orthonormal_basis(S, B):
    """Z spanning S's columns with Z^H B Z = I, nearly dependent directions dropped (S's columns are scaled to unit
    B-norm first, then the Gram matrix's eigenvectors with eigenvalues above a tolerance are kept)."""
    BS = S if B is None else matmul(B, S)
    scale = sqrt((S * BS).sum(-2).clamp_min(dt.finfo(S.dtype).tiny))
    S, BS = S / scale, BS / scale
    gram = matmul(S.mH, BS)
    values, vectors = eigh((gram + gram.mH) / 2)
    keep = values > values.max() * (dt.finfo(S.dtype).eps ** 0.5 * S._shape[-1])
    values, vectors = values[keep], vectors[:, keep]
    return matmul(S, vectors / sqrt(values))


def _rayleigh_ritz(A, B, S, n: int, largest: bool):
    """The n extreme Ritz pairs (values, vectors) of A (against B) over the span of S's columns."""
    Z = _b_orthonormal_basis(S, B)
    H = matmul(Z.mH, matmul(A, Z))
    values, vectors = eigh((H + H.mH) / 2)
    count = values._shape[-1]
    chosen = slice(count - n, count) if largest else slice(0, n)
    values, vectors = values[chosen], vectors[:, chosen]
    if largest:  # descending, as PyTorch returns the largest first
        values, vectors = values.flip(0), vectors.flip(1)
    return values, matmul(Z, vectors)


def _lobpcg_one(A, k, B, X, iK, niter, tol, largest, tracker):
    """LOBPCG (Knyazev 2001) for one matrix: Rayleigh-Ritz over span[X, K R, P] until the k leading residuals are
    below tol relative to ||X|| (||A|| + |E| ||B||), or niter steps."""
    def times_b(Y):
        return Y if B is None else matmul(B, Y)

    n = X._shape[-1]
    E, X = _rayleigh_ritz(A, B, X, n, largest)
    norm_x = float(X.norm())
    norm_a, norm_b = float(matmul(A, X).norm()) / norm_x, float(times_b(X).norm()) / norm_x
    P, step = None, 0
    while True:
        R = matmul(A, X) - times_b(X) * unsqueeze(E, -2)
        error = R.norm(dim=-2) / (X.norm(dim=-2) * (norm_a + E.abs() * norm_b))
        converged = int((error < tol)[:k].all()) if k else 1
        state = types.SimpleNamespace(A=A, B=B, iK=iK, E=E, X=X, R=R, P=P,
                                      ivars={"istep": step, "converged_count": int((error < tol).sum())})
        if tracker is not None:
            tracker(state)
        if converged or (niter >= 0 and step >= niter):
            return E[:k], X[:, :k]
        W = R if iK is None else matmul(iK, R)
        E, X_new = _rayleigh_ritz(A, B, cat([X, W] + ([P] if P is not None else []), -1), n, largest)
        P = X_new - matmul(X, matmul(X.mH, times_b(X_new)))  # the step's part outside span(X)
        X, step = X_new, step + 1


def _batch_item(T, i: int):
    """Matrix i of a batched argument (the one matrix of an unbatched one), detached; None stays None."""
    if T is None:
        return None
    return T.detach().reshape((-1,) + T._shape[-2:])[i if T.ndim > 2 else 0]


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """(E, X): the k largest (or smallest) eigenvalues and eigenvectors of A X = B X diag(E), A symmetric, B
    symmetric positive definite, by LOBPCG with the preconditioner iK; random start from core's generator when X is
    None; batches loop (``torch.lobpcg``; method 'basic' and 'ortho' run the same B-orthonormal Rayleigh-Ritz,
    ``tracker`` is called each step with the iteration's state; E differentiates with respect to A and B; a
    gradient reaching X raises, its derivative is not implemented)."""
    check_matrix_input("lobpcg", A, name="A")
    if method not in (None, "basic", "ortho"):
        raise ValueError(f"lobpcg: method must be 'basic' or 'ortho', got {method!r}")
    m = A._shape[-1]
    if X is None:
        k = 1 if k is None else k
        n = k if n is None else n
    else:
        if not isinstance(X, Tensor) or X._shape[-2] != m:
            raise ValueError(f"lobpcg: X must be a tensor with {m} rows, got "
                             f"{list(X.shape) if isinstance(X, Tensor) else type(X).__name__}")
        n = X._shape[-1]
        k = n if k is None else k
    if not 0 < k <= n:
        raise ValueError(f"lobpcg: expected 0 < k <= n, got k={k} and n={n}")
    if m < 3 * n:
        raise ValueError(f"LPBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={n})")
    niter = -1 if niter is None else niter
    tol = dt.finfo(A.dtype).eps ** 0.5 if tol is None else tol
    largest = True if largest is None else bool(largest)
    batch = A._shape[:-2]
    matrices = A.detach().reshape((-1, m, m))  # the iteration is not differentiated: see the Rayleigh quotient below
    results = []
    for i in range(matrices._shape[0]):
        start = randn(m, n, dtype=A.dtype, device=A.device) if X is None else _batch_item(X, i)
        results.append(_lobpcg_one(matrices[i], k, _batch_item(B, i), start, _batch_item(iK, i), niter, tol, largest,
                                   tracker))
    vectors = results[0][1] if not batch else stack([r[1] for r in results]).reshape(batch + (m, k))
    # E as the Rayleigh quotient of the converged vectors: equal to the Ritz values, and its derivative is the
    # eigenvalues' first-order one, x^H (dA - E dB) x (differentiating the iteration divides by vanishing residuals)
    numerator = (vectors * matmul(A, vectors)).sum(-2)
    values = numerator if B is None else numerator / (vectors * matmul(B, vectors)).sum(-2)
    return values, _without_derivative(vectors, A, B)


def _without_derivative(vectors, *operands):
    """``vectors``, made to raise if a gradient reaches them while A or B requires grad: their derivative (PyTorch's
    partial-eigenspace formula) is not implemented, and dropping it silently would give a wrong gradient."""
    from ..autograd import Function, is_grad_enabled  # lazily: autograd is built over the ops

    class _NoEigenvectorDerivative(Function):
        @staticmethod
        def forward(ctx, x, *inputs):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            raise RuntimeError("lobpcg: the derivative of the eigenvectors X is not implemented here (the eigenvalues "
                               "E differentiate with respect to A and B); detach X, or use core.linalg.eigh for a "
                               "fully differentiable eigendecomposition")

    needing = [t for t in operands if isinstance(t, Tensor) and t.requires_grad]
    return _NoEigenvectorDerivative.apply(vectors, *needing) if needing and is_grad_enabled() else vectors
