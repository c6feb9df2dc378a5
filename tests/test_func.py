"""core.func (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call) against NumPy and
hand-computed derivatives on every device, in float64; per-sample gradients with vmap(grad(loss))."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import func
from core.autograd import gradcheck


def _t(a, device, requires_grad=False):
    return core.tensor(np.asarray(a, dtype=np.float64), device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def _rng():
    return np.random.default_rng(0)


def test_grad_and_argnums(device):
    rng = _rng()
    xn, yn = rng.normal(size=4), rng.normal(size=4)
    x, y = _t(xn, device), _t(yn, device)
    f = lambda a, b: (a.sin() * b).sum()  # noqa: E731
    g = func.grad(f)(x, y)
    assert isinstance(g, core.Tensor) and not g.requires_grad
    np.testing.assert_allclose(_np(g), np.cos(xn) * yn, rtol=1e-12)
    gx, gy = func.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(_np(gy), np.sin(xn), rtol=1e-12)
    (gy_only,) = func.grad(f, argnums=(1,))(x, y)
    np.testing.assert_allclose(_np(gy_only), np.sin(xn), rtol=1e-12)
    grad_, (value, aux) = func.grad_and_value(lambda a: ((a ** 2).sum(), a * 3), has_aux=True)(x)
    np.testing.assert_allclose(_np(grad_), 2 * xn)
    np.testing.assert_allclose(_np(value), (xn ** 2).sum())
    np.testing.assert_allclose(_np(aux), 3 * xn)
    params = {"w": x, "b": [y]}  # pytrees: the gradient has the argument's structure
    tree = func.grad(lambda p: (p["w"] * p["b"][0] ** 2).sum())(params)
    np.testing.assert_allclose(_np(tree["w"]), yn ** 2)
    np.testing.assert_allclose(_np(tree["b"][0]), 2 * xn * yn)


def test_nested_grad_and_gradcheck(device):
    xn = _rng().normal(size=3)
    x = _t(xn, device)
    d2 = func.grad(lambda a: func.grad(lambda b: (b ** 3).sum())(a).sum())(x)
    np.testing.assert_allclose(_np(d2), 6 * xn, rtol=1e-12)
    xg = _t(xn, device, requires_grad=True)
    assert gradcheck(func.grad(lambda a: (a.sin() * a).sum()), (xg,))


def test_vjp_jvp(device):
    xn, vn = _rng().normal(size=3), np.array([0.5, -1.0, 2.0])
    x, v = _t(xn, device), _t(vn, device)
    out, vjp_fn = func.vjp(lambda a: a.exp() * a, x)
    np.testing.assert_allclose(_np(out), np.exp(xn) * xn)
    (vj,) = vjp_fn(v)
    np.testing.assert_allclose(_np(vj), vn * np.exp(xn) * (1 + xn), rtol=1e-12)
    out, jv = func.jvp(lambda a, b: a * b.sum(), (x, x), (v, v))
    np.testing.assert_allclose(_np(jv), vn * xn.sum() + xn * vn.sum(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        func.jvp(lambda a: a, x, (v,))


def test_jacrev_jacfwd_hessian(device):
    rng = _rng()
    a_n, xn = rng.normal(size=(2, 3)), rng.normal(size=3)
    a, x = _t(a_n, device), _t(xn, device)
    f = lambda m, y: (m @ y).tanh()  # noqa: E731
    expect = (1 - np.tanh(a_n @ xn) ** 2)[:, None] * a_n
    for transform in (func.jacrev, func.jacfwd):
        np.testing.assert_allclose(_np(transform(f, argnums=1)(a, x)), expect, rtol=1e-12)
        jm, jy = transform(f, argnums=(0, 1))(a, x)
        assert jm.shape == (2, 2, 3) and jy.shape == (2, 3)
        np.testing.assert_allclose(_np(jy), expect, rtol=1e-12)
    h = func.hessian(lambda y: (y ** 3).sum() + y[0] * y[1])(x)
    np.testing.assert_allclose(_np(h), np.diag(6 * xn) + np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0.0]]), rtol=1e-12)


def test_vmap_dims_and_nesting(device):
    rng = _rng()
    a_n, b_n, x_n = rng.normal(size=(4, 2, 3)), rng.normal(size=3), rng.normal(size=(3, 5))
    a, b, x = _t(a_n, device), _t(b_n, device), _t(x_n, device)
    np.testing.assert_allclose(_np(func.vmap(lambda m, v: m @ v, in_dims=(0, None))(a, b)), a_n @ b_n)
    np.testing.assert_allclose(_np(func.vmap(lambda c: c.sum(), in_dims=1)(x)), x_n.sum(0))
    out = func.vmap(lambda c: c * 2, in_dims=1, out_dims=1)(x)
    np.testing.assert_allclose(_np(out), 2 * x_n)
    inner = func.vmap(lambda p, q: p * q, in_dims=(None, 0))
    outer = func.vmap(inner, in_dims=(0, None))(_t(b_n, device), _t(b_n, device))
    np.testing.assert_allclose(_np(outer), np.outer(b_n, b_n))
    pair = func.vmap(lambda c: (c.sum(), c.max()), chunk_size=2)(a)
    assert isinstance(pair, tuple)
    np.testing.assert_allclose(_np(pair[1]), a_n.reshape(4, -1).max(1))
    with pytest.raises(ValueError, match="at least one input must be batched"):
        func.vmap(lambda c: c, in_dims=None)(a)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        func.vmap(lambda p, q: p)(a, x)
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        func.vmap(lambda p, q: p, in_dims=(0,))(a, b)


def test_vmap_gradients_flow(device):
    x = _t(_rng().normal(size=(3, 2)), device, requires_grad=True)
    assert gradcheck(func.vmap(lambda r: (r ** 2).sum().sqrt() * r), (x,))


def _linear_loss(model):
    def loss(params, xb, yb):
        out = func.functional_call(model, params, (xb.unsqueeze(0),))
        return ((out.squeeze(0) - yb) ** 2).sum()

    return loss


def test_per_sample_gradients_equal_a_python_loop(device):
    rng = _rng()
    model = core.nn.Linear(3, 1).double().to(device)
    xn, yn = rng.normal(size=(5, 3)), rng.normal(size=(5, 1))
    x, y = _t(xn, device), _t(yn, device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    loss = _linear_loss(model)
    batched = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    looped = [func.grad(loss)(params, x[i], y[i]) for i in range(5)]
    for name in ("weight", "bias"):
        assert batched[name].shape == (5,) + tuple(params[name].shape)
        np.testing.assert_allclose(_np(batched[name]), np.stack([_np(g[name]) for g in looped]), rtol=1e-12)
    w, b = _np(params["weight"]), _np(params["bias"])  # by hand: d/dw (w.x + b - y)^2 = 2 r x
    residual = xn @ w.T + b - yn
    np.testing.assert_allclose(_np(batched["weight"]), 2 * residual[:, :, None] * xn[:, None, :], rtol=1e-12)
    np.testing.assert_allclose(_np(batched["bias"]), 2 * residual, rtol=1e-12)
    # the same per-sample gradients from the ordinary engine, one backward per sample
    for i in range(5):
        model.zero_grad()
        ((model(x[i:i + 1]) - y[i:i + 1]) ** 2).sum().backward()
        np.testing.assert_allclose(_np(model.weight.grad), _np(batched["weight"][i]), rtol=1e-12)


def test_functional_call(device):
    model = core.nn.Sequential(core.nn.Linear(2, 2), core.nn.ReLU()).double().to(device)
    original = model[0].weight
    w = _t([[1.0, -2.0], [0.5, 3.0]], device)
    b = _t([0.0, 1.0], device)
    xn = np.array([[1.0, 2.0]])
    out = func.functional_call(model, {"0.weight": w, "0.bias": b}, _t(xn, device))
    np.testing.assert_allclose(_np(out), np.maximum(xn @ _np(w).T + _np(b), 0))
    assert model[0].weight is original  # restored
    with pytest.raises(RuntimeError, match="missing keys"):
        func.functional_call(model, {"0.weight": w}, (_t(xn, device),), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        func.functional_call(model, ({"0.weight": w}, {"0.weight": w}), (_t(xn, device),))
    tied = core.nn.Module()
    tied.a = core.nn.Linear(2, 2, bias=False).double().to(device)
    tied.b = core.nn.Linear(2, 2, bias=False).double().to(device)
    tied.b.weight = tied.a.weight
    tied.forward = lambda inp: tied.b(tied.a(inp))
    out = func.functional_call(tied, {"a.weight": w}, (_t(xn, device),))  # tie_weights: b.weight follows
    np.testing.assert_allclose(_np(out), xn @ _np(w).T @ _np(w).T)


def test_linearize(device):
    xn, vn = _rng().normal(size=3), np.array([0.5, -1.0, 2.0])
    out, jvp_fn = func.linearize(lambda a: a.sin() * a, _t(xn, device))
    np.testing.assert_allclose(_np(out), np.sin(xn) * xn)
    for scale in (1.0, -3.0):  # one forward, any number of tangents
        np.testing.assert_allclose(_np(jvp_fn(_t(scale * vn, device))), (np.cos(xn) * xn + np.sin(xn)) * scale * vn,
                                   rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected tangent of shape"):
        jvp_fn(_t([1.0], device))


def test_stack_module_state_ensemble(device):
    rng = _rng()
    models = [core.nn.Linear(3, 2).double().to(device) for _ in range(4)]
    params, buffers = func.stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].requires_grad and buffers == {}
    xn = rng.normal(size=(5, 3))
    x = _t(xn, device)
    base = models[0]
    ensemble = func.vmap(lambda p, inp: func.functional_call(base, p, (inp,)), in_dims=(0, None))(params, x)
    assert ensemble.shape == (4, 5, 2)
    for i, m in enumerate(models):
        np.testing.assert_allclose(_np(ensemble[i]), xn @ _np(m.weight).T + _np(m.bias), rtol=1e-12)
    with pytest.raises(RuntimeError, match="same class"):
        func.stack_module_state([models[0], core.nn.Sequential(core.nn.Linear(3, 2))])
