"""The toy backend's hooks: the target of the ``core.backends`` entry point in pyproject.toml."""

from core.backends.api import hookimpl, register_all

from . import __version__

CORE_PLUGIN_API = (1, 4)  # the plugin API this package was written for

DISABLED_KERNELS = set()  # [tool.core.plugin.toy] disable = ["exp"] sends those ops to the CPU fallback


@hookimpl
def register_backends(register):
    register(name="toy", device_type="toy", runtime="toy_backend.runtime:ToyRuntime",
             install_hint="pip install -e examples/toy_backend", version=__version__)


@hookimpl
def configure(config):
    DISABLED_KERNELS.clear()
    DISABLED_KERNELS.update(config.get("plugin").get("toy", {}).get("disable", ()))


@hookimpl
def register_kernels(register, backend):
    from .kernels import all_kernels

    register_all(register, {op: k for op, k in all_kernels(backend).items() if op not in DISABLED_KERNELS})
