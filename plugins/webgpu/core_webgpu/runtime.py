"""The webgpu runtime: one adapter's device, a caching buffer pool, host copies, compute dispatches.

``webgpu:0`` is the first adapter whose name contains ``CORE_WEBGPU_ADAPTER`` (any case) when that is set, else the
one wgpu picks (Metal, Vulkan, D3D12; Mesa's software llvmpipe) for the config's ``power_preference``. A tensor's
storage is a pooled :class:`Buffer`: its bytes as on the host, in a ``GPUBuffer`` of a multiple of 4 bytes.

Kernels (:meth:`DeviceSlot.dispatch`): a WGSL compute shader, entry point ``main``, its bindings in group 0 in this
order: the buffers it writes (``var<storage, read_write>``), those it reads (``var<storage, read>``), last
``var<storage, read> p: array<i32>``, the integer parameters (shapes, strides, offsets in elements as buffers are
bound whole; floats as ``bitcast<f32>``). Dispatches are recorded into one encoder, submitted at the next host copy,
synchronize or every ``_BATCH`` dispatches; a buffer both written and read is read from a copy (WebGPU's rule).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from functools import partial, partialmethod

import numpy as np

from core.backends.api import DeviceEvent, Runtime, read_strided as staged_read, write_strided as staged_write

__all__ = ["WebGPURuntime", "DeviceSlot", "Buffer", "Pool", "RUNTIME", "ENV_ADAPTER", "WORKGROUP", "grid"]

ENV_ADAPTER = "CORE_WEBGPU_ADAPTER"
WORKGROUP = 64  # invocations per work-group of the 1-d kernels (see grid)
_MAX_GROUPS = 65535  # work-groups per grid dimension (WebGPU's default limit)
_BATCH = 256  # dispatches recorded before the encoder is submitted
_QUERIES = 2 * _BATCH  # timestamps per query set while profiling (two per dispatch)
_CACHE_CAP = 4096  # parameter buffers kept per device (shapes and strides recur from step to step)
_FEATURES = ("shader-f16", "shader-int64")  # optional features the kernels use: WGSL f16, i64 (wgpu-native)


def _wgpu():
    # wgpu-native (Vulkan's loader) warns on stderr when XDG_RUNTIME_DIR is unset; give it a private directory,
    # one per user that every process reuses (a new one per process was left behind in /tmp at every exit)
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime_dir = os.path.join(tempfile.gettempdir(), f"core-webgpu-{os.getuid()}")
        os.makedirs(runtime_dir, mode=0o700, exist_ok=True)
        if os.stat(runtime_dir).st_uid != os.getuid():  # another user's: fall back to a fresh private one
            runtime_dir = tempfile.mkdtemp(prefix="core-webgpu-")
        os.environ["XDG_RUNTIME_DIR"] = runtime_dir
    import wgpu

    return wgpu


def grid(n: int, size: int = WORKGROUP) -> tuple:
    """Work-groups for ``n`` invocations of ``size``: ``(x, y, 1)`` with ``x <= 65535``. A shader's flat index is
    ``(wid.y * nwg.x + wid.x) * size + lid.x`` (``workgroup_id``, ``num_workgroups``, ``local_invocation_index``)."""
    groups = max(1, -(-n // size))
    y = -(-groups // _MAX_GROUPS)
    return -(-groups // y), y, 1


def _size_class(nbytes: int) -> int:
    """Bytes actually allocated for ``nbytes``: a multiple of 4, rounded up to 1/8 of its power of two (>= 16)."""
    n = max(16, nbytes)
    step = 1 << max(n.bit_length() - 4, 2)
    return -(-n // step) * step


class Pool:
    """Freed GPUBuffers kept by size class and lent again. It owns every GPUBuffer it made (``owned``), so wgpu's
    finalizer cannot release one that a garbage-collected :class:`Buffer` is handing back, and gives each a virtual
    address for ``Tensor.data_ptr()`` (WebGPU has none): never reused, 256-byte aligned, ranges apart."""

    def __init__(self, device):
        self.device, self.max_size = device, device.limits["max-buffer-size"]
        self.owned, self.held, self._next_address = {}, {}, 1 << 32  # live GPUBuffer -> address; size -> [held]
        self.active_bytes = self.reserved_bytes = self.peak_active = self.peak_reserved = 0  # reserved: active + held
        self.lock = threading.RLock()  # reentrant: a collection while it is held may release Buffers

    def allocate(self, nbytes: int) -> "Buffer":
        size = _size_class(nbytes)
        if size > self.max_size:  # the largest buffers are not rounded up to a class
            size = max(16, -(-nbytes // 4) * 4)
        if size > self.max_size:  # core reports it as an OutOfMemoryError naming the op, device and pool
            raise MemoryError(f"webgpu: {nbytes} bytes exceed the adapter's max-buffer-size ({self.max_size})")
        with self.lock:
            free = self.held.get(size, [])
            while free and getattr(free[-1], "_internal", None) is None:  # finalised with its Buffer in one
                self.reserved_bytes -= size  # unreachable cycle (a traceback's frames): dropped
                del self.owned[free.pop()]
            if free:
                gpu = free.pop()
            else:
                usage = _wgpu().BufferUsage
                gpu = self.device.create_buffer(size=size, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
                self.owned[gpu] = self._next_address
                self._next_address += -(-size // 256) * 256 + 256
                self.reserved_bytes += size
            self.active_bytes += size
            self.peak_active = max(self.peak_active, self.active_bytes)
            self.peak_reserved = max(self.peak_reserved, self.reserved_bytes)
        return Buffer(gpu, size, self)

    def release(self, gpu, size: int) -> None:
        with self.lock:
            self.active_bytes -= size
            self.held.setdefault(size, []).append(gpu)

    def free_held(self) -> None:
        with self.lock:
            held = [gpu for buffers in self.held.values() for gpu in buffers]
            self.held, self.reserved_bytes = {}, self.active_bytes
            for gpu in held:
                del self.owned[gpu]
                gpu.destroy()


class Buffer:
    """A tensor's storage: a pooled ``GPUBuffer`` (``gpu``) of ``size`` bytes, back to the pool with its last tensor."""

    __slots__ = ("gpu", "size", "pool")

    def __init__(self, gpu, size: int, pool: Pool):
        self.gpu, self.size, self.pool = gpu, size, pool

    def __del__(self):  # runs once (PEP 442), also for a Buffer the garbage collector frees
        self.pool.release(self.gpu, self.size)


class DeviceSlot:
    """The selected adapter's device: its queue, buffer pool, compiled pipelines and the encoder being recorded."""

    def __init__(self, adapter):
        self.info = dict(adapter.info)
        self.features = frozenset(f for f in (*_FEATURES, "timestamp-query") if f in adapter.features)
        features, limits = sorted(self.features), adapter.limits  # every limit raised to what the adapter allows
        self.device = adapter.request_device_sync(required_features=features, required_limits=limits)
        self.f16, self.int64 = "shader-f16" in self.features, "shader-int64" in self.features
        self.limits, self.queue, self.pool = dict(self.device.limits), self.device.queue, Pool(self.device)
        self.pipelines, self._params = {}, {}  # key -> (pipeline, bind group layout); parameter bytes -> GPUBuffer
        self._encoder, self._pending, self.dispatch_count = None, 0, 0  # the count: every kernel launched (for tests)
        self.recorder: Recorder | None = None  # while core.profiler records device time
        self.lock = threading.RLock()  # one thread records into the encoder at a time

    def pipeline(self, key, render, writes: int, reads: int) -> tuple:
        """The compiled pipeline of ``key`` (``render()`` gives its WGSL the first time) and its group layout."""
        if key in self.pipelines:
            return self.pipelines[key]
        source, kinds = render(), ["storage"] * writes + ["read-only-storage"] * (reads + 1)
        group = self.device.create_bind_group_layout(entries=[
            {"binding": k, "visibility": _wgpu().ShaderStage.COMPUTE, "buffer": {"type": kind}}
            for k, kind in enumerate(kinds)])
        try:
            pipeline = self.device.create_compute_pipeline(
                layout=self.device.create_pipeline_layout(bind_group_layouts=[group]),
                compute={"module": self.device.create_shader_module(code=source), "entry_point": "main"})
        except Exception as exc:  # a shader the device rejects is a bug of ours: show the source
            raise RuntimeError(f"webgpu: compiling kernel {key!r} failed: {exc}\n--- WGSL ---\n{source}") from None
        return self.pipelines.setdefault(key, (pipeline, group))

    def _param_buffer(self, params: tuple):
        data = np.asarray(params or (0,), np.int64)
        if ((data < -2**31) | (data >= 2**32)).any():
            raise RuntimeError(f"webgpu: kernel parameter out of the 32-bit range: {params}")
        raw = data.astype(np.uint32 if (data >= 2**31).any() else np.int32).tobytes()
        if raw not in self._params:
            if len(self._params) >= _CACHE_CAP:
                self._params.clear()
            usage = _wgpu().BufferUsage
            self._params[raw] = self.device.create_buffer_with_data(data=raw, usage=usage.STORAGE | usage.COPY_SRC)
        return self._params[raw]

    def encoder(self):
        """The command encoder being recorded (created on demand)."""
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
        return self._encoder

    def dispatch(self, key, render, writes: list, reads: list, params: tuple, groups: tuple) -> None:
        """Run kernel ``key`` over ``groups`` work-groups, bound as the module docstring says (Buffers, GPUBuffers)."""
        with self.lock:
            pipeline, group = self.pipeline(key, render, len(writes), len(reads))
            gpus = [getattr(b, "gpu", b) for b in writes]
            for gpu in (getattr(b, "gpu", b) for b in reads):
                if any(gpu is g for g in gpus[:len(writes)]):  # bound writable and readable at once: read a copy
                    usage = _wgpu().BufferUsage
                    source, gpu = gpu, self.device.create_buffer(size=gpu.size, usage=usage.STORAGE | usage.COPY_DST)
                    self.encoder().copy_buffer_to_buffer(source, 0, gpu, 0, gpu.size)
                gpus.append(gpu)
            gpus.append(self._param_buffer(params))
            bind = self.device.create_bind_group(layout=group, entries=[
                {"binding": k, "resource": {"buffer": g, "offset": 0, "size": g.size}} for k, g in enumerate(gpus)])
            cpass = self.encoder().begin_compute_pass(
                timestamp_writes=None if self.recorder is None else self.recorder.writes(self, key))
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, bind)
            cpass.dispatch_workgroups(*groups)
            cpass.end()
            self.dispatch_count, self._pending = self.dispatch_count + 1, self._pending + 1
            if self._pending >= _BATCH:
                self.flush()

    def flush(self) -> None:
        """Submit what was recorded."""
        with self.lock:
            encoder, self._encoder, self._pending = self._encoder, None, 0
            if encoder is not None:
                self.queue.submit([encoder.finish()])

    def read(self, buffer, offset: int, nbytes: int) -> bytes:
        """``nbytes`` bytes of ``buffer`` from byte ``offset`` (after everything recorded so far has run)."""
        start, end, buffer = offset & ~3, -(-(offset + nbytes) // 4) * 4, getattr(buffer, "gpu", buffer)
        self.flush()
        return bytes(self.queue.read_buffer(buffer, start, end - start))[offset - start: offset - start + nbytes]

    def write(self, buffer, offset: int, data: bytes) -> None:
        """Write ``data`` into ``buffer`` at byte ``offset`` (after everything recorded so far has run)."""
        start, end = offset & ~3, -(-(offset + len(data)) // 4) * 4
        if (start, end) != (offset, offset + len(data)):  # keep the bytes around an unaligned range
            around = self.read(buffer, start, end - start)
            data = around[:offset - start] + bytes(data) + around[offset - start + len(data):]
        self.flush()
        if data:
            self.queue.write_buffer(getattr(buffer, "gpu", buffer), start, data)

    def synchronize(self) -> None:
        """Wait for everything recorded: a read-back waits for the queue (wgpu-py 0.32's work-done callback fails)."""
        self.read(self._param_buffer(()), 0, 4)


def _name(key) -> str:
    """A kernel's name in the profiler: the leading words of its pipeline key (``ew_add``, ``row_softmax``)."""
    while isinstance(key, tuple) and key and isinstance(key[0], tuple):
        key = key[0]
    return "_".join(w for w in map(str, key[:2] if isinstance(key, tuple) else (key,)) if w.isidentifier()) or "kernel"


class Recorder:
    """Device time of a profile block's dispatches: a timestamp at each compute pass's beginning and end (``_QUERIES``
    per query set); the first, a marker pass, is taken to run when it was submitted (it runs no earlier), which puts
    them on the host's ``perf_counter`` clock and never after the time they ran."""

    def __init__(self, slot: DeviceSlot):
        self.names, self.resolved, self.query_set, self.used = [], [], None, 0  # resolved: (buffer, count) per set
        with slot.lock:
            slot.synchronize()
            slot.encoder().begin_compute_pass(timestamp_writes=self.writes(slot, None)).end()
            self.submitted_ns = time.perf_counter_ns()
            slot.flush()

    def writes(self, slot: DeviceSlot, key) -> dict:
        """The ``timestamp_writes`` of the next compute pass (kernel ``key``)."""
        if self.used == _QUERIES:
            self._resolve(slot)
        if self.query_set is None:
            self.query_set = slot.device.create_query_set(type=_wgpu().QueryType.timestamp, count=_QUERIES)
        index, self.used = self.used, self.used + 2
        self.names.append(_name(key))
        return dict(query_set=self.query_set, beginning_of_pass_write_index=index, end_of_pass_write_index=index + 1)

    def _resolve(self, slot: DeviceSlot) -> None:  # (the marker's timestamps make a set never empty here)
        usage = _wgpu().BufferUsage
        buf = slot.device.create_buffer(size=self.used * 8, usage=usage.QUERY_RESOLVE | usage.COPY_SRC)
        slot.encoder().resolve_query_set(self.query_set, 0, self.used, buf, 0)
        self.resolved.append((buf, self.used))
        self.query_set, self.used = None, 0

    def events(self, slot: DeviceSlot) -> list:
        """The recorded dispatches (the marker's pass aside), after they ran."""
        with slot.lock:
            self._resolve(slot)
            stamps = [np.frombuffer(slot.read(buf, 0, n * 8), np.uint64) for buf, n in self.resolved]
        (marker, _), *spans = np.concatenate(stamps).astype(np.int64).reshape(-1, 2).tolist()
        return [DeviceEvent(name, (start - marker + self.submitted_ns) / 1000, max(end - start, 0) / 1000)
                for name, (start, end) in zip(self.names[1:], spans)]


class WebGPURuntime(Runtime):
    """Buffers from a caching pool on one WebGPU adapter's device; kernels in ``core_webgpu.kernels``."""

    supports_float64 = False  # WebGPU has no f64 in WGSL: float64 tensors are refused with a clear error

    def __init__(self):
        self._settings, self._slot, self._probe, self._lock = {}, None, None, threading.Lock()  # probe: is_available

    def configure(self, settings: dict) -> None:
        """Take the plugin's config table (``power_preference``); unknown keys are an error."""
        unknown = ", ".join(sorted(set(settings) - {"power_preference"}))
        if unknown:
            raise ValueError(f"[tool.core.plugin.webgpu]: unknown key(s) {unknown} (known: power_preference)")
        preference = settings.get("power_preference", "high-performance")
        if preference not in ("high-performance", "low-power"):
            raise ValueError(f"[tool.core.plugin.webgpu] power_preference: expected 'high-performance' or "
                             f"'low-power', got {preference!r}")
        with self._lock:
            if settings != self._settings:
                self._settings, self._slot, self._probe = dict(settings), None, None

    def _adapter(self):
        """The adapter to use, or raise RuntimeError saying why there is none.

        OpenGL adapters are passed over: wgpu's OpenGL backend (Mesa's GL where no Vulkan driver is installed) has
        no shader-int64 or shader-f16, and its integer ``%`` follows GLSL, which leaves negative operands undefined
        (remainder gave wrong results there)."""
        wgpu = _wgpu()
        wanted = os.environ.get(ENV_ADAPTER, "").strip().lower()
        if wanted:
            adapters = wgpu.gpu.enumerate_adapters_sync()
            for adapter in adapters:
                info = adapter.info
                if any(wanted in info[field].lower() for field in ("device", "vendor", "backend_type")) \
                        and info["backend_type"] != "OpenGL":
                    return adapter
            names = ", ".join(f"{a.info['device']} ({a.info['backend_type']})" for a in adapters) or "none"
            raise RuntimeError(f"{ENV_ADAPTER}={wanted!r}: no Metal, Vulkan or D3D12 WebGPU adapter has that name "
                               f"(adapters: {names})")
        preference = self._settings.get("power_preference", "high-performance")
        adapter = wgpu.gpu.request_adapter_sync(power_preference=preference)
        if adapter is not None and adapter.info["backend_type"] == "OpenGL":
            adapter = next((a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] != "OpenGL"),
                           None)
            if adapter is None:
                raise RuntimeError("no WebGPU adapter: wgpu found only OpenGL (no shader-int64, GLSL's integer "
                                   "remainder), no Metal, Vulkan or D3D12 driver")
        if adapter is None:
            raise RuntimeError("no WebGPU adapter: wgpu found no Metal, Vulkan or D3D12 driver")
        return adapter

    def is_available(self) -> tuple:
        if self._probe is None:
            try:
                self._adapter()
                self._probe = (True, "")
            except ImportError as exc:
                self._probe = (False, f"wgpu is not installed ({exc})")
            except Exception as exc:  # wgpu raises its own error types for a missing driver
                self._probe = (False, str(exc).splitlines()[0])
        return self._probe

    def lacks(self, feature: str) -> str:
        """Why work needing the optional WebGPU ``feature`` ("shader-f16" or "shader-int64") leaves the device
        (its kernels decline, the CPU fallback runs it), or "" where the device has the feature."""
        if feature not in _FEATURES:
            raise ValueError(f"webgpu: {feature!r} is not an optional feature the kernels use ({', '.join(_FEATURES)})")
        available, why = self.is_available()
        if not available:
            return why
        slot = self.slot
        if feature in slot.features:
            return ""
        return f"the WebGPU adapter {slot.info['device']} ({slot.info['backend_type']}) has no {feature}"

    @property
    def slot(self) -> DeviceSlot:
        """The device, opened on first use (later calls take no lock: kernels' render() asks it under the slot's)."""
        slot = self._slot
        if slot is None:
            with self._lock:
                slot = self._slot = self._slot or DeviceSlot(self._adapter())
        return slot

    def device_name(self, index: int = 0) -> str:
        """The adapter, vendor, backend, type, the features kernels use and their limits (``python -m core info``)."""
        info, limits, features = self.slot.info, self.slot.limits, self.slot.features
        features = ", ".join(f"{f} {'yes' if f in features else 'no'}" for f in _FEATURES)
        binding, largest = (limits[k] / 2**20 for k in ("max-storage-buffer-binding-size", "max-buffer-size"))
        return (f"{info['device']} (vendor {info['vendor'] or info['vendor_id']}; {info['backend_type']}, "
                f"{info['adapter_type']}; {features}; max storage binding {binding:g} MiB, max buffer {largest:g} MiB, "
                f"work-group <= {limits['max-compute-invocations-per-workgroup']} invocations and "
                f"{limits['max-compute-workgroup-storage-size'] // 1024} KiB)")

    def allocate(self, nbytes: int, dev):
        return self.slot.pool.allocate(nbytes)

    def from_host(self, array: np.ndarray, dev):
        buf = self.slot.pool.allocate(array.nbytes)
        self.slot.write(buf, 0, np.ascontiguousarray(array).tobytes())
        return buf

    def to_host(self, tensor) -> np.ndarray:
        return staged_read(tensor, partial(self.slot.read, tensor._storage.data))

    def write_strided(self, tensor, values) -> None:
        """Write host ``values`` (broadcast to the tensor's shape) into the tensor's elements, through its strides."""
        buffer = tensor._storage.data
        staged_write(tensor, values, partial(self.slot.read, buffer), partial(self.slot.write, buffer))

    def data_ptr(self, storage) -> int:
        """The buffer's virtual address (see :class:`Pool`)."""
        return storage.data.pool.owned[storage.data.gpu] if isinstance(storage.data, Buffer) else 0

    def synchronize(self, dev=None) -> None:
        if self._slot is not None:
            self._slot.synchronize()

    def empty_cache(self) -> None:
        if self._slot is not None:
            self._slot.flush()
            self._slot.pool.free_held()

    def _pool_stat(self, attribute: str, dev=None) -> int:
        return getattr(self.slot.pool, attribute)

    memory_allocated = partialmethod(_pool_stat, "active_bytes")  # bytes in buffers held by live tensors
    memory_reserved = partialmethod(_pool_stat, "reserved_bytes")  # bytes the pool holds from wgpu (+ cached)
    max_memory_allocated = partialmethod(_pool_stat, "peak_active")  # peaks since the start or the last reset
    max_memory_reserved = partialmethod(_pool_stat, "peak_reserved")

    def reset_peak_memory_stats(self, dev=None) -> None:
        pool = self.slot.pool
        pool.peak_active, pool.peak_reserved = pool.active_bytes, pool.reserved_bytes

    def start_profiling(self) -> bool:
        """Record dispatches' device time (adapters with ``timestamp-query``; one profile block at a time)."""
        slot = self.slot
        with self._lock:
            if slot.recorder is not None or "timestamp-query" not in slot.features:
                return False
            slot.recorder = Recorder(slot)
        return True

    def stop_profiling(self) -> list:
        """The dispatches' :class:`DeviceEvent` s since :meth:`start_profiling` (waits for them)."""
        recorder, self.slot.recorder = self.slot.recorder, None
        return [] if recorder is None else recorder.events(self.slot)

    def supports_fusion(self, dev) -> bool:
        """core.jit fuses elementwise chains (and trailing reductions) into WGSL kernels (see jit.py)."""
        return True

    def compile_fused(self, kernel, dev):
        """A launcher of ``kernel``; pipelines are built on first launch per rank bucket."""
        from .jit import FusedLauncher

        return FusedLauncher(kernel)


RUNTIME = WebGPURuntime()
