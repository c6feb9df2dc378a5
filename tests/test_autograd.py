"""Autograd behaviour against PyTorch's: the engine (accumulation, retain_graph, create_graph, autograd.grad),
hooks, custom Functions, grad modes (also across threads), in-place and view rules, graph structure and freeing,
requires_grad propagation, anomaly detection, and the gradients of the common ops.

Expected values are computed by hand or with NumPy; where PyTorch is installed it is an extra oracle.
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import core
from core.autograd import Function
from core.testing import assert_close

F64 = core.float64


def leaf(values, device, dtype=core.float32):
    """A leaf tensor that requires grad."""
    return core.tensor(values, dtype=dtype, device=device, requires_grad=True)


def grads_of(tensors) -> list:
    return [None if t.grad is None else t.grad.detach().cpu().numpy() for t in tensors]


# -- the engine: accumulation, retain_graph, create_graph ---------------------------------------------------

def test_backward_accumulates_across_calls(device):
    x = leaf([1.0, 2.0, 3.0], device)
    (x * x).sum().backward()
    assert_close(x.grad, np.array([2.0, 4.0, 6.0], np.float32))
    (x * x).sum().backward()
    assert_close(x.grad, np.array([4.0, 8.0, 12.0], np.float32))
    x.grad = None  # what optimizer.zero_grad(set_to_none=True) does: the next backward starts afresh
    (3 * x).sum().backward()
    assert_close(x.grad, np.full(3, 3.0, np.float32))
    x.grad.zero_()
    (3 * x).sum().backward()
    assert_close(x.grad, np.full(3, 3.0, np.float32))


def test_accumulated_grad_is_not_the_seed_tensor(device):
    x = leaf([1.0, 2.0], device)
    seed = core.ones(2, device=device)
    (x * 1).backward(seed)
    x.grad.add_(1)  # writing into .grad must not write into the caller's gradient
    assert_close(seed, np.ones(2, np.float32))


def test_second_backward_without_retain_graph_raises(device):
    x = leaf([1.0, 2.0], device)
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_a_second_backward(device):
    x = leaf([1.0, 2.0], device, F64)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    value = x.detach().cpu().numpy()
    assert_close(x.grad, 2 * (np.exp(value) * (value + 1)))


def test_create_graph_to_third_order_of_x_pow_4(device):
    x = leaf([1.0, 2.0, -1.5], device, F64)
    v = x.detach().cpu().numpy()
    (g1,) = core.autograd.grad((x ** 4).sum(), x, create_graph=True)
    assert_close(g1, 4 * v ** 3)
    assert g1.requires_grad and g1.grad_fn is not None
    (g2,) = core.autograd.grad(g1.sum(), x, create_graph=True)
    assert_close(g2, 12 * v ** 2)
    (g3,) = core.autograd.grad(g2.sum(), x, create_graph=True)
    assert_close(g3, 24 * v)
    (g4,) = core.autograd.grad(g3.sum(), x)
    assert_close(g4, np.full(3, 24.0))
    assert not g4.requires_grad


def test_backward_with_create_graph_makes_grad_differentiable(device):
    x = leaf([0.5, -2.0], device, F64)
    (x ** 4).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (h,) = core.autograd.grad(x.grad.sum(), x)
    assert_close(h, 12 * x.detach().cpu().numpy() ** 2)


def test_diamond_graph_sums_both_paths(device):
    x = leaf([0.5, 1.0], device, F64)
    y = x * 3
    (y * y + y.exp()).sum().backward()
    v = 3 * x.detach().cpu().numpy()
    assert_close(x.grad, 3 * (2 * v + np.exp(v)))


def test_backward_gradient_argument_and_scalar_rule(device):
    x = leaf([1.0, 2.0], device)
    (x * 2).backward(core.tensor([1.0, 10.0], device=device))
    assert_close(x.grad, np.array([2.0, 20.0], np.float32))
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(core.ones(3, device=device))


def test_backward_of_a_tensor_without_grad_raises(device):
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        (core.ones(2, device=device) * 2).sum().backward()


def test_backward_inputs_restricts_accumulation(device):
    a, b = leaf([1.0, 2.0], device), leaf([3.0, 4.0], device)
    (a * b).sum().backward(inputs=[a])
    assert_close(a.grad, np.array([3.0, 4.0], np.float32))
    assert b.grad is None


def test_autograd_backward_with_several_roots(device):
    a = leaf([1.0, 2.0], device)
    core.autograd.backward([(a * 2).sum(), a * 3], [None, core.ones(2, device=device)])
    assert_close(a.grad, np.full(2, 5.0, np.float32))


# -- autograd.grad ------------------------------------------------------------------------------------------

def test_grad_allow_unused(device):
    a, b = leaf(2.0, device), leaf(3.0, device)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        core.autograd.grad(a * 2, [a, b])
    ga, gb = core.autograd.grad(a * 2, [a, b], allow_unused=True)
    assert_close(ga, np.array(2.0, np.float32))
    assert gb is None
    ga, gb = core.autograd.grad(a * 2, [a, b], materialize_grads=True)
    assert_close(gb, np.array(0.0, np.float32))


def test_grad_leaves_dot_grad_alone_and_takes_non_leaf_inputs(device):
    x = leaf([1.0, 2.0], device)
    y = x * 3
    (gy, gx) = core.autograd.grad((y * y).sum(), [y, x])
    assert_close(gy, np.array([6.0, 12.0], np.float32))
    assert_close(gx, np.array([18.0, 36.0], np.float32))
    assert x.grad is None and y.grad is None


def test_grad_of_input_that_does_not_require_grad_raises(device):
    x = leaf([1.0], device)
    with pytest.raises(RuntimeError, match="does not require grad"):
        core.autograd.grad((x * 2).sum(), core.ones(1, device=device))


def test_grad_runs_only_the_nodes_it_needs(device):
    calls = []

    class Spy(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g

    y = Spy.apply(leaf([1.0, 2.0], device))
    z = y * 2
    core.autograd.grad(z.sum(), y)
    assert calls == []


# -- hooks and retain_grad ----------------------------------------------------------------------------------

def test_leaf_hook_replaces_gradient_and_handle_removes_it(device):
    x = leaf([1.0, 2.0], device)
    seen = []
    handle = x.register_hook(lambda g: g * 10)
    x.register_hook(lambda g: seen.append(g.clone()))  # hooks run in order: this one sees the replaced grad
    (x * 3).sum().backward()
    assert_close(x.grad, np.full(2, 30.0, np.float32))
    assert_close(seen[0], np.full(2, 30.0, np.float32))
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    assert_close(x.grad, np.full(2, 3.0, np.float32))


def test_non_leaf_hook_replaces_the_gradient_flowing_on(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    seen = []
    handle = y.register_hook(lambda g: seen.append(g.clone()) or g + 1)
    (y * y).sum().backward()
    assert_close(seen[0], np.array([4.0, 8.0], np.float32))  # d(y*y)/dy = 2y
    assert_close(x.grad, np.array([10.0, 18.0], np.float32))  # (2y + 1) * 2
    handle.remove()
    x.grad = None
    y = x * 2
    (y * y).sum().backward()
    assert_close(x.grad, np.array([8.0, 16.0], np.float32))


def test_hook_on_a_tensor_without_grad_raises(device):
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        core.ones(2, device=device).register_hook(lambda g: g)


def test_grad_applies_leaf_hooks(device):
    x = leaf([1.0, 2.0], device)
    x.register_hook(lambda g: g * 10)
    (g,) = core.autograd.grad((x * 2).sum(), x)
    assert_close(g, np.full(2, 20.0, np.float32))


def test_retain_grad(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    y.retain_grad()
    z = y * y
    z.sum().backward()
    assert_close(y.grad, np.array([4.0, 8.0], np.float32))
    assert z.grad is None  # a non-leaf keeps no grad unless asked
    assert_close(x.grad, np.array([8.0, 16.0], np.float32))
    x.retain_grad()  # a no-op on a leaf
    with pytest.raises(RuntimeError, match="retain_grad on Tensor that has requires_grad=False"):
        core.ones(1, device=device).retain_grad()


# -- custom Function ----------------------------------------------------------------------------------------

class ScaledProduct(Function):
    """``(x * y * factor, argmax of x)``: saved tensors, a non-tensor argument, a non-differentiable output."""

    needs = []

    @staticmethod
    def forward(ctx, x, factor, y):
        ctx.save_for_backward(x, y)
        ctx.factor = factor
        index = x.argmax()
        sign = x.sign()
        ctx.mark_non_differentiable(sign)
        return x * y * factor, index, sign

    @staticmethod
    def backward(ctx, grad, grad_index, grad_sign):
        ScaledProduct.needs.append(ctx.needs_input_grad)
        x, y = ctx.saved_tensors
        grad_x = grad * y * ctx.factor if ctx.needs_input_grad[0] else None
        grad_y = grad * x * ctx.factor if ctx.needs_input_grad[2] else None
        return grad_x, None, grad_y


def test_custom_function(device):
    ScaledProduct.needs.clear()
    x, y = leaf([1.0, 3.0, 2.0], device), core.tensor([2.0, 4.0, 6.0], device=device)
    out, index, sign = ScaledProduct.apply(x, 3.0, y)
    assert out.requires_grad and out.grad_fn.name() == "ScaledProductBackward"
    assert not index.requires_grad and not sign.requires_grad
    assert index.item() == 1
    out.sum().backward()
    assert ScaledProduct.needs == [(True, False, False)]
    assert_close(x.grad, np.array([6.0, 12.0, 18.0], np.float32))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.sum().backward()


def test_custom_function_both_inputs_and_gradcheck(device):
    x = leaf([[1.0, -3.0], [2.0, 0.5]], device, F64)
    y = leaf([[2.0, 4.0], [6.0, -1.0]], device, F64)
    assert core.autograd.gradcheck(lambda a, b: ScaledProduct.apply(a, 1.5, b)[0], (x, y))
    out = ScaledProduct.apply(x, 2.0, y)[0]
    assert [e[0] is None for e in out.grad_fn.next_functions] == [False, False]


def test_custom_function_checks_saved_tensors_and_gradient_count(device):
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g * 2 * ctx.saved_tensors[0], None  # one too many

    x = leaf([1.0, 2.0], device)
    base = x * 1
    y = Square.apply(base)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        y.sum().backward()
    y = Square.apply(base)
    with core.no_grad():
        base.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_custom_function_mark_dirty_and_no_grad(device):
    class AddOne(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0, 2.0], device)
    base = x * 2
    out = AddOne.apply(base)
    assert out is base and base.grad_fn.name() == "AddOneBackward"
    (out * out).sum().backward()
    assert_close(x.grad, np.array([12.0, 20.0], np.float32))  # 2 * (2x + 1) * 2
    with core.no_grad():
        assert AddOne.apply(x * 1).grad_fn is None


# -- grad modes ---------------------------------------------------------------------------------------------

def test_grad_modes_as_context_managers(device):
    x = leaf([1.0], device)
    with core.no_grad():
        assert not core.is_grad_enabled()
        assert not (x * 2).requires_grad
        with core.enable_grad():
            assert (x * 2).requires_grad
        with core.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not core.is_grad_enabled()
    with core.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with core.inference_mode():
        assert core.is_inference_mode_enabled() and not (x * 2).requires_grad
    assert core.is_grad_enabled() and not core.is_inference_mode_enabled()


def test_grad_modes_as_decorators(device):
    x = leaf([1.0], device)

    @core.no_grad()
    def without():
        return (x * 2).requires_grad

    @core.enable_grad()
    def with_grad():
        return (x * 2).requires_grad

    @core.inference_mode()
    def inferring():
        return (x * 2).requires_grad, core.is_inference_mode_enabled()

    assert without() is False
    assert inferring() == (False, True)
    with core.no_grad():
        assert with_grad() is True
    assert without.__name__ == "without"  # functools.wraps
    assert core.is_grad_enabled()


def test_set_grad_enabled_as_a_function_call(device):
    x = leaf([1.0], device)
    try:
        core.set_grad_enabled(False)
        assert not core.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        core.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_grad_mode_restored_after_an_exception():
    with pytest.raises(ValueError), core.no_grad():
        raise ValueError
    assert core.is_grad_enabled()


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_grad_modes_as_bare_decorators(mode, device):
    x = leaf([1.0], device)

    @getattr(core, mode)
    def run():
        return (x * 2).requires_grad

    assert run() is False


def test_set_grad_enabled_decorator_does_not_leak():
    try:
        @core.set_grad_enabled(False)
        def run():
            return core.is_grad_enabled()

        assert core.is_grad_enabled()
        assert run() is False
    finally:
        core.set_grad_enabled(True)


def test_inference_mode_false_inside_inference_mode():
    with core.inference_mode(), core.inference_mode(False):
        assert not core.is_inference_mode_enabled()
        assert core.is_grad_enabled()


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "set_grad_enabled"])
def test_grad_mode_does_not_leak_into_other_threads(mode, device):
    """One thread sits inside the mode while the other records; a barrier makes the two overlap."""
    x = leaf([1.0], device)
    barrier = threading.Barrier(2, timeout=10)
    seen, errors = {}, []

    def enter():
        return core.set_grad_enabled(False) if mode == "set_grad_enabled" else getattr(core, mode)()

    def inside_mode():
        try:
            with enter():
                barrier.wait()  # 1: the mode is on here
                barrier.wait()  # 2: the other thread has recorded
                seen["inside"] = ((x * 2).requires_grad, core.is_grad_enabled())
        except Exception as exc:  # noqa: BLE001 - reported below, in the main thread
            errors.append(exc)

    def recording():
        try:
            barrier.wait()
            seen["other"] = ((x * 2).requires_grad, core.is_grad_enabled())
            barrier.wait()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=inside_mode), threading.Thread(target=recording)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert seen == {"inside": (False, False), "other": (True, True)}
    assert core.is_grad_enabled()


def test_new_threads_start_with_grad_enabled_even_from_no_grad():
    seen = []
    with core.no_grad():
        t = threading.Thread(target=lambda: seen.append(core.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


# -- in-place ops and views ---------------------------------------------------------------------------------

def test_inplace_on_a_leaf_that_requires_grad_raises(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 5.0
    with core.no_grad():  # allowed: this is how optimizers update parameters
        x.add_(1)
    assert_close(x, np.array([2.0, 3.0], np.float32))
    assert x.is_leaf and x.requires_grad


def test_modified_saved_tensor_raises_version_error(device):
    x = leaf([1.0, 2.0], device)
    y = x.exp()  # exp saves its output
    z = y.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been modified "
                                           "by an inplace operation"):
        z.sum().backward()
    w = x * 1
    s = w.sin()  # sin saves its input
    w.mul_(2)
    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0 instead"):
        s.sum().backward()


def test_version_counter_is_shared_by_views(device):
    x = core.zeros(2, 3, device=device)
    v = x[1]
    before = x._version
    v.add_(1)
    assert x._version == v._version == before + 1
    assert x.detach()._version == x._version


def test_inplace_on_a_non_leaf_whose_history_saves_nothing(device):
    x = leaf([1.0, 2.0, 3.0], device)
    y = x * 1
    y.mul_(2)
    y.add_(x)
    y.exp_()  # exp saves its output, which is y's new value
    y.sum().backward()
    assert_close(x.grad, 3 * np.exp(3 * np.array([1.0, 2.0, 3.0], np.float32)), rtol=1e-5)


def test_inplace_through_views_of_a_non_leaf(device):
    a = leaf([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device)
    c = leaf([4.0, 5.0, 6.0], device)
    b = a * 2
    b[0].add_(c)  # write through a basic-indexing view: b's history becomes CopySlices
    b[:, 1].mul_(3)  # a strided view over the row written above
    assert not b.is_leaf
    (b * b).sum().backward()
    # b = [[2a0 + c, ...], ...] with column 1 tripled; d(sum b^2) = 2b * db
    assert_close(a.grad, np.array([[24.0, 324.0, 48.0], [32.0, 360.0, 48.0]], np.float32))
    assert_close(c.grad, np.array([12.0, 162.0, 24.0], np.float32))


def test_setitem_on_a_non_leaf(device):
    a = leaf([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device)
    c = leaf([4.0, 5.0, 6.0], device)
    b = a * 1
    b[1] = c * 2
    b[:, 0] = 0.0
    b[[0, 0], [2, 2]] = 7.0
    b.sum().backward()
    assert_close(a.grad, np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]], np.float32))
    assert_close(c.grad, np.array([0.0, 2.0, 2.0], np.float32))


@pytest.mark.parametrize("case", ["views", "setitem", "nested-views"])
def test_inplace_through_views_matches_torch(case, device):
    torch = pytest.importorskip("torch")
    a0 = np.arange(1.0, 7.0).reshape(2, 3)
    c0 = np.array([0.5, -1.0, 2.0])

    def run(lib, new):
        a, c = new(a0), new(c0)
        b = a.exp() * 1
        if case == "views":
            b[0].add_(c * a[1])
            b.t()[2].mul_(3)
        elif case == "setitem":
            b[1] = c.sin()
            b[0, 1:] = b[0, :2] * 2
        else:
            b[1][1:].mul_(10)
            b.t()[0].sub_(a[0, 0])
        (b ** 2).sum().backward()
        return [t.grad.detach().numpy() for t in (a, c) if t.grad is not None]

    def new_core(v):
        return core.tensor(v, dtype=F64, requires_grad=True)

    def new_torch(v):
        return torch.tensor(v, dtype=torch.float64, requires_grad=True)

    for got, expected in zip(run(core, new_core), run(torch, new_torch)):
        assert_close(got, expected)


@pytest.mark.parametrize("op", ["sin_", "mul_"])
def test_inplace_op_that_saves_its_input(op, device):
    x = leaf([1.0, 2.0, 3.0], device)
    c = leaf([4.0, 5.0, 6.0], device)
    y = x * 1
    if op == "sin_":
        y.sin_()
        y.sum().backward()
        assert_close(x.grad, np.cos(np.array([1.0, 2.0, 3.0], np.float32)))
    else:
        y.mul_(c)
        y.sum().backward()
        assert_close(x.grad, np.array([4.0, 5.0, 6.0], np.float32))
        assert_close(c.grad, np.array([1.0, 2.0, 3.0], np.float32))


def test_writing_a_value_that_requires_grad_into_a_plain_tensor(device):
    y = leaf([1.0, 2.0, 3.0], device)
    x = core.zeros(2, 3, device=device)
    x[0] = y * 2
    assert x.requires_grad
    x.sum().backward()
    assert_close(y.grad, np.full(3, 2.0, np.float32))


# -- graph structure and freeing ----------------------------------------------------------------------------

def test_grad_fn_names_and_next_functions(device):
    x, y = leaf([1.0, 2.0], device), leaf([3.0, 4.0], device)
    z = x * y
    assert z.grad_fn.name() == "MulBackward0"
    assert type(z.grad_fn).__name__ == "MulBackward0"
    (x_edge, x_nr), (y_edge, y_nr) = z.grad_fn.next_functions
    assert x_edge.name() == "AccumulateGrad" and x_edge.variable is x and x_nr == 0
    assert y_edge.name() == "AccumulateGrad" and y_edge.variable is y
    assert x_edge is (x * 2).grad_fn.next_functions[0][0]  # one accumulator per leaf while the graph lives
    total = (z + 1).sum()
    assert total.grad_fn.name() == "SumBackward0"
    assert total.grad_fn.next_functions[0][0].name() == "AddBackward0"
    assert total.grad_fn.next_functions[0][0].next_functions[0][0] is z.grad_fn
    mixed = x * core.ones(2, device=device)
    assert mixed.grad_fn.next_functions[1] == (None, 0)  # an input that needs no grad has no edge
    names = {"exp": x.exp(), "select": x[0], "view": x.view(2, 1), "transpose": x.view(1, 2).t(),
             "expand": x.expand(3, 2), "div": x / y, "pow": x ** 2}
    for name, t in names.items():
        assert t.grad_fn.name().lower().startswith(name.replace("_", "")), (name, t.grad_fn.name())
    assert x.is_leaf and x.grad_fn is None and not z.is_leaf


def test_graph_freed_after_backward_without_gc(device):
    x = leaf([1.0, 2.0], device)
    was_enabled = gc.isenabled()
    gc.disable()  # the graph holds no reference cycles: reference counting alone frees it
    try:
        hidden = x * 2
        out = hidden.exp()
        node = weakref.ref(hidden.grad_fn)
        tensor = weakref.ref(hidden)
        loss = out.sum()
        del hidden, out
        assert node() is not None  # still reachable from loss
        loss.backward()
        assert tensor() is None  # saved for exp's backward, released by it
        del loss
        assert node() is None
    finally:
        if was_enabled:
            gc.enable()


def test_graph_freed_when_outputs_go_without_backward(device):
    x = leaf([1.0, 2.0], device)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        out = (x * 2).exp().sin()
        nodes = [weakref.ref(out.grad_fn), weakref.ref(out.grad_fn.next_functions[0][0])]
        del out
        assert all(n() is None for n in nodes)
    finally:
        if was_enabled:
            gc.enable()


def test_retain_graph_keeps_saved_tensors(device):
    x = leaf([1.0, 2.0], device)
    hidden = x * 2
    tensor = weakref.ref(hidden)
    loss = hidden.exp().sum()
    del hidden
    loss.backward(retain_graph=True)
    assert tensor() is not None
    loss.backward()
    assert tensor() is None


# -- requires_grad propagation and non-differentiable ops ---------------------------------------------------

def test_non_differentiable_ops_give_tensors_without_grad(device):
    x = leaf([[1.0, -5.0, 3.0], [4.0, 2.0, -6.0]], device)
    outputs = {
        "argmax": x.argmax(), "argmin": core.argmin(x, dim=1), "gt": x > 0, "eq": core.eq(x, x),
        "isnan": core.isnan(x), "to int64": x.to(core.int64), "long": x.long(), "max.indices": x.max(dim=1).indices,
        "sort.indices": x.sort(dim=1).indices, "nonzero": core.nonzero(x), "logical_not": core.logical_not(x),
    }
    for name, t in outputs.items():
        assert not t.requires_grad and t.grad_fn is None and t.is_leaf, name
    assert x.max(dim=1).values.requires_grad


def test_requires_grad_propagates_only_to_floating_outputs(device):
    x = leaf([1.0, 2.0], device)
    ints = core.tensor([1, 2], device=device)
    assert (x * ints).requires_grad  # float result of a float that requires grad
    assert (x.to(F64) * 2).requires_grad and (x.half() + 1).requires_grad
    assert x.floor().requires_grad and x.sign().requires_grad  # float results: zero gradient, still in the graph
    assert not (ints * 2).requires_grad
    assert not core.ones(2, device=device).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ints.requires_grad_()
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        core.tensor([1, 2], device=device, requires_grad=True)
    with core.no_grad():
        assert not (x * 2).requires_grad


def test_detach(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d[0] = 10.0  # shares storage
    assert y[0].item() == 10.0
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None


def test_requires_grad_false_on_a_non_leaf_raises(device):
    y = leaf([1.0], device) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


# -- anomaly detection --------------------------------------------------------------------------------------

def test_detect_anomaly_names_the_forward_op(device):
    x = leaf([-1.0, 4.0], device)
    with core.autograd.detect_anomaly():
        assert core.autograd.is_anomaly_enabled()
        root = x.sqrt()  # NaN at -1; its backward divides by it
        loss = (root * 2).sum()
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in its 0th output"
                                               r".*forward op 'sqrt'"):
            loss.backward()
    assert not core.autograd.is_anomaly_enabled()


def test_without_anomaly_detection_nan_flows_into_grad(device):
    x = leaf([-1.0, 4.0], device)
    (x.sqrt() * 2).sum().backward()
    assert np.isnan(x.grad[0].item()) and x.grad[1].item() == pytest.approx(0.5)


def test_set_detect_anomaly_as_call_and_context():
    with core.autograd.set_detect_anomaly(True):
        assert core.autograd.is_anomaly_enabled()
    assert not core.autograd.is_anomaly_enabled()


# -- gradients of the common ops ----------------------------------------------------------------------------

def test_broadcast_gradients_reduce_to_input_shapes(device):
    a = leaf(np.ones((3, 1)), device)
    b = leaf(np.ones(4), device)
    c = leaf(2.0, device)
    ((a * b + c) * c).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,) and c.grad.shape == ()
    assert_close(a.grad, np.full((3, 1), 8.0, np.float32))
    assert_close(b.grad, np.full(4, 6.0, np.float32))
    assert_close(c.grad, np.array(60.0, np.float32))  # 12 * (1 + 2) + 12 * 2


def test_gradient_dtype_matches_the_leaf(device):
    x = leaf([1.0, 2.0], device, F64)
    (x.float() * 3).sum().backward()
    assert x.grad.dtype == F64
    assert_close(x.grad, np.full(2, 3.0))


@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((2, 2, 3), (3, 4)), ((3,), (3, 2)), ((2, 3), (3,)),
                                    ((3,), (3,))])
def test_matmul_gradients(shapes, device):
    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    a, b = leaf(a0, device, F64), leaf(b0, device, F64)
    out = a @ b
    g = rng.standard_normal(out.shape)
    out.backward(core.tensor(g, dtype=F64, device=device))
    a2, b2, g2 = np.atleast_2d(a0), b0.reshape(b0.shape[0], -1) if b0.ndim == 1 else b0, g
    if a0.ndim == 1 and b0.ndim == 1:
        expected_a, expected_b = g * b0, g * a0
    elif a0.ndim == 1:
        expected_a, expected_b = g @ b0.T, np.outer(a0, g)
    elif b0.ndim == 1:
        expected_a, expected_b = np.outer(g, b0), a0.T @ g
    else:
        expected_a = g @ b2.T
        expected_b = (np.swapaxes(a2, -1, -2) @ g2).reshape(-1, *b0.shape).sum(0)
    assert_close(a.grad, expected_a)
    assert_close(b.grad, expected_b)


def test_cat_and_stack_gradients(device):
    a, b = leaf(np.ones((2, 2)), device), leaf(np.ones((2, 3)), device)
    weights = core.arange(10.0, device=device).reshape(2, 5)
    (core.cat([a, b * 2], dim=1) * weights).sum().backward()
    w = np.arange(10.0, dtype=np.float32).reshape(2, 5)
    assert_close(a.grad, w[:, :2])
    assert_close(b.grad, 2 * w[:, 2:])
    x = leaf([1.0, 2.0], device)
    (core.stack([x, x * 3]) * core.tensor([[1.0, 1.0], [2.0, 2.0]], device=device)).sum().backward()
    assert_close(x.grad, np.full(2, 7.0, np.float32))


def test_basic_and_advanced_indexing_gradients(device):
    x = leaf(np.arange(12.0).reshape(3, 4), device)
    y = x[1:, ::2] * 2  # basic: a strided view
    z = x[[0, 0, 2], [1, 1, 3]]  # advanced, with a repeated index: gradients add up
    m = x[x > 5]  # boolean mask
    e = x[..., None, 0]
    (y.sum() + (z * core.tensor([1.0, 2.0, 3.0], device=device)).sum() + m.sum() + e.sum()).backward()
    expected = np.zeros((3, 4), np.float32)
    expected[1:, ::2] += 2
    expected[0, 1] += 3
    expected[2, 3] += 3
    expected[np.arange(12.0).reshape(3, 4) > 5] += 1
    expected[:, 0] += 1
    assert_close(x.grad, expected)


def test_gather_where_clamp_gradients(device):
    x = leaf([[1.0, -2.0, 3.0], [0.5, 5.0, -4.0]], device)
    index = core.tensor([[0, 0, 2], [1, 1, 1]], device=device)
    core.gather(x, 1, index).sum().backward()
    assert_close(x.grad, np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]], np.float32))
    x.grad = None
    y = leaf(np.full((2, 3), 10.0), device)
    core.where(x > 0, x * 2, y).sum().backward()
    positive = np.array([[1, 0, 1], [1, 1, 0]], np.float32)
    assert_close(x.grad, 2 * positive)
    assert_close(y.grad, 1 - positive)
    x.grad = None
    x.clamp(-1.0, 2.0).sum().backward()
    assert_close(x.grad, np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], np.float32))
    x.grad = None
    low = leaf(np.zeros(3), device)
    core.clamp(x, min=low).sum().backward()  # a tensor bound gets the gradient where it wins
    assert_close(x.grad, np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]], np.float32))
    assert_close(low.grad, np.array([0.0, 1.0, 1.0], np.float32))


def test_max_min_with_dim_gradients(device):
    x = leaf([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], device)
    values, indices = x.max(dim=1)
    assert indices.tolist() == [1, 2] and not indices.requires_grad
    (values * 2).sum().backward(retain_graph=True)
    core.min(x, 0, keepdim=True).values.mul(3).sum().backward()
    assert_close(x.grad, np.array([[3.0, 2.0, 3.0], [0.0, 3.0, 2.0]], np.float32))
    x.grad = None
    x.max().backward()  # the all-reduce form: ties share, as PyTorch's max() does
    assert_close(x.grad, np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]], np.float32))


def test_max_with_dim_routes_tied_gradient_to_the_index(device):
    x = leaf([[2.0, 2.0, 1.0], [0.0, 3.0, 3.0]], device)
    values, indices = x.max(dim=1)
    values.sum().backward()
    expected = np.zeros((2, 3), np.float32)
    expected[[0, 1], indices.tolist()] = 1.0
    assert_close(x.grad, expected)


def _oracle_cases():
    """(name, fn(lib, index, *inputs), input shapes): expressions spelled the same in core and PyTorch."""
    return [
        ("broadcast-arith", lambda m, ix, a, b: ((a - b) * a / (b.abs() + 1)).sum(), [(3, 1), (4,)]),
        ("matmul-batched", lambda m, ix, a, b: m.matmul(a, b).tanh().sum(), [(2, 2, 3), (3, 4)]),
        ("cat-narrow", lambda m, ix, a, b: (m.cat([a, b.exp()], 1).narrow(1, 1, 3) ** 2).sum(), [(2, 2), (2, 3)]),
        ("basic-index", lambda m, ix, a: (a[1:, ::2] * a[0, None, 1::2]).sum() + a[..., -1].sin().sum(), [(3, 4)]),
        ("advanced-index", lambda m, ix, a: (a[ix([2, 0, 2])] * a[:, ix([1, 1])].sum()).sum(), [(3, 4)]),
        ("gather", lambda m, ix, a: m.gather(a, 0, ix([[2, 0], [2, 2]])).exp().sum(), [(3, 2)]),
        ("where-clamp", lambda m, ix, a, b: m.where(a > b, a.clamp(-0.5, 0.5), b * b).sum(), [(3, 3), (3, 3)]),
        ("max-min-dim", lambda m, ix, a: (a.max(dim=0).values * a.min(1, keepdim=True).values).sum(), [(3, 4)]),
        ("reductions", lambda m, ix, a: a.mean(0).sum() * a.sum(1).prod() + a.var() + a.amax(1).sum(), [(3, 4)]),
        ("views", lambda m, ix, a: (a.t().reshape(2, 6).permute(1, 0).expand(3, 6, 2) * 2).pow(2).sum(), [(3, 4)]),
    ]


@pytest.mark.parametrize("name, fn, shapes", _oracle_cases(), ids=[c[0] for c in _oracle_cases()])
def test_gradients_match_torch(name, fn, shapes):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]
    ours = [core.tensor(a, dtype=F64, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out = fn(core, lambda v: core.tensor(v), *ours)
    expected = fn(torch, lambda v: torch.tensor(v), *theirs)
    assert_close(out, expected.detach().numpy())
    out.backward()
    expected.backward()
    for got, want in zip(grads_of(ours), [t.grad.numpy() for t in theirs]):
        assert_close(got, want)


@pytest.mark.parametrize("fn", [
    lambda a: a.unfold(1, 3, 2).sin(),  # overlapping windows accumulate
    lambda a: core.sinc(a),
    lambda a: core.logaddexp2(a, a * 2),
    lambda a: core.copysign(a, -a.detach()),
    lambda a: a.max(dim=1).values,
])
def test_derivatives_outside_the_conformance_table(fn, device):
    core.manual_seed(3)
    x = core.randn(3, 7, dtype=core.float64, device=device, requires_grad=True)
    assert core.autograd.gradcheck(fn, (x,))


def test_leaf_gradient_is_kept_without_a_copy_only_when_nothing_else_sees_it():
    a = core.randn(3, requires_grad=True)
    b = core.randn(3, requires_grad=True)
    (a + b).sum().backward()  # add's backward hands one tensor to both leaves: each must get its own
    assert a.grad.data_ptr() != b.grad.data_ptr()
    (a + b).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0] and b.grad.tolist() == [2.0, 2.0, 2.0]
    g = core.ones(3)
    c = core.randn(3, requires_grad=True)
    c.view(3).backward(g)  # the caller's gradient flows through a view: never adopted as .grad
    assert c.grad.data_ptr() != g.data_ptr()
    c.view(3).backward(g)
    assert g.tolist() == [1.0, 1.0, 1.0]
    w = core.randn(4, 3, requires_grad=True)
    core.nn.functional.linear(core.randn(2, 3), w).sum().backward()
    w_grad = w.grad
    core.nn.functional.linear(core.randn(2, 3), w).sum().backward()
    assert w.grad is w_grad  # accumulated in place into the adopted tensor
