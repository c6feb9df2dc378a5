"""Reference kernel of the linalg family: the one product primitive, ``batched_matmul``."""

from __future__ import annotations

import numpy as np

from . import compute_np, operands

_INT64 = np.dtype(np.int64)


def kernels(ctx) -> dict:
    """batched_matmul over ``ctx`` (float16 natively where ``ctx.native_half_matmul``, else in float32)."""
    xp, wrap, native_half = ctx.xp, ctx.wrap, ctx.native_half_matmul
    operand = operands(ctx)

    def batched_matmul(spec, a, b):
        cd = spec.dtype.numpy if native_half and spec.dtype.name == "float16" else compute_np(spec.dtype)
        if cd.kind in "iu":
            cd = _INT64  # accumulating in int64 and casting back wraps exactly like an integer GEMM
        return wrap(xp.matmul(operand(a, cd), operand(b, cd)), spec)

    return {"batched_matmul": batched_matmul}
