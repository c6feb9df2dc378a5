"""webgpu's fused kernels for core.jit: the WGSL dialect of core's fused renderer, one pipeline per rank bucket.

One invocation per element (per word of a packed output), or per row of kept coordinates with a closing reduction.
Declined (the unfused ops run): several packed outputs, one beside a reduction, and rows longer than LONG_ROW
(llvmpipe ends an invocation's loops after 65535 iterations; one invocation per row would serialise the chain).
"""

from __future__ import annotations

from core.backends.api import broadcast_strides, coalesce, padded, rank_bucket

from .kernels._common import launch, new_tensor, numel
from .renderer import PACKED, RENDERER

__all__ = ["FusedLauncher", "LONG_ROW"]

LONG_ROW = 16384


class FusedLauncher:
    """Launches one FusedKernel on webgpu tensors (any strides, broadcast inputs)."""

    def __init__(self, kernel):
        import core

        self.kernel = kernel
        self.shape = kernel.shape
        self.outputs = [(shape, getattr(core, d)) for shape, d in kernel.output_types()]
        self.split = len(kernel.shape) - kernel.reduction.dims if kernel.reduction else None
        self.packed = [d.name for _, d in self.outputs if d.name in PACKED]

    def __call__(self, inputs):
        if len(self.packed) > (0 if self.split is not None else 1):
            return None
        strides = [broadcast_strides(x._shape, x._stride, self.shape) for x in inputs]
        if self.split is None:
            parts = [coalesce(self.shape, strides)]
        else:
            parts = [coalesce(self.shape[:self.split], [s[:self.split] for s in strides]),
                     coalesce(self.shape[self.split:], [s[self.split:] for s in strides])]
        ranks = tuple(rank_bucket(len(p[0]), allow_zero=self.split is not None) for p in parts)
        sizes = [numel(p[0]) for p in parts]
        if None in ranks or (self.split is not None and sizes[1] > LONG_ROW) or numel(self.shape) >= 2**31:
            return None
        outs = [new_tensor(shape, dtype, inputs[0].device) for shape, dtype in self.outputs]
        if numel(self.shape) == 0:
            return outs if self.split is None else None  # an empty sum needs zeros: the ops do that
        params = [*sizes] + [v for p, r in zip(parts, ranks) for v in padded(p[0], r, 1)]
        for k, x in enumerate(inputs):
            params += [v for p, r in zip(parts, ranks) for v in padded(p[1][k], r, 0)] + [x._offset]
        kernel = self.kernel
        launch(("fused", kernel, ranks), lambda: RENDERER.render_fused(kernel, *ranks, acc="float32")[1], outs,
               list(inputs), params, -(-sizes[0] // PACKED[self.packed[0]]) if self.packed else sizes[0])
        return outs
