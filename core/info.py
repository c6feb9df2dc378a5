"""The ``python -m core info`` report: versions, backends, devices, op coverage, fallbacks, config.

:func:`collect` gathers the report as plain data (what tests check and
``--json`` prints); :func:`render` lays it out as aligned text, the first thing
a bug report pastes. Gathering never raises: whatever fails is reported.
"""

from __future__ import annotations

import platform

__all__ = ["collect", "render", "report"]


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


def _coverage(device_type: str) -> dict:
    from .dispatch import OPERATORS, backend_key

    key = backend_key(device_type)
    primitives = sorted(name for name, op in OPERATORS.items() if op.primitive)
    composites = [op for op in OPERATORS.values() if not op.primitive]
    missing = [name for name in primitives if not OPERATORS[name].has_kernel_for(key)]
    return {"primitives_implemented": len(primitives) - len(missing), "primitives_total": len(primitives),
            "missing": missing, "composites": len(composites),
            "composites_overridden": sum(1 for op in composites if key.bit in op.kernels)}


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


def _backends(manager) -> list:
    from .config import ConfigError
    from .plugins.manager import BackendUnavailableError

    rows = []
    selected, errors = {}, {}
    for device_type in dict.fromkeys(b.device_type for b in manager.backends.values()):
        try:
            selected[device_type] = manager.backend_for(device_type).name
        except BackendUnavailableError:
            pass  # the backends' own records say why
        except ConfigError:  # reported once, in the Config section
            errors[device_type] = "configuration error (see Config)"
        except Exception as exc:  # noqa: BLE001 - the report never raises
            errors[device_type] = f"{type(exc).__name__}: {exc}"
    for info in sorted(manager.backends.values(), key=lambda b: (b.device_type, -b.priority, b.name)):
        row = {"name": info.name, "device_type": info.device_type, "plugin": info.plugin,
               "version": info.version, "priority": info.priority, "install_hint": info.install_hint,
               "selected": selected.get(info.device_type) == info.name, "status": info.status,
               "reason": info.reason, "devices": [], "coverage": None}
        if info.status == "loaded":
            row["devices"] = _devices(info.instance)
            row["coverage"] = _coverage(info.device_type)
        elif info.device_type in errors:
            row["status"], row["reason"] = "not loaded", errors[info.device_type]
        elif info.status == "registered":
            row["status"], row["reason"] = _probe(info, selected.get(info.device_type))
        rows.append(row)
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
        "blocked_plugins": list(manager.blocked_plugins),
        "scan_error": scan_error,
        "backends": _backends(manager),
        "ops": {"primitive": sum(op.primitive for op in OPERATORS.values()),
                "composite": sum(not op.primitive for op in OPERATORS.values())},
        "fallbacks": [{"op": op, "device_type": dev, "count": n} for (op, dev), n in sorted(fallback_counts.items())],
        "config": config_rows,
        "config_error": config_error,
    }


# -- text -----------------------------------------------------------------------------------------------

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
                                         ["platform", v["platform"]]]), ""]
    out.append("Backends:")
    out += _table([["name", "device", "plugin", "version", "status"]] + [
        [r["name"], r["device_type"], r["plugin"], r["version"] or "-", _status(r)] for r in data["backends"]])
    out.append("")
    out.append("Plugins: " + (", ".join(data["plugins"]) or "none"))
    failed = data["failed_plugins"]
    out.append("Failed plugins:" + ("" if failed else " none"))
    out += _table([[name, reason] for name, reason in failed.items()])
    out.append("Blocked plugins: " + (", ".join(data["blocked_plugins"]) or "none"))
    if data["scan_error"]:
        out.append("Plugin scan error: " + data["scan_error"])
    out += ["", "Devices:"]
    out += _table([[r["device_type"], f"{len(r['devices'])} device(s)", ", ".join(r["devices"])]
                   for r in data["backends"] if r["status"] == "loaded"])
    ops = data["ops"]
    out += ["", f"Op coverage ({ops['primitive']} primitive ops, {ops['composite']} composite ops):"]
    covered = [r for r in data["backends"] if r["coverage"] is not None]
    out += _table([[r["name"], _fraction(r["coverage"], "primitives_implemented", "primitives_total") + " primitives",
                    _fraction(r["coverage"], "composites_overridden", "composites") + " composites overridden"]
                   for r in covered])
    for r in covered:
        missing = r["coverage"]["missing"]
        if missing:
            out.append(f"  {r['name']} lacks {len(missing)} primitive(s):")
            out += _wrap(missing)
    out += ["", "CPU fallbacks:" + ("" if data["fallbacks"] else " none")]
    out += _table([[f["op"], f["device_type"], f"{f['count']} call(s)"] for f in data["fallbacks"]])
    out += ["", "Config:"]
    if data["config_error"]:
        out.append("  error: " + data["config_error"])
    if data["config"]:
        out += _table([["key", "value", "source"]] + [[c["key"], _show(c["value"]), c["source"]]
                                                      for c in data["config"]])
    return "\n".join(out) + "\n"


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

