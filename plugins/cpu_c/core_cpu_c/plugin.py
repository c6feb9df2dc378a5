"""cpu_c's hooks: registers the backend (cheap) and, on first use, its compiled kernels over the NumPy reference."""

from __future__ import annotations

import os

from core.backends.api import get_operator, hookimpl, register_all

from .lib import probe

CORE_PLUGIN_API = (1, 4)
DEFAULT_MIN_NUMEL = 4096
_SETTINGS = {"min_numel": DEFAULT_MIN_NUMEL}
_STATE: dict = {}  # "context": the Context the registered kernels share, "key": their dispatch key


@hookimpl
def register_backends(register):
    register(name="cpu_c", device_type="cpu", runtime="core_cpu_c.runtime:RUNTIME", priority=10, probe=probe,
             extends="numpy", version="0.1.0",
             install_hint="pip install plugins/cpu_c (needs a C compiler, cffi and scipy-openblas32)")


@hookimpl
def configure(config):
    """``[tool.core.plugin.cpu_c] min_numel = N`` or CORE_CPU_C_MIN_NUMEL: below N elements NumPy's kernels run."""
    value = os.environ.get("CORE_CPU_C_MIN_NUMEL", config.get("plugin").get("cpu_c", {}).get("min_numel"))
    if value is not None:
        try:
            n = int(value)
        except ValueError:
            n = -1
        if n < 0:
            raise ValueError(f"cpu_c: min_numel must be a non-negative integer, got {value!r}")
        _SETTINGS["min_numel"] = n


@hookimpl
def register_kernels(register, backend):
    if backend.name == "cpu_c":  # the NumPy reference's kernels are registered under this key first (extends)
        from .kernels import all_kernels

        register_all(register, all_kernels(_context(backend.key)))


def _context(key):
    """The one Context of cpu_c's kernels (made on first use, when the extension loads)."""
    from .context import Context
    from .lib import load

    ffi, lib = load()
    _STATE.update(context=Context(ffi, lib, key, _SETTINGS["min_numel"]), key=key)
    return _STATE["context"]


def set_min_numel(n: int) -> int:
    """Send calls under ``n`` elements to the NumPy kernels from now on; returns the previous threshold."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"cpu_c: min_numel must be a non-negative integer, got {n!r}")
    previous = _SETTINGS["min_numel"]
    _SETTINGS["min_numel"] = n
    ctx = _STATE.get("context")
    if ctx is not None:  # the kernels are registered: move the thresholds they check and the dispatcher's
        from .kernels import thresholds

        ctx.min_numel = n
        for name, threshold in thresholds(ctx).items():
            get_operator(name).set_min_numel(_STATE["key"], threshold)
    return previous
