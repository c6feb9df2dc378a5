"""The backend kit: what every backend needs, written once (exported to plugins by ``core.backends.api``).

- layout arithmetic over shapes and element strides (``layout``): broadcast strides, dimension coalescing,
  contiguity tests, flipped views, cat's slices, ``cat``/``flip`` as strided copies over a backend's copy, rank
  buckets of generated kernels;
- fresh outputs (``outputs``): an empty contiguous tensor of a spec on a backend's device;
- host staging (``staging``): a strided tensor's covering span, read and written through a host copy;
- kernel tables (``tables``): ``collect`` merges per-family ``kernels(ctx)`` tables, rejecting duplicates;
  ``register_all`` hands a table to the ``register_kernels`` hook (entries may be :class:`Kernel` with options).

A kernel declines a call it cannot run (a dtype or layout it does not cover) by returning ``NotImplemented``;
the dispatcher then runs the op's CPU fallback exactly as for a missing kernel (counted, warned once, an error
when the ``fallback`` config is off).
"""

from __future__ import annotations

from .layout import (RANK_BUCKETS, broadcast_strides, cat_by_copies, cat_parts, coalesce, flip_by_copy, flipped,
                     is_contiguous, padded, rank_bucket)
from .outputs import new_output, new_tensor
from .staging import covering_span, host_view, read_strided, write_strided
from .tables import Kernel, collect, register_all

__all__ = ["broadcast_strides", "cat_parts", "cat_by_copies", "coalesce", "flipped", "flip_by_copy", "is_contiguous",
           "RANK_BUCKETS", "rank_bucket", "padded", "new_tensor", "covering_span", "host_view", "read_strided",
           "write_strided", "new_output", "Kernel", "collect", "register_all"]
