"""Derivatives of core.linalg's general eigendecomposition and rectangular LU, on every backend: gradcheck in
float64 and complex128 against finite differences, and closed forms computed by hand with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.autograd import gradcheck, gradgradcheck
from core.testing import assert_close

L = core.linalg


def _rng(seed: int = 0):
    return np.random.default_rng(seed)


def _real_separated(batch=(2,)):
    """Real matrices S B S^{-1} with eigenvalues 1 +- 2i and 4 (a conjugate pair and a real one, well apart)."""
    block = np.array([[1.0, 2.0, 0.0], [-2.0, 1.0, 0.0], [0.0, 0.0, 4.0]])
    S = _rng(0).standard_normal(batch + (3, 3)) + 3 * np.eye(3)
    return S @ block @ np.linalg.inv(S)


def _complex_separated():
    """A complex matrix whose eigenvalues lie about 3 apart (a random one plus diag(0, 3, 6))."""
    rng = _rng(1)
    return rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) + np.diag([0.0, 3.0, 6.0])


def _leaf(a, device):
    return core.tensor(a, device=device, requires_grad=True)


def _reconstruct(a):
    """V diag(L) V^{-1}: A itself, whatever phases the eigenvectors got."""
    values, vectors = L.eig(a)
    return vectors @ (values.unsqueeze(-1) * L.inv(vectors))


EIG_FUNCTIONS = {
    "eigvals": lambda a: L.eigvals(a),
    "eig-values": lambda a: L.eig(a).eigenvalues,
    "reconstruct": _reconstruct,
    "abs-vectors": lambda a: L.eig(a).eigenvectors.abs(),
    "values-and-abs-vectors": lambda a: (lambda w, v: (w * w, (v * v.conj()).real))(*L.eig(a)),
}


@pytest.mark.parametrize("kind", ["real", "complex"])
@pytest.mark.parametrize("name", EIG_FUNCTIONS)
def test_eig_gradcheck(device, name, kind):
    a = _real_separated() if kind == "real" else _complex_separated()
    assert gradcheck(EIG_FUNCTIONS[name], (_leaf(a, device),))


def test_eigvals_gradgradcheck(device):
    assert gradgradcheck(lambda a: L.eigvals(a), (_leaf(_real_separated((1,)), device),))


def test_eig_gradient_closed_forms(device):
    """sum(L) = tr(A) and sum(L^2) = tr(A^2): the gradients are I and 2 A^T (2 A^H for complex A, conjugated as
    PyTorch's gradients are), real for real A."""
    for a in (_real_separated(), _complex_separated()):
        leaf = _leaf(a, device)
        (L.eigvals(leaf).real.sum() + (L.eigvals(leaf) ** 2).real.sum()).backward()
        assert leaf.grad.dtype is leaf.dtype
        expected = np.broadcast_to(np.eye(3), a.shape) + 2 * np.conj(np.swapaxes(a, -1, -2))
        assert_close(leaf.grad, expected.astype(a.dtype), rtol=1e-8, atol=1e-8)


def test_eigenvalue_gradient_is_left_right_eigenvector_product(device):
    """d L_i / dA = u_i v_i^T / (u_i^T v_i) with u_i, v_i the left and right eigenvectors (NumPy's eig of A^T)."""
    a = _real_separated(())
    w, v = np.linalg.eig(a)
    wl, u = np.linalg.eig(a.T)
    u = u[:, [int(np.argmin(abs(wl - x))) for x in w]]  # the left eigenvector of each right one's eigenvalue
    leaf = _leaf(a, device)
    values = L.eigvals(leaf)
    i = int(np.argmax(w.imag))
    order = int(np.argmin(abs(values.detach().cpu().numpy() - w[i])))
    values.imag[order].backward()
    expected = np.outer(u[:, i], v[:, i]) / (u[:, i] @ v[:, i])
    assert_close(leaf.grad, np.imag(expected), rtol=1e-8, atol=1e-8)  # d Im L / dA, PyTorch's convention for real A


def test_eig_loss_depending_on_phase_raises(device):
    for a in (_real_separated(), _complex_separated()):
        with pytest.raises(RuntimeError, match=r"linalg_eig_backward: The eigenvectors in the complex case are "
                                               r"specified up to multiplication by e\^\{i phi\}\. The specified loss "
                                               r"function depends on this quantity, so it is ill-defined\."):
            L.eig(_leaf(a, device)).eigenvectors.imag.sum().backward()


LU_SHAPES = [(4, 3), (3, 5), (2, 5, 3), (2, 3, 5), (3, 3)]


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shape", LU_SHAPES, ids=str)
def test_lu_gradcheck_rectangular(device, shape, dtype):
    rng = _rng(2)
    a = rng.standard_normal(shape)
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal(shape)
    leaf = _leaf(a, device)
    assert gradcheck(lambda x: L.lu_factor(x).LU, (leaf,))
    assert gradcheck(lambda x: L.lu(x)[1:], (leaf,))
    assert gradcheck(lambda x: L.lu_factor_ex(x).LU, (leaf,))


def test_lu_gradgradcheck_rectangular(device):
    for shape in ((4, 3), (3, 4)):
        assert gradgradcheck(lambda x: L.lu(x)[1:], (_leaf(_rng(3).standard_normal(shape), device),))


def test_lu_gradient_wide_closed_form(device):
    """A = P L [U1 U2] with L, U1 square: the columns of U2 = L^{-1} P^T A2 are linear in A2, so the gradient of
    sum(U2 * W) with respect to A2 is P L^{-T} W, and zero for the other outputs' absence."""
    a = _rng(4).standard_normal((3, 5))
    weights = _rng(5).standard_normal((3, 2))
    leaf = _leaf(a, device)
    P, lower, upper = L.lu(leaf)
    (upper[:, 3:] * core.tensor(weights, device=device)).sum().backward()
    expected = P.detach().cpu().numpy() @ np.linalg.solve(lower.detach().cpu().numpy().T, weights)
    assert_close(leaf.grad[:, 3:], expected, rtol=1e-10, atol=1e-10)


def test_lu_without_pivoting_raises_as_pytorch_on_cpu(device):
    a = core.tensor(_rng(6).standard_normal((3, 3)), device=device)
    for f in (L.lu_factor, L.lu_factor_ex, L.lu):
        with pytest.raises(RuntimeError, match="linalg.lu_factor: LU without pivoting is not implemented on the CPU"):
            f(a, pivot=False)


def _complex(shape, seed):
    rng = _rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def test_slogdet_complex_gradcheck(device):
    """Both outputs of a complex slogdet are differentiable: the sign det/|det| moves with A's phase."""
    leaf = _leaf(_complex((2, 3, 3), 7), device)
    assert gradcheck(lambda a: tuple(L.slogdet(a)), (leaf,))
    assert gradgradcheck(lambda a: L.slogdet(a).sign, (_leaf(_complex((3, 3), 8), device),))


def test_slogdet_complex_gradient_closed_form(device):
    """d logabsdet = Re tr(A^{-1} dA) and d sign = i sign Im tr(A^{-1} dA): for the loss Re(sign) + logabsdet,
    gA = (1 - i Im(sign)) A^{-H}, computed with NumPy."""
    a = _complex((3, 3), 9)
    leaf = _leaf(a, device)
    sign, logabsdet = L.slogdet(leaf)
    (sign.real + logabsdet).backward()
    expected_sign = np.linalg.det(a) / abs(np.linalg.det(a))
    expected = (1 - 1j * expected_sign.imag) * np.conj(np.linalg.inv(a)).T
    assert_close(leaf.grad, expected, rtol=1e-10, atol=1e-10)
    real = _leaf(_real_separated(()), device)  # a real sign is piecewise constant: only logabsdet counts
    (L.slogdet(real).sign + L.slogdet(real).logabsdet).backward()
    assert_close(real.grad, np.linalg.inv(_real_separated(())).T, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False), (False, True)])
def test_lu_solve_gradcheck_wrt_lu_and_b(device, left, adjoint, dtype):
    """lu_solve is differentiable in the packed LU itself, not only through lu_factor."""
    make = (lambda shape, seed: _rng(seed).standard_normal(shape)) if dtype == "float64" else _complex
    LU, pivots = L.lu_factor(core.tensor(make((3, 3), 10) + 3 * np.eye(3), device=device))
    b = _leaf(make((3, 2) if left else (2, 3), 11), device)
    assert gradcheck(lambda lu, rhs: L.lu_solve(lu, pivots, rhs, left=left, adjoint=adjoint),
                     (LU.detach().requires_grad_(), b))


def test_householder_product_complex_gradcheck(device):
    assert gradcheck(L.householder_product, (_leaf(_complex((4, 3), 12), device), _leaf(_complex((2,), 13), device)))
