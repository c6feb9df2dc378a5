"""lobpcg, svd_lowrank and pca_lowrank against numpy.linalg/scipy.linalg on every device: the extreme eigenpairs
of (generalized) symmetric problems, exact recovery of low-rank matrices, seeding, PyTorch's errors, and gradients
in float64."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import core
from core.autograd import gradcheck
from core.testing import assert_close

TOL = {"float32": {"rtol": 1e-3, "atol": 1e-3}, "float64": {"rtol": 1e-6, "atol": 1e-6}}


def _rng():
    return np.random.default_rng(0)


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def _spd(m, rng, shift=1.0):
    a = rng.standard_normal((m, m))
    return a @ a.T / m + shift * np.eye(m)


# -- lobpcg ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_standard(device, dtype, largest):
    A = _spd(30, _rng())
    E, X = core.lobpcg(_t(A.astype(dtype), device), k=3, largest=largest)
    values = np.linalg.eigvalsh(A)
    expected = values[::-1][:3] if largest else values[:3]
    assert E.shape == (3,) and X.shape == (30, 3) and E.dtype.name == dtype
    assert_close(_np(E), expected.astype(dtype), **TOL[dtype])
    x = _np(X).astype("float64")
    assert np.abs(A @ x - x * _np(E)).max() < (1e-2 if dtype == "float32" else 1e-5)
    assert_close(x.T @ x, np.eye(3), **TOL[dtype])


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_generalized_with_start_and_preconditioner(device, largest):
    rng = _rng()
    A, B = _spd(36, rng), _spd(36, rng, shift=2.0)
    start = rng.standard_normal((36, 4))
    iK = np.diag(1 / np.diag(A))
    E, X = core.lobpcg(_t(A, device), k=2, B=_t(B, device), X=_t(start, device), iK=_t(iK, device),
                       largest=largest)
    values = scipy.linalg.eigh(A, B, eigvals_only=True)
    assert_close(_np(E), values[::-1][:2] if largest else values[:2], rtol=1e-6, atol=1e-6)
    x = _np(X)
    assert np.abs(A @ x - B @ x * _np(E)).max() < 1e-5
    assert_close(x.T @ B @ x, np.eye(2), atol=1e-8, rtol=0)


def test_lobpcg_batched_and_tracked(device):
    rng = _rng()
    A = np.stack([_spd(24, rng), _spd(24, rng)])
    steps = []
    E, X = core.lobpcg(_t(A, device), k=2, tracker=lambda state: steps.append(state.ivars["istep"]))
    assert E.shape == (2, 2) and X.shape == (2, 24, 2)
    assert_close(_np(E), np.linalg.eigvalsh(A)[:, ::-1][:, :2], rtol=1e-6, atol=1e-6)
    assert steps[0] == 0 and len(steps) > 2
    E1, _ = core.lobpcg(_t(A[0], device), k=2, niter=1)
    assert E1.shape == (2,)


def test_lobpcg_errors():
    A = core.tensor(_spd(8, _rng()))
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        core.lobpcg(A, k=3)
    with pytest.raises(ValueError, match="0 < k <= n"):
        core.lobpcg(A, k=2, n=1)
    with pytest.raises(RuntimeError, match="square"):
        core.lobpcg(core.ones(9, 8, dtype=core.float64))


def test_lobpcg_eigenvalue_gradient():
    # d(lambda_max)/dA = v v^T: the derivative flows through the converged iteration
    A = _spd(12, _rng())
    At = _t(A, "cpu", True)
    core.manual_seed(0)
    E, _ = core.lobpcg(At, k=1, tol=1e-12)
    E.sum().backward()
    v = np.linalg.eigh(A)[1][:, -1]
    assert_close(_np(At.grad), np.outer(v, v), atol=1e-6, rtol=1e-6)


# -- svd_lowrank, pca_lowrank ------------------------------------------------------------------------------

def _low_rank(m, n, rank, rng):
    return rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))


@pytest.mark.parametrize("shape", [(30, 20), (20, 30), (2, 25, 15)])
def test_svd_lowrank_recovers_a_low_rank_matrix(device, shape):
    rng = _rng()
    a = np.stack([_low_rank(*shape[-2:], 4, rng) for _ in range(shape[0])]) if len(shape) == 3 else \
        _low_rank(*shape, 4, rng)
    U, S, V = core.svd_lowrank(_t(a, device), q=6)
    m, n = shape[-2:]
    assert U.shape == shape[:-2] + (m, 6) and S.shape == shape[:-2] + (6,) and V.shape == shape[:-2] + (n, 6)
    assert_close(_np(S)[..., :4], np.linalg.svd(a, compute_uv=False)[..., :4])
    assert_close(_np(U) * _np(S)[..., None, :] @ np.swapaxes(_np(V), -1, -2), a, atol=1e-9, rtol=1e-9)


def test_svd_lowrank_of_a_difference_and_seeding(device):
    rng = _rng()
    a, m = _low_rank(20, 16, 3, rng), rng.standard_normal((1, 16))
    U, S, V = core.svd_lowrank(_t(a + m, device), q=5, M=_t(m, device))
    assert_close(_np(S)[:3], np.linalg.svd(a, compute_uv=False)[:3])
    full = rng.standard_normal((20, 16))
    core.manual_seed(3)
    first = _np(core.svd_lowrank(_t(full, device), q=3, niter=0)[1])
    core.manual_seed(3)
    assert (first == _np(core.svd_lowrank(_t(full, device), q=3, niter=0)[1])).all()
    # with power iterations the largest values approach the exact ones
    assert_close(_np(core.svd_lowrank(_t(full, device), q=8, niter=6)[1])[0],
                 np.linalg.svd(full, compute_uv=False)[0], rtol=1e-2, atol=0)


@pytest.mark.parametrize("center", [True, False])
def test_pca_lowrank(device, center):
    rng = _rng()
    a = _low_rank(40, 10, 3, rng) + 5.0
    U, S, V = core.pca_lowrank(_t(a, device), q=4, center=center)
    reference = a - a.mean(0) if center else a
    assert_close(_np(S)[:3], np.linalg.svd(reference, compute_uv=False)[:3])
    assert core.pca_lowrank(_t(a, device))[1].shape == (6,)


def test_pca_lowrank_errors():
    a = core.ones(5, 3, dtype=core.float64)
    with pytest.raises(ValueError, match=r"q\(=4\) must be non-negative integer and not greater than min\(m, n\)=3"):
        core.pca_lowrank(a, q=4)
    with pytest.raises(ValueError, match="niter"):
        core.pca_lowrank(a, niter=-1)


def test_svd_lowrank_gradient():
    a = _t(_low_rank(8, 6, 3, _rng()), "cpu", True)

    def top_values(x):
        core.manual_seed(0)  # the same projection at every evaluation
        return core.svd_lowrank(x, q=3)[1]

    assert gradcheck(top_values, (a,))


def test_lobpcg_generalized_eigenvalue_gradient():
    rng = _rng()
    A, B = _spd(12, rng), _spd(12, rng, shift=2.0)
    At, Bt = _t(A, "cpu", True), _t(B, "cpu", True)
    E, X = core.lobpcg(At, k=1, B=Bt, largest=False, tol=1e-12)
    E.sum().backward()
    values, vectors = scipy.linalg.eigh(A, B)
    v = vectors[:, 0]  # B-normalised
    assert_close(_np(At.grad), np.outer(v, v), atol=1e-6, rtol=1e-6)
    assert_close(_np(Bt.grad), -values[0] * np.outer(v, v), atol=1e-6, rtol=1e-6)
    assert X.requires_grad  # so that a gradient reaching it raises (next test) instead of vanishing


def test_lobpcg_eigenvector_gradient_raises_instead_of_vanishing():
    """X's derivative is not implemented: a gradient reaching it raises rather than being dropped from the sum."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((12, 12))
    A = core.tensor(a @ a.T + np.eye(12), requires_grad=True)
    values, vectors = core.lobpcg(A, k=2)
    with pytest.raises(RuntimeError, match="derivative of the eigenvectors X is not implemented"):
        (values.sum() + vectors.abs().sum()).backward()
    values, vectors = core.lobpcg(A, k=2)
    values.sum().backward()  # the eigenvalues alone still differentiate
    assert A.grad is not None
    assert not core.lobpcg(A.detach(), k=2)[1].requires_grad
