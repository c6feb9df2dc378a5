"""Configuration: precedence default < user file < project file < environment < core.config.set, and errors.

Every test runs in an empty project folder with its own XDG_CONFIG_HOME and no
CORE_* variables; the fixture re-reads the real environment afterwards.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import core
from core import config
from core.config import ConfigError


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """An empty project folder as cwd, a private user config home, no CORE_* variables; all undone after."""
    for name in list(os.environ):
        if name.startswith("CORE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    config.reset()
    config.reload()
    try:
        yield project
    finally:
        monkeypatch.undo()
        config.reset()
        config.reload()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def user_file(tmp_path: Path, text: str) -> Path:
    return write(tmp_path / "xdg" / "core" / "config.toml", text)


# -- precedence, one level at a time --------------------------------------------------------------------

def test_defaults_when_nothing_is_configured():
    for key, value, source in config.describe():
        assert value == config.OPTIONS[key].default
        assert source == "default"
    assert [key for key, _, _ in config.describe()] == list(config.OPTIONS)


def test_user_file_beats_defaults(tmp_path):
    path = user_file(tmp_path, "num_threads = 3\nfallback = false\n")
    config.reload()
    assert config.get("num_threads") == 3
    assert config.get("fallback") is False
    assert config.source_of("num_threads") == f"user config {path}"
    assert config.source_of("debug") == "default"


def test_user_file_under_home_when_xdg_is_unset(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = write(tmp_path / "home" / ".config" / "core" / "config.toml", "num_threads = 4\n")
    config.reload()
    assert config.get("num_threads") == 4
    assert config.source_of("num_threads") == f"user config {path}"


def test_project_core_toml_beats_user_file(tmp_path, isolated):
    user_file(tmp_path, "num_threads = 3\ndebug = false\nblock = ['from_user']\n")
    project = write(isolated / "core.toml", "num_threads = 5\n")
    config.reload()
    assert config.get("num_threads") == 5
    assert config.source_of("num_threads") == f"project config {project}"
    assert config.get("block") == ("from_user",)  # keys the project leaves alone still come from the user file
    assert config.source_of("block").startswith("user config")


def test_project_pyproject_tool_core_found_from_a_subfolder(isolated, monkeypatch):
    pyproject = write(isolated / "pyproject.toml", "[project]\nname = 'x'\n\n[tool.core]\nnum_threads = 6\n"
                                                   "backends = {cpu = 'numpy'}\n")
    deeper = isolated / "src" / "pkg"
    deeper.mkdir(parents=True)
    monkeypatch.chdir(deeper)
    config.reload()
    assert config.get("num_threads") == 6
    assert config.get("backends") == {"cpu": "numpy"}
    assert config.source_of("num_threads") == f"project config {pyproject}"


def test_nearest_project_file_wins_and_pyproject_without_tool_core_is_skipped(isolated, monkeypatch):
    write(isolated / "core.toml", "num_threads = 1\n")
    inner = isolated / "inner"
    write(inner / "pyproject.toml", "[project]\nname = 'inner'\n")  # no [tool.core]: keep looking upwards
    monkeypatch.chdir(inner)
    config.reload()
    assert config.get("num_threads") == 1
    nearer = write(inner / "core.toml", "num_threads = 2\n")
    config.reload()
    assert config.get("num_threads") == 2
    assert config.source_of("num_threads") == f"project config {nearer}"


def test_environment_beats_project_file(isolated, monkeypatch):
    write(isolated / "core.toml", "num_threads = 5\nfallback = true\n")
    monkeypatch.setenv("CORE_NUM_THREADS", "7")
    monkeypatch.setenv("CORE_FALLBACK", "off")
    config.reload()
    assert config.get("num_threads") == 7
    assert config.get("fallback") is False
    assert config.source_of("num_threads") == "environment variable CORE_NUM_THREADS"


def test_api_beats_environment_and_reset_falls_back(monkeypatch):
    monkeypatch.setenv("CORE_NUM_THREADS", "7")
    config.reload()
    config.set("num_threads", 9)
    assert config.get("num_threads") == 9
    assert config.source_of("num_threads") == "api (core.config.set)"
    config.reset("num_threads")
    assert config.get("num_threads") == 7
    assert config.source_of("num_threads") == "environment variable CORE_NUM_THREADS"


def test_all_levels_at_once(tmp_path, isolated, monkeypatch):
    user_file(tmp_path, "num_threads = 1\ndebug = false\nblock = 'u'\nplugins = 'u'\n")
    write(isolated / "core.toml", "num_threads = 2\nblock = 'p'\nplugins = 'p'\n")
    monkeypatch.setenv("CORE_NUM_THREADS", "3")
    monkeypatch.setenv("CORE_BLOCK", "e")
    config.reload()
    config.set("num_threads", 4)
    sources = {key: source for key, _, source in config.describe()}
    assert config.get("num_threads") == 4 and sources["num_threads"].startswith("api")
    assert config.get("block") == ("e",) and sources["block"] == "environment variable CORE_BLOCK"
    assert config.get("plugins") == ("p",) and sources["plugins"].startswith("project config")
    assert config.get("debug") is False and sources["debug"].startswith("user config")
    assert config.get("fallback") is True and sources["fallback"] == "default"


# -- CORE_CONFIG --------------------------------------------------------------------------------------------

def test_core_config_file_replaces_project_and_user_lookup(tmp_path, isolated, monkeypatch):
    user_file(tmp_path, "debug = true\n")
    write(isolated / "core.toml", "num_threads = 5\n")
    explicit = write(tmp_path / "elsewhere" / "settings.toml", "num_threads = 8\n")
    monkeypatch.setenv("CORE_CONFIG", str(explicit))
    config.reload()
    assert config.get("num_threads") == 8
    assert config.source_of("num_threads") == f"config file {explicit} (CORE_CONFIG)"
    assert config.get("debug") is False  # the user file is not read either


def test_core_config_may_name_a_pyproject(tmp_path, monkeypatch):
    explicit = write(tmp_path / "other" / "pyproject.toml", "[tool.core]\nfallback = false\n")
    monkeypatch.setenv("CORE_CONFIG", str(explicit))
    config.reload()
    assert config.get("fallback") is False


def test_core_config_missing_or_invalid_file(tmp_path, monkeypatch):
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("CORE_CONFIG", str(missing))
    with pytest.raises(ConfigError, match=f"{missing}.*does not exist"):
        config.reload()
        config.get("num_threads")
    broken = write(tmp_path / "broken.toml", "num_threads = = 3\n")
    monkeypatch.setenv("CORE_CONFIG", str(broken))
    with pytest.raises(ConfigError, match=f"{broken} is not valid TOML"):
        config.reload()
        config.get("num_threads")


# -- errors name the file and the key ------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["user", "project"])
def test_unknown_key_names_file_and_key(tmp_path, isolated, where):
    path = user_file(tmp_path, "fallbak = true\n") if where == "user" else write(isolated / "core.toml",
                                                                                 "fallbak = true\n")
    with pytest.raises(ConfigError, match=rf"{where} config {path}: unknown config key 'fallbak' "
                                          r"\(did you mean 'fallback'\?\)"):
        config.reload()
        config.get("device")


@pytest.mark.parametrize("text, key, expected", [
    ("fallback = 'maybe'\n", "fallback", "must be a boolean"),
    ("num_threads = -2\n", "num_threads", "non-negative integer"),
    ("num_threads = 'many'\n", "num_threads", "non-negative integer"),
    ("device = 'not a device!'\n", "device", "is not a device"),
    ("plugins = 3\n", "plugins", "list of names"),
    ("backends = 'cpu'\n", "backends", "cpu=numpy"),
    ("plugin = 3\n", "plugin", "table of per-plugin settings"),
])
def test_bad_value_in_file_names_file_and_key(isolated, text, key, expected):
    path = write(isolated / "core.toml", text)
    with pytest.raises(ConfigError, match=rf"project config {path}: '{key}' .*{expected}"):
        config.reload()
        config.get(key)


@pytest.mark.parametrize("variable, value, key", [
    ("CORE_FALLBACK", "perhaps", "fallback"), ("CORE_NUM_THREADS", "x", "num_threads"),
    ("CORE_BACKENDS", "cpu", "backends"), ("CORE_DEVICE", "???", "device"),
])
def test_bad_value_in_environment_names_variable_and_key(monkeypatch, variable, value, key):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=rf"environment variable {variable}: '{key}'"):
        config.reload()
        config.get(key)


@pytest.mark.parametrize("where", ["user", "project", "pyproject", "environment"])
def test_bad_value_is_reported_on_first_read_whichever_key_is_read(tmp_path, isolated, monkeypatch, where):
    text = "fallback = 'maybe'\n"
    if where == "environment":
        monkeypatch.setenv("CORE_FALLBACK", "maybe")
        source = "environment variable CORE_FALLBACK"
    elif where == "user":
        source = f"user config {user_file(tmp_path, text)}"
    elif where == "project":
        source = f"project config {write(isolated / 'core.toml', text)}"
    else:
        path = write(isolated / "pyproject.toml", "[tool.core]\n" + text)
        source = f"project config {path}"
    with pytest.raises(ConfigError, match=rf"^{re.escape(source)}: 'fallback' must be a boolean "
                                          r"\(true/false, 1/0, yes/no, on/off\), got 'maybe'$"):
        config.reload()
        config.get("num_threads")


def test_set_checks_its_value_at_once():
    with pytest.raises(ValueError, match=r"^core.config.set: 'fallback' must be a boolean \(true/false, 1/0, "
                                         r"yes/no, on/off\), got 'maybe'$"):
        config.set("fallback", "maybe")
    assert config.get("fallback") is True and config.source_of("fallback") == "default"


@pytest.mark.parametrize("value", ["cpu:0=numpy", "cpu=", "=numpy", "cpu=numpy,cuda"])
def test_backends_must_map_device_types_to_names(monkeypatch, value):
    monkeypatch.setenv("CORE_BACKENDS", value)
    with pytest.raises(ConfigError, match=rf"environment variable CORE_BACKENDS: 'backends' must map device types "
                                          rf"to backend names, like 'cpu=numpy,opencl=opencl' .*got '{value}'"):
        config.reload()


def test_plugin_settings_must_be_tables(isolated):
    path = write(isolated / "pyproject.toml", "[tool.core.plugin]\nopencl = 'pocl'\n")
    with pytest.raises(ConfigError, match=rf"project config {re.escape(str(path))}: 'plugin' must be a table of "
                                          r"per-plugin settings \(\[tool.core.plugin.NAME\]\)"):
        config.reload()


def test_api_errors():
    with pytest.raises(ConfigError, match="core.config.set: unknown config key 'fallbak'"):
        config.set("fallbak", True)
    with pytest.raises(ConfigError, match="core.config.set: 'num_threads' must be a non-negative integer"):
        config.set("num_threads", -1)
    with pytest.raises(ConfigError, match="unknown config key 'nope'"):
        config.get("nope")
    assert issubclass(ConfigError, ValueError)


def test_value_forms_are_parsed(monkeypatch):
    monkeypatch.setenv("CORE_PLUGINS", " a, b ,")
    monkeypatch.setenv("CORE_BACKENDS", "cpu=numpy, opencl = core_opencl")
    monkeypatch.setenv("CORE_DISABLE_PLUGIN_AUTOLOAD", "yes")
    monkeypatch.setenv("CORE_DEVICE", "meta")
    config.reload()
    assert config.get("plugins") == ("a", "b")
    assert config.get("backends") == {"cpu": "numpy", "opencl": "core_opencl"}
    assert config.get("disable_plugin_autoload") is True
    assert config.get("device") == "meta"


def test_plugin_tables(isolated):
    write(isolated / "pyproject.toml", "[tool.core.plugin.opencl]\nplatform = 'pocl'\n")
    config.reload()
    assert config.get("plugin") == {"opencl": {"platform": "pocl"}}


def test_files_are_never_written(tmp_path, isolated):
    user_file(tmp_path, "debug = false\n")
    config.set("num_threads", 2)
    config.describe()
    assert sorted(p.name for p in isolated.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "xdg" / "core").iterdir()) == ["config.toml"]


# -- the device setting drives factory functions --------------------------------------------------------------

def test_device_config_changes_default_device_of_factories(isolated, monkeypatch):
    assert core.empty(2).device.type == "cpu"
    write(isolated / "core.toml", "device = 'meta'\n")
    config.reload()
    assert core.get_default_device() == core.device("meta")
    assert core.empty(2).device.type == "meta"
    assert core.zeros(2, 3).is_meta
    assert core.empty(2, device="cpu").device.type == "cpu"  # an explicit argument still wins
    with core.device("cpu"):
        assert core.ones(1).device.type == "cpu"
    monkeypatch.setenv("CORE_DEVICE", "cpu")
    config.reload()
    assert core.empty(1).device.type == "cpu"
    config.set("device", "meta")
    assert core.empty(1).is_meta
    config.reset("device")
    assert core.empty(1).device.type == "cpu"


def test_set_default_device_outranks_config():
    config.set("device", "meta")
    core.set_default_device("cpu")
    try:
        assert core.empty(1).device.type == "cpu"
    finally:
        core.set_default_device(None)
    assert core.empty(1).is_meta
