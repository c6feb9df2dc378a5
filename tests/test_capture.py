"""Whole-step capture (``core.compile(mode="reduce-overhead")``): training steps recorded as kernel calls and
replayed give eager's parameters, gradients and losses; what the step's Python depended on (optimizer
hyper-parameters, ``.grad`` state, argument shapes) re-records when it changes; what cannot be replayed (Python
reading tensor data, a forward whose outputs still need their graph) runs without capture, with a warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import core
import core.nn as nn
import core.nn.functional as F
from core._dynamo.exc import Unsupported
from core.dispatch.capture import Recording, Tainted, Tape
from core.testing import assert_close


@pytest.fixture(autouse=True)
def fresh_compiler():
    core.compiler.reset()
    yield
    core.compiler.reset()


def _data(device, n=6, batch=8, features=10, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    xs = [core.tensor(rng.standard_normal((batch, features)).astype(np.float32), device=device) for _ in range(n)]
    ys = [core.tensor(rng.integers(0, classes, batch), device=device) for _ in range(n)]
    return xs, ys


def _mlp(device, features=10, classes=4, dropout=0.0):
    core.manual_seed(0)
    layers = [nn.Linear(features, 16), nn.Tanh()] + ([nn.Dropout(dropout)] if dropout else []) + \
        [nn.Linear(16, classes)]
    return nn.Sequential(*layers).to(device)


def _trainer(model, opt, zero_first=False):
    def step(x, y):
        if zero_first:
            opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if not zero_first:
            opt.zero_grad()
        return loss
    return step


def _pair(device, make_opt, zero_first=False, dropout=0.0):
    """(eager model, eager step), (captured model, captured step) from the same initial weights."""
    out = []
    for _ in range(2):
        model = _mlp(device, dropout=dropout)
        out.append((model, _trainer(model, make_opt(model.parameters()), zero_first)))
    (m1, s1), (m2, s2) = out
    return m1, s1, m2, core.compile(s2, mode="reduce-overhead")


def _replays(compiled) -> int:
    return sum(1 for e in compiled.entries.values() if getattr(e, "tape", None) is not None)


@pytest.mark.parametrize("make_opt,zero_first", [
    (lambda p: core.optim.SGD(p, lr=0.1, momentum=0.9), False),
    (lambda p: core.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3), True),
    (lambda p: core.optim.Adam(p, lr=0.01), False),
    (lambda p: core.optim.AdamW(p, lr=0.01, amsgrad=True), True),
], ids=["sgd", "sgd-nesterov-zero-first", "adam", "adamw-amsgrad-zero-first"])
def test_captured_training_equals_eager(device, make_opt, zero_first):
    m1, s1, m2, s2 = _pair(device, make_opt, zero_first)
    xs, ys = _data(device)
    for x, y in zip(xs, ys):
        assert_close(s2(x, y).detach(), s1(x, y).detach(), rtol=1e-5, atol=1e-6)
    assert _replays(s2) == 1  # the later calls replayed one tape
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert_close(p2.detach(), p1.detach(), rtol=1e-5, atol=1e-6)
        assert p2._version == p1._version  # each in-place write counted once, as eager counts it
        if zero_first:  # the gradients of the last step are left in .grad, as eager leaves them
            assert_close(p2.grad, p1.grad, rtol=1e-5, atol=1e-6)
        else:
            assert p2.grad is None


def test_replayed_outputs_are_fresh_detached_tensors(device):
    _, _, model, step = _pair(device, lambda p: core.optim.SGD(p, lr=0.1))
    xs, ys = _data(device)
    losses = [step(x, y) for x, y in zip(xs, ys)]
    assert losses[0].requires_grad and not losses[-1].requires_grad  # recorded calls ran eagerly
    assert len({id(loss) for loss in losses}) == len(losses)
    assert len({float(loss) for loss in losses}) > 1


def test_learning_rate_change_records_again(device):
    models = [_mlp(device) for _ in range(2)]
    opts = [core.optim.SGD(m.parameters(), lr=0.1, momentum=0.5) for m in models]
    scheds = [core.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5) for o in opts]
    eager, captured = _trainer(models[0], opts[0]), core.compile(_trainer(models[1], opts[1]), mode="reduce-overhead")
    xs, ys = _data(device, n=9)
    for x, y in zip(xs, ys):
        eager(x, y)
        captured(x, y)
        for s in scheds:
            s.step()
    assert _replays(captured) >= 1
    for p1, p2 in zip(models[0].parameters(), models[1].parameters()):
        assert_close(p2.detach(), p1.detach(), rtol=1e-5, atol=1e-6)


def test_item_result_is_read_again_on_each_replay(device):
    model = _mlp(device)
    opt = core.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.item()

    ref_model = _mlp(device)
    ref_opt = core.optim.SGD(ref_model.parameters(), lr=0.1)
    xs, ys = _data(device)
    compiled = core.compile(step, mode="reduce-overhead")
    for x, y in zip(xs, ys):
        loss = F.cross_entropy(ref_model(x), y)
        loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        got = compiled(x, y)
        assert type(got) is float
        assert got == pytest.approx(loss.item(), rel=1e-5, abs=1e-6)
    assert _replays(compiled) == 1


def test_python_decision_on_data_is_not_captured(device):
    model = _mlp(device)
    opt = core.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        if loss.item() > 100.0:  # Python decides on a value: a replay could not
            return loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    compiled = core.compile(step, mode="reduce-overhead")
    xs, ys = _data(device)
    with pytest.warns(UserWarning, match=r"reduce-overhead.*cannot capture the whole call.*item\(\), then __gt__"):
        compiled(xs[0], ys[0])
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        for x, y in zip(xs[1:], ys[1:]):
            compiled(x, y)  # the ordinary compile path, which breaks its graph on item() too
    assert not [w for w in later if "reduce-overhead" in str(w.message)]  # once per reason
    assert _replays(compiled) == 0
    with pytest.raises(Unsupported, match="fullgraph=True"):
        core.compile(step, mode="reduce-overhead", fullgraph=True)(xs[0], ys[0])


def test_forward_only_module_keeps_its_graph(device):
    model = _mlp(device)
    compiled = core.compile(model, mode="reduce-overhead")
    x = _data(device)[0][0]
    with pytest.warns(UserWarning, match="require grad but does not run backward"):
        out = compiled(x)
    for _ in range(3):
        out = compiled(x)
        assert out.requires_grad
        out.sum().backward()  # the ordinary compile path: the graph is there
    assert_close(out.detach(), model(x).detach())


def test_dropout_draws_new_masks_on_replay(device):
    m1, s1, m2, s2 = _pair(device, lambda p: core.optim.SGD(p, lr=0.1), dropout=0.5)
    xs, ys = _data(device)
    core.manual_seed(1)
    eager = [float(s1(x, y)) for x, y in zip(xs, ys)]
    core.manual_seed(1)
    captured = [float(s2(x, y)) for x, y in zip(xs, ys)]
    assert _replays(s2) == 1
    np.testing.assert_allclose(captured, eager, rtol=1e-5, atol=1e-6)


def test_new_shape_records_its_own_tape(device):
    m1, s1, m2, s2 = _pair(device, lambda p: core.optim.SGD(p, lr=0.1))
    for batch in (8, 8, 8, 5, 5, 5, 8):
        x, y = (t[0] for t in _data(device, n=1, batch=batch, seed=batch))
        assert_close(s2(x, y).detach(), s1(x, y).detach(), rtol=1e-5, atol=1e-6)
    assert _replays(s2) == 2


def test_changed_gradient_state_records_again(device):
    model = _mlp(device)
    opt = core.optim.SGD(model.parameters(), lr=0.1)

    def accumulate(x, y):  # no zero_grad: gradients add up in .grad across calls
        F.cross_entropy(model(x), y).backward()

    compiled = core.compile(accumulate, mode="reduce-overhead")
    ref = _mlp(device)
    xs, ys = _data(device)
    for i, (x, y) in enumerate(zip(xs, ys)):
        compiled(x, y)
        F.cross_entropy(ref(x), y).backward()
        if i == 3:  # the caller drops the gradients: the tape read the old ones, so it records again
            opt.zero_grad()
            ref.zero_grad()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)


def test_recording_taints_on_data_reads_and_host_memory():
    x = core.ones(3)
    from core.distributed.backends import Work

    for read in (lambda: x.tolist(), lambda: bool(x.sum() > 0), lambda: core.from_numpy(np.ones(2)),
                 lambda: x.sum().item() * 2, lambda: Work("all_reduce", lambda: True)):
        with Recording((x,)) as rec:
            read()
        with pytest.raises(Tainted):
            rec.tape()
    with Recording((x,)) as rec:  # a tensor made from host data is made again on each replay
        y = x + core.tensor([1.0, 2.0, 3.0])
    assert len(rec.tape()) == 2
    out = rec.template(y)
    slots = rec.tape(keep=[out]).replay([core.full((3,), 2.0)])
    assert rec.tape().replay([x])[out[1]] is None  # not kept: dropped after its last use
    assert Tape.build(out, slots).tolist() == [3.0, 4.0, 5.0]
    assert y.tolist() == [2.0, 3.0, 4.0]


class _Net(nn.Module):
    """Layers whose training state a replay must keep: BatchNorm's running statistics, embeddings, a transformer
    layer (dropout, layer norm, attention)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(12, 16)
        self.block = nn.TransformerEncoderLayer(16, 2, dim_feedforward=24, dropout=0.1, batch_first=True)
        self.norm = nn.BatchNorm1d(16)
        self.head = nn.Linear(16, 4)

    def forward(self, tokens):
        h = self.block(self.embed(tokens)).mean(1)
        return self.head(self.norm(h))


@pytest.mark.parametrize("extra", ["plain", "clip", "compiled-forward", "autocast"])
def test_captured_model_with_state_equals_eager(device, extra):
    """Embedding, attention, dropout, BatchNorm, Adam; also gradient clipping, a compiled forward (its fused kernels
    recorded as launches) and bfloat16 autocast inside the captured step."""
    kind = core.device(device).type
    if extra == "autocast" and kind != "cpu":
        pytest.skip("bfloat16 autocast is exercised on the cpu device")
    rng = np.random.default_rng(0)
    tokens = [core.tensor(rng.integers(0, 12, (6, 5)), device=device) for _ in range(6)]
    labels = [core.tensor(rng.integers(0, 4, 6), device=device) for _ in range(6)]
    runs = []
    for capture in (False, True):
        core.manual_seed(0)
        model = _Net().to(device)
        opt = core.optim.Adam(model.parameters(), lr=0.01)
        forward = core.compile(model) if extra == "compiled-forward" else model

        def step(t, y, model=model, opt=opt, forward=forward):
            with core.autocast(kind, dtype=core.bfloat16, enabled=extra == "autocast"):
                loss = F.cross_entropy(forward(t), y)
            loss.backward()
            if extra == "clip":
                nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            opt.zero_grad()
            return loss

        fn = core.compile(step, mode="reduce-overhead") if capture else step
        core.manual_seed(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a step that cannot be captured runs without it: still equal
            losses = [float(fn(t, y).detach()) for t, y in zip(tokens, labels)]
        runs.append((model, losses))
        if capture:  # the index bounds checks of the embedding are recorded and rerun, so this captures
            assert _replays(fn) == 1
    (m1, l1), (m2, l2) = runs
    np.testing.assert_allclose(l2, l1, rtol=1e-5, atol=1e-6)
    for (name, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)


def test_replayed_index_check_still_raises(device):
    table = nn.Embedding(5, 3).to(device)

    def lookup(i):
        with core.no_grad():
            return table(i) * 2

    compiled = core.compile(lookup, mode="reduce-overhead")
    good = core.tensor([0, 4, 2], device=device)
    for _ in range(3):
        assert_close(compiled(good), lookup(good))
    assert _replays(compiled) == 1
    with pytest.raises(IndexError, match="index out of range in self"):
        compiled(core.tensor([0, 5, 2], device=device))  # the same guards: replayed, and the check runs again


def test_item_passed_to_an_op_is_read_again_on_replay():
    x = core.tensor([1, 2, 3])
    with Recording((x,)) as rec:
        n = x.sum().item()  # an int, passed to an op as it is: recorded as "read this tensor again"
        y = x.mul(n)
    assert type(n).__name__ == "HostInt" and not rec.reasons and y.tolist() == [6, 12, 18]
    out = rec.template(y)
    slots = rec.tape(keep=[out]).replay([core.tensor([2, 2, 1])])
    assert Tape.build(out, slots).tolist() == [10, 10, 5]


# -- direct C calls: a replay calls the C function a cpu_c kernel noted, not the kernel's Python ------------------
@pytest.fixture
def cpu_c(force_c):
    """cpu_c serving ``cpu`` with its C kernels at every size (skips where another backend serves it)."""
    from cpu_c_support import load_cpu_c

    load_cpu_c(require_selected=True)


def _direct_ops(compiled) -> dict:
    """{op name: [replayed directly?, ...]} over the one tape of ``compiled``."""
    (entry,) = [e for e in compiled.entries.values() if getattr(e, "tape", None) is not None]
    ops: dict = {}
    for step in entry.tape.steps:
        ops.setdefault(step[1].name if step[1] is not None else "?", []).append(step[-1] is not None)
    return ops


@pytest.mark.parametrize("make_opt", [lambda p: core.optim.SGD(p, lr=0.1, momentum=0.9),
                                      lambda p: core.optim.Adam(p, lr=0.01)], ids=["sgd", "adam"])
def test_replay_calls_cpu_c_functions_directly_with_eager_results(cpu_c, make_opt):
    """Linear, the activation's loop and its backward, the loss, the GEMMs of the backward, the bias gradients'
    sums, SGD's update and the views between them replay as their C calls (pointers from each replay's tensors);
    parameters, losses and version counters stay eager's."""
    m1, s1, m2, s2 = _pair("cpu", make_opt)
    xs, ys = _data("cpu")
    for x, y in zip(xs, ys):
        assert_close(s2(x, y).detach(), s1(x, y).detach(), rtol=1e-5, atol=1e-6)
    ops = _direct_ops(s2)
    for name in ("linear", "tanh", "cross_entropy_loss", "cross_entropy_loss_backward", "batched_matmul", "sum",
                 "transpose"):
        assert all(ops[name]), (name, ops)
    assert all(ops["sgd_update_"]) if "sgd_update_" in ops else not any(ops["adam_update_"])  # Adam reads item()
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert_close(p2.detach(), p1.detach(), rtol=1e-5, atol=1e-6)
        assert p2._version == p1._version


def test_kernel_that_copies_an_argument_replays_through_its_python(cpu_c):
    """cross-entropy copies a strided target before its C call: that call reads memory the recorded call's tensors
    do not own, so the replay runs the kernel (and its copy of this replay's target)."""
    model = _mlp("cpu")
    opt = core.optim.SGD(model.parameters(), lr=0.1)

    def step(x, pairs):
        loss = F.cross_entropy(model(x), pairs[:, 0])  # a column: stride 2
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    compiled = core.compile(step, mode="reduce-overhead")
    xs, ys = _data("cpu")
    reference = _mlp("cpu")
    ref_opt = core.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in zip(xs, ys):
        pairs = core.stack([y, y.flip(0)], dim=1)
        loss = compiled(x, pairs)
        expected = F.cross_entropy(reference(x), y)
        expected.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        assert_close(loss.detach(), expected.detach(), rtol=1e-5, atol=1e-6)
    ops = _direct_ops(compiled)
    assert not any(ops["cross_entropy_loss"]) and all(ops["linear"])


def test_direct_call_that_fails_on_replay_data_runs_the_kernel(cpu_c):
    """A target out of range on a replay: the loss's C call reports it, and the kernel's Python raises as eager."""
    model = _mlp("cpu")

    def loss_of(x, y):
        with core.no_grad():
            return F.cross_entropy(model(x), y)

    compiled = core.compile(loss_of, mode="reduce-overhead")
    xs, ys = _data("cpu")
    for x, y in zip(xs[:3], ys[:3]):
        assert_close(compiled(x, y), loss_of(x, y), rtol=1e-5, atol=1e-6)
    assert all(_direct_ops(compiled)["cross_entropy_loss"])
    bad = ys[3].clone()
    bad[1] = 9
    with pytest.raises(IndexError, match="Target 9 is out of bounds"):
        compiled(xs[3], bad)


def test_replay_calls_convolution_and_pooling_directly_with_eager_results(cpu_c):
    """A LeNet-like step: oneDNN's convolution forward and the pooling loops replay as their C calls; the
    convolution's backward (two oneDNN calls) through its kernel."""
    def net():
        core.manual_seed(0)
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(4 * 4 * 4, 3))
    rng = np.random.default_rng(0)
    xs = [core.tensor(rng.standard_normal((5, 1, 8, 8)).astype(np.float32)) for _ in range(5)]
    ys = [core.tensor(rng.integers(0, 3, 5)) for _ in range(5)]
    models = [net(), net()]
    steps = [_trainer(m, core.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)) for m in models]
    compiled = core.compile(steps[1], mode="reduce-overhead")
    for x, y in zip(xs, ys):
        assert_close(compiled(x, y).detach(), steps[0](x, y).detach(), rtol=1e-5, atol=1e-6)
    ops = _direct_ops(compiled)
    from core_cpu_c.lib import load_onednn

    if load_onednn() is not None:  # without oneDNN, cpu_c's own convolution is not noted
        assert all(ops["convolution"]) and not any(ops["convolution_backward"])
    assert all(ops["max_pool"]) and all(ops["max_pool_backward"])
    for p1, p2 in zip(models[0].parameters(), models[1].parameters()):
        assert_close(p2.detach(), p1.detach(), rtol=1e-5, atol=1e-6)


def test_direct_calls_check_the_layout_of_what_they_read(cpu_c):
    """Guards fix the inputs' shapes, not their strides or offsets: a replay given a slice at another offset, or a
    transposed view of the same shape, computes on it (the calls that read it run their kernels) as eager does."""
    m1, s1, m2, s2 = _pair("cpu", lambda p: core.optim.SGD(p, lr=0.1, momentum=0.9))
    rng = np.random.default_rng(1)
    block = core.tensor(rng.standard_normal((6, 8, 10)).astype(np.float32))
    flipped = core.tensor(rng.standard_normal((10, 8)).astype(np.float32)).t()  # (8, 10), strides (1, 8)
    ys = _data("cpu")[1]
    inputs = [block[0], block[1], block[2], flipped, block[4], block[5] * 1, flipped]
    for x, y in zip(inputs, ys + ys[:1]):
        assert_close(s2(x, y).detach(), s1(x, y).detach(), rtol=1e-5, atol=1e-6)
    assert _replays(s2) == 1 and any(_direct_ops(s2)["linear"])
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert_close(p2.detach(), p1.detach(), rtol=1e-5, atol=1e-6)


def test_kernel_that_calls_ops_replays_through_its_python(cpu_c):
    """A kernel that calls other ops (here relu, whose C call notes itself) and does more work after them: the one
    note does not describe the whole call, so the replay runs the kernel."""
    from core import library
    from core.dispatch import TensorSpec

    name = "capturetest::relu_plus_one"
    if name not in core.dispatch.OPERATORS:
        library.define(name, meta=lambda x: TensorSpec(x.shape, x.dtype, x.device))

        @library.impl(name, "cpu")
        def relu_plus_one(spec, x):
            y = core.relu(x)
            y.numpy()[...] += 1  # NumPy's write into the output: no op, no note
            return y

    op = core.dispatch.get_operator(name)

    def f(x):
        with core.no_grad():
            return op(x) * 2

    compiled = core.compile(f, mode="reduce-overhead")
    xs = _data("cpu")[0]
    for x in xs[:4]:
        assert_close(compiled(x), (x.relu() + 1) * 2)
    assert not any(_direct_ops(compiled)[name])
