"""core.compile: compiled vs eager outputs and gradients, guards (shapes, Python values, globals, closures,
training flags, requires_grad), re-capture on a guard miss, eager fallback on graph breaks, the cache limit,
backends (names and a custom callable), decorators, Module.compile and core.compiler's helpers."""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest

import core
import core.nn as nn
from core._dynamo.exc import FailOnRecompileLimitHit, InvalidBackend, Unsupported
from core.testing import assert_close, to_numpy

FLAG = True  # read by global_branch: a global the compiled code depends on
CONFIG = {"scale": 2.0}  # a global dict of simple values, guarded by its items
SETTINGS = types.SimpleNamespace(shift=1.0)  # a global object whose attributes the code names are guarded


@pytest.fixture(autouse=True)
def fresh_compiler():
    core.compiler.reset()
    yield
    core.compiler.reset()


def _tensor(device, *shape, requires_grad=False):
    rng = np.random.default_rng(sum(shape))
    return core.tensor(rng.standard_normal(shape).astype(np.float32), device=device, requires_grad=requires_grad)


class Counting:
    """A custom backend: counts compilations and runs, keeps the graph module and example inputs."""

    def __init__(self):
        self.compiles = self.runs = 0
        self.modules, self.examples = [], []

    def __call__(self, gm, example_inputs):
        self.compiles += 1
        self.modules.append(gm)
        self.examples.append(example_inputs)
        print(gm.graph)

        def run(*inputs):
            self.runs += 1
            return gm.forward(*inputs)

        return run


def test_compiled_function_equals_eager_and_replays_the_graph(device, capsys):
    def fn(x, y):
        return (x * y).relu() + 1.5 * x.sin()

    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    x, y = _tensor(device, 3, 4), _tensor(device, 4)
    for _ in range(3):
        assert_close(compiled(x, y), fn(x, y))
    assert (backend.compiles, backend.runs) == (1, 2)  # the capture run is the first call's result
    assert [e.shape for e in backend.examples[0]] == [(3, 4), (4,)]
    printed = capsys.readouterr().out
    assert "mul(" in printed and "relu(" in printed and "sin(" in printed
    gm = backend.modules[0]
    assert "def forward(self, input0, input1):" in gm.code and "ops.relu(" in gm.code
    assert_close(gm.forward(x, y), fn(x, y))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager", "eager"])
def test_named_backends_equal_eager(device, backend):
    def fn(x):
        return ((x * 2.0 + 1.0).tanh() - x).abs().sum(1)

    compiled = core.compile(fn, backend=backend)
    for _ in range(2):
        x = _tensor(device, 5, 6)
        assert_close(compiled(x), fn(x), rtol=1e-5, atol=1e-6)


def test_python_int_argument_is_guarded(device):
    def fn(x, n):
        return x * 2 if n > 0 else x - 3

    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    x = _tensor(device, 4)
    for n in (1, -1, 1, -1, 5):
        assert_close(compiled(x, n), fn(x, n))
    assert backend.compiles == 3  # 1, -1 and 5: one graph per value the trace depended on


def test_branch_on_shape_is_guarded(device):
    def fn(x):
        return x.sum(0) if x.shape[0] > 2 else x * 10

    compiled = core.compile(fn)
    for rows in (2, 5, 2, 5):
        x = _tensor(device, rows, 3)
        assert_close(compiled(x), fn(x))


def global_branch(x):
    return x + 1 if FLAG else x - 1


def test_global_flag_is_guarded(device, monkeypatch):
    compiled = core.compile(global_branch)
    x = _tensor(device, 3)
    assert_close(compiled(x), x + 1)
    monkeypatch.setattr(sys.modules[__name__], "FLAG", False)
    assert_close(compiled(x), x - 1)
    monkeypatch.setattr(sys.modules[__name__], "FLAG", True)
    assert_close(compiled(x), x + 1)


def test_global_read_by_a_called_helper_and_closure_values_are_guarded(device, monkeypatch):
    scale = [2.0]

    def make(factor):
        def fn(x):
            return global_branch(x) * factor

        return fn

    x = _tensor(device, 3)
    compiled = core.compile(make(scale[0]))
    assert_close(compiled(x), (x + 1) * 2.0)
    monkeypatch.setattr(sys.modules[__name__], "FLAG", False)
    assert_close(compiled(x), (x - 1) * 2.0)

    factor = 1.0

    def closure(x):
        return x * factor

    compiled = core.compile(closure)
    assert_close(compiled(x), x)
    factor = 3.0
    assert_close(compiled(x), x * 3.0)


def test_data_dependent_control_flow_falls_back_to_eager_with_one_warning(device):
    def fn(x):
        return x * 2 if x.sum().item() > 0 else x * -5

    compiled = core.compile(fn)
    pos, neg = _tensor(device, 3).abs() + 0.1, -_tensor(device, 3).abs() - 0.1
    with pytest.warns(UserWarning, match="graph break.*value into Python"):
        assert_close(compiled(pos), pos * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(compiled(neg), neg * -5)
        assert_close(compiled(pos), pos * 2)
    with pytest.raises(Unsupported, match="fullgraph=True.*value into Python"):
        core.compile(fn, fullgraph=True)(pos)


def test_disabled_function_breaks_the_graph(device):
    calls = []

    @core.compiler.disable
    def log(x):
        calls.append(core.compiler.is_compiling())
        return x

    def fn(x):
        return log(x * 2) + 1

    x = _tensor(device, 3)
    with pytest.warns(UserWarning, match="core.compiler.disable"):
        assert_close(core.compile(fn)(x), x * 2 + 1)
    with pytest.raises(Unsupported, match="disable"):
        core.compile(fn, fullgraph=True)(x)
    assert core.compile(log) is log  # compiling a disabled function leaves it as it is


def test_cache_size_limit_falls_back_to_eager(device, monkeypatch):
    monkeypatch.setattr(core._dynamo.config, "cache_size_limit", 2)

    def fn(x):
        return x.exp() * x.shape[0]

    backend = Counting()
    compiled = core.compile(fn, backend=backend, dynamic=False)  # one graph per shape
    with pytest.warns(UserWarning, match="cache_size_limit"):
        for rows in (1, 2, 3, 4, 1):
            x = _tensor(device, rows, 2)
            assert_close(compiled(x), fn(x), rtol=1e-5, atol=1e-6)
    assert backend.compiles == 2
    strict = core.compile(fn, fullgraph=True, dynamic=False)
    strict(_tensor(device, 1, 2))
    strict(_tensor(device, 2, 2))
    assert_close(strict(_tensor(device, 1, 2)), fn(_tensor(device, 1, 2)))  # cached graphs still run
    with pytest.raises(FailOnRecompileLimitHit, match="cache_size_limit \\(2\\) reached with fullgraph=True"):
        strict(_tensor(device, 3, 2))


def test_is_compiling_reset_and_dynamo_reset(device):
    seen = []
    record = seen.append  # a list itself would be guarded by its items (and change at every call)

    def fn(x):
        record(core.compiler.is_compiling())  # a Python side effect: it happens when a graph is captured
        return x + 1

    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    x = _tensor(device, 2)
    compiled(x)
    compiled(x)
    assert seen == [True] and not core.compiler.is_compiling()
    core.compiler.reset()
    compiled(x)
    core._dynamo.reset()
    compiled(x)
    assert backend.compiles == 3


def test_decorators_and_options():
    @core.compile
    def plain(x):
        return x * 3

    @core.compile(backend="eager", mode="reduce-overhead")
    def configured(x):
        return x - 3

    x = core.tensor([1.0, 2.0])
    assert_close(plain(x), core.tensor([3.0, 6.0]))
    assert_close(configured(x), core.tensor([-2.0, -1.0]))
    assert plain.__name__ == "plain"

    def fn(x):
        return x

    assert core.compile(fn, disable=True) is fn
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        core.compile(fn, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        core.compile(fn, mode="default", options={})
    with pytest.raises(InvalidBackend, match="Invalid backend: 'nope'"):
        core.compile(fn, backend="nope")
    with pytest.raises(TypeError, match="dynamic"):
        core.compile(fn, dynamic="yes")
    with pytest.raises(RuntimeError, match="expected a function or a Module"):
        core.compile(3)
    assert core.compiler.list_backends() == ["inductor"]
    assert core._dynamo.list_backends(exclude_tags=()) == ["aot_eager", "eager", "inductor"]


def test_keyword_and_nested_arguments(device):
    def fn(pair, *, scale=1.0, extra=None):
        a, b = pair
        out = a * b * scale
        return {"out": out, "extra": None if extra is None else extra + out}

    compiled = core.compile(fn)
    a, b, c = _tensor(device, 2, 3), _tensor(device, 3), _tensor(device, 2, 3)
    for kwargs in ({}, {"scale": 2.0}, {"scale": 2.0, "extra": c}, {}):
        got, want = compiled((a, b), **kwargs), fn((a, b), **kwargs)
        assert_close(got["out"], want["out"])
        assert (got["extra"] is None) == (want["extra"] is None)
        if want["extra"] is not None:
            assert_close(got["extra"], want["extra"])


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.scale = 2.0

    def forward(self, x):
        y = self.linear(x) * self.scale
        return y.relu() if self.training else y.sigmoid()


def test_optimized_module_guards_training_flag_and_attributes(device):
    core.manual_seed(0)
    model = Branchy().to(device)
    compiled = core.compile(model)
    assert type(compiled).__name__ == "OptimizedModule" and compiled._orig_mod is model
    assert list(compiled.state_dict()) == ["_orig_mod.linear.weight", "_orig_mod.linear.bias"]
    assert compiled.linear is model.linear and compiled.scale == 2.0  # attributes reach the original
    x = _tensor(device, 5, 4)
    with core.no_grad():
        for mode in (True, False, True):
            compiled.train(mode)
            assert model.training is mode
            assert_close(compiled(x), model(x))
        model.scale = 0.5
        assert_close(compiled(x), model(x))
        model.linear.weight.mul_(2.0)  # parameters are bound by name at every call
        assert_close(compiled(x), model(x))


def test_module_compile_in_place(device):
    core.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    reference = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    reference.load_state_dict(model.state_dict())
    backend = Counting()
    model.compile(backend=backend)
    assert list(model.state_dict()) == list(reference.state_dict())
    x = _tensor(device, 3, 4)
    with core.no_grad():
        for _ in range(2):
            assert_close(model(x), reference(x), rtol=1e-5, atol=1e-6)
    assert (backend.compiles, backend.runs) == (1, 1)


def test_buffers_are_updated_once_per_call(device):
    core.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6)).to(device)
    reference = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6)).to(device)
    reference.load_state_dict(model.state_dict())
    compiled = core.compile(model)
    for _ in range(3):
        x = _tensor(device, 8, 4)
        assert_close(compiled(x), reference(x), rtol=1e-5, atol=1e-5)
    assert_close(model[1].running_mean, reference[1].running_mean, rtol=1e-5, atol=1e-6)
    assert int(model[1].num_batches_tracked) == 3


@pytest.mark.parametrize("backend", ["inductor", "eager"])
def test_gradients_through_a_compiled_module_equal_eager(device, backend):
    core.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(device)
    reference = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(device)
    reference.load_state_dict(model.state_dict())
    compiled = core.compile(model, backend=backend)
    for _ in range(2):  # the capture call, then a replay
        x = _tensor(device, 4, 6)
        model.zero_grad()
        reference.zero_grad()
        compiled(x).square().sum().backward()
        reference(x).square().sum().backward()
        for got, want in zip(model.parameters(), reference.parameters()):
            np.testing.assert_allclose(to_numpy(got.grad), to_numpy(want.grad), rtol=1e-4, atol=1e-5)


def test_requires_grad_is_guarded_and_gradcheck_float64():
    w = core.tensor(np.random.default_rng(0).standard_normal((4, 3)), requires_grad=True)

    def fn(a, b):
        return (core.tanh(a @ w) * b.sigmoid()).sum(1)

    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    rng = np.random.default_rng(1)
    a, b = core.tensor(rng.standard_normal((2, 4))), core.tensor(rng.standard_normal((2, 3)))
    compiled(a, b)
    a.requires_grad_(True)
    b.requires_grad_(True)
    assert core.autograd.gradcheck(compiled, (a, b))
    assert backend.compiles == 2
    compiled(a, b).sum().backward()
    assert w.grad is not None and w.grad.shape == (4, 3)


def test_autocast_state_and_default_dtype_are_guarded():
    compiled = core.compile(lambda x, w: x @ w)
    x, w = core.randn(2, 4), core.randn(4, 3)
    assert compiled(x, w).dtype is core.float32
    with core.autocast("cpu", dtype=core.bfloat16):
        assert compiled(x, w).dtype is core.bfloat16
    assert compiled(x, w).dtype is core.float32

    with_ones = core.compile(lambda x: x + core.ones(3))
    assert with_ones(x.sum(0)[:3]).dtype is core.float32
    previous = core.get_default_dtype()
    core.set_default_dtype(core.float64)
    try:
        assert with_ones(x.sum(0)[:3]).dtype is core.float64
    finally:
        core.set_default_dtype(previous)


def test_compiled_function_inside_jit_trace_is_recorded():
    compiled = core.compile(lambda x: (x * 2).relu())
    x = core.randn(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traced = core.jit.trace(lambda x: compiled(x) + 1, x)
    assert [n.op for n in traced.raw_graph.nodes] == ["mul", "relu", "add"]
    assert_close(traced(x), (x * 2).relu() + 1)


def test_captured_tensors_are_guarded_by_identity_and_version(device):
    table = _tensor(device, 3)

    def fn(x):
        return x * table

    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    x = _tensor(device, 3)
    assert_close(compiled(x), x * table)
    with core.no_grad():
        table.mul_(2.0)  # written in place: the trace's snapshot is stale
    assert_close(compiled(x), x * table)
    table = _tensor(device, 3) + 5.0  # replaced
    assert_close(compiled(x), x * table)

    weight = core.tensor(np.ones(3, np.float32), device=device, requires_grad=True)
    by_reference = core.compile(lambda x: x * weight, backend=backend)
    compiles = backend.compiles
    for _ in range(3):
        assert_close(by_reference(x), x * weight)
        with core.no_grad():
            weight.add_(1.0)  # an optimizer step: the graph binds the weight, no new capture
    assert backend.compiles == compiles + 1


def test_module_tensor_attribute_is_guarded(device):
    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.mask = core.tensor([1.0, 0.0, 1.0], device=device)  # a plain attribute: not a buffer

        def forward(self, x):
            return x * self.mask

    model = Masked()
    compiled = core.compile(model)
    x = _tensor(device, 3)
    assert_close(compiled(x), x * model.mask)
    model.mask = core.tensor([0.0, 2.0, 0.0], device=device)
    assert_close(compiled(x), x * model.mask)


def configured(x):
    return x * CONFIG["scale"] + SETTINGS.shift


def test_global_dict_and_object_attributes_are_guarded(device):
    compiled = core.compile(configured)
    x = _tensor(device, 3)
    assert_close(compiled(x), x * 2.0 + 1.0)
    CONFIG["scale"] = 3.0
    try:
        assert_close(compiled(x), x * 3.0 + 1.0)
        SETTINGS.shift = -4.0
        assert_close(compiled(x), x * 3.0 - 4.0)
    finally:
        CONFIG["scale"], SETTINGS.shift = 2.0, 1.0
    assert_close(compiled(x), x * 2.0 + 1.0)


def test_errors_of_the_program_propagate_and_leave_no_capture_running(device):
    def fn(x, y):
        return x + y

    compiled = core.compile(fn)
    with pytest.raises(RuntimeError):
        compiled(_tensor(device, 3), _tensor(device, 4))
    assert not core.compiler.is_compiling()
    x = _tensor(device, 3)
    assert_close(compiled(x, x), x + x)


def test_parameter_shapes_are_guarded(device):
    class Sized(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(core.ones(2, device=device))

        def forward(self, x):
            return x.sum() * self.weight.shape[0] + self.weight.sum()

    model = Sized()
    compiled = core.compile(model)
    x = _tensor(device, 3)
    with core.no_grad():
        assert_close(compiled(x), model(x))
        model.weight = nn.Parameter(core.full((4,), 0.5, device=device))
        assert_close(compiled(x), model(x))


def test_random_ops_draw_fresh_numbers_like_eager(device):
    core.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5)).to(device).train()
    compiled = core.compile(model)
    x = _tensor(device, 4, 8)
    with core.no_grad():
        compiled(x)  # the capture
        core.manual_seed(3)
        replayed = compiled(x)
        core.manual_seed(3)
        assert_close(replayed, model(x))
        assert not np.array_equal(to_numpy(compiled(x)), to_numpy(replayed))  # not baked in


def test_compiled_cnn_outputs_and_gradients_equal_eager(device):
    def make():
        core.manual_seed(0)
        return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(4 * 3 * 3, 5)).to(device)

    model, reference = make(), make()
    compiled = core.compile(model)
    for _ in range(2):
        x = _tensor(device, 2, 1, 8, 8)
        model.zero_grad()
        reference.zero_grad()
        out, want = compiled(x), reference(x)
        assert_close(out, want, rtol=1e-4, atol=1e-5)
        out.square().sum().backward()
        want.square().sum().backward()
        for got, expected in zip(model.parameters(), reference.parameters()):
            np.testing.assert_allclose(to_numpy(got.grad), to_numpy(expected.grad), rtol=1e-4, atol=1e-5)


def test_bound_method_attributes_are_guarded(device):
    class Scaler:
        def __init__(self):
            self.factor = 2.0

        def apply(self, x):
            return x * self.factor

    scaler = Scaler()
    compiled = core.compile(scaler.apply)
    x = _tensor(device, 3)
    assert_close(compiled(x), x * 2.0)
    scaler.factor = -1.0
    assert_close(compiled(x), -x)
