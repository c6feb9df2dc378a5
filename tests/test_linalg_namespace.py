"""core.linalg against NumPy: batched and empty shapes in float32 and float64 on every device, PyTorch's errors
(type and message), gradients in float64, and the torch-level aliases and Tensor methods."""

from __future__ import annotations

import importlib
import zlib

import numpy as np
import pytest

import core
from core.autograd import gradcheck, gradgradcheck
from core.testing import assert_close

L = core.linalg
TOL = {"float32": {"rtol": 1e-4, "atol": 1e-4}, "float64": {"rtol": 1e-10, "atol": 1e-10}}
DTYPES = ["float32", "float64"]
SQUARE = [(3, 3), (2, 3, 3), (2, 1, 4, 4), (0, 3, 3), (1, 1)]


def _rng(*key):
    """A generator seeded by ``key`` alone (crc32, not ``hash``: str hashes change with every process)."""
    return np.random.default_rng([0, *(zlib.crc32(str(k).encode()) for k in key)])


def _random(shape, dtype, *key):
    return _rng(shape, dtype, *key).standard_normal(shape).astype(dtype)


def _well_conditioned(shape, dtype):
    """Random matrices with a dominant diagonal: invertible, with a modest condition number."""
    a = _random(shape, dtype, "wc")
    return (a + 3 * np.eye(shape[-1], dtype=dtype)).astype(dtype)


def _spd(shape, dtype):
    a = _random(shape, dtype, "spd")
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def test_core_linalg_is_a_module():
    module = importlib.import_module("core.linalg")
    from core import linalg

    assert linalg is module is core.linalg
    assert module.__name__ == "core.linalg"
    assert issubclass(L.LinAlgError, RuntimeError)
    assert callable(core.matmul) and callable(core.ops.linalg.matmul)  # the products family is unchanged


# -- values against NumPy --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE, ids=str)
def test_inv_det_slogdet(device, shape, dtype):
    a = _well_conditioned(shape, dtype)
    A = _t(a, device)
    assert_close(L.inv(A), np.linalg.inv(a), **TOL[dtype])
    inverse, info = L.inv_ex(A)
    assert_close(inverse, np.linalg.inv(a), **TOL[dtype])
    assert_close(info, np.zeros(shape[:-2], np.int32))
    assert_close(L.det(A), np.asarray(np.linalg.det(a)), **TOL[dtype])
    sign, logabsdet = L.slogdet(A)
    expected_sign, expected_log = np.linalg.slogdet(a)
    assert_close(sign, np.asarray(expected_sign), **TOL[dtype])
    assert_close(logabsdet, np.asarray(expected_log), **TOL[dtype])
    assert_close(core.det(A), np.asarray(np.linalg.det(a)), **TOL[dtype])
    assert_close(A.inverse(), np.linalg.inv(a), **TOL[dtype])


def test_det_of_empty_matrix_is_one(device):
    assert_close(L.det(core.zeros(2, 0, 0, device=device)), np.ones(2, np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3)),
                                              ((2, 3, 3), (3, 4)), ((2, 1, 3, 3), (5, 3, 1)), ((3, 3), (2, 3, 2)),
                                              ((0, 3, 3), (0, 3)), ((3, 3), (3, 0))], ids=str)
def test_solve_broadcasts_like_pytorch(device, a_shape, b_shape, dtype):
    a, b = _well_conditioned(a_shape, dtype), _random(b_shape, dtype, "b")
    vector = len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])
    rhs = b[..., None] if vector else b
    batch = np.broadcast_shapes(a_shape[:-2], rhs.shape[:-2])
    expected = np.linalg.solve(np.broadcast_to(a, batch + a_shape[-2:]), np.broadcast_to(rhs, batch + rhs.shape[-2:]))
    expected = expected[..., 0] if vector else expected
    assert_close(L.solve(_t(a, device), _t(b, device)), expected, **TOL[dtype])
    X, info = L.solve_ex(_t(a, device), _t(b, device))
    assert_close(X, expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_left_false(device, dtype):
    a, b = _well_conditioned((2, 3, 3), dtype), _random((2, 4, 3), dtype, "b")
    expected = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    assert_close(L.solve(_t(a, device), _t(b, device), left=False), expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE, ids=str)
def test_cholesky(device, shape, dtype):
    a = _spd(shape, dtype)
    expected = np.linalg.cholesky(a)
    assert_close(L.cholesky(_t(a, device)), expected, **TOL[dtype])
    assert_close(L.cholesky(_t(a, device), upper=True), np.swapaxes(expected, -1, -2), **TOL[dtype])
    factor, info = L.cholesky_ex(_t(a, device))
    assert_close(factor, expected, **TOL[dtype])
    assert_close(info, np.zeros(shape[:-2], np.int32))
    assert_close(core.cholesky(_t(a, device)), expected, **TOL[dtype])
    lower_only, upper_only = np.tril(a), np.triu(a)  # each triangle alone is read as the Hermitian matrix
    assert_close(L.cholesky(_t(lower_only, device)), expected, **TOL[dtype])
    assert_close(L.cholesky(_t(upper_only, device), upper=True), np.swapaxes(expected, -1, -2), **TOL[dtype])
    assert_close(_t(a, device).cholesky(), expected, **TOL[dtype])


def _reconstructs(product, a, dtype):
    assert_close(product, a, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 5, 2), (2, 3, 3), (0, 3, 2)], ids=str)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(device, shape, mode, dtype):
    a = _random(shape, dtype, "qr")
    Q, R = L.qr(_t(a, device), mode)
    k_min = min(shape[-2:])
    expected_r = np.linalg.qr(a, mode="r") if a.size else np.zeros(shape[:-2] + (k_min, shape[-1]), dtype)
    assert_close(R[..., :k_min, :].abs(), np.abs(expected_r), **TOL[dtype])  # unique up to the signs of R's rows
    if mode == "r":
        assert tuple(Q.shape) == (0,)
    else:
        k = shape[-2] if mode == "complete" else min(shape[-2:])
        assert tuple(Q.shape) == shape[:-2] + (shape[-2], k)
        _reconstructs(Q @ R, a, dtype)
        assert_close(Q.mT @ Q, np.broadcast_to(np.eye(k, dtype=dtype), shape[:-2] + (k, k)), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE, ids=str)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_and_eigvalsh(device, shape, uplo, dtype):
    a = _random(shape, dtype, "eigh")
    values, vectors = L.eigh(_t(a, device), UPLO=uplo)
    expected = np.linalg.eigvalsh(a, UPLO=uplo) if a.size else np.zeros(shape[:-1], dtype)
    assert_close(values, expected, **TOL[dtype])
    assert_close(L.eigvalsh(_t(a, device), UPLO=uplo), expected, **TOL[dtype])
    triangle = np.tril(a) if uplo == "L" else np.triu(a)
    symmetric = triangle + np.swapaxes(triangle, -1, -2) - triangle * np.eye(shape[-1], dtype=dtype)
    _reconstructs((vectors * values.unsqueeze(-2)) @ vectors.mT, symmetric, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 5, 2), (2, 3, 3), (0, 3, 2), (2, 0, 3)], ids=str)
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_and_svdvals(device, shape, full_matrices, dtype):
    a = _random(shape, dtype, "svd")
    U, S, Vh = L.svd(_t(a, device), full_matrices=full_matrices)
    expected = np.linalg.svd(a, compute_uv=False) if a.size else np.zeros(shape[:-2] + (min(shape[-2:]),), dtype)
    assert_close(S, expected, **TOL[dtype])
    assert_close(L.svdvals(_t(a, device)), expected, **TOL[dtype])
    m, n = shape[-2:]
    k = min(m, n)
    assert tuple(U.shape) == shape[:-2] + (m, m if full_matrices else k)
    assert tuple(Vh.shape) == shape[:-2] + (n if full_matrices else k, n)
    _reconstructs((U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :], a, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 5])
def test_matrix_power(device, n, dtype):
    a = _well_conditioned((2, 3, 3), dtype) / 3
    expected = np.linalg.matrix_power(a, n)
    tol = {"rtol": 1e-3, "atol": 1e-3} if dtype == "float32" else TOL[dtype]
    assert_close(L.matrix_power(_t(a, device), n), expected, **tol)
    assert_close(_t(a, device).matrix_power(n), expected, **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_rank_and_pinv(device, dtype):
    a = _random((2, 5, 3), dtype, "rank")
    a[1, :, 2] = a[1, :, 0] + a[1, :, 1]  # rank 2
    assert_close(L.matrix_rank(_t(a, device)), np.linalg.matrix_rank(a).astype(np.int64))
    spd = _spd((3, 3), dtype)
    assert_close(L.matrix_rank(_t(spd, device), hermitian=True), np.asarray(3, np.int64))
    tol = {"rtol": 1e-3, "atol": 1e-3} if dtype == "float32" else {"rtol": 1e-8, "atol": 1e-8}
    default_rtol = np.finfo(dtype).eps * 5  # PyTorch's default: eps * max(m, n), so the rank-2 matrix stays rank 2
    assert_close(L.pinv(_t(a, device)), np.linalg.pinv(a, rcond=default_rtol), **tol)
    assert_close(L.pinv(_t(spd, device), hermitian=True), np.linalg.pinv(spd, hermitian=True), **tol)
    assert_close(_t(a[0], device).pinverse(), np.linalg.pinv(a[0], rcond=1e-15), **tol)


@pytest.mark.parametrize("shape", [(2, 4), (4, 2), (3, 3)])
def test_pinv_gradient_of_a_rank_deficient_matrix(device, shape):
    """A rank-1 matrix whose second singular value is exactly zero (an outer product of small integers): the
    derivative (PyTorch's pinv_backward) stays finite, and moving along rank-1 matrices it is the true one."""
    m, n = shape
    u = core.tensor(np.arange(1.0, m + 1), dtype=core.float64, device=device, requires_grad=True)
    v = core.tensor(np.arange(2.0, n + 2), dtype=core.float64, device=device)
    assert gradcheck(lambda u: L.pinv(u.unsqueeze(1) * v.unsqueeze(0)), (u,))
    assert gradgradcheck(lambda u: L.pinv(u.unsqueeze(1) * v.unsqueeze(0)), (u,))
    a = core.tensor(np.ones((m, n)), dtype=core.float64, device=device, requires_grad=True)
    L.pinv(a).sum().backward()  # all ones: singular values (sqrt(mn), 0, ...), and the SVD's derivative gave NaN
    assert np.isfinite(a.grad.cpu().numpy()).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.1, 1.0, 20.0])  # 20: beyond the Pade approximant's range, so squarings run
def test_matrix_exp(device, scale, dtype):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = (_random((2, 4, 4), dtype, "expm") * scale).astype(dtype)
    expected = scipy_linalg.expm(a.astype(np.float64))
    tol = 1e-5 if dtype == "float32" else 1e-11
    for result in (L.matrix_exp(_t(a, device)), core.matrix_exp(_t(a, device)), _t(a, device).matrix_exp()):
        assert_close(result / float(np.abs(expected).max()), (expected / np.abs(expected).max()).astype(dtype),
                     rtol=tol, atol=tol)
    assert tuple(L.matrix_exp(core.zeros(0, 2, 2, device=device)).shape) == (0, 2, 2)


MATRIX_ORDERS = ["fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", MATRIX_ORDERS, ids=str)
@pytest.mark.parametrize("dim", [(-2, -1), (2, 0)], ids=str)
def test_matrix_norm(device, ord, dim, dtype):
    a = _random((2, 4, 3), dtype, "matrix_norm")
    expected = np.linalg.norm(a, ord, axis=dim)
    assert_close(L.matrix_norm(_t(a, device), ord, dim), expected, **TOL[dtype])
    assert_close(L.norm(_t(a, device), ord, dim), expected, **TOL[dtype])
    kept = L.matrix_norm(_t(a, device), ord, dim, keepdim=True)
    assert_close(kept, np.linalg.norm(a, ord, axis=dim, keepdims=True), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", [2, 1, np.inf, -np.inf, 0, 3.5], ids=str)
def test_vector_norm(device, ord, dtype):
    a = _random((2, 4, 3), dtype, "vector_norm")
    assert_close(L.vector_norm(_t(a, device), ord, dim=-1), np.linalg.norm(a, ord, axis=-1), **TOL[dtype])
    assert_close(L.vector_norm(_t(a, device), ord), np.linalg.norm(a.ravel(), ord), **TOL[dtype])
    assert_close(L.norm(_t(a[0, 0], device), ord), np.linalg.norm(a[0, 0], ord), **TOL[dtype])
    assert_close(L.norm(_t(a, device)), np.linalg.norm(a.ravel()), **TOL[dtype])


def test_norm_errors(device):
    with pytest.raises(RuntimeError) as err:
        L.vector_norm(core.ones(3, dtype=core.int64, device=device))
    assert str(err.value) == "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        L.matrix_norm(core.ones(2, 2, device=device), 3)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: The input tensor A must have at least 2 dimensions."):
        L.matrix_norm(core.ones(2, device=device))
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."):
        L.norm(core.ones(2, 2, 2, device=device), 2)


def test_nuclear_norm_uses_svdvals(device):
    a = _random((2, 4, 3), "float64", "nuc")
    assert_close(core.norm(_t(a, device), "nuc", dim=(1, 2)), np.linalg.norm(a, "nuc", axis=(1, 2)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_logdet(device, dtype):
    a = _spd((2, 3, 3), dtype)
    assert_close(core.logdet(_t(a, device)), np.linalg.slogdet(a)[1], **TOL[dtype])
    assert_close(_t(a, device).logdet(), np.linalg.slogdet(a)[1], **TOL[dtype])
    negative = np.diag([-1.0, 2.0]).astype(dtype)
    assert np.isnan(core.logdet(_t(negative, device)).item())
    assert core.logdet(_t(np.zeros((2, 2), dtype), device)).item() == -np.inf
    sign, logabsdet = core.slogdet(_t(negative, device))
    assert sign.item() == -1.0 and abs(logabsdet.item() - np.log(2.0)) < 1e-6


@pytest.mark.parametrize("dtype", DTYPES)
def test_products(device, dtype):
    x, y = _random((4, 3), dtype, "x"), _random((2, 1, 3), dtype, "y")
    assert_close(L.cross(_t(x, device), _t(y[0], device)), np.cross(x, y[0]), **TOL[dtype])
    assert_close(L.cross(_t(x.T, device), _t(x.T, device), dim=0), np.zeros((3, 4), dtype), **TOL[dtype])
    assert_close(L.vecdot(_t(x, device), _t(y, device)), (x * y).sum(-1), **TOL[dtype])
    mats = [_random(s, dtype, "md", i) for i, s in enumerate([(3,), (3, 4), (4, 10), (10, 2), (2,)])]
    assert_close(L.multi_dot([_t(m, device) for m in mats]), np.linalg.multi_dot(mats), **TOL[dtype])
    assert_close(L.multi_dot([_t(m, device) for m in mats[1:4]]), np.linalg.multi_dot(mats[1:4]), **TOL[dtype])


def _phase_normalised(vectors: np.ndarray) -> np.ndarray:
    """Eigenvector columns multiplied by the conjugate phase of each column's largest-magnitude entry."""
    largest = np.take_along_axis(vectors, np.abs(vectors).argmax(-2)[..., None, :], -2)
    return vectors * (np.conj(largest) / np.abs(largest))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2)], ids=str)
def test_eig_and_eigvals(device, shape, dtype):
    a = _random(shape, dtype, "eig")
    values, vectors = L.eig(_t(a, device))
    complex_name = "complex64" if dtype == "float32" else "complex128"
    assert values.dtype.name == vectors.dtype.name == complex_name
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else TOL[dtype]
    if a.size:
        expected_values, expected_vectors = np.linalg.eig(a)
        assert_close(values, expected_values.astype(complex_name), **tol)
        # eigenvectors are unique up to a phase per column (LAPACK and cuSOLVER pick different ones): compare
        # them with each column turned so that its largest entry is real and positive
        assert_close(_phase_normalised(vectors.cpu().numpy()), _phase_normalised(expected_vectors).astype(complex_name),
                     **tol)
        assert_close(L.eigvals(_t(a, device)), expected_values.astype(complex_name), **tol)
    assert tuple(vectors.shape) == shape  # (the derivatives: tests/test_linalg_derivatives.py)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular(device, upper, left, unitriangular, dtype):
    a, b = _well_conditioned((2, 3, 3), dtype), _random((3, 2) if left else (2, 3), dtype, "tri")
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - t * np.eye(3, dtype=dtype) + np.eye(3, dtype=dtype)
    expected = np.linalg.solve(t, np.broadcast_to(b, (2, 3, 2))) if left else \
        np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.broadcast_to(b.T, (2, 3, 2))), -1, -2)
    result = L.solve_triangular(_t(a, device), _t(b, device), upper=upper, left=left, unitriangular=unitriangular)
    assert_close(result, expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)], ids=str)
@pytest.mark.parametrize("rank_deficient", [False, True])
def test_lstsq(device, shape, rank_deficient, dtype):
    a, b = _random((2,) + shape, dtype, "lstsq"), _random((2, shape[0], 2), dtype, "lstsq-b")
    if rank_deficient:
        a[..., 2] = a[..., 0]
    expected = [np.linalg.lstsq(a[i].astype(np.float64), b[i].astype(np.float64), rcond=None) for i in range(2)]
    tol = {"rtol": 1e-3, "atol": 1e-3} if dtype == "float32" else {"rtol": 1e-8, "atol": 1e-8}
    result = L.lstsq(_t(a, device), _t(b, device))
    assert_close(result.solution, np.stack([e[0] for e in expected]).astype(dtype), **tol)
    assert_close(result.rank, np.array([e[2] for e in expected], np.int64))
    if shape[0] > shape[1] and not rank_deficient:
        assert_close(result.residuals, np.stack([e[1] for e in expected]).astype(dtype), **tol)
    else:
        assert tuple(result.residuals.shape) == (0,)
    assert tuple(result.singular_values.shape) == (0,)
    with_values = L.lstsq(_t(a, device), _t(b[..., 0], device), driver="gelsd")
    assert_close(with_values.solution, np.stack([e[0][:, 0] for e in expected]).astype(dtype), **tol)
    assert_close(with_values.singular_values, np.stack([e[3] for e in expected]).astype(dtype), **tol)
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        L.lstsq(_t(a, device), _t(b, device), driver="qr")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (2, 3, 5), (0, 3, 3)], ids=str)
def test_lu_and_lu_factor(device, shape, dtype):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = _random(shape, dtype, "lu")
    P, lower, upper = L.lu(_t(a, device))
    k = min(shape[-2:])
    assert tuple(lower.shape) == shape[:-1] + (k,) and tuple(upper.shape) == shape[:-2] + (k, shape[-1])
    assert_close(P @ lower @ upper, a, **TOL[dtype])
    LU, pivots = L.lu_factor(_t(a, device))
    assert pivots.dtype is core.int32
    for index in np.ndindex(*shape[:-2]):  # LAPACK getrf, as scipy calls it: the same pivots and factors
        expected_lu, expected_pivots = scipy_linalg.lu_factor(a[index])
        assert_close(LU[index], expected_lu.astype(dtype), **TOL[dtype])
        assert_close(pivots[index], (expected_pivots + 1).astype(np.int32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(device, left, adjoint, dtype):
    a, b = _well_conditioned((2, 3, 3), dtype), _random((2, 3, 2) if left else (2, 2, 3), dtype, "lu_solve")
    matrix = np.swapaxes(a, -1, -2) if adjoint else a
    expected = np.linalg.solve(matrix, b) if left else \
        np.swapaxes(np.linalg.solve(np.swapaxes(matrix, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    LU, pivots = L.lu_factor(_t(a, device))
    assert_close(L.lu_solve(LU, pivots, _t(b, device), left=left, adjoint=adjoint), expected, **TOL[dtype])


def test_singular_lu_factor(device):
    with pytest.raises(L.LinAlgError) as err:
        L.lu_factor(_t(SINGULAR, device))
    assert str(err.value) == ("torch.linalg.lu_factor: U[2,2] is zero and using it on lu_solve would result in a "
                              "division by zero. If you still want to perform the factorization, consider calling "
                              "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    assert L.lu_factor_ex(_t(SINGULAR, device)).info.item() == 2
    assert_close(L.lu(_t(SINGULAR, device)).U, np.array([[2.0, 4.0], [0.0, 0.0]]))


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, "fro", "nuc", np.inf, -np.inf], ids=str)
def test_cond(device, p):
    a = _well_conditioned((2, 3, 3), "float64")
    assert_close(L.cond(_t(a, device), p), np.linalg.cond(a, p), rtol=1e-8, atol=1e-8)
    if p not in (None, 2, -2):
        assert L.cond(core.zeros(3, 3, dtype=core.float64, device=device), p).item() == np.inf


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(device, upper, dtype):
    a, b = _spd((2, 3, 3), dtype), _random((3, 2), dtype, "cholesky_solve")
    factor = L.cholesky(_t(a, device), upper=upper)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else TOL[dtype]
    assert_close(core.cholesky_solve(_t(b, device), factor, upper), np.linalg.solve(a, np.broadcast_to(b, (2, 3, 2))),
                 **tol)
    assert_close(core.cholesky_inverse(factor, upper), np.linalg.inv(a), **tol)
    assert_close(factor.cholesky_inverse(upper), np.linalg.inv(a), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_vander(device, dtype):
    x = np.array([[1, 2, 3], [-1, 0, 4]]).astype(dtype)
    expected = np.stack([np.vander(row, increasing=True) for row in x]).astype(dtype)  # NumPy promotes float32
    assert_close(L.vander(_t(x, device)), expected)
    assert_close(L.vander(_t(x[0], device), N=5), np.vander(x[0], 5, increasing=True).astype(dtype))
    with pytest.raises(RuntimeError, match="N must be greater than 1."):
        L.vander(_t(x, device), N=1)


def test_tensorinv_tensorsolve_and_aliases(device):
    t = _random((4, 6, 8, 3), "float64", "tensorinv")
    assert_close(L.tensorinv(_t(t, device), 2), np.linalg.tensorinv(t, 2), rtol=1e-8, atol=1e-8)
    a, b = _random((2, 3, 6), "float64", "ts"), _random((2, 3), "float64", "tsb")
    assert_close(L.tensorsolve(_t(a, device), _t(b, device)), np.linalg.tensorsolve(a, b), rtol=1e-8, atol=1e-8)
    moved = np.moveaxis(a, 2, 0)
    assert_close(L.tensorsolve(_t(moved, device), _t(b, device), dims=(0,)), np.linalg.tensorsolve(moved, b, axes=(0,)),
                 rtol=1e-8, atol=1e-8)
    with pytest.raises(RuntimeError, match=r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\), but got 6 != 4"):
        L.tensorinv(core.ones(4, 6, device=device), 1)
    A = _t(_random((2, 3, 3), "float64", "alias"), device)
    assert L.matmul is core.matmul
    assert_close(L.diagonal(A), np.diagonal(A.cpu().numpy(), 0, -2, -1))


def test_complex_inputs(device):
    rng = _rng("complex")
    a = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    hermitian = a @ np.conj(np.swapaxes(a, -1, -2)) + 3 * np.eye(3)
    A, H = _t(a, device), _t(hermitian, device)
    tol = TOL["float64"]
    assert_close(L.inv(A), np.linalg.inv(a), **tol)
    assert_close(L.det(A), np.linalg.det(a), **tol)
    assert_close(L.slogdet(A).logabsdet, np.linalg.slogdet(a)[1], **tol)
    assert_close(L.solve(A, A[..., 0]), np.linalg.solve(a, a[..., :1])[..., 0], **tol)
    assert_close(L.cholesky(H), np.linalg.cholesky(hermitian), **tol)
    assert_close(L.eigvalsh(H), np.linalg.eigvalsh(hermitian), **tol)
    assert_close(L.svdvals(A), np.linalg.svd(a, compute_uv=False), **tol)
    assert_close(L.pinv(A), np.linalg.pinv(a), rtol=1e-8, atol=1e-8)
    assert_close(L.vecdot(A, A), np.sum(np.conj(a) * a, -1), **tol)


# -- errors ---------------------------------------------------------------------------------------------

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])


def test_singular_inverse_raises_linalg_error(device):
    message = ("linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input "
               "matrix is singular.")
    with pytest.raises(L.LinAlgError) as err:
        L.inv(_t(SINGULAR, device))
    assert str(err.value) == message
    with pytest.raises(RuntimeError, match=r"linalg\.inv: \(Batch element 1\): The diagonal element 2 is zero"):
        L.inv(_t(np.stack([np.eye(2), SINGULAR]), device))
    inverse, info = L.inv_ex(_t(np.stack([np.eye(2), SINGULAR]), device))
    assert info.tolist() == [0, 2]
    assert_close(inverse[0], np.eye(2))
    with pytest.raises(L.LinAlgError, match="linalg.inv_ex: The diagonal element 2 is zero"):
        L.inv_ex(_t(SINGULAR, device), check_errors=True)


def test_singular_solve_raises_linalg_error(device):
    with pytest.raises(L.LinAlgError) as err:
        L.solve(_t(SINGULAR, device), _t(np.ones(2), device))
    assert str(err.value) == "torch.linalg.solve: The solver failed because the input matrix is singular."
    assert L.solve_ex(_t(SINGULAR, device), _t(np.ones(2), device)).info.item() == 2


def test_cholesky_not_positive_definite(device):
    with pytest.raises(L.LinAlgError) as err:
        L.cholesky(_t(NOT_PD, device))
    assert str(err.value) == ("linalg.cholesky: The factorization could not be completed because the input is not "
                              "positive-definite (the leading minor of order 2 is not positive-definite).")
    assert L.cholesky_ex(_t(np.stack([np.eye(2), NOT_PD, -np.eye(2)]), device)).info.tolist() == [0, 2, 1]
    with pytest.raises(L.LinAlgError, match=r"\(Batch element 1\): The factorization could not be completed"):
        L.cholesky(_t(np.stack([np.eye(2), NOT_PD]), device))


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh"])
def test_square_and_dtype_errors(device, name):
    op = getattr(L, name)
    with pytest.raises(RuntimeError) as err:
        op(core.ones(2, 3, device=device))
    assert str(err.value) == f"linalg.{name}: A must be batches of square matrices, but they are 2 by 3 matrices"
    with pytest.raises(RuntimeError) as err:
        op(core.ones(3, device=device))
    assert str(err.value) == f"linalg.{name}: The input tensor A must have at least 2 dimensions."
    with pytest.raises(RuntimeError) as err:
        op(core.ones(2, 2, dtype=core.int64, device=device))
    assert str(err.value) == f"linalg.{name}: Expected a floating point or complex tensor as input. Got Long"


def test_argument_errors(device):
    A = core.eye(3, device=device)
    with pytest.raises(RuntimeError, match=r"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                                           r"\(3x3 and 2x4\)"):
        L.solve(A, core.ones(2, 4, device=device))
    with pytest.raises(RuntimeError, match="linalg.solve: Expected A and B to have the same dtype"):
        L.solve(A, core.ones(3, dtype=core.float64, device=device))
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'full'"):
        L.qr(A, "full")
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        L.eigh(A, "X")
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"):
        L.cross(core.ones(2, device=device), core.ones(2, device=device))
    with pytest.raises(RuntimeError, match="multi_dot\\(\\): expected at least 2 tensors but got 1"):
        L.multi_dot([A])
    with pytest.raises(RuntimeError, match="multi_dot\\(\\): tensor 1 must be 2D but got 1D"):
        L.multi_dot([A, core.ones(3, device=device), A])
    with pytest.raises(TypeError, match="argument 'n' must be int"):
        L.matrix_power(A, 1.5)


def test_nan_input_to_svd_and_eigh_raises_linalg_error(device):
    nan = core.full((3, 3), float("nan"), device=device)
    for op, name in ((L.svdvals, "linalg.svd"), (L.eigvalsh, "linalg.eigh")):
        with pytest.raises(L.LinAlgError) as err:
            op(nan)
        assert str(err.value) == f"{name}: The algorithm failed to converge because the input matrix contained " \
                                 f"non-finite values."


def test_meta_shapes():
    m = core.empty(2, 4, 3, device="meta")
    assert tuple(L.svd(m, full_matrices=False).U.shape) == (2, 4, 3)
    assert tuple(L.qr(m, "complete").Q.shape) == (2, 4, 4)
    assert tuple(L.inv(core.empty(5, 3, 3, device="meta")).shape) == (5, 3, 3)
    assert tuple(L.solve(core.empty(5, 3, 3, device="meta"), core.empty(3, device="meta")).shape) == (5, 3)


# -- gradients ------------------------------------------------------------------------------------------

def _leaf(shape, *key):
    return core.tensor(_random(shape, "float64", *key), requires_grad=True)


def _spd_of(a):
    return a @ a.mT + a.shape[-1] * core.eye(a.shape[-1], dtype=a.dtype)


def _gauge_free(v):
    """Products of each singular/eigen vector's entries with each other: unchanged when a vector flips sign."""
    return v.unsqueeze(-2) * v.unsqueeze(-3)


GRADIENTS = {
    "inv": (lambda a: L.inv(a), [(2, 3, 3)]),
    "det": (lambda a: L.det(a), [(2, 3, 3)]),
    "slogdet": (lambda a: L.slogdet(a).logabsdet, [(2, 3, 3)]),
    "logdet": (lambda a: core.logdet(_spd_of(a)), [(3, 3)]),
    "solve": (lambda a, b: L.solve(a, b), [(2, 3, 3), (2, 3, 2)]),
    "solve-vector-broadcast": (lambda a, b: L.solve(a, b), [(2, 3, 3), (3,)]),
    "solve-left-false": (lambda a, b: L.solve(a, b, left=False), [(3, 3), (2, 3)]),
    "cholesky": (lambda a: L.cholesky(_spd_of(a)), [(2, 3, 3)]),
    "cholesky-upper": (lambda a: L.cholesky(_spd_of(a), upper=True), [(3, 3)]),
    "eigvalsh": (lambda a: L.eigvalsh(a + a.mT), [(2, 3, 3)]),
    "eigh": (lambda a: (lambda w, v: (w, _gauge_free(v)))(*L.eigh(a + a.mT)), [(2, 3, 3)]),
    "svdvals": (lambda a: L.svdvals(a), [(2, 4, 3)]),
    "svd-tall": (lambda a: (lambda u, s, vh: (s, u @ vh, _gauge_free(u)))(*L.svd(a, full_matrices=False)),
                 [(2, 4, 3)]),
    "svd-wide": (lambda a: (lambda u, s, vh: (s, u @ vh, _gauge_free(vh.mT)))(*L.svd(a, full_matrices=False)),
                 [(3, 4)]),
    "svd-square-full": (lambda a: (lambda u, s, vh: (s, u @ vh))(*L.svd(a)), [(3, 3)]),
    "qr-tall": (lambda a: L.qr(a), [(2, 4, 3)]),
    "qr-square": (lambda a: L.qr(a, "complete"), [(3, 3)]),
    "matrix_power": (lambda a: L.matrix_power(a, -3), [(2, 3, 3)]),
    "pinv": (lambda a: L.pinv(a), [(4, 3)]),
    "matrix_power-positive": (lambda a: L.matrix_power(a, 5), [(3, 3)]),
    "matrix_exp": (lambda a: L.matrix_exp(3 * a), [(2, 3, 3)]),
    "solve_triangular": (lambda a, b: L.solve_triangular(a + 4 * core.eye(3, dtype=a.dtype), b, upper=True),
                         [(2, 3, 3), (3, 2)]),
    "solve_triangular-right-unit": (lambda a, b: L.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
                                    [(3, 3), (2, 3)]),
    "lu_factor": (lambda a: L.lu_factor(a).LU, [(2, 3, 3)]),
    "lu": (lambda a: L.lu(a)[1:], [(3, 3)]),
    "lu_solve": (lambda a, b: L.lu_solve(*L.lu_factor(a), b), [(2, 3, 3), (2, 3, 2)]),
    "lu_solve-adjoint-right": (lambda a, b: L.lu_solve(*L.lu_factor(a), b, left=False, adjoint=True),
                               [(3, 3), (2, 3)]),
    "cholesky_solve": (lambda a, b: core.cholesky_solve(b, L.cholesky(_spd_of(a))), [(2, 3, 3), (3, 2)]),
    "cholesky_inverse": (lambda a: core.cholesky_inverse(L.cholesky(_spd_of(a), upper=True), upper=True), [(3, 3)]),
    "vander": (lambda x: L.vander(x, N=4), [(2, 3)]),
    "lstsq": (lambda a, b: L.lstsq(a, b).solution, [(2, 5, 3), (5, 2)]),
    "cond": (lambda a: (L.cond(a), L.cond(a + 4 * core.eye(3, dtype=a.dtype), 1)), [(2, 3, 3)]),
    "matrix_norm": (lambda a: tuple(L.matrix_norm(a, o) for o in ("fro", "nuc", 2, -2, 1, np.inf)), [(2, 4, 3)]),
    "vector_norm": (lambda a: tuple(L.vector_norm(a, o, dim=-1) for o in (2, 3.5)), [(2, 4, 3)]),
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradcheck_float64(name):
    func, shapes = GRADIENTS[name]
    leaves = tuple(_leaf(s, name, i) for i, s in enumerate(shapes))
    assert gradcheck(func, leaves)


SECOND_ORDER = ["inv", "det", "slogdet", "solve", "cholesky", "eigvalsh", "eigh", "svdvals", "svd-tall", "qr-tall",
                "lu_factor", "matrix_exp"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck_float64(name):
    """The formulas are written in differentiable ops, so second derivatives come for free."""
    func, shapes = GRADIENTS[name]
    leaves = tuple(_leaf(s, name, "second", i) for i, s in enumerate(shapes))
    assert gradgradcheck(func, leaves)


def test_qr_derivative_refuses_wide_and_r_mode():
    a = _leaf((3, 4), "wide")
    with pytest.raises(RuntimeError, match="not implemented when the input has more columns than rows"):
        L.qr(a)[1].sum().backward()
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        L.qr(_leaf((4, 3), "r"), "r")[1].sum().backward()
