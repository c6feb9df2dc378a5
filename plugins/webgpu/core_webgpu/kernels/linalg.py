"""The linalg family: ``batched_matmul`` and the fused ``linear``, both one tiled GEMM in workgroup memory.

:func:`gemm` is the template, ``C[z] = A[z] @ B[z]`` into a fresh contiguous ``(Z, M, N)`` tensor (f32 accumulation,
up to 4 x 4 outputs per invocation): a caller supplies the WGSL of ``load_a(z, r, k)``, ``load_b(z, k, c)`` and
``epilogue(z, r, c, acc)``, so strided operands, the bias of ``linear`` and convolution's implicit im2col
(kernels/nn.py) are one kernel each.
"""

from __future__ import annotations

from core import float32
from core.backends.api import coalesce

from ._common import MAIN, new_tensor, numel, run, wgsl_type

__all__ = ["kernels", "gemm", "PLAIN_EPILOGUE"]

TILE = 16  # the depth of the GEMM's k steps
_THREADS = 256  # invocations per GEMM work-group
_MAX_Z = 65535  # work-groups along z
_SPLIT_TARGET = 256  # work-groups a GEMM with deep k is split into, at least


def _gemm_main(wm: int, rm: int, rn: int, store: str) -> str:
    """The GEMM's ``main``: 256 invocations as ``wm`` x ``256 / wm``, each computing ``rm`` x ``rn`` outputs, so a
    work-group computes a ``wm rm`` x ``wn rn`` block of C over one of the ``$splits`` ranges of k (``$kc`` deep;
    work-group z = split * Z + z), staging 16-deep slices of A and B in workgroup memory. The epilogue applies to
    split 0 only (the splits are summed). Operands are read as f32 and C stored as ``store``."""
    wn = _THREADS // wm
    bm, bn = wm * rm, wn * rn  # the block
    loads = -(-max(bm, bn) * TILE // _THREADS)
    return f"""
var<workgroup> ta: array<array<f32, {bm}>, {TILE}>;
var<workgroup> tb: array<array<f32, {bn}>, {TILE}>;
@compute @workgroup_size({_THREADS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {{
    let M = $M; let N = $N; let zs = i32(wid.z) + $z0; let z = zs % $Z; let split = zs / $Z;
    let kb = split * $kc; let ke = min($K, kb + $kc);
    let ty = i32(t) / {wn}; let tx = i32(t) % {wn}; let r0 = i32(wid.y) * {bm}; let c0 = i32(wid.x) * {bn};
    var acc: array<f32, {rm * rn}>;
    for (var k0 = kb; k0 < ke; k0 += {TILE}) {{
        for (var q = 0; q < {loads}; q++) {{
            let e = i32(t) + q * {_THREADS};
            let ar = e / {TILE}; let ak = e % {TILE}; let bk = e / {bn}; let bc = e % {bn};
            if (e < {bm * TILE}) {{
                var va = 0.0;
                if (r0 + ar < M && k0 + ak < ke) {{ va = load_a(z, r0 + ar, k0 + ak); }}
                ta[ak][ar] = va;
            }}
            if (e < {bn * TILE}) {{
                var vb = 0.0;
                if (k0 + bk < ke && c0 + bc < N) {{ vb = load_b(z, k0 + bk, c0 + bc); }}
                tb[bk][bc] = vb;
            }}
        }}
        workgroupBarrier();
        for (var k = 0; k < {TILE}; k++) {{
            var av: array<f32, {rm}>; var bv: array<f32, {rn}>;
            for (var u = 0; u < {rm}; u++) {{ av[u] = ta[k][ty + {wm} * u]; }}
            for (var v = 0; v < {rn}; v++) {{ bv[v] = tb[k][tx + {wn} * v]; }}
            for (var u = 0; u < {rm}; u++) {{
                for (var v = 0; v < {rn}; v++) {{ acc[u * {rn} + v] += av[u] * bv[v]; }}
            }}
        }}
        workgroupBarrier();
    }}
    for (var u = 0; u < {rm}; u++) {{ for (var v = 0; v < {rn}; v++) {{
        let r = r0 + ty + {wm} * u; let c = c0 + tx + {wn} * v; let x = acc[u * {rn} + v];
        if (r < M && c < N) {{ out[(zs * M + r) * N + c] = {store}(select(x, epilogue(z, r, c, x), split == 0)); }}
    }} }}
}}
"""


def _shape(m: int, n: int) -> tuple:
    """(wm, rm, rn) of :func:`_gemm_main` for an m x n output: a thin dim gets 8 invocations and one output each,
    the other the rest; wide dims get up to 4 outputs per invocation."""
    wm = 8 if m <= 8 else 32 if n <= 8 else TILE
    wn = _THREADS // wm
    per = lambda size, w: 4 if size > 2 * w else 2 if size > w else 1  # noqa: E731
    return wm, per(m, wm), per(n, wn)


# out[i] = the sum over s of part[s * n + i]: the splits of a split-k GEMM
_SUM_SPLITS = MAIN + """    if (i >= $n) { return; }
    var s = 0.0;
    for (var k = 0; k < $splits; k++) { s += part[k * $n + i]; }
    out[i] = STORE(s);
}
"""


def gemm(key, loaders: str, reads: list, z: int, m: int, n: int, k: int, values: dict, layouts: dict | None = None,
         shape: tuple | None = None, consts: dict | None = None):
    """A fresh contiguous tensor of ``shape`` (default ``(z, m, n)``), ``C[z] = A[z] @ B[z]`` (inner size ``k``),
    through the WGSL ``loaders`` (``load_a``, ``load_b``, ``epilogue``) reading ``reads`` (the first one gives the
    dtype and device); ``values``/``layouts``/``consts`` as in :func:`run`."""
    first = reads[0][1]
    out = new_tensor((z, m, n) if shape is None else tuple(shape), first.dtype, first.device)
    if z * m * n == 0:
        return out
    wm, rm, rn = _shape(m, n)
    bm, bn = wm * rm, _THREADS // wm * rn
    tiles = z * -(-m // bm) * -(-n // bn)
    # split k when the output has few blocks but k is deep (a weight's gradient): each split >= 256 deep
    splits = max(1, min(-(-_SPLIT_TARGET // tiles), k // 256, _MAX_Z // z))
    kc = -(-k // splits)
    kind = wgsl_type(first.dtype.name)
    store = kind if splits == 1 else "f32"  # the splits' partial sums stay f32; one rounding at the end
    part = out if splits == 1 else new_tensor((splits * z, m, n), float32, first.device)
    for z0 in range(0, z * splits, _MAX_Z):
        groups = (-(-n // bn), -(-m // bm), min(_MAX_Z, z * splits - z0))
        run(("gemm", key, wm, rm, rn), loaders + _gemm_main(wm, rm, rn, store), [("out", part, store)], reads,
            groups, dict(M=m, N=n, K=k, Z=z, z0=z0, kc=kc, **values), layouts, consts)
    if splits > 1:
        total = z * m * n
        run("sum_splits", _SUM_SPLITS.replace("STORE", kind), [("out", out, kind)], [("part", part, "f32")],
            total, dict(n=total, splits=splits))
    return out


# -- strided operands: a[off + (z / zb) * s0 + (z % zb) * s1 + row * sr + col * sc] ---------------------------------
_STRIDED = """
fn load_a(z: i32, r: i32, k: i32) -> f32 {
    return f32(a[$ao + (z / $zb) * $az0 + (z % $zb) * $az1 + r * $ar + k * $ak]);
}
fn load_b(z: i32, k: i32, c: i32) -> f32 {
    return f32(b[$bo + (z / $zb) * $bz0 + (z % $zb) * $bz1 + k * $br + c * $bc]);
}
"""
PLAIN_EPILOGUE = "fn epilogue(z: i32, r: i32, c: i32, v: f32) -> f32 { return v; }\n"
_EPILOGUE = {False: PLAIN_EPILOGUE,
             True: "fn epilogue(z: i32, r: i32, c: i32, v: f32) -> f32 {\n"
                   "    return v + f32(bias[$biaso + c * $biass]);\n}\n"}


def _strided_gemm(a, b, batch: tuple, a_strides: tuple, b_strides: tuple, m: int, n: int, k: int, bias=None,
                 shape: tuple | None = None):
    """``a @ b (+ bias)`` read through strides: ``a_strides``/``b_strides`` are each operand's batch strides then
    its (row, column) strides; the batch dims must fold into two."""
    dims, (sa, sb) = coalesce(batch, [a_strides[:-2], b_strides[:-2]], min_rank=2)
    values = dict(ao=a._offset, az0=sa[0], az1=sa[1], ar=a_strides[-2], ak=a_strides[-1],
                  bo=b._offset, bz0=sb[0], bz1=sb[1], br=b_strides[-2], bc=b_strides[-1], zb=dims[1])
    kind = wgsl_type(a.dtype.name)
    reads = [("a", a, kind), ("b", b, kind)]
    if bias is not None:
        values.update(biaso=bias._offset, biass=bias._stride[0])
        reads.append(("bias", bias, kind))
    return gemm(("strided", bias is not None), _STRIDED + _EPILOGUE[bias is not None], reads, numel(batch), m, n,
                k, values, shape=shape)


def _floats(dtype) -> bool:
    """float32, or float16 where the adapter has shader-f16: the GEMM's element types."""
    return dtype.name == "float32" or (dtype.name == "float16" and wgsl_type("float16") is not None)


def batched_matmul(spec, a, b):
    """``a @ b`` over equal batch dims (any strides, 0 included), float32 (and float16 with shader-f16)."""
    if not _floats(spec.dtype):
        return NotImplemented
    batch, (n, k), m = tuple(a._shape[:-2]), a._shape[-2:], b._shape[-1]
    if len(coalesce(batch, [a._stride[:-2], b._stride[:-2]])[0]) > 2:  # the GEMM indexes two batch dims
        a, b = a.contiguous(), b.contiguous()
    return _strided_gemm(a, b, batch, a._stride, b._stride, n, m, k, shape=spec.shape)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` as one GEMM whose epilogue adds the bias; one float dtype on one device."""
    operands = [t for t in (input, weight, bias) if t is not None]
    if any(t.dtype is not input.dtype or t.device != input.device for t in operands) or not _floats(input.dtype) \
            or input.dim() < 1 or weight.dim() != 2 or (bias is not None and bias.dim() != 1):
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
