"""Factory allocation is the dispatcher's ``empty`` op: dispatched on the device, traced as an op; old graphs load."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import core
import core.jit as jit
import core.jit.tracer as tracer
import core.ops.creation as creation
from core.dispatch import backend_key, get_operator
from core.testing import assert_close, available_devices

DEVICES = available_devices() + ["meta"]


@pytest.fixture
def spy():
    """Every backend kernel ``empty`` runs, as the (dispatch key, device) it ran for; removed afterwards."""
    op = get_operator("empty")
    calls, keys = [], [backend_key(d) for d in DEVICES]
    for key in keys:
        def kernel(spec, size, dtype, device, key=key):
            calls.append((key.name, device.type))
            return creation.allocate_raw(tuple(size), dtype, device)

        op.register_kernel(key, kernel, owner="test_allocation")
    try:
        yield calls
    finally:
        for key in keys:
            op.kernels.pop(key.bit, None)
            op.owners.pop(key.bit, None)
        op._cache.clear()


def test_empty_is_a_declared_op_and_the_side_channel_is_gone():
    assert get_operator("empty") is creation.empty_op
    assert not hasattr(creation, "ALLOCATION_HOOK")
    assert not hasattr(tracer.GraphTracer, "on_alloc") and not hasattr(tracer, "_on_alloc")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("factory", [
    lambda d: core.empty(2, 3, device=d), lambda d: core.zeros(2, 3, device=d), lambda d: core.ones(2, 3, device=d),
    lambda d: core.full((2, 3), 7.0, device=d), lambda d: core.empty_strided((2, 3), (3, 1), device=d),
    lambda d: core.zeros_like(core.empty(2, 3, device=d)), lambda d: core.empty(2, 3, device=d).clone(),
], ids=["empty", "zeros", "ones", "full", "empty_strided", "zeros_like", "clone"])
def test_a_factory_dispatches_to_its_devices_backend(spy, dev, factory):
    out = factory(dev)
    assert out.device.type == dev and tuple(out.shape) == (2, 3)
    assert spy and set(spy) == {(backend_key(dev).name, dev)}


def test_kernels_allocate_their_outputs_without_dispatch(spy):
    x, m = core.ones(3), core.empty(3, device="meta")
    spy.clear()
    y = (x + x).to(core.float64).exp()
    z = (m * 2).sum()  # the Meta kernel of an op with a meta function makes its output
    assert spy == [] and y.dtype is core.float64 and z.device.type == "meta"


def test_tracing_records_the_empty_op_and_replays(device):
    def fn(a):
        return a * core.zeros(3, device=device) + core.ones(3, device=device) + core.empty(3, device=device).fill_(2)

    traced = jit.trace(fn, core.randn(3, device=device))
    ops = [n.op for n in traced.raw_graph.nodes]
    assert ops.count("empty") == 3 and "jit::empty" not in ops
    x = core.randn(3, device=device)
    assert_close(traced(x), fn(x))
    assert traced(x).device == x.device


def test_traced_allocations_are_distinct_tensors(device):
    def fn(a):
        first, second = core.zeros(3, device=device), core.zeros(3, device=device)
        first.add_(a)
        return first + second

    traced = jit.trace(fn, core.ones(3, device=device))
    for _ in range(2):
        assert_close(traced(core.ones(3, device=device)), np.ones(3, np.float32))


def test_a_graph_saved_with_jit_empty_still_loads_and_runs(tmp_path):
    def fn(a):
        return a + core.ones(3)

    path = tmp_path / "old.cjit"
    jit.trace(fn, core.randn(3)).save(path)
    with zipfile.ZipFile(path) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    graph = json.loads(entries["graphs/function.json"])
    for node in graph["nodes"]:
        if node["op"] == "empty":  # the form the tracer recorded before allocation was an op
            shape, dtype, device = node["args"]
            node.update(op="jit::empty", args=[], kwargs={"shape": shape, "dtype": dtype, "device": device})
    entries["graphs/function.json"] = json.dumps(graph).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    loaded = jit.load(path)
    assert "jit::empty" in [n.op for n in loaded.raw_graph.nodes]
    x = core.randn(3)
    for _ in range(2):
        assert_close(loaded(x), fn(x))
