"""The toy device's matrix unit: batched_matmul, written by hand, for floating-point dtypes only."""

import numpy as np


def kernels(ctx):
    """batched_matmul over ``ctx``."""

    def batched_matmul(spec, a, b):
        if not spec.dtype.is_floating_point:
            return NotImplemented  # declined: the dispatcher runs this call on the CPU, counted
        dtype = np.float32 if spec.dtype.itemsize == 2 else spec.dtype.numpy  # half types compute in float32
        return ctx.wrap(np.matmul(ctx.array(a).astype(dtype), ctx.array(b).astype(dtype)), spec)

    return {"batched_matmul": batched_matmul}
