"""The ``cuda`` device for core, through CuPy: cuBLAS GEMM, NVRTC-compiled elementwise kernels, CuPy's memory pool.

Importing this module is cheap (core's plugin scan does it): CuPy is imported by the availability probe and
the runtime, on first use of the device. Without CuPy, a driver or a GPU the backend reports itself
unavailable with the reason; it never breaks ``import core``.
"""

from __future__ import annotations

from core.backends.api import hookimpl

CORE_PLUGIN_API = (1, 0)
__version__ = "0.1.0"

INSTALL_HINT = ("needs an NVIDIA GPU and driver; the extra core[cuda] with this plugin (from a checkout: "
                "pip install -e '.[cuda]' -e plugins/cuda; cupy-cuda13x is for CUDA 13 drivers, use cupy-cuda12x on "
                "CUDA 12, see docs/backends/cuda.md)")


def probe() -> tuple:
    """``(True, "")`` when CuPy imports and sees a CUDA device, else ``(False, reason)``; never raises."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CuPy build failing to load its libraries
        return False, f"CuPy not installed ({type(exc).__name__}: {exc})"
    try:
        if cupy.cuda.is_available():
            return True, ""
    except Exception as exc:  # is_available() is documented not to raise; a broken driver stack still might
        return False, f"no CUDA device ({type(exc).__name__}: {exc})"
    try:  # is_available() says only False; the runtime's error says why (no driver, old driver, no device)
        cupy.cuda.runtime.getDeviceCount()
        detail = "0 devices"
    except Exception as exc:
        detail = str(exc)
    return False, f"no CUDA device ({detail})"


@hookimpl
def register_backends(register):
    register(name="cuda", device_type="cuda", runtime="core_cuda.runtime:CudaRuntime", priority=0, probe=probe,
             install_hint=INSTALL_HINT, version=__version__)


@hookimpl
def register_kernels(register, backend):
    from .kernels import build_kernels

    for op, fn in build_kernels(backend).items():
        register(op, fn)
