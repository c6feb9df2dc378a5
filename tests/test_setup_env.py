"""scripts/setup_env.py, the install step of both README commands: what each job installs, and that a second run
installs nothing unless a build input changed. pip itself is replaced by a recorder here."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def setup_env(monkeypatch, tmp_path):
    """The module, with stamps in tmp_path, every distribution 'installed', no drivers, and pip recorded."""
    spec = importlib.util.spec_from_file_location("setup_env", ROOT / "scripts" / "setup_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "stamp_dir", lambda: tmp_path / "stamps")
    monkeypatch.setattr(module, "installed", lambda dist: True)
    monkeypatch.setattr(module, "machine_can_use", lambda stack: False)
    monkeypatch.setattr(module, "ensure_drivers", lambda job: 0)
    monkeypatch.setattr(module, "has_c_compiler", lambda: True)
    monkeypatch.setattr(module, "ensure_hot", lambda: 0)  # its own tests below
    monkeypatch.delenv("CORE_EXTRAS", raising=False)
    module.pip_calls = []

    def fake_run(command, **kwargs):
        module.pip_calls.append(command)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(module.subprocess, "run", fake_run)
    return module


def _editables(command: list) -> list:
    return [command[i + 1] for i, arg in enumerate(command) if arg == "--editable"]


def test_train_installs_core_and_cpu_c_only_on_a_machine_without_gpu_drivers(setup_env):
    assert setup_env.main("train") == 0
    assert _editables(setup_env.pip_calls[0]) == [".[accel,examples]", "plugins/cpu_c"]
    assert "--constraint" in setup_env.pip_calls[0]


def test_a_second_run_installs_nothing(setup_env, capsys):
    setup_env.main("train")
    setup_env.pip_calls.clear()
    assert setup_env.main("train") == 0
    assert setup_env.pip_calls == [] and "environment up to date" in capsys.readouterr().out


def test_test_job_adds_the_stacks_the_tests_run_and_keeps_earlier_extras(setup_env):
    setup_env.main("train")
    setup_env.main("test")
    assert _editables(setup_env.pip_calls[1]) == [".[accel,cuda,dev,examples,mpi,onnx,opencl,tensorboard,webgpu]",
                                                  "plugins/opencl", "plugins/cuda", "plugins/webgpu"]
    setup_env.pip_calls.clear()
    setup_env.main("train")  # core's extras already cover the train job's
    assert setup_env.pip_calls == []


def test_changing_a_c_source_reinstalls_only_that_plugin(setup_env, monkeypatch, tmp_path):
    source = tmp_path / "plugins" / "cpu_c" / "core_cpu_c" / "csrc" / "k.c"
    source.parent.mkdir(parents=True)
    (tmp_path / "plugins" / "cpu_c" / "pyproject.toml").write_text("[project]\nname = 'core-cpu-c'\n")
    source.write_text("int k;\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'core'\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "constraints.txt").write_text("numpy==2.0\n")
    monkeypatch.setattr(setup_env, "ROOT", tmp_path)
    monkeypatch.setattr(setup_env, "LOCK", tmp_path / "scripts" / "constraints.txt")
    setup_env.main("train")
    source.write_text("int k2;\n")
    setup_env.pip_calls.clear()
    setup_env.main("train")
    assert _editables(setup_env.pip_calls[0]) == ["plugins/cpu_c"]


def test_core_extras_from_the_environment(setup_env, monkeypatch):
    monkeypatch.setenv("CORE_EXTRAS", "mpi, onnx")
    assert setup_env.requested_stacks("train") == ["mpi", "onnx"]
    monkeypatch.setenv("CORE_EXTRAS", "all")
    assert set(setup_env.requested_stacks("train")) == {"opencl", "cuda", "webgpu", "onnx", "mpi", "tensorboard"}
    monkeypatch.setenv("CORE_EXTRAS", "cdua")
    with pytest.raises(SystemExit, match="CORE_EXTRAS names unknown extra 'cdua'"):
        setup_env.requested_stacks("train")


def test_the_extras_are_core_extras_and_the_lock_pins_them():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    spec = importlib.util.spec_from_file_location("setup_env_stacks", ROOT / "scripts" / "setup_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module.STACKS) | {"all", "dev", "examples", "accel"} == set(extras)
    pinned = {line.split("==")[0].lower() for line in module.LOCK.read_text().splitlines() if "==" in line}
    for requirement in (extras["onnx"] + extras["cuda"] + extras["webgpu"] + extras["mpi"] + extras["tensorboard"]
                        + extras["accel"] + ["numpy", "scipy", "pluggy"]):
        name = requirement.split(">")[0].split("[")[0].split("=")[0].strip().lower()
        assert name.replace("_", "-") in {p.replace("_", "-") for p in pinned}, name


def _setup_module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "setup_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hot_modules_compile_through_core_and_a_failure_does_not_stop_the_job(monkeypatch, capsys):
    module = _setup_module("setup_env_hot")
    calls = []
    status = {"rc": 0}

    def run(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, status["rc"], stderr="gcc: error: no\n")

    monkeypatch.setattr(module.subprocess, "run", run)
    monkeypatch.setattr(module, "has_c_compiler", lambda: True)
    assert module.ensure_hot() == 0
    assert calls == [[module.sys.executable, "-m", "core", "compile"]]
    status["rc"] = 1
    assert module.ensure_hot() == 0
    assert "run from source" in capsys.readouterr().err
    calls.clear()
    monkeypatch.setattr(module, "has_c_compiler", lambda: False)
    assert module.ensure_hot() == 0 and calls == []
    assert "no C compiler found: core's hot modules run from source" in capsys.readouterr().out


@pytest.fixture
def drivers(monkeypatch):
    """The module with its driver probes and apt-get faked: ``state`` says what exists, ``installs`` records apt."""
    spec = importlib.util.spec_from_file_location("setup_env_drivers", ROOT / "scripts" / "setup_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.state = {"adapter": False, "apt": [], "driver_installs_adapter": True}
    module.installs = []

    def install(package):
        module.installs.append(package)
        module.state["adapter"] = module.state["driver_installs_adapter"]

    monkeypatch.setattr(module, "webgpu_adapter_found", lambda: module.state["adapter"])
    monkeypatch.setattr(module, "apt_get_usable", lambda: module.state["apt"])
    monkeypatch.setattr(module, "apt_install", install)
    return module


def test_webgpu_adapter_present_installs_nothing(drivers, capsys):
    drivers.state["adapter"] = True
    drivers.ensure_webgpu_driver()
    assert drivers.installs == [] and capsys.readouterr().out == ""


def test_no_webgpu_adapter_installs_mesas_software_vulkan_when_apt_get_is_usable(drivers, capsys):
    drivers.ensure_webgpu_driver()
    assert drivers.installs == ["mesa-vulkan-drivers"]
    out = capsys.readouterr().out
    assert "installing Debian's mesa-vulkan-drivers" in out and "unavailable" not in out


def test_no_webgpu_adapter_and_no_apt_get_says_the_tests_are_skipped(drivers, capsys):
    drivers.state["apt"] = None
    drivers.ensure_webgpu_driver()
    assert drivers.installs == []
    out = capsys.readouterr().out
    assert "no Metal, Vulkan or D3D12 WebGPU adapter here: the webgpu backend reports itself unavailable" in out


def test_a_driver_that_gives_no_adapter_is_reported(drivers, capsys):
    drivers.state["driver_installs_adapter"] = False
    drivers.ensure_webgpu_driver()
    assert drivers.installs == ["mesa-vulkan-drivers"]
    assert "its tests are skipped" in capsys.readouterr().out


def test_apt_get_runs_through_passwordless_sudo_when_not_root(monkeypatch):
    spec = importlib.util.spec_from_file_location("setup_env_apt", ROOT / "scripts" / "setup_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(module.os, "geteuid", lambda: 1000, raising=False)
    sudo = {"ok": True}
    monkeypatch.setattr(module.subprocess, "run", lambda command, **kw: subprocess.CompletedProcess(
        command, 0 if sudo["ok"] else 1))
    assert module.apt_get_usable() == ["sudo", "-n"]
    sudo["ok"] = False
    assert module.apt_get_usable() is None
    monkeypatch.setattr(module.os, "geteuid", lambda: 0, raising=False)
    assert module.apt_get_usable() == []


def test_the_test_job_ensures_both_drivers_the_train_job_none_without_a_gpu(monkeypatch):
    spec = importlib.util.spec_from_file_location("setup_env_jobs", ROOT / "scripts" / "setup_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.delenv("CORE_EXTRAS", raising=False)
    monkeypatch.setattr(module, "machine_can_use", lambda stack: False)
    called = []
    monkeypatch.setattr(module, "ensure_opencl_driver", lambda: called.append("opencl"))
    monkeypatch.setattr(module, "ensure_webgpu_driver", lambda: called.append("webgpu"))
    module.ensure_drivers("train")
    assert called == []
    module.ensure_drivers("test")
    assert called == ["opencl", "webgpu"]
