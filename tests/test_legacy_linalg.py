"""The torch-namespace linear algebra outside torch.linalg against NumPy/SciPy on every device: svd (V), qr (some),
lu, lu_solve, lu_unpack, triangular_solve, geqrf/orgqr/ormqr and householder_product, the top-level norms, and the
names PyTorch 2 removed (eig, symeig, lstsq, solve, matrix_rank) with their warnings; gradients in float64."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg

import core
from core.autograd import gradcheck
from core.testing import assert_close

TOL = {"float32": {"rtol": 1e-4, "atol": 1e-4}, "float64": {"rtol": 1e-10, "atol": 1e-10}}
DTYPES = ["float32", "float64"]


def _rng():
    return np.random.default_rng(0)


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def _random(shape, dtype="float64"):
    return _rng().standard_normal(shape).astype(dtype)


def _well_conditioned(shape, dtype="float64"):
    return (_random(shape, dtype) + 3 * np.eye(shape[-1])).astype(dtype)


# -- svd, qr ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("some", [True, False])
def test_svd_returns_v(device, dtype, shape, some):
    a = _random(shape, dtype)
    U, S, V = core.svd(_t(a, device), some=some)
    m, n = shape[-2:]
    k = min(m, n)
    assert U.shape[-1] == (k if some else m) and V.shape[-1] == (k if some else n)
    assert_close(_np(S), np.linalg.svd(a, compute_uv=False), **TOL[dtype])
    rebuilt = _np(U)[..., :k] * _np(S)[..., None, :] @ np.swapaxes(_np(V)[..., :k], -1, -2)
    assert_close(rebuilt, a, **TOL[dtype])
    assert type(core.svd(_t(a, device))).__name__ == "svd" and core.svd(_t(a, device))._fields == ("U", "S", "V")


def test_svd_without_uv_gives_zero_matrices(device):
    a = _random((2, 4, 3))
    U, S, V = _t(a, device).svd(compute_uv=False)
    assert U.shape == (2, 4, 4) and V.shape == (2, 3, 3)
    assert not _np(U).any() and not _np(V).any()
    assert_close(_np(S), np.linalg.svd(a, compute_uv=False))


@pytest.mark.parametrize("some", [True, False])
def test_qr_some(device, some):
    a = _random((5, 3))
    Q, R = core.qr(_t(a, device), some=some)
    q, r = np.linalg.qr(a, mode="reduced" if some else "complete")
    assert Q.shape == q.shape and R.shape == r.shape
    assert_close(np.abs(_np(Q)), np.abs(q))
    assert_close(_np(Q) @ _np(R), a)
    assert _t(a, device).qr()._fields == ("Q", "R")


def test_svd_qr_gradients():
    a = _t(_random((4, 3)), "cpu", requires_grad=True)
    assert gradcheck(lambda x: core.svd(x)[1], (a,))
    # U and V are unique up to signs that cancel in U diag(S) V^T
    assert gradcheck(lambda x: (lambda u, s, v: u @ core.diag(s) @ v.mT)(*core.svd(x)), (a,))
    assert gradcheck(lambda x: core.qr(x)[1], (a,))


# -- lu, lu_solve, lu_unpack, triangular_solve ---------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (3, 5)])
def test_lu_and_lu_unpack(device, shape):
    a = _random(shape)
    LU, pivots = core.lu(_t(a, device))
    assert pivots.dtype is core.int32
    P, L, U = core.lu_unpack(LU, pivots)
    assert_close(_np(P) @ _np(L) @ _np(U), a)
    if len(shape) == 2:
        p, l, u = scipy.linalg.lu(a)
        assert_close(_np(L), l) and assert_close(_np(U), u) and assert_close(_np(P), p)
    P_, L_, U_ = core.lu_unpack(LU, pivots, unpack_data=False)
    assert L_.numel() == 0 and U_.numel() == 0 and P_.shape == P.shape
    assert core.lu_unpack(LU, pivots, unpack_pivots=False).P.numel() == 0


def test_lu_infos_and_errors(device):
    singular = _t(np.zeros((2, 3, 3)), device)
    LU, pivots, infos = core.lu(singular, get_infos=True)
    assert _np(infos).tolist() == [1, 1]
    with pytest.raises(core.linalg.LinAlgError):
        core.lu(singular)
    with pytest.raises(RuntimeError, match="int32"):
        core.lu_unpack(LU, pivots.long())
    assert len(_t(_random((3, 3)), device).lu()) == 2


def test_lu_solve(device):
    a, b = _well_conditioned((2, 4, 4)), _random((2, 4, 3))
    A = _t(a, device)
    x = core.lu_solve(_t(b, device), *core.lu(A))
    assert_close(_np(x), np.linalg.solve(a, b))
    assert_close(_np(_t(b, device).lu_solve(*A.lu())), np.linalg.solve(a, b))


def test_lu_solve_gradient():
    a, b = _well_conditioned((3, 3)), _random((3, 2))
    A, B = _t(a, "cpu", True), _t(b, "cpu", True)
    assert gradcheck(lambda A, B: core.lu_solve(B, *core.lu(A)), (A, B))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_triangular_solve(device, upper, transpose, unitriangular):
    a, b = _well_conditioned((2, 4, 4)), _random((4, 2))
    X, clone = core.triangular_solve(_t(b, device), _t(a, device), upper, transpose, unitriangular)
    T = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        np.fill_diagonal(T[0], 1), np.fill_diagonal(T[1], 1)
    T = np.swapaxes(T, -1, -2) if transpose else T
    assert_close(_np(X), np.linalg.solve(T, np.broadcast_to(b, (2, 4, 2))))
    assert_close(_np(clone), a)
    assert X.shape == (2, 4, 2)


def test_triangular_solve_method_gradient_and_errors():
    a, b = _well_conditioned((3, 3)), _random((3, 2))
    A, B = _t(a, "cpu", True), _t(b, "cpu", True)
    assert gradcheck(lambda A, B: B.triangular_solve(A, upper=False, transpose=True).solution, (A, B))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        core.triangular_solve(_t(b[:, 0], "cpu"), A)
    with pytest.raises(TypeError, match="must be Tensor"):
        core.triangular_solve(b, A)


# -- Householder: geqrf, orgqr, ormqr, householder_product ------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_geqrf_matches_lapack(device, shape):
    a = _random(shape)
    h, tau = core.geqrf(_t(a, device))
    for i, matrix in enumerate(a.reshape((-1,) + shape[-2:])):
        qr, tau_ref, _, _ = scipy.linalg.lapack.dgeqrf(matrix)
        assert_close(_np(h).reshape((-1,) + shape[-2:])[i], qr)
        assert_close(_np(tau).reshape(-1, min(shape[-2:]))[i], tau_ref)
    assert _t(a, device).geqrf()._fields == ("a", "tau")


@pytest.mark.parametrize("dtype", DTYPES)
def test_orgqr_is_qs_q(device, dtype):
    a = _random((2, 5, 3), dtype)
    h, tau = core.geqrf(_t(a, device))
    Q = core.orgqr(h, tau)
    for i in range(2):
        ref = scipy.linalg.lapack.dorgqr(*scipy.linalg.lapack.dgeqrf(a[i].astype("float64"))[:2])[0]
        assert_close(_np(Q)[i], ref.astype(dtype), **TOL[dtype])
    assert_close(_np(core.linalg.householder_product(h, tau)), _np(Q))
    assert_close(_np(h.orgqr(tau)), _np(Q))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr_multiplies_by_q(device, left, transpose):
    a = _random((5, 3))
    c = _random((5, 2) if left else (2, 5))
    h, tau = core.geqrf(_t(a, device))
    q = np.linalg.qr(a, mode="complete")[0]
    q = q.T if transpose else q
    # Q's last columns are not unique: compare against LAPACK's own complete Q from the same reflectors
    q_full = scipy.linalg.lapack.dorgqr(np.pad(_np(h), ((0, 0), (0, 2))), np.pad(_np(tau), (0, 2)))[0]
    q_full = q_full.T if transpose else q_full
    assert_close(np.abs(q_full[:, :3] if not transpose else q_full[:3]), np.abs(q[:, :3] if not transpose else q[:3]))
    expected = q_full @ c if left else c @ q_full
    assert_close(_np(core.ormqr(h, tau, _t(c, device), left, transpose)), expected)


def test_householder_product_gradient_and_errors():
    a, tau = _random((4, 3)), _random(2)
    A, T = _t(a, "cpu", True), _t(tau, "cpu", True)
    assert gradcheck(core.linalg.householder_product, (A, T))
    assert gradcheck(lambda A, T, C: core.ormqr(A, T, C, transpose=True), (A, T, _t(_random((4, 2)), "cpu", True)))
    with pytest.raises(RuntimeError, match="greater than or equal"):
        core.linalg.householder_product(_t(a.T, "cpu"), T)
    with pytest.raises(RuntimeError, match="one dimension less"):
        core.linalg.householder_product(A, _t(np.ones((1, 2)), "cpu"))


# -- top-level norms --------------------------------------------------------------------------------------

def test_nuclear_and_frobenius_norm(device):
    a = _random((2, 3, 4))
    assert_close(_np(core.nuclear_norm(_t(a[0], device))), np.linalg.norm(a[0], "nuc"))
    assert_close(_np(core.nuclear_norm(_t(a, device), (1, 2))), np.linalg.norm(a, "nuc", axis=(1, 2)))
    assert core.nuclear_norm(_t(a[0], device), True).shape == (1, 1)
    assert_close(_np(core.frobenius_norm(_t(a, device), (0, 2))), np.sqrt((a ** 2).sum((0, 2))))
    assert core.frobenius_norm(_t(a, device), (1, 2), keepdim=True).shape == (2, 1, 1)
    with pytest.raises(RuntimeError, match="2 dimensions"):
        core.nuclear_norm(_t(a, device))


def test_nuclear_norm_gradient():
    assert gradcheck(core.nuclear_norm, (_t(_random((3, 4)), "cpu", True),))


# -- names PyTorch 2 removed --------------------------------------------------------------------------------

def _warns(replacement):
    return pytest.warns(UserWarning, match=replacement.replace(".", r"\."))


@pytest.mark.parametrize("matrix", [[[2.0, 1.0], [1.0, 3.0]], [[0.0, 2.0, 0.0], [-2.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
                                    "random"])
def test_eig_legacy_packing(device, matrix):
    a = _random((4, 4)) if matrix == "random" else np.array(matrix)
    with _warns("torch.linalg.eig"):
        values, vectors = core.eig(_t(a, device), eigenvectors=True)
    w, v = np.linalg.eig(a)
    assert_close(_np(values), np.stack([w.real, w.imag], -1))
    V = _np(vectors)
    # rebuild the complex vectors from LAPACK's real packing and check A v = w v
    for j in range(len(w)):
        if w[j].imag > 0:
            vec = V[:, j] + 1j * V[:, j + 1]
        elif w[j].imag < 0:
            vec = V[:, j - 1] - 1j * V[:, j]
        else:
            vec = V[:, j]
        assert np.allclose(a @ vec, w[j] * vec) and np.isclose(np.linalg.norm(vec), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert core.eig(_t(a, device)).eigenvectors.numel() == 0
        assert _t(a, device).eig(True)._fields == ("eigenvalues", "eigenvectors")


@pytest.mark.parametrize("upper", [True, False])
def test_symeig(device, upper):
    a = _random((2, 3, 3))
    triangle = np.triu(a) if upper else np.tril(a)
    sym = triangle + np.swapaxes(triangle, -1, -2) - np.eye(3) * np.diagonal(a, 0, -2, -1)[..., None, :]
    with _warns("torch.linalg.eigh"):
        values, vectors = core.symeig(_t(a, device), eigenvectors=True, upper=upper)
    assert_close(_np(values), np.linalg.eigvalsh(sym))
    assert_close(_np(vectors) * _np(values)[..., None, :], sym @ _np(vectors))
    with pytest.warns(UserWarning):
        assert _t(a, device).symeig().eigenvectors.numel() == 0


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_lstsq_legacy(device, shape):
    a, b = _random(shape), _random((shape[0], 2))
    with _warns("torch.linalg.lstsq"):
        X, QR = core.lstsq(_t(b, device), _t(a, device))
    m, n = shape
    assert X.shape == (max(m, n), 2) and QR.shape == shape
    solution = np.linalg.lstsq(a, b, rcond=None)
    assert_close(_np(X)[:n], solution[0])
    if m > n:  # the rows below n carry the residual: their squares sum to it
        assert_close((_np(X)[n:] ** 2).sum(0), solution[1])
        assert_close(np.abs(np.triu(_np(QR))[:n]), np.abs(np.linalg.qr(a)[1]))
    else:
        assert_close(np.abs(np.tril(_np(QR))[:, :m]), np.abs(np.linalg.qr(a.T)[1].T))


def test_solve_legacy(device):
    a, b = _well_conditioned((2, 3, 3)), _random((3, 2))
    with _warns("torch.linalg.solve"):
        X, LU = core.solve(_t(b, device), _t(a, device))
    assert_close(_np(X), np.linalg.solve(a, np.broadcast_to(b, (2, 3, 2))))
    P, L, U = core.lu_unpack(*core.linalg.lu_factor(_t(a, device)))
    assert_close(_np(LU), _np(core.linalg.lu_factor(_t(a, device)).LU))
    with pytest.warns(UserWarning):
        assert_close(_np(_t(b, device).solve(_t(a[0], device)).solution), np.linalg.solve(a[0], b))


def test_matrix_rank_legacy(device):
    a = _random((4, 2)) @ _random((2, 5))
    with _warns("torch.linalg.matrix_rank"):
        assert core.matrix_rank(_t(a, device)).item() == 2
    spd = a @ a.T
    with pytest.warns(UserWarning):
        assert core.matrix_rank(_t(spd, device), symmetric=True).item() == 2
        s = np.linalg.svd(a, compute_uv=False)
        assert core.matrix_rank(_t(a, device), tol=float(s[1]) * 1.01).item() == 1
        assert core.matrix_rank(_t(a, device), tol=float(s[1]) * 0.99).item() == 2


# -- LDL^T: core.linalg.ldl_factor(_ex), ldl_solve ---------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 5)])
def test_ldl_factor_matches_sytrf_and_solves(device, shape):
    a = _random(shape)
    sym = a + np.swapaxes(a, -1, -2)  # indefinite: Bunch-Kaufman pivots with 2x2 blocks may appear
    LD, pivots, info = core.linalg.ldl_factor_ex(_t(sym, device))
    assert pivots.dtype is core.int32 and info.shape == shape[:-2] and not _np(info).any()
    for i, matrix in enumerate(sym.reshape((-1,) + shape[-2:])):
        ldu, ipiv, _ = scipy.linalg.lapack.dsytrf(matrix, lower=1)
        assert_close(_np(LD).reshape((-1,) + shape[-2:])[i], np.tril(ldu))
        assert (_np(pivots).reshape(-1, shape[-1])[i] == ipiv).all()
    b = _random(shape[:-1] + (3,))
    LD2, pivots2 = core.linalg.ldl_factor(_t(sym, device))
    X = core.linalg.ldl_solve(LD2, pivots2, _t(b, device))
    assert_close(_np(X), np.linalg.solve(sym, b))
    assert type(core.linalg.ldl_factor(_t(sym, device))).__name__ == "linalg_ldl_factor"


def test_ldl_solve_broadcasts_and_checks():
    a = _random((3, 3))
    sym = a + a.T
    LD, pivots = core.linalg.ldl_factor(core.tensor(sym))
    b = _random((2, 3, 1))
    assert_close(_np(core.linalg.ldl_solve(LD, pivots, core.tensor(b))), np.linalg.solve(sym, b))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        core.linalg.ldl_solve(LD, pivots, core.ones(4, 1, dtype=core.float64))
    with pytest.raises(RuntimeError, match="int32"):
        core.linalg.ldl_solve(LD, pivots.long(), core.tensor(b[0]))


# -- products and helpers kept at the top level ----------------------------------------------------------------

@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 3.0)])
def test_addr(device, beta, alpha):
    m, u, v = _random((3, 4)), _random(3), _random(4)
    if beta == 0:
        m[0, 0] = np.nan  # ignored when beta is 0
    expected = (beta * m if beta else 0) + alpha * np.outer(u, v)
    assert_close(_np(core.addr(_t(m, device), _t(u, device), _t(v, device), beta=beta, alpha=alpha)), expected)
    x = _t(m, device)
    x.addr_(_t(u, device), _t(v, device), beta=beta, alpha=alpha)
    assert_close(_np(x), expected)
    assert_close(_np(_t(m[0], device).addr(_t(u, device), _t(v, device))), m[0] + np.outer(u, v))  # broadcasts


def test_addr_gradient_and_errors():
    m, u, v = (_t(a, "cpu", True) for a in (_random((3, 2)), _random(3), _random(2)))
    assert gradcheck(lambda m, u, v: core.addr(m, u, v, beta=0.5, alpha=2.0), (m, u, v))
    with pytest.raises(RuntimeError, match="1-D"):
        core.addr(m, m, v)


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf"), 0])
def test_dist(device, p):
    a, b = _random((3, 4)), _random(4)
    d = (a - b).ravel()
    expected = np.abs(d).max() if p == float("inf") else np.count_nonzero(d) if p == 0 else \
        (np.abs(d) ** p).sum() ** (1 / p)
    assert_close(_np(core.dist(_t(a, device), _t(b, device), p)), np.float64(expected))
    assert_close(_np(_t(a, device).dist(_t(b, device))), np.float64(np.linalg.norm(d)))


@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 1.5), (1, 1, 2.0), (3, 2, 0.5), (2, -1, 100.0)])
def test_renorm(device, p, dim, maxnorm):
    a = _random((3, 4, 2))
    axes = tuple(d for d in range(3) if d != dim % 3)
    norms = (np.abs(a) ** p).sum(axes, keepdims=True) ** (1 / p)
    expected = a * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    assert_close(_np(core.renorm(_t(a, device), p, dim, maxnorm)), expected)
    x = _t(a, device)
    x.renorm_(p, dim, maxnorm)
    assert_close(_np(x), expected)


def test_renorm_gradient_and_errors():
    a = _t(_random((3, 4)), "cpu", True)
    assert gradcheck(lambda a: core.renorm(a, 2, 0, 1.0), (a,))
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        core.renorm(a, 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="maxnorm"):
        core.renorm(a, 2, 0, -1.0)


def test_adjoint(device):
    a = _random((2, 3, 4)) + 1j * _random((2, 3, 4))
    assert_close(_np(core.adjoint(_t(a, device))), np.conj(np.swapaxes(a, -1, -2)))
    b = _random((3, 4))
    assert_close(_np(_t(b, device).adjoint()), b.T)
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        core.adjoint(_t(b[0], device))


@pytest.mark.parametrize("N", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("increasing", [True, False])
def test_vander(device, N, increasing):
    x = np.array([2, -1, 3, 0])
    result = core.vander(_t(x, device), N, increasing)
    assert result.dtype is core.int64
    assert (_np(result) == np.vander(x, N, increasing)).all()
    xf = _random(3)
    assert_close(_np(core.vander(_t(xf, device), N, increasing)), np.vander(xf, N, increasing))
    with pytest.raises(RuntimeError, match="one-dimensional"):
        core.vander(_t(np.ones((2, 2)), device))


def test_chain_matmul(device):
    mats = [_random(s) for s in ((2, 5), (5, 3), (3, 4), (4, 1))]
    with _warns("torch.linalg.multi_dot"):
        result = core.chain_matmul(*(_t(m, device) for m in mats))
    assert_close(_np(result), np.linalg.multi_dot(mats))
    with pytest.warns(UserWarning):
        single = _t(mats[0], device)
        copy = core.chain_matmul(single)
        assert_close(_np(copy), mats[0]) and copy is not single
        with pytest.raises(RuntimeError, match="Expected one or more matrices"):
            core.chain_matmul()
        with pytest.raises(RuntimeError, match="Tensor dimension is 1, expected 2 instead."):
            core.chain_matmul(_t(mats[0], device), _t(mats[1][:, 0], device))


def test_householder_complex(device):
    rng = _rng()
    a = rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))
    c = rng.standard_normal((5, 2)) + 1j * rng.standard_normal((5, 2))
    h, tau = core.geqrf(_t(a, device))
    ref, ref_tau, _, _ = scipy.linalg.lapack.zgeqrf(a)
    assert_close(_np(h), ref) and assert_close(_np(tau), ref_tau)
    assert_close(_np(core.orgqr(h, tau)), scipy.linalg.lapack.zungqr(ref, ref_tau)[0])
    q_full = scipy.linalg.lapack.zungqr(np.pad(ref, ((0, 0), (0, 2))), np.pad(ref_tau, (0, 2)))[0]
    assert_close(_np(core.ormqr(h, tau, _t(c, device), transpose=True)), q_full.conj().T @ c)
