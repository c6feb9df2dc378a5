"""The ``webgpu`` backend for core: wgpu-py buffers and WGSL compute shaders (Metal, Vulkan, D3D12; llvmpipe without
a GPU). Import-light: the hooks are in ``plugin.py``, wgpu is imported on the device's first use."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("core-webgpu")
except PackageNotFoundError:  # a source tree that is not installed
    __version__ = "unknown"
