"""The opencl runtime: device discovery and selection, PyOpenCL memory pools, host transfers.

``opencl:N`` is the N-th selected (platform, device) pair. The selection comes from the
``CORE_OPENCL_DEVICES`` environment variable, else the ``[tool.core.plugin.opencl]`` config table
(``devices = ["0:0", "0:1"]`` or ``platform = "Portable"``), else every device of the first platform
that has any and whose compiler works (``probe.py``: a platform can list devices it cannot compile for).
Each device gets its own context, in-order queue and ``pyopencl.tools.MemoryPool``.

Device time for ``core.profiler``: the queues are created with ``PROFILING_ENABLE`` (measured on PoCL: a launch
costs the same, ~2.7 us, with and without it), and while a profile block records, :meth:`DeviceSlot.launch`
keeps each kernel's event; at the block's end the events' ``CL_PROFILING_COMMAND_START/END`` become
``DeviceEvent`` s, moved onto the host's ``perf_counter`` clock by a marker timed at the block's start.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from core.backends.api import DeviceEvent, Runtime, device, read_strided as staged_read, \
    write_strided as staged_write

from . import probe

__all__ = ["OpenCLRuntime", "DeviceSlot", "RUNTIME", "ENV_DEVICES"]

ENV_DEVICES = "CORE_OPENCL_DEVICES"
_SETTINGS = {"devices", "platform"}
_CACHE_CAP = 4096  # small index/scalar buffers kept per device (shapes and strides recur from step to step)


def _cl():
    import pyopencl

    return pyopencl


class DeviceSlot:
    """One selected OpenCL device: its context, queue, memory pool and caches of programs and small buffers.

    Usable from several threads: OpenCL calls are thread-safe except setting a kernel's arguments, which live in
    the kernel object until the next launch, so each thread launches its own kernel objects (``kernels``). The
    pool and the dict caches change only while the GIL is held.
    """

    def __init__(self, platform, cl_device):
        cl = _cl()
        from pyopencl.tools import ImmediateAllocator, MemoryPool

        self.platform = platform
        self.device = cl_device
        self.name = f"{cl_device.name.strip()} ({platform.name.strip()})"
        self.fp64 = "cl_khr_fp64" in cl_device.extensions
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.launched: list | None = None  # [(cl.Kernel, cl.Event)] while a profile records device time
        self.clock_offset_ns = 0  # host perf_counter_ns less the device's profiling clock
        self.pool = MemoryPool(ImmediateAllocator(self.queue))
        self.peak_allocated = self.peak_reserved = 0  # the pool's active and managed bytes at their highest
        self.programs: dict = {}  # program key -> (built cl.Program, {member: kernel name})
        self.build_lock = threading.Lock()  # one build per program, however many threads want it first
        self._per_thread = threading.local()
        self._index_buffers: dict = {}
        self._scalar_buffers: dict = {}

    @property
    def kernels(self) -> dict:
        """The calling thread's kernel objects: (program key, member) -> cl.Kernel."""
        try:
            return self._per_thread.kernels
        except AttributeError:
            self._per_thread.kernels = {}
            return self._per_thread.kernels

    def launch(self, kernel, global_size: tuple, local_size: tuple, args) -> None:
        """Enqueue ``kernel`` over ``global_size`` work-items (work-groups of ``local_size``) with ``args``;
        while a profile records, keep its event for the device time."""
        event = kernel(self.queue, global_size, local_size, *args)
        if self.launched is not None:
            self.launched.append((kernel, event))

    def start_recording(self) -> None:
        """Keep the events of the kernels launched from now on; time a marker to relate the clocks."""
        marker = _cl().enqueue_marker(self.queue)
        marker.wait()
        self.clock_offset_ns = time.perf_counter_ns() - marker.profile.end
        self.launched = []

    def stop_recording(self, index: int) -> list:
        """The :class:`DeviceEvent` s of the kernels launched since :meth:`start_recording` (waits for them)."""
        launched, self.launched = self.launched or [], None
        self.queue.finish()
        events = []
        for kernel, event in launched:
            start, end = event.profile.start, event.profile.end
            events.append(DeviceEvent(kernel.function_name, (start + self.clock_offset_ns) / 1000,
                                      (end - start) / 1000, index))
        return events

    def allocate(self, nbytes: int):
        # zero-size buffers are invalid in OpenCL: keep a minimum so empty tensors still own a buffer
        buf = self.pool.allocate(max(nbytes, 8))
        pool = self.pool
        active = pool.active_bytes  # peaks are reached at allocations: frees only lower the counts
        if active > self.peak_allocated:
            self.peak_allocated = active
        reserved = pool.managed_bytes
        if reserved > self.peak_reserved:
            self.peak_reserved = reserved
        return buf

    def reset_peak_memory_stats(self) -> None:
        """Start the peaks of allocated and reserved bytes again from their current values."""
        self.peak_allocated = self.pool.active_bytes
        self.peak_reserved = self.pool.managed_bytes

    def index_buffer(self, values: tuple):
        """A read-only device buffer of int64 ``values`` (shapes, strides), cached by value."""
        buf = self._index_buffers.get(values)
        if buf is None:
            cl = _cl()
            if len(self._index_buffers) >= _CACHE_CAP:
                self._index_buffers.clear()
            host = np.array(values or (0,), np.int64)
            buf = self._index_buffers[values] = cl.Buffer(self.context, cl.mem_flags.READ_ONLY |
                                                           cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        return buf

    def scalar_buffer(self, value, np_dtype: np.dtype):
        """A one-element device buffer holding ``value`` in ``np_dtype`` (a broadcast operand), cached."""
        host = np.asarray(value).astype(np_dtype).reshape(1)
        key = (np_dtype.str, host.tobytes())
        buf = self._scalar_buffers.get(key)
        if buf is None:
            cl = _cl()
            if len(self._scalar_buffers) >= _CACHE_CAP:
                self._scalar_buffers.clear()
            buf = self._scalar_buffers[key] = cl.Buffer(self.context, cl.mem_flags.READ_ONLY |
                                                         cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        return buf


def _parse_pairs(spec, where: str) -> list:
    """``"0:0,0:1"`` / ``["0:0", 1]`` -> [(platform, device or None)]: a bare platform index means all its devices."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    pairs = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            platform, _, dev = text.partition(":")
            pairs.append((int(platform), int(dev) if dev else None))
        except ValueError:
            raise RuntimeError(f"{where}: expected 'PLATFORM:DEVICE' indices (e.g. '0:0,0:1'), got {text!r}") from None
    return pairs


def _devices_of(platform) -> list:
    """A platform's devices; [] when it has none (some ICDs raise DEVICE_NOT_FOUND instead of answering [])."""
    try:
        return platform.get_devices()
    except _cl().Error:
        return []


def _first_working(platforms, wanted: str = "") -> tuple:
    """(every device of the first platform named like ``wanted`` that has devices its compiler builds for,
    ``(description, fix)`` of each platform skipped on the way because its compiler fails)."""
    failures = []
    for index, platform in enumerate(platforms):
        if wanted and wanted not in platform.name.lower():
            continue
        devices = _devices_of(platform)
        if not devices:
            continue
        error = probe.compiler_error(platform, devices)
        if not error:
            return [(platform, d) for d in devices], failures
        failures.append((probe.describe(index, platform, devices, error), probe.fix_hint(platform, error)))
    return [], failures


def _cannot_compile(failures: list) -> str:
    """The failures of ``_first_working`` as one sentence: what failed where, then what to do (each fix once)."""
    return "; ".join(text for text, _ in failures) + ". " + "; ".join(dict.fromkeys(fix for _, fix in failures))


class OpenCLRuntime(Runtime):
    """Buffers from PyOpenCL memory pools on the selected OpenCL devices; kernels in ``core_opencl.kernels``."""

    def __init__(self):
        self._settings: dict = {}
        self._slots: list | None = None
        self._slots_lock = threading.Lock()  # threads that first use opencl together must share one context
        self._profiling = False  # a profile block records device time (start_profiling .. stop_profiling)

    # -- discovery and selection ------------------------------------------------------------------------
    def configure(self, settings: dict) -> None:
        """Take the plugin's config table (``devices``, ``platform``); unknown keys are an error."""
        unknown = set(settings) - _SETTINGS
        if unknown:
            raise ValueError(f"[tool.core.plugin.opencl]: unknown key(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(_SETTINGS))})")
        with self._slots_lock:
            if settings != self._settings:
                self._settings = dict(settings)
                self._slots = None

    def is_available(self) -> tuple:
        """True when some platform has a device its compiler builds for (the probe is cached per process)."""
        try:
            cl = _cl()
        except ImportError as exc:
            return False, f"pyopencl is not installed ({exc})"
        try:
            platforms = cl.get_platforms()
        except (cl.Error, RuntimeError) as exc:
            return False, f"no OpenCL platform found ({type(exc).__name__}: {exc})"
        try:
            chosen, failures = _first_working(platforms)
        except (cl.Error, RuntimeError) as exc:  # a platform that cannot even say its name or version
            return False, f"OpenCL discovery failed ({type(exc).__name__}: {exc})"
        if chosen:
            return True, ""
        if failures:
            return False, f"no OpenCL platform can compile a kernel: {_cannot_compile(failures)}"
        return False, "no OpenCL device found on any platform"

    def _select(self) -> list:
        cl = _cl()
        platforms = cl.get_platforms()
        env = os.environ.get(ENV_DEVICES, "").strip()
        if env or "devices" in self._settings:
            where = ENV_DEVICES if env else "[tool.core.plugin.opencl] devices"
            chosen = []
            for p, d in _parse_pairs(env or self._settings["devices"], where):
                if p >= len(platforms):
                    raise RuntimeError(f"{where}: no OpenCL platform {p} ({len(platforms)} platform(s))")
                devices = _devices_of(platforms[p])
                if d is not None and d >= len(devices):
                    raise RuntimeError(f"{where}: platform {p} ({platforms[p].name}) has no device {d} "
                                       f"({len(devices)} device(s))")
                chosen += [(p, x) for x in (devices if d is None else [devices[d]])]
            for p in dict.fromkeys(p for p, _ in chosen):  # one probe per chosen platform, on its chosen devices
                devices = list(dict.fromkeys(x for q, x in chosen if q == p))
                error = probe.compiler_error(platforms[p], devices)
                if error:
                    raise RuntimeError(f"{where}: the OpenCL compiler fails on "
                                       f"{probe.describe(p, platforms[p], devices, error)}; "
                                       f"{probe.fix_hint(platforms[p], error)}")
            return [(platforms[p], x) for p, x in chosen]
        wanted = str(self._settings.get("platform", "")).lower()
        chosen, failures = _first_working(platforms, wanted)
        if chosen:
            return chosen
        like = f" named like {wanted!r}" if wanted else ""
        if failures:
            raise RuntimeError(f"{'[tool.core.plugin.opencl] platform' if wanted else 'opencl'}: no OpenCL platform"
                               f"{like} can compile a kernel: {_cannot_compile(failures)}")
        if wanted:
            raise RuntimeError(f"[tool.core.plugin.opencl] platform: no platform{like} has a device "
                               f"(platforms: {', '.join(p.name for p in platforms)})")
        return []

    @property
    def slots(self) -> list:
        """The selected devices (resolved on first use, after the ``configure`` hook)."""
        slots = self._slots
        if slots is None:
            with self._slots_lock:
                if self._slots is None:
                    self._slots = [DeviceSlot(p, d) for p, d in self._select()]
                slots = self._slots
        return slots

    def slot(self, index) -> DeviceSlot:
        """The DeviceSlot of ``opencl:index`` (``None`` = 0)."""
        return self.slots[index or 0]

    def _index_of(self, dev) -> int:
        if dev is None:
            return 0
        if isinstance(dev, int):
            return dev
        if isinstance(dev, str):
            dev = device(dev)
        return getattr(dev, "index", None) or 0

    # -- Runtime API -------------------------------------------------------------------------------------
    def device_count(self) -> int:
        return len(self.slots)

    def device_name(self, index: int = 0) -> str:
        return self.slot(index).name

    @property
    def supports_float64(self) -> bool:
        """float64 tensors need ``cl_khr_fp64`` on every selected device."""
        return all(s.fp64 for s in self.slots)

    def allocate(self, nbytes: int, dev: device):
        return self.slot(dev.index).allocate(nbytes)

    def from_host(self, array: np.ndarray, dev: device):
        slot = self.slot(dev.index)
        buf = slot.allocate(array.nbytes)
        if array.nbytes:
            _cl().enqueue_copy(slot.queue, buf, np.ascontiguousarray(array), is_blocking=True)
        return buf

    def _reader(self, tensor):
        """``read(byte offset, byte count)`` of the tensor's buffer into a host array (blocking)."""
        slot, buffer = self.slot(tensor.device.index), tensor._storage.data

        def read(start: int, nbytes: int) -> np.ndarray:
            host = np.empty(nbytes, np.uint8)
            _cl().enqueue_copy(slot.queue, host, buffer, src_offset=start, is_blocking=True)
            return host

        return read

    def to_host(self, tensor) -> np.ndarray:
        return staged_read(tensor, self._reader(tensor))

    def write_strided(self, tensor, values: np.ndarray) -> None:
        """Write host ``values`` (broadcast to the tensor's shape) into the tensor's elements, through its strides."""
        slot, buffer = self.slot(tensor.device.index), tensor._storage.data

        def write(start: int, host) -> None:
            _cl().enqueue_copy(slot.queue, buffer, np.frombuffer(host, np.uint8), dst_offset=start, is_blocking=True)

        staged_write(tensor, values, self._reader(tensor), write)

    def data_ptr(self, storage) -> int:
        return storage.data.int_ptr

    def synchronize(self, dev: device | None = None) -> None:
        for slot in self.slots if dev is None or dev.index is None else [self.slot(dev.index)]:
            slot.queue.finish()

    def empty_cache(self) -> None:
        for slot in self.slots:
            slot.pool.free_held()

    def memory_allocated(self, dev=None) -> int:
        """Bytes in buffers held by live tensors (the pool's active bytes)."""
        return self.slot(self._index_of(dev)).pool.active_bytes

    def memory_reserved(self, dev=None) -> int:
        """Bytes the pool holds from OpenCL (active + cached)."""
        return self.slot(self._index_of(dev)).pool.managed_bytes

    def max_memory_allocated(self, dev=None) -> int:
        """Peak of :meth:`memory_allocated` since the start or :meth:`reset_peak_memory_stats`."""
        return self.slot(self._index_of(dev)).peak_allocated

    def max_memory_reserved(self, dev=None) -> int:
        """Peak of :meth:`memory_reserved` since the start or :meth:`reset_peak_memory_stats`."""
        return self.slot(self._index_of(dev)).peak_reserved

    def reset_peak_memory_stats(self, dev=None) -> None:
        """Start the peaks again from the current values."""
        self.slot(self._index_of(dev)).reset_peak_memory_stats()

    def start_profiling(self) -> bool:
        """Record each kernel's device time on every selected device (one profile block at a time)."""
        with self._slots_lock:
            if self._profiling:
                return False
            self._profiling = True
        try:
            for slot in self.slots:
                slot.start_recording()
        except Exception:  # no device (or a failing marker): record nothing anywhere
            for slot in self._slots or []:
                slot.launched = None
            self._profiling = False
            raise
        return True

    def stop_profiling(self) -> list:
        """The kernels' :class:`DeviceEvent` s since :meth:`start_profiling`, on every selected device."""
        events = []
        for index, slot in enumerate(self.slots):
            events += slot.stop_recording(index)
        self._profiling = False
        return events

    def supports_fusion(self, dev) -> bool:
        """core.jit fuses elementwise chains on every OpenCL device (see jit.py)."""
        return True

    def compile_fused(self, kernel, dev):
        """A launcher of ``kernel``; programs are built on first launch per rank bucket."""
        from .jit import FusedLauncher

        return FusedLauncher(kernel)


RUNTIME = OpenCLRuntime()
