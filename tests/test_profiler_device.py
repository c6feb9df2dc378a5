"""core.profiler beyond the dispatcher: device time the opencl backend reports from OpenCL event profiling, and
spans for JIT fused kernels (which bypass the dispatcher)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import core
import core.jit as jit
from core.jit.fused import STATS
from core.plugins import manager
from core.profiler import DeviceType, ProfilerActivity, profile, supported_activities

needs_opencl = pytest.mark.skipif(not core.opencl.is_available(),
                                  reason=f"no OpenCL device: {core.opencl.unavailable_reason()}")


def _fuses(device: str) -> bool:
    dev = core.device(device)
    return manager.runtime_for(dev.type).supports_fusion(dev)


def _chain(x, a):
    return ((x * a + 1).relu() * 2 - a) / 3


# -- device time from OpenCL profiling events --------------------------------------------------------------------

@needs_opencl
def test_opencl_reports_kernel_device_time_inside_the_block():
    rng = np.random.default_rng(0)
    a = core.tensor(rng.standard_normal((32, 48)).astype(np.float32), device="opencl")
    b = core.tensor(rng.standard_normal((48, 16)).astype(np.float32), device="opencl")
    (a @ b).sum().item()  # build the programs before the block
    assert ProfilerActivity.PrivateUse1 in supported_activities()  # a third-party device, as in PyTorch
    before = time.perf_counter_ns() / 1000
    with profile() as prof:
        c = a @ b
        d = c + 1
    after = time.perf_counter_ns() / 1000
    np.testing.assert_allclose(d.cpu().numpy(), a.cpu().numpy() @ b.cpu().numpy() + 1, rtol=1e-4, atol=1e-4)
    kernels = [e for e in prof.events() if e.is_device_event]
    assert [e.name for e in kernels] == ["gemm_float32", kernels[1].name] and kernels[1].name.startswith("add_")
    for event in kernels:
        assert event.device_type is DeviceType.OPENCL and event.device_index == 0
        assert event.device_time_total > 0 and event.cpu_time_total == 0
        # the device clock is moved onto the host's: each kernel runs within the block (a little slack for the
        # marker that relates the clocks)
        assert before - 1000 <= event.time_range.start <= event.time_range.end <= after + 1000
    gemm_host = next(e for e in prof.events() if e.name == "aten::batched_matmul")
    assert kernels[0].time_range.end >= gemm_host.time_range.start - 1000  # launched by the op, so not before it
    table = prof.key_averages().table(sort_by="device_time_total")
    assert "Self OPENCL" in table and "OPENCL total" in table and "Self OPENCL time total:" in table
    assert table.splitlines()[3].split()[0] == max(kernels, key=lambda e: e.device_time_total).name


@needs_opencl
def test_opencl_records_nothing_outside_a_block_and_only_its_own_kernels():
    from core_opencl.runtime import RUNTIME

    x = core.ones(8, device="opencl")
    x.neg()
    assert all(slot.launched is None for slot in RUNTIME.slots)  # no event is kept outside a profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:  # the device activity not asked: no device events
        x.neg()
    assert not [e for e in prof.events() if e.is_device_event]
    with profile() as prof:
        x.exp()
        assert RUNTIME.start_profiling() is False  # one block at a time records device time
    assert [e.name.split("_")[0] for e in prof.events() if e.is_device_event] == ["exp"]
    assert all(slot.launched is None for slot in RUNTIME.slots)


# -- JIT fused kernels -------------------------------------------------------------------------------------------

def test_fused_nodes_get_a_span_with_shapes_and_memory(device):
    if not _fuses(device):
        pytest.skip(f"the {device} backend does not fuse")
    rng = np.random.default_rng(0)
    x = core.tensor(rng.standard_normal((4, 5)).astype(np.float32), device=device)
    a = core.tensor(rng.uniform(1, 2, (4, 5)).astype(np.float32), device=device)
    traced = jit.trace(_chain, (x, a))
    assert [n.op for n in traced.graph.nodes] == ["jit::fused"]
    with core.no_grad():
        traced(x, a)  # compile outside the block
        launched = STATS["kernel"]
        with profile(record_shapes=True, profile_memory=True) as prof:
            out = traced(x, a)
        assert STATS["kernel"] == launched + 1
    expected = ((x.cpu().numpy() * a.cpu().numpy() + 1).clip(0) * 2 - a.cpu().numpy()) / 3
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-6)
    host = [e for e in prof.events() if not e.is_device_event]
    assert [e.name for e in host] == ["jit::fused[mul, add, relu, mul, sub, div]"]
    (span,) = host
    assert span.input_shapes == [[4, 5], [4, 5]] and span.cpu_time_total > 0 and not span.cpu_children
    on_host = core.device(device).type == "cpu"
    assert (span.cpu_memory_usage if on_host else span.device_memory_usage) == 4 * 5 * 4  # the output it made


def test_unfused_runs_of_a_fused_node_nest_their_ops_under_its_span(device):
    if not _fuses(device):
        pytest.skip(f"the {device} backend does not fuse")
    def chain(x, a):  # maximum has no generated derivative (it splits ties): under autograd the node runs op by op
        return (core.maximum(x * a, a) + 1.0) * 2.0

    x = core.ones(3, device=device, requires_grad=True)
    a = core.full((3,), 2.0, device=device)
    traced = jit.trace(chain, (x.detach(), a))
    with profile() as prof:
        traced(x, a)
    (span,) = [e for e in prof.events() if e.name.startswith("jit::fused[")]
    assert [c.name for c in span.cpu_children] == ["aten::mul", "aten::maximum", "aten::add", "aten::mul"]


def test_traced_graphs_without_fused_nodes_record_only_their_ops(device):
    x = core.ones(3, device=device)
    traced = jit.trace(lambda x: x.sum(), (x,))
    with profile() as prof:
        traced(x)
    assert [e.name for e in prof.events() if not e.is_device_event] == ["aten::sum"]
