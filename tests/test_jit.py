"""core.jit tracing: what a trace records, the IR's invariants, guards, modules, autograd through traced code.

The passes, fusion, serialisation and ONNX export have their own files (test_jit_passes.py,
test_jit_fusion.py, test_jit_serialization.py, test_onnx.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import core
import core.jit as jit
import core.nn as nn
import core.nn.functional as F
from core.jit.interpreter import Program
from core.jit.ir import Graph, GraphError
from core.testing import assert_close, to_numpy


def _mlp(device):
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)).to(device)


def _lenet(device):
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10)).to(device)


def _encoder(device):
    return nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1, batch_first=True, device=device).eval()


MODELS = {"mlp": (_mlp, (5, 12)), "lenet": (_lenet, (2, 1, 28, 28)), "encoder": (_encoder, (2, 5, 16))}


# -- what a trace records ------------------------------------------------------------------------------------

def test_trace_records_dispatcher_ops_with_types_and_literals():
    x = core.randn(3, 4)
    traced = jit.trace(lambda a: (a * 2 + 1).relu().sum(1), x, optimize=False)
    g = traced.raw_graph
    assert [n.op for n in g.nodes] == ["mul", "add", "relu", "sum"]
    assert g.inputs[0].name == "a" and g.inputs[0].shape == (3, 4) and g.inputs[0].dtype is core.float32
    assert g.nodes[0].args[1] == 2 and g.nodes[0].args[0] is g.inputs[0]
    assert g.nodes[-1].outputs[0].shape == (3,)
    text = str(g)
    assert "graph(%a : float32[3, 4] cpu)" in text and "= relu(%" in text and "return %" in text


def test_ops_inside_composites_are_not_recorded_only_the_call():
    x = core.randn(3, 4)
    g = jit.trace(lambda a: core.softmax(a, 1), x, optimize=False).raw_graph
    assert [n.op for n in g.nodes] == ["softmax"]


def test_parameters_constants_and_captured_leaves_are_distinct():
    w = core.randn(4, requires_grad=True)  # a leaf requiring grad: bound by reference
    c = core.arange(4.0)  # anything else: a snapshot
    traced = jit.trace(lambda a: a * w + c, core.randn(2, 4), optimize=False)
    g = traced.raw_graph
    assert list(g.params) == ["captured0"] and len(g.constants) == 1
    with core.no_grad():
        w.mul_(2)
        c.add_(100)  # the snapshot does not change
    x = core.randn(2, 4)
    assert_close(traced(x), x * w + core.arange(4.0))


def test_module_params_and_buffers_bind_by_name_and_follow_updates():
    bn = nn.BatchNorm1d(4).eval()
    traced = jit.trace(bn, core.randn(3, 4))
    g = traced.raw_graph
    assert {"weight", "bias", "running_mean", "running_var"} <= set(g.params)
    assert {"running_mean", "running_var"} <= g.buffers
    with core.no_grad():
        bn.running_mean.fill_(1.0)
        bn.weight.fill_(3.0)
    x = core.randn(3, 4)
    assert_close(traced(x), bn(x))


def test_factories_inside_the_program_are_recorded_not_frozen():
    def fn(a):
        return a + core.ones(a.shape[1]) * 2

    traced = jit.trace(fn, core.randn(2, 3))
    assert [n.op for n in traced.raw_graph.nodes][:2] == ["empty", "fill_"]  # the empty op, not a side channel
    x = core.randn(2, 3)
    assert_close(traced(x), x + 2)


def test_same_tensor_passed_twice_becomes_two_inputs():
    x = core.randn(3)
    traced = jit.trace(lambda a, b: a - b, (x, x))
    a, b = core.randn(3), core.randn(3)
    assert_close(traced(a, b), a - b)


def test_detach_reuses_the_value_it_aliases():
    traced = jit.trace(lambda a: a.detach() * 2, core.randn(3), optimize=False)
    assert not traced.raw_graph.constants
    x = core.randn(3)
    assert_close(traced(x), x * 2)


def test_in_place_ops_replay_on_the_callers_tensor():
    def fn(a):
        a.mul_(2)
        return a + 1

    traced = jit.trace(fn, core.randn(3))
    assert any(n.is_inplace for n in traced.graph.nodes)
    x = core.ones(3)
    out = traced(x)
    assert_close(x, core.full((3,), 2.0))  # the mutation happened, as in eager code
    assert_close(out, core.full((3,), 3.0))


def test_in_place_on_a_constant_starts_from_the_snapshot_every_call():
    def fn(a):
        acc = core.tensor([1.0, 2.0, 3.0])
        acc.add_(a)
        return acc

    traced = jit.trace(fn, core.ones(3))
    x = core.ones(3)
    assert_close(traced(x), core.tensor([2.0, 3.0, 4.0]))
    assert_close(traced(x), core.tensor([2.0, 3.0, 4.0]))


def test_multiple_outputs_and_nested_output_structures():
    def fn(a):
        values, indices = core.max(a, 1)
        return {"v": values, "pair": (indices, a.T)}

    traced = jit.trace(fn, core.randn(3, 4))
    x = core.randn(3, 4)
    out, ref = traced(x), fn(x)
    assert set(out) == {"v", "pair"}
    assert_close(out["v"], ref["v"])
    assert_close(out["pair"][0], ref["pair"][0])
    assert_close(out["pair"][1], ref["pair"][1])


def test_python_control_flow_is_baked_in():
    def fn(a):
        return a * 2 if a.sum().item() > 0 else a * -1

    traced = jit.trace(fn, core.ones(3))
    neg = -core.ones(3)
    assert_close(traced(neg), neg * 2)  # the branch taken at trace time, as torch.jit.trace does


def test_bad_example_inputs_and_nested_traces_are_errors():
    with pytest.raises(TypeError, match="example input 0 must be a Tensor, got int"):
        jit.trace(lambda a: a, (3,))
    with pytest.raises(TypeError, match="expected a function or a Module"):
        jit.trace(42, core.ones(2))

    def inner(a):
        return jit.trace(lambda b: b + 1, a)(a)

    with pytest.raises(jit.TracingError, match="cannot be nested"):
        jit.trace(inner, core.ones(2))
    assert not jit.is_tracing()
    assert_close(core.ones(2) + 1, core.full((2,), 2.0))  # the thread's dispatch state was restored


# -- guards --------------------------------------------------------------------------------------------------

def test_guard_rejects_other_shapes_dtypes_and_arity():
    traced = jit.trace(lambda a: a * 2, core.randn(2, 3))
    with pytest.raises(jit.GuardError, match=r"input 0 \('a'\) was traced as float32\[2, 3\] cpu, got "
                                             r"float32\[4, 3\] cpu"):
        traced(core.randn(4, 3))
    with pytest.raises(jit.GuardError, match="got float64"):
        traced(core.randn(2, 3, dtype=core.float64))
    with pytest.raises(jit.GuardError, match="traced with 1 input"):
        traced(core.randn(2, 3), core.randn(2, 3))


def test_retrace_traces_again_for_a_new_signature():
    traced = jit.trace(lambda a: a.sum(0) * 2, core.randn(2, 3), retrace=True)
    x = core.randn(5, 7)
    assert_close(traced(x), x.sum(0) * 2)
    assert_close(traced(core.ones(2, 3)), core.full((3,), 4.0))


def test_module_guard_names_the_module():
    traced = jit.trace(_mlp("cpu"), core.randn(5, 12))
    with pytest.raises(jit.GuardError, match="traced Sequential: input 0"):
        traced(core.randn(6, 12))


# -- real models on every backend ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(MODELS))
def test_traced_models_equal_eager(device, name):
    make, shape = MODELS[name]
    core.manual_seed(0)
    model = make(device).eval()
    x = core.randn(*shape, device=device)
    traced = jit.trace(model, x)
    for _ in range(2):
        x = core.randn(*shape, device=device)
        with core.no_grad():
            assert_close(traced(x), model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "lenet"])
def test_gradients_through_a_traced_model_equal_eager(device, name):
    make, shape = MODELS[name]
    core.manual_seed(0)
    model = make(device)
    x = core.randn(*shape, device=device)
    traced = jit.trace(model, x)
    traced(x).square().sum().backward()
    traced_grads = [to_numpy(p.grad) for p in model.parameters()]
    model.zero_grad()
    model(x).square().sum().backward()
    for got, p in zip(traced_grads, model.parameters()):
        np.testing.assert_allclose(got, to_numpy(p.grad), rtol=1e-4, atol=1e-5)


def test_traced_function_gradcheck_float64():
    w = core.randn(4, 3, dtype=core.float64, requires_grad=True)

    def fn(a, b):
        return (core.tanh(a @ w) * b.sigmoid()).sum(1)

    a = core.randn(2, 4, dtype=core.float64, requires_grad=True)
    b = core.randn(2, 3, dtype=core.float64, requires_grad=True)
    traced = jit.trace(fn, (a, b))
    assert core.autograd.gradcheck(traced, (a, b))


def test_training_a_traced_model_matches_eager_training():
    core.manual_seed(0)
    eager = _mlp("cpu")
    twin = _mlp("cpu")
    twin.load_state_dict(eager.state_dict())
    traced = jit.trace(twin, core.randn(5, 12))
    opt_a = core.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_b = core.optim.SGD(traced.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        x, y = core.randn(5, 12), core.randint(0, 3, (5,))
        for model, opt in ((eager, opt_a), (traced, opt_b)):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    for (name, a), (_, b) in zip(eager.state_dict().items(), traced.state_dict().items()):
        assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)


# -- modules: parameters, state_dict, modes ------------------------------------------------------------------

def test_traced_module_shares_parameters_and_state_dict():
    model = _mlp("cpu")
    traced = jit.trace(model, core.randn(5, 12))
    assert list(traced.state_dict()) == list(model.state_dict())
    assert all(a is b for a, b in zip(traced.parameters(), model.parameters()))
    assert isinstance(traced, nn.Module) and "TracedSequential" in repr(traced)
    with core.no_grad():
        model[0].bias.fill_(5.0)  # visible through the trace at the next call
    x = core.randn(5, 12)
    assert_close(traced(x), model(x))


def test_train_and_eval_have_their_own_graphs():
    core.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
    traced = jit.trace(model.eval(), core.randn(4, 8))
    assert not any(n.op == "bernoulli_" for n in traced.graph.nodes)
    traced.train()
    assert model.training and model[1].training
    assert any(n.op == "bernoulli_" for n in traced.graph.nodes)
    x = core.ones(4, 8)
    out = to_numpy(traced(x))
    ref = to_numpy(model[0](x))
    zeros = out == 0
    assert zeros.any() and (~zeros).any()  # dropout ran: random every call
    np.testing.assert_allclose(out[~zeros], ref[~zeros] * 2, rtol=1e-5)
    traced.eval()
    assert_close(traced(x), model(x))


# -- the IR ------------------------------------------------------------------------------------------------

def test_hand_built_graph_runs_and_validates():
    g = Graph()
    a = g.add_input((2, 2), core.float32, core.device("cpu"), "a")
    n1 = g.create_node("mul", (a, 3), {}, [((2, 2), core.float32, core.device("cpu"))])
    n2 = g.create_node("exp", (n1.outputs[0],), {}, [((2, 2), core.float32, core.device("cpu"))])
    g.output = n2.outputs[0]
    g.validate()
    x = core.randn(2, 2)
    assert_close(Program(g).run([x], {}), core.exp(x * 3))


def test_validate_catches_broken_graphs():
    g = Graph()
    a = g.add_input((2,), core.float32, core.device("cpu"))
    n1 = g.create_node("neg", (a,), {}, [((2,), core.float32, core.device("cpu"))])
    n2 = g.create_node("exp", (n1.outputs[0],), {}, [((2,), core.float32, core.device("cpu"))])
    g.output = n2.outputs[0]
    g.nodes.reverse()
    with pytest.raises(GraphError, match=r"node 0 \(exp\) reads %\d+ before it is defined"):
        g.validate()
    g.nodes.reverse()
    g.create_node("no_such_op", (a,), {}, [])
    with pytest.raises(GraphError, match="unknown op 'no_such_op'"):
        g.validate()


def test_copy_is_independent_of_the_original():
    traced = jit.trace(lambda a: a * 2 + 1, core.randn(3), optimize=False)
    g = traced.raw_graph
    c = g.copy()
    c.nodes.pop()
    c.output = c.nodes[-1].outputs[0]
    c.validate()
    g.validate()
    assert len(g.nodes) == 2 and len(c.nodes) == 1


def test_device_moves_are_recorded_not_frozen():
    if "opencl" not in core.testing.available_devices():
        pytest.skip("needs a second device type (opencl) to move between")

    def fn(a):
        return (a.to("opencl") * 2).cpu() + 1

    traced = jit.trace(fn, core.randn(3))
    assert [n.op for n in traced.graph.nodes].count("_to_copy") == 2
    x = core.randn(3)
    assert_close(traced(x), x * 2 + 1)
