"""NumPy kernels of the linalg family: the one product primitive, ``batched_matmul``."""

from __future__ import annotations

import numpy as np

from ._common import compute_np, operand, wrap

_INT64 = np.dtype(np.int64)


def batched_matmul(spec, a, b):
    cd = compute_np(spec.dtype)
    if cd.kind in "iu":
        # accumulating in int64 and casting back wraps exactly like an integer GEMM in the narrow type
        cd = _INT64
    return wrap(np.matmul(operand(a, cd), operand(b, cd)), spec.dtype)


KERNELS = {"batched_matmul": batched_matmul}
