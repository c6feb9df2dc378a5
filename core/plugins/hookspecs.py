"""The plugin contract: every hook a backend package may implement.

Plugins are found through the ``core.backends`` entry-point group; each entry
point names a module (or object) holding ``@hookimpl`` functions. Hooks take a
``register`` callback (the llm/datasette style) so the contract can grow
without breaking old plugins. Keep hooks off the per-op hot path: they run at
discovery and on a backend's first use only. Every hook here is documented in
``docs/hooks.md`` (a test checks).
"""

from __future__ import annotations

import pluggy

PROJECT = "core"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

#: Version of this contract; a plugin may declare ``CORE_PLUGIN_API = (major, minor)``
#: and is refused (with a clear error) when its major version differs.
PLUGIN_API_VERSION = (1, 4)  # 1.4: process-group backends (core.distributed); 1.3: the kit in core.backends.api


@hookspec(historic=True)
def register_backends(register):
    """Describe backends cheaply: ``register(name=, device_type=, runtime="mod:attr", priority=, probe=, ...)``."""


@hookspec(historic=True)
def register_process_group_backends(register):
    """Describe core.distributed backends: ``register(name=, runtime="mod:ProcessGroupClass", devices=, probe=)``."""


@hookspec
def register_kernels(register, backend):
    """Register kernels for ``backend`` (called on its first use):
    ``register(op, fn, dtypes=None, override=False, min_numel=None)``."""


@hookspec
def register_passes(register):
    """Add core.jit graph passes (called once, on the first optimisation): ``register(name, fn, before="fusion")``."""


@hookspec
def configure(config):
    """Read plugin settings (``config.get("plugin").get(NAME, {})``) before the plugin's kernels are registered."""
