"""opencl's fused kernels for core.jit: the OpenCL dialect of core's fused renderer, built once per program key.

One work-item per element (or, with a closing reduction, per row of kept
coordinates looping over the reduced block), layouts passed as cached index
buffers and ranks padded to the same few buckets as the elementwise kernels.
A reduction to a few long rows is declined (the unfused ops run): one
work-item per row would serialise the whole chain.
"""

from __future__ import annotations

import numpy as np

from core.backends.api import broadcast_strides, coalesce
from core.codegen import FusedKernel

from .kernels._common import HALF, RENDERER, launch_1d, new_tensor, numel, padded, rank_bucket
from .programs import get_kernel
from .runtime import RUNTIME

__all__ = ["FusedLauncher", "FEW_ROWS", "LONG_ROW"]

# One work-item reduces one row: fewer rows than FEW_ROWS, each of LONG_ROW elements or more, run unfused
FEW_ROWS, LONG_ROW = 64, 32768


class FusedLauncher:
    """Launches one FusedKernel on opencl tensors (any strides, broadcast inputs)."""

    def __init__(self, kernel: FusedKernel):
        import core

        self.kernel = kernel
        self.shape = kernel.shape
        self.n = numel(kernel.shape)
        self.outputs = [(shape, getattr(core, d)) for shape, d in kernel.output_types()]
        self.split = len(kernel.shape) - kernel.reduction.dims if kernel.reduction else None
        self._sources: dict = {}  # (ranks, accumulator) -> (program key, render)
        # float16/bfloat16 values: the fused renderer declares variables of each step's dtype, which OpenCL C has
        # no arithmetic type for without cl_khr_fp16; their ops run one by one (each computing in float32)
        self.half = any(d in HALF for d in (*kernel.inputs, *(d for _, d in kernel.output_types()),
                                             *(step.dtype for step in kernel.steps)))

    def _program(self, ranks: tuple, acc):
        entry = self._sources.get((ranks, acc))
        if entry is None:
            name, source = RENDERER.render_fused(self.kernel, *ranks, acc=acc)
            entry = self._sources[(ranks, acc)] = (("fused", source), lambda: {"fused": (name, source)})
        return entry

    def __call__(self, inputs):
        if self.half:
            return None
        dev = inputs[0].device
        slot = RUNTIME.slot(dev.index)
        strides = [broadcast_strides(x._shape, x._stride, self.shape) for x in inputs]
        if self.split is None:
            dims, per_input = coalesce(self.shape, strides)
            ranks = (rank_bucket(len(dims)),)
            parts = [(dims, per_input)]
        else:
            kept = coalesce(self.shape[:self.split], [s[:self.split] for s in strides])
            reduced = coalesce(self.shape[self.split:], [s[self.split:] for s in strides])
            ranks = (rank_bucket(len(kept[0]), allow_zero=True), rank_bucket(len(reduced[0]), allow_zero=True))
            parts = [kept, reduced]
        if None in ranks:
            return None  # more dims than the largest rank bucket after coalescing: the ops run unfused
        if self.split is not None and numel(parts[0][0]) < FEW_ROWS and numel(parts[1][0]) >= LONG_ROW:
            return None  # a few long rows would leave the device idle: the ops' parallel kernels do better
        outs = [new_tensor(shape, dtype, dev) for shape, dtype in self.outputs]
        if self.n == 0:
            return outs if self.split is None else None  # an empty sum needs zeros: the ops do that
        key, render = self._program(ranks, None if slot.fp64 else "float32")
        kernel = get_kernel(slot, key, "fused", render)
        index = slot.index_buffer
        sizes = [numel(p[0]) for p in parts]
        args = [np.int64(s) for s in sizes] + [index(padded(p[0], r, 1)) for p, r in zip(parts, ranks)]
        args += [o._storage.data for o in outs]
        for k, x in enumerate(inputs):
            args += [x._storage.data] + [index(padded(p[1][k], r, 0)) for p, r in zip(parts, ranks)]
            args.append(np.int64(x._offset))
        launch_1d(slot, kernel, sizes[0], args)
        return outs
