"""The classic graph passes of ``core.jit``: simplify, constant_fold, cse, dce — every rule and every refusal.

Each test traces (or builds) a graph, runs one pass on a copy, checks which nodes are left and that the
rewritten graph computes what the original (and eager code) computes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import core
import core.jit as jit
import core.nn as nn
import core.nn.functional as F
from core import library
from core.jit.interpreter import Program
from core.jit.ir import Graph
from core.jit.passes import constant_fold, cse, dce, functionalize, optimize, simplify
from core.jit.passes.constant_fold import FOLD_LIMIT
from core.testing import assert_close, to_numpy

MY_PASSES = ["simplify", "constant_fold", "cse", "dce"]


def traced(fn, *inputs) -> Graph:
    """The unoptimised graph of ``fn`` on ``inputs``."""
    return jit.trace(fn, inputs, optimize=False).raw_graph


def ops(graph: Graph) -> list:
    return [n.op for n in graph.nodes]


def run(graph: Graph, *inputs, params=None):
    return Program(graph).run(list(inputs), params or {})


def flat(result) -> list:
    return [result] if isinstance(result, core.Tensor) else [t for r in result for t in flat(r)]


def assert_same(graph: Graph, rewritten: Graph, *inputs, params=None):
    """The rewritten graph is valid and computes what ``graph`` computes (on fresh copies of the inputs)."""
    rewritten.validate()
    expected = flat(run(graph, *[x.clone() for x in inputs], params=params))
    actual = flat(run(rewritten, *[x.clone() for x in inputs], params=params))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e)


def rewrite(pass_fn, fn, *inputs, then=()):
    """Trace ``fn``, run ``pass_fn`` (then the passes in ``then``) on a copy; check the numbers; the new graph."""
    graph = traced(fn, *inputs)
    rewritten = pass_fn(graph.copy())
    for extra in then:
        rewritten = extra(rewritten)
    assert_same(graph, rewritten, *inputs)
    return rewritten


def x23():
    return core.tensor([[1.5, -2.0, 0.25], [3.0, -0.5, 4.0]])


# -- dce ---------------------------------------------------------------------------------------------------------------
def test_dce_removes_dead_chains_and_their_constants():
    c = core.tensor([1.0, 2.0, 3.0])

    def f(x):
        (x * c).exp().sum()  # dead, reads a constant
        return x + 1

    graph = rewrite(dce, f, core.tensor([1.0, 2.0, 3.0]))
    assert ops(graph) == ["add"]
    assert graph.constants == {}


def test_dce_keeps_in_place_writes_whose_result_nobody_reads():
    def f(x, y):
        y.copy_(x * 2)
        return x + 1

    x, y = core.tensor([1.0, 2.0]), core.zeros(2)
    graph = dce(traced(f, x, y))
    assert ops(graph) == ["mul", "copy_", "add"]
    run(graph, x, y)
    assert_close(y, x * 2)


@pytest.mark.parametrize("alloc", ["empty", "jit::empty"])  # jit::empty: graphs saved before empty was an op
def test_dce_keeps_random_ops_and_drops_unread_allocations(alloc):
    graph = Graph()
    x = graph.add_input((4,), core.float32, core.device("cpu"))
    probs = graph.create_node("softmax", (x, 0), {}, [((4,), core.float32, x.device)]).outputs[0]
    graph.create_node("multinomial", (probs, 2), {}, [((2,), core.int64, x.device)])  # unread, but random
    graph.create_node(alloc, ((4,), core.float32, x.device), {}, [((4,), core.float32, x.device)])  # unread
    buf = graph.create_node(alloc, ((4,), core.float32, x.device), {}, [((4,), core.float32, x.device)]).outputs[0]
    graph.create_node("bernoulli_", (buf, 0.5), {}, [((4,), core.float32, x.device)])  # in-place, unread
    graph.output = x
    assert ops(dce(graph.copy())) == ["softmax", "multinomial", alloc, "bernoulli_"]


# -- constant_fold -----------------------------------------------------------------------------------------------------
def test_constant_fold_folds_chains_of_constants_and_fills(device):
    c = core.tensor([1.0, 2.0, 3.0], device=device)

    def f(x):
        return x + ((core.ones(3, device=device) * 2 + c).exp() - 1)

    x = core.tensor([0.5, 0.25, -1.0], device=device)
    graph = rewrite(constant_fold, f, x, then=[dce])
    assert ops(graph)[:3] == ["empty", "fill_", "mul"]  # a written allocation is no constant
    graph = rewrite(lambda g: constant_fold(functionalize(g)), f, x, then=[dce])
    assert ops(graph) == ["add"]
    (folded, tensor), = graph.constants.values()
    assert folded.device == tensor.device == x.device
    assert_close(tensor, (core.ones(3, device=device) * 2 + c).exp() - 1)


def test_constant_fold_runs_multi_output_ops():
    c = core.tensor([3.0, 1.0, 2.0])
    graph = rewrite(constant_fold, lambda x: x + core.sort(c)[0] * core.sort(c)[1], core.tensor([1.0, 2.0, 3.0]),
                    then=[dce])
    assert ops(graph) == ["add"]


def test_constant_fold_stores_views_of_constants_as_contiguous_copies():
    c = core.arange(6.0).reshape(2, 3)
    for view, x in ((lambda c: c.t(), core.zeros(3, 2)), (lambda c: c[1], core.zeros(3))):
        graph = traced(lambda x, view=view: x + view(c), x)
        (_, captured), = graph.constants.values()
        folded = dce(constant_fold(graph.copy()))
        assert ops(folded) == ["add"]
        (_, tensor), = folded.constants.values()
        assert tensor.is_contiguous() and tensor._storage is not captured._storage
        assert_same(graph, folded, x)


def test_constant_fold_refuses_results_much_larger_than_their_inputs():
    scalar = core.tensor(2.0)
    big = (FOLD_LIMIT // 64 + 1, 64)
    graph = rewrite(constant_fold, lambda x: x + scalar.expand(*big), core.zeros(*big))
    assert ops(graph) == ["expand", "add"]
    graph = rewrite(lambda g: constant_fold(functionalize(g)), lambda x: x + core.zeros(*big), core.zeros(*big))
    assert ops(graph) == ["jit::full", "add"]
    small = rewrite(constant_fold, lambda x: x + scalar.expand(4, 3), core.zeros(4, 3), then=[dce])
    assert ops(small) == ["add"]


def test_constant_fold_refuses_returned_values():
    c = core.tensor([1.0, 2.0])
    graph = rewrite(constant_fold, lambda x: (x + 1, c * 2), core.zeros(2))
    assert ops(graph) == ["add", "mul"]
    program = Program(graph)
    first = program.run([core.zeros(2)], {})[1]
    first.fill_(7.0)  # the caller owns what it is given: the next call must not see this
    assert_close(program.run([core.zeros(2)], {})[1], c * 2)


def test_constant_fold_refuses_values_written_in_place():
    c = core.tensor([1.0, 2.0])

    def f(x):
        y = c * 2
        y.copy_(y + x)
        return y * 1

    graph = traced(f, core.ones(2))
    folded = constant_fold(graph.copy())
    assert ops(folded) == ops(graph)
    program = Program(folded)
    for _ in range(2):  # a folded, then mutated constant would drift from call to call
        assert_close(program.run([core.ones(2)], {}), core.tensor([3.0, 5.0]))


def test_constant_fold_leaves_impure_nodes():
    graph = rewrite(lambda g: constant_fold(functionalize(g)), lambda x: x + core.rand(3) * 0, core.zeros(3))
    assert "uniform_" in ops(graph) and "empty" in ops(graph)


# -- cse ---------------------------------------------------------------------------------------------------------------
def test_cse_merges_duplicate_chains():
    graph = rewrite(cse, lambda x: (x * 2).exp() + (x * 2).exp() + x.sum(0, keepdim=True) * x.sum(0, keepdim=True),
                    x23())
    assert ops(graph) == ["mul", "exp", "add", "sum", "mul", "add"]


def test_cse_compares_literals_by_type_and_bits():
    def f(x):
        return x * 1 + x * 1.0 + x * True, 1 / (x + 0.0) - 1 / (x + -0.0), x * math.nan + x * math.nan

    x = core.tensor([-0.0, 1.0, 2.0])
    graph = rewrite(cse, f, x)  # 1/(-0.0 + 0.0) - 1/(-0.0 + -0.0) is inf, merged it would be nan
    assert ops(graph).count("mul") == 4  # 1, 1.0 and True differ; the two NaN literals merge
    assert ops(graph).count("add") == 2 + 2 + 1
    assert run(graph, x)[1][0].item() == math.inf


def test_cse_skips_arguments_it_cannot_compare():
    graph = Graph()
    x = graph.add_input((3,), core.float32, core.device("cpu"))
    a = graph.create_node("mul", (x, np.float32(2)), {}, [((3,), core.float32, x.device)]).outputs[0]
    b = graph.create_node("mul", (x, np.float32(2)), {}, [((3,), core.float32, x.device)]).outputs[0]
    graph.create_node("add", (a, b), {}, [((3,), core.float32, x.device)])
    graph.output = graph.nodes[-1].outputs[0]
    assert ops(cse(graph.copy())) == ["mul", "mul", "add"]


def test_cse_does_not_merge_reads_of_a_value_across_a_write_to_it():
    def f(x, y):
        v = y.view(6)
        a = v * 2
        y.copy_(x)
        return a - v * 2

    graph = rewrite(cse, f, x23(), core.ones(2, 3))
    assert ops(graph).count("mul") == 2


def test_cse_merges_reads_of_values_nobody_writes_across_writes_elsewhere():
    def f(x):
        buf = core.empty(3)
        buf.copy_(x)
        return x * 2 + buf + x * 2

    graph = rewrite(cse, f, core.tensor([1.0, 2.0, 3.0]))
    assert ops(graph).count("mul") == 1


def test_cse_does_not_merge_values_written_in_place():
    def f(x):
        a, b = x * 2, x * 2
        b.copy_(x)
        return a + b

    graph = rewrite(cse, f, core.tensor([1.0, 2.0, 3.0]))
    assert ops(graph).count("mul") == 2
    assert_close(run(graph, core.tensor([1.0, 2.0, 3.0])), core.tensor([3.0, 6.0, 9.0]))


def test_cse_does_not_return_one_tensor_twice():
    graph = rewrite(cse, lambda x: (x * 2, x * 2, (x * 3).exp() + (x * 3).exp()), x23())
    assert ops(graph) == ["mul", "mul", "mul", "exp", "add"]
    a, b, _ = run(graph, x23())
    assert a is not b


# -- simplify ----------------------------------------------------------------------------------------------------------
IDENTITIES = {
    "x * 1": lambda x: (x * 1).exp(),
    "1 * x": lambda x: (1 * x).exp(),
    "x * True": lambda x: (x * True).exp(),
    "x / 1": lambda x: (x / 1.0).exp(),
    "x ** 1": lambda x: (x ** 1).exp(),
    "x - 0": lambda x: (x - 0).exp(),
    "x + -0.0": lambda x: (x + -0.0).exp(),
    "-0.0 + x": lambda x: (-0.0 + x).exp(),
    "neg(neg(x))": lambda x: x.neg().neg().exp(),
    "t(t(x))": lambda x: x.t().t().exp(),
    "transpose(transpose(x, 0, 1), 1, 0)": lambda x: x.transpose(0, 1).transpose(1, 0).exp(),
    "transpose(x, 1, 1)": lambda x: x.transpose(1, -1).exp(),
    "permute(permute(x))": lambda x: x.permute(1, 0).permute(1, 0).exp(),
    "transpose(permute(x))": lambda x: x.permute(-1, 0).transpose(0, 1).exp(),
}


@pytest.mark.parametrize("rule", IDENTITIES)
def test_simplify_bypasses_identities(rule):
    graph = rewrite(simplify, IDENTITIES[rule], x23(), then=[dce])
    assert ops(graph) == ["exp"]


@pytest.mark.parametrize("fn", [lambda x: (x + 0) * 3, lambda x: (0 + x) * 3, lambda x: (x + False) * 3,
                                lambda x: (x * 1) * 3, lambda x: (x ** 1) * 3, lambda x: x.neg().neg() * 3])
def test_simplify_bypasses_identities_of_integer_tensors(fn):
    graph = rewrite(simplify, fn, core.tensor([[1, -2, 3]]), then=[dce])
    assert ops(graph) == ["mul"]


def test_simplify_merges_permutations_into_one():
    x = core.arange(24.0).reshape(2, 3, 4)
    graph = rewrite(simplify, lambda x: x.permute(2, 0, 1).transpose(0, 1).exp(), x, then=[dce])
    assert ops(graph) == ["permute", "exp"]
    assert graph.nodes[0].args == (graph.inputs[0], (0, 2, 1))
    graph = rewrite(simplify, lambda x: x.permute(2, 0, 1).permute(2, 0, 1).permute(2, 0, 1).exp(), x, then=[dce])
    assert ops(graph) == ["exp"]


REFUSED = {
    "float x + 0 (-0.0 + 0 is +0.0)": (lambda x: 1 / (x + 0), core.tensor([-0.0, 1.0])),
    "x - -0.0": (lambda x: 1 / (x - -0.0), core.tensor([-0.0, 1.0])),
    "0 - x": (lambda x: (0 - x).exp(), core.tensor([-0.0, 1.0])),
    "int * 1.0 promotes": (lambda x: (x * 1.0) * 3, core.tensor([1, 2])),
    "int / 1 promotes": (lambda x: (x / 1) * 3, core.tensor([1, 2])),
    "bool * 1 promotes": (lambda x: (x * 1) * 3, core.tensor([True, False])),
    "x * 2": (lambda x: (x * 2).exp(), core.tensor([1.0, 2.0])),
    "add with alpha": (lambda x: core.add(x, 0, alpha=2).exp(), core.tensor([1, 2])),
    "sub with alpha": (lambda x: core.sub(x, 0, alpha=2).exp(), core.tensor([1, 2])),
    "returns the input": (lambda x: x * 1, core.tensor([1.0, 2.0])),
    "returns a value twice": (lambda x: (lambda y: (y, y * 1))(x.exp()), core.tensor([1.0, 2.0])),
}


@pytest.mark.parametrize("case", REFUSED)
def test_simplify_refuses(case):
    fn, x = REFUSED[case]
    graph = traced(fn, x)
    rewritten = rewrite(simplify, fn, x, then=[dce])
    assert ops(rewritten) == ops(graph)
    out = flat(run(rewritten, x))
    assert all(o is not x for o in out) and len({id(o) for o in out}) == len(out)


def test_simplify_refuses_values_written_in_place():
    def f(x):
        y = x.exp()
        z = y * 1
        y.copy_(x)
        return z + y

    graph = rewrite(simplify, f, core.tensor([0.0, 1.0]), then=[dce])
    assert "mul" in ops(graph)
    assert_close(run(graph, core.tensor([0.0, 1.0])), core.tensor([1.0, 1.0 + math.e]))


def test_simplify_refuses_outputs_written_in_place():
    def f(x):
        y = x.exp()
        z = y * 1
        z.copy_(x)
        return y + z

    graph = rewrite(simplify, f, core.tensor([0.0, 1.0]), then=[dce])
    assert "mul" in ops(graph)


def test_simplify_treats_inputs_as_possibly_one_tensor():
    def f(x, y):
        a = x * 1
        y.zero_()
        return a + 1

    graph = dce(simplify(traced(f, core.ones(2), core.ones(2))))
    assert "mul" in ops(graph)
    x = core.ones(2)
    assert_close(run(graph, x, x), core.tensor([2.0, 2.0]))  # the caller passed one tensor twice


_SAME = core.dispatch.OPERATORS.get("jittest::same") or library.define("jittest::same", decomposition=lambda x: x)


def test_simplify_treats_composite_ops_as_possible_views():
    def f(x):
        c = x * 2
        a = c * 1
        _SAME(c).copy_(x)  # a composite that returns its input: the write lands in c
        return a + c

    graph = rewrite(simplify, f, core.tensor([1.0, 2.0]), then=[dce])
    assert "mul" in ops(graph)[1:]
    assert_close(run(graph, core.tensor([1.0, 2.0])), core.tensor([3.0, 6.0]))


def test_simplify_sees_that_writes_to_a_copy_leave_the_original_alone():
    def f(x):
        y = x.clone()
        y.copy_(x * 2)
        return (x * 1).exp() + y

    graph = rewrite(lambda g: simplify(functionalize(g)), f, core.tensor([1.0, 2.0]), then=[dce])
    assert ops(graph).count("mul") == 1


def test_simplify_leaves_complex_tensors_alone():
    graph = Graph()
    x = graph.add_input((2,), core.complex64, core.device("cpu"))
    graph.output = graph.create_node("mul", (x, 1), {}, [((2,), core.complex64, x.device)]).outputs[0]
    graph.output = graph.create_node("exp", (graph.output,), {}, [((2,), core.complex64, x.device)]).outputs[0]
    assert ops(dce(simplify(graph.copy()))) == ["mul", "exp"]


def test_simplify_keeps_a_returned_double_transpose_a_new_tensor():
    x = x23()
    graph = rewrite(simplify, lambda x: x.t().t(), x, then=[dce])
    out = run(graph, x)
    assert out is not x and out.shape == x.shape


# -- the passes together, on models ----------------------------------------------------------------------------------
def test_all_passes_remove_obvious_redundancy():
    def f(x):
        (x * 3).sum()  # dead
        return (x * 1 + 0) + (x * 1 + 0)

    for x, left in ((core.tensor([1, -2, 3]), ["add"]), (x23(), ["add", "add"])):
        graph = traced(f, x)
        rewritten = optimize(graph, passes=MY_PASSES)
        assert len(graph.nodes) == 7 and ops(rewritten) == left
        assert_same(graph, rewritten, x)
        assert_close(run(rewritten, x), x * 2)


def lenet():
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84),
                         nn.ReLU(), nn.Linear(84, 10))


MODELS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)),
            (4, 784)),
    "lenet": (lenet, (2, 1, 28, 28)),
    "transformer": (lambda: nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1, batch_first=True),
                    (2, 5, 16)),
}
PASS_SETS = [["simplify"], ["constant_fold"], ["cse"], ["dce"], ["functionalize"] + MY_PASSES]


@pytest.mark.parametrize("model", MODELS)
def test_passes_keep_model_outputs(model, device):
    build, shape = MODELS[model]
    core.manual_seed(0)
    module = build().to(device).eval()
    x = core.randn(*shape, device=device)
    graph = traced(module, x)
    params = dict(module.named_parameters()) | dict(module.named_buffers())
    with core.no_grad():
        expected = module(x)
    for passes in PASS_SETS:
        rewritten = optimize(graph, passes=passes)
        assert len(rewritten.nodes) <= len(graph.nodes)
        with core.no_grad():
            assert_close(run(rewritten, x, params=params), expected, rtol=1e-4, atol=1e-5, msg=str(passes))


def test_rewritten_model_graph_trains_like_eager():
    core.manual_seed(0)
    module = MODELS["mlp"][0]()
    x = core.randn(4, 784)
    graph = optimize(traced(module, x), passes=["functionalize"] + MY_PASSES)
    run(graph, x, params=dict(module.named_parameters())).sum().backward()
    grads = [to_numpy(p.grad) for p in module.parameters()]
    module.zero_grad()
    module(x).sum().backward()
    for g, p in zip(grads, module.parameters()):
        assert_close(g, to_numpy(p.grad), rtol=1e-4, atol=1e-5)


def test_batch_norm_in_training_is_never_removed_or_merged():
    """batch_norm writes its running statistics: two identical calls are two updates, an unused one still one."""
    mean, var = core.zeros(3), core.ones(3)

    def fn(x):
        F.batch_norm(x, mean, var, training=True, momentum=0.5)  # output unused: the update must stay
        return F.batch_norm(x, mean, var, training=True, momentum=0.5)

    x = core.randn(4, 3)
    traced = core.jit.trace(fn, x)
    assert [n.op for n in traced.graph.nodes].count("batch_norm") == 2


def test_reads_across_a_write_declared_by_an_op_are_not_merged():
    """batch_norm declares writes=(1, 2): a read of the running mean before it and the same read after it see
    different contents, so cse keeps both (and constant folding or dce never touch the write)."""

    class Model(nn.Module):  # F.batch_norm on buffers: no in-place op of its own (BatchNorm1d bumps a counter)
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", core.zeros(3))
            self.register_buffer("var", core.ones(3))

        def forward(self, x):
            before = self.mean * 2
            y = F.batch_norm(x, self.mean, self.var, training=True, momentum=0.5)
            return self.mean * 2 - before, y  # merged reads would give 0

    model, x = Model(), core.randn(4, 3)
    traced = core.jit.trace(model, x)
    graph = traced.graph
    node = next(n for n in graph.nodes if n.op == "batch_norm")
    assert len(node.written) == 2 and not node.is_pure
    model.mean.zero_()
    got = traced(x)
    assert_close(model.mean, 0.5 * x.mean(0))  # the module's own buffer was updated
    model.mean.zero_()
    for g, e in zip(got, model(x)):
        assert_close(g, e)
    assert_close(got[0], x.mean(0))


def test_define_declares_the_arguments_an_op_writes():
    op = core.dispatch.define("testlib::writes_second", decomposition=lambda x, acc: acc.add_(x) * 0 + x,
                              writes=(1,))
    assert op.writes == (1,) and core.dispatch.get_operator("fill_").writes == (0,)
    with pytest.raises(ValueError, match="writes must hold argument positions"):
        core.dispatch.define("testlib::bad_writes", decomposition=lambda x: x, writes=(-1,))
    acc = core.zeros(3)

    def fn(x):
        op(x, acc)  # unused output: kept, it writes acc
        return x + 1

    traced = core.jit.trace(fn, core.ones(3))
    assert [n.op for n in traced.graph.nodes if n.op == "testlib::writes_second"]


def test_a_declared_write_to_a_constant_copies_it_only_when_it_happens():
    """Closure tensors are constants: batch_norm in training writes them, so the trace copies each first and every
    call starts from the snapshot; in eval nothing is written and nothing is copied."""
    mean, var = core.zeros(3), core.ones(3)
    x = core.randn(8, 3)
    train = core.jit.trace(lambda x: F.batch_norm(x, mean, var, training=True, momentum=0.5), x, optimize=False)
    assert [n.op for n in train.raw_graph.nodes] == ["jit::copy", "jit::copy", "batch_norm"]
    mean.zero_(), var.fill_(1.0)
    train(x), train(x)
    assert_close(mean, core.zeros(3))  # each call updated a fresh copy of the snapshot
    evaluate = core.jit.trace(lambda x: F.batch_norm(x, mean, var), x, optimize=False)
    assert [n.op for n in evaluate.raw_graph.nodes] == ["batch_norm"]
