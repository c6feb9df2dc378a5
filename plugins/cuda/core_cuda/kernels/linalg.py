"""cuda kernel of the product primitive: batched_matmul through cuBLAS (``cupy.matmul``)."""

from __future__ import annotations

import numpy as np

from ._common import compute_np, operand

_INT64 = np.dtype(np.int64)


def kernels(rt) -> dict:
    xp = rt.xp
    # cuBLAS multiplies float16 with float32 accumulation itself (the contract); NumPy has no half GEMM
    native_half = xp is not np

    def batched_matmul(spec, a, b):
        cd = spec.dtype.numpy if native_half and spec.dtype.name == "float16" else compute_np(spec.dtype)
        if cd.kind in "iu":
            cd = _INT64  # accumulating in int64 and casting back wraps exactly like an integer GEMM
        return rt.wrap(xp.matmul(operand(rt, a, cd), operand(rt, b, cd)), spec)

    return {"batched_matmul": batched_matmul}
