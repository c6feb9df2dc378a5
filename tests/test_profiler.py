"""core.profiler and core.autograd.profiler: op counts and shapes, nesting, memory, the chrome trace, the step
schedule, the table, device time from a backend's runtime, and that the profiler costs nothing when off."""

from __future__ import annotations

import gzip
import json
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import isolated_plugin_manager

import core
import core.nn as nn
from core.dispatch.keys import Profiler, tls
from core.profiler import (DeviceType, EventList, ProfilerAction, ProfilerActivity, RecordScope, kineto_available,
                           profile, record_function, schedule, supported_activities, tensorboard_trace_handler)

FIXTURES = Path(__file__).parent / "fixtures"


def _mlp_step(device):
    """One SGD step of an 8-16-4 MLP on a batch of 5."""
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
    x = core.tensor(rng.standard_normal((5, 8)).astype(np.float32), device=device)
    optimizer = core.optim.SGD(model.parameters(), lr=0.1)
    return model, x, optimizer


def _averages_by_key(averages) -> dict:
    return {a.key: a for a in averages}


def test_mlp_step_op_counts_and_input_shapes(device):
    model, x, optimizer = _mlp_step(device)
    with profile(record_shapes=True) as prof:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    averages = _averages_by_key(prof.key_averages())
    assert averages["aten::linear"].count == 2
    assert averages["aten::relu"].count == 1
    assert averages["aten::relu_backward"].count == 1
    by_shape = {(a.key, str(a.input_shapes)): a for a in prof.key_averages(group_by_input_shape=True)}
    assert by_shape[("aten::linear", str([[5, 8], [16, 8], [16]]))].count == 1
    assert by_shape[("aten::linear", str([[5, 16], [4, 16], [4]]))].count == 1
    assert by_shape[("aten::relu", str([[5, 16]]))].count == 1
    for event in prof.events():  # totals include the children, which lie inside their parent's interval
        assert event.cpu_time_total >= event.self_cpu_time_total >= -1e-6
        for child in event.cpu_children:
            assert event.time_range.start <= child.time_range.start <= child.time_range.end <= event.time_range.end
            assert child.cpu_parent is event
    top = [e for e in prof.events() if e.cpu_parent is None]
    assert prof.events().self_cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in top))


def test_composite_ops_are_parents_of_the_ops_they_call(device):
    model = nn.Linear(3, 2).to(device)
    x = core.ones(4, 3, device=device)
    with profile() as prof:
        model(x)
    (linear,) = [e for e in prof.events() if e.name == "aten::linear"]
    if not linear.cpu_children:  # a backend registering linear (webgpu fuses it) runs one kernel, no parts
        assert core.dispatch.OPERATORS["linear"].kernels.get(core.dispatch.backend_key(device).bit) is not None
        return
    assert linear.cpu_parent is None and linear.cpu_children
    assert {c.name for c in linear.cpu_children} >= {"aten::batched_matmul"}
    assert linear.self_cpu_time_total == pytest.approx(
        linear.cpu_time_total - sum(c.cpu_time_total for c in linear.cpu_children))


def test_record_function_nests_and_self_time_excludes_children(device):
    x = core.ones(3, device=device)
    with profile() as prof:
        with record_function("outer"):
            x = x + 1
            with record_function("inner"):
                x = x * 2
    events = {e.name: e for e in prof.events() if e.name in ("outer", "inner")}
    outer, inner = events["outer"], events["inner"]
    assert inner.cpu_parent is outer and outer.cpu_parent is None
    assert [c.name for c in outer.cpu_children] == ["aten::add", "inner"]
    assert [c.name for c in inner.cpu_children] == ["aten::mul"]
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - sum(
        c.cpu_time_total for c in outer.cpu_children))
    assert outer.scope == RecordScope.USER_SCOPE and inner.cpu_children[0].scope == RecordScope.FUNCTION
    np.testing.assert_allclose(x.cpu().numpy(), [4.0, 4.0, 4.0])


def test_record_function_as_a_decorator_and_outside_a_profile():
    @record_function("double")
    def double(t):
        return t * 2

    assert double(core.ones(2)).tolist() == [2.0, 2.0]  # outside a profile: runs, records nothing
    with profile() as prof:
        double(double(core.ones(2)))
    averages = _averages_by_key(prof.key_averages())
    assert averages["double"].count == 2 and averages["aten::mul"].count == 2
    with pytest.raises(TypeError, match="name must be a str"):
        record_function(3)


def test_chrome_trace_is_json_with_complete_events(tmp_path, device):
    x = core.ones(4, 4, device=device)
    with profile(record_shapes=True) as prof:
        with record_function("block"):
            (x @ x).sum()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["name"] for e in spans} == {e.name for e in prof.events()}
    host = [e for e in spans if e["cat"] != "kernel"]  # a backend's device events (opencl) have their own pid
    assert len(host) == len([e for e in prof.events() if not e.is_device_event])
    for span, event in zip(sorted(host, key=lambda e: e["ts"]), [e for e in prof.events() if not e.is_device_event]):
        assert span["name"] == event.name and span["pid"] == os.getpid() and span["tid"] == event.thread
        assert span["ts"] == pytest.approx(event.time_range.start) and span["dur"] == pytest.approx(
            event.time_range.elapsed_us())
    (block,) = [e for e in spans if e["name"] == "block"]
    assert block["cat"] == "user_annotation"
    assert any(e["args"].get("Input Dims") == [[4, 4], [4, 4]] for e in spans)
    assert os.listdir(tmp_path) == ["trace.json"]  # written through a temporary file, renamed into place
    prof.export_chrome_trace(str(tmp_path / "trace.json.gz"))
    assert json.loads(gzip.decompress((tmp_path / "trace.json.gz").read_bytes()))["traceEvents"] == \
        trace["traceEvents"]


def test_schedule_follows_wait_warmup_active_repeat():
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)
    fn = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    N, W, R, S = ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE
    assert [fn(step) for step in range(11)] == [N, N, W, R, S, N, W, R, S, N, N]
    forever = schedule(wait=0, warmup=1, active=1)
    assert [forever(step) for step in range(6)] == [W, S] * 3
    assert schedule(wait=2, warmup=1, active=1, skip_first_wait=1)(0) is W
    with pytest.raises(ValueError, match="active must be positive"):
        schedule(wait=1, warmup=1, active=0)
    with pytest.raises(ValueError, match="wait must be a non-negative int"):
        schedule(wait=-1, warmup=1, active=1)


def test_profile_steps_through_the_schedule_and_calls_on_trace_ready(device):
    traces = []

    def ready(prof):
        traces.append([e.name for e in prof.events() if e.name.startswith("ProfilerStep#")])
        assert prof.key_averages()  # readable inside the handler

    x = core.ones(2, device=device)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as prof:
        for _ in range(10):
            x = x + 1
            prof.step()
    assert traces == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    assert _averages_by_key(prof.key_averages())["aten::add"].count == 2  # the last recording's two steps


def test_stop_in_the_middle_of_an_active_window_saves_the_trace(device):
    calls = []
    prof = profile(schedule=schedule(wait=0, warmup=1, active=3), on_trace_ready=calls.append)
    prof.start()
    for _ in range(3):
        core.ones(2, device=device).neg()
        prof.step()
    prof.stop()
    assert calls == [prof] and _averages_by_key(prof.key_averages())["aten::neg"].count == 2


def test_table_is_sorted_and_row_limited(device):
    x = core.ones(8, 8, device=device)
    with profile(activities=[ProfilerActivity.CPU]) as prof:  # host time only: no device-time columns
        for _ in range(3):
            x = (x @ x).tanh()
        x.sum()
    averages = prof.key_averages()
    table = averages.table(sort_by="self_cpu_time_total", row_limit=2)
    lines = table.splitlines()
    assert re.split(r"\s{2,}", lines[1].strip()) == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                                                     "CPU time avg", "# of Calls"]
    rows = lines[3:-2]
    expected = sorted(averages, key=lambda a: a.self_cpu_time_total, reverse=True)[:2]
    assert [row.split()[0] for row in rows] == [a.key for a in expected]
    assert lines[-1].startswith("Self CPU time total: ")
    counts = {row.split()[0]: int(row.split()[-1]) for row in averages.table(row_limit=-1).splitlines()[3:-2]}
    assert counts["aten::tanh"] == 3 and counts["aten::sum"] == 1 and len(counts) == len(averages)
    with pytest.raises(AttributeError, match="unknown sort_by"):
        averages.table(sort_by="nonsense")
    assert averages.table(sort_by="cuda_time_total") == averages.table(sort_by="device_time_total")
    top = prof.events().table(top_level_events_only=True, row_limit=0).splitlines()[3:-2]
    assert [row.split()[0] for row in top] == [e.name for e in prof.events() if e.cpu_parent is None]


def test_input_shapes_column_when_grouped_by_shape(device):
    with profile(record_shapes=True) as prof:
        core.ones(2, 3, device=device).exp()
    table = prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in table.splitlines()[1]
    assert any(line.startswith("aten::exp") and "[[2, 3]]" in line for line in table.splitlines())
    with pytest.raises(RuntimeError, match="record_shapes=True"):
        with profile() as plain:
            pass
        plain.key_averages(group_by_input_shape=True)


def test_profiler_key_is_off_outside_a_profile_block(device):
    mask = Profiler.mask
    assert not tls.include & mask
    with profile() as prof:
        assert tls.include & mask
        core.ones(2, device=device).exp()
    assert not tls.include & mask
    before = len(prof.events())
    core.ones(2, device=device).exp()  # after the block nothing is recorded
    assert len(prof.events()) == before
    from core.dispatch import OPERATORS

    exp = OPERATORS["exp"]
    exp._cache.clear()
    core.ones(2, device=device).exp()
    assert all(not key_set & mask for key_set in exp._cache)  # the hot path never resolved a Profiler kernel


def test_memory_columns_count_new_storages(device):
    with profile(profile_memory=True, record_shapes=True) as prof:
        with record_function("alloc"):
            a = core.zeros(1000, device=device)  # 4000 bytes of float32
            b = a + 1  # another 4000
            view = b[:10]  # a view: no new storage
            del a  # released inside the block: counted against "alloc"
        del b, view  # released outside any span: a top-level [memory] event
    events = {e.name: e for e in prof.events()}
    on_host = core.device(device).type == "cpu"
    usage = (lambda e: e.cpu_memory_usage) if on_host else (lambda e: e.device_memory_usage)
    self_usage = (lambda e: e.self_cpu_memory_usage) if on_host else (lambda e: e.self_device_memory_usage)
    assert usage(events["aten::add"]) == 4000 and self_usage(events["aten::add"]) == 4000
    assert usage(events["alloc"]) == 4000 + 4000 - 4000  # both allocations, less the released one
    assert self_usage(events["alloc"]) == -4000
    assert all(usage(e) == 0 for e in prof.events() if e.name in ("aten::slice", "aten::select", "aten::view"))
    assert usage(events["[memory]"]) == -4000 and events["[memory]"].cpu_parent is None
    memory = prof.events().memory_events  # (time ns, bytes, running total, device type, device index)
    assert [m[1] for m in memory] == [4000, 4000, -4000, -4000] and [m[2] for m in memory] == [4000, 8000, 4000, 0]
    table = prof.key_averages().table()
    header = table.splitlines()[1]
    if on_host:
        assert "CPU Mem" in header and "Self CPU Mem" in header
        assert re.search(r"aten::add .* 3\.91 Kb +3\.91 Kb", table)
    else:  # named after the device when its backend reports device time (opencl), else "Device"
        device_name = device.split(":")[0].upper() if any(e.is_device_event for e in prof.events()) else "Device"
        assert f"{device_name} Mem" in header and f"Self {device_name} Mem" in header


def test_flops_of_matmul(device):
    x = core.ones(3, 4, device=device)
    y = core.ones(4, 5, device=device)
    with profile(with_flops=True) as prof:
        x @ y
    (mm,) = [e for e in prof.events() if e.name == "aten::batched_matmul"]
    assert mm.flops == 2 * 3 * 4 * 5
    assert "Total FLOPs" in prof.key_averages().table()
    weight = core.ones(4, 3, 3, 3, device=device)
    with profile(with_flops=True) as prof:
        core.nn.functional.conv2d(core.ones(2, 3, 8, 8, device=device), weight)
    (conv,) = [e for e in prof.events() if e.name == "aten::convolution"]
    assert conv.flops == 2 * (2 * 4 * 6 * 6) * (3 * 3 * 3)  # two per multiply-add: each output sums C*kh*kw
    assert sum(e.flops for e in prof.events()) == conv.flops  # its matmul is not counted twice


def test_with_stack_records_the_callers_frames(tmp_path):
    with profile(with_stack=True) as prof:
        core.ones(2).exp()
    (exp,) = [e for e in prof.events() if e.name == "aten::exp"]
    assert exp.stack and "test_profiler.py" in exp.stack[0] and "test_with_stack" in exp.stack[0]
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()
    prof.export_stacks(str(tmp_path / "stacks.txt"), "cpu_time_total")
    lines = (tmp_path / "stacks.txt").read_text().splitlines()
    assert any(line.rsplit(" ", 1)[0].endswith(";aten::exp") and int(line.rsplit(" ", 1)[1]) >= 0 for line in lines)


def test_tensorboard_trace_handler_writes_a_named_trace(tmp_path):
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")):
        core.ones(2).exp()
    (name,) = os.listdir(tmp_path / "tb")
    assert re.fullmatch(r"w0\.\d+\.pt\.trace\.json", name)
    assert json.loads((tmp_path / "tb" / name).read_text())["traceEvents"]
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path / "gz"), use_gzip=True)):
        core.ones(2).exp()
    (name,) = os.listdir(tmp_path / "gz")
    assert name.endswith(".pt.trace.json.gz") and json.loads(gzip.decompress((tmp_path / "gz" / name).read_bytes()))


def test_profiles_do_not_nest_and_results_need_a_finished_profile():
    with profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile():
                pass
    legacy = core.autograd.profiler.profile()
    with pytest.raises(RuntimeError, match="didn't finish running"):
        legacy.key_averages()
    with pytest.raises(TypeError, match="ProfilerActivity"):
        profile(activities=["cpu"])


def test_kineto_step_tracker_counts_the_largest_requester():
    from core.profiler import KinetoStepTracker

    base = KinetoStepTracker.current_step()
    KinetoStepTracker.init_step_count("test_a")
    assert KinetoStepTracker.increment_step("test_a") == base + 1
    assert KinetoStepTracker.increment_step("test_b") == base + 2  # b starts at the global step, then counts
    assert KinetoStepTracker.increment_step("test_a") == base + 2 == KinetoStepTracker.current_step()
    assert KinetoStepTracker.erase_step_count("test_a") and KinetoStepTracker.erase_step_count("test_b")
    assert not KinetoStepTracker.erase_step_count("test_a")
    with profile() as prof:
        for _ in range(3):
            prof.step()
    assert KinetoStepTracker.current_step() == base + 2 + 3  # profile.step() counts as the "ProfilerStep" requester


def test_activities_and_kineto():
    from core.profiler import is_fbcode

    assert is_fbcode() is False
    assert ProfilerActivity.CPU in supported_activities()
    assert kineto_available() is False and core.autograd.kineto_available() is False
    assert core.autograd.ProfilerActivity is ProfilerActivity and core.autograd.DeviceType is DeviceType
    assert DeviceType.CPU == 0 and DeviceType.CUDA == 1 and DeviceType.OPENCL == 4


def test_autograd_profiler_is_the_legacy_api(device):
    x = core.ones(3, requires_grad=True, device=device)
    with core.autograd.profiler.profile(record_shapes=True) as prof:
        with core.autograd.profiler.record_function("loss"):
            (x * x).sum().backward()
    assert isinstance(prof.function_events, EventList)
    assert isinstance(prof.function_events, core.autograd.profiler.EventList)
    assert all(isinstance(e, core.autograd.profiler.FunctionEvent) for e in prof.function_events)
    averages = _averages_by_key(prof.key_averages())
    assert averages["loss"].count == 1 and averages["aten::mul"].count >= 3  # forward and two in backward
    assert isinstance(averages["loss"], core.autograd.profiler.FunctionEventAvg)
    assert "aten::mul" in prof.table() and prof.self_cpu_time_total > 0
    assert prof.total_average().count == len(prof.function_events)
    outer = core.autograd.profiler.profile()
    with outer:
        with pytest.raises(RuntimeError, match="already enabled"):
            core.autograd.profiler.profile().__enter__()
        with pytest.raises(RuntimeError, match="not reentrant"):
            outer.__enter__()
    with core.autograd.profiler.profile(enabled=False) as off:
        x.exp()
    assert off.function_events is None and not tls.include & Profiler.mask


def test_profiler_config_state_and_raw_events():
    from core.autograd import ProfilerConfig, ProfilerEvent, ProfilerState
    from core.profiler._recorder import Session

    config = ProfilerConfig(ProfilerState.CPU, report_input_shapes=True)
    assert config.report_input_shapes and not config.profile_memory and "CPU" in repr(config)
    with pytest.raises(TypeError, match="ProfilerState"):
        ProfilerConfig("cpu")
    with pytest.raises(RuntimeError, match="Disabled"):
        Session(ProfilerConfig(ProfilerState.Disabled))
    session = Session(config)
    session.start()
    try:
        core.ones(2, 3).exp()
    finally:
        session.stop()
    (exp,) = [r for r in session.records if r.name() == "aten::exp"]
    assert isinstance(exp, ProfilerEvent) and exp.shapes() == [[2, 3]] and exp.scope() == int(RecordScope.FUNCTION)
    assert exp.duration_us() >= 0 and exp.device() == -1 and exp.cpu_memory_usage() == 0
    assert exp.thread_id() == session.thread
    first = session.records[0]
    assert first.cpu_elapsed_us(exp) == pytest.approx(exp.start_us() - first.start_us())


# -- device time from a backend's runtime -------------------------------------------------------------------

@pytest.fixture
def profiling_device(entry_points):
    """A host-memory test device whose runtime reports one device event per profile block."""
    from core.backends.api import DeviceEvent, hookimpl

    with isolated_plugin_manager(str(FIXTURES / "core_testdev"), "core_testdev") as manager:
        from core_testdev.runtime import TestDevRuntime

        class ProfilingRuntime(TestDevRuntime):
            started = 0

            def start_profiling(self):
                ProfilingRuntime.started += 1
                import time

                self._t0 = time.perf_counter_ns() / 1000
                return True

            def stop_profiling(self):
                return [DeviceEvent("kernel_a", self._t0, 250.0, 1), DeviceEvent("kernel_a", self._t0 + 300, 50.0)]

        class Plugin:
            @hookimpl
            def register_backends(self, register):
                register(name="profdev", device_type="profdev", runtime=ProfilingRuntime)

        manager.register_plugin(Plugin(), name="profdev")
        manager.backend_for("profdev")  # loads the backend
        yield ProfilingRuntime


def test_backend_reports_device_time_through_its_runtime(profiling_device, tmp_path):
    assert ProfilerActivity.PrivateUse1 in supported_activities()
    with profile() as prof:
        core.ones(2).exp()
    assert profiling_device.started == 1
    kernels = [e for e in prof.events() if e.name == "kernel_a"]
    assert [(e.device_index, e.device_time_total, e.cpu_time_total) for e in kernels] == [(1, 250.0, 0.0),
                                                                                          (0, 50.0, 0.0)]
    assert kernels[0].device_type == DeviceType.PrivateUse1 and kernels[0].scope == RecordScope.KERNEL_FUNCTION_DTYPE
    average = _averages_by_key(prof.key_averages())["kernel_a"]
    assert average.count == 2 and average.device_time_total == 300.0 and average.self_cpu_time_total == 0
    header = prof.key_averages().table().splitlines()[1]
    # PyTorch names PrivateUse1 columns after the renamed backend; a core plugin's device type is that name
    assert "Self PROFDEV" in header and "PROFDEV total" in header
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    spans = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert [(e["dur"], e["pid"], e["cat"]) for e in spans if e["name"] == "kernel_a"] == [(250.0, 1, "kernel"),
                                                                                        (50.0, 0, "kernel")]
    assert {(e["pid"], e["args"]["name"]) for e in spans if e["ph"] == "M"} == {(1, "PrivateUse1 1"),
                                                                                (0, "PrivateUse1 0")}
    with profile(activities=[ProfilerActivity.CPU]) as cpu_only:  # the device activity not asked: not started
        core.ones(2).exp()
    assert profiling_device.started == 1 and not [e for e in cpu_only.events() if e.name == "kernel_a"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with core.autograd.profiler.profile(use_device="profdev", use_cpu=False) as legacy:
            core.ones(2).exp()
    assert [e.name for e in legacy.function_events] == ["kernel_a", "kernel_a"]
    with core.autograd.profiler.profile(use_device="otherdev") as other:  # only the named device type is asked
        core.ones(2).exp()
    assert profiling_device.started == 2 and not [e for e in other.function_events if e.name == "kernel_a"]
