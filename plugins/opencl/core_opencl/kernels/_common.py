"""Helpers shared by the kernel families: output tensors, layouts (broadcast, coalesced, rank buckets), the CPU
fallback for dtypes the kernels do not cover."""

from __future__ import annotations

import warnings

from core.backends.api import backend_key, get_operator, make_tensor

from ..renderer import LOCAL_SIZE, OpenCLRenderer
from ..runtime import RUNTIME

__all__ = ["RENDERER", "KERNEL_DTYPES", "is_tensor", "slot_of", "new_tensor", "numel", "broadcast_strides",
           "coalesce", "rank_bucket", "padded", "launch_1d", "cpu_fallback", "kernel_dtypes_ok"]

RENDERER = OpenCLRenderer()
#: dtypes the generated kernels handle; float16/bfloat16 (no cl_khr_fp16 on PoCL) go through the CPU fallback
KERNEL_DTYPES = frozenset({"float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"})
#: kernels are rendered for a few ranks only (shapes are padded with size-1 dims): fewer kernels to compile
RANK_BUCKETS = (1, 2, 4, 8)


def is_tensor(x) -> bool:
    return hasattr(x, "_storage")


def slot_of(t):
    """The DeviceSlot a tensor lives on."""
    return RUNTIME.slot(t._storage.device.index)


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def new_tensor(shape: tuple, dtype, dev):
    """A fresh contiguous tensor on ``dev`` from the device's memory pool."""
    nbytes = dtype.itemsize * numel(shape)
    return make_tensor(RUNTIME, RUNTIME.slot(dev.index).allocate(nbytes), nbytes, tuple(shape), dtype, dev)


def kernel_dtypes_ok(*xs) -> bool:
    """Whether every tensor among ``xs`` has a dtype the kernels handle (numbers always pass)."""
    return all(x.dtype.name in KERNEL_DTYPES for x in xs if is_tensor(x))


def broadcast_strides(t, shape: tuple) -> tuple:
    """The strides of ``t`` broadcast to ``shape`` (0 on broadcast dims)."""
    lead = len(shape) - len(t._shape)
    return (0,) * lead + tuple(0 if n == 1 else s for n, s in zip(t._shape, t._stride))


def coalesce(shape: tuple, stride_lists: list) -> tuple:
    """Drop size-1 dims and merge neighbours that are contiguous in every operand: (shape, stride lists)."""
    dims = [(n, [s[d] for s in stride_lists]) for d, n in enumerate(shape) if n != 1]
    merged: list = []
    for n, strides in dims:
        if merged and all(prev == s * n for prev, s in zip(merged[-1][1], strides)):
            merged[-1] = (merged[-1][0] * n, strides)
        else:
            merged.append((n, strides))
    new_shape = tuple(n for n, _ in merged)
    return new_shape, [tuple(st[i] for _, st in merged) for i in range(len(stride_lists))]


def rank_bucket(rank: int, allow_zero: bool = False) -> int | None:
    """The rank a kernel is rendered for (None: too many dims after coalescing)."""
    if rank == 0 and allow_zero:
        return 0
    return next((b for b in RANK_BUCKETS if b >= rank), None)


def padded(values: tuple, rank: int, fill: int) -> tuple:
    """``values`` with leading ``fill`` entries up to ``rank``."""
    return (fill,) * (rank - len(values)) + tuple(values)


def launch_1d(slot, kernel, n: int, args: list) -> None:
    """Launch one work-item per element (rounded up to the fixed work-group size)."""
    size = -(-n // LOCAL_SIZE) * LOCAL_SIZE
    kernel(slot.queue, (size,), (LOCAL_SIZE,), *args)


_warned: set = set()


def cpu_fallback(op_name: str, args: tuple, kwargs: dict, why: str):
    """Run ``op_name`` on the CPU reference with copies in and out (one warning per op and reason)."""
    op = get_operator(op_name)
    device = next(a for a in _flat(args) if is_tensor(a) and a.device.type == "opencl").device
    if (op_name, why) not in _warned:
        _warned.add((op_name, why))
        warnings.warn(f"{op_name}(): the opencl backend has no kernel for {why}; running on the CPU with copies "
                      f"(this warning is shown once)", RuntimeWarning, stacklevel=4)
    cpu_args = [_to_cpu(a) for a in args]
    out = op.redispatch(backend_key("cpu").mask, *cpu_args, **kwargs)
    if op.inplace:
        args[0].copy_(cpu_args[0])
        return args[0]
    return _to_device(out, device)


def _flat(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


def _to_cpu(a):
    if is_tensor(a):
        return a.detach().to("cpu")
    if isinstance(a, (list, tuple)):
        return type(a)(_to_cpu(b) for b in a)
    return a


def _to_device(out, device):
    if is_tensor(out):
        return out.to(device)
    if isinstance(out, (list, tuple)):
        return type(out)(_to_device(o, device) for o in out)
    return out
