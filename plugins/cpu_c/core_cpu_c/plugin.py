"""cpu_c's hooks: registers the backend (cheap) and, on first use, its compiled kernels over the NumPy reference."""

from __future__ import annotations

import os

from core.backends.api import get_operator, hookimpl

CORE_PLUGIN_API = (1, 2)
DEFAULT_MIN_NUMEL = 4096
_SETTINGS = {"min_numel": DEFAULT_MIN_NUMEL}


def _probe() -> tuple:
    from .lib import probe

    return probe()


@hookimpl
def register_backends(register):
    register(name="cpu_c", device_type="cpu", runtime="core_cpu_c.runtime:RUNTIME", priority=10, probe=_probe,
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
    if backend.name != "cpu_c":
        return
    import core

    from . import kernels as elementwise
    from . import movement, reduce
    from .lib import load
    from .renderer import KERNEL_OPS

    ffi, lib = load()
    key = backend.key
    # The NumPy reference's kernels are registered under the same key first (extends="numpy"): each compiled
    # kernel keeps the one it replaces for what C does not cover.
    names = ("batched_matmul", *KERNEL_OPS, *reduce.REDUCE_OPS, *movement.MOVEMENT_OPS)
    base = {name: fn for name in names if (fn := get_operator(name).kernels.get(key.bit)) is not None}
    min_numel = _SETTINGS["min_numel"]
    kernels = elementwise.build_kernels(ffi, lib, key.mask, core.bool, base, min_numel)
    # Families whose kernels the dispatcher itself keeps from tiny calls (the NumPy kernel runs, no extra frame)
    families = [(elementwise.sized_thresholds, dict(kernels))]  # a copy: `kernels` collects every family below
    for module, build in ((reduce, reduce.build_reduce_kernels), (movement, movement.build_movement_kernels)):
        built = build(elementwise.CONTEXT, base)
        families.append((module.sized_thresholds, built))
        kernels.update(built)
    sized = {}
    for thresholds, built in families:
        sized.update(thresholds(built, min_numel))
    _SETTINGS["sized"] = (key, [(thresholds, list(built)) for thresholds, built in families])
    from .optim import build_optim_kernels

    kernels.update(build_optim_kernels(ffi, lib, {name: get_operator(name).decomposition
                                                  for name in ("sgd_update_", "adam_update_")}))
    from .conv import CONV_OPS, build_conv_kernels

    kernels.update(build_conv_kernels(ffi, lib, key.mask, {
        name: get_operator(name).kernels.get(key.bit) or get_operator(name).decomposition for name in CONV_OPS}))
    from .norm import NORM_OPS, build_norm_kernels

    kernels.update(build_norm_kernels(ffi, lib, key.mask, {name: get_operator(name).decomposition
                                                           for name in NORM_OPS}))
    from .loss import LOSS_OPS, build_loss_kernels

    kernels.update(build_loss_kernels(ffi, lib, key.mask, {name: get_operator(name).decomposition
                                                           for name in LOSS_OPS}))
    for name, fn in kernels.items():
        register(name, fn, min_numel=sized.get(name))


def set_min_numel(n: int) -> int:
    """Send calls under ``n`` elements to the NumPy kernels from now on; returns the previous threshold."""
    from . import kernels

    if not isinstance(n, int) or n < 0:
        raise ValueError(f"cpu_c: min_numel must be a non-negative integer, got {n!r}")
    previous = _SETTINGS["min_numel"]
    _SETTINGS["min_numel"] = n
    if kernels.CONTEXT is not None:  # the kernels are registered: move their thresholds too
        kernels.CONTEXT.min_numel = n
        key, families = _SETTINGS["sized"]
        for thresholds, ops in families:
            for name, threshold in thresholds(dict.fromkeys(ops), n).items():
                get_operator(name).set_min_numel(key, threshold)
    return previous
