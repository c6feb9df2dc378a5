"""Training through fused groups: generated backward kernels (core.jit.fused_backward) give eager's gradients for
every differentiated op, broadcast inputs, closing sums and several outputs; double backward, groups without
rules (run unfused), dynamic sizes, and the engine's handling of two outputs of one node passed together."""

from __future__ import annotations

import numpy as np
import pytest

import core
import core.jit as jit
from core.codegen import FusedKernel, FusedReduction, FusedStep
from core.jit.fused import STATS
from core.jit.fused_backward import backward_kernel, training_kernels
from core.plugins import manager
from core.testing import assert_close


@pytest.fixture(autouse=True)
def fresh_compiler():
    core.compiler.reset()
    yield
    core.compiler.reset()


def _fuses(device) -> bool:
    dev = core.device(device)
    return manager.runtime_for(dev.type).supports_fusion(dev)


def _leaf(device, *shape, positive=False, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed + sum(shape))
    data = rng.uniform(0.5, 2.0, shape) if positive else rng.standard_normal(shape)
    return core.tensor(data.astype(dtype), device=device, requires_grad=True)


def _fused(fn, inputs) -> list:
    return [n for n in jit.trace(fn, inputs).graph.nodes if n.op == "jit::fused"]


CHAINS = {
    "unary": lambda x, a: (x * a).neg().exp().tanh().sigmoid().sin().cos().sinh().square().abs(),
    "unary_positive": lambda x, a: ((x * a).log() + (x / a).sqrt() + (x + a).rsqrt() + (x * 2).reciprocal()
                                    + (x - a).atan() + (x * a).log1p() + (a * 0.1).expm1().cosh()),
    "binary": lambda x, a: (x * a - a / x + x.sub(a, alpha=0.5) + x.add(a, alpha=2.0)) / (a + 3.0),
    "relu_where_clamp": lambda x, a: core.where(x > a, (x * a).relu(), (x - a).clamp(-0.5, 0.5)) * 2.0,
    "reused": lambda x, a: (x * x + x * a) * (x - a),
    "sum_keepdim": lambda x, a: ((x * a + 1).tanh() * 2 - x).sum(-1, keepdim=True),
    "sum": lambda x, a: ((x * a).sigmoid() + x.exp() * 0.25 - a).sum(-1),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_gradients_through_generated_backward_kernels_equal_eager(device, name):
    fn = CHAINS[name]
    positive = name == "unary_positive"
    x, a = _leaf(device, 4, 6, positive=positive), _leaf(device, 6, positive=positive, seed=1)
    compiled = core.compile(fn)
    compiled(x, a)  # the capture
    assert _fused(fn, (x, a))
    before = dict(STATS)
    out = compiled(x, a)
    grad_out = core.tensor(np.random.default_rng(2).standard_normal(tuple(out.shape)).astype(np.float32),
                           device=device)
    got = core.autograd.grad(out, [x, a], grad_out)
    if _fuses(device):  # one forward and one backward kernel, no op run one by one
        assert STATS["kernel"] - before["kernel"] >= 2 and STATS["unfused"] == before["unfused"]
    want_out = fn(x, a)
    want = core.autograd.grad(want_out, [x, a], grad_out)
    assert_close(out, want_out)
    for g, w in zip(got, want):
        assert_close(g, w)


def test_several_outputs_and_an_unused_one(device):
    def fn(x, w):
        y = (x * w).relu()
        return y, (y * 3 + x).sum(-1)

    x, w = _leaf(device, 5, 4), _leaf(device, 4, seed=3)
    compiled = core.compile(fn)
    compiled(x, w)
    y, s = compiled(x, w)
    ey, es = fn(x, w)
    g = [core.ones(5, 4, device=device), core.ones(5, device=device) * 0.5]
    for got, want in zip(core.autograd.grad([y, s], [x, w], g, retain_graph=True),
                         core.autograd.grad([ey, es], [x, w], g, retain_graph=True)):
        assert_close(got, want)
    for got, want in zip(core.autograd.grad(s.sum(), [x, w]), core.autograd.grad(es.sum(), [x, w])):
        assert_close(got, want)  # y's gradient never arrives: zero


def test_only_some_inputs_require_grad(device):
    def fn(x, a):
        return ((x + 1) * a).tanh() * x

    x, a = _leaf(device, 3, 4), _leaf(device, 4, seed=4).detach()
    compiled = core.compile(fn)
    compiled(x, a)
    got, = core.autograd.grad(compiled(x, a).sum(), [x])
    want, = core.autograd.grad(fn(x, a).sum(), [x])
    assert_close(got, want)


def test_double_backward_differentiates_the_original_ops(device):
    fn = CHAINS["binary"]
    x, a = _leaf(device, 3, 5, positive=True), _leaf(device, 5, positive=True, seed=5)
    compiled = core.compile(fn)
    compiled(x, a)
    gx, = core.autograd.grad(compiled(x, a).sum(), [x], create_graph=True)
    ex, = core.autograd.grad(fn(x, a).sum(), [x], create_graph=True)
    assert_close(gx, ex)
    assert_close(core.autograd.grad(gx.sum(), [a])[0], core.autograd.grad(ex.sum(), [a])[0])


def test_gradcheck_through_generated_kernels():
    def fn(x, y):
        return ((x * y).sigmoid() + x.exp() * 0.25 - y / (x * x + 1.0)).sum(-1)

    x = core.rand(3, 4, dtype=core.float64, requires_grad=True)
    y = core.rand(4, dtype=core.float64, requires_grad=True)
    traced = jit.trace(fn, (x, y))
    assert [n for n in traced.graph.nodes if n.op == "jit::fused"]
    assert core.autograd.gradcheck(traced, (x, y))


def test_a_group_without_rules_runs_its_ops(device):
    def fn(x, a):
        return core.maximum(x * a, x + 1.0) * 2.0  # maximum splits ties: no generated derivative

    x, a = _leaf(device, 4, 3), _leaf(device, 3, seed=6)
    compiled = core.compile(fn)
    compiled(x, a)
    before = STATS["unfused"]
    got = core.autograd.grad(compiled(x, a).sum(), [x, a])
    if _fused(fn, (x, a)):
        assert STATS["unfused"] > before
    for g, w in zip(got, core.autograd.grad(fn(x, a).sum(), [x, a])):
        assert_close(g, w)


def test_training_through_fused_kernels_at_new_batch_sizes(device):
    def fn(x, a):
        return (x * a + 1.0).tanh() * x

    a = _leaf(device, 6, seed=7)
    compiled = core.compile(fn, dynamic=True)
    for b in (4, 9, 5, 9):
        x = _leaf(device, b, 6)
        for _ in range(2):  # the first call of a size is checked by a capture, the second replays
            got = core.autograd.grad(compiled(x, a).sum(), [x, a])
            for g, w in zip(got, core.autograd.grad(fn(x, a).sum(), [x, a])):
                assert_close(g, w)
    assert compiled.graphs == 1


def test_backward_kernel_structure():
    step = FusedStep("mul", "(a * b)", (("in", 0), ("in", 1)), "float32", "float32")
    relu = FusedStep("relu", "r", (("v", 0),), "float32", "float32")
    kernel = FusedKernel("k", (2, 3), ("float32", "float32"), (step, relu), (1,))
    made, written = backward_kernel(kernel, (True, False))
    assert written == [0] and made.inputs == ("float32",) * 3 and len(made.outputs) == 1
    assert made.steps[:2] == kernel.steps  # the forward is recomputed, then differentiated
    amax = FusedKernel("k", (2, 3), ("float32", "float32"), (step,), (),
                       FusedReduction("amax", 0, 1, False, "float32", "float32"))
    assert backward_kernel(amax, (True, True)) is None
    tanh = FusedStep("tanh", "t", (("v", 0),), "float32", "float32")
    chain = FusedKernel("k", (2, 3), ("float32", "float32"), (step, tanh, relu), (2,))
    forward, backward, written, n_saved = training_kernels(chain, (True, True))
    assert forward.outputs == (2, 1) and n_saved == 1 and written == [0, 1]  # tanh's value is written out
    assert backward.inputs == ("float32",) * 4 and backward.steps[1].operands == (("in", 2),)  # and read back
    power = FusedKernel("k", (2, 3), ("float32", "float32"),
                        (FusedStep("pow", "p", (("in", 0), ("in", 1)), "float32", "float32"),), (0,))
    assert backward_kernel(power, (True, True)) is None


def test_grad_of_two_outputs_of_one_node_together():
    class Twice(core.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    x = core.tensor([1.0, 2.0], requires_grad=True)
    a, b = Twice.apply(x)
    got, = core.autograd.grad([a, b], [x], [core.ones(2), core.ones(2)])
    np.testing.assert_allclose(got.numpy(), [5.0, 5.0])
