"""The webgpu backend's runtime (plugins/webgpu): discovery, the buffer pool and memory stats, host copies of every
dtype, dispatches and in-place aliasing, configuration, float64's refusal, and what ``python -m core info`` says.

The kernels are tested by the device-parametrised suite (``pytest --core-backend webgpu``) and the conformance
suite; here the runtime under them. Without an adapter (no wgpu, no Metal/Vulkan/D3D12 driver) these are skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import core
from core.testing import assert_close

core_webgpu = pytest.importorskip("core_webgpu", reason="the core-webgpu plugin is not installed")
from core_webgpu import plugin as wg_plugin  # noqa: E402
from core_webgpu import runtime as wg_runtime  # noqa: E402
from core_webgpu.kernels._common import MAIN, bindings  # noqa: E402

needs_device = pytest.mark.skipif(not core.webgpu.is_available(),
                                  reason=f"no WebGPU adapter: {core.webgpu.unavailable_reason()}")
DEV = "webgpu"
ROOT = Path(__file__).resolve().parent.parent
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
          "float32", "complex64"]


def _rng():
    return np.random.default_rng(0)


def _sample(dtype: str, shape: tuple) -> np.ndarray:
    rng = _rng()
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    d = getattr(core, dtype)
    if d.is_floating_point:
        return (rng.standard_normal(shape) * 3).astype(d.numpy)
    info = np.iinfo(d.numpy)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(d.numpy)


# -- discovery and configuration -----------------------------------------------------------------------------

def test_no_adapter_is_reported_unavailable_with_the_reason(monkeypatch):
    wgpu = pytest.importorskip("wgpu")
    monkeypatch.delenv(wg_runtime.ENV_ADAPTER, raising=False)
    monkeypatch.setattr(wgpu.gpu, "request_adapter_sync", lambda **kwargs: None)
    ok, reason = wg_runtime.WebGPURuntime().is_available()
    assert not ok and "no WebGPU adapter" in reason
    assert "mesa-vulkan-drivers" in wg_plugin.INSTALL_HINT and "core[webgpu]" in wg_plugin.INSTALL_HINT


def test_a_driver_error_is_reported_not_raised(monkeypatch):
    wgpu = pytest.importorskip("wgpu")
    monkeypatch.delenv(wg_runtime.ENV_ADAPTER, raising=False)

    def broken(**kwargs):
        raise RuntimeError("Vulkan loader: no ICD found\nsecond line")

    monkeypatch.setattr(wgpu.gpu, "request_adapter_sync", broken)
    assert wg_runtime.WebGPURuntime().is_available() == (False, "Vulkan loader: no ICD found")


@needs_device
def test_discovery_and_device_helpers():
    assert core.webgpu.is_available() and core.webgpu.device_count() == 1
    name = core.webgpu.get_device_name()
    slot = wg_runtime.RUNTIME.slot
    assert name.startswith(slot.info["device"]) and slot.info["backend_type"] in name
    assert core.zeros(2, device=DEV).device == core.device("webgpu:0")
    with pytest.raises(RuntimeError, match="not a valid device"):
        core.zeros(2, device="webgpu:1")
    from core.dispatch.keys import backend_key

    assert backend_key("webgpu").name == "WebGPU"


@needs_device
def test_adapter_selection_by_name_and_its_error(monkeypatch):
    device = wg_runtime.RUNTIME.slot.info["device"]
    monkeypatch.setenv(wg_runtime.ENV_ADAPTER, device.split()[0].upper())  # any part of the name, any case
    rt = wg_runtime.WebGPURuntime()
    assert rt.is_available() == (True, "") and rt.slot.info["device"] == device
    monkeypatch.setenv(wg_runtime.ENV_ADAPTER, "no such adapter")
    rt = wg_runtime.WebGPURuntime()
    ok, reason = rt.is_available()
    assert not ok and reason.startswith("CORE_WEBGPU_ADAPTER='no such adapter': no Metal, Vulkan or D3D12 WebGPU "
                                        "adapter has that name")
    assert device in reason  # the adapters there are
    with pytest.raises(RuntimeError, match="no Metal, Vulkan or D3D12 WebGPU adapter has that name"):
        rt.device_name()


@needs_device
def test_power_preference_and_unknown_keys_are_validated():
    rt = wg_runtime.WebGPURuntime()
    with pytest.raises(ValueError, match=r"power_preference: expected 'high-performance' or 'low-power', got 'fast'"):
        rt.configure({"power_preference": "fast"})
    with pytest.raises(ValueError, match=r"unknown key\(s\) device \(known: power_preference\)"):
        rt.configure({"device": 0})
    rt.configure({"power_preference": "low-power"})
    assert rt.is_available() == (True, "") and rt.slot.pool.active_bytes == 0


@needs_device
def test_float64_and_complex128_are_refused_with_a_type_error():
    assert not wg_runtime.RUNTIME.supports_float64
    with pytest.raises(TypeError, match=r"zeros\(\): device webgpu:0 \(backend webgpu\) does not support dtype "
                                        r"float64"):
        core.zeros(3, dtype=core.float64, device=DEV)
    with pytest.raises(TypeError, match="does not support dtype complex128"):
        core.tensor(np.ones(2, np.complex128), device=DEV)
    with pytest.raises(TypeError, match="float64"):
        core.ones(3, device=DEV).double()


# -- memory --------------------------------------------------------------------------------------------------

@needs_device
def test_the_pool_reuses_buffers_and_counts_memory():
    pool = wg_runtime.RUNTIME.slot.pool
    core.webgpu.synchronize()
    before = core.webgpu.memory_allocated()
    t = core.empty(1000, device=DEV)  # 4000 bytes: size class 4096
    assert core.webgpu.memory_allocated() == before + 4096
    assert core.webgpu.memory_reserved() >= core.webgpu.memory_allocated()
    gpu = t._storage.data.gpu
    del t
    assert core.webgpu.memory_allocated() == before
    core.webgpu.reset_peak_memory_stats()
    u = core.empty(1024, device=DEV)  # same size class: the buffer comes back
    assert u._storage.data.gpu is gpu and gpu in pool.owned
    assert core.webgpu.max_memory_allocated() == before + 4096
    x, y = core.zeros(10, device=DEV), core.zeros(10, device=DEV)
    assert x.data_ptr() != y.data_ptr() and x.data_ptr() % 256 == 0
    assert x[3:].data_ptr() == x.data_ptr() + 12 and u.data_ptr() == pool.owned[gpu]
    del u, x, y
    held = core.webgpu.memory_reserved()
    core.webgpu.empty_cache()
    assert core.webgpu.memory_reserved() < held and gpu not in pool.owned
    assert core.webgpu.max_memory_reserved() >= held


def test_size_classes_are_multiples_of_four_with_little_waste():
    for n in [0, 1, 3, 4, 17, 100, 1000, 4097, 10**6, 3 * 10**7 + 1]:
        size = wg_runtime._size_class(n)
        assert size >= max(n, 16) and size % 4 == 0 and size <= max(16, n * 1.125 + 4)


@needs_device
def test_buffers_freed_by_the_garbage_collector_stay_usable():
    import gc

    for _ in range(3):  # cycles of tensors, freed by the collector: their buffers go back to the pool intact
        a = core.ones(256, device=DEV)
        holder = [a]
        holder.append(holder)
        del a, holder
        gc.collect()
        b = core.full((256,), 2.0, device=DEV)
        assert_close(b.cpu(), np.full(256, 2.0, np.float32))


# -- host copies ---------------------------------------------------------------------------------------------

@needs_device
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trips_of_every_dtype_through_offsets_and_strides(dtype):
    a = _sample(dtype, (4, 6, 5))
    t = core.tensor(a, device=DEV)
    assert t.dtype is getattr(core, dtype)
    assert_close(t.cpu(), a)
    assert_close(t.transpose(0, 2).cpu(), a.transpose(2, 1, 0))
    assert_close(t[1:, ::2, 3].cpu(), a[1:, ::2, 3])
    assert_close(t[2, 1, 1:4].cpu(), a[2, 1, 1:4])  # an odd byte offset for the 1-byte dtypes
    assert_close(t[:, 1:4].clone().cpu(), a[:, 1:4])


@needs_device
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "float16", "int16", "bfloat16"])
def test_unaligned_writes_keep_the_neighbouring_bytes(dtype):
    a = _sample(dtype, (11,))
    src = _sample(dtype, (40,))[-3:]
    t = core.tensor(a, device=DEV)
    t[1:4].copy_(core.tensor(src))  # bytes 1..3 of a word (2..7 for 2-byte dtypes): a read-modify-write
    t[9:10].fill_(core.tensor(src[:1]).item())
    expected = a.copy()
    expected[1:4], expected[9] = src, src[0]
    assert_close(t.cpu(), expected)
    strided = core.tensor(a, device=DEV)
    strided[::3].copy_(core.tensor(src[:1]).expand(4))  # a strided write: the elements between keep their values
    expected = a.copy()
    expected[::3] = src[0]
    assert_close(strided.cpu(), expected)


@needs_device
def test_slot_reads_and_writes_at_unaligned_byte_ranges():
    slot = wg_runtime.RUNTIME.slot
    buf = slot.pool.allocate(32)
    slot.write(buf, 0, bytes(range(32)))
    slot.write(buf, 5, b"\xaa\xbb\xcc")
    data = bytearray(range(32))
    data[5:8] = b"\xaa\xbb\xcc"
    assert slot.read(buf, 0, 32) == bytes(data)
    assert slot.read(buf, 3, 6) == bytes(data[3:9])
    assert slot.read(buf, 31, 1) == bytes(data[31:])


# -- dispatches ----------------------------------------------------------------------------------------------

def _shift_add(slot, out, src, n: int) -> None:
    """out[i] = src[i] + src[i + 1] for i < n (a kernel of the runtime's binding convention)."""

    def render():
        return (bindings([("out", "f32")], [("src", "f32")]) + MAIN
                + "    if (i >= p[0]) { return; }\n    out[i] = src[i] + src[i + 1];\n}\n")

    slot.dispatch(("test_shift_add",), render, [out], [src], (n,), wg_runtime.grid(n))


@needs_device
def test_a_dispatch_that_reads_what_it_writes_reads_a_copy():
    slot = wg_runtime.RUNTIME.slot
    a = np.arange(10, dtype=np.float32) ** 2
    t = core.tensor(a, device=DEV)
    _shift_add(slot, t._storage.data, t._storage.data, 9)  # in place: every read sees the values before the call
    expected = a.copy()
    expected[:9] = a[:9] + a[1:]
    assert_close(t.cpu(), expected)


@needs_device
def test_dispatches_are_batched_and_synchronize_submits_them():
    slot = wg_runtime.RUNTIME.slot
    a = core.tensor(np.arange(5000, dtype=np.float32), device=DEV)
    out = core.empty(4999, device=DEV)
    count = slot.dispatch_count
    _shift_add(slot, out._storage.data, a._storage.data, 4999)
    assert slot.dispatch_count == count + 1 and slot._encoder is not None  # recorded, not submitted yet
    core.webgpu.synchronize()
    assert slot._encoder is None and slot._pending == 0
    assert_close(out.cpu(), np.arange(4999, dtype=np.float32) * 2 + 1)
    for _ in range(wg_runtime._BATCH):  # a full batch is submitted without waiting for a host copy
        _shift_add(slot, out._storage.data, a._storage.data, 4999)
    assert slot._pending < wg_runtime._BATCH


def test_grids_cover_large_launches_within_the_per_dimension_limit():
    for n in [1, 64, 65, 64 * 65535, 64 * 65535 + 1, 10**9]:
        x, y, z = wg_runtime.grid(n)
        assert x <= 65535 and y <= 65535 and z == 1 and x * y * wg_runtime.WORKGROUP >= n


# -- reporting -----------------------------------------------------------------------------------------------

@needs_device
def test_info_shows_the_adapter_its_features_and_limits():
    from core.info import collect

    data = collect()
    row = next(r for r in data["backends"] if r["name"] == "webgpu")
    assert row["status"] == "loaded" and row["selected"]
    slot = wg_runtime.RUNTIME.slot
    (name,) = row["devices"]
    assert slot.info["backend_type"] in name and slot.info["adapter_type"] in name
    for feature in ("shader-f16", "shader-int64"):
        assert f"{feature} {'yes' if feature in slot.features else 'no'}" in name
    assert f"max storage binding {slot.limits['max-storage-buffer-binding-size'] / 2**20:g} MiB" in name
    extra = next(e for e in data["extras"] if e["name"] == "webgpu")
    assert extra["installed"] and extra["install"] == "pip install -e '.[webgpu]' -e plugins/webgpu"


def test_info_says_why_there_is_no_adapter_and_how_to_get_one():
    pytest.importorskip("wgpu")
    code = ("import wgpu\nwgpu.gpu.request_adapter_sync = lambda **kwargs: None\n"
            "import core.info\nprint(core.info.report())")
    env = {k: v for k, v in os.environ.items() if k != "CORE_WEBGPU_ADAPTER"}  # the patched call decides
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=env)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.split()[:2] == ["webgpu", "webgpu"])
    assert "unavailable: no WebGPU adapter" in line and "mesa-vulkan-drivers" in line


def test_an_opengl_adapter_alone_is_not_used():
    """wgpu's OpenGL backend lacks shader-int64 and leaves integer remainders of negative numbers undefined."""
    pytest.importorskip("wgpu")
    code = ("import wgpu\n"
            "class GL:\n    info = {'device': 'llvmpipe', 'vendor': '', 'backend_type': 'OpenGL'}\n"
            "wgpu.gpu.request_adapter_sync = lambda **kwargs: GL()\n"
            "wgpu.gpu.enumerate_adapters_sync = lambda: [GL()]\n"
            "import core.info\nprint(core.info.report())")
    env = {k: v for k, v in os.environ.items() if k != "CORE_WEBGPU_ADAPTER"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=env)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.split()[:2] == ["webgpu", "webgpu"])
    assert "unavailable: no WebGPU adapter: wgpu found only OpenGL" in line and "mesa-vulkan-drivers" in line


@needs_device
def test_tests_that_need_float64_are_skipped_on_webgpu_and_other_type_errors_fail(tmp_path):
    (tmp_path / "test_f64.py").write_text(textwrap.dedent("""
        import pytest

        import core

        def test_needs_float64(core_device):
            assert core.zeros(2, dtype=core.float64, device=core_device).sum().item() == 0

        def test_other_type_error(core_device):
            core.zeros(2, device=core_device) + "text"

        def test_a_refusal_under_pytest_warns(core_device):
            with pytest.warns(UserWarning):  # its "DID NOT WARN" failure sits over the refusal
                core.zeros(2, dtype=core.float64, device=core_device)

        @pytest.mark.parametrize("dst", ["webgpu"])
        @pytest.mark.parametrize("src", ["cpu"])
        def test_a_transfer(src, dst):
            core.zeros(2, dtype=core.float64, device=src).to(dst)
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--core-backend",
                           "webgpu", str(tmp_path / "test_f64.py")], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert "1 failed, 3 skipped" in done.stdout, done.stdout
    assert "webgpu has no float64 (zeros(): device webgpu:0 (backend webgpu) does not support dtype float64)" \
        in done.stdout


@needs_device
def test_the_profiler_gets_each_dispatchs_device_time_from_timestamp_queries():
    import time

    from core.profiler import profile

    slot = wg_runtime.RUNTIME.slot
    if "timestamp-query" not in slot.features:
        pytest.skip("the adapter has no timestamp-query")
    a = core.tensor(np.arange(5000, dtype=np.float32), device=DEV)
    out = core.empty(4999, device=DEV)
    _shift_add(slot, out._storage.data, a._storage.data, 4999)  # compiled before the block
    core.webgpu.synchronize()
    assert slot.recorder is None  # nothing is recorded outside a block
    before = time.perf_counter_ns() / 1000
    with profile() as prof:
        for _ in range(3):
            _shift_add(slot, out._storage.data, a._storage.data, 4999)
        assert wg_runtime.RUNTIME.start_profiling() is False  # one block at a time records device time
    after = time.perf_counter_ns() / 1000
    kernels = [e for e in prof.events() if e.is_device_event]
    assert [e.name for e in kernels] == ["test_shift_add"] * 3 and slot.recorder is None
    for event in kernels:
        assert event.device_index == 0 and event.device_time_total > 0 and event.cpu_time_total == 0
        assert before - 1000 <= event.time_range.start <= event.time_range.end <= after + 1000
    assert kernels[0].time_range.end <= kernels[1].time_range.start + 1  # in order, on one queue
    assert_close(out.cpu(), np.arange(4999, dtype=np.float32) * 2 + 1)


@needs_device
def test_the_profiler_shows_a_fallback_op_without_the_fallbacks_copies():
    import warnings

    from core.profiler import profile

    x = core.ones(4, device=DEV)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the fallback's one-time warning
        with profile() as prof:
            y = core.special.i0e(x)  # no webgpu kernel (nor planned): the counted CPU fallback runs it
    assert [e.name for e in prof.events() if not e.is_device_event] == ["aten::special_i0e"]
    assert y.device == core.device("webgpu:0")
