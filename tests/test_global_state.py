"""Process-wide switches of the torch namespace (determinism, threads, warnings, anomaly mode, default tensor
type), the sym_* helpers and futures (fork/wait)."""

from __future__ import annotations

import math
import sys
import threading
import warnings

import numpy as np
import pytest

import core
from core import global_state


@pytest.fixture
def restore():
    """Put every switch back as it was (the state is process-wide)."""
    saved = dict(global_state._state)
    device_module = sys.modules["core.device"]  # ``core.device`` is the class
    dtype, dev = core.get_default_dtype(), device_module._api_default[0]
    yield
    global_state._state.update(saved)
    core.set_default_dtype(dtype)
    device_module._api_default[0] = dev
    core.config.reset("num_threads")


def test_deterministic_switches(restore):
    assert not core.are_deterministic_algorithms_enabled() and core.get_deterministic_debug_mode() == 0
    core.use_deterministic_algorithms(True, warn_only=True)
    assert core.are_deterministic_algorithms_enabled() and core.is_deterministic_algorithms_warn_only_enabled()
    assert core.get_deterministic_debug_mode() == 1
    for mode, level in (("error", 2), ("default", 0), (1, 1), (2, 2), (0, 0), ("warn", 1)):
        core.set_deterministic_debug_mode(mode)
        assert core.get_deterministic_debug_mode() == level
        assert core.are_deterministic_algorithms_enabled() == (level > 0)
        assert core.is_deterministic_algorithms_warn_only_enabled() == (level == 1)
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        core.set_deterministic_debug_mode("loud")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2"):
        core.set_deterministic_debug_mode(3)
    with pytest.raises(TypeError):
        core.use_deterministic_algorithms("yes")


def test_deterministic_mode_fills_empty(device, restore):
    core.use_deterministic_algorithms(True)
    assert np.isnan(core.empty(2, 3, device=device).cpu().numpy()).all()
    assert core.empty(4, dtype=core.int32, device=device).tolist() == [2**31 - 1] * 4
    assert np.isnan(core.empty_like(core.zeros(3, device=device)).cpu().numpy()).all()
    assert core.empty_strided((2, 2), (1, 2), dtype=core.int64, device=device).tolist() == [[2**63 - 1] * 2] * 2
    core.use_deterministic_algorithms(False)
    assert core.empty(2, device=device).shape == (2,)


def test_float32_matmul_precision(restore):
    assert core.get_float32_matmul_precision() == "highest"
    for p in ("high", "medium", "highest"):
        core.set_float32_matmul_precision(p)
        assert core.get_float32_matmul_precision() == p
    with pytest.raises(RuntimeError, match="Invalid precision"):
        core.set_float32_matmul_precision("low")


def test_num_threads_reach_the_cpu_backend(restore):
    runtimes = global_state._loaded_cpu_runtimes()
    before = core.get_num_threads()
    core.set_num_threads(1)
    assert core.get_num_threads() == 1 and core.config.get("num_threads") == 1
    assert all(r.get_num_threads() == 1 for r in runtimes)
    core.set_num_threads(before)
    assert core.get_num_threads() == before
    core.init_num_threads()
    with pytest.raises(RuntimeError, match="positive"):
        core.set_num_threads(0)
    with pytest.raises(TypeError):
        core.set_num_threads(1.5)


def test_cpu_c_threads_change():
    cpu_c = pytest.importorskip("core_cpu_c")
    core.zeros(1, device="cpu")  # the cpu backend is loaded
    if not global_state._loaded_cpu_runtimes():
        pytest.skip("cpu_c is not the loaded cpu backend")
    before = cpu_c.get_num_threads()
    try:
        core.set_num_threads(1)
        assert cpu_c.get_num_threads() == 1
    finally:
        core.set_num_threads(before)
        core.config.reset("num_threads")


def test_interop_threads_and_fork(restore):
    assert core.get_num_interop_threads() >= 1
    futures = [core.fork(lambda a, b=1: a * b, i, b=3) for i in range(5)]
    assert [core.wait(f) for f in futures] == [0, 3, 6, 9, 12]
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        core.set_num_interop_threads(2)  # the pool has started


def test_future_api():
    f = core.Future()
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    chained = f.then(lambda fut: fut.wait() + 1)
    assert not f.done()
    with pytest.raises(RuntimeError, match="not completed"):
        f.value()
    f.set_result(41)
    assert f.done() and f.wait() == 41 and seen == [41] and chained.wait() == 42
    with pytest.raises(RuntimeError, match="once"):
        f.set_result(0)
    failing = core.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        core.wait(failing)
    with pytest.raises(ZeroDivisionError):
        failing.then(lambda fut: fut.wait()).wait()
    parts = [core.fork(lambda k=k: core.tensor([k]).sum().item()) for k in range(3)]
    assert core.futures.wait_all(parts) == [0, 1, 2]
    with pytest.raises(TypeError):
        core.wait(3)


def test_forked_tensor_work_runs_concurrently():
    started, release = threading.Event(), threading.Event()

    def first():
        started.set()
        assert release.wait(10)
        return core.ones(3).sum().item()

    f = core.fork(first)
    assert started.wait(10)
    g = core.fork(lambda: (core.arange(4.0) * 2).tolist())  # runs while ``first`` still waits
    assert g.wait() == [0.0, 2.0, 4.0, 6.0]
    release.set()
    assert f.wait() == 3.0


def test_warn_always_repeats_the_fallback_warning(restore):
    from core.dispatch.operator import warn_once

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_once("test_global_state", "first")
        warn_once("test_global_state", "second")
        assert [str(w.message) for w in caught] == ["first"]
        assert not core.is_warn_always_enabled()
        core.set_warn_always(True)
        assert core.is_warn_always_enabled()
        warn_once("test_global_state", "third")
        assert [str(w.message) for w in caught] == ["first", "third"]


def test_anomaly_switches_reach_autograd():
    x = core.tensor([0.0], requires_grad=True)
    try:
        core.set_anomaly_enabled(True)
        assert core.is_anomaly_enabled() and core.autograd.is_anomaly_enabled()
        assert core.is_anomaly_check_nan_enabled()
        with pytest.raises(RuntimeError, match="returned nan values"):
            (core.sqrt(x) * 0).sum().backward()
        core.set_anomaly_enabled(True, check_nan=False)
        assert not core.is_anomaly_check_nan_enabled()
        (core.sqrt(x) * 0).sum().backward()
        assert math.isnan(x.grad.item())
    finally:
        core.set_anomaly_enabled(False)
    assert not core.is_anomaly_enabled() and core.is_anomaly_check_nan_enabled()


def test_set_default_tensor_type(restore):
    core.set_default_tensor_type(core.DoubleTensor)
    assert core.get_default_dtype() is core.float64 and core.tensor([1.5]).dtype is core.float64
    core.set_default_tensor_type("torch.FloatTensor")
    assert core.get_default_dtype() is core.float32
    with pytest.raises(TypeError, match="only floating-point types"):
        core.set_default_tensor_type(core.LongTensor)
    with pytest.raises(ValueError, match="invalid type"):
        core.set_default_tensor_type("torch.Nothing")


def test_flush_denormal_is_honest():
    assert core.set_flush_denormal(True) is False
    tiny = np.float32(1e-40)  # a float32 denormal stays one
    assert core.tensor([tiny]).item() == pytest.approx(float(tiny))


def test_typename_and_is_storage():
    assert core.typename(core.zeros(2, dtype=core.int64)) == "core.LongTensor"
    assert core.typename(1.0) == "float" and core.typename(core.nn.Linear) == "core.nn.modules.linear.Linear"
    assert core.typename(core.nn.Linear(2, 2)) == "core.nn.modules.linear.Linear"
    assert core.is_storage(core.zeros(2).untyped_storage()) and not core.is_storage(core.zeros(2))


@pytest.mark.parametrize("name, args, expected", [
    ("sym_int", (-2.7,), -2), ("sym_int", (3.9,), 3), ("sym_float", (3,), 3.0), ("sym_max", (2, 5.5), 5.5),
    ("sym_min", (2, 5.5), 2), ("sym_not", (0,), True), ("sym_sqrt", (16,), 4.0), ("sym_sum", ([1, 2, 3.5],), 6.5),
    ("sym_ite", (False, "t", "f"), "f"), ("sym_ite", (True, "t", "f"), "t"),
])
def test_sym_helpers_on_numbers(name, args, expected):
    result = getattr(core, name)(*args)
    assert result == expected and type(result) is type(expected)
