"""The backend kit: what every backend needs, written once (exported to plugins by ``core.backends.api``).

- layout arithmetic over shapes and element strides (``layout``): broadcast strides, dimension coalescing,
  contiguity tests, flipped views, rank buckets of generated kernels;
- fresh outputs (``outputs``): an empty contiguous tensor of a spec on a backend's device;
- kernel tables (``tables``): ``collect`` merges per-family ``kernels(ctx)`` tables, rejecting duplicates;
  ``register_all`` hands a table to the ``register_kernels`` hook (entries may be :class:`Kernel` with options).

A kernel declines a call it cannot run (a dtype or layout it does not cover) by returning ``NotImplemented``;
the dispatcher then runs the op's CPU fallback exactly as for a missing kernel (counted, warned once, an error
when the ``fallback`` config is off).
"""

from __future__ import annotations

from .layout import RANK_BUCKETS, broadcast_strides, cat_parts, coalesce, flipped, is_contiguous, padded, rank_bucket
from .outputs import new_output, new_tensor
from .tables import Kernel, collect, register_all

__all__ = ["broadcast_strides", "cat_parts", "coalesce", "flipped", "is_contiguous", "RANK_BUCKETS", "rank_bucket",
           "padded", "new_tensor", "new_output", "Kernel", "collect", "register_all"]
