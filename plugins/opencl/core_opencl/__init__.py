"""The ``opencl`` backend for core: PyOpenCL buffers and generated OpenCL C kernels (runs on PoCL without a GPU).

Import-light: the hooks are in ``plugin.py`` (the entry point), pyopencl is imported on the device's first use.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("core-opencl")
except PackageNotFoundError:  # a source tree that is not installed
    __version__ = "unknown"
