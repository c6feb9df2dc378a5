"""Registers the NumPy reference backend through the same hooks as any plugin."""

from __future__ import annotations

from ...plugins.hookspecs import hookimpl
from ..kit import register_all

CORE_PLUGIN_API = (1, 4)


@hookimpl
def register_backends(register):
    register(name="numpy", device_type="cpu", runtime="core.backends.numpy.runtime:RUNTIME", priority=0,
             install_hint="built into core", version="builtin")


@hookimpl
def register_kernels(register, backend):
    from . import runtime
    from .kernels import all_kernels

    runtime._KEY[0] = backend.key.mask  # the dispatch key of the tensors wrap() makes
    register_all(register, all_kernels(runtime.CONTEXT))
