"""The linalg family: ``batched_matmul`` and the fused ``linear``, both one tiled GEMM in workgroup memory.

The GEMM is a template (:data:`GEMM`): ``C[z] = A[z] @ B[z]`` for ``z < Z`` with ``C`` a fresh contiguous
``(Z, M, N)`` float32 tensor; a caller supplies three WGSL functions, ``load_a(z, r, k)``, ``load_b(z, k, c)`` and
``epilogue(z, r, c, acc)``, so strided operands, broadcast batches, the bias of ``linear`` and the implicit im2col
of convolution (kernels/nn.py) are one kernel each. This module also holds what those kernel families share:
:func:`run` (named integer parameters ``$name`` in the WGSL, variable-length layouts after them) and the
strided-offset function ``off(index, layout)`` (:data:`OFFSET`, :func:`layout`).
"""

from __future__ import annotations

from string import Template

import numpy as np

from core.backends.api import coalesce

from ._common import bindings, is_tensor, new_tensor, numel, slot

__all__ = ["kernels", "run", "layout", "f32", "OFFSET", "gemm", "TILE"]

TILE = 16  # the GEMM's tile edge: a 16 x 16 work-group computes a 16 x 16 block of C, k in steps of 16
_MAX_Z = 65535  # work-groups along z

#: ``off(i, at)``: the element offset of flat (row-major) index ``i`` in the layout stored at ``p[at]``
#: (:func:`layout`: rank, sizes, strides).
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

GEMM = f"""
var<workgroup> ta: array<array<f32, {TILE}>, {TILE}>;
var<workgroup> tb: array<array<f32, {TILE}>, {TILE}>;
@compute @workgroup_size({TILE}, {TILE})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {{
    let M = $M; let N = $N; let K = $K;
    let z = i32(wid.z) + $z0; let ty = i32(lid.y); let tx = i32(lid.x);
    let r = i32(wid.y) * {TILE} + ty; let c = i32(wid.x) * {TILE} + tx;
    var acc = 0.0;
    for (var k0 = 0; k0 < K; k0 += {TILE}) {{
        var va = 0.0; var vb = 0.0;
        if (r < M && k0 + tx < K) {{ va = load_a(z, r, k0 + tx); }}
        if (k0 + ty < K && c < N) {{ vb = load_b(z, k0 + ty, c); }}
        ta[ty][tx] = va; tb[ty][tx] = vb;
        workgroupBarrier();
        for (var k = 0; k < {TILE}; k++) {{ acc += ta[ty][k] * tb[k][tx]; }}
        workgroupBarrier();
    }}
    if (r < M && c < N) {{ out[(z * M + r) * N + c] = epilogue(z, r, c, acc); }}
}}
"""


def layout(shape, strides) -> list:
    """The parameters ``off`` reads: rank, sizes, strides (a 0-d layout is rank 0)."""
    return [len(shape), *shape, *strides]


def f32(x) -> int:
    """The bits of ``x`` as float32, for ``bitcast<f32>($name)`` in WGSL."""
    return int(np.float32(x).view(np.uint32))


def _buffer(x):
    return x._storage.data if is_tensor(x) else x


def run(key, body: str, writes: list, reads: list, groups: tuple, values: dict, layouts: dict | None = None):
    """Dispatch WGSL ``body`` (its ``main`` included) over ``groups``: ``writes`` and ``reads`` are
    ``(name, tensor or buffer, WGSL type)``; ``$name`` in the body is the integer parameter ``values[name]``, and
    for each ``layouts[name]`` (a :func:`layout`) ``$name`` is where it starts, for ``off(i, $name)``."""
    layouts = layouts or {}
    names = [*values, *layouts]
    flat = [int(v) for v in values.values()]
    tail: list = []
    for lay in layouts.values():
        flat.append(len(names) + len(tail))
        tail.extend(lay)
    types = tuple(t for _, _, t in writes + reads)

    def render():
        head = bindings([(n, t) for n, _, t in writes], [(n, t) for n, _, t in reads])
        return head + Template(OFFSET + body).substitute({n: f"p[{k}]" for k, n in enumerate(names)})

    slot().dispatch((key, tuple(names), types), render, [_buffer(x) for _, x, _ in writes],
                    [_buffer(x) for _, x, _ in reads], tuple(flat + tail), groups)


def gemm(key, loaders: str, reads: list, z: int, m: int, n: int, k: int, values: dict, layouts: dict | None = None,
         shape: tuple | None = None):
    """A fresh contiguous float32 tensor of ``shape`` (default ``(z, m, n)``), ``C[z] = A[z] @ B[z]`` (inner size
    ``k``) through the WGSL ``loaders`` (``load_a``, ``load_b``, ``epilogue``) reading ``reads`` (the first one
    gives the device); ``values``/``layouts`` as in :func:`run`."""
    first = reads[0][1]
    out = new_tensor((z, m, n) if shape is None else tuple(shape), first.dtype, first.device)
    if z * m * n == 0:
        return out
    for z0 in range(0, z, _MAX_Z):
        groups = (-(-n // TILE), -(-m // TILE), min(_MAX_Z, z - z0))
        run(("gemm", key), loaders + GEMM, [("out", out, "f32")], reads, groups,
            dict(M=m, N=n, K=k, z0=z0, **values), layouts)
    return out


# -- strided operands: a[off + (z / zb) * s0 + (z % zb) * s1 + row * sr + col * sc] ---------------------------------
_STRIDED = """
fn load_a(z: i32, r: i32, k: i32) -> f32 { return a[$ao + (z / $zb) * $az0 + (z % $zb) * $az1 + r * $ar + k * $ak]; }
fn load_b(z: i32, k: i32, c: i32) -> f32 { return b[$bo + (z / $zb) * $bz0 + (z % $zb) * $bz1 + k * $br + c * $bc]; }
"""
_EPILOGUE = {False: "fn epilogue(z: i32, r: i32, c: i32, v: f32) -> f32 { return v; }\n",
             True: "fn epilogue(z: i32, r: i32, c: i32, v: f32) -> f32 { return v + bias[$biaso + c * $biass]; }\n"}


def _strided_gemm(a, b, batch: tuple, a_strides: tuple, b_strides: tuple, m: int, n: int, k: int, bias=None,
                 shape: tuple | None = None):
    """``a @ b (+ bias)`` read through strides: ``a_strides``/``b_strides`` are each operand's batch strides then
    its (row, column) strides; the batch dims must fold into two (:func:`_folds`)."""
    dims, (sa, sb) = coalesce(batch, [a_strides[:-2], b_strides[:-2]], min_rank=2)
    values = dict(ao=a._offset, az0=sa[0], az1=sa[1], ar=a_strides[-2], ak=a_strides[-1],
                  bo=b._offset, bz0=sb[0], bz1=sb[1], br=b_strides[-2], bc=b_strides[-1], zb=dims[1])
    reads = [("a", a, "f32"), ("b", b, "f32")]
    if bias is not None:
        values.update(biaso=bias._offset, biass=bias._stride[0])
        reads.append(("bias", bias, "f32"))
    return gemm(("strided", bias is not None), _STRIDED + _EPILOGUE[bias is not None], reads, numel(batch), m, n,
                k, values, shape=shape)


def _folds(batch: tuple, *tensors) -> bool:
    """Whether the tensors' leading ``batch`` dims fold into at most two (the GEMM's batch indexing)."""
    return len(coalesce(batch, [t._stride[:len(batch)] for t in tensors])[0]) <= 2


def batched_matmul(spec, a, b):
    """``a @ b`` over equal batch dims (any strides, 0 included), float32."""
    if spec.dtype.name != "float32":
        return NotImplemented
    batch, (n, k), m = tuple(a._shape[:-2]), a._shape[-2:], b._shape[-1]
    if not _folds(batch, a, b):
        a, b = a.contiguous(), b.contiguous()
    return _strided_gemm(a, b, batch, a._stride, b._stride, n, m, k, shape=spec.shape)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` as one GEMM whose epilogue adds the bias; float32 on one device."""
    operands = [t for t in (input, weight, bias) if t is not None]
    if any(t.dtype.name != "float32" or t.device != input.device for t in operands) or input.dim() < 1 \
            or weight.dim() != 2 or (bias is not None and bias.dim() != 1):
        return NotImplemented
    lead, k, m = tuple(input.shape[:-1]), input.shape[-1], weight.shape[0]
    if len(coalesce(lead, [input._stride[:-1]])[0]) > 1:  # rows that are not one stride apart
        input = input.contiguous()
    rows = coalesce(lead, [input._stride[:-1]], min_rank=1)[1][0][0]
    w = weight._stride
    return _strided_gemm(input, weight, (), (rows, input._stride[-1]), (w[1], w[0]), numel(lead), m, k, bias,
                         shape=lead + (m,))


def kernels(runtime) -> dict:
    """The linalg family: op name -> kernel."""
    return {"batched_matmul": batched_matmul, "linear": linear}
