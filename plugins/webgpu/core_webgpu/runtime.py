"""The webgpu runtime: one adapter and its device, a caching buffer pool, host copies, compute dispatches.

``webgpu:0`` is one WebGPU adapter: the first whose name contains ``CORE_WEBGPU_ADAPTER`` (case-insensitive) when
that variable is set, else the one wgpu picks for the ``power_preference`` of the ``[tool.core.plugin.webgpu]``
config table (default ``"high-performance"``). wgpu chooses Metal, Vulkan or D3D12 itself; without a GPU, Mesa's
software Vulkan driver (llvmpipe) is an adapter too.

Memory: a tensor's storage is a :class:`Buffer`, a ``GPUBuffer`` (usage STORAGE | COPY_SRC | COPY_DST) whose bytes
are the tensor's bytes exactly as on the host, taken from and given back to a per-device :class:`Pool` of size
classes (a buffer is never smaller than 4 bytes, and its size is a multiple of 4, as copies require).

Kernels: :meth:`DeviceSlot.dispatch` runs one WGSL compute shader (entry point ``main``) over a grid of work-groups.
Its bindings, all in group 0, are in this order: the buffers it writes (``var<storage, read_write>``), the buffers
it reads (``var<storage, read>``), and last one ``var<storage, read> p: array<i32>`` holding the call's integer
parameters (shapes, strides, offsets; floats as ``bitcast<f32>``). Storage buffers are bound whole, so offsets are
parameters, in elements. Dispatches are recorded into one command encoder and submitted together (at the next
host copy, :meth:`synchronize`, or every ``_BATCH`` dispatches): a launch costs the encoding, not a submission.
A buffer that is read and written by one dispatch (an in-place op) is read from a copy, as WebGPU forbids binding
a buffer writable and readable at once.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time

import numpy as np

from core.backends.api import DeviceEvent, Runtime

__all__ = ["WebGPURuntime", "DeviceSlot", "Buffer", "Pool", "RUNTIME", "ENV_ADAPTER", "WORKGROUP", "grid"]

ENV_ADAPTER = "CORE_WEBGPU_ADAPTER"
_SETTINGS = {"power_preference"}
WORKGROUP = 64  # invocations per work-group of the 1-d kernels (see grid)
_MAX_GROUPS = 65535  # work-groups per grid dimension (WebGPU's default limit)
_BATCH = 256  # dispatches recorded before the encoder is submitted
_QUERIES = 2 * _BATCH  # timestamps per query set while profiling (two per dispatch)
_CACHE_CAP = 4096  # parameter buffers kept per device (shapes and strides recur from step to step)


_FEATURES = ("shader-f16", "shader-int64")  # optional features the kernels use: WGSL f16, i64 (wgpu-native)


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:g} MiB"


def _wgpu():
    # wgpu-native (Vulkan's loader) warns on stderr when XDG_RUNTIME_DIR is unset; give it a private directory
    if not os.environ.get("XDG_RUNTIME_DIR"):
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="core-webgpu-")
    import wgpu

    return wgpu


def grid(n: int, size: int = WORKGROUP) -> tuple:
    """Work-groups for ``n`` invocations of ``size``: ``(x, y, 1)`` with ``x <= 65535``. A shader's flat index is
    ``(wid.y * nwg.x + wid.x) * size + lid.x`` (``workgroup_id``, ``num_workgroups``, ``local_invocation_index``)."""
    groups = max(1, -(-n // size))
    if groups <= _MAX_GROUPS:
        return groups, 1, 1
    y = -(-groups // _MAX_GROUPS)
    return -(-groups // y), y, 1


def _size_class(nbytes: int) -> int:
    """Bytes actually allocated for ``nbytes``: a multiple of 4, rounded up to 1/8 of its power of two (>= 16)."""
    n = max(16, nbytes)
    step = 1 << max(n.bit_length() - 4, 2)
    return -(-n // step) * step


class Pool:
    """Freed GPUBuffers kept by size class and handed out again; :meth:`free_held` gives them back to wgpu.

    The pool owns every GPUBuffer it made (``owned``), lent to a :class:`Buffer` or held: a buffer is then never
    reachable only through tensors, so when the garbage collector frees a cycle of tensors (autograd graphs), wgpu's
    finalizer cannot release a GPUBuffer that the :class:`Buffer` 's finalizer is handing back to the pool.

    Each GPUBuffer gets an address of its own in a virtual address space (never reused, 256-byte aligned, ranges
    apart), which ``Tensor.data_ptr()`` reports: WebGPU has no device addresses, and distinct buffers must not
    compare equal or overlap.
    """

    def __init__(self, device):
        self.device = device
        self.max_size = device.limits["max-buffer-size"]
        self.owned: dict = {}  # every GPUBuffer made and not yet destroyed -> its virtual address
        self._next_address = 1 << 32
        self.held: dict = {}  # size -> [GPUBuffer]
        self.active_bytes = self.held_bytes = 0
        self.peak_active = self.peak_reserved = 0
        self.lock = threading.Lock()

    def allocate(self, nbytes: int) -> "Buffer":
        size = _size_class(nbytes)
        if size > self.max_size:  # the largest buffers are not rounded up to a class
            size = max(16, -(-nbytes // 4) * 4)
        if size > self.max_size:  # core reports it as an OutOfMemoryError naming the op, device and pool
            raise MemoryError(f"webgpu: {nbytes} bytes exceed the adapter's max-buffer-size ({self.max_size})")
        with self.lock:
            free, gpu = self.held.get(size), None
            while free and gpu is None:
                gpu = free.pop()
                self.held_bytes -= size
                # the garbage collector may have finalised the GPUBuffer with its Buffer (both in one unreachable
                # cycle, e.g. a traceback's frames; the Buffer's finaliser put it here): a dead handle is dropped
                gpu = gpu if getattr(gpu, "_internal", None) is not None else None
            self.active_bytes += size
            self.peak_active = max(self.peak_active, self.active_bytes)
            self.peak_reserved = max(self.peak_reserved, self.active_bytes + self.held_bytes)
        if gpu is None:
            usage = _wgpu().BufferUsage
            try:
                gpu = self.device.create_buffer(size=size, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
            except BaseException:
                with self.lock:
                    self.active_bytes -= size
                raise
            with self.lock:
                self.owned[gpu] = self._next_address
                self._next_address += -(-size // 256) * 256 + 256
        return Buffer(gpu, size, self)

    def release(self, gpu, size: int) -> None:
        with self.lock:
            self.active_bytes -= size
            self.held_bytes += size
            self.held.setdefault(size, []).append(gpu)

    def free_held(self) -> None:
        with self.lock:
            held, self.held, self.held_bytes = self.held, {}, 0
            for buffers in held.values():
                for gpu in buffers:
                    del self.owned[gpu]
        for buffers in held.values():
            for gpu in buffers:
                gpu.destroy()


class Buffer:
    """A tensor's storage on the device: a pooled ``GPUBuffer`` (``gpu``) of ``size`` bytes, back to the pool
    when the last tensor using it goes."""

    __slots__ = ("gpu", "size", "pool")

    def __init__(self, gpu, size: int, pool: Pool):
        self.gpu, self.size, self.pool = gpu, size, pool

    def __del__(self):
        pool = self.pool
        if pool is not None:
            self.pool = None
            pool.release(self.gpu, self.size)


class DeviceSlot:
    """The selected adapter's device: its queue, buffer pool, compiled pipelines and the encoder being recorded."""

    def __init__(self, adapter):
        self.adapter = adapter
        info = adapter.info
        self.name = f"{info['device']} ({info['backend_type']}, {info['adapter_type']})"
        self.info = dict(info)
        features = set(adapter.features)
        #: shader-f16: WGSL ``f16`` (float16 kernels); shader-int64 (wgpu-native): ``i64`` (int64 kernels)
        wanted = [f for f in (*_FEATURES, "timestamp-query") if f in features]
        limits = adapter.limits
        raise_to = {k: limits[k] for k in ("max-buffer-size", "max-storage-buffer-binding-size",
                                           "max-storage-buffers-per-shader-stage",
                                           "max-compute-workgroup-storage-size",
                                           "max-compute-invocations-per-workgroup") if k in limits}
        self.device = adapter.request_device_sync(required_features=wanted, required_limits=raise_to)
        self.features = frozenset(wanted)
        self.f16 = "shader-f16" in self.features
        self.int64 = "shader-int64" in self.features
        self.limits = dict(self.device.limits)
        self.queue = self.device.queue
        self.pool = Pool(self.device)
        self.pipelines: dict = {}  # key -> (pipeline, bind group layout)
        self._layouts: dict = {}  # (writes, reads) -> (bind group layout, pipeline layout)
        self._params: dict = {}  # parameter bytes -> GPUBuffer
        self._encoder = None
        self._pending = 0
        self._fence = None  # a 4-byte buffer synchronize reads back
        self.recorder: Recorder | None = None  # while core.profiler records device time
        self.lock = threading.RLock()  # one thread records into the encoder at a time
        self.dispatch_count = 0  # every kernel launched on this device (tests count them)

    # -- pipelines ---------------------------------------------------------------------------------------------
    def _layout(self, writes: int, reads: int) -> tuple:
        entry = self._layouts.get((writes, reads))
        if entry is None:
            wgpu = _wgpu()
            kinds = [wgpu.BufferBindingType.storage] * writes
            kinds += [wgpu.BufferBindingType.read_only_storage] * (reads + 1)
            group = self.device.create_bind_group_layout(entries=[
                {"binding": k, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kind}}
                for k, kind in enumerate(kinds)])
            entry = self._layouts[(writes, reads)] = (group, self.device.create_pipeline_layout(
                bind_group_layouts=[group]))
        return entry

    def pipeline(self, key, render, writes: int, reads: int) -> tuple:
        """The compiled pipeline of ``key`` (``render()`` gives its WGSL the first time) and its group layout."""
        entry = self.pipelines.get(key)
        if entry is None:
            source = render()
            group, layout = self._layout(writes, reads)
            try:
                module = self.device.create_shader_module(code=source)
                pipeline = self.device.create_compute_pipeline(layout=layout,
                                                               compute={"module": module, "entry_point": "main"})
            except Exception as exc:  # a shader the device rejects is a bug of ours: show the source
                raise RuntimeError(f"webgpu: compiling kernel {key!r} failed: {exc}\n--- WGSL ---\n{source}") from None
            entry = self.pipelines[key] = (pipeline, group)
        return entry

    # -- dispatches ----------------------------------------------------------------------------------------------
    def _param_buffer(self, params: tuple):
        data = np.asarray(params or (0,), np.int64)
        if ((data < -2**31) | (data >= 2**32)).any():
            raise RuntimeError(f"webgpu: kernel parameter out of the 32-bit range: {params}")
        raw = data.astype(np.uint32 if (data >= 2**31).any() else np.int32).tobytes()
        buf = self._params.get(raw)
        if buf is None:
            if len(self._params) >= _CACHE_CAP:
                self._params.clear()
            usage = _wgpu().BufferUsage
            buf = self._params[raw] = self.device.create_buffer_with_data(data=raw, usage=usage.STORAGE)
        return buf

    def encoder(self):
        """The command encoder being recorded (created on demand)."""
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
        return self._encoder

    def dispatch(self, key, render, writes: list, reads: list, params: tuple, groups: tuple) -> None:
        """Run kernel ``key`` over ``groups`` work-groups, binding ``writes`` then ``reads`` (:class:`Buffer` s or
        GPUBuffers) and ``params`` (ints) as described in the module docstring."""
        with self.lock:
            pipeline, group = self.pipeline(key, render, len(writes), len(reads))
            written = {id(_gpu(b)) for b in writes}
            gpus = [_gpu(b) for b in writes]
            gpus += [self._copy_of(_gpu(b)) if id(_gpu(b)) in written else _gpu(b) for b in reads]
            gpus.append(self._param_buffer(params))
            bind = self.device.create_bind_group(layout=group, entries=[
                {"binding": k, "resource": {"buffer": g, "offset": 0, "size": g.size}} for k, g in enumerate(gpus)])
            recorder = self.recorder
            cpass = self.encoder().begin_compute_pass(
                timestamp_writes=None if recorder is None else recorder.writes(self, key))
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, bind)
            cpass.dispatch_workgroups(*groups)
            cpass.end()
            self.dispatch_count += 1
            self._pending += 1
            if self._pending >= _BATCH:
                self.flush()

    def _copy_of(self, gpu):
        usage = _wgpu().BufferUsage
        copy = self.device.create_buffer(size=gpu.size, usage=usage.STORAGE | usage.COPY_DST)
        self.encoder().copy_buffer_to_buffer(gpu, 0, copy, 0, gpu.size)
        return copy

    def flush(self) -> None:
        """Submit what was recorded."""
        with self.lock:
            encoder, self._encoder, self._pending = self._encoder, None, 0
            if encoder is not None:
                self.queue.submit([encoder.finish()])

    # -- host copies -------------------------------------------------------------------------------------------
    def read(self, buffer, offset: int, nbytes: int) -> bytes:
        """``nbytes`` bytes of ``buffer`` from byte ``offset`` (after everything recorded so far has run)."""
        start, end = offset & ~3, -(-(offset + nbytes) // 4) * 4
        self.flush()
        data = self.queue.read_buffer(_gpu(buffer), start, end - start)
        return bytes(data)[offset - start: offset - start + nbytes]

    def write(self, buffer, offset: int, data: bytes) -> None:
        """Write ``data`` into ``buffer`` at byte ``offset`` (after everything recorded so far has run)."""
        start, end = offset & ~3, -(-(offset + len(data)) // 4) * 4
        if (start, end) != (offset, offset + len(data)):  # keep the bytes around an unaligned range
            around = bytearray(self.read(buffer, start, end - start))
            around[offset - start: offset - start + len(data)] = data
            data = bytes(around)
        self.flush()
        if data:
            self.queue.write_buffer(_gpu(buffer), start, data)

    def synchronize(self) -> None:
        """Wait until everything recorded so far has run: reading back 4 bytes maps a buffer, which waits for the
        queue's earlier work (wgpu-py 0.32's ``on_submitted_work_done_sync`` fails against its wgpu-native)."""
        with self.lock:
            if self._fence is None:
                usage = _wgpu().BufferUsage
                self._fence = self.device.create_buffer(size=4, usage=usage.COPY_SRC | usage.COPY_DST)
            self.read(self._fence, 0, 4)


class Recorder:
    """Device time of the dispatches of one profile block: each compute pass writes a timestamp at its beginning
    and end into a query set (``_QUERIES`` per set; a full set is resolved into a buffer in the encoder); at the
    end the timestamps (nanoseconds) become :class:`DeviceEvent` s, moved onto the host's ``perf_counter`` clock by
    a marker pass at the start, taken to run when it was submitted (it runs no earlier): a span is never placed
    after the time it ran."""

    def __init__(self, slot: DeviceSlot):
        self.names: list = []  # kernel name per recorded dispatch
        self.resolved: list = []  # (buffer, count) of every full query set
        self.query_set, self.used = None, 0
        with slot.lock:  # the marker runs after the host time taken before it is submitted
            slot.synchronize()
            marker = self.writes(slot, None)
            slot.encoder().begin_compute_pass(timestamp_writes=marker).end()
            submitted = time.perf_counter_ns()
            slot.synchronize()
            self.offset_ns = submitted - int(self._read(slot)[0][1])
        self.names, self.resolved, self.query_set, self.used = [], [], None, 0

    def writes(self, slot: DeviceSlot, key) -> dict:
        """The ``timestamp_writes`` of the next compute pass (kernel ``key``)."""
        if self.used == _QUERIES:
            self._resolve(slot)
        if self.query_set is None:
            self.query_set = slot.device.create_query_set(type=_wgpu().QueryType.timestamp, count=_QUERIES)
        index, self.used = self.used, self.used + 2
        self.names.append(key[0] if isinstance(key, tuple) else str(key))
        return {"query_set": self.query_set, "beginning_of_pass_write_index": index,
                "end_of_pass_write_index": index + 1}

    def _resolve(self, slot: DeviceSlot) -> None:
        if self.used:
            usage = _wgpu().BufferUsage
            buf = slot.device.create_buffer(size=self.used * 8, usage=usage.QUERY_RESOLVE | usage.COPY_SRC)
            slot.encoder().resolve_query_set(self.query_set, 0, self.used, buf, 0)
            self.resolved.append((buf, self.used))
        self.query_set, self.used = None, 0

    def _read(self, slot: DeviceSlot) -> list:
        """(name, start ns, end ns) of every recorded dispatch."""
        self._resolve(slot)
        stamps = np.concatenate([np.frombuffer(slot.read(buf, 0, n * 8), np.uint64) for buf, n in self.resolved]
                                or [np.zeros(0, np.uint64)])
        return [(name, stamps[2 * k], stamps[2 * k + 1]) for k, name in enumerate(self.names)]

    def events(self, slot: DeviceSlot) -> list:
        with slot.lock:
            spans = self._read(slot)
        return [DeviceEvent(name, (int(start) + self.offset_ns) / 1000, max(int(end) - int(start), 0) / 1000)
                for name, start, end in spans]


def _gpu(buffer):
    return buffer.gpu if isinstance(buffer, Buffer) else buffer


def _covering(tensor) -> tuple:
    """(first element, element count) of the storage range a tensor's elements lie in (strides >= 0)."""
    return tensor._offset, 1 + sum((n - 1) * s for n, s in zip(tensor._shape, tensor._stride))


class WebGPURuntime(Runtime):
    """Buffers from a caching pool on one WebGPU adapter's device; kernels in ``core_webgpu.kernels``."""

    supports_float64 = False  # WebGPU has no f64 in WGSL: float64 tensors are refused with a clear error
    _profiling = False  # a core.profiler block records device time (start_profiling .. stop_profiling)

    def __init__(self):
        self._settings: dict = {}
        self._slot: DeviceSlot | None = None
        self._lock = threading.Lock()
        self._probe: tuple | None = None

    def configure(self, settings: dict) -> None:
        """Take the plugin's config table (``power_preference``); unknown keys are an error."""
        unknown = set(settings) - _SETTINGS
        if unknown:
            raise ValueError(f"[tool.core.plugin.webgpu]: unknown key(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(_SETTINGS))})")
        preference = settings.get("power_preference", "high-performance")
        if preference not in ("high-performance", "low-power"):
            raise ValueError(f"[tool.core.plugin.webgpu] power_preference: expected 'high-performance' or "
                             f"'low-power', got {preference!r}")
        with self._lock:
            if settings != self._settings:
                self._settings, self._slot, self._probe = dict(settings), None, None

    def _adapter(self):
        """The adapter to use, or raise RuntimeError saying why there is none."""
        wgpu = _wgpu()
        wanted = os.environ.get(ENV_ADAPTER, "").strip().lower()
        if wanted:
            adapters = wgpu.gpu.enumerate_adapters_sync()
            for adapter in adapters:
                if wanted in adapter.info["device"].lower() or wanted in adapter.info["vendor"].lower():
                    return adapter
            names = ", ".join(a.info["device"] for a in adapters) or "none"
            raise RuntimeError(f"{ENV_ADAPTER}={wanted!r}: no WebGPU adapter has that name (adapters: {names})")
        adapter = wgpu.gpu.request_adapter_sync(
            power_preference=self._settings.get("power_preference", "high-performance"))
        if adapter is None:
            raise RuntimeError("no WebGPU adapter: wgpu found no Metal, Vulkan or D3D12 driver")
        return adapter

    def is_available(self) -> tuple:
        if self._probe is None:
            try:
                _wgpu()
            except ImportError as exc:
                self._probe = (False, f"wgpu is not installed ({exc})")
            else:
                try:
                    self._adapter()
                    self._probe = (True, "")
                except Exception as exc:  # wgpu raises its own error types for a missing driver
                    self._probe = (False, str(exc).splitlines()[0])
        return self._probe

    @property
    def slot(self) -> DeviceSlot:
        slot = self._slot
        if slot is None:
            with self._lock:
                if self._slot is None:
                    self._slot = DeviceSlot(self._adapter())
                slot = self._slot
        return slot

    def device_name(self, index: int = 0) -> str:
        """The adapter, its vendor, backend and type, the features kernels use and the limits that bound them
        (``python -m core info`` lists it)."""
        slot = self.slot
        info, limits = slot.info, slot.limits
        features = ", ".join(f"{f} {'yes' if f in slot.features else 'no'}" for f in _FEATURES)
        return (f"{info['device']} (vendor {info['vendor'] or info['vendor_id']}; {info['backend_type']}, "
                f"{info['adapter_type']}; {features}; max storage binding "
                f"{_mib(limits['max-storage-buffer-binding-size'])}, max buffer {_mib(limits['max-buffer-size'])}, "
                f"work-group <= {limits['max-compute-invocations-per-workgroup']} invocations and "
                f"{limits['max-compute-workgroup-storage-size'] // 1024} KiB)")

    def allocate(self, nbytes: int, dev):
        return self.slot.pool.allocate(nbytes)

    def from_host(self, array: np.ndarray, dev):
        buf = self.slot.pool.allocate(array.nbytes)
        if array.nbytes:
            self.slot.write(buf, 0, np.ascontiguousarray(array).tobytes())
        return buf

    def to_host(self, tensor) -> np.ndarray:
        d = tensor.dtype.numpy
        if 0 in tensor._shape:
            return np.empty(tensor._shape, d)
        start, extent = _covering(tensor)
        host = np.frombuffer(self.slot.read(tensor._storage.data, start * d.itemsize, extent * d.itemsize), d)
        if tensor.is_contiguous():
            return host.reshape(tensor._shape).copy()
        view = np.lib.stride_tricks.as_strided(host, tensor._shape, tuple(s * d.itemsize for s in tensor._stride))
        return np.array(view)

    def write_strided(self, tensor, values) -> None:
        """Write host ``values`` (broadcast to the tensor's shape) into the tensor's elements, through its strides."""
        if 0 in tensor._shape:
            return
        d = tensor.dtype.numpy
        values = np.broadcast_to(np.asarray(values).astype(d), tensor._shape)
        start, extent = _covering(tensor)
        if tensor.is_contiguous():
            host = np.ascontiguousarray(values).reshape(-1)
        else:  # read-modify-write the covering range: the elements between the tensor's own keep their values
            host = np.frombuffer(self.slot.read(tensor._storage.data, start * d.itemsize, extent * d.itemsize),
                                 d).copy()
            view = np.lib.stride_tricks.as_strided(host, tensor._shape, tuple(s * d.itemsize for s in tensor._stride))
            view[...] = values
        self.slot.write(tensor._storage.data, start * d.itemsize, host.tobytes())

    def data_ptr(self, storage) -> int:
        """The buffer's virtual address (see :class:`Pool`)."""
        buffer = storage.data
        return buffer.pool.owned[buffer.gpu] if isinstance(buffer, Buffer) and buffer.pool is not None else 0

    def synchronize(self, dev=None) -> None:
        if self._slot is not None:
            self._slot.synchronize()

    def empty_cache(self) -> None:
        if self._slot is not None:
            self._slot.flush()
            self._slot.pool.free_held()

    def memory_allocated(self, dev=None) -> int:
        """Bytes in buffers held by live tensors."""
        return self.slot.pool.active_bytes

    def memory_reserved(self, dev=None) -> int:
        """Bytes the pool holds from wgpu (active + cached)."""
        pool = self.slot.pool
        return pool.active_bytes + pool.held_bytes

    def max_memory_allocated(self, dev=None) -> int:
        return self.slot.pool.peak_active

    def max_memory_reserved(self, dev=None) -> int:
        return self.slot.pool.peak_reserved

    def start_profiling(self) -> bool:
        """Record each dispatch's device time from timestamp queries (adapters with ``timestamp-query``; one
        profile block at a time)."""
        slot = self.slot
        with self._lock:
            if self._profiling or "timestamp-query" not in slot.features:
                return False
            self._profiling = True
        slot.recorder = Recorder(slot)
        return True

    def stop_profiling(self) -> list:
        """The dispatches' :class:`DeviceEvent` s since :meth:`start_profiling` (waits for them)."""
        slot, self._profiling = self.slot, False
        recorder, slot.recorder = slot.recorder, None
        return recorder.events(slot) if recorder is not None else []

    def reset_peak_memory_stats(self, dev=None) -> None:
        pool = self.slot.pool
        pool.peak_active, pool.peak_reserved = pool.active_bytes, pool.active_bytes + pool.held_bytes

    def supports_fusion(self, dev) -> bool:
        """core.jit fuses elementwise chains (and trailing reductions) into WGSL kernels (see jit.py)."""
        return True

    def compile_fused(self, kernel, dev):
        """A launcher of ``kernel``; pipelines are built on first launch per rank bucket."""
        from .jit import FusedLauncher

        return FusedLauncher(kernel)


RUNTIME = WebGPURuntime()
