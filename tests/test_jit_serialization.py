"""core.jit.save / core.jit.load: round trips on every device, a fresh process, literals, errors."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
from test_jit import MODELS

import core
import core.jit as jit
import core.nn as nn
from core.jit.serialization import SerializationError
from core.testing import assert_close, available_devices, to_numpy


def _traced(kind: str, device: str):
    build, shape = MODELS[kind]
    model = build(device)
    x = core.randn(*shape, device=device)
    return model, jit.trace(model, x), x


def _rewrite(path, name: str, edit) -> None:
    """Replace entry ``name`` of the archive at ``path`` by ``edit(old bytes)`` (None drops it)."""
    with zipfile.ZipFile(path) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    data = edit(entries.pop(name))
    if data is not None:
        entries[name] = data
    with zipfile.ZipFile(path, "w") as archive:
        for n, d in entries.items():
            archive.writestr(n, d)


def _edit_json(edit):
    def run(data: bytes) -> bytes:
        obj = json.loads(data)
        edit(obj)
        return json.dumps(obj).encode()

    return run


# -- round trips ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(MODELS))
def test_module_round_trip_outputs_state_and_mode(kind, device, tmp_path):
    model, traced, x = _traced(kind, device)
    path = tmp_path / f"{kind}.cjit"
    traced.save(path)
    loaded = jit.load(path)
    assert isinstance(loaded, jit.TracedModule) and loaded.original_name == type(model).__name__
    np.testing.assert_array_equal(to_numpy(loaded(x)), to_numpy(traced(x)))
    original, restored = model.state_dict(), loaded.state_dict()
    assert list(restored) == list(original)
    for name, t in original.items():
        np.testing.assert_array_equal(to_numpy(restored[name]), to_numpy(t))
        assert restored[name].device == t.device
    params = dict(loaded.named_parameters())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in params.values())
    assert str(loaded.raw_graph) == str(traced.raw_graph)  # same values, ids and ops: the raw graph came back
    assert loaded.training is model.training
    if not model.training:
        with pytest.raises(RuntimeError, match="no graph for training mode"):
            loaded.train()(x)


def test_loaded_module_trains_and_keeps_buffers(tmp_path):
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).eval()
    model[1].register_buffer("scratch", core.ones(3), persistent=False)
    x = core.randn(5, 4)
    jit.save(jit.trace(model, x), tmp_path / "bn.cjit")
    loaded = jit.load(tmp_path / "bn.cjit")
    assert list(loaded.state_dict()) == list(model.state_dict())  # the non-persistent buffer stays out
    assert dict(loaded.named_buffers()).keys() == dict(model.named_buffers()).keys()
    np.testing.assert_array_equal(to_numpy(loaded(x)), to_numpy(model(x)))
    first = loaded.get_submodule("0")
    loaded(x).sum().backward()
    assert first.weight.grad is not None and first.weight.grad.shape == (8, 4)
    with core.no_grad():  # the program binds the loaded parameters by name at every call
        first.weight.mul_(0)
        model[0].weight.mul_(0)
    np.testing.assert_array_equal(to_numpy(loaded(x)), to_numpy(model(x)))


def test_tied_parameters_come_back_as_one_tensor(tmp_path):
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    model[2].weight = model[0].weight
    x = core.randn(3, 4)
    jit.save(jit.trace(model, x), tmp_path / "tied.cjit")
    loaded = jit.load(tmp_path / "tied.cjit")
    assert list(loaded.state_dict()) == list(model.state_dict())
    assert loaded.get_submodule("2").weight is loaded.get_submodule("0").weight
    np.testing.assert_array_equal(to_numpy(loaded(x)), to_numpy(model(x)))


def test_fresh_process_loads_and_reproduces_outputs(device, tmp_path):
    for kind in MODELS:
        _, traced, x = _traced(kind, device)
        traced.save(tmp_path / f"{kind}.cjit")
        np.save(tmp_path / f"{kind}_input.npy", to_numpy(x))
        np.save(tmp_path / f"{kind}_expected.npy", to_numpy(traced(x)))
    script = textwrap.dedent(f"""
        import sys, numpy as np, core, core.jit
        for kind in {sorted(MODELS)!r}:
            base = sys.argv[1] + "/" + kind
            program = core.jit.load(base + ".cjit")
            x = core.from_numpy(np.load(base + "_input.npy")).to({device!r})
            out = program(x).detach().cpu().numpy()
            np.testing.assert_array_equal(out, np.load(base + "_expected.npy"))
            assert "torch" not in sys.modules
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_function_with_captured_leaf_and_constant(device, tmp_path):
    w = core.randn(4, device=device, requires_grad=True)
    c = core.arange(4.0, device=device)
    traced = jit.trace(lambda x: (x * w + c).tanh().sum(1), core.randn(3, 4, device=device))
    traced.save(tmp_path / "fn.cjit")
    loaded = jit.load(tmp_path / "fn.cjit")
    assert isinstance(loaded, jit.TracedFunction) and loaded.__name__ == "<lambda>"
    x = core.randn(3, 4, device=device)
    np.testing.assert_array_equal(to_numpy(loaded(x)), to_numpy(traced(x)))
    (leaf,) = loaded._params.values()
    assert leaf.requires_grad and leaf is not w
    loaded(x).sum().backward()
    traced(x).sum().backward()
    assert_close(leaf.grad, w.grad)
    with pytest.raises(jit.GuardError, match="traced as float32"):
        loaded(core.randn(2, 4, device=device))


def test_dropout_in_training_mode_draws_from_the_default_generator(tmp_path):
    model = MODELS["encoder"][0]("cpu").train()
    x = core.randn(2, 5, 16)
    traced = jit.trace(model, x)
    assert any(n.op == "bernoulli_" for n in traced.raw_graph.nodes)
    traced.eval()(x)  # a second mode: both are saved
    traced.train()
    traced.save(tmp_path / "drop.cjit")
    loaded = jit.load(tmp_path / "drop.cjit")
    assert loaded.training
    core.manual_seed(7)
    expected = traced(x)
    core.manual_seed(7)
    np.testing.assert_array_equal(to_numpy(loaded(x)), to_numpy(expected))
    assert not np.array_equal(to_numpy(loaded(x)), to_numpy(expected))  # the generator moved on: fresh masks
    np.testing.assert_array_equal(to_numpy(loaded.eval()(x)), to_numpy(model.eval()(x)))


@pytest.mark.skipif("opencl" not in available_devices(), reason="needs the opencl device to map onto")
def test_map_location_moves_graph_and_tensors(tmp_path):
    model, traced, x = _traced("encoder", "cpu")
    traced.save(tmp_path / "enc.cjit")
    loaded = jit.load(tmp_path / "enc.cjit", map_location="opencl")
    assert {str(p.device) for p in loaded.parameters()} == {"opencl:0"}
    assert all(str(v.device) == "opencl:0" for v in loaded.graph.inputs)
    assert_close(loaded(x.to("opencl")).cpu(), traced(x), rtol=1e-4, atol=1e-5)
    by_dict = jit.load(tmp_path / "enc.cjit", map_location={"cpu": "opencl"})
    assert str(next(by_dict.parameters()).device) == "opencl:0"


def test_file_objects_and_deterministic_bytes(tmp_path):
    _, traced, x = _traced("mlp", "cpu")
    first, second = io.BytesIO(), io.BytesIO()
    jit.save(traced, first)
    jit.save(traced, second)
    assert first.getvalue() == second.getvalue()
    first.seek(0)
    np.testing.assert_array_equal(to_numpy(jit.load(first)(x)), to_numpy(traced(x)))


# -- literals ---------------------------------------------------------------------------------------------------

def test_every_literal_kind_round_trips(tmp_path):
    traced = jit.trace(lambda a: a + 1, core.randn(2))
    literals = {"none": None, "bools": (True, False), "int": -(2 ** 70), "floats": (1.5, -0.0, math.inf, -math.inf),
                "nan": math.nan, "str": "x", "tuple": (1, (2,)), "list": [1, [2.0]], "dict": {"a": 1, 2: (3,)},
                "dtype": core.bfloat16, "device": core.device("cpu"), "slice": slice(1, None, 2),
                "ellipsis": Ellipsis, "size": core.Size([2, 3]), "generator": core.default_generator}
    traced.raw_graph.nodes[0].attrs.update(literals)
    traced.save(tmp_path / "lit.cjit")
    attrs = jit.load(tmp_path / "lit.cjit").raw_graph.nodes[0].attrs
    nan = attrs.pop("nan")
    assert math.isnan(nan) and attrs == {k: v for k, v in literals.items() if k != "nan"}
    assert type(attrs["tuple"]) is tuple and type(attrs["list"]) is list and type(attrs["list"][1]) is list
    assert type(attrs["size"]) is core.Size and attrs["dtype"] is core.bfloat16
    assert math.copysign(1.0, attrs["floats"][1]) == -1.0 and attrs["generator"] is core.default_generator


def test_unsupported_literal_and_user_generator_fail_at_save(tmp_path):
    traced = jit.trace(lambda a: a * 2, core.randn(2))
    traced.raw_graph.nodes[0].attrs["bad"] = object()
    with pytest.raises(TypeError, match="op 'mul'.*builtins.object"):
        traced.save(tmp_path / "bad.cjit")
    assert not (tmp_path / "bad.cjit").exists()
    g = core.Generator().manual_seed(1)
    traced = jit.trace(lambda a: a + core.rand(2, generator=g), core.randn(2))
    with pytest.raises(ValueError, match="user-created core.Generator"):
        traced.save(tmp_path / "gen.cjit")
    with pytest.raises(TypeError, match="TracedModule or TracedFunction"):
        jit.save(lambda a: a, tmp_path / "fn.cjit")


# -- bad files ---------------------------------------------------------------------------------------------------

@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "mlp.cjit"
    _traced("mlp", "cpu")[1].save(path)
    return path


def test_unknown_version_names_found_and_supported(saved):
    _rewrite(saved, "format.json", _edit_json(lambda h: h.update(version=7)))
    with pytest.raises(SerializationError, match=r"version 7; this core reads version\(s\) 1 — upgrade"):
        jit.load(saved)


@pytest.mark.parametrize("damage, message", [
    (lambda p: _rewrite(p, "format.json", _edit_json(lambda h: h.update(format="other"))), "does not name the format"),
    (lambda p: _rewrite(p, "graphs/training.json", lambda d: None), "graphs/training.json is missing"),
    (lambda p: _rewrite(p, "tensors.safetensors", lambda d: None), "tensors.safetensors is missing"),
    (lambda p: _rewrite(p, "tensors.safetensors", lambda d: d[:20]), "tensors.safetensors"),
    (lambda p: _rewrite(p, "graphs/training.json", lambda d: d[:-5]), "graphs/training.json is not valid JSON"),
    (lambda p: _rewrite(p, "graphs/training.json", lambda d: d.replace(b'"op":"relu"', b'"op":"nope"')),
     r"node 1 \(nope\) calls an op this core does not define"),
    (lambda p: _rewrite(p, "graphs/training.json", lambda d: d.replace(b'"float32"', b'"float99"', 1)),
     "unknown dtype 'float99'"),
    (lambda p: _rewrite(p, "graphs/training.json", _edit_json(lambda g: g["nodes"].reverse())),
     r"node 0 \(\w+\) reads value \d+, which is not defined before it"),
    (lambda p: p.write_bytes(p.read_bytes()[:200]), "not a zip archive"),
    (lambda p: p.write_bytes(b"\x80\x04 pickle"), "not a zip archive"),
])
def test_corrupt_archives_raise_clear_errors(saved, damage, message):
    damage(saved)
    with pytest.raises(SerializationError, match=message):
        jit.load(saved)


def test_core_save_checkpoint_is_pointed_at_core_load(tmp_path):
    core.save({"w": core.ones(2)}, tmp_path / "ckpt.pt")
    with pytest.raises(SerializationError, match="read it with core.load"):
        jit.load(tmp_path / "ckpt.pt")
