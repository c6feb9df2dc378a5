"""The cuda runtime: CuPy arrays as storage, CuPy's memory pool as the allocator, one CuPy device per index.

Memory comes from ``cupy.get_default_memory_pool()`` (not a home-made allocator): freed blocks stay cached
in the pool for reuse, which is what ``memory_reserved`` counts and ``empty_cache`` returns to the driver.
"""

from __future__ import annotations

import numpy as np

from core.backends.api import Runtime, Storage, Tensor, device

from .arrays import DeviceArrays

__all__ = ["CudaRuntime", "probe"]


def probe() -> tuple:
    """``(True, "")`` when CuPy imports and sees a CUDA device, else ``(False, reason)``; never raises."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CuPy build failing to load its libraries
        return False, f"CuPy not installed ({type(exc).__name__}: {exc})"
    try:
        if cupy.cuda.is_available():
            return True, ""
    except Exception as exc:  # is_available() is documented not to raise; a broken driver stack still might
        return False, f"no CUDA device ({type(exc).__name__}: {exc})"
    try:  # is_available() says only False; the runtime's error says why (no driver, old driver, no device)
        cupy.cuda.runtime.getDeviceCount()
        detail = "0 devices"
    except Exception as exc:
        detail = str(exc)
    return False, f"no CUDA device ({detail})"


class CudaRuntime(DeviceArrays, Runtime):
    """Allocator, host<->device copies and device facts of the ``cuda`` device type, through CuPy."""

    native_half_matmul = True

    def __init__(self):
        import cupy
        import cupyx.scipy.special

        from .raw import RawElementwise

        self.cupy = self.xp = cupy
        self.special = cupyx.scipy.special
        self.raw = RawElementwise(cupy)
        self._peak: dict = {}  # device index -> max bytes in use seen at an allocation

    # -- availability and devices ----------------------------------------------------------------------
    def is_available(self) -> tuple:
        return probe()

    def device_count(self) -> int:
        try:
            return self.cupy.cuda.runtime.getDeviceCount()
        except self.cupy.cuda.runtime.CUDARuntimeError:
            return 0

    def device_name(self, index: int = 0) -> str:
        name = self.cupy.cuda.runtime.getDeviceProperties(index)["name"]
        return name.decode() if isinstance(name, bytes) else name

    def current_device(self) -> int:
        return self.cupy.cuda.runtime.getDevice()

    def set_device(self, index: int) -> None:
        self.cupy.cuda.Device(index).use()

    def synchronize(self, dev: device | None = None) -> None:
        if dev is None or dev.index is None:
            self.cupy.cuda.Device().synchronize()
        else:
            self.cupy.cuda.Device(dev.index).synchronize()

    def scope(self, dev):
        return self.cupy.cuda.Device(dev.index or 0)

    # -- memory ------------------------------------------------------------------------------------------
    def _view(self, flat, shape, np_dtype, offset, strides):
        return self.cupy.ndarray(shape, np_dtype, flat.data + offset, strides)

    def allocate(self, nbytes: int, dev: device):
        with self.cupy.cuda.Device(dev.index or 0):
            data = self.cupy.empty(nbytes, np.uint8)
            self._note_peak(dev.index or 0)
        return data

    def from_host(self, array: np.ndarray, dev: device, non_blocking: bool = False):
        """A device copy of the C-contiguous host ``array``; ``non_blocking`` stages it through pinned memory
        and copies on the current stream (safe: the caller's array may change right after we return)."""
        flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        with self.cupy.cuda.Device(dev.index or 0):
            if non_blocking and flat.nbytes:
                pinned = self.cupy.cuda.alloc_pinned_memory(flat.nbytes)
                staged = np.frombuffer(pinned, np.uint8, flat.nbytes)
                staged[...] = flat
                data = self.cupy.empty(flat.nbytes, np.uint8)
                data.set(staged, stream=self.cupy.cuda.get_current_stream())
            else:
                data = self.cupy.asarray(flat)
            self._note_peak(dev.index or 0)
        return data

    def to_host(self, tensor: Tensor) -> np.ndarray:
        # always blocking: the caller reads the host array as soon as we return it
        with self.cupy.cuda.Device(tensor.device.index or 0):
            return self.host_array(tensor, self.cupy.asnumpy(self.array(tensor)))

    def data_ptr(self, storage: Storage) -> int:
        return storage.data.data.ptr

    def _note_peak(self, index: int) -> None:
        used = self.cupy.get_default_memory_pool().used_bytes()
        if used > self._peak.get(index, 0):
            self._peak[index] = used

    def _pool_bytes(self, dev, what: str) -> int:
        index = self.current_device() if dev is None else getattr(dev, "index", dev) or 0
        with self.cupy.cuda.Device(index):
            return getattr(self.cupy.get_default_memory_pool(), what)()

    def memory_allocated(self, dev=None) -> int:
        """Bytes of the pool held by live arrays (``torch.cuda.memory_allocated``)."""
        return self._pool_bytes(dev, "used_bytes")

    def max_memory_allocated(self, dev=None) -> int:
        """The peak of :meth:`memory_allocated`, sampled at every allocation through this runtime."""
        index = self.current_device() if dev is None else getattr(dev, "index", dev) or 0
        return max(self._peak.get(index, 0), self.memory_allocated(index))

    def reset_peak_memory_stats(self, dev=None) -> None:
        """Start the peak of :meth:`memory_allocated` again from its current value."""
        index = self.current_device() if dev is None else getattr(dev, "index", dev) or 0
        self._peak[index] = self.memory_allocated(index)

    def memory_reserved(self, dev=None) -> int:
        """Bytes the pool holds from the driver: in use plus cached free blocks (``torch.cuda.memory_reserved``)."""
        return self._pool_bytes(dev, "total_bytes")

    def empty_cache(self) -> None:
        self.cupy.get_default_memory_pool().free_all_blocks()
        self.cupy.get_default_pinned_memory_pool().free_all_blocks()

    def supports_fusion(self, dev) -> bool:
        """core.jit fuses elementwise chains on cuda (see jit.py)."""
        return True

    def compile_fused(self, kernel, dev):
        """A launcher of ``kernel``, compiled by CuPy (NVRTC) on first launch per rank."""
        from .jit import FusedLauncher

        return FusedLauncher(kernel, self)

    def memory_summary(self, dev=None) -> str:
        pool = self.cupy.get_default_memory_pool()
        return (f"cuda memory (CuPy pool): allocated {self.memory_allocated(dev)} B, "
                f"peak {self.max_memory_allocated(dev)} B, reserved {self.memory_reserved(dev)} B, "
                f"free blocks cached {pool.n_free_blocks()}, pool limit {pool.get_limit() or 'none'}")
