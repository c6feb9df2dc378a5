"""Plugin discovery and registration: entry points, broken plugins, the register hooks, ``python -m core info``.

In-process tests swap in a fresh PluginManager (fake entry points, fixture
plugins registered directly) and put back every piece of global state they
touch: the manager, runtime and device caches, kernel tables, fallback
counters and warnings, config. The end-to-end test pip-installs the fixture
packages in tests/fixtures/ into a throwaway venv, as a user would.
"""

from __future__ import annotations

import importlib
import re
import importlib.metadata
import os
import shutil
import subprocess
import sys
import textwrap
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeEntryPoint, isolated_plugin_manager
from venv_support import make_venv

import core
from core import info
from core.dispatch import OPERATORS
from core.dispatch import operator as dispatch_operator
from core.plugins import hookimpl
from core.plugins.manager import BackendUnavailableError

FIXTURES = Path(__file__).parent / "fixtures"


# -- isolation -----------------------------------------------------------------------------------------



@pytest.fixture
def manager(entry_points):
    """A fresh PluginManager installed as the global one (sharing the loaded built-ins); all restored after."""
    with isolated_plugin_manager(str(FIXTURES / "core_testdev"), "core_testdev") as fresh:
        yield fresh


def _testdev_runtime():
    return importlib.import_module("core_testdev.runtime").TestDevRuntime


def _plugin(name: str, device_type: str, kernels=(), api=(1, 0)) -> types.ModuleType:
    """A plugin module object: one backend for ``device_type`` (host memory) and the given kernels."""
    module = types.ModuleType(name)
    module.CORE_PLUGIN_API = api
    runtime = _testdev_runtime()

    @hookimpl
    def register_backends(register):
        register(name=name, device_type=device_type, runtime=runtime, install_hint=f"pip install {name}",
                 version="9.9")

    @hookimpl
    def register_kernels(register, backend):
        for op, fn, options in kernels:
            register(op, fn, **options)

    module.register_backends = register_backends
    module.register_kernels = register_kernels
    return module


# -- registering through the manager directly ----------------------------------------------------------

def test_register_module_directly_gives_a_working_device(manager):
    testdev = importlib.import_module("core_testdev")
    manager.register_plugin(testdev, name="testdev")
    a = core.tensor([1.0, 2.0, 3.0], device="testdev")
    b = core.full((3,), 2.0, device="testdev")
    assert a.device == core.device("testdev", 0)
    total = a + b
    assert total.device.type == "testdev"
    np.testing.assert_array_equal(total.cpu().numpy(), [3.0, 4.0, 5.0])
    np.testing.assert_array_equal((a * b).to("cpu").numpy(), [2.0, 4.0, 6.0])
    assert repr(a) == "tensor([1., 2., 3.], device='testdev:0')"
    assert manager.backend_for("testdev").status == "loaded"
    assert sorted(manager.backend_for("testdev").kernels) == ["add", "copy_", "fill_", "mul"]


def test_missing_op_runs_through_cpu_fallback_once_warned(manager):
    manager.register_plugin(importlib.import_module("core_testdev"), name="testdev")
    a = core.tensor([0.0, 1.0], device="testdev")
    with pytest.warns(RuntimeWarning, match=r"exp\(\).*running on the CPU"):
        result = core.exp(a)
    assert result.device.type == "testdev"
    np.testing.assert_allclose(result.cpu().numpy(), np.exp([0.0, 1.0]), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning is shown once per op and device
        core.exp(a)
    assert dispatch_operator.fallback_counts[("exp", "testdev")] == 2
    report = info.collect()
    assert {"op": "exp", "device_type": "testdev", "count": 2} in report["fallbacks"]


def test_disabled_fallback_raises_naming_op_and_device(manager):
    manager.register_plugin(importlib.import_module("core_testdev"), name="testdev")
    a = core.tensor([0.0, 1.0], device="testdev")
    core.config.set("fallback", False)
    with pytest.raises(NotImplementedError, match=r"(?i)exp\(\).*testdev.*fallback is disabled"):
        core.exp(a)


def _declining_plugin(name: str, device_type: str) -> types.ModuleType:
    """A testdev-like plugin whose ``mul`` kernel declines every dtype but float32 (returns NotImplemented)."""
    from core_testdev import kernels

    def mul_float32_only(spec, a, b):
        return kernels.mul(spec, a, b) if spec.dtype is core.float32 else NotImplemented

    table = [*((n, f, {}) for n, f in kernels.KERNELS.items() if n != "mul"), ("mul", mul_float32_only, {})]
    return _plugin(name, device_type, table)


def test_declined_call_runs_through_the_counted_cpu_fallback(manager):
    manager.register_plugin(_declining_plugin("declplug", "decldev"), name="declplug")
    x = core.full((2,), 3.0, device="decldev")
    np.testing.assert_array_equal((x * x).cpu().numpy(), [9.0, 9.0])
    assert ("mul", "decldev") not in dispatch_operator.fallback_counts
    y = x.double().requires_grad_()
    with pytest.warns(RuntimeWarning, match=r"mul\(\).*decldev.*declined this call \(dtypes float64\).*on the CPU"):
        result = y * y
    assert result.device.type == "decldev" and result.dtype is core.float64
    np.testing.assert_array_equal(result.detach().cpu().numpy(), [9.0, 9.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per op and device
        core.mul(y.detach(), 2.0)
    assert dispatch_operator.fallback_counts[("mul", "decldev")] == 2
    assert {"op": "mul", "device_type": "decldev", "count": 2} in info.collect()["fallbacks"]


def test_declined_call_with_fallback_disabled_raises_naming_op_and_device(manager):
    manager.register_plugin(_declining_plugin("declplug", "decldev"), name="declplug")
    x = core.ones(2, dtype=core.float64, device="decldev")
    core.config.set("fallback", False)
    with pytest.raises(NotImplementedError, match=r"mul\(\).*'decldev' declined this call.*fallback is disabled"):
        x * x
    assert ("mul", "decldev") not in dispatch_operator.fallback_counts


def test_plugin_api_version_mismatch_is_refused(manager):
    plugin = _plugin("futureplug", "futuredev", api=(2, 0))
    from core.plugins.hookspecs import PLUGIN_API_VERSION

    provides = re.escape(str(PLUGIN_API_VERSION))
    with pytest.raises(RuntimeError, match=rf"plugin 'futureplug' was written for plugin API \(2, 0\).*{provides}"):
        manager.register_plugin(plugin, name="futureplug")
    assert "futuredev" not in {b.device_type for b in manager.backends.values()}


def test_duplicate_kernel_registration_names_the_plugin(manager):
    from core_testdev import kernels

    twice = [("add", kernels.add, {}), ("add", kernels.add, {})]
    manager.register_plugin(_plugin("dupplug", "dupdev", twice), name="dupplug")
    with pytest.raises(BackendUnavailableError, match=r"plugin 'dupplug'.*'add'.*already registered"):
        core.empty(2, device="dupdev")
    assert manager.backends["dupplug"].status == "failed"


def test_override_replaces_a_kernel(manager):
    from core_testdev import kernels

    def add_plus_one(spec, a, b, alpha=1):
        return kernels.add(spec, kernels.add(spec, a, b, alpha), 1)

    replaced = [*((n, f, {}) for n, f in kernels.KERNELS.items()), ("add", add_plus_one, {"override": True})]
    manager.register_plugin(_plugin("overplug", "overdev", replaced), name="overplug")
    a = core.zeros(2, device="overdev")
    np.testing.assert_array_equal((a + a).cpu().numpy(), [1.0, 1.0])


def test_kernel_for_undeclared_op_names_the_plugin(manager):
    undeclared = [("not_an_op", lambda spec, x: x, {})]
    manager.register_plugin(_plugin("badopplug", "badopdev", undeclared), name="badopplug")
    with pytest.raises(BackendUnavailableError, match=r"plugin 'badopplug'.*undeclared op.*not_an_op"):
        core.empty(2, device="badopdev")


def test_dtype_restricted_kernel(manager):
    from core_testdev import kernels

    only_f32 = [*((n, f, {}) for n, f in kernels.KERNELS.items() if n != "mul"),
                ("mul", kernels.mul, {"dtypes": [core.float32]})]
    manager.register_plugin(_plugin("f32plug", "f32dev", only_f32), name="f32plug")
    x = core.ones(2, device="f32dev")
    np.testing.assert_array_equal((x * x).cpu().numpy(), [1.0, 1.0])
    with pytest.raises(TypeError, match="mul.*f32plug.*float64"):
        core.ones(2, dtype=core.float64, device="f32dev") * core.ones(2, dtype=core.float64, device="f32dev")


def test_unknown_device_type_error_lists_known(manager):
    with pytest.raises(BackendUnavailableError, match=r"no backend for device type 'nosuchdev'.*cpu"):
        core.empty(1, device="nosuchdev")


# -- entry points: broken and blocked plugins -------------------------------------------------------------

def test_plugin_failing_at_import_is_reported_not_raised(manager, entry_points):
    entry_points.append(FakeEntryPoint("broken", ModuleNotFoundError("No module named 'vendor_sdk'")))
    entry_points.append(FakeEntryPoint("testdev", importlib.import_module("core_testdev")))
    manager.scan()
    assert manager.failed_plugins["broken"] == "ModuleNotFoundError: No module named 'vendor_sdk'"
    assert "vendor_sdk" in manager.failed_plugins["broken:traceback"]
    # the other backends still work
    np.testing.assert_array_equal((core.ones(2) + 1).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal((core.ones(2, device="testdev") + 1).cpu().numpy(), [2.0, 2.0])
    report = info.collect()
    assert report["failed_plugins"] == {"broken": "ModuleNotFoundError: No module named 'vendor_sdk'"}
    text = info.render(report)
    assert "broken" in text and "No module named 'vendor_sdk'" in text


def test_plugin_with_wrong_api_from_entry_point_is_a_failure(manager, entry_points):
    entry_points.append(FakeEntryPoint("futureplug", _plugin("futureplug", "futuredev2", api=(2, 0))))
    manager.scan()
    assert "plugin API (2, 0)" in manager.failed_plugins["futureplug"]


def test_blocked_and_allow_listed_plugins(manager, entry_points):
    entry_points.append(FakeEntryPoint("testdev", importlib.import_module("core_testdev")))
    entry_points.append(FakeEntryPoint("other", ModuleNotFoundError("never imported")))
    core.config.set("block", "testdev")
    core.config.set("plugins", "testdev,other")
    manager.scan()
    assert manager.blocked_plugins == ["testdev"]
    assert "other" in manager.failed_plugins
    with pytest.raises(BackendUnavailableError, match="testdev"):
        core.empty(1, device="testdev")
    assert "Blocked plugins: testdev" in info.render(info.collect())


def test_autoload_disabled_scans_nothing(manager, entry_points):
    entry_points.append(FakeEntryPoint("broken", ImportError("should not be imported")))
    core.config.set("disable_plugin_autoload", True)
    manager.scan()
    assert manager.failed_plugins == {} and manager.blocked_plugins == []


def test_unavailable_backend_reports_reason_and_hint(manager):
    module = types.ModuleType("noplug")
    module.register_backends = hookimpl(lambda register: register(
        name="nohw", device_type="nohwdev", runtime="core_testdev.runtime:TestDevRuntime",
        probe=lambda: (False, "no driver found"), install_hint="install the vendor driver"))
    manager.register_plugin(module, name="noplug")
    with pytest.raises(BackendUnavailableError, match="nohw.*unavailable: no driver found; install the vendor"):
        core.empty(1, device="nohwdev")
    row = next(r for r in info.collect()["backends"] if r["name"] == "nohw")
    assert (row["status"], row["reason"]) == ("unavailable", "no driver found")
    assert "install the vendor driver" in info.render(info.collect())


# -- the info report -------------------------------------------------------------------------------------

def test_info_collect_lists_builtin_backends_and_coverage():
    report = info.collect()
    by_name = {r["name"]: r for r in report["backends"]}
    assert by_name["numpy"]["device_type"] == "cpu" and by_name["numpy"]["status"] == "loaded"
    assert by_name["meta"]["status"] == "loaded"
    coverage = by_name["meta"]["coverage"]
    assert coverage["primitives_total"] == report["ops"]["primitive"] == sum(op.primitive for op in OPERATORS.values())
    assert coverage["primitives_implemented"] + len(coverage["missing"]) == coverage["primitives_total"]
    assert by_name["numpy"]["devices"]
    assert [c["key"] for c in report["config"]] == list(core.config.OPTIONS)
    assert report["versions"]["core"] == core.__version__


def _clean_env(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def _run(args: list, tmp_path: Path, python: str = sys.executable, **env) -> subprocess.CompletedProcess:
    return subprocess.run([python, *args], cwd=tmp_path, env=_clean_env(tmp_path, **env), capture_output=True,
                          text=True, timeout=120, check=False)


def test_info_command_prints_backends_coverage_and_config_sources(tmp_path):
    result = _run(["-m", "core", "info"], tmp_path, CORE_FALLBACK="0")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"core {core.__version__}")
    for expected in ("numpy", "meta", "Backends:", "Op coverage", "primitives", "Config:", "CPU fallbacks:"):
        assert expected in out
    fallback_line = next(line for line in out.splitlines() if line.strip().startswith("fallback "))
    assert fallback_line.split()[1:] == ["false", "environment", "variable", "CORE_FALLBACK"]
    device_line = next(line for line in out.splitlines() if line.strip().startswith("device "))
    assert device_line.split()[1:] == ["cpu", "default"]


def test_info_command_json_usage_and_unknown_command(tmp_path):
    import json

    data = json.loads(_run(["-m", "core", "info", "--json"], tmp_path).stdout)
    assert {r["name"] for r in data["backends"]} >= {"numpy", "meta"}
    usage = _run(["-m", "core"], tmp_path)
    assert usage.returncode == 0 and "info" in usage.stdout and "usage" in usage.stdout.lower()
    unknown = _run(["-m", "core", "frobnicate"], tmp_path)
    assert unknown.returncode == 2 and "frobnicate" in unknown.stderr


def test_info_reports_a_bad_config_instead_of_crashing(tmp_path):
    (tmp_path / "core.toml").write_text("fallbak = true\n")
    result = _run(["-m", "core", "info"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "unknown config key 'fallbak'" in result.stdout


# -- end to end: pip-installed third-party packages ------------------------------------------------------

SCRIPT = textwrap.dedent("""
    import warnings
    import numpy as np
    import core
    from core.dispatch.operator import fallback_counts
    from core.plugins.manager import get_manager
    from core.testing import available_devices

    a = core.tensor([1.0, 2.0, 3.0], device="testdev")
    b = core.full((3,), 2.0, device="testdev")
    total = a + b
    assert total.device.type == "testdev", total.device
    assert total.cpu().tolist() == [3.0, 4.0, 5.0], total
    assert (a * b).cpu().tolist() == [2.0, 4.0, 6.0]
    assert "testdev" in available_devices()
    assert "broken" in get_manager().failed_plugins, get_manager().failed_plugins
    if core.config.get("fallback"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = core.exp(a)
        assert any("exp()" in str(w.message) for w in caught), [str(w.message) for w in caught]
        assert result.device.type == "testdev"
        np.testing.assert_allclose(result.cpu().numpy(), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)
        assert fallback_counts[("exp", "testdev")] == 1
    else:
        try:
            core.exp(a)
        except NotImplementedError as exc:
            assert "exp" in str(exc) and "testdev" in str(exc).lower(), exc
        else:
            raise AssertionError("exp on testdev ran although the CPU fallback is disabled")
    print("ok")
""")


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory):
    """A venv (seeing the active env's packages, core included) with the fixture plugins pip-installed."""
    root = tmp_path_factory.mktemp("plugin_venv")
    for name in ("core_testdev", "core_broken"):  # build from copies: setuptools writes build/ next to the sources
        shutil.copytree(FIXTURES / name, root / name)
    python = make_venv(root / "venv")
    # The active env's pip and setuptools (visible through make_venv's .pth) build and install offline.
    install = subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                              "-q", str(root / "core_testdev"), str(root / "core_broken")],
                             capture_output=True, text=True, timeout=300, env=_clean_env(root), check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    return python


def test_installed_plugin_works_end_to_end(plugin_venv, tmp_path):
    result = _run(["-c", SCRIPT], tmp_path, python=plugin_venv)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


def test_installed_plugin_without_fallback_raises(plugin_venv, tmp_path):
    result = _run(["-c", SCRIPT], tmp_path, python=plugin_venv, CORE_FALLBACK="0")
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


def test_info_command_lists_installed_and_failed_plugins(plugin_venv, tmp_path):
    result = _run(["-m", "core", "info"], tmp_path, python=plugin_venv)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    backend = next(line for line in lines if line.split()[:2] == ["testdev", "testdev"])
    assert "0.0.1" in backend and "loaded" in backend
    assert any("broken" in line and "core_broken_missing_sdk" in line for line in lines)
    assert any(line.split()[:2] == ["testdev", "2"] and "Test device 1" in line for line in lines)
    coverage = next(line for line in lines if line.split()[:1] == ["testdev"] and "primitives" in line)
    assert coverage.split()[1].startswith("4/")
    assert "testdev lacks" in result.stdout and "exp" in result.stdout


def test_blocking_an_installed_plugin(plugin_venv, tmp_path):
    code = ("import core\nfrom core.plugins.manager import get_manager\n"
            "core.ones(1)\nm = get_manager(); m.scan(); print(m.blocked_plugins)\n"
            "try:\n    core.ones(1, device='testdev')\nexcept RuntimeError as exc:\n    print('refused:', exc)\n")
    result = _run(["-c", code], tmp_path, python=plugin_venv, CORE_BLOCK="testdev,broken")
    assert result.returncode == 0, result.stderr
    assert sorted(eval(result.stdout.splitlines()[0])) == ["broken", "testdev"]
    assert ("refused: no backend for device type 'testdev' is loaded: plugin 'testdev' is blocked by the 'block' "
            "setting (environment variable CORE_BLOCK); remove 'testdev' from it") in result.stdout


def test_a_backend_can_extend_another_of_the_same_device_type(manager):
    """cpu_c's pattern: the base backend's kernels go in first, the extending backend replaces some of them."""
    from core.backends.api import Runtime, hookimpl

    class HostRuntime(Runtime):
        def allocate(self, nbytes, dev):
            return np.empty(nbytes, np.uint8)

        def from_host(self, array, dev):
            return array.copy()

        def to_host(self, tensor):
            from core.backends.numpy.runtime import array

            return array(tensor)

    def kernel(result):
        def run(spec, *args):
            out = core.empty(spec.shape, dtype=spec.dtype, device=spec.device)
            out._storage.data[:] = np.frombuffer(np.full(spec.shape, result, spec.dtype.numpy).tobytes(), np.uint8)
            return out

        return run

    class Base:
        @hookimpl
        def register_backends(self, register):
            register(name="layer_base", device_type="layerdev", runtime=HostRuntime, priority=0)

        @hookimpl
        def register_kernels(self, register, backend):
            register("add", kernel(1.0))
            register("mul", kernel(2.0))

    class Top:
        @hookimpl
        def register_backends(self, register):
            register(name="layer_top", device_type="layerdev", runtime=HostRuntime, priority=10, extends="layer_base")

        @hookimpl
        def register_kernels(self, register, backend):
            register("add", kernel(3.0))  # replaces the base's add without override=True

    manager.register_plugin(Base(), name="layer_base_plugin")
    manager.register_plugin(Top(), name="layer_top_plugin")
    x = core.tensor([0.0, 0.0], device="layerdev")
    assert manager.backend_for("layerdev").name == "layer_top"
    assert (x + x).cpu().tolist() == [3.0, 3.0]  # the extending backend's kernel
    assert (x * x).cpu().tolist() == [2.0, 2.0]  # the base's kernel, kept
