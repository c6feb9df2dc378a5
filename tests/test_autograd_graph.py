"""core.autograd.graph's saved-tensor hooks (saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks),
register_multi_grad_hook, and the legacy Variable / is_tensor_like, on every device in float64."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.autograd import Function, Variable, is_tensor_like
from core.autograd.graph import (disable_saved_tensors_hooks, register_multi_grad_hook, save_on_cpu,
                                 saved_tensors_hooks)


def _t(a, device, requires_grad=False):
    return core.tensor(np.asarray(a, dtype=np.float64), device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def test_saved_tensors_hooks_see_and_replace_what_backward_uses(device):
    xn = np.random.default_rng(0).normal(size=4)
    x = _t(xn, device, requires_grad=True)
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.shape)
        return ("kept", t * 2)  # the unpack hook undoes the scaling: backward must see the original values

    def unpack(p):
        unpacked.append(p[0])
        return p[1] / 2

    with saved_tensors_hooks(pack, unpack):
        y = (x * x).sin().sum()
    assert packed and not unpacked
    y.backward()
    assert unpacked and set(unpacked) == {"kept"}
    np.testing.assert_allclose(_np(x.grad), 2 * xn * np.cos(xn * xn), rtol=1e-12)
    x.grad = None
    with saved_tensors_hooks(lambda t: t, lambda t: t * 0):  # what unpack returns is what backward uses
        z = (x * x).sum()
    z.backward()
    np.testing.assert_allclose(_np(x.grad), np.zeros(4))


def test_saved_tensors_hooks_reach_custom_functions(device):
    class Cube(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * a ** 2 * g

    seen = []
    x = _t([1.0, 2.0], device, requires_grad=True)
    with saved_tensors_hooks(lambda t: (seen.append("pack"), t)[1], lambda t: (seen.append("unpack"), t)[1]):
        y = Cube.apply(x)
    y.sum().backward()
    assert seen == ["pack", "unpack"]
    np.testing.assert_allclose(_np(x.grad), [3.0, 12.0])


def test_save_on_cpu_and_disable(device):
    xn = np.random.default_rng(0).normal(size=3)
    x = _t(xn, device, requires_grad=True)
    with save_on_cpu(pin_memory=False):
        y = (x.exp() * x).sum()
    y.backward()
    np.testing.assert_allclose(_np(x.grad), np.exp(xn) * (1 + xn), rtol=1e-12)
    with disable_saved_tensors_hooks("saved tensor hooks are off here"):
        with pytest.raises(RuntimeError, match="saved tensor hooks are off here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # usable again once the disabling context is left
        pass


def test_register_multi_grad_hook(device):
    a = _t([1.0, 2.0], device, requires_grad=True)
    b = _t([3.0], device, requires_grad=True)
    calls = []
    handle = register_multi_grad_hook((a, b), lambda grads: calls.append([None if g is None else _np(g)
                                                                          for g in grads]))
    (a * 3).sum().add((b * 5).sum()).backward()
    assert len(calls) == 1
    np.testing.assert_allclose(calls[0][0], [3.0, 3.0])
    np.testing.assert_allclose(calls[0][1], [5.0])
    (a * 2).sum().backward()  # b gets no gradient in this pass: None in its place
    assert len(calls) == 2 and calls[1][1] is None
    np.testing.assert_allclose(calls[1][0], [2.0, 2.0])
    handle.remove()
    (a * 2).sum().backward()
    assert len(calls) == 2
    first = []
    register_multi_grad_hook((a, b), lambda g: first.append(_np(g)), mode="any")
    (a * 4).sum().add((b * 7).sum()).backward()
    assert len(first) == 1
    with pytest.raises(ValueError, match="Expects mode"):
        register_multi_grad_hook((a,), print, mode="some")


def test_variable_and_is_tensor_like(device):
    t = _t([1.0, 2.0], device)
    v = Variable(t, requires_grad=True)
    assert v.requires_grad and v.grad_fn is None and isinstance(v, core.Tensor)
    np.testing.assert_allclose(_np(v), [1.0, 2.0])
    assert isinstance(t, Variable) and not isinstance([1.0], Variable)
    (v * v).sum().backward()
    np.testing.assert_allclose(_np(v.grad), [2.0, 4.0])
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        Variable([1.0])
    assert is_tensor_like(t) and not is_tensor_like(np.ones(2)) and not is_tensor_like(3)


def test_gradient_edge_and_increment_version(device):
    from core.autograd.graph import get_gradient_edge, increment_version

    x = _t([1.0, 2.0], device, requires_grad=True)
    y = x * x
    edge = get_gradient_edge(y)
    assert edge.node is y.grad_fn and edge.output_nr == 0 and edge == (y.grad_fn, 0)
    assert get_gradient_edge(x).node.name() == "AccumulateGrad"
    with pytest.raises(RuntimeError, match="does not require gradients"):
        get_gradient_edge(_t([1.0], device))
    z = (x.sin() * 2).sum()
    increment_version(x)  # as if x had been changed in place: sin saved it
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
