"""Optimizers with ``differentiable=True`` (``torch.optim``'s option): the step runs under autograd.

The parameters are non-leaf clones (as in PyTorch's own ``_diff_fn`` tests); after a step they are functions of the
old values, the gradients, the optimizer state and a tensor learning rate. Checked against a hand-derived
hyper-gradient, with ``gradcheck`` in float64, and against the ordinary (no-grad) step's numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import optim
from core.autograd import gradcheck
from core.nn import Parameter
from core.testing import assert_close

F64 = core.float64

# (optimizer, options, whether a tensor lr reaches the update: ASGD and Rprop read lr once, as a number)
CASES = [
    ("SGD", dict(), True),
    ("SGD", dict(momentum=0.9), True),
    ("SGD", dict(momentum=0.9, nesterov=True, weight_decay=0.1), True),
    ("SGD", dict(momentum=0.5, dampening=0.3, maximize=True), True),
    ("Adam", dict(), True),
    ("Adam", dict(amsgrad=True, weight_decay=0.1), True),
    ("AdamW", dict(weight_decay=0.1), True),
    ("RMSprop", dict(), True),
    ("RMSprop", dict(centered=True, momentum=0.5, weight_decay=0.1), True),
    ("Adagrad", dict(lr_decay=0.1, weight_decay=0.1), True),
    ("Adadelta", dict(weight_decay=0.1), True),
    ("Adamax", dict(), True),
    ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True), True),
    ("RAdam", dict(), True),
    ("ASGD", dict(t0=1), False),
    ("Rprop", dict(), False),
]
IDS = [f"{name}-{'-'.join(options) or 'plain'}" for name, options, _ in CASES]


def _data(device, seed=0):
    rng = np.random.default_rng(seed)
    x = core.tensor(rng.standard_normal((2, 3)), dtype=F64, device=device)
    g = core.tensor(rng.standard_normal((2, 3)), dtype=F64, device=device)
    return x, g


def _steps(param, grads, lr, name, options):
    """Run one differentiable step per gradient on a clone of ``param``; return the new parameter."""
    p = param.clone()
    opt = getattr(optim, name)([p], lr=lr, differentiable=True, **options)
    for grad in grads:
        p.grad = grad
        opt.step()
    return p


def test_sgd_hypergradient_of_the_learning_rate_is_the_analytic_one(device):
    """One step on L(p) = sum(p**2): p1 = (1 - 2 lr) w, so dL(p1)/dlr = -4 (1 - 2 lr) sum(w**2)."""
    x, _ = _data(device)
    w = x.clone().requires_grad_()
    lr = core.tensor(0.1, dtype=F64, device=device, requires_grad=True)
    (grad,) = core.autograd.grad((w ** 2).sum(), w, create_graph=True)
    p = w.clone()
    opt = optim.SGD([p], lr=lr, differentiable=True)
    p.grad = grad
    opt.step()
    assert p.grad_fn is not None and p.requires_grad
    (p ** 2).sum().backward()
    total = float((x ** 2).sum().item())
    assert_close(lr.grad, core.tensor(-4 * (1 - 2 * 0.1) * total, dtype=F64, device=device))
    assert_close(w.grad, 2 * (1 - 2 * 0.1) ** 2 * x)


@pytest.mark.parametrize("name, options, tensor_lr", CASES, ids=IDS)
def test_step_gradcheck(device, name, options, tensor_lr):
    """Two steps, differentiated w.r.t. the parameter, both gradients and (where it reaches the update) lr."""
    x, g = _data(device)
    _, g2 = _data(device, seed=1)
    p0 = x.requires_grad_()
    g = g.requires_grad_()
    g2 = g2.requires_grad_()
    if tensor_lr:
        lr = core.tensor(0.05, dtype=F64, device=device, requires_grad=True)
        assert gradcheck(lambda p, a, b, r: _steps(p, [a, b], r, name, options), (p0, g, g2, lr))
    else:
        assert gradcheck(lambda p, a, b: _steps(p, [a, b], 0.05, name, options), (p0, g, g2))


def test_sgd_momentum_gradcheck_from_a_given_buffer(device):
    """PyTorch's own check: the momentum buffer in the state is an input too, and it comes out updated."""
    x, g = _data(device)
    buf, _ = _data(device, seed=2)

    def step(p, grad, momentum_buffer):
        p = p.clone()
        opt = optim.SGD([p], lr=0.9, momentum=0.8, differentiable=True)
        opt.state[p]["momentum_buffer"] = momentum_buffer.clone()
        p.grad = grad
        opt.step()
        return p, opt.state[p]["momentum_buffer"]

    assert gradcheck(step, (x.requires_grad_(), g.requires_grad_(), buf.requires_grad_()))


@pytest.mark.parametrize("name, options, tensor_lr", CASES, ids=IDS)
def test_differentiable_step_matches_the_plain_step(device, name, options, tensor_lr):
    x, g = _data(device)
    lr = core.tensor(0.05, dtype=F64, device=device, requires_grad=True) if tensor_lr else 0.05
    out = _steps(x, [g, g * 0.5, g.neg()], lr, name, options)
    plain = Parameter(x.clone())
    opt = getattr(optim, name)([plain], lr=0.05, **options)
    for grad in (g, g * 0.5, g.neg()):
        plain.grad = grad
        opt.step()
    assert_close(out.detach(), plain.detach(), rtol=1e-12, atol=1e-12)


def test_plain_step_records_nothing(device):
    x, g = _data(device)
    p = Parameter(x.clone())
    p.grad = g.requires_grad_()
    optim.Adam([p], lr=0.1).step()
    assert p.grad_fn is None and p.is_leaf


def test_differentiable_step_on_a_leaf_parameter_raises_the_in_place_error(device):
    x, g = _data(device)
    p = Parameter(x.clone())
    p.grad = g
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        optim.SGD([p], lr=0.1, differentiable=True).step()


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_and_differentiable_is_an_error(name):
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        getattr(optim, name)([Parameter(core.ones(1))], lr=0.1, differentiable=True, fused=True)
