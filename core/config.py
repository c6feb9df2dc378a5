"""Configuration, resolved with a fixed precedence (highest first):

1. the API: ``core.config.set(...)`` (and ``device=`` arguments / ``with core.device(...)``);
2. the environment: ``CORE_DEVICE``, ``CORE_PLUGINS``, ``CORE_BLOCK``,
   ``CORE_DISABLE_PLUGIN_AUTOLOAD``, ``CORE_FALLBACK``, ``CORE_BACKENDS``,
   ``CORE_NUM_THREADS``, ``CORE_DEBUG``; ``CORE_CONFIG`` names a config file
   that replaces the project/user lookup;
3. a project file: ``[tool.core]`` in the nearest ``pyproject.toml``, or the
   nearest ``core.toml``, searched upwards from the working directory;
4. a user file: ``$XDG_CONFIG_HOME/core/config.toml`` (``~/.config/core/config.toml``);
5. the defaults below.

Files are read with ``tomllib`` and never written. Unknown keys and bad values
raise :class:`ConfigError` (a ValueError) naming the file (or variable) and the
key: ``set`` checks its value at once, files and variables are all checked on
the first read after a (re)load, whichever key is read.

Config is the lowest layer: it imports nothing that reads it. Layers that keep
state derived from config (the dispatcher's resolution caches and debug flag,
the plugin manager's backend selection) ``subscribe`` when they are imported
and are called after every ``set``, ``reset`` and ``reload``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

__all__ = ["ConfigError", "get", "set", "reset", "describe", "reload", "subscribe", "OPTIONS", "source_of"]


class ConfigError(ValueError):
    """A configuration key or value that core does not understand."""


def _to_bool(value, where: str, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{where}: '{key}' must be a boolean (true/false, 1/0, yes/no, on/off), got {value!r}")


def _to_list(value, where: str, key: str) -> tuple:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where}: '{key}' must be a list of names (or a comma-separated string), got {value!r}")


def _to_mapping(value, where: str, key: str) -> dict:
    mapping = value
    if isinstance(value, str):  # "cpu=numpy,opencl=opencl"
        pairs = [p.split("=", 1) for p in value.split(",") if p.strip()]
        mapping = {k.strip(): v.strip() for k, v in pairs} if all(len(p) == 2 for p in pairs) else None
    if isinstance(mapping, dict) and all(_is_name(k) and isinstance(v, str) and v for k, v in mapping.items()):
        return dict(mapping)  # which backend names exist is known once plugins are scanned: the manager checks then
    raise ConfigError(f"{where}: '{key}' must map device types to backend names, like 'cpu=numpy,opencl=opencl' "
                      f"or {{cpu = \"numpy\"}}, got {value!r}")


def _is_name(text: str) -> bool:
    """A device type as ``core.device`` spells it: letters, digits and underscores, starting with a letter."""
    return text.replace("_", "").isalnum() and text[0].isalpha()


def _to_device(value, where: str, key: str) -> str:
    """A device spec in its canonical spelling; its syntax is checked here, whether a backend has its type when the
    default device is made (then the error names this setting's source)."""
    from .device import device, parse

    try:
        if isinstance(value, device):
            return str(value)
        name, index = parse(value)
        return name if index is None else f"{name}:{index}"
    except (RuntimeError, TypeError) as exc:
        raise ConfigError(f"{where}: '{key}' is not a device (like 'cpu', 'cuda:0'): {exc}") from None


def _to_threads(value, where: str, key: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = -1
    if n < 0 or isinstance(value, bool):
        raise ConfigError(f"{where}: '{key}' must be a non-negative integer (0 = library default), got {value!r}")
    return n


def _to_table(value, where: str, key: str) -> dict:
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ConfigError(f"{where}: '{key}' must be a table of per-plugin settings ([tool.core.plugin.NAME]), "
                          f"got {value!r}")
    return value


@dataclass(frozen=True)
class Option:
    """One configuration key: its default, its environment variable and its parser."""

    default: Any
    env: str | None
    parse: Callable
    help: str


OPTIONS: dict[str, Option] = {
    "device": Option("cpu", "CORE_DEVICE", _to_device, "default device of factory functions"),
    "plugins": Option((), "CORE_PLUGINS", _to_list, "allow-list of entry-point plugins (empty = all)"),
    "block": Option((), "CORE_BLOCK", _to_list, "entry-point plugins never to load"),
    "disable_plugin_autoload": Option(False, "CORE_DISABLE_PLUGIN_AUTOLOAD", _to_bool,
                                      "load only the entry-point plugins named in 'plugins'"),
    "backends": Option({}, "CORE_BACKENDS", _to_mapping, "backend chosen per device type, e.g. cpu=numpy"),
    "fallback": Option(True, "CORE_FALLBACK", _to_bool,
                       "run ops a device lacks on the CPU with copies (false = error)"),
    "num_threads": Option(0, "CORE_NUM_THREADS", _to_threads, "threads for CPU kernels (0 = library default)"),
    "debug": Option(False, "CORE_DEBUG", _to_bool, "check kernel outputs against meta functions"),
    "plugin": Option({}, None, _to_table, "per-plugin tables: [tool.core.plugin.NAME]"),
}

_api: dict[str, Any] = {}
_resolved: dict[str, tuple] = {}  # key -> (value, source)
_files: list = []  # [(label, path, table)] loaded once per reload
_subscribers: list = []  # callbacks run after every change, in subscription order


def _find_project_file(start: Path) -> tuple | None:
    for folder in (start, *start.parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            with open(pyproject, "rb") as f:
                table = tomllib.load(f).get("tool", {}).get("core")
            if table is not None:
                return str(pyproject), table
        core_toml = folder / "core.toml"
        if core_toml.is_file():
            with open(core_toml, "rb") as f:
                return str(core_toml), tomllib.load(f)
    return None


def _load_file(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} (from CORE_CONFIG) does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    return data.get("tool", {}).get("core", data) if path.endswith("pyproject.toml") else data


def _check_table(label: str, table: dict) -> None:
    for key, value in table.items():
        if key not in OPTIONS:
            import difflib

            close = difflib.get_close_matches(key, OPTIONS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{label}: unknown config key '{key}'{hint}; known keys: {', '.join(OPTIONS)}")
        OPTIONS[key].parse(value, label, key)  # a bad value is reported when the file is read, not when used


def _check_environment() -> None:
    """Parse every set ``CORE_*`` variable now, so a bad one is reported at once rather than when it is used."""
    for key, option in OPTIONS.items():
        if option.env and os.environ.get(option.env) is not None:
            option.parse(os.environ[option.env], f"environment variable {option.env}", key)


def _load_files() -> list:
    if _files:
        return _files[0]
    files = []
    explicit = os.environ.get("CORE_CONFIG")
    if explicit:
        files.append((f"config file {explicit} (CORE_CONFIG)", _load_file(explicit)))
    else:
        try:
            project = _find_project_file(Path.cwd())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read the project config: {exc}") from None
        if project is not None:
            files.append((f"project config {project[0]}", project[1]))
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        user = os.path.join(base, "core", "config.toml")
        if os.path.isfile(user):
            files.append((f"user config {user}", _load_file(user)))
    for label, table in files:
        _check_table(label, table)
    _check_environment()
    _files.append(files)
    return files


def _resolve(key: str) -> tuple:
    option = OPTIONS[key]
    files = _load_files()  # reads and checks every file and variable once per reload
    if key in _api:
        return _api[key], "api (core.config.set)"
    if option.env and os.environ.get(option.env) is not None:
        where = f"environment variable {option.env}"
        return option.parse(os.environ[option.env], where, key), where
    for label, table in files:
        if key in table:
            return option.parse(table[key], label, key), label
    return option.default, "default"


def get(key: str):
    """The resolved value of config ``key``."""
    cached = _resolved.get(key)
    if cached is None:
        if key not in OPTIONS:
            raise ConfigError(f"unknown config key '{key}'; known keys: {', '.join(OPTIONS)}")
        cached = _resolved[key] = _resolve(key)
    return cached[0]


def source_of(key: str) -> str:
    """Where the value of ``key`` came from (api, an environment variable, a file, or default)."""
    get(key)
    return _resolved[key][1]


def set(key: str, value) -> None:  # noqa: A001 - the API is core.config.set
    """Set ``key`` for this process; outranks environment and files."""
    if key not in OPTIONS:
        raise ConfigError(f"core.config.set: unknown config key '{key}'; known keys: {', '.join(OPTIONS)}")
    _api[key] = OPTIONS[key].parse(value, "core.config.set", key)
    _changed()


def reset(key: str | None = None) -> None:
    """Drop API-level settings (one key, or all)."""
    if key is None:
        _api.clear()
    else:
        _api.pop(key, None)
    _changed()


def reload() -> None:
    """Re-read environment and files (after changing them)."""
    _files.clear()
    _changed()


def describe() -> list:
    """``[(key, value, source)]`` for every key, as ``python -m core info`` prints it."""
    return [(key, get(key), source_of(key)) for key in OPTIONS]


def subscribe(callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback()`` after every ``set``, ``reset`` and ``reload``; returns it (usable as a decorator)."""
    if callback not in _subscribers:
        _subscribers.append(callback)
    return callback


def _changed() -> None:
    _resolved.clear()
    error = None
    for callback in tuple(_subscribers):  # every subscriber hears the change, even after one raised
        try:
            callback()
        except Exception as exc:  # noqa: BLE001 - re-raised below, once all subscribers ran
            if error is None:
                error = exc
    if error is not None:
        raise error
