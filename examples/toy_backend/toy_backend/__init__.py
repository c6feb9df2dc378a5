"""A toy backend for core: the device type ``toy``, memory in host RAM, a few kernels in NumPy.

core finds this module through the ``core.backends`` entry point in pyproject.toml
and calls the hooks below; every op without a kernel here runs on the CPU fallback.
"""

from core.backends.api import hookimpl

CORE_PLUGIN_API = (1, 0)  # the plugin API this package was written for
__version__ = "0.1.0"

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
    from .kernels import KERNELS

    for op, kernel in KERNELS.items():
        if op not in DISABLED_KERNELS:
            register(op, kernel)
