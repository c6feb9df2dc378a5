"""The CUDA C dialect of core's C-style renderer, and the list of every kernel source the backend can launch.

``float16`` is stored as ``half_t``, a 2-byte struct converting to and from ``float`` with the PTX ``cvt``
instructions, so the sources need no ``cuda_fp16.h`` (the NVRTC wheel ships no headers); half kernels compute
in float32, as PyTorch's do.
"""

from __future__ import annotations

from core.codegen import BINARY_EXPRESSIONS, UNARY_EXPRESSIONS, CStyleRenderer, ElementwiseKernel

__all__ = ["CudaRenderer", "FLOAT_DTYPES", "MAX_RANK", "raw_ops", "out_dtype_of", "render", "all_kernel_sources"]

HALF_PREAMBLE = """struct half_t {
    unsigned short bits;
    __device__ half_t() {}
    __device__ half_t(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f)); }
    __device__ operator float() const { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits)); return f; }
};"""

FLOAT_DTYPES = ("float16", "float32", "float64")
MAX_RANK = 4  # layouts of higher rank after coalescing (rare) use CuPy's own ufuncs
_RAW_UNARY = tuple(UNARY_EXPRESSIONS)
_BOOL_RESULT = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
_NOT_FLOAT = {"bitwise_and", "bitwise_or", "bitwise_xor"}


class CudaRenderer(CStyleRenderer):
    """CUDA C: ``extern "C" __global__`` kernels, a grid-stride loop over a ``long long`` element index."""

    dialect = "cuda"
    kernel_prefix = 'extern "C" __global__ '
    float_suffix_functions = True  # expf / exp: no reliance on C++ overloads in device code
    types = {**CStyleRenderer.types, "float16": "half_t"}

    def preamble(self) -> str:
        return HALF_PREAMBLE

    def loop_open(self) -> list:
        idx = self.index_type
        return [f"for ({idx} i = ({idx})blockIdx.x * blockDim.x + threadIdx.x; i < n; "
                f"i += ({idx})blockDim.x * gridDim.x) {{"]

    def loop_close(self) -> list:
        return ["}"]

    def supports(self, op: str, dtype: str) -> bool:
        return super().supports(op, "float32" if dtype == "float16" else dtype)


def compute_dtype_of(dtype: str) -> str:
    """The C type name a kernel computes ``dtype`` in (half in float)."""
    return "float32" if dtype == "float16" else dtype


def raw_ops() -> dict:
    """op -> arity of every elementwise op launched as a rendered kernel (float dtypes)."""
    ops = {op: 1 for op in _RAW_UNARY}
    ops.update({op: 2 for op in BINARY_EXPRESSIONS if op not in _NOT_FLOAT})
    return ops


def out_dtype_of(op: str, dtype: str) -> str:
    """The result dtype of ``op`` on float inputs of ``dtype``."""
    return "bool" if op in _BOOL_RESULT else dtype


def render(renderer: CudaRenderer, op: str, dtype: str, arity: int, ndim: int) -> ElementwiseKernel:
    """The kernel of ``op`` over ``arity`` inputs of float ``dtype`` and rank ``ndim`` (what the backend launches)."""
    return renderer.render_elementwise(op, (dtype,) * arity, out_dtype_of(op, dtype), ndim,
                                       compute_dtype=compute_dtype_of(dtype))


def all_kernel_sources(ranks=range(MAX_RANK + 1)) -> list[ElementwiseKernel]:
    """Every CUDA C source the backend may compile: each rendered op x float dtype x rank."""
    renderer = CudaRenderer()
    return [render(renderer, op, dtype, arity, ndim) for op, arity in raw_ops().items() for dtype in FLOAT_DTYPES
            for ndim in ranks]
