"""torch.cond and torch.while_loop in eager mode on every device: the branch taken and the loop's result against
plain Python, gradients through the branch taken and through every iteration, and PyTorch's checks."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.autograd import gradcheck
from core.testing import assert_close


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("pred", [True, False])
def test_cond_takes_one_branch(device, pred):
    x = _t(np.arange(4.0), device)
    calls = []

    def true_fn(a, b):
        calls.append("true")
        return a.sin() + b

    def false_fn(a, b):
        calls.append("false")
        return a.cos() * b

    result = core.cond(_t(pred, device), true_fn, false_fn, (x, 2.0))
    expected = np.sin(np.arange(4.0)) + 2 if pred else np.cos(np.arange(4.0)) * 2
    assert_close(_np(result), expected)
    assert calls == ["true" if pred else "false"]
    assert_close(_np(core.cond(pred, true_fn, false_fn, [x, 2.0])), expected)


def test_cond_with_a_data_dependent_predicate_and_no_operands(device):
    x = _t([3.0, -1.0], device)
    assert core.cond(x.sum() > 0, lambda: 1, lambda: 0) == 1
    assert core.cond(_t([0], device), lambda: "yes", lambda: "no") == "no"


def test_cond_gradient_flows_through_the_branch_taken():
    x = _t(np.linspace(0.1, 1.0, 5), "cpu", True)
    assert gradcheck(lambda x: core.cond(x.sum() > 0, lambda v: v.exp() * v, lambda v: v.sin(), (x,)), (x,))
    core.cond(False, lambda v: v.exp(), lambda v: v * 3.0, (x,)).sum().backward()
    assert_close(_np(x.grad), np.full(5, 3.0))


def test_cond_errors():
    x = core.ones(3)
    with pytest.raises(RuntimeError, match="single-element tensor"):
        core.cond(x > 0, lambda v: v, lambda v: v, (x,))
    with pytest.raises(RuntimeError, match="bool or tensor"):
        core.cond("yes", lambda v: v, lambda v: v, (x,))
    with pytest.raises(RuntimeError, match="callable"):
        core.cond(True, x, lambda v: v, (x,))
    with pytest.raises(RuntimeError, match="tuple or list"):
        core.cond(True, lambda v: v, lambda v: v, x)


def test_while_loop_runs_to_the_predicate(device):
    def cond_fn(i, total):
        return i < 5

    def body_fn(i, total):
        return i + 1, total + i.to(total.dtype) * 2.0

    i, total = core.while_loop(cond_fn, body_fn, (_t(0, device), _t(np.array([1.0, 2.0]), device)))
    assert i.item() == 5
    assert_close(_np(total), np.array([1.0, 2.0]) + 2.0 * sum(range(5)))
    assert core.while_loop(lambda n: False, lambda n: (n + 1,), (_t(7, device),))[0].item() == 7


def test_while_loop_newton_sqrt_gradient():
    def run(a):
        def cond_fn(k, x):
            return k < 20

        def body_fn(k, x):
            return k + 1, 0.5 * (x + a / x)

        return core.while_loop(cond_fn, body_fn, (core.tensor(0), core.ones_like(a)))[1]

    a = _t(np.array([2.0, 9.0, 0.5]), "cpu", True)
    assert_close(_np(run(a)), np.sqrt([2.0, 9.0, 0.5]))
    assert gradcheck(run, (a,))


def test_while_loop_errors():
    x = core.zeros(2)
    with pytest.raises(RuntimeError, match="tuple or list"):
        core.while_loop(lambda v: False, lambda v: (v,), x)
    with pytest.raises(RuntimeError, match="boolean scalar tensor"):
        core.while_loop(lambda v: v < 1, lambda v: (v + 1,), (x,))
    with pytest.raises(RuntimeError, match="should return a tuple"):
        core.while_loop(lambda v: v.sum() < 1, lambda v: v + 1, (x,))
    with pytest.raises(RuntimeError, match="same number of elements"):
        core.while_loop(lambda v: v.sum() < 1, lambda v: (v + 1, v), (x,))
    with pytest.raises(RuntimeError, match="carried shapes and dtypes"):
        core.while_loop(lambda v: v.sum() < 1, lambda v: (core.ones(3),), (x,))
