"""core.compile with dynamic shapes: dynamic=None (a dimension turns dynamic at its second size), True, False and
core._dynamo.mark_dynamic; one graph serving every batch size, outputs and gradients equal to eager, fused
kernels at new sizes, and the guards that must fail (branches, loops and reshapes that computed from a size)."""

from __future__ import annotations

import numpy as np
import pytest

import core
import core.nn as nn
from core.jit.fused import STATS
from core.jit.ir import SymSize
from core.plugins import manager
from core.testing import assert_close

BATCHES = (4, 7, 9, 4, 16, 7)


@pytest.fixture(autouse=True)
def fresh_compiler():
    core.compiler.reset()
    yield
    core.compiler.reset()


def _tensor(device, *shape, requires_grad=False, dtype=np.float32):
    rng = np.random.default_rng(sum(shape))
    return core.tensor(rng.standard_normal(shape).astype(dtype), device=device, requires_grad=requires_grad)


class Counting:
    """A custom backend that counts the graphs it is given and keeps them."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm.graph)
        return gm.forward

    @property
    def compiles(self) -> int:
        return len(self.graphs)


def _symbols(graph) -> set:
    found = set()

    def walk(obj):
        if isinstance(obj, SymSize):
            found.add((obj.input, obj.dim))
        elif isinstance(obj, (tuple, list)):
            for x in obj:
                walk(x)
        elif isinstance(obj, dict):
            for x in obj.values():
                walk(x)

    for node in graph.nodes:
        walk(node.args)
        walk(node.kwargs)
    return found


def _mlp(device):
    core.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)


def _flatten_then_mlp(model):
    def fn(x):
        return model(x.view(x.size(0), -1)).tanh() * 2 + 1  # the reshape used the batch size

    return fn


@pytest.mark.parametrize("dynamic, graphs", [(None, 2), (True, 1), (False, 4)])
def test_graphs_per_batch_size(device, dynamic, graphs):
    fn = _flatten_then_mlp(_mlp(device))
    backend = Counting()
    compiled = core.compile(fn, backend=backend, dynamic=dynamic)
    for b in BATCHES:
        x = _tensor(device, b, 3, 4)
        assert_close(compiled(x), fn(x))
    assert backend.compiles == graphs
    if dynamic is not False:  # the last graph reads the batch size at run time in its reshape
        assert _symbols(backend.graphs[-1]) == {(0, 0)}
        assert "s0.size(0)" in str(backend.graphs[-1])
    else:
        assert all(not _symbols(g) for g in backend.graphs)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager", "eager"])
def test_named_backends_serve_every_batch_size(device, backend):
    fn = _flatten_then_mlp(_mlp(device))
    compiled = core.compile(fn, backend=backend)
    for b in BATCHES:
        x = _tensor(device, b, 3, 4)
        assert_close(compiled(x), fn(x))
        with core.no_grad():
            assert_close(compiled(x), fn(x))
    assert compiled.graphs == 4  # with and without grad: two guard sets, each one static then one dynamic graph


def test_fused_kernels_run_at_new_sizes(device):
    def fn(x, a):
        return ((x * 2.0 + a).relu() * 3 - 1).sum(1)

    compiled = core.compile(fn, dynamic=True)
    a = _tensor(device, 5)
    dev = core.device(device)
    fuses = manager.runtime_for(dev.type).supports_fusion(dev)
    for b in (4, 8, 6, 8):
        x = _tensor(device, b, 5)
        before = STATS["kernel"]
        assert_close(compiled(x, a), fn(x, a), rtol=1e-5, atol=1e-5)
        if fuses and b != 4:  # the first call of a size is its capture (eager); later ones launch kernels
            assert_close(compiled(x, a), fn(x, a), rtol=1e-5, atol=1e-5)
            assert STATS["kernel"] > before
    assert compiled.graphs == 1


def test_training_with_a_smaller_last_batch_matches_eager_gradients(device):
    model, reference = _mlp(device), _mlp(device)
    compiled = core.compile(model)
    for b in (8, 8, 5, 8, 3):
        x, target = _tensor(device, b, 12), _tensor(device, b, 3)
        for m, run in ((model, compiled), (reference, reference)):
            m.zero_grad()
            loss = ((run(x) - target) ** 2).mean()
            loss.backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
    assert compiled._compiled.graphs == 2


def test_mark_dynamic_makes_the_first_graph_dynamic(device):
    fn = _flatten_then_mlp(_mlp(device))
    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    for b in BATCHES:
        x = _tensor(device, b, 3, 4)
        core._dynamo.mark_dynamic(x, 0)
        assert_close(compiled(x), fn(x))
    assert backend.compiles == 1 and _symbols(backend.graphs[0]) == {(0, 0)}
    with pytest.raises(IndexError, match="mark_dynamic: dimension 3 out of range for a tensor of 3 dimensions"):
        core._dynamo.mark_dynamic(x, 3)
    core._dynamo.maybe_mark_dynamic(x, [-1, 1])
    assert x._dynamo_dynamic_indices == {0, 1, 2}


def test_a_size_that_coincides_with_a_constant_is_not_kept_symbolic(device):
    def fn(x):
        return (x * x.shape[0]).sum(1, keepdim=True).repeat(1, 4)  # 4 is a constant: at batch 4 it looks like
        # the batch size

    backend = Counting()
    compiled = core.compile(fn, backend=backend, dynamic=True)
    for b in (4, 8, 12, 8, 4):
        x = _tensor(device, b, 6)
        assert_close(compiled(x), fn(x))
    assert backend.compiles == 2  # the batch-4 template is wrong for batch 8: made again from batch 8's trace
    assert _symbols(backend.graphs[-1]) == {(0, 0)}
    assert "empty((s0.size(0), 4)" in str(backend.graphs[-1])  # repeat allocates its result


def _branch(x):
    return x.sum(0) if x.shape[0] > 8 else x * 10


def _loop(x):
    acc = x[0]
    for i in range(1, x.shape[0]):
        acc = acc * x[i]
    return acc


def _half(x):
    return x.view(x.size(0) // 2, -1)


def _clamped(x):
    return x[:min(x.shape[0], 6)] * 2


@pytest.mark.parametrize("fn", [_branch, _loop, _half, _clamped])
def test_guards_fail_where_the_program_depends_on_the_size(device, fn):
    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    for b in (4, 6, 12, 10, 4, 12):
        x = _tensor(device, b, 3)
        assert_close(compiled(x), fn(x))
    assert backend.compiles == 4  # 4, 6, 12, 10: each size its own graph (a template would have been wrong)


def test_rank_dtype_and_size_one_get_graphs_of_their_own(device):
    def fn(x, y):
        return (x + y).relu().sum(1)

    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    calls = [((4, 3), (4, 3)), ((6, 3), (6, 3)), ((9, 3), (9, 3)),  # the batch turns dynamic: 2 graphs
             ((5, 3), (1, 3)),  # a size of 1 broadcasts: specialized, as in torch
             ((5, 3), (5, 3))]  # served by the dynamic graph
    for xs, ys in calls:
        x, y = _tensor(device, *xs), _tensor(device, *ys)
        assert_close(compiled(x, y), fn(x, y))
    assert backend.compiles == 3
    x64 = _tensor(device, 7, 3, dtype=np.float64)
    assert_close(compiled(x64, x64), fn(x64, x64))
    assert backend.compiles == 4
    x3 = _tensor(device, 7, 3, 2)
    assert_close(compiled(x3, x3), fn(x3, x3))
    assert backend.compiles == 5


def test_two_inputs_whose_sizes_were_equal_may_differ(device):
    def fn(x, y):
        return x.view(x.shape[0], -1).sum(1) + y.view(y.shape[0], -1).sum(1).mean()

    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    for bx, by in ((4, 4), (6, 6), (6, 9), (8, 5), (8, 5)):
        x, y = _tensor(device, bx, 2), _tensor(device, by, 2)
        assert_close(compiled(x, y), fn(x, y), rtol=1e-5, atol=1e-6)
    assert backend.compiles <= 4


def test_a_dynamic_graph_serves_new_sizes_past_the_cache_size_limit(device, monkeypatch):
    monkeypatch.setattr(core._dynamo.config, "cache_size_limit", 2)
    fn = _flatten_then_mlp(_mlp(device))
    backend = Counting()
    compiled = core.compile(fn, backend=backend)
    for b in (4, 7, 9, 11, 13, 4):
        x = _tensor(device, b, 3, 4)
        assert_close(compiled(x), fn(x))
    assert backend.compiles == 2
    with pytest.warns(UserWarning, match="cache_size_limit \\(2\\) reached"):
        with core.no_grad():  # grad mode is guarded: a third graph would be needed, so this runs eagerly
            assert_close(compiled(x), fn(x))
    assert backend.compiles == 2
