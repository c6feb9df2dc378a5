"""Registers the NumPy reference backend through the same hooks as any plugin."""

from __future__ import annotations

from ...plugins.hookspecs import hookimpl

CORE_PLUGIN_API = (1, 0)


@hookimpl
def register_backends(register):
    register(name="numpy", device_type="cpu", runtime="core.backends.numpy.runtime:RUNTIME", priority=0,
             install_hint="built into core", version="builtin")


@hookimpl
def register_kernels(register, backend):
    from . import kernels, runtime

    runtime._KEY[0] = backend.key.mask
    for name, fn in kernels.all_kernels().items():
        register(name, fn)
