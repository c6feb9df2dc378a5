"""core.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp) and core.autograd.forward_ad against
hand-computed Jacobians and Hessians on every device, in float64; PyTorch's return structures and errors."""

from __future__ import annotations

import numpy as np
import pytest

import core
import core.autograd.forward_ad as fwAD
from core.autograd import functional as AF
from core.autograd import gradcheck


def _t(a, device, requires_grad=False):
    return core.tensor(np.asarray(a, dtype=np.float64), device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def _x():
    return np.random.default_rng(0).normal(size=3)


def _f(x):  # f(x) = x^2 * sum(x): J = diag(2 x s) + outer(x^2, 1)
    return x ** 2 * x.sum()


def _jac_f(x):
    return np.diag(2 * x * x.sum()) + np.outer(x ** 2, np.ones_like(x))


def _g(x):  # g(x) = sum(x^3) + x0 x1 x2
    return (x ** 3).sum() + x[0] * x[1] * x[2]


def _hess_g(x):
    return np.diag(6 * x) + np.array([[0, x[2], x[1]], [x[2], 0, x[0]], [x[1], x[0], 0]])


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_matches_hand_computed(device, strategy):
    x = _x()
    jac = AF.jacobian(_f, _t(x, device), strategy=strategy)
    assert isinstance(jac, core.Tensor) and jac.shape == (3, 3) and not jac.requires_grad
    np.testing.assert_allclose(_np(jac), _jac_f(x), rtol=1e-12)


def test_jacobian_structures_mirror_inputs_and_outputs(device):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=3)
    ta, tb = _t(a, device), _t(b, device)
    both = AF.jacobian(lambda p, q: (p * q, (p ** 2).sum(0)), (ta, tb))
    assert isinstance(both, tuple) and len(both) == 2 and all(len(row) == 2 for row in both)
    assert both[0][0].shape == (2, 3, 2, 3) and both[0][1].shape == (2, 3, 3) and both[1][0].shape == (3, 2, 3)
    expect = np.einsum("ik,jl,l->ijkl", np.eye(2), np.eye(3), b)
    np.testing.assert_allclose(_np(both[0][0]), expect)
    np.testing.assert_allclose(_np(both[0][1]), np.einsum("jl,ij->ijl", np.eye(3), a))
    np.testing.assert_allclose(_np(both[1][0]), np.einsum("jl,kj->jkl", np.eye(3), 2 * a))
    per_input = AF.jacobian(lambda p, q: (p * q).sum(), (ta, tb))
    assert isinstance(per_input, tuple) and per_input[0].shape == (2, 3) and per_input[1].shape == (3,)
    np.testing.assert_allclose(_np(per_input[1]), a.sum(0))
    per_output = AF.jacobian(lambda p: (p.sum(), p * 2), ta)
    assert isinstance(per_output, tuple) and per_output[0].shape == (2, 3) and per_output[1].shape == (2, 3, 2, 3)


def test_hessian_matches_hand_computed(device):
    x = _x()
    h = AF.hessian(_g, _t(x, device))
    assert h.shape == (3, 3)
    np.testing.assert_allclose(_np(h), _hess_g(x), rtol=1e-12)
    a, b = _t([1.0, 2.0], device), _t([3.0, -1.0], device)
    blocks = AF.hessian(lambda p, q: (p * p * q).sum(), (a, b))
    np.testing.assert_allclose(_np(blocks[0][0]), np.diag([6.0, -2.0]))
    np.testing.assert_allclose(_np(blocks[0][1]), np.diag([2.0, 4.0]))
    np.testing.assert_allclose(_np(blocks[1][1]), np.zeros((2, 2)))


def test_vector_products_match_hand_computed(device):
    x, v = _x(), np.array([0.5, -1.0, 2.0])
    out, vj = AF.vjp(_f, _t(x, device), _t(v, device))
    np.testing.assert_allclose(_np(out), x ** 2 * x.sum())
    np.testing.assert_allclose(_np(vj), v @ _jac_f(x), rtol=1e-12)
    out, jv = AF.jvp(_f, _t(x, device), _t(v, device))
    np.testing.assert_allclose(_np(jv), _jac_f(x) @ v, rtol=1e-12)
    for fn in (AF.vhp, AF.hvp):
        value, prod = fn(_g, _t(x, device), _t(v, device))
        np.testing.assert_allclose(_np(value), (x ** 3).sum() + x.prod())
        np.testing.assert_allclose(_np(prod), _hess_g(x) @ v, rtol=1e-12)
    a, b = _t([1.0, 2.0], device), _t([3.0, 4.0], device)
    outs, grads = AF.vjp(lambda p, q: (p * q).sum(), (a, b))  # v may be None for a single-element output
    assert isinstance(grads, tuple) and len(grads) == 2
    np.testing.assert_allclose(_np(grads[0]), [3.0, 4.0])
    np.testing.assert_allclose(_np(grads[1]), [1.0, 2.0])


def test_independent_inputs_strict_and_create_graph(device):
    a, b = _t([1.0, 2.0], device), _t([3.0, 4.0], device)
    _, grads = AF.vjp(lambda p, q: (p * 2).sum(), (a, b))
    np.testing.assert_allclose(_np(grads[1]), [0.0, 0.0])
    with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 1"):
        AF.vjp(lambda p, q: (p * 2).sum(), (a, b), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 0"):
        AF.jacobian(lambda p: p.detach() * 2, a, strict=True)
    x = _t(_x(), device, requires_grad=True)
    jac = AF.jacobian(_f, x, create_graph=True)
    assert jac.requires_grad
    (dx,) = core.autograd.grad(jac.sum(), x)
    xn = _x()  # d/dx sum_ij J_ij = d/dx [2 s sum(x) + n sum(x^2)] = 4 s + 2 n x
    np.testing.assert_allclose(_np(dx), 4 * xn.sum() + 2 * 3 * xn, rtol=1e-12)


def test_jvp_and_hvp_gradcheck(device):
    x = _t(_x(), device, requires_grad=True)
    v = _t([0.5, -1.0, 2.0], device)
    assert gradcheck(lambda y: AF.jvp(_f, y, v, create_graph=True)[1], (x,))
    assert gradcheck(lambda y: AF.hvp(_g, y, v, create_graph=True)[1], (x,))


def test_errors(device):
    x = _t(_x(), device)
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor or a tuple"):
        AF.jacobian(_f, [x, 3])
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to vjp"):
        AF.vjp(lambda y: 3.0, x)
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(_f, x)
    with pytest.raises(RuntimeError, match="Entry 0 in v has invalid size"):
        AF.jvp(_f, x, _t([1.0], device))
    with pytest.raises(RuntimeError, match="should return a single element Tensor"):
        AF.hessian(_f, x)
    with pytest.raises(ValueError, match="Expected strategy"):
        AF.jacobian(_f, x, strategy="sideways")


# -- forward_ad ---------------------------------------------------------------------------------------------------

def test_forward_ad_tangents(device):
    xn, tn = _x(), np.array([0.5, -1.0, 2.0])
    x, t = _t(xn, device), _t(tn, device)
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, t)
        primal, tangent = fwAD.unpack_dual(d)
        np.testing.assert_allclose(_np(primal), xn)
        np.testing.assert_allclose(_np(tangent), tn)
        y = fwAD.unpack_dual(d.sin() * d)
        assert isinstance(y, fwAD.UnpackedDualTensor) and not y.primal.requires_grad
        np.testing.assert_allclose(_np(y.primal), np.sin(xn) * xn)
        np.testing.assert_allclose(_np(y.tangent), (np.cos(xn) * xn + np.sin(xn)) * tn, rtol=1e-12)
        assert fwAD.unpack_dual(x).tangent is None  # not a dual tensor, nor computed from one
    assert fwAD.unpack_dual(d).tangent is None  # the level is closed


def test_forward_ad_two_duals_and_backward_through_primal(device):
    w = _t([1.0, 2.0], device, requires_grad=True)
    with fwAD.dual_level():
        a = fwAD.make_dual(w, _t([1.0, 0.0], device))
        b = fwAD.make_dual(_t([3.0, 4.0], device), _t([0.0, 1.0], device))
        out = fwAD.unpack_dual((a * b).sum())
        np.testing.assert_allclose(_np(out.tangent), 3.0 * 1 + 2.0 * 1)  # b . ta + a . tb
        out.primal.backward()  # the primal of a tensor with a graph of its own keeps it
    np.testing.assert_allclose(_np(w.grad), [3.0, 4.0])


def test_forward_ad_errors(device):
    x = _t([1.0], device)
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(x, _t([1.0, 2.0], device))
        with pytest.raises(ValueError, match="floating point"):
            fwAD.make_dual(core.tensor([1], device=device), x)
