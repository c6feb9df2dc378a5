"""The ``cuda`` device for core, through CuPy: cuBLAS GEMM, NVRTC-compiled elementwise kernels, CuPy's memory pool.

The hooks are in ``core_cuda.plugin`` (the entry point's target). Importing it is cheap (core's plugin scan
does it): CuPy is imported by the availability probe and the runtime, on first use of the device. Without
CuPy, a driver or a GPU the backend reports itself unavailable with the reason; it never breaks ``import core``.
"""

__version__ = "0.1.0"
