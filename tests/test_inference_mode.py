"""inference_mode against PyTorch's "Inference Mode" note and its C++ tests (test/cpp/api/inference_mode.cpp):
which tensors are inference tensors, what they refuse outside the mode, nesting, decorators, thread-local state."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.autograd import Function
from core.testing import assert_close

INPLACE = "Inplace update to inference tensor outside InferenceMode is not allowed"
SAVED = "Inference tensors cannot be saved for backward. To work around you can make a clone"


def made_inside(device, requires_grad=False):
    with core.inference_mode():
        return core.tensor([1.0, 2.0, 3.0], device=device).requires_grad_(requires_grad)


def test_tensors_allocated_inside_are_inference_tensors(device):
    normal = core.ones(2, 3, device=device)
    with core.inference_mode():
        made = core.ones(2, 3, device=device)
        computed = normal * 2
        view_of_normal = normal.view(3, 2)
        view_of_made = made.view(3, 2)
        assert not core.is_grad_enabled() and core.is_inference_mode_enabled()
    assert made.is_inference() and computed.is_inference() and view_of_made.is_inference()
    assert not view_of_normal.is_inference() and not normal.is_inference()
    assert not (made * 1).is_inference()  # a functional op outside the mode makes a normal tensor


def test_inference_tensors_have_no_version_counter(device):
    x = core.ones(1, 2, 3, requires_grad=True, device=device)
    with core.inference_mode():
        y = x * x
    assert not y.requires_grad
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter."):
        y._version  # noqa: B018 - reading it raises
    with core.inference_mode(), pytest.raises(RuntimeError, match="do not track version counter"):
        y._version  # noqa: B018 - reading it raises


def test_inplace_on_normal_tensor_inside_is_allowed_and_bumps_its_version(device):
    s = core.ones(2, 3, requires_grad=True, device=device)
    a = s.clone()
    out = a * a  # saves a
    with core.inference_mode():
        a.mul_(2)
        view = a.view(3, 2)
        assert not a.is_inference() and not view.is_inference()
    assert a._version == 1 and view._version == 1
    assert_close(a.detach(), np.full((2, 3), 2.0, np.float32))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward(core.ones_like(out))


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("write", [lambda t: t.mul_(1), lambda t: t.add_(1), lambda t: t.zero_(),
                                   lambda t: t.copy_(core.zeros_like(t)), lambda t: t.__setitem__(0, 5.0),
                                   lambda t: t[1:].fill_(0)])
def test_inplace_on_inference_tensor_outside_is_refused(device, requires_grad, write):
    c = made_inside(device, requires_grad)
    with pytest.raises(RuntimeError, match=INPLACE):
        write(c)
    assert_close(c.detach(), np.array([1.0, 2.0, 3.0], np.float32))  # untouched
    with core.inference_mode():
        write(c)  # inside the mode it is allowed
    write(c.clone())  # and so is writing a clone outside


def test_out_argument_that_is_an_inference_tensor_is_refused(device):
    c = made_inside(device)
    with pytest.raises(RuntimeError, match=INPLACE):
        core.add(core.ones(3, device=device), 1, out=c)


def test_requires_grad_on_inference_tensor_outside_is_refused(device):
    c = made_inside(device)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        c.requires_grad_()
    c.requires_grad_(False)  # turning it off is fine
    with core.inference_mode():
        assert c.requires_grad_().requires_grad  # inside, requires_grad does not change what it is
    assert c.is_inference()


@pytest.mark.parametrize("requires_grad", [False, True])
def test_functional_op_on_inference_tensor_outside_makes_a_normal_tensor(device, requires_grad):
    c = made_inside(device, requires_grad)
    out = c * c
    assert not out.is_inference() and not out.requires_grad
    assert_close(out, np.array([1.0, 4.0, 9.0], np.float32))


def test_view_of_inference_tensor_outside_is_an_inference_leaf(device):
    c = made_inside(device, requires_grad=True)
    out = c.view(3, 1)
    assert out.is_inference() and not out.requires_grad and out.grad_fn is None


def test_inference_tensors_cannot_be_saved_for_backward(device):
    s = core.ones(3, requires_grad=True, device=device)
    c = made_inside(device)
    with pytest.raises(RuntimeError, match=SAVED):
        c * s  # mul saves both inputs
    with pytest.raises(RuntimeError, match=SAVED):
        core.div(s, c)
    with pytest.raises(RuntimeError, match=SAVED):
        core.nn.functional.linear(c.view(1, 3), s.view(1, 3))
    assert_close(c.clone() * s, np.array([1.0, 2.0, 3.0], np.float32))  # the documented work-around
    with core.no_grad():
        assert not (c * s).requires_grad  # nothing is recorded, so nothing is saved


def test_inplace_into_normal_tensor_saving_an_inference_tensor_is_refused_before_writing(device):
    a = core.ones(3, requires_grad=True, device=device).clone()
    c = made_inside(device)
    with pytest.raises(RuntimeError, match=SAVED):
        a.mul_(c)
    assert_close(a.detach(), np.ones(3, np.float32))
    b = core.ones(3, device=device)
    b.mul_(c)  # nothing records it: allowed
    assert_close(b, np.array([1.0, 2.0, 3.0], np.float32))


def test_ops_that_save_no_input_accept_inference_tensors_and_give_them_gradients(device):
    s = core.ones(3, requires_grad=True, device=device)
    c = made_inside(device, requires_grad=True)  # a leaf inference tensor may require grad
    out = c.add(s)
    assert not out.is_inference() and out.requires_grad
    (out - c).sum().backward()
    assert_close(c.grad, np.zeros(3, np.float32))
    assert_close(s.grad, np.ones(3, np.float32))


def test_custom_function_cannot_save_an_inference_tensor(device):
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x)
            return x * w

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return None, (g * x).sum()

    w = core.tensor(2.0, requires_grad=True, device=device)
    c = made_inside(device)
    with pytest.raises(RuntimeError, match=SAVED):
        Scale.apply(c, w)
    with core.inference_mode():
        assert not Scale.apply(c, w).requires_grad
    Scale.apply(c.clone(), w).sum().backward()
    assert_close(w.grad, np.array(6.0, np.float32))


def test_nesting_with_mode_false_restores_recording_and_normal_tensors(device):
    x = core.ones(2, requires_grad=True, device=device)
    with core.inference_mode():
        with core.inference_mode(False):
            assert core.is_grad_enabled() and not core.is_inference_mode_enabled()
            y = x * 2
            assert y.requires_grad and not y.is_inference()
            with core.inference_mode(True):
                assert core.ones(1, device=device).is_inference()
        assert core.is_inference_mode_enabled() and not core.is_grad_enabled()
        assert core.ones(1, device=device).is_inference()
    assert core.is_grad_enabled() and not core.is_inference_mode_enabled()
    with core.no_grad(), core.inference_mode(False):
        assert core.is_grad_enabled()  # PyTorch: disabling inference mode enables grad mode
    with core.no_grad(), core.inference_mode():
        pass
    assert core.is_grad_enabled()


def test_mode_is_restored_after_an_exception_and_works_as_a_decorator(device):
    with pytest.raises(ValueError), core.inference_mode():
        raise ValueError
    assert not core.is_inference_mode_enabled() and core.is_grad_enabled()

    @core.inference_mode()
    def with_parens(x):
        return x * 2

    @core.inference_mode
    def bare(x):
        return x * 2

    @core.inference_mode(False)
    def disabled(x):
        return x * 2

    x = core.ones(2, requires_grad=True, device=device)
    assert with_parens(x).is_inference() and bare(x).is_inference() and not with_parens(x).requires_grad
    with core.inference_mode():
        out = disabled(x)
    assert not out.is_inference() and out.requires_grad
    assert core.inference_mode(False).clone().mode is False
