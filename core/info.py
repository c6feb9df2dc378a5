"""The ``python -m core info`` report: versions, backends, devices, op coverage, fallbacks, config, extras.

:func:`collect` gathers the report as plain data (what tests check and
``--json`` prints); :func:`render` lays it out as aligned text, the first thing
a bug report pastes. Gathering never raises: whatever fails is reported.
"""

from __future__ import annotations

import importlib.util
import platform
import sys

__all__ = ["collect", "render", "report", "EXTRAS"]

# core's optional extras: name -> (modules whose presence means it is installed, what it is for)
EXTRAS = {
    "onnx": (("onnx", "onnxruntime"), "onnx + onnxruntime, for core.onnx.export"),
    "opencl": (("core_opencl", "pyopencl"), "the opencl device (core-opencl + PyOpenCL)"),
    "cuda": (("core_cuda", "cupy"), "the cuda device (core-cuda + CuPy)"),
    "webgpu": (("core_webgpu", "wgpu"), "the webgpu device (core-webgpu + wgpu-py)"),
    "mpi": (("mpi4py",), "mpi4py + mpich, for the distributed work to come"),
}


def _versions() -> dict:
    import numpy
    import pluggy

    from . import __version__

    return {"core": __version__, "python": platform.python_version(), "numpy": numpy.__version__,
            "pluggy": pluggy.__version__, "platform": platform.platform()}


def _devices(runtime) -> list:
    try:
        return [runtime.device_name(i) for i in range(runtime.device_count())]
    except Exception as exc:  # noqa: BLE001 - a broken driver is a finding, not a crash
        return [f"<error: {type(exc).__name__}: {exc}>"]


def _coverage(info) -> dict:
    """The ops ``info``'s backend runs with its own kernels, or core runs for it without one (meta functions).

    Kernels of another backend of the same device type (the one it extends) are not credited to it.
    """
    from .dispatch import OPERATORS, backend_key

    key = backend_key(info.device_type)
    own = set(info.kernels)
    primitives = sorted(name for name, op in OPERATORS.items() if op.primitive)
    composites = [name for name, op in OPERATORS.items() if not op.primitive]
    missing = [name for name in primitives if name not in own and (
        key.bit in OPERATORS[name].kernels or not OPERATORS[name].has_kernel_for(key))]
    return {"primitives_implemented": len(primitives) - len(missing), "primitives_total": len(primitives),
            "missing": missing, "composites": len(composites),
            "composites_overridden": sum(1 for name in composites if name in own), "extends": info.extends}


def _probe(info, chosen: str | None) -> tuple:
    """Status of a backend that is not selected, probed without loading it (loading would register kernels)."""
    why = f"not selected ({chosen} serves {info.device_type})" if chosen else "not loaded"
    if info.probe is None:
        return "installed", why
    try:
        ok, reason = info.probe()
    except Exception as exc:  # noqa: BLE001 - the report never raises
        return "failed", f"probe raised {type(exc).__name__}: {exc}"
    return ("installed", why) if ok else ("unavailable", reason)


def _backends(manager, config_error: str) -> list:
    from .config import ConfigError
    from .plugins.manager import BackendUnavailableError

    rows = []
    selected, errors = {}, {}
    for device_type in dict.fromkeys(b.device_type for b in manager.backends.values()):
        try:
            selected[device_type] = manager.backend_for(device_type).name
        except BackendUnavailableError:
            pass  # the backends' own records say why
        except ConfigError as exc:  # a bad file or variable is reported once, in the Config section
            errors[device_type] = "configuration error (see Config)" if config_error else str(exc)
        except Exception as exc:  # noqa: BLE001 - the report never raises
            errors[device_type] = f"{type(exc).__name__}: {exc}"
    for info in sorted(manager.backends.values(), key=lambda b: (b.device_type, -b.priority, b.name)):
        row = {"name": info.name, "device_type": info.device_type, "plugin": info.plugin,
               "version": info.version, "priority": info.priority, "install_hint": info.install_hint,
               "selected": selected.get(info.device_type) == info.name, "status": info.status,
               "reason": info.reason, "devices": [], "coverage": None}
        if info.device_type in errors:  # loaded earlier or not, nothing serves the device type now
            row["status"], row["reason"] = "not selected", errors[info.device_type]
        elif info.status == "loaded":
            row["devices"] = _devices(info.instance)
            row["coverage"] = _coverage(info)
        elif info.status == "registered":
            row["status"], row["reason"] = _probe(info, selected.get(info.device_type))
        rows.append(row)
    return rows


def _present(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it (cupy takes seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: imported already, without a spec
        return module in sys.modules


def _extras() -> list:
    """Each optional extra, installed or not: what is missing and the command (run in a checkout) that adds it."""
    from .plugins.manager import SHIPPED_DEVICE_TYPES

    rows = []
    for name, (modules, purpose) in EXTRAS.items():
        missing = [m for m in modules if not _present(m)]
        plugin = f" -e plugins/{name}" if name in SHIPPED_DEVICE_TYPES else ""  # a device's extra is its stack only
        rows.append({"name": name, "installed": not missing, "missing": missing, "purpose": purpose,
                     "install": f"pip install -e '.[{name}]'{plugin}"})
    rows.append({"name": "all", "installed": all(r["installed"] for r in rows),
                 "missing": [m for r in rows for m in r["missing"]], "purpose": "every extra above",
                 "install": "pip install -e '.[all]'" + "".join(f" -e plugins/{d}" for d in SHIPPED_DEVICE_TYPES)})
    return rows


def _config() -> tuple:
    from . import config

    try:
        return [{"key": k, "value": v, "source": s} for k, v, s in config.describe()], ""
    except config.ConfigError as exc:
        return [], str(exc)


def collect() -> dict:
    """The info report as data: versions, plugins, backends (status, devices, coverage), fallbacks, config."""
    from .config import ConfigError
    from .dispatch import OPERATORS
    from .dispatch.operator import fallback_counts
    from .plugins.manager import get_manager

    manager = get_manager()
    scan_error = ""
    try:
        manager.scan()
    except Exception as exc:  # noqa: BLE001 - a bad config file is reported in the Config section instead
        scan_error = "" if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
    config_rows, config_error = _config()
    return {
        "versions": _versions(),
        "plugins": [name for name, _ in manager.pm.list_name_plugin()],
        "failed_plugins": {k: v for k, v in manager.failed_plugins.items() if not k.endswith(":traceback")},
        "failed_tracebacks": {k.rpartition(":")[0]: v for k, v in manager.failed_plugins.items()
                              if k.endswith(":traceback")},
        "blocked_plugins": list(manager.blocked_plugins),
        "excluded_plugins": list(manager.excluded_plugins),
        "scan_error": scan_error,
        "backends": _backends(manager, config_error),
        "process_groups": _process_groups(manager),
        "ops": {"primitive": sum(op.primitive for op in OPERATORS.values()),
                "composite": sum(not op.primitive for op in OPERATORS.values())},
        "fallbacks": [{"op": op, "device_type": dev, "count": n} for (op, dev), n in sorted(fallback_counts.items())],
        "config": config_rows,
        "config_error": config_error,
        "extras": _extras(),
        "hot_modules": _hot_modules(),
    }


def _hot_modules() -> dict:
    """{hot module: "compiled" | "stale" | "source"}: which of core's hot modules run compiled (core/_hot.py)."""
    from . import _hot

    return _hot.status()


# -- text -----------------------------------------------------------------------------------------------

def _process_groups(manager) -> dict:
    """core.distributed's process-group backends: plugin, devices, and whether their probe says they can run."""
    rows = {}
    for name, info in sorted(manager.process_group_backends.items()):
        try:
            ok, reason = info.probe() if info.probe is not None else (True, "")
        except Exception as exc:  # noqa: BLE001 - a broken probe is reported, never raised, by `core info`
            ok, reason = False, f"{type(exc).__name__}: {exc}"
        rows[name] = {"plugin": info.plugin, "devices": list(info.devices), "version": info.version,
                      "status": "available" if ok else f"unavailable: {reason} -- {info.install_hint}".rstrip(" -")}
    return rows


def _table(rows: list, indent: str = "  ") -> list:
    """Rows of cells as lines with aligned columns (the last column is not padded)."""
    if not rows:
        return []
    widths = [max(len(str(row[i])) for row in rows if i < len(row)) for i in range(max(map(len, rows)))]
    return [(indent + "  ".join(str(c).ljust(widths[i]) for i, c in enumerate(row[:-1])) + "  " + str(row[-1]))
            .rstrip() for row in rows]


def _wrap(items: list, width: int = 100, indent: str = "      ") -> list:
    lines, line = [], ""
    for item in items:
        if line and len(line) + len(item) + 2 > width - len(indent):
            lines.append(indent + line + ",")
            line = item
        else:
            line = f"{line}, {item}" if line else item
    return lines + [indent + line] if line else lines


def _compiled(data: dict) -> str:
    """How many hot modules run compiled, and what to do when some do not."""
    states = data.get("hot_modules", {})
    done = sum(state == "compiled" for state in states.values())
    text = f"{done} of {len(states)} hot modules (Cython)"
    stale = [name for name, state in states.items() if state == "stale"]
    if stale:
        text += f"; {len(stale)} changed since built, run from source: python -m core compile"
    elif not done:
        text += "; run from source: python -m core compile (needs Cython and a C compiler)"
    return text


def _status(row: dict) -> str:
    text = row["status"] + (" (selected)" if row["selected"] else "")
    if row["reason"]:
        text += f": {row['reason']}"
    if row["install_hint"] and row["status"] in ("failed", "unavailable"):
        text += f" -- {row['install_hint']}"
    return text


def render(data: dict) -> str:
    """The report as readable text with aligned columns."""
    v = data["versions"]
    out = ["core " + v["core"], *_table([["python", v["python"]], ["numpy", v["numpy"]], ["pluggy", v["pluggy"]],
                                         ["platform", v["platform"]], ["compiled", _compiled(data)]]), ""]
    out.append("Backends:")
    out += _table([["name", "device", "plugin", "version", "status"]] + [
        [r["name"], r["device_type"], r["plugin"], r["version"] or "-", _status(r)] for r in data["backends"]])
    out += ["", "Distributed (process-group backends):"]
    out += _table([["name", "devices", "plugin", "version", "status"]] + [
        [name, ",".join(r["devices"]), r["plugin"], r["version"] or "-", r["status"]]
        for name, r in data["process_groups"].items()])
    out.append("")
    out.append("Plugins: " + (", ".join(data["plugins"]) or "none"))
    failed = data["failed_plugins"]
    out.append("Failed plugins:" + ("" if failed else " none"))
    out += _table([[name, reason] for name, reason in failed.items()])
    for name, text in data["failed_tracebacks"].items():  # the details a failed plugin's error message points to
        out += [f"  {name}: traceback", *("    " + line for line in text.rstrip().splitlines())]
    out.append("Blocked plugins: " + (", ".join(data["blocked_plugins"]) or "none"))
    if data["excluded_plugins"]:
        out.append("Not in the plugins allow-list: " + ", ".join(data["excluded_plugins"]))
    if data["scan_error"]:
        out.append("Plugin scan error: " + data["scan_error"])
    out += ["", "Devices:"]
    out += _table([[r["device_type"], f"{len(r['devices'])} device(s)", ", ".join(r["devices"])]
                   for r in _serving(data["backends"])])
    ops = data["ops"]
    out += ["", f"Op coverage ({ops['primitive']} primitive ops, {ops['composite']} composite ops):"]
    covered = [r for r in data["backends"] if r["coverage"] is not None]
    out += _table([[r["name"], _fraction(r["coverage"], "primitives_implemented", "primitives_total") + " primitives",
                    _fraction(r["coverage"], "composites_overridden", "composites") + " composites overridden"]
                   for r in covered])
    for r in covered:
        missing, base = r["coverage"]["missing"], r["coverage"]["extends"]
        if missing:
            out.append(f"  {r['name']} leaves {len(missing)} primitive(s) to {base}:" if base else
                       f"  {r['name']} lacks {len(missing)} primitive(s):")
            out += _wrap(missing)
    out += ["", "CPU fallbacks:" + ("" if data["fallbacks"] else " none")]
    out += _table([[f["op"], f["device_type"], f"{f['count']} call(s)"] for f in data["fallbacks"]])
    out += ["", "Config:"]
    if data["config_error"]:
        out.append("  error: " + data["config_error"])
    if data["config"]:
        out += _table([["key", "value", "source"]] + [[c["key"], _show(c["value"]), c["source"]]
                                                      for c in data["config"]])
    out += ["", "Optional extras (core[NAME]; commands run in a checkout of core):"]
    out += _table([[e["name"], "installed" if e["installed"] else "not installed",
                    e["purpose"] if e["installed"] else f"{e['install']}  ({e['purpose']})"] for e in data["extras"]])
    return "\n".join(out) + "\n"


def _serving(rows: list) -> list:
    """One loaded row per device type: the selected backend's (an extended base is loaded too, but serves nothing)."""
    serving: dict = {}
    for r in rows:
        if r["status"] == "loaded" and (r["selected"] or r["device_type"] not in serving):
            serving[r["device_type"]] = r
    return list(serving.values())


def _fraction(coverage: dict, part: str, whole: str) -> str:
    return f"{coverage[part]}/{coverage[whole]}"


def _show(value) -> str:
    if isinstance(value, (tuple, list)):
        return ",".join(value) or "-"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "-"
    return str(value).lower() if isinstance(value, bool) else str(value)


def report() -> str:
    """The text of ``python -m core info``."""
    return render(collect())

