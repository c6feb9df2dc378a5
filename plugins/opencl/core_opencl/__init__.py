"""The ``opencl`` backend for core: PyOpenCL buffers and generated OpenCL C kernels (runs on PoCL without a GPU).

This module is the entry point and stays import-light: pyopencl is imported on the device's first use.
"""

from __future__ import annotations

from core.backends.api import hookimpl

CORE_PLUGIN_API = (1, 0)
INSTALL_HINT = ("install an OpenCL runtime: `pip install \"pyopencl[pocl]\"` (PoCL, a CPU OpenCL), Debian's newer "
                "PoCL (`apt install pocl-opencl-icd`, for CPUs too new for pip's), or your GPU vendor's ICD")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("core-opencl")
    except PackageNotFoundError:
        return "unknown"


@hookimpl
def register_backends(register):
    register(name="opencl", device_type="opencl", runtime="core_opencl.runtime:RUNTIME", priority=0,
             install_hint=INSTALL_HINT, version=_version())


@hookimpl
def configure(config):
    from .runtime import RUNTIME

    RUNTIME.configure(config.get("plugin").get("opencl", {}))


@hookimpl
def register_kernels(register, backend):
    from .kernels import all_kernels

    for name, fn in all_kernels().items():
        register(name, fn)
