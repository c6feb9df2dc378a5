"""The ``opencl`` backend's hooks: the ``core.backends`` entry point's target (kept import-light)."""

from __future__ import annotations

from core.backends.api import hookimpl, register_all

CORE_PLUGIN_API = (1, 4)
INSTALL_HINT = ("install an OpenCL runtime: `pip install \"pyopencl[pocl]\"` (PoCL, a CPU OpenCL), Debian's newer "
                "PoCL (`apt install pocl-opencl-icd`, for CPUs too new for pip's), or your GPU vendor's ICD")


@hookimpl
def register_backends(register):
    from . import __version__

    register(name="opencl", device_type="opencl", runtime="core_opencl.runtime:RUNTIME", priority=0,
             install_hint=INSTALL_HINT, version=__version__)


@hookimpl
def configure(config):
    from .runtime import RUNTIME

    RUNTIME.configure(config.get("plugin").get("opencl", {}))


@hookimpl
def register_kernels(register, backend):
    from .kernels import all_kernels
    from .runtime import RUNTIME

    register_all(register, all_kernels(RUNTIME))
