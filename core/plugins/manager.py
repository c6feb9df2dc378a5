"""The plugin manager: finds backends, picks one per device type, loads it on first use.

Built-in backends (the NumPy reference for ``cpu`` and the ``meta`` device)
register through the same hooks as third-party ones. Entry points in the
``core.backends`` group are scanned once, lazily, each in its own ``try``: a
plugin that fails to import is recorded with its reason and never breaks
``import core`` or the other backends. Every ``BaseException`` a plugin raises
is isolated so (a ``SystemExit`` from its import included), except
``KeyboardInterrupt``: the user's Ctrl-C still stops the process.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import pluggy

from .. import config
from ..dispatch.keys import backend_key
from ..dispatch.operator import get_operator
from . import hookspecs

__all__ = ["BackendInfo", "PluginManager", "get_manager", "BackendUnavailableError"]

ENTRY_POINT_GROUP = "core.backends"
# Process-group backends (core.distributed) have their own group; their plugins load the same way.
DISTRIBUTED_ENTRY_POINT_GROUP = "core.distributed_backends"
BUILTIN_PLUGINS = ("core.backends.numpy.plugin", "core.backends.meta", "core.distributed.mpi")
# Device types whose plugin ships with core: each is the entry point, the extra and the plugins/ folder of that name.
SHIPPED_DEVICE_TYPES = ("cuda", "opencl", "webgpu")


def install_hint(device_type: str) -> str:
    """How to install the plugin core ships for ``device_type``: the extra holds its stack, plugins/ the plugin."""
    return (f"install the core[{device_type}] extra and its plugin, in a checkout of core: "
            f"pip install -e '.[{device_type}]' -e plugins/{device_type}")


class BackendUnavailableError(RuntimeError):
    """A device was asked for whose backend is missing, failed to load, or reports itself unavailable."""


@dataclass
class BackendInfo:
    """What a plugin said about one backend, and what became of it."""

    name: str
    device_type: str
    runtime: Any  # "module:attr" (imported lazily) or the object itself
    plugin: str
    priority: int = 0
    probe: Callable[[], tuple] | None = None
    install_hint: str = ""
    version: str = ""
    extends: str | None = None  # a backend of the same device type whose kernels this one builds on
    status: str = "registered"  # registered | loaded | unavailable | failed
    reason: str = ""
    instance: Any = None
    kernels: list = field(default_factory=list)


@dataclass
class ProcessGroupBackendInfo:
    """What a plugin said about one core.distributed backend."""

    name: str
    runtime: Any  # "module:attr" of its ProcessGroup class (imported on init_process_group) or the class
    plugin: str
    devices: tuple = ("cpu",)  # device types whose tensors it communicates
    probe: Callable[[], tuple] | None = None
    install_hint: str = ""
    version: str = ""


class PluginManager:
    """Discovers plugins and owns the backend for each device type."""

    def __init__(self):
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.backends: dict[str, BackendInfo] = {}
        self.process_group_backends: dict[str, ProcessGroupBackendInfo] = {}
        self.failed_plugins: dict[str, str] = {}  # plugin name -> reason
        self.blocked_plugins: list[str] = []  # named in the 'block' setting
        self.excluded_plugins: list[str] = []  # left out by the 'plugins' allow-list
        self._scanned = False
        self.scanning = False  # true while scan() loads the entry points
        self._selected: dict[str, BackendInfo] = {}
        self._passes: list | None = None  # JIT passes from register_passes, collected on first use
        self._lock = threading.RLock()
        self.pm.hook.register_backends.call_historic(kwargs={"register": self._register_backend_from(None)})
        self.pm.hook.register_process_group_backends.call_historic(kwargs={"register": self._register_process_group})

    # -- discovery ----------------------------------------------------------
    def _register_backend_from(self, plugin_name: str | None) -> Callable:
        def register(name: str, device_type: str, runtime, priority: int = 0, probe=None,
                     install_hint: str = "", version: str = "", extends: str | None = None) -> None:
            owner = plugin_name or self._current_plugin or "?"
            if name in self.backends and self.backends[name].plugin != owner:
                raise RuntimeError(f"plugin '{owner}': backend name '{name}' is already registered by "
                                   f"plugin '{self.backends[name].plugin}'")
            backend_key(device_type)  # allocate the dispatch key now
            self.backends[name] = BackendInfo(name=name, device_type=device_type, runtime=runtime,
                                              plugin=owner, priority=priority, probe=probe,
                                              install_hint=install_hint, version=version, extends=extends)
            self._selected.clear()

        return register

    def _register_process_group(self, name: str, runtime, devices=("cpu",), probe=None, install_hint: str = "",
                                version: str = "") -> None:
        owner = self._current_plugin or "?"
        if name in self.process_group_backends and self.process_group_backends[name].plugin != owner:
            raise RuntimeError(f"plugin '{owner}': process-group backend '{name}' is already registered by "
                               f"plugin '{self.process_group_backends[name].plugin}'")
        self.process_group_backends[name] = ProcessGroupBackendInfo(name, runtime, owner, tuple(devices), probe,
                                                                    install_hint, version)

    _current_plugin: str | None = None

    def register_plugin(self, obj, name: str) -> None:
        """Register a plugin object (module) under ``name``, checking its declared API version."""
        api = getattr(obj, "CORE_PLUGIN_API", None)
        if api is not None and tuple(api)[0] != hookspecs.PLUGIN_API_VERSION[0]:
            raise RuntimeError(
                f"plugin '{name}' was written for plugin API {tuple(api)}, but this core provides "
                f"{hookspecs.PLUGIN_API_VERSION}; upgrade the plugin or core")
        self._current_plugin = name
        try:
            self.pm.register(obj, name=name)
        except pluggy.PluginValidationError as exc:
            self._forget_plugin(name)
            raise RuntimeError(f"plugin '{name}' does not match the hook specs: {' '.join(str(exc).split())}") \
                from exc
        except KeyboardInterrupt:
            self._forget_plugin(name)
            raise
        except BaseException as exc:  # the historic register_backends hook raised (SystemExit too): undo it
            self._forget_plugin(name)
            raise RuntimeError(f"plugin '{name}': hook register_backends raised {type(exc).__name__}: {exc}") \
                from exc
        finally:
            self._current_plugin = None
        unknown = [caller.name for caller in self.pm.get_hookcallers(obj) or () if caller.spec is None and not any(
            impl.optionalhook for impl in caller.get_hookimpls() if impl.plugin is obj)]
        if unknown:  # a misspelt hook would otherwise never be called; optionalhook=True marks a newer core's hook
            self._forget_plugin(name)
            known = sorted(hook for hook, caller in vars(self.pm.hook).items() if caller.has_spec())
            raise RuntimeError(f"plugin '{name}' implements unknown hook(s) {', '.join(unknown)}; the hooks are "
                               f"{', '.join(known)} (see docs/hooks.md)")

    def _forget_plugin(self, name: str) -> None:
        """Unregister plugin ``name`` and drop the backends it described."""
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)
        for backend in [b for b, info in self.backends.items() if info.plugin == name]:
            del self.backends[backend]
        for backend in [b for b, info in self.process_group_backends.items() if info.plugin == name]:
            del self.process_group_backends[backend]
        self._selected.clear()

    def load_builtins(self) -> None:
        """Register the built-in backends through the same hooks as third-party ones."""
        for module_name in BUILTIN_PLUGINS:
            name = {"core.backends.numpy.plugin": "numpy", "core.distributed.mpi": "mpi"}.get(module_name)
            self.register_plugin(importlib.import_module(module_name), name=name or module_name.rsplit(".", 1)[-1])

    def scan(self) -> None:
        """Load every ``core.backends`` entry point once, recording failures instead of raising."""
        with self._lock:
            if self._scanned:
                return
            self._scanned = True
            autoload = not config.get("disable_plugin_autoload")
            allow = config.get("plugins")
            block = config.get("block")
            if not autoload and not allow:
                return
            self.scanning = True
            try:
                self._load_entry_points(autoload, allow, block)
            finally:
                self.scanning = False
            self._selected.clear()

    def _load_entry_points(self, autoload: bool, allow, block) -> None:
        """Register every ``core.backends`` and ``core.distributed_backends`` entry point the settings let in,
        recording the rest and failures."""
        found = [*importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
                 *importlib.metadata.entry_points(group=DISTRIBUTED_ENTRY_POINT_GROUP)]
        for ep in found:
            if ep.name in self.pm.list_name_plugin() or ep.name in self.failed_plugins:
                continue
            if ep.name in block:
                self.blocked_plugins.append(ep.name)
                continue
            if allow and ep.name not in allow:
                if autoload:  # with autoload off only the named plugins load (pytest's -p rule): none is left out
                    self.excluded_plugins.append(ep.name)
                continue
            try:
                obj = ep.load()
                self.register_plugin(obj, name=ep.name)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # a broken plugin must not break core, even by calling sys.exit()
                self.failed_plugins[ep.name] = f"{type(exc).__name__}: {exc}"
                self.failed_plugins[ep.name + ":traceback"] = traceback.format_exc()

    # -- selection ----------------------------------------------------------
    def candidates(self, device_type: str) -> list[BackendInfo]:
        """Backends serving ``device_type``, best first (config choice, then priority)."""
        self.scan()
        found = [b for b in self.backends.values() if b.device_type == device_type]
        chosen = config.get("backends").get(device_type)
        found.sort(key=lambda b: (b.name != chosen, -b.priority))
        return found

    def backend_for(self, device_type: str) -> BackendInfo:
        """The loaded backend that serves ``device_type``; BackendUnavailableError (cause chained) if none."""
        info = self._selected.get(device_type)
        if info is not None:
            return info
        with self._lock:
            candidates = self.candidates(device_type)
            chosen = config.get("backends").get(device_type)
            if chosen and not any(b.name == chosen for b in candidates):
                raise self._chosen_missing(device_type, chosen)
            errors = []
            for info in candidates:
                try:
                    self.load(info)
                except BackendUnavailableError as exc:
                    errors.append(exc)
                    if chosen == info.name:
                        raise
                    continue
                self._selected[device_type] = info
                return info
            if errors:
                raise BackendUnavailableError(str(errors[0])) from errors[0]
            raise BackendUnavailableError(self.missing_message(device_type))

    # -- why a device type or backend cannot be used ---------------------------------------------------------
    def unserved_message(self, device_type: str) -> str:
        """Why nothing serves ``device_type``: the 'backends' setting's choice for it when there is one (it names
        the plugin that did not load), else :meth:`missing_message`."""
        chosen = config.get("backends").get(device_type)
        return str(self._chosen_missing(device_type, chosen)) if chosen else self.missing_message(device_type)

    def missing_message(self, device_type: str) -> str:
        """Why no backend serves ``device_type``: its plugin failed, is blocked or left out, or is not installed."""
        subject = f"no backend for device type '{device_type}'"
        served = sorted({b.device_type for b in self.backends.values()})
        note = self._default_device_note(device_type)
        if not_loaded := self._plugin_not_loaded(device_type):  # the plugin is named: no need to list the others
            return _unavailable(f"{subject} is loaded", *not_loaded) + note
        if device_type in SHIPPED_DEVICE_TYPES:
            message = _unavailable(f"{subject} is installed", "", install_hint(device_type))
        elif autoload_off := self._autoload_off():
            message = _unavailable(f"{subject} is loaded", *autoload_off)
        else:
            close = difflib.get_close_matches(device_type, sorted({*served, *SHIPPED_DEVICE_TYPES}), n=1)
            fix = f"did you mean '{close[0]}'?" if close else (
                "a new device type comes with the plugin package that provides it (core's own plugins provide "
                f"{' and '.join(SHIPPED_DEVICE_TYPES)})")
            message = _unavailable(f"{subject} is installed (device types with a backend: {', '.join(served)})",
                                   "", fix)
        return message + note + self._not_loaded_note()

    def _chosen_missing(self, device_type: str, chosen: str) -> Exception:
        """The error for a 'backends' setting naming a backend not registered for ``device_type``.

        A plugin that is installed but did not load is a BackendUnavailableError; a name nothing installed
        provides is a bad config value (ConfigError, a ValueError) naming where the setting came from.
        """
        where = config.source_of("backends")
        selects = f"{where}: 'backends' selects backend '{chosen}' for device type '{device_type}'"
        other = self.backends.get(chosen)
        if other is not None:
            return config.ConfigError(f"{selects}, but '{chosen}' serves device type '{other.device_type}'")
        not_loaded = self._plugin_not_loaded(chosen) or self._autoload_off()
        if not_loaded:
            return BackendUnavailableError(_unavailable(f"{selects}, which is not loaded", *not_loaded))
        if chosen in SHIPPED_DEVICE_TYPES:
            return config.ConfigError(f"{selects}, which is not installed; {install_hint(chosen)}")
        names = sorted(b.name for b in self.backends.values() if b.device_type == device_type)
        close = difflib.get_close_matches(chosen, sorted({*self.backends, *self._entry_point_names()}), n=1)
        guess = f" (did you mean '{close[0]}'?)" if close else ""
        return config.ConfigError(f"{selects}, but no backend of that name is installed{guess}; backends for "
                                  f"'{device_type}': {', '.join(names) or 'none'}")

    def _plugin_not_loaded(self, name: str) -> tuple:
        """``(problem, fix)`` when an installed plugin called ``name`` did not load, else ``()``."""
        if name in self.failed_plugins:
            return (f"plugin '{name}' is installed but failed to load ({self.failed_plugins[name]})",
                    "run `python -m core info` for details")
        if name in self.blocked_plugins:
            return (f"plugin '{name}' is blocked by the 'block' setting ({config.source_of('block')})",
                    f"remove '{name}' from it to load the plugin")
        if name in self.excluded_plugins:
            return (f"plugin '{name}' is installed but not in the 'plugins' allow-list ({config.source_of('plugins')})",
                    f"add '{name}' to it to load the plugin")
        return self._autoload_off(name) if name in self._entry_point_names() else ()

    def _autoload_off(self, name: str = "") -> tuple:
        """``(problem, fix)`` when autoload is off and plugins are installed (``name`` among them), else ``()``."""
        installed = self._entry_point_names()
        if not config.get("disable_plugin_autoload") or not installed:
            return ()
        what = f"the installed plugin '{name}' was" if name else f"the installed plugins ({', '.join(installed)}) were"
        return (f"plugin autoload is off ('disable_plugin_autoload' from "
                f"{config.source_of('disable_plugin_autoload')}), so {what} not loaded",
                f"name the plugin in the 'plugins' setting to load it explicitly (CORE_PLUGINS={name or 'NAME'}), "
                "or turn autoload back on")

    def _entry_point_names(self) -> list:
        """Names of the installed ``core.backends`` entry points (read from metadata: nothing is imported)."""
        return sorted({ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)})

    def _default_device_note(self, device_type: str) -> str:
        try:  # the device may be the configured default one: then say where that came from
            configured = config.get("device").partition(":")[0] == device_type
            where = config.source_of("device")
        except config.ConfigError:
            return ""
        return f" (the default device, from {where})" if configured and where != "default" else ""

    def _not_loaded_note(self) -> str:
        """Names the installed plugins that did not load: a plugin's name need not be its device type's."""
        idle = [f"'{name}' (failed to load)" for name in self.failed_plugins if ":" not in name]
        idle += [f"'{name}' (blocked)" for name in self.blocked_plugins]
        idle += [f"'{name}' (not in the allow-list)" for name in self.excluded_plugins]
        if not idle:
            return ""
        return f" (plugins not loaded, which may provide it: {', '.join(idle)}; `python -m core info` says why)"

    def load(self, info: BackendInfo):
        """Import, probe and register the kernels of one backend (once)."""
        if info.status == "loaded":
            return info.instance
        if info.status in ("failed", "unavailable"):
            raise BackendUnavailableError(self._unavailable_message(info)) from getattr(info, "_cause", None)
        try:
            if info.probe is not None:
                ok, reason = info.probe()
                if not ok:
                    info.status, info.reason = "unavailable", reason
                    raise BackendUnavailableError(self._unavailable_message(info))
            runtime = info.runtime
            if isinstance(runtime, str):
                module_name, _, attr = runtime.partition(":")
                runtime = getattr(importlib.import_module(module_name), attr) if attr else \
                    importlib.import_module(module_name)
            if isinstance(runtime, type):
                runtime = runtime()
            runtime.name = info.name
            runtime.device_type = info.device_type
            runtime.key = backend_key(info.device_type)
            info.instance = runtime
            available = getattr(runtime, "is_available", None)
            if available is not None:
                ok, reason = available()
                if not ok:
                    info.status, info.reason = "unavailable", reason
                    raise BackendUnavailableError(self._unavailable_message(info))
            base = self._load_base(info)
            self._register_kernels(info, runtime, base)
        except (BackendUnavailableError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # the plugin's probe, import or constructor: SystemExit too
            info.status, info.reason = "failed", f"{type(exc).__name__}: {exc}"
            info._cause = exc
            raise BackendUnavailableError(self._unavailable_message(info)) from exc
        info.status = "loaded"
        return runtime

    def _load_base(self, info: BackendInfo) -> BackendInfo | None:
        """Load the backend ``info`` extends (its kernels go in first; ``info``'s then replace them)."""
        if info.extends is None:
            return None
        base = self.backends.get(info.extends)
        if base is None or base.device_type != info.device_type:
            raise RuntimeError(f"backend '{info.name}' extends '{info.extends}', which is not an installed backend "
                               f"of device type '{info.device_type}'")
        self.load(base)
        return base

    def _register_kernels(self, info: BackendInfo, runtime, base: BackendInfo | None = None) -> None:
        key = runtime.key
        registered = info.kernels
        base_owner = f"plugin '{base.plugin}' (backend {base.name})" if base is not None else None

        def register(op: str, fn: Callable, dtypes=None, override: bool = False, min_numel: int | None = None) -> None:
            try:
                operator = get_operator(op)
            except KeyError as exc:
                raise RuntimeError(f"plugin '{info.plugin}' registers a kernel for undeclared op: {exc.args[0]}") \
                    from None
            if dtypes is not None:
                fn = _dtype_guard(operator, fn, frozenset(dtypes), info.name)
            replaces_base = base_owner is not None and operator.owners.get(key.bit) == base_owner
            operator.register_kernel(key, fn, owner=f"plugin '{info.plugin}' (backend {info.name})",
                                     override=override or replaces_base, min_numel=min_numel)
            registered.append(op)

        calls = (("configure", {"config": config}), ("register_kernels", {"register": register, "backend": runtime}))
        for hook_name, kwargs in calls:
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                if impl.plugin_name != info.plugin:
                    continue
                try:
                    impl.function(**kwargs)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # SystemExit too: the backend fails, the process goes on
                    raise RuntimeError(f"plugin '{info.plugin}': hook {hook_name} raised "
                                       f"{type(exc).__name__}: {exc}") from exc

    def _unavailable_message(self, info: BackendInfo) -> str:
        return _unavailable(f"backend '{info.name}' for device type '{info.device_type}' is {info.status}",
                            info.reason, info.install_hint)

    def jit_passes(self, known: tuple) -> list:
        """``(name, fn, before)`` of every pass plugins add through ``register_passes``, collected once.

        ``known`` are the built-in pass names. A plugin whose hook raises, or registers a bad pass, is reported
        in ``failed_plugins`` (its passes are dropped) and never breaks a trace.
        """
        with self._lock:
            if self._passes is not None:
                return self._passes
            self.scan()
            found: list = []
            for impl in self.pm.hook.register_passes.get_hookimpls():
                mine: list = []

                def register(name: str, fn, before: str | None = "fusion", _owner=impl.plugin_name, _mine=mine):
                    names = set(known) | {n for n, _, _ in found + _mine}
                    if not isinstance(name, str) or not name or name in names:
                        raise ValueError(f"plugin '{_owner}': JIT pass name {name!r} is empty or already taken")
                    if not callable(fn):
                        raise TypeError(f"plugin '{_owner}': JIT pass '{name}' is not callable")
                    if before is not None and before not in names:
                        raise ValueError(f"plugin '{_owner}': JIT pass '{name}' runs before unknown pass '{before}' "
                                         f"(passes: {', '.join(sorted(names))})")
                    _mine.append((name, fn, before))

                try:
                    impl.function(register=register)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # a broken plugin loses its passes (SystemExit too), the trace goes on
                    self.failed_plugins[f"{impl.plugin_name}:register_passes"] = f"{type(exc).__name__}: {exc}"
                    continue
                found.extend(mine)
            self._passes = found
            return found

    def runtime_for(self, device_type: str):
        """The runtime object that serves ``device_type`` (loading it on first use)."""
        return self.backend_for(device_type).instance

    def reset_selection(self) -> None:
        """Forget which backend serves each device type (after a config change)."""
        self._selected.clear()
        _RUNTIME_CACHE.clear()


def _unavailable(subject: str, problem: str = "", fix: str = "") -> str:
    """Every "this device or backend cannot be used" message reads alike: ``subject: problem; fix``."""
    return subject + (f": {problem}" if problem else "") + (f"; {fix}" if fix else "")


def _dtype_guard(operator, fn: Callable, dtypes: frozenset, backend: str) -> Callable:
    names = sorted(d.name for d in dtypes)

    def guarded(spec, *args, **kwargs):
        for a in args:
            d = getattr(a, "dtype", None)
            if d is not None and hasattr(a, "_storage") and d not in dtypes:
                raise TypeError(f"{operator.name}(): backend {backend} does not support dtype {d.name} "
                                f"(supported: {', '.join(names)})")
        return fn(spec, *args, **kwargs)

    return guarded


_MANAGER: list = []
_RUNTIME_CACHE: dict = {}


def get_manager() -> PluginManager:
    """The process-wide plugin manager, created (with the built-ins registered) on first use."""
    if not _MANAGER:
        manager = PluginManager()
        _MANAGER.append(manager)
        manager.load_builtins()
    return _MANAGER[0]


@config.subscribe
def _config_changed() -> None:
    """A config change may choose other backends: forget the selection (if a manager exists yet)."""
    if _MANAGER:
        _MANAGER[0].reset_selection()


def runtime_for(device_type: str):
    """Fast path: the runtime serving ``device_type``."""
    runtime = _RUNTIME_CACHE.get(device_type)
    if runtime is None:
        runtime = _RUNTIME_CACHE[device_type] = get_manager().runtime_for(device_type)
    return runtime
