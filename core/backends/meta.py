"""The ``meta`` device: tensors with shapes and dtypes but no data; ops run only their meta function."""

from __future__ import annotations

from ..plugins.hookspecs import hookimpl
from .api import Runtime

CORE_PLUGIN_API = (1, 0)


class MetaRuntime(Runtime):
    """Allocates nothing; every op on meta tensors runs its meta function only."""

    def normalize_device(self, dev):
        from ..device import device

        return device("meta")

    def allocate(self, nbytes, dev):
        return None

    def from_host(self, array, dev):
        return None

    def to_host(self, tensor):
        raise RuntimeError("Cannot copy out of meta tensor; no data!")


@hookimpl
def register_backends(register):
    register(name="meta", device_type="meta", runtime="core.backends.meta:MetaRuntime", priority=0,
             install_hint="built into core", version="builtin")


@hookimpl
def register_kernels(register, backend):
    """Nothing to register: the dispatcher runs meta functions for the Meta key by itself."""
