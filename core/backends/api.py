"""The public plugin API: everything a backend package needs from core, in one module.

A backend plugin imports only this module (and ``core``'s public names). See
``docs/writing-a-backend.md`` for a tutorial (its section "The kit" for the shared helpers re-exported here)
and ``docs/hooks.md`` for the hooks.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..device import device
from ..dispatch import TensorSpec, get_operator
from ..dispatch.capture import Ptr, note_c_call, planning
from ..dispatch.keys import backend_key
from ..dtypes import dtype, from_numpy_dtype
from ..plugins.hookspecs import PLUGIN_API_VERSION, hookimpl
from ..storage import Storage
from ..tensor import Tensor, contiguous_strides
from .kit import reference  # the reference kernels over an array module: reference.<family>.kernels(ctx)
from .kit import RANK_BUCKETS, Kernel, broadcast_strides, cat_by_copies, cat_parts, coalesce, collect, covering_span, \
    flip_by_copy, flipped, host_view, is_contiguous, new_output, new_tensor, padded, rank_bucket, read_strided, \
    register_all, write_strided

__all__ = ["hookimpl", "PLUGIN_API_VERSION", "Runtime", "Storage", "Tensor", "TensorSpec", "dtype",
           "device", "from_numpy_dtype", "contiguous_strides", "make_tensor", "get_operator", "backend_key",
           # the kit (core/backends/kit): layout arithmetic, fresh outputs, kernel tables
           "broadcast_strides", "cat_parts", "cat_by_copies", "coalesce", "flipped", "flip_by_copy", "is_contiguous",
           "RANK_BUCKETS", "rank_bucket", "padded", "new_tensor", "new_output", "covering_span", "host_view",
           "read_strided", "write_strided", "Kernel", "collect", "register_all", "reference", "DeviceEvent",
           # whole-step capture: a kernel's one C call, noted so that a replay calls it directly
           "planning", "note_c_call", "Ptr"]


class DeviceEvent(NamedTuple):
    """One span of device time a runtime reports to ``core.profiler`` (see :meth:`Runtime.stop_profiling`):
    ``start_us`` on the clock of ``time.perf_counter_ns() / 1000``, ``duration_us`` its length."""

    name: str
    start_us: float
    duration_us: float
    device_index: int = 0


class Runtime:
    """Base class of a backend's runtime object: allocator, host transfers, device facts.

    The plugin manager sets ``name``, ``device_type`` and ``key`` (the dispatch
    key) when it loads the backend. Subclasses implement :meth:`allocate`,
    :meth:`from_host` and :meth:`to_host`; the rest have sensible defaults.
    """

    name = "?"
    device_type = "?"
    key = None
    supports_float64 = True

    def is_available(self) -> tuple:
        """``(True, "")``, or ``(False, reason)`` when the hardware or driver is missing."""
        return True, ""

    def device_count(self) -> int:
        """How many devices of this type exist."""
        return 1

    def device_name(self, index: int = 0) -> str:
        """A human-readable name of device ``index``."""
        return self.device_type

    def normalize_device(self, dev: device) -> device:
        """The canonical device object (``cuda`` -> ``cuda:0``); checks the index."""
        index = 0 if dev.index is None else dev.index
        count = self.device_count()
        if index >= count:
            raise RuntimeError(f"{dev.type}:{index} is not a valid device: {count} {dev.type} device(s) available")
        return device(dev.type, index)

    def supports_dtype(self, d: dtype) -> bool:
        """Whether tensors of dtype ``d`` can live on this backend (float64 and complex128, whose parts are
        float64, only where it ``supports_float64``)."""
        return self.supports_float64 or d.name not in ("float64", "complex128")

    def allocate(self, nbytes: int, dev: device):
        """An uninitialised buffer of ``nbytes`` bytes on ``dev`` (the Storage's ``data``)."""
        raise NotImplementedError

    def from_host(self, array: np.ndarray, dev: device):
        """A buffer on ``dev`` holding a copy of the C-contiguous host ``array``."""
        raise NotImplementedError

    def to_host(self, tensor: Tensor) -> np.ndarray:
        """The tensor's elements as a host array of its shape (honouring its strides)."""
        raise NotImplementedError

    def data_ptr(self, storage: Storage) -> int:
        """The buffer's address (0 when the backend has no meaningful one)."""
        return 0

    def synchronize(self, dev: device | None = None) -> None:
        """Wait for queued work on ``dev`` to finish."""

    def empty_cache(self) -> None:
        """Return cached, unused memory to the system."""

    # -- optional: fused kernels for core.jit (see docs/writing-a-backend.md, "How a backend opts into fusion") --
    def supports_fusion(self, dev: device) -> bool:
        """Whether :meth:`compile_fused` works for ``dev`` (cheap; the JIT's fusion pass asks at trace time).

        The default, ``False``, keeps traced graphs unfused on this backend.
        """
        return False

    def compile_fused(self, kernel, dev: device):
        """A function ``launch(inputs) -> outputs | None`` running ``kernel`` (a :class:`core.codegen.FusedKernel`).

        ``inputs`` are tensors on ``dev`` of the kernel's input dtypes, broadcastable to ``kernel.shape``, in any
        layout; ``launch`` returns fresh tensors of ``kernel.output_types()``, or ``None`` for a layout it
        declines (the JIT then runs the unfused ops). Called once per fused node and device; raising makes the
        JIT warn and run that node unfused.
        """
        raise NotImplementedError(f"backend '{self.name}' does not compile fused kernels")


    # -- optional: device time for core.profiler (see docs/writing-a-backend.md, "Reporting device time") --
    def start_profiling(self) -> bool:
        """Begin recording device-time events (a ``core.profiler`` block starts); ``True`` if it will.

        The default, ``False``, means this backend reports none: its ops still show their host time.
        """
        return False

    def stop_profiling(self) -> list:
        """The :class:`DeviceEvent` s recorded since :meth:`start_profiling` returned ``True`` (the block ends)."""
        return []


def make_tensor(runtime: Runtime, data, nbytes: int, shape: tuple, d: dtype, dev: device) -> Tensor:
    """A contiguous tensor over a buffer the backend allocated (``data``)."""
    storage = Storage(data, nbytes, dev, runtime, runtime.key.mask)
    return Tensor._make(storage, tuple(shape), contiguous_strides(tuple(shape)), 0, d)
