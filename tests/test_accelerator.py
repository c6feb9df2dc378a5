"""``core.accelerator`` (PyTorch's ``torch.accelerator``) and ``core.get_device_module``: which device type is the
accelerator, the device-index API, synchronize and the memory queries, answered by the plugin behind it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from collections import OrderedDict
from pathlib import Path

import pytest

import core
from core.backends.api import Runtime, hookimpl
from core.device_module import DeviceModule

from conftest import isolated_plugin_manager

FIXTURES = Path(__file__).parent / "fixtures"
NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def _fresh(code: str, **env) -> dict:
    """What ``code`` (ending by printing one JSON value) prints in a new interpreter after ``import core``."""
    done = subprocess.run([sys.executable, "-c", "import json, sys\nimport core\n" + code], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


# -- this machine's accelerator, in a fresh interpreter ---------------------------------------------------------------
def test_accelerator_is_an_attribute_right_after_import_core():
    expected = core.accelerator.current_accelerator()
    found = _fresh("""
before = "core.accelerator" in sys.modules
acc = core.accelerator.current_accelerator()
print(json.dumps({"before": before, "acc": None if acc is None else str(acc),
                  "same": core.accelerator is sys.modules["core.accelerator"], "listed": "accelerator" in dir(core)}))
""")
    assert found == {"before": False, "acc": None if expected is None else str(expected), "same": True,
                     "listed": True}


NO_ACCELERATOR = """
acc = core.accelerator
errors = {}
for name in ("current_device_index", "set_device_index", "synchronize", "empty_cache", "memory_allocated"):
    try:
        getattr(acc, name)(*([0] if name == "set_device_index" else []))
        errors[name] = None
    except RuntimeError as exc:
        errors[name] = str(exc)
print(json.dumps({"acc": acc.current_accelerator(), "checked": acc.current_accelerator(check_available=True),
                  "available": acc.is_available(), "count": acc.device_count(),
                  "module": core.get_device_module().device_type, "errors": errors}))
"""


def _assert_no_accelerator(found: dict) -> None:
    assert {k: found[k] for k in ("acc", "checked", "available", "count", "module")} == {
        "acc": None, "checked": None, "available": False, "count": 0, "module": "cpu"}
    for name, message in found["errors"].items():
        assert message is not None and message.startswith(NONE_AVAILABLE), name


def test_no_accelerator_when_every_plugin_is_blocked():
    _assert_no_accelerator(_fresh(NO_ACCELERATOR, CORE_BLOCK="opencl,cuda,webgpu,cpu_c", CORE_DEVICE="cpu"))


def test_no_accelerator_when_autoload_is_off():
    _assert_no_accelerator(_fresh(NO_ACCELERATOR, CORE_DISABLE_PLUGIN_AUTOLOAD="1", CORE_DEVICE="cpu"))


@pytest.mark.skipif(core.cuda.is_available(), reason="cuda would be the accelerator")
def test_blocking_opencl_and_webgpu_leaves_no_accelerator_here():
    _assert_no_accelerator(_fresh(NO_ACCELERATOR, CORE_BLOCK="opencl,webgpu", CORE_DEVICE="cpu"))


# -- the rule: the default device's type, else the first available of cuda, opencl, then the others by name -------
def test_current_accelerator_follows_the_priority_order_of_available_backends():
    expected = next((t for t in ("cuda", "opencl") if getattr(core, t).is_available()), None)
    if core.get_default_device().type not in ("cpu", "meta"):
        pytest.skip("a non-cpu default device is the accelerator")
    if expected is None:
        pytest.skip("neither cuda nor opencl is available here")
    acc = core.accelerator.current_accelerator()
    assert acc == core.device(expected) and acc.index is None
    assert core.accelerator.is_available()
    assert core.accelerator.device_count() == getattr(core, expected).device_count() >= 1
    assert core.get_device_module() is getattr(core, expected)


def test_the_default_device_type_is_the_accelerator_even_when_unavailable():
    if core.cuda.is_available():
        pytest.skip("cuda is available here")
    with core.device("cuda"):
        assert core.accelerator.current_accelerator() == core.device("cuda")
        assert core.accelerator.current_accelerator(check_available=True) is None
        assert not core.accelerator.is_available() and core.accelerator.device_count() == 0
        with pytest.raises(core.plugins.manager.BackendUnavailableError, match="current accelerator 'cuda'"):
            core.accelerator.current_device_index()


def test_cpu_and_meta_defaults_are_not_accelerators():
    with core.device("meta"):
        accelerator = core.accelerator.current_accelerator()
    assert accelerator is None or accelerator.type not in ("cpu", "meta")


# -- the API on this machine's accelerator ---------------------------------------------------------------------------
needs_accelerator = pytest.mark.skipif(not core.accelerator.is_available(), reason="no accelerator here")


@needs_accelerator
def test_device_index_api_on_the_current_accelerator():
    acc = core.accelerator
    kind = acc.current_accelerator().type
    index = acc.current_device_index()
    assert 0 <= index < acc.device_count()
    acc.set_device_index(index)
    acc.set_device_index(f"{kind}:{index}")
    acc.set_device_index(core.device(kind, index))
    acc.set_device_index(-1)  # a negative index is a no-op, as in PyTorch
    assert acc.current_device_index() == index
    with pytest.raises(RuntimeError, match="not a valid device"):
        acc.set_device_index(acc.device_count())
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        acc.set_device_index("meta:0")
    with pytest.raises(ValueError, match="specified index"):
        acc.set_device_index(kind)
    acc.synchronize()
    acc.synchronize(index)
    acc.synchronize(kind)


@needs_accelerator
def test_deprecated_aliases_warn_and_work():
    with pytest.warns(FutureWarning, match="current_device_index"):
        index = core.accelerator.current_device_idx()
    assert index == core.accelerator.current_device_index()
    with pytest.warns(FutureWarning, match="set_device_index"):
        core.accelerator.set_device_idx(index)


@needs_accelerator
def test_device_index_context_restores_and_none_is_a_no_op():
    acc = core.accelerator
    before = acc.current_device_index()
    with acc.device_index(None):
        assert acc.current_device_index() == before
    with acc.device_index(acc.device_count() - 1):
        assert acc.current_device_index() == acc.device_count() - 1
    assert acc.current_device_index() == before


@needs_accelerator
def test_memory_queries_see_a_tensor_on_the_accelerator():
    acc = core.accelerator
    kind = acc.current_accelerator().type
    acc.empty_cache()
    before = acc.memory_allocated()
    x = core.ones(1 << 20, device=kind)
    acc.synchronize()
    assert acc.memory_allocated() >= before + (4 << 20)
    assert acc.memory_allocated(f"{kind}:0") == acc.memory_allocated(0) == acc.memory_allocated()
    assert acc.max_memory_allocated() >= acc.memory_allocated()
    assert acc.memory_reserved() >= acc.memory_allocated()
    assert acc.max_memory_reserved() >= acc.memory_reserved()
    stats = acc.memory_stats()
    assert isinstance(stats, OrderedDict) and stats["allocated_bytes.all.current"] == acc.memory_allocated()
    assert stats["reserved_bytes.all.peak"] >= stats["reserved_bytes.all.current"]
    del x


# -- core.get_device_module ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arg, name", [("cpu", "cpu"), ("opencl", "opencl"), ("cuda:0", "cuda"),
                                       (core.device("meta"), "meta"), (core.device("cuda", 1), "cuda")])
def test_get_device_module_names_the_module_of_a_device(arg, name):
    module = core.get_device_module(arg)
    assert module is getattr(core, name) and isinstance(module, DeviceModule) and module.device_type == name


def test_get_device_module_of_nothing_is_the_accelerators_or_cpu():
    acc = core.accelerator.current_accelerator()
    assert core.get_device_module() is getattr(core, "cpu" if acc is None else acc.type)


def test_get_device_module_errors_like_pytorch():
    with pytest.raises(RuntimeError, match="Device 'hpu' does not have a corresponding module"):
        core.get_device_module("hpu:0")  # a PyTorch device type no backend here provides
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, .* device type at start of device string: "
                                           "nosuchdev"):
        core.get_device_module("nosuchdev:0")  # PyTorch parses the string first: an unknown type fails there
    with pytest.raises(RuntimeError, match="Invalid value of device '3'"):
        core.get_device_module(3)
    with pytest.raises(RuntimeError, match="Invalid device string"):
        core.get_device_module("not a device")


def test_cpu_device_module_answers_like_torch_cpu():
    assert core.cpu.is_available() and core.cpu.device_count() >= 1 and core.cpu.current_device() == 0
    core.cpu.synchronize()


# -- a plugin device type: the module delegates to its runtime ------------------------------------------------------
class TwoDeviceRuntime(Runtime):
    """Two host devices with a current-device setting and a pool that records peaks."""

    def __init__(self):
        self.current, self.used, self.peak = 0, [0, 0], [0, 0]
        self.synchronized: list = []

    def device_count(self):
        return 2

    def current_device(self):
        return self.current

    def set_device(self, index):
        self.current = index

    def synchronize(self, dev=None):
        self.synchronized.append(str(dev))

    def memory_allocated(self, index):
        return self.used[index]

    def max_memory_allocated(self, index):
        return self.peak[index]

    def reset_peak_memory_stats(self, index):
        self.peak[index] = self.used[index]


def _plugin(name: str, runtime) -> types.ModuleType:
    plugin = types.ModuleType(f"{name}_plugin")
    plugin.register_backends = hookimpl(lambda register: register(name=name, device_type=name, runtime=runtime))
    return plugin


@pytest.fixture
def plugin_devices(entry_points):
    """A fresh plugin manager with ``simdev`` (TwoDeviceRuntime) and the ``testdev`` fixture plugin registered."""
    import importlib

    with isolated_plugin_manager(str(FIXTURES / "core_testdev"), "core_testdev") as manager:
        manager.register_plugin(_plugin("simdev", TwoDeviceRuntime), name="simdev")
        manager.register_plugin(importlib.import_module("core_testdev"), name="testdev")
        yield manager


def test_a_plugin_device_type_as_the_accelerator(plugin_devices):
    runtime = plugin_devices.runtime_for("simdev")
    acc = core.accelerator
    with core.device("simdev"):
        assert acc.current_accelerator() == core.device("simdev") and acc.device_count() == 2
        assert core.get_device_module() is core.simdev
        with acc.device_index(1):
            assert acc.current_device_index() == runtime.current == 1
            acc.synchronize()
            with acc.device_index(0):
                assert acc.current_device_index() == 0
            assert acc.current_device_index() == 1
        assert acc.current_device_index() == 0
        with pytest.raises(KeyError), acc.device_index(1):
            raise KeyError("the previous index comes back on an error too")
        assert acc.current_device_index() == 0
        acc.synchronize("simdev:1")
        assert runtime.synchronized == ["simdev:1", "simdev:1"]

        runtime.used, runtime.peak = [10, 20], [50, 20]
        assert (acc.memory_allocated(), acc.max_memory_allocated(), acc.memory_allocated(1)) == (10, 50, 20)
        assert acc.memory_reserved() == acc.max_memory_reserved() == 0  # nothing the runtime can answer
        acc.reset_peak_memory_stats()
        assert acc.max_memory_allocated() == 10
        assert acc.memory_stats(1) == {"allocated_bytes.all.current": 20, "allocated_bytes.all.peak": 20,
                                       "reserved_bytes.all.current": 0, "reserved_bytes.all.peak": 0}


def test_a_backend_without_a_current_device_setting_refuses_another_index(plugin_devices):
    acc = core.accelerator
    with core.device("testdev"):
        assert acc.current_accelerator() == core.device("testdev") and acc.device_count() == 2
        assert acc.current_device_index() == 0
        with acc.device_index(0):
            pass
        with pytest.raises(RuntimeError, match="has no current-device setting.*testdev:1"):
            acc.set_device_index(1)
        assert acc.max_memory_allocated() == acc.memory_allocated() == 0


def test_resetting_peaks_a_backend_cannot_reset_warns(plugin_devices):
    class PeakOnlyRuntime(TwoDeviceRuntime):
        reset_peak_memory_stats = None

    plugin_devices.register_plugin(_plugin("peakdev", PeakOnlyRuntime), name="peakdev")
    with pytest.warns(RuntimeWarning, match="cannot reset them"):
        core.get_device_module("peakdev").reset_peak_memory_stats()
