"""Dispatch keys and key sets.

A key set is a Python int used as a bit set: higher bit = higher priority, so
the key that runs first is ``mask.bit_length() - 1``. Functionality keys sit at
fixed high bits; backend keys are allocated at run time, one per device type,
below them (``CPU`` is bit 0, ``Meta`` bit 1), so any number of third-party
devices can coexist.
"""

from __future__ import annotations

import threading

__all__ = ["DispatchKey", "backend_key", "key_for_bit", "tls", "FUNCTIONALITY_KEYS"]


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


# Functionality keys, highest priority first (Tracer > Profiler > Autocast > Autograd).
Tracer = _make("Tracer", 100, False)
Profiler = _make("Profiler", 99, False)
Autocast = _make("Autocast", 98, False)
Autograd = _make("Autograd", 97, False)
FUNCTIONALITY_KEYS = (Tracer, Profiler, Autocast, Autograd)
# CPU is the lowest backend key so that, when 0-d CPU tensors join tensors of another device (allowed, as in
# PyTorch), the other device's kernel runs. Meta comes next; other device types are allocated above them.
CPU = _make("CPU", 0, True)
Meta = _make("Meta", 1, True)
BACKEND_KEYS_MASK = (1 << (_MAX_BACKEND_BIT + 1)) - 1


def backend_key(device_type: str) -> DispatchKey:
    """The backend key of a device type, allocated on first request (``cpu`` -> ``CPU``)."""
    name = "Meta" if device_type == "meta" else device_type.upper() if device_type in ("cpu", "cuda") \
        else device_type.capitalize() if device_type != "opencl" else "OpenCL"
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


def keys_in(mask: int) -> list[DispatchKey]:
    """The keys of a key set, highest priority first."""
    keys = []
    while mask:
        bit = mask.bit_length() - 1
        keys.append(_BY_BIT[bit])
        mask &= ~(1 << bit)
    return keys


class _LocalKeys(threading.local):
    """Thread-local included / excluded key sets (tracing, profiling, no_grad)."""

    def __init__(self):
        self.include = 0
        self.exclude = 0


tls = _LocalKeys()
