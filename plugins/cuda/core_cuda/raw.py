"""Launching the CUDA dialect's rendered elementwise kernels through ``cupy.RawKernel``.

One compiled kernel serves every shape and layout of an (op, dtype, rank): the layout (coalesced shape and
per-operand element strides) travels in one small int64 device array, cached per layout and device.
"""

from __future__ import annotations

import numpy as np

from core.backends.api import broadcast_strides, coalesce

from .codegen import MAX_RANK, CudaRenderer, render

__all__ = ["RawElementwise", "plan"]

_BLOCK = 256
_MAX_GRID = 65535  # the loop is grid-stride: more blocks than this only add scheduling work
_LAYOUT_CACHE_SIZE = 4096


def plan(out, inputs: list):
    """The launch layout of ``out[...] = f(*inputs)``: ``(shape, [element strides of out, then each input])``
    after broadcasting and coalescing, or None when its rank is beyond :data:`MAX_RANK`."""
    all_strides = [tuple(s // out.itemsize for s in out.strides)]
    for a in inputs:
        all_strides.append(broadcast_strides(a.shape, tuple(s // a.itemsize for s in a.strides), out.shape))
    shape, strides = coalesce(tuple(out.shape), all_strides)
    return None if len(shape) > MAX_RANK else (shape, strides)


class RawElementwise:
    """Compiles (on first use, through CuPy's NVRTC cache) and launches rendered elementwise kernels."""

    def __init__(self, cupy):
        self.cupy = cupy
        self.renderer = CudaRenderer()
        self._kernels: dict = {}
        self._layouts: dict = {}

    def _kernel(self, op: str, dtype: str, arity: int, ndim: int):
        key = (op, dtype, arity, ndim)
        kernel = self._kernels.get(key)
        if kernel is None:
            rendered = render(self.renderer, op, dtype, arity, ndim)
            kernel = self._kernels[key] = self.cupy.RawKernel(rendered.source, rendered.name)
        return kernel

    def _layout(self, shape: tuple, strides: list) -> tuple:
        key = (self.cupy.cuda.runtime.getDevice(), shape, tuple(strides))
        arrays = self._layouts.get(key)
        if arrays is None:
            if len(self._layouts) >= _LAYOUT_CACHE_SIZE:
                self._layouts.clear()
            ndim = len(shape)
            flat = list(shape) + [s for per_operand in strides for s in per_operand]
            meta = self.cupy.asarray(np.array(flat or [0], np.int64))
            if ndim == 0:  # rank 0 reads no shape or strides; any valid pointer will do
                arrays = (meta,) * (1 + len(strides))
            else:
                arrays = tuple(meta[k * ndim:(k + 1) * ndim] for k in range(1 + len(strides)))
            self._layouts[key] = arrays
        return arrays

    def launch(self, op: str, dtype: str, out, inputs: list) -> bool:
        """``out[...] = op(*inputs)`` (inputs of dtype ``dtype``, broadcast to ``out``); False if the layout's rank
        is beyond :data:`MAX_RANK` (the caller then uses CuPy's ufuncs)."""
        n = out.size
        if n == 0:
            return True
        layout = plan(out, inputs)
        if layout is None:
            return False
        shape, strides = layout
        kernel = self._kernel(op, dtype, len(inputs), len(shape))
        layout = self._layout(shape, strides)
        zero = np.int64(0)  # views carry their offset in their data pointer
        args = [np.int64(n), layout[0], out, layout[1], zero]
        for a, a_strides in zip(inputs, layout[2:]):
            args += [a, a_strides, zero]
        kernel((min((n + _BLOCK - 1) // _BLOCK, _MAX_GRID),), (_BLOCK,), tuple(args))
        return True
