"""The cuda backend's hooks: the entry point ``cuda = "core_cuda.plugin"`` of the ``core.backends`` group (the
``cuda`` device and the ``nccl`` process-group backend)."""

from __future__ import annotations

from core.backends.api import hookimpl, register_all

from . import __version__
from .nccl import INSTALL_HINT as NCCL_INSTALL_HINT
from .nccl import probe as nccl_probe
from .runtime import probe

CORE_PLUGIN_API = (1, 4)

INSTALL_HINT = ("needs an NVIDIA GPU and driver; the extra core[cuda] with this plugin (from a checkout: "
                "pip install -e '.[cuda]' -e plugins/cuda; cupy-cuda13x is for CUDA 13 drivers, use cupy-cuda12x on "
                "CUDA 12, see docs/backends/cuda.md)")


@hookimpl
def register_backends(register):
    register(name="cuda", device_type="cuda", runtime="core_cuda.runtime:CudaRuntime", priority=0, probe=probe,
             install_hint=INSTALL_HINT, version=__version__)


@hookimpl
def register_kernels(register, backend):
    from .kernels import all_kernels

    register_all(register, all_kernels(backend))


@hookimpl
def register_process_group_backends(register):
    register(name="nccl", runtime="core_cuda.nccl:ProcessGroupNCCL", devices=("cuda",), probe=nccl_probe,
             install_hint=NCCL_INSTALL_HINT, version=__version__)
