"""Helpers shared by the kernel families: fresh outputs, WGSL types, binding declarations, 1-d launches.

Layout arithmetic is the kit's (core.backends.api); a kernel declines a call it does not cover by returning
``NotImplemented`` (the dispatcher's CPU fallback then runs it, counted and obeying the ``fallback`` config).
A kernel's WGSL declares its bindings with :func:`bindings` (the runtime's order: written buffers, read buffers,
then the integer parameters ``p``) and opens its body with :data:`MAIN`, which binds the flat invocation index
``i`` (an ``i32``) for grids from :func:`core_webgpu.runtime.grid`.
"""

from __future__ import annotations

import functools

from core.backends.api import new_tensor as _new_tensor

from ..runtime import RUNTIME, WORKGROUP, grid

__all__ = ["RUNTIME", "new_tensor", "is_tensor", "numel", "slot", "WGSL_TYPES", "wgsl_type", "bindings", "MAIN",
           "launch"]

new_tensor = functools.partial(_new_tensor, RUNTIME)  # new_tensor(shape, dtype, device): a fresh contiguous tensor

#: core dtypes stored as one WGSL scalar per element (i64 needs the adapter's shader-int64, f16 its shader-f16)
WGSL_TYPES = {"float32": "f32", "int32": "i32", "int64": "i64", "float16": "f16"}

MAIN = (f"@compute @workgroup_size({WORKGROUP})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
        "        @builtin(local_invocation_index) lid: u32) {\n"
        f"    let i = i32((wid.y * nwg.x + wid.x) * {WORKGROUP}u + lid);\n")


def is_tensor(x) -> bool:
    return hasattr(x, "_storage")


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def slot():
    """The device's :class:`~core_webgpu.runtime.DeviceSlot`."""
    return RUNTIME.slot


def wgsl_type(dtype_name: str) -> str | None:
    """The WGSL element type of a core dtype name, or None where this device cannot hold it as one scalar."""
    name = WGSL_TYPES.get(dtype_name)
    if name == "i64" and not RUNTIME.slot.int64 or name == "f16" and not RUNTIME.slot.f16:
        return None
    return name


def bindings(writes: list, reads: list) -> str:
    """WGSL declarations of group 0: ``writes`` then ``reads`` as ``(name, element type)`` arrays, then ``p``."""
    enable = "enable f16;\n" if any(t == "f16" for _, t in writes + reads) else ""
    lines = [f"@group(0) @binding({k}) var<storage, read_write> {name}: array<{t}>;"
             for k, (name, t) in enumerate(writes)]
    lines += [f"@group(0) @binding({len(writes) + k}) var<storage, read> {name}: array<{t}>;"
              for k, (name, t) in enumerate(reads)]
    lines.append(f"@group(0) @binding({len(writes) + len(reads)}) var<storage, read> p: array<i32>;")
    return enable + "\n".join(lines) + "\n"


def launch(key, render, writes: list, reads: list, params: tuple, n: int) -> None:
    """Run kernel ``key`` (WGSL from ``render()``, opened with :data:`MAIN`) over ``n`` invocations."""
    RUNTIME.slot.dispatch(key, render, [t._storage.data if is_tensor(t) else t for t in writes],
                          [t._storage.data if is_tensor(t) else t for t in reads], tuple(params), grid(n))
