"""Products (core.ops.linalg): ``batched_matmul`` (so matmul, mm, bmm, addmm, linear): float32 through oneDNN's
``dnnl_sgemm`` where oneDNN is loaded (csrc/onednn.c: it runs on the same OpenMP threads as cpu_c's kernels, where
OpenBLAS's own thread pool would hand the cores back and forth with them), else and for float64 OpenBLAS's
``sgemm``/``dgemm``; the batch loop in C, transposed or sliced operands passed as BLAS flags and leading dims.
float16/bfloat16 operands go to oneDNN's matmul first where it has an optimised kernel for the CPU (on an AVX-512
BF16 CPU, bfloat16: its dot-product instructions, as PyTorch's CPU autocast), else they are widened to float32 in
C, multiplied by ``sgemm`` and the product rounded once (csrc/blas.c). Both accumulate in float32 and round once
(PyTorch's CPU opmath); only the order of the additions differs."""

from __future__ import annotations

import math

import numpy as np
from core.backends.api import Kernel

from ..layout import check_bounds
from ..renderer import DTYPES, HALF
from ..runtime import array, new_tensor

__all__ = ["kernels", "min_numel", "gemm_path", "GEMM_CALLS", "ONEDNN_GEMMS"]

_INT_MAX = 2**31 - 1
_DNNL_DTYPES = {"bfloat16": 1, "float16": 2}  # ccc_dnnl_gemm.dtype
GEMM_CALLS = {"onednn": 0}  # float32 GEMMs oneDNN's sgemm ran (tests read it)
ONEDNN_GEMMS = {"calls": 0}  # half products oneDNN's matmul ran (tests read them)


def onednn():
    """(ffi, lib) of cpu_c's oneDNN module, or None (tests patch it to force the sgemm path)."""
    from ..lib import load_onednn

    return load_onednn()


def gemm_path() -> str:
    """Which library serves float32 GEMM on cpu_c (``core info``): oneDNN's sgemm, or OpenBLAS and why."""
    from ..lib import onednn_status

    return f"{onednn_status()} sgemm" if onednn() else f"OpenBLAS; {onednn_status()}"


def min_numel(ctx) -> int:
    """The dispatcher's threshold, in output elements: a 64th of ``ctx.min_numel`` (the kernel itself also sends
    calls under ``ctx.min_numel`` output elements x k to NumPy)."""
    return ctx.min_numel // 64


def _blas_layout(rows: int, cols: int, s0: int, s1: int):
    """(transposed, leading dim) under which BLAS reads a rows x cols matrix with strides (s0, s1); None if none."""
    if s1 == 1 or cols == 1:
        ld = s0 if rows > 1 else max(cols, 1)
        if max(1, cols) <= ld <= _INT_MAX:
            return 0, ld
    if s0 == 1 or rows == 1:
        ld = s1 if cols > 1 else max(rows, 1)
        if max(1, rows) <= ld <= _INT_MAX:
            return 1, ld
    return None


def _batch_offsets(offset: int, batch_shape: tuple, batch_strides: tuple) -> np.ndarray:
    offsets = np.array([offset], np.int64)
    for size, stride in zip(batch_shape, batch_strides):
        offsets = (offsets[:, None] + np.arange(size, dtype=np.int64) * stride).ravel()
    return offsets


def _matmul(ctx, base):
    gemm = {d: getattr(ctx.lib, f"ccc_gemm_{d}") for d in DTYPES + HALF}

    def matrix(t, rows: int, cols: int):
        """(buffer, batch offsets, transposed, ld) of BLAS-readable operand ``t``; copies only odd layouts."""
        check_bounds("batched_matmul", t)
        *_, s0, s1 = t._stride
        layout = _blas_layout(rows, cols, s0, s1) if min(t._stride) >= 0 else None
        if layout is None:  # e.g. stride 0 inside a matrix (expand): BLAS needs a real leading dim
            dense = np.ascontiguousarray(array(t))
            batch = dense.shape[:-2]
            strides = tuple(s // dense.itemsize for s in dense.strides[:-2])
            return dense, _batch_offsets(0, batch, strides), 0, max(cols, 1)
        return t._storage.data, _batch_offsets(t._offset, t._shape[:-2], t._stride[:-2]), layout[0], layout[1]

    def kernel(spec, a, b):
        d = spec.dtype
        fn = gemm.get(d.name)
        if fn is None or a.dtype != d or b.dtype != d:
            return base(spec, a, b)
        n, k = a._shape[-2:]
        m = b._shape[-1]
        shape = spec.shape
        if max(n, m, k) > _INT_MAX or math.prod(shape) * k < ctx.min_numel:
            return base(spec, a, b)
        out, buf = new_tensor(shape, d, math.prod(shape) * d.itemsize, ctx.key)
        if n == 0 or m == 0:
            return out
        if k == 0:
            buf[:] = 0
            return out
        a_buf, a_offs, ta, lda = matrix(a, n, k)
        b_buf, b_offs, tb, ldb = matrix(b, k, m)
        batch = len(a_offs)
        dnnl = onednn()

        def run(fn, fb):
            return fn(batch, n, m, k, fb(a_buf), fb("long long[]", a_offs), ta, lda, fb(b_buf),
                      fb("long long[]", b_offs), tb, ldb, fb(buf), 0)

        if d.name == "float32" and dnnl is not None:
            if not run(dnnl[1].ccc_dnnl_gemm_float32, dnnl[0].from_buffer):
                GEMM_CALLS["onednn"] += 1
                return out  # else oneDNN declined: OpenBLAS writes every batch again
        fb = ctx.from_buffer
        if d.name in _DNNL_DTYPES and dnnl is not None:
            problem = dnnl[0].new("ccc_dnnl_gemm*", {"n": n, "m": m, "k": k, "ta": ta, "lda": lda, "tb": tb,
                                                     "ldb": ldb, "dtype": _DNNL_DTYPES[d.name]})
            if not dnnl[1].ccc_dnnl_gemm_half(problem, batch, fb(a_buf), fb("long long[]", a_offs), fb(b_buf),
                                              fb("long long[]", b_offs), fb(buf)):
                ONEDNN_GEMMS["calls"] += 1
                return out
        status = run(fn, fb)
        if status:  # a half GEMM's float32 scratch
            raise MemoryError(f"batched_matmul: cannot allocate the float32 copies of {d.name} operands "
                              f"({n}x{k} and {k}x{m})")
        return out

    return kernel


def kernels(ctx) -> dict:
    """{"batched_matmul": Kernel} over the reference kernel it extends."""
    base = ctx.reference("batched_matmul")
    return {} if base is None else {"batched_matmul": Kernel(_matmul(ctx, base), min_numel=min_numel(ctx))}
