"""What the kernel families share: fresh outputs, WGSL types and bindings, and the two ways to launch a shader.

A kernel declines a call it does not cover by returning ``NotImplemented`` (the dispatcher's counted CPU fallback
then runs it). Bindings follow the runtime's order: written buffers, read buffers, then the integer parameters ``p``;
:data:`MAIN` opens a body with the flat invocation index ``i`` (an ``i32``) for grids from
:func:`core_webgpu.runtime.grid`.
"""

from __future__ import annotations

import functools
import math
from string import Template

import numpy as np

from core.backends.api import new_tensor as _new_tensor

from ..runtime import RUNTIME, WORKGROUP, grid

__all__ = ["RUNTIME", "new_tensor", "is_tensor", "numel", "WGSL_TYPES", "wgsl_type", "bindings", "MAIN", "launch",
           "run", "layout", "f32", "OFFSET"]

new_tensor = functools.partial(_new_tensor, RUNTIME)  # new_tensor(shape, dtype, device): a fresh contiguous tensor
numel = math.prod

#: core dtypes stored as one WGSL scalar per element (i64 needs the adapter's shader-int64, f16 its shader-f16)
WGSL_TYPES = {"float32": "f32", "int32": "i32", "int64": "i64", "float16": "f16"}

MAIN = (f"@compute @workgroup_size({WORKGROUP})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
        "        @builtin(local_invocation_index) lid: u32) {\n"
        f"    let i = i32((wid.y * nwg.x + wid.x) * {WORKGROUP}u + lid);\n")

#: ``off(i, at)``: the element offset of flat (row-major) index ``i`` in the :func:`layout` stored at ``p[at]``
OFFSET = """
fn off(i: i32, at: i32) -> i32 {
    let nd = p[at];
    var rest = i;
    var o = 0;
    for (var d = nd - 1; d >= 0; d--) {
        let n = p[at + 1 + d];
        o += (rest % n) * p[at + 1 + nd + d];
        rest /= n;
    }
    return o;
}
"""


def is_tensor(x) -> bool:
    return hasattr(x, "_storage")


def _buffer(x):
    return x._storage.data if is_tensor(x) else x


def wgsl_type(dtype_name: str) -> str | None:
    """The WGSL element type of a core dtype name, or None where this device cannot hold it as one scalar."""
    name = WGSL_TYPES.get(dtype_name)
    if name == "i64" and not RUNTIME.slot.int64 or name == "f16" and not RUNTIME.slot.f16:
        return None
    return name


def bindings(writes: list, reads: list) -> str:
    """WGSL declarations of group 0: ``writes`` then ``reads`` as ``(name, element type)`` arrays, then ``p``."""
    enable = "enable f16;\n" if any(t == "f16" for _, t in writes + reads) else ""
    access = ["read_write"] * len(writes) + ["read"] * len(reads)
    lines = [f"@group(0) @binding({k}) var<storage, {a}> {name}: array<{t}>;"
             for k, (a, (name, t)) in enumerate(zip(access, writes + reads))]
    lines.append(f"@group(0) @binding({len(access)}) var<storage, read> p: array<i32>;")
    return enable + "\n".join(lines) + "\n"


def launch(key, render, writes: list, reads: list, params: tuple, n: int) -> None:
    """Run kernel ``key`` (WGSL from ``render()``, opened with :data:`MAIN`) over ``n`` invocations."""
    RUNTIME.slot.dispatch(key, render, [_buffer(x) for x in writes], [_buffer(x) for x in reads], tuple(params),
                          grid(n))


def layout(shape, strides) -> list:
    """The parameters ``off`` reads: rank, sizes, strides (a 0-d layout is rank 0)."""
    return [len(shape), *shape, *strides]


def f32(x) -> int:
    """The bits of ``x`` as float32, for ``bitcast<f32>($name)`` in WGSL."""
    return int(np.float32(x).view(np.uint32))


def run(key, body: str, writes: list, reads: list, groups, values: dict, layouts: dict | None = None,
        consts: dict | None = None):
    """Dispatch WGSL ``body`` (its ``main`` included) over ``groups`` (a grid, or ``n`` for :data:`MAIN`'s ``i``):
    ``writes``/``reads`` are ``(name, tensor or buffer, WGSL type)``; ``$name`` is the integer parameter
    ``values[name]``, or where ``layouts[name]`` (a :func:`layout`) starts, for ``off(i, $name)``; ``consts[name]`` is
    compiled in as a literal (one pipeline per value: for recurring geometry whose divisions then become cheap)."""
    layouts, consts = layouts or {}, consts or {}
    names = [*values, *layouts]
    flat = [int(v) for v in values.values()]
    tail: list = []
    for lay in layouts.values():
        flat.append(len(names) + len(tail))
        tail.extend(lay)

    def render():
        head = bindings([(n, t) for n, _, t in writes], [(n, t) for n, _, t in reads])
        literals = {n: f"({int(v)})" for n, v in consts.items()}
        return head + Template(OFFSET + body).substitute({n: f"p[{k}]" for k, n in enumerate(names)}, **literals)

    key = (key, tuple(names), tuple(t for _, _, t in writes + reads), tuple(consts.items()))
    RUNTIME.slot.dispatch(key, render, [_buffer(x) for _, x, _ in writes], [_buffer(x) for _, x, _ in reads],
                          tuple(flat + tail), grid(groups) if isinstance(groups, int) else groups)
