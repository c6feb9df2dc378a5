"""The ``webgpu`` backend's hooks: the ``core.backends`` entry point's target (kept import-light)."""

from __future__ import annotations

from core.backends.api import hookimpl, register_all

CORE_PLUGIN_API = (1, 4)
INSTALL_HINT = ("install wgpu (`pip install wgpu`, or the core[webgpu] extra) and a driver it can use: Metal on "
                "macOS, D3D12 or Vulkan on Windows, Vulkan on Linux (without a GPU, Mesa's software Vulkan: "
                "`apt install mesa-vulkan-drivers`)")


@hookimpl
def register_backends(register):
    from . import __version__

    register(name="webgpu", device_type="webgpu", runtime="core_webgpu.runtime:RUNTIME", priority=0,
             install_hint=INSTALL_HINT, version=__version__)


@hookimpl
def register_kernels(register, backend):
    from .kernels import all_kernels
    from .runtime import RUNTIME

    register_all(register, all_kernels(RUNTIME))
