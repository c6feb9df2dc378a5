"""Dispatch keys and key sets.

A key set is a Python int used as a bit set: higher bit = higher priority, so
the key that runs first is ``mask.bit_length() - 1``. Functionality keys sit at
fixed high bits; backend keys are allocated at run time, one per device type,
below them (``CPU`` is bit 0, ``Meta`` bit 1), so any number of third-party
devices can coexist.
"""

from __future__ import annotations

import threading

__all__ = ["DispatchKey", "backend_key", "key_for_bit", "key_named", "tls", "FUNCTIONALITY_KEYS", "is_grad_enabled",
           "set_grad_mode", "grad_disabled"]


class DispatchKey:
    """One dispatch key: a name and the bit that stands for it in key sets."""

    __slots__ = ("name", "bit", "mask", "is_backend")

    def __init__(self, name: str, bit: int, is_backend: bool):
        self.name = name
        self.bit = bit
        self.mask = 1 << bit
        self.is_backend = is_backend

    def __repr__(self) -> str:
        return f"DispatchKey.{self.name}"


_BY_BIT: dict[int, DispatchKey] = {}
_BY_NAME: dict[str, DispatchKey] = {}
_MAX_BACKEND_BIT = 90


def _make(name: str, bit: int, is_backend: bool) -> DispatchKey:
    key = DispatchKey(name, bit, is_backend)
    _BY_BIT[bit] = key
    _BY_NAME[name] = key
    setattr(DispatchKey, name, key)
    return key


# Functionality keys, highest priority first (Batched > Quantized > Sparse > Tracer > Profiler > Autocast > Autograd).
# Sparse is the layout key of sparse tensors: its kernels are composites over the sparse tensor's dense components,
# which then dispatch below it as usual (recorded by Autograd, traced by Tracer); ops with no Sparse kernel raise.
# Quantized is the key of quantized tensors (core/quantized.py): no op has a kernel for it, so any op given a
# quantized operand raises, naming the op; the quantization functions work on the tensor's components instead.
# Batched is the key of core.func.vmap's batched tensors (core/func/_batched.py): its one kernel, for every op, applies
# a batching rule to the whole batch (or loops over the samples) before anything else sees the call.
Batched = _make("Batched", 103, False)
Quantized = _make("Quantized", 102, False)
Sparse = _make("Sparse", 101, False)
Tracer = _make("Tracer", 100, False)
Profiler = _make("Profiler", 99, False)
Autocast = _make("Autocast", 98, False)
Autograd = _make("Autograd", 97, False)
# InferenceTensor is the key of tensors allocated inside inference_mode (their Storage's key carries it). It sits
# below Autograd, like PyTorch's ADInplaceOrView: outside inference_mode its kernel refuses in-place writes into
# such tensors; inside, the mode excludes it, so inference tensors dispatch as plain ones. Normal tensors never
# carry it: the hot path pays nothing for it.
InferenceTensor = _make("InferenceTensor", 96, False)
# Capture is the key of whole-step capture (core/dispatch/capture.py): while a recording runs, its kernel records
# every call that reaches a backend (below Autograd: forward, backward and optimizer kernels alike).
Capture = _make("Capture", 95, False)
FUNCTIONALITY_KEYS = (Batched, Quantized, Sparse, Tracer, Profiler, Autocast, Autograd, InferenceTensor, Capture)
# CPU is the lowest backend key so that, when 0-d CPU tensors join tensors of another device (allowed, as in
# PyTorch), the other device's kernel runs. Meta comes next; other device types are allocated above them.
CPU = _make("CPU", 0, True)
Meta = _make("Meta", 1, True)
BACKEND_KEYS_MASK = (1 << (_MAX_BACKEND_BIT + 1)) - 1


_DISPLAY_NAMES = {"opencl": "OpenCL", "webgpu": "WebGPU"}  # key names spelt as their APIs are


def backend_key(device_type: str) -> DispatchKey:
    """The backend key of a device type, allocated on first request (``cpu`` -> ``CPU``)."""
    name = "Meta" if device_type == "meta" else device_type.upper() if device_type in ("cpu", "cuda") \
        else _DISPLAY_NAMES.get(device_type) or device_type.capitalize()
    key = _BY_NAME.get(name)
    if key is not None:
        return key
    bit = max((k.bit for k in _BY_BIT.values() if k.is_backend), default=0) + 1
    if bit > _MAX_BACKEND_BIT:
        raise RuntimeError(f"too many device types registered; cannot allocate a dispatch key for {device_type!r}")
    return _make(name, bit, True)


def key_for_bit(bit: int) -> DispatchKey:
    """The key that owns ``bit``."""
    return _BY_BIT[bit]


def key_named(name: str) -> DispatchKey | None:
    """The key called ``name`` (``"CPU"``, ``"Autograd"``), or None if no key has that name yet."""
    return _BY_NAME.get(name)


def keys_in(mask: int) -> list[DispatchKey]:
    """The keys of a key set, highest priority first."""
    keys = []
    while mask:
        bit = mask.bit_length() - 1
        keys.append(_BY_BIT[bit])
        mask &= ~(1 << bit)
    return keys


class _LocalKeys(threading.local):
    """Thread-local included / excluded key sets (tracing, profiling, no_grad), whether an ``inference_mode``
    block is active (new storages are marked with it), the multithreading flag of
    ``torch.autograd.set_multithreading_enabled`` (and of view replay and the gradient layout policy) and the
    whole-step capture recording."""

    def __init__(self):
        self.include = 0
        self.exclude = 0
        self.inference = False
        self.multithreading = True
        self.view_replay = False
        self.grad_layout_policy = True
        self.recording = None  # the whole-step capture recording in this thread (core/dispatch/capture.py)
        self.plans = None  # while a recording runs a kernel: the C calls it notes (capture.note_c_call)


tls = _LocalKeys()


# Grad mode is a dispatch-key fact: recording is on exactly when the Autograd key is not in this thread's
# exclude set. Ops and the dispatcher read it here; core.autograd's no_grad / enable_grad / set_grad_enabled /
# inference_mode set it through set_grad_mode.
_AUTOGRAD_MASK = Autograd.mask


def is_grad_enabled() -> bool:
    """Whether ops record the autograd graph in this thread (``torch.is_grad_enabled``)."""
    return not tls.exclude & _AUTOGRAD_MASK


def set_grad_mode(enabled: bool) -> None:
    """Turn recording on or off in this thread: take the Autograd key out of, or put it into, the exclude set."""
    if enabled:
        tls.exclude &= ~_AUTOGRAD_MASK
    else:
        tls.exclude |= _AUTOGRAD_MASK


class grad_disabled:
    """Block in which ops record nothing, for ops that compute part of their result without a graph (the
    dispatch-layer form of ``core.no_grad``, which sits above ops)."""

    __slots__ = ("_previous",)

    def __enter__(self):
        self._previous = tls.exclude & _AUTOGRAD_MASK
        tls.exclude |= _AUTOGRAD_MASK
        return self

    def __exit__(self, *exc):
        tls.exclude = (tls.exclude & ~_AUTOGRAD_MASK) | self._previous
        return False
