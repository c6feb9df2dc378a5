"""cuda's fused kernels for core.jit: the CUDA dialect of core's fused renderer, launched with ``cupy.RawKernel``.

A grid-stride loop over elements (or, with a closing reduction, over rows of
kept coordinates, each looping over its reduced block); layouts (coalesced
shapes and element strides) travel in small int64 device arrays cached per
layout. Kernels are rendered per exact rank and compiled by CuPy (NVRTC, with
CuPy's on-disk cache). NVRTC has no ``math.h`` constants, so inf and NaN are
spelled with ``__int_as_float``. A reduction to a few long rows is declined,
as on opencl.
"""

from __future__ import annotations

import numpy as np

from core.backends.api import TensorSpec, broadcast_strides, coalesce
from core.codegen import FusedKernel

from .codegen import MAX_RANK, CudaRenderer

__all__ = ["FusedCudaRenderer", "FusedLauncher", "FEW_ROWS", "LONG_ROW"]

_BLOCK = 256
_MAX_GRID = 65535
_LAYOUT_CACHE_SIZE = 1024
FEW_ROWS, LONG_ROW = 64, 32768


class FusedCudaRenderer(CudaRenderer):
    """CUDA C for fused kernels: constants NVRTC can compile without headers."""

    infinity = "__int_as_float(0x7f800000)"
    not_a_number = "__int_as_float(0x7fffffff)"


RENDERER = FusedCudaRenderer()


def _numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


class FusedLauncher:
    """Launches one FusedKernel on cuda tensors of runtime ``rt`` (any strides, broadcast inputs)."""

    def __init__(self, kernel: FusedKernel, rt):
        import core

        self.kernel = kernel
        self.rt = rt
        self.shape = kernel.shape
        self.n = _numel(kernel.shape)
        self.outputs = [(shape, getattr(core, d)) for shape, d in kernel.output_types()]
        self.split = len(kernel.shape) - kernel.reduction.dims if kernel.reduction else None
        self._kernels: dict = {}  # ranks -> cupy.RawKernel
        self._layouts: dict = {}

    def _kernel(self, ranks: tuple):
        kernel = self._kernels.get(ranks)
        if kernel is None:
            name, source = RENDERER.render_fused(self.kernel, *ranks)
            kernel = self._kernels[ranks] = self.rt.cupy.RawKernel(source, name)
        return kernel

    def _layout(self, parts: list) -> list:
        """Device int64 arrays: each part's shape, then each input's strides per part (input-major)."""
        cupy = self.rt.cupy
        key = (cupy.cuda.runtime.getDevice(), tuple((shape, tuple(strides)) for shape, strides in parts))
        arrays = self._layouts.get(key)
        if arrays is None:
            if len(self._layouts) >= _LAYOUT_CACHE_SIZE:
                self._layouts.clear()
            rows = [list(shape) for shape, _ in parts]
            rows += [list(p[1][k]) for k in range(len(self.kernel.inputs)) for p in parts]
            arrays = self._layouts[key] = [cupy.asarray(np.array(r or [0], np.int64)) for r in rows]
        return arrays

    def __call__(self, inputs):
        rt = self.rt
        arrays = [rt.array(x) for x in inputs]  # views: the offset is in the data pointer
        strides = [broadcast_strides(a.shape, tuple(s // a.itemsize for s in a.strides), self.shape) for a in arrays]
        if self.split is None:
            parts = [coalesce(self.shape, strides)]
        else:
            parts = [coalesce(self.shape[:self.split], [s[:self.split] for s in strides]),
                     coalesce(self.shape[self.split:], [s[self.split:] for s in strides])]
            if _numel(parts[0][0]) < FEW_ROWS and _numel(parts[1][0]) >= LONG_ROW:
                return None
        ranks = tuple(len(shape) for shape, _ in parts)
        if max(ranks) > MAX_RANK or (self.n == 0 and self.split is not None):
            return None  # high ranks and empty sums: the unfused ops handle them
        dev = inputs[0].device
        with rt.scope(dev):
            outs = [rt.wrap(rt.cupy.empty(shape, dtype.numpy), TensorSpec(shape, dtype, dev))
                    for shape, dtype in self.outputs]
            if self.n == 0:
                return outs
            layout = self._layout(parts)
            sizes = [_numel(shape) for shape, _ in parts]
            args = [np.int64(s) for s in sizes] + layout[:len(parts)] + [rt.array(o) for o in outs]
            for k, a in enumerate(arrays):
                args += [a] + layout[len(parts) * (k + 1):len(parts) * (k + 2)] + [np.int64(0)]
            grid = min((sizes[0] + _BLOCK - 1) // _BLOCK, _MAX_GRID)
            self._kernel(ranks)((grid,), (_BLOCK,), tuple(args))
        return outs
