"""batched_matmul: a tiled local-memory GEMM over strided operands (batch dims coalesced into one)."""

from __future__ import annotations

import numpy as np

from core.backends.api import coalesce

from ..programs import get_kernel
from ..renderer import GEMM_TILE
from ._common import RENDERER, computed_as, new_tensor, numel, slot_of
from .elementwise import run_elementwise

__all__ = ["kernels", "batched_matmul"]

_GEMM_DTYPES = ("float32", "float64", "int32", "int64", "float16", "bfloat16")  # half: float tiles and sums


def _contiguous(t):
    return run_elementwise("copy", "a", new_tensor(t._shape, t.dtype, t.device), [t], computed_as(t.dtype))


def batched_matmul(spec, a, b):
    dtype = spec.dtype.name
    if dtype not in _GEMM_DTYPES:
        return NotImplemented
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    n, k, m = a._shape[-2], a._shape[-1], b._shape[-1]
    if numel(spec.shape) == 0:
        return out
    if k == 0:
        return run_elementwise("fill", "a", out, [0], computed_as(spec.dtype))
    batch = a._shape[:-2]
    shape, (a_sb, b_sb) = coalesce(batch, [a._stride[:-2], b._stride[:-2]])
    if len(shape) > 1:  # batch dims that do not fold into one stride: make both operands contiguous
        a, b = _contiguous(a), _contiguous(b)
        a_sb, b_sb = (n * k,), (k * m,)
    slot = slot_of(a)
    kernel = get_kernel(slot, ("gemm", dtype), "gemm", lambda: {"gemm": RENDERER.render_gemm(dtype)})
    i64 = np.int64
    args = [i64(n), i64(m), i64(k),
            a._storage.data, i64(a._offset), i64(a_sb[0] if a_sb else 0), i64(a._stride[-2]), i64(a._stride[-1]),
            b._storage.data, i64(b._offset), i64(b_sb[0] if b_sb else 0), i64(b._stride[-2]), i64(b._stride[-1]),
            out._storage.data]
    tile = GEMM_TILE
    size = (-(-m // tile) * tile, -(-n // tile) * tile, max(numel(batch), 1))
    slot.launch(kernel, size, (tile, tile, 1), args)
    return out


def kernels(runtime) -> dict:
    """The linalg family: op name -> kernel."""
    return {"batched_matmul": batched_matmul}
