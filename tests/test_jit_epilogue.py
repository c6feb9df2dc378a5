"""The epilogue pass and its fused ops: ``linear_pointwise`` and ``convolution_pointwise`` (core/jit/passes/epilogue.py):
activations and residual additions folded into the product before them."""

from __future__ import annotations

import pytest

import core
import core.jit as jit
import core.nn as nn
from core.autograd import gradcheck
from core.dispatch import get_operator
from core.jit.passes import epilogue, optimize
from core.plugins import manager
from core.testing import assert_close

ACTIVATIONS = ("relu", "sigmoid", "tanh")
MODULES = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}


def _ops(graph) -> list:
    return [n.op for n in graph.nodes]


def _close_all(actual, expected, **tolerances) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e, **tolerances)


def _has_float64(device: str) -> bool:
    return manager.runtime_for(core.device(device).type).supports_float64


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_a_linear_and_its_activation_become_one_node_that_computes_the_same(device, activation):
    core.manual_seed(0)
    model = nn.Sequential(nn.Linear(24, 32), MODULES[activation](), nn.Linear(32, 8), MODULES[activation]()).to(device)
    x = core.randn(16, 24, device=device)
    traced = jit.trace(model, (x,))
    assert _ops(traced.graph).count("linear_pointwise") == 2
    assert "linear" not in _ops(traced.graph) and activation not in _ops(traced.graph)
    assert_close(traced(x), model(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_a_convolution_and_its_activation_become_one_node_that_computes_the_same(device, activation):
    core.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), MODULES[activation](), nn.Conv2d(8, 4, 3, stride=2),
                          MODULES[activation]()).to(device)
    x = core.randn(2, 3, 12, 12, device=device)
    traced = jit.trace(model, (x,))
    assert _ops(traced.graph).count("convolution_pointwise") == 2
    assert "convolution" not in _ops(traced.graph)
    assert_close(traced(x), model(x), rtol=1e-4, atol=1e-5)


def test_a_product_read_elsewhere_or_returned_keeps_its_own_node():
    def read_twice(x, w, b):
        y = core.nn.functional.linear(x, w, b)
        return y.relu() + y

    def returned(x, w, b):
        y = core.nn.functional.linear(x, w, b)
        return y.relu(), y

    def in_place_activation(x, w, b):
        return core.nn.functional.linear(x, w, b).relu_()

    x, w, b = core.randn(4, 6), core.randn(5, 6), core.randn(5)
    for fn in (read_twice, returned):
        graph = epilogue(jit.trace(fn, (x, w, b), optimize=False).graph.copy())
        assert "linear_pointwise" not in _ops(graph) and "linear" in _ops(graph)
    graph = optimize(jit.trace(in_place_activation, (x, w, b), optimize=False).graph)
    assert_close(jit.trace(in_place_activation, (x, w, b))(x, w, b), in_place_activation(x, w, b))
    assert graph.validate() is graph


def test_without_a_bias_and_over_leading_dims(device):
    x, w = core.randn(3, 5, 7, device=device), core.randn(9, 7, device=device)
    out = get_operator("linear_pointwise")(x, w, None, "tanh")
    assert_close(out, core.tanh(x @ w.t()), rtol=1e-5, atol=1e-6)
    fn = lambda x, w: core.nn.functional.linear(x, w).sigmoid()  # noqa: E731
    traced = jit.trace(fn, (x, w))
    assert "linear_pointwise" in _ops(traced.graph)
    assert_close(traced(x, w), fn(x, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gradients_of_the_fused_ops_in_float64(device, activation):
    if not _has_float64(device):
        pytest.skip(f"{device} has no float64")
    core.manual_seed(1)
    kw = dict(dtype=core.float64, device=device, requires_grad=True)
    x, w, b = core.randn(4, 6, **kw), core.randn(5, 6, **kw), core.randn(5, **kw)
    assert gradcheck(lambda x, w, b: get_operator("linear_pointwise")(x, w, b, activation), (x, w, b))
    x, w, b = core.randn(2, 2, 5, 5, **kw), core.randn(3, 2, 3, 3, **kw), core.randn(3, **kw)
    conv = get_operator("convolution_pointwise")
    assert gradcheck(lambda x, w, b: conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, activation), (x, w, b))


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_float32_outputs_and_gradients_equal_the_unfused_ops(device, activation):
    """Big enough for cpu_c's oneDNN kernels (the fused primitive) to take them; one autograd node per fused op."""
    core.manual_seed(2)
    x = core.randn(64, 96, device=device, requires_grad=True)
    w = core.randn(128, 96, device=device, requires_grad=True)
    b = core.randn(128, device=device, requires_grad=True)
    act = getattr(core, activation)
    fused = get_operator("linear_pointwise")(x, w, b, activation)
    plain = act(core.nn.functional.linear(x, w, b))
    assert fused.grad_fn.name() == "LinearPointwiseBackward0"
    assert_close(fused, plain, rtol=1e-4, atol=1e-5)
    g = core.randn(64, 128, device=device)
    _close_all(core.autograd.grad(fused, (x, w, b), g), core.autograd.grad(plain, (x, w, b), g),
               rtol=1e-4, atol=1e-4)
    xi = core.randn(4, 8, 14, 14, device=device, requires_grad=True)
    wi = core.randn(16, 8, 3, 3, device=device, requires_grad=True)
    fused = get_operator("convolution_pointwise")(xi, wi, b[:16], (1, 1), (1, 1), (1, 1), 1, activation)
    plain = act(core.nn.functional.conv2d(xi, wi, b[:16], padding=1))
    assert_close(fused, plain, rtol=1e-4, atol=1e-4)
    g = core.randn(*plain.shape, device=device)
    _close_all(core.autograd.grad(fused, (xi, wi), g), core.autograd.grad(plain, (xi, wi), g),
               rtol=1e-3, atol=1e-3)


def test_a_convolution_with_a_residual_trains_as_the_unfused_ops(device):
    """float32, big enough for cpu_c's oneDNN primitive with both post-ops: outputs and all three gradients equal
    relu(conv2d(x, w, b) + r)'s."""
    core.manual_seed(4)
    x = core.randn(4, 8, 14, 14, device=device, requires_grad=True)
    w = core.randn(16, 8, 3, 3, device=device, requires_grad=True)
    b = core.randn(16, device=device, requires_grad=True)
    r = core.randn(4, 16, 14, 14, device=device, requires_grad=True)
    fused = get_operator("convolution_pointwise")(x, w, b, (1, 1), (1, 1), (1, 1), 1, "relu", r)
    plain = core.relu(core.nn.functional.conv2d(x, w, b, padding=1) + r)
    assert fused.grad_fn.name() == "ConvolutionPointwiseBackward0"
    assert_close(fused, plain, rtol=1e-4, atol=1e-4)
    g = core.randn(*plain.shape, device=device)
    _close_all(core.autograd.grad(fused, (x, w, b, r), g), core.autograd.grad(plain, (x, w, b, r), g),
               rtol=1e-3, atol=1e-3)


def test_a_compiled_training_step_through_fused_epilogues_equals_eager(device):
    def make():
        core.manual_seed(3)
        model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 16),
                              nn.Tanh(), nn.Linear(16, 3)).to(device)
        return model, core.optim.SGD(model.parameters(), lr=0.1)

    x, y = core.randn(6, 1, 8, 8, device=device), core.randint(0, 3, (6,), device=device)
    losses = {}
    for compiled in (False, True):
        model, opt = make()
        forward = core.compile(model) if compiled else model
        for _ in range(3):
            loss = core.nn.functional.cross_entropy(forward(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        losses[compiled] = (loss.item(), [p.detach().clone() for p in model.parameters()])
    assert losses[True][0] == pytest.approx(losses[False][0], rel=1e-4, abs=1e-5)
    _close_all(losses[True][1], losses[False][1], rtol=1e-4, atol=1e-5)


def test_an_unknown_activation_is_refused_with_the_op_named():
    x, w = core.randn(2, 3), core.randn(4, 3)
    with pytest.raises(ValueError, match=r"linear_pointwise\(\): activation must be None or one of relu, sigmoid, "
                                         r"tanh, gelu, gelu_tanh, got 'silu'"):
        get_operator("linear_pointwise")(x, w, None, "silu")
    # autograd follows positional tensors only; the interpreter says "positional-only", a compiled kernel
    # (core/_hot.py) "unexpected keyword argument"
    keyword = "positional|unexpected keyword argument 'residual'"
    with pytest.raises(TypeError, match=keyword):
        get_operator("linear_pointwise")(x, w, None, "relu", residual=core.randn(2, 4))
    with pytest.raises(TypeError, match=keyword):  # recorded, and recorded as its parts
        get_operator("linear_pointwise")(x.requires_grad_(), w, None, "gelu", residual=core.randn(2, 4))
    with pytest.raises(ValueError, match=r"convolution_pointwise\(\): activation must be None or one of"):
        get_operator("convolution_pointwise")(core.randn(1, 1, 4, 4), core.randn(1, 1, 3, 3), None, (1, 1), (0, 0),
                                              (1, 1), 1, "softplus")


@pytest.mark.parametrize("activation", (None, "relu"))
def test_a_residual_addition_folds_in_before_the_activation(device, activation):
    """``act(linear(h) + x)`` (either operand order) and ``act(conv(h) + x)``: one node, eager's values."""
    core.manual_seed(4)
    lin = nn.Linear(32, 32).to(device)
    conv = nn.Conv2d(4, 4, 3, padding=1).to(device)
    act = (lambda y: y) if activation is None else getattr(core, activation)

    def block(x, img, x2):  # the third: a scalar addition is no residual, the linear stays
        return act(x + lin(x)), act(conv(img) + img), act(lin(x2) + 1.5)

    x, img, x2 = core.randn(8, 32, device=device), core.randn(2, 4, 6, 6, device=device), core.randn(8, 32, device=device)
    traced = jit.trace(block, (x, img, x2))
    ops = _ops(traced.graph)
    assert ops.count("linear_pointwise") == 1 and ops.count("convolution_pointwise") == 1 and ops.count("linear") == 1
    assert "convolution" not in ops
    _close_all(traced(x, img, x2), block(x, img, x2), rtol=1e-5, atol=1e-5)


def test_residual_gradients_in_float64_and_a_broadcast_residual(device):
    if not _has_float64(device):
        pytest.skip(f"{device} has no float64")
    kw = dict(dtype=core.float64, device=device, requires_grad=True)
    x, w, b = core.randn(4, 6, **kw), core.randn(5, 6, **kw), core.randn(5, **kw)
    for residual in (core.randn(4, 5, **kw), core.randn(5, **kw)):
        for activation in (None, "tanh"):
            fn = lambda x, w, b, r: get_operator("linear_pointwise")(x, w, b, activation, r)  # noqa: E731
            assert gradcheck(fn, (x, w, b, residual))
    xi, wi, r = core.randn(1, 2, 4, 4, **kw), core.randn(3, 2, 3, 3, **kw), core.randn(1, 3, 4, 4, **kw)
    conv = get_operator("convolution_pointwise")
    assert gradcheck(lambda x, w, r: conv(x, w, None, (1, 1), (1, 1), (1, 1), 1, "sigmoid", r), (xi, wi, r))


def test_a_transformer_feed_forward_trains_compiled_as_eager(device):
    """x + W2 relu(W1 x): both epilogues (activation, residual) fold, and training through them equals eager."""
    def make():
        core.manual_seed(5)
        return nn.Linear(16, 32).to(device), nn.Linear(32, 16).to(device)

    x = core.randn(10, 16, device=device)
    results = []
    for compiled in (False, True):
        up, down = make()
        ff = lambda x: x + down(core.relu(up(x)))  # noqa: E731
        if compiled:
            ff = core.compile(ff)
        loss = ff(x).square().mean()
        loss.backward()
        results.append([loss.detach(), up.weight.grad, up.bias.grad, down.weight.grad, down.bias.grad])
    _close_all(results[1], results[0], rtol=1e-5, atol=1e-6)
    graph = jit.trace(lambda x: x + make()[1](core.relu(make()[0](x))), (x,)).graph
    assert _ops(graph).count("linear_pointwise") == 2


GELUS = {"gelu": "none", "gelu_tanh": "tanh"}  # epilogue activation -> gelu's approximate


@pytest.mark.parametrize("activation", GELUS)
def test_gelu_epilogues_fold_and_run_fused_where_autograd_does_not_record(device, activation):
    """``gelu(linear(x))`` and ``gelu(conv(x))`` (either approximation) become one node; without grad it is the
    fused op (cpu_c: oneDNN's primitive with GELU as a post-op), with eager's values."""
    core.manual_seed(6)
    approximate = GELUS[activation]
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GELU(approximate), nn.Flatten(),
                          nn.Linear(8 * 6 * 6, 64), nn.GELU(approximate), nn.Linear(64, 10)).to(device)
    x = core.randn(16, 3, 6, 6, device=device)
    with core.no_grad():
        traced = jit.trace(model, (x,))
        ops = _ops(traced.graph)
        assert ops.count("linear_pointwise") == 1 and ops.count("convolution_pointwise") == 1
        assert "gelu" not in ops and "convolution" not in ops
        fused = [n for n in traced.graph.nodes if n.op.endswith("_pointwise")]
        assert all(activation in n.args for n in fused)
        assert_close(traced(x), model(x), rtol=1e-4, atol=1e-5)
    w, b = core.randn(96, 48, device=device), core.randn(96, device=device)
    h = core.randn(64, 48, device=device)
    with core.no_grad():
        out = get_operator("linear_pointwise")(h, w, b, activation)
    assert_close(out, core.nn.functional.gelu(core.nn.functional.linear(h, w, b), approximate=approximate),
                 rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("activation", GELUS)
def test_a_recorded_gelu_epilogue_runs_as_its_parts(device, activation):
    """Its gradient needs the product, which the fused op does not keep: autograd records the product and the gelu,
    so training through the fused node equals the unfused ops (float64 gradcheck, and a compiled training step)."""
    approximate = GELUS[activation]
    core.manual_seed(7)
    x, w, b = (core.randn(*shape, device=device, requires_grad=True) for shape in ((6, 8), (5, 8), (5,)))
    out = get_operator("linear_pointwise")(x, w, b, activation)
    assert out.grad_fn.name() == "GeluBackward0"
    plain = core.nn.functional.gelu(core.nn.functional.linear(x, w, b), approximate=approximate)
    assert_close(out, plain)
    _close_all(core.autograd.grad(out.sum(), (x, w, b)), core.autograd.grad(plain.sum(), (x, w, b)))
    if _has_float64(device):
        kw = dict(dtype=core.float64, device=device, requires_grad=True)
        xd, wd, bd = core.randn(4, 6, **kw), core.randn(5, 6, **kw), core.randn(5, **kw)
        assert gradcheck(lambda x, w, b: get_operator("linear_pointwise")(x, w, b, activation), (xd, wd, bd))
        xi, wi = core.randn(1, 2, 5, 5, **kw), core.randn(3, 2, 3, 3, **kw)
        conv = get_operator("convolution_pointwise")
        assert gradcheck(lambda x, w: conv(x, w, None, (1, 1), (1, 1), (1, 1), 1, activation), (xi, wi))

    def make():
        core.manual_seed(8)
        return nn.Sequential(nn.Linear(12, 24), nn.GELU(approximate), nn.Linear(24, 3)).to(device)

    data = core.randn(10, 12, device=device)
    results = []
    for compiled in (False, True):
        model = make()
        forward = core.compile(model) if compiled else model
        loss = forward(data).square().mean()
        loss.backward()
        results.append([loss.detach()] + [p.grad for p in model.parameters()])
    _close_all(results[1], results[0], rtol=1e-5, atol=1e-6)
