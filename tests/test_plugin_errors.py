"""Errors that tell the truth and the fix: why a device type or backend cannot be used, and ``core info``'s view.

Each case of "no backend" reads differently: a plugin that failed to import, one blocked (naming where the block
came from), one left out by the allow-list, plugin autoload switched off, a device type core ships a plugin for
but that is not installed, and a typo. Tests run in-process against fake entry points.
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

import pytest
from conftest import FakeEntryPoint, isolated_plugin_manager

import core
from core import info
from core.config import ConfigError
from core.plugins.hookspecs import hookimpl
from core.plugins.manager import BackendUnavailableError, get_manager

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def manager(request, monkeypatch, tmp_path):
    """A fresh PluginManager as the global one, in an empty project with no CORE_* variables; all put back after."""
    get_manager().scan()  # the process-wide manager scans once: let it see the real plugins, not the fakes below
    request.getfixturevalue("entry_points")
    for name in [n for n in os.environ if n.startswith("CORE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    core.config.reload()
    with isolated_plugin_manager(str(FIXTURES / "core_testdev"), "core_testdev") as fresh:
        yield fresh
        monkeypatch.undo()  # before the manager's own clean-up re-reads the config


def setenv(monkeypatch, **variables) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    core.config.reload()


def _testdev_entry_point() -> FakeEntryPoint:
    return FakeEntryPoint("testdev", importlib.import_module("core_testdev"))


def message_of(device: str) -> str:
    """Why ``device`` has no backend: the error's first line (a device type no backend registers fails when the
    device is made, as in PyTorch, and PyTorch's own message follows on a second line)."""
    with pytest.raises(BackendUnavailableError) as caught:
        core.zeros(2, device=device)
    return str(caught.value).split("\n")[0]


# -- (a) installed but failed to load ------------------------------------------------------------------------

def test_plugin_that_failed_to_import_is_named_with_its_exception(manager, entry_points):
    entry_points.append(FakeEntryPoint("acme", ModuleNotFoundError("No module named 'acme_sdk'")))
    message = message_of("acme")
    assert message == ("no backend for device type 'acme' is loaded: plugin 'acme' is installed but failed to load "
                       "(ModuleNotFoundError: No module named 'acme_sdk'); run `python -m core info` for details")


def test_a_failed_plugin_named_otherwise_is_still_mentioned(manager, entry_points):
    entry_points.append(FakeEntryPoint("vendor_plugin", ImportError("libvendor.so: cannot open shared object")))
    message = message_of("vendordev")
    assert "no backend for device type 'vendordev' is installed" in message
    assert "plugins not loaded, which may provide it: 'vendor_plugin' (failed to load)" in message


def test_info_shows_the_traceback_the_message_points_to(manager, entry_points):
    entry_points.append(FakeEntryPoint("acme", ModuleNotFoundError("No module named 'acme_sdk'")))
    manager.scan()
    report = info.collect()
    assert "Traceback" in report["failed_tracebacks"]["acme"]
    text = info.render(report)
    assert "acme: traceback" in text and "ModuleNotFoundError: No module named 'acme_sdk'" in text


# -- (b) blocked, (d) left out by the allow-list: the message says where that setting came from ----------------

def test_blocked_by_environment_variable(manager, entry_points, monkeypatch):
    entry_points.append(_testdev_entry_point())
    setenv(monkeypatch, CORE_BLOCK="testdev")
    assert message_of("testdev") == (
        "no backend for device type 'testdev' is loaded: plugin 'testdev' is blocked by the 'block' setting "
        "(environment variable CORE_BLOCK); remove 'testdev' from it to load the plugin")


def test_blocked_by_project_file(manager, entry_points, tmp_path):
    entry_points.append(_testdev_entry_point())
    (tmp_path / "core.toml").write_text("block = ['testdev']\n")
    core.config.reload()
    assert f"blocked by the 'block' setting (project config {tmp_path / 'core.toml'})" in message_of("testdev")


def test_left_out_by_the_allow_list(manager, entry_points, monkeypatch):
    entry_points.append(_testdev_entry_point())
    setenv(monkeypatch, CORE_PLUGINS="other")
    assert message_of("testdev") == (
        "no backend for device type 'testdev' is loaded: plugin 'testdev' is installed but not in the 'plugins' "
        "allow-list (environment variable CORE_PLUGINS); add 'testdev' to it to load the plugin")
    assert manager.excluded_plugins == ["testdev"] and manager.blocked_plugins == []
    assert "Not in the plugins allow-list: testdev" in info.render(info.collect())


# -- (c) autoload off ------------------------------------------------------------------------------------------

def test_autoload_off_says_so_and_how_to_load_the_plugin(manager, entry_points):
    entry_points.append(_testdev_entry_point())
    core.config.set("disable_plugin_autoload", True)
    assert message_of("testdev") == (
        "no backend for device type 'testdev' is loaded: plugin autoload is off ('disable_plugin_autoload' from "
        "api (core.config.set)), so the installed plugin 'testdev' was not loaded; name the plugin in the 'plugins' "
        "setting to load it explicitly (CORE_PLUGINS=testdev), or turn autoload back on")


def test_autoload_off_still_loads_the_plugins_named_in_plugins(manager, entry_points, monkeypatch):
    entry_points.append(_testdev_entry_point())
    entry_points.append(FakeEntryPoint("broken", ImportError("should not be imported")))
    setenv(monkeypatch, CORE_DISABLE_PLUGIN_AUTOLOAD="1", CORE_PLUGINS="testdev")
    assert (core.ones(2, device="testdev") + 1).cpu().tolist() == [2.0, 2.0]
    assert manager.failed_plugins == {} and manager.excluded_plugins == []


# -- (e) not installed, (f) a typo ---------------------------------------------------------------------------

@pytest.mark.parametrize("device_type", ["cuda", "opencl"])
def test_shipped_device_type_not_installed_gives_the_real_install_command(manager, device_type):
    if device_type in manager.backends:
        pytest.skip(f"{device_type} is loaded in this process")
    assert message_of(device_type) == (
        f"no backend for device type '{device_type}' is installed; install the core[{device_type}] extra and its "
        f"plugin, in a checkout of core: pip install -e '.[{device_type}]' -e plugins/{device_type}")


def test_unknown_device_type_suggests_no_package_that_does_not_exist(manager):
    message = message_of("nosuchdev")
    assert message.startswith("no backend for device type 'nosuchdev' is installed (device types with a backend: ")
    with pytest.raises(BackendUnavailableError) as caught:
        core.device("nosuchdev")
    # raised when the device is made, PyTorch's message on its second line (then the installed types PyTorch
    # lacks, such as webgpu, where a backend of that type is registered)
    second = str(caught.value).split("\n")[1]
    assert second.startswith(
        "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, "
        "vulkan, mps, meta, hpu, mtia, privateuseone") and second.endswith(
        " device type at start of device string: nosuchdev")
    assert "cpu" in message and "did you mean" not in message
    assert "pip install" not in message and "core-nosuchdev" not in message


@pytest.mark.parametrize("typo, meant", [("cdua", "cuda"), ("opncl", "opencl"), ("cpuu", "cpu"), ("mta", "meta")])
def test_typo_in_device_type_gets_did_you_mean(manager, typo, meant):
    assert message_of(typo).endswith(f"; did you mean '{meant}'?")
    with pytest.raises(BackendUnavailableError, match=f"did you mean '{meant}'"):
        core.device(typo)  # at construction, as PyTorch


def test_typo_in_the_default_device_names_where_it_was_set(manager, monkeypatch):
    setenv(monkeypatch, CORE_DEVICE="cdua")
    with pytest.raises(BackendUnavailableError, match=r"did you mean 'cuda'\? \(the default device, from "
                                                      r"environment variable CORE_DEVICE\)"):
        core.zeros(1)


# -- the 'backends' setting: a bad value is a ConfigError naming its source, checked when backends resolve -----

def test_unknown_backend_name_is_a_config_error_naming_the_variable(manager, monkeypatch):
    setenv(monkeypatch, CORE_BACKENDS="cpu=nosuch")
    with pytest.raises(ConfigError, match=r"^environment variable CORE_BACKENDS: 'backends' selects backend 'nosuch' "
                                          r"for device type 'cpu', but no backend of that name is installed; "
                                          r"backends for 'cpu': .*numpy"):
        core.zeros(1)
    setenv(monkeypatch, CORE_BACKENDS="cpu=numpi")
    with pytest.raises(ValueError, match=r"'numpi'.*\(did you mean 'numpy'\?\)"):
        core.zeros(1)


def test_backend_of_another_device_type_is_a_config_error(manager, tmp_path):
    (tmp_path / "core.toml").write_text("backends = {cpu = 'meta'}\n")
    core.config.reload()
    with pytest.raises(ConfigError, match=rf"project config {re.escape(str(tmp_path / 'core.toml'))}: 'backends' "
                                          r"selects backend 'meta' for device type 'cpu', but 'meta' serves device "
                                          r"type 'meta'"):
        core.zeros(1)


def test_selected_backend_whose_plugin_is_blocked(manager, entry_points, monkeypatch):
    entry_points.append(_testdev_entry_point())
    setenv(monkeypatch, CORE_BACKENDS="testdev=testdev", CORE_BLOCK="testdev")
    with pytest.raises(BackendUnavailableError, match=r"CORE_BACKENDS: 'backends' selects backend 'testdev' for "
                                                      r"device type 'testdev', which is not loaded: plugin 'testdev' "
                                                      r"is blocked by the 'block' setting"):
        core.zeros(1, device="testdev")


def test_info_reports_a_bad_backend_choice(manager, monkeypatch):
    setenv(monkeypatch, CORE_BACKENDS="meta=nosuch")
    row = next(r for r in info.collect()["backends"] if r["name"] == "meta")
    assert row["status"] == "not selected" and "selects backend 'nosuch'" in row["reason"]


# -- info: one line per device type, coverage per backend, extras -------------------------------------------------

def _layered_backends(manager) -> None:
    """Two backends of device type 'layerdev': 'layer_top' extends 'layer_base' and replaces one of its kernels."""
    from core_testdev import kernels
    from core_testdev.runtime import TestDevRuntime

    class Base:
        @hookimpl
        def register_backends(self, register):
            register(name="layer_base", device_type="layerdev", runtime=TestDevRuntime)

        @hookimpl
        def register_kernels(self, register, backend):
            for name, fn in kernels.KERNELS.items():
                register(name, fn)

    class Top:
        @hookimpl
        def register_backends(self, register):
            register(name="layer_top", device_type="layerdev", runtime=TestDevRuntime, priority=10,
                     extends="layer_base")

        @hookimpl
        def register_kernels(self, register, backend):
            register("add", kernels.add)

    manager.register_plugin(Base(), name="layer_base")
    manager.register_plugin(Top(), name="layer_top")


def test_info_lists_a_device_type_once_and_credits_each_backend_its_own_kernels(manager):
    _layered_backends(manager)
    assert manager.backend_for("layerdev").name == "layer_top"
    report = info.collect()
    rows = {r["name"]: r for r in report["backends"]}
    assert rows["layer_top"]["status"] == rows["layer_base"]["status"] == "loaded"
    assert rows["layer_top"]["coverage"]["primitives_implemented"] == 1  # add; the base's kernels are the base's
    assert rows["layer_base"]["coverage"]["primitives_implemented"] == len(importlib.import_module(
        "core_testdev.kernels").KERNELS)
    text = info.render(report)
    devices = text.split("Devices:")[1].split("\n\n")[0].splitlines()
    assert [line.split()[0] for line in devices if line.strip()].count("layerdev") == 1
    assert "layer_top leaves" in text and "primitive(s) to layer_base:" in text


def test_info_with_cpu_c_lists_cpu_once_and_numpy_without_cpu_c_kernels():
    from cpu_c_support import load_cpu_c

    cpu_c = load_cpu_c()
    numpy_backend = get_manager().backends["numpy"]
    report = info.collect()
    rows = {r["name"]: r for r in report["backends"]}
    composites = {name for name, op in core.dispatch.OPERATORS.items() if not op.primitive}
    assert rows["numpy"]["coverage"]["composites_overridden"] == len(composites & set(numpy_backend.kernels))
    assert rows["cpu_c"]["coverage"]["composites_overridden"] == len(composites & set(cpu_c.kernels))
    devices = info.render(report).split("Devices:")[1].split("\n\n")[0].splitlines()
    assert [line.split()[0] for line in devices if line.strip()].count("cpu") == 1


def test_info_says_how_to_add_each_missing_extra(monkeypatch):
    present = {"onnx", "onnxruntime"}
    monkeypatch.setattr(info, "_present", lambda module: module in present)
    extras = {e["name"]: e for e in info._extras()}
    assert list(extras) == ["onnx", "opencl", "cuda", "webgpu", "mpi", "all"]
    assert extras["onnx"]["installed"] and not extras["cuda"]["installed"] and not extras["all"]["installed"]
    assert extras["mpi"]["missing"] == ["mpi4py"]
    text = info.render({**info.collect(), "extras": list(extras.values())})
    lines = text.split("Optional extras")[1].splitlines()
    assert any(line.split()[:2] == ["onnx", "installed"] for line in lines)
    for name in ("opencl", "cuda", "webgpu", "mpi", "all"):
        line = next(line for line in lines if line.split()[:1] == [name])
        assert "not installed" in line and f"pip install -e '.[{name}]'" in line
    assert "-e plugins/cuda" in extras["cuda"]["install"] and "plugins" not in extras["mpi"]["install"]
    assert extras["webgpu"]["missing"] == ["core_webgpu", "wgpu"] and "-e plugins/webgpu" in extras["all"]["install"]


def test_extras_are_found_without_importing_them():
    assert info._present("json") and not info._present("no_such_module_anywhere")
    assert all(isinstance(e["installed"], bool) for e in info._extras())
