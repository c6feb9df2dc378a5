"""The nn family, float32: ``softmax``/``log_softmax``, ``cross_entropy_loss``, ``layer_norm``, ``convolution`` and
``max_pool``/``avg_pool`` (each with its backward).

Row kernels run one work-group per row, reducing in workgroup memory (:data:`_ROW`). Convolution and its gradients
are implicit GEMMs (linalg's :func:`~.linalg.gemm` with loaders that index through strides: no im2col buffer).
Pooling runs one invocation per output, its backward one per input position (a gather over the covering windows: no
atomics). Convolution and pooling take one or two spatial dims.
"""

from __future__ import annotations

import re

from core import int32
from core.backends.api import broadcast_strides
from core.ops.pooling import pool_out_size

from ..runtime import WORKGROUP
from ._common import MAIN, f32, layout, new_tensor, numel, run, wgsl_type
from .linalg import PLAIN_EPILOGUE, gemm

__all__ = ["kernels"]

_NEG_INF = "bitcast<f32>(0xff800000u)"

# one work-group per row: `base` is the row's first element, `sd` its stride along the dim, `m + ls` its logsumexp
_ROW_MAIN = MAIN + "    let t = lid; let row = i32(wid.y * nwg.x + wid.x);\n    if (row >= $rows) { return; }"
_ROW = f"""
var<workgroup> red: array<f32, {WORKGROUP}>;
fn reduce(v: f32, t: u32, take_max: bool) -> f32 {{
    red[t] = v;
    workgroupBarrier();
    for (var s = {WORKGROUP // 2}u; s > 0u; s >>= 1u) {{
        if (t < s) {{ let o = red[t + s]; red[t] = select(red[t] + o, max(red[t], o), take_max); }}
        workgroupBarrier();
    }}
    let r = red[0];
    workgroupBarrier();
    return r;
}}
ROW_MAIN
    let L = $len; let sd = $sd; let base = $xo + off(row, $xl);
    var m = {_NEG_INF};
    for (var k = i32(t); k < L; k += {WORKGROUP}) {{ m = max(m, x[base + k * sd]); }}
    m = reduce(m, t, true);
    var s = 0.0;
    for (var k = i32(t); k < L; k += {WORKGROUP}) {{ s += exp(x[base + k * sd] - m); }}
    let ls = log(reduce(s, t, false));  // logsumexp = m + ls: kept apart, as x - m is exact
    let o0 = (row / $inner) * L * $inner + row % $inner;  // the row's first element in a contiguous output
    BODY
}}
""".replace("ROW_MAIN", _ROW_MAIN)
_ROW_BODIES = {
    "softmax": f"for (var k = i32(t); k < L; k += {WORKGROUP}) {{ out[o0 + k * $inner] = "
               "exp((x[base + k * sd] - m) - ls); }",
    "log_softmax": f"for (var k = i32(t); k < L; k += {WORKGROUP}) {{ out[o0 + k * $inner] = "
                   "(x[base + k * sd] - m) - ls; }",
    # per row: its loss and its kept weight (0 where ignored)
    "ce_rows": """let c = i32(tgt[$to + off(row, $tl)]);
    if (t == 0u) {
        var w = select(1.0, wt[$wo + c * $ws], $weighted == 1);
        if (c == $ignore) { w = 0.0; }
        loss[row] = select((ls - (x[base + c * sd] - m)) * w, 0.0, w == 0.0);
        kept[row] = w;
    }""",
    # the gradient of each row: (softmax - one_hot) * weight * grad (/ the kept weights' sum for 'mean')
    "ce_backward": f"""let c = i32(tgt[$to + off(row, $tl)]);
    var w = select(1.0, wt[$wo + c * $ws], $weighted == 1);
    if (c == $ignore) {{ w = 0.0; }}
    var scale = w * g[$go + off(row, $gl)];
    if ($mean == 1) {{ scale /= den[0]; }}
    if (w == 0.0) {{ scale = 0.0; }}
    for (var k = i32(t); k < L; k += {WORKGROUP}) {{
        out[o0 + k * $inner] = (exp((x[base + k * sd] - m) - ls) - select(0.0, 1.0, k == c)) * scale;
    }}""",
}
# cross-entropy's reduction: one work-group sums the rows' losses and kept weights
_TOTAL = _ROW.split("@compute")[0] + MAIN + f"""    let t = lid;
    var a = 0.0; var b = 0.0;
    for (var k = i32(t); k < $rows; k += {WORKGROUP}) {{ a += loss[k]; b += kept[k]; }}
    a = reduce(a, t, false);
    b = reduce(b, t, false);
    if (t == 0u) {{ out[0] = select(a, a / b, $mean == 1); den[0] = b; }}
}}
"""


def _f32(*tensors) -> bool:
    """Whether the tensors (None skipped) are float32 and on one device: what these kernels run."""
    given = [t for t in tensors if t is not None]
    return all(t.dtype.name == "float32" and t.device == given[0].device for t in given)


def _like(t, shape=None):
    """A fresh tensor of ``t``'s dtype and device, of ``t``'s shape or ``shape``."""
    return new_tensor(tuple(t.shape) if shape is None else shape, t.dtype, t.device)


def _rows(name: str, x, dim: int, writes: list, reads: list = (), values: dict | None = None,
          layouts: dict | None = None):
    """Run row kernel ``name`` over the rows of ``x`` along ``dim``."""
    shape, strides = list(x._shape), list(x._stride)
    length, sd = shape.pop(dim), strides.pop(dim)
    rows = numel(shape)
    if rows == 0:
        return
    values = dict(rows=rows, len=length, sd=sd, xo=x._offset, inner=numel(x._shape[dim + 1:]), **(values or {}))
    run(("row", name), _ROW.replace("BODY", _ROW_BODIES[name]), writes, [("x", x, "f32"), *reads], rows * WORKGROUP,
        values, dict(xl=layout(shape, strides), **(layouts or {})))


def _softmax_kernel(name: str):
    def kernel(input, dim):
        if not _f32(input) or input.dim() == 0 or input.numel() == 0:
            return NotImplemented
        out = _like(input)
        _rows(name, input, dim, [("out", out, "f32")])
        return out

    kernel.__name__ = name
    kernel.__doc__ = f"``{name}`` along ``dim``: one work-group per row."
    return kernel


_REDUCTIONS = ("none", "sum", "mean")


def _ce_args(input, target, weight, reduction, ignore_index):
    """(values, layouts, reads) shared by the cross-entropy kernels, or None to decline the call."""
    if not _f32(input, weight) or input.dim() < 2 or input.numel() == 0 or reduction not in _REDUCTIONS \
            or target.dtype.name != "int64" or wgsl_type("int64") is None \
            or tuple(target.shape) != tuple(input.shape[:1] + input.shape[2:]) \
            or (weight is not None and tuple(weight.shape) != (input.shape[1],)) \
            or any(t.device != input.device for t in (target, weight) if t is not None):
        return None
    classes = input.shape[1]
    host = target.cpu().numpy()
    bad = (host != ignore_index) & ((host < 0) | (host >= classes))
    if bad.any():
        raise IndexError(f"Target {int(host[bad][0])} is out of bounds.")
    w = weight if weight is not None else input  # a placeholder binding when unweighted
    values = dict(to=target._offset, wo=w._offset, ws=w._stride[0], weighted=int(weight is not None),
                  ignore=max(-2**31, min(2**31 - 1, int(ignore_index))))
    reads = [("tgt", target, "i64"), ("wt", w, "f32")]
    return values, dict(tl=layout(target._shape, target._stride)), reads


def _ce_totals(input, target, args, reduction):
    """(per-row losses, kept weights) and, reduced, (loss, kept weights' sum) as 0-d/1-element tensors."""
    values, layouts, reads = args
    loss, kept = _like(input, tuple(target.shape)), _like(input, tuple(target.shape))
    _rows("ce_rows", input, 1, [("loss", loss, "f32"), ("kept", kept, "f32")], reads, values, layouts)
    out, den = _like(input, ()), _like(input, (1,))
    run("ce_total", _TOTAL, [("out", out, "f32"), ("den", den, "f32")], [("loss", loss, "f32"), ("kept", kept, "f32")],
        (1, 1, 1), dict(rows=loss.numel(), mean=int(reduction == "mean")))
    return loss, out, den


def cross_entropy_loss(input, target, weight, reduction, ignore_index):
    """-log_softmax(input, 1)[target] * weight[target], 0 where ignored, reduced: one pass per row, one sum."""
    args = _ce_args(input, target, weight, reduction, ignore_index)
    if args is None:
        return NotImplemented
    loss, out, _ = _ce_totals(input, target, args, reduction)
    return loss if reduction == "none" else out


def cross_entropy_loss_backward(grad, input, target, weight, reduction, ignore_index):
    """(softmax(input, 1) - one_hot(target)) * weight[target] * grad (/ the kept weights' sum for 'mean')."""
    args = _ce_args(input, target, weight, reduction, ignore_index)
    grad_shape = tuple(target.shape) if reduction == "none" else ()
    if args is None or not _f32(input, grad) or tuple(grad.shape) != grad_shape:
        return NotImplemented
    values, layouts, reads = args
    den = _ce_totals(input, target, args, reduction)[2] if reduction == "mean" else grad
    out = _like(input)
    _rows("ce_backward", input, 1, [("out", out, "f32")], reads + [("g", grad, "f32"), ("den", den, "f32")],
          dict(values, go=grad._offset, mean=int(reduction == "mean")),
          dict(layouts, gl=layout(target._shape, broadcast_strides(grad._shape, grad._stride, target._shape))))
    return out


# -- layer norm: one work-group per row of the contiguous (rows, D) input --------------------------------------------
_LN = _ROW.split("@compute")[0] + f"""
fn scale(k: i32) -> f32 {{ return select(1.0, w[$wo + k], $hasw == 1); }}
{_ROW_MAIN}
    let D = $d; let base = $xo + row * D;
    var s = 0.0;
    for (var k = i32(t); k < D; k += {WORKGROUP}) {{ s += x[base + k]; }}
    let mean = reduce(s, t, false) / f32(D);
    var q = 0.0;
    for (var k = i32(t); k < D; k += {WORKGROUP}) {{ let c = x[base + k] - mean; q += c * c; }}
    let rstd = inverseSqrt(reduce(q, t, false) / f32(D) + bitcast<f32>($eps));
    BODY
}}
"""
_LN_BODIES = {
    "forward": f"""for (var k = i32(t); k < D; k += {WORKGROUP}) {{
        out[row * D + k] = (x[base + k] - mean) * rstd * scale(k) + select(0.0, b[$bo + k], $hasb == 1);
    }}""",
    # grad_input, and each row's (mean, rstd) for the column sums of grad_weight and grad_bias
    "backward": f"""var a = 0.0; var c = 0.0;
    for (var k = i32(t); k < D; k += {WORKGROUP}) {{
        let gw = g[$go + row * D + k] * scale(k); a += gw; c += gw * (x[base + k] - mean) * rstd;
    }}
    a = reduce(a, t, false) / f32(D);
    c = reduce(c, t, false) / f32(D);
    for (var k = i32(t); k < D; k += {WORKGROUP}) {{
        let gw = g[$go + row * D + k] * scale(k);
        out[row * D + k] = (gw - a - (x[base + k] - mean) * rstd * c) * rstd;
    }}
    if (t == 0u) {{ stats[2 * row] = mean; stats[2 * row + 1] = rstd; }}""",
}
# grad_weight[k] = sum over rows of grad * normalised, grad_bias[k] = sum of grad: one invocation per column
_LN_COLUMNS = MAIN + """    if (i >= $d) { return; }
    var gw = 0.0; var gb = 0.0;
    for (var r = 0; r < $rows; r++) {
        let g1 = g[$go + r * $d + i];
        gw += g1 * (x[$xo + r * $d + i] - stats[2 * r]) * stats[2 * r + 1];
        gb += g1;
    }
    dw[i] = gw; db[i] = gb;
}
"""


def _ln_args(input, normalized_shape, weight, bias, eps, *more):
    """(contiguous input, rows, D, reads, values) of the layer-norm kernels, or None to decline."""
    d = numel(normalized_shape)
    if not _f32(input, weight, bias, *more) or d == 0 or tuple(input.shape[input.dim() - len(normalized_shape):]) \
            != tuple(normalized_shape):
        return None
    x = input.contiguous()
    w, b = (t.contiguous() if t is not None else x for t in (weight, bias))  # x: a placeholder binding
    reads = [("x", x, "f32"), ("w", w, "f32"), ("b", b, "f32")]
    values = dict(rows=x.numel() // d, d=d, xo=x._offset, wo=w._offset, bo=b._offset, hasw=int(weight is not None),
                  hasb=int(bias is not None), eps=f32(eps))
    return x, values["rows"], d, reads, values


def layer_norm(input, normalized_shape, weight, bias, eps):
    """``(x - mean) * rstd * weight + bias`` over the trailing ``normalized_shape``, one work-group per row."""
    args = _ln_args(input, normalized_shape, weight, bias, eps)
    if args is None:
        return NotImplemented
    x, rows, _, reads, values = args
    out = _like(input)
    if rows:
        run(("ln", "forward"), _LN.replace("BODY", _LN_BODIES["forward"]), [("out", out, "f32")], reads,
            rows * WORKGROUP, values)
    return out


def layer_norm_backward(grad, input, normalized_shape, weight, bias, eps, output_mask):
    """(grad_input, grad_weight, grad_bias): a row pass (grad_input and the rows' statistics), then a column pass."""
    args = _ln_args(input, normalized_shape, weight, bias, eps, grad)
    if args is None or tuple(grad.shape) != tuple(input.shape):
        return NotImplemented
    x, rows, d, reads, values = args
    g = grad.contiguous()
    grad_input = _like(input)
    stats = _like(input, (2 * max(rows, 1),))
    dw, db = _like(input, tuple(normalized_shape)), _like(input, tuple(normalized_shape))
    if rows:
        run(("ln", "backward"), _LN.replace("BODY", _LN_BODIES["backward"]),
            [("out", grad_input, "f32"), ("stats", stats, "f32")], reads + [("g", g, "f32")], rows * WORKGROUP,
            dict(values, go=g._offset))
    if output_mask[1] or output_mask[2]:
        run("ln_columns", _LN_COLUMNS, [("dw", dw, "f32"), ("db", db, "f32")],
            [("g", g, "f32"), ("x", x, "f32"), ("stats", stats, "f32")], d,
            dict(rows=rows, d=d, go=g._offset, xo=x._offset))
    return tuple(t if wanted else None for t, wanted in zip((grad_input, dw, db), output_mask))


# -- convolution: implicit GEMMs ------------------------------------------------------------------------------------
_TAP = "fn tap(k: i32) -> vec3<i32> { return vec3<i32>(k / ($kh * $kw), (k / $kw) % $kh, k % $kw); }\n"
_X = """fn xcol(n: i32, ci: i32, t: vec3<i32>, l: i32) -> f32 {
    let h = (l / $ow) * $sh - $ph + t.y * $dh; let w = (l % $ow) * $sw - $pw + t.z * $dw;
    if (h < 0 || h >= $h || w < 0 || w >= $w) { return 0.0; }
    return x[$xo + n * $xs0 + ci * $xs1 + h * $xs2 + w * $xs3];
}
"""
_W = "fn wat(o: i32, c: i32, t: vec3<i32>) -> f32 { return wt[$wo + o * $ws0 + c * $ws1 + t.y * $ws2 + t.z * $ws3]; }\n"
_G = ("fn gout(n: i32, o: i32, l: i32) -> f32 {\n"
      "    return go[$go + n * $gs0 + o * $gs1 + (l / $ow) * $gs2 + (l % $ow) * $gs3];\n}\n")
_CONV = {  # (helpers, load_a, load_b) of each GEMM; z, r, c, k as in linalg.gemm
    "forward": (_TAP + _X + _W, "return wat((z % $g) * $og + r, tap(k).x, tap(k));",
                "let t = tap(k); return xcol(z / $g, (z % $g) * $cg + t.x, t, c);"),
    "weight": (_TAP + _X + _G, "return gout(k / $l, z * $og + r, k % $l);",
               "let t = tap(c); return xcol(k / $l, z * $cg + t.x, t, k % $l);"),
    "input": (_TAP + _W + _G, "let t = tap(k); return wat((z % $g) * $og + t.x, r, t);",
              """let t = tap(k); let th = c / $w + $ph - t.y * $dh; let tw = c % $w + $pw - t.z * $dw;
    if (th < 0 || tw < 0 || th % $sh != 0 || tw % $sw != 0 || th / $sh >= $oh || tw / $sw >= $ow) { return 0.0; }
    return gout(z / $g, (z % $g) * $og + t.x, (th / $sh) * $ow + tw / $sw);"""),
    "bias": (_G, "return gout(k / $l, r, k % $l);", "return 1.0;"),
}


def _conv_source(kind: str, bias: bool = False) -> str:
    helpers, a, b = _CONV[kind]
    epilogue = ("fn epilogue(z: i32, r: i32, c: i32, v: f32) -> f32 {\n"
                "    return v + bias[$bo + ((z % $g) * $og + r) * $bs];\n}\n" if bias else PLAIN_EPILOGUE)
    return (helpers + f"fn load_a(z: i32, r: i32, k: i32) -> f32 {{ {a} }}\n"
            f"fn load_b(z: i32, k: i32, c: i32) -> f32 {{ {b} }}\n" + epilogue)


def _as_2d(t) -> tuple:
    """(shape, strides) of a 3-d or 4-d tensor as 4-d: one spatial dim gets a leading size-1 dim."""
    if t.dim() == 3:
        return t._shape[:2] + (1,) + t._shape[2:], t._stride[:2] + (0,) + t._stride[2:]
    return t._shape, t._stride


def _two(values, fill: int) -> tuple:
    """Per-dim ``values`` of one or two spatial dims as two (the missing leading one is ``fill``)."""
    return (fill, *values) if len(values) == 1 else tuple(values)


def _strides(prefix: str, strides) -> dict:
    """``{prefix0: strides[0], ...}``: a tensor's strides as named parameters."""
    return {f"{prefix}{k}": s for k, s in enumerate(strides)}


def _window(input, kernel, stride, padding, dilation, ceil_mode=False) -> dict | None:
    """The sliding-window geometry that convolution and pooling share (input channels, sizes and strides, window,
    steps, padding, dilation, output sizes; one spatial dim as two), or None to decline."""
    nd = len(kernel)
    if nd not in (1, 2) or input.dim() != nd + 2 or len(stride) != nd or input.numel() == 0:
        return None
    (_, c, h, w), xs = _as_2d(input)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _two(kernel, 1), _two(stride, 1), _two(padding, 0), _two(dilation, 1)
    oh, ow = (pool_out_size(*args, ceil_mode) for args in ((h, kh, sh, ph, dh), (w, kw, sw, pw, dw)))
    return None if min(oh, ow) <= 0 else dict(c=c, h=h, w=w, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw, ph=ph, pw=pw,
                                               dh=dh, dw=dw, xo=input._offset, **_strides("xs", xs))


def _conv_geometry(input, weight, stride, padding, dilation, groups):
    """:func:`_window` plus the batch, groups and the weight's layout, or None to decline."""
    geo = _window(input, weight.shape[2:], stride, padding, dilation) if _f32(input, weight) \
        and weight.dim() == input.dim() and weight.numel() else None
    if geo is None:
        return None
    (o, cg, _, _), ws = _as_2d(weight)
    return dict(geo, n=input.shape[0], cg=cg, og=o // groups, g=groups, l=geo["oh"] * geo["ow"], wo=weight._offset,
                **_strides("ws", ws))


def _spatial(geo: dict, nd: int, prefix: str = "") -> tuple:
    return (geo[prefix + "h"], geo[prefix + "w"]) if nd == 2 else (geo[prefix + "w"],)


def _pick(geo: dict, source: str) -> tuple:
    """(values, consts) for :func:`~._common.run` of the geometry ``source`` names: offsets are parameters, the
    rest (sizes, steps, strides: a layer's, recurring) compiled in."""
    names = set(re.findall(r"\$(\w+)", source)) & set(geo)
    return ({k: geo[k] for k in names if k in _OFFSETS}, {k: geo[k] for k in sorted(names) if k not in _OFFSETS})


_OFFSETS = {"xo", "wo", "go", "bo"}


def convolution(input, weight, bias, stride, padding, dilation, groups):
    """Cross-correlation as one implicit GEMM per (sample, group), the bias added in its epilogue."""
    geo = _conv_geometry(input, weight, stride, padding, dilation, groups)
    if geo is None or not _f32(input, bias):
        return NotImplemented
    reads = [("x", input, "f32"), ("wt", weight, "f32")]
    source = _conv_source("forward", bias is not None)
    values, consts = _pick(geo, source)
    if bias is not None:
        reads.append(("bias", bias, "f32"))
        values.update(bo=bias._offset, bs=bias._stride[0])
    shape = (geo["n"], weight.shape[0]) + _spatial(geo, len(stride), "o")
    return gemm(("conv", "forward", bias is not None), source, reads, geo["n"] * groups, geo["og"], geo["l"],
                geo["cg"] * geo["kh"] * geo["kw"], values, shape=shape, consts=consts)


def convolution_backward(grad_output, input, weight, stride, padding, dilation, groups, output_mask):
    """(grad_input, grad_weight, grad_bias) of :func:`convolution`: three implicit GEMMs (and one for the bias)."""
    geo = _conv_geometry(input, weight, stride, padding, dilation, groups)
    if geo is None or not _f32(input, grad_output) or grad_output.dim() != input.dim():
        return NotImplemented
    (_, o, _, _), gs = _as_2d(grad_output)
    geo.update(go=grad_output._offset, **_strides("gs", gs))
    n, g, og, cg, taps = geo["n"], groups, geo["og"], geo["cg"], geo["kh"] * geo["kw"]
    x, w, go = ("x", input, "f32"), ("wt", weight, "f32"), ("go", grad_output, "f32")
    jobs = {"input": ([w, go], n * g, cg, geo["h"] * geo["w"], og * taps, tuple(input.shape)),
            "weight": ([go, x], g, og, cg * taps, n * geo["l"], tuple(weight.shape)),
            "bias": ([go], 1, o, 1, n * geo["l"], (o,))}

    def job(kind, reads, z, m, cols, k, shape):
        values, consts = _pick(geo, _conv_source(kind))
        return gemm(("conv", kind), _conv_source(kind), reads, z, m, cols, k, values, shape=shape, consts=consts)

    return tuple(job(kind, *args) if wanted else None for wanted, (kind, args) in zip(output_mask, jobs.items()))


# -- pooling ---------------------------------------------------------------------------------------------------------
# forward: one invocation per output (plane, oh, ow) with plane = n * C + c, folding each input in its window
_WINDOW = MAIN + """    if (i >= $total) { return; }
    let plane = i / ($oh * $ow); let oh = (i / $ow) % $oh; let ow = i % $ow;
    let xb = $xo + (plane / $c) * $xs0 + (plane % $c) * $xs1;
    INIT
    for (var a = 0; a < $kh; a++) {
        let h = oh * $sh - $ph + a * $dh;
        if (h < 0 || h >= $h) { continue; }
        for (var b = 0; b < $kw; b++) {
            let w = ow * $sw - $pw + b * $dw;
            if (w < 0 || w >= $w) { continue; }
            let v = x[xb + h * $xs2 + w * $xs3];
            STEP
        }
    }
    STORE
}
"""
_MAX = _WINDOW.replace("INIT", f"var best = {_NEG_INF}; var arg = -1;").replace(
    "STEP", "if (arg < 0 || v > best || (v != v && best == best)) { best = v; arg = h * $w + w; }")
_DIVISOR = """fn divisor(oh: i32, ow: i32) -> f32 {
    if ($override == 1) { return bitcast<f32>($divisor); }
    let h0 = oh * $sh - $ph; let w0 = ow * $sw - $pw;
    let h1 = min(h0 + $kh, $h + $ph); let w1 = min(w0 + $kw, $w + $pw);
    if ($cip == 1) { return f32((h1 - h0) * (w1 - w0)); }
    return f32((min(h1, $h) - max(h0, 0)) * (min(w1, $w) - max(w0, 0)));
}
"""
# backward: one invocation per input position (plane, h, w); each output window covering it adds its share
_GATHER = MAIN + """    if (i >= $total) { return; }
    let plane = i / ($h * $w); let h = (i / $w) % $h; let w = i % $w;
    let gb = $go + (plane / $c) * $gs0 + (plane % $c) * $gs1;
    var s = 0.0;
    for (var a = 0; a < $kh; a++) {
        let th = h + $ph - a * $dh;
        if (th < 0 || th % $sh != 0 || th / $sh >= $oh) { continue; }
        for (var b = 0; b < $kw; b++) {
            let tw = w + $pw - b * $dw;
            if (tw < 0 || tw % $sw != 0 || tw / $sw >= $ow) { continue; }
            let oh = th / $sh; let ow = tw / $sw;
            SHARE
        }
    }
    out[i] = s;
}
"""
_POOL = {
    "max": _MAX.replace("STORE", "out[i] = best;"),
    "argmax": _MAX.replace("STORE", "out[i] = arg;"),
    "avg": _DIVISOR + _WINDOW.replace("INIT", "var s = 0.0;").replace("STEP", "s += v;").replace(
        "STORE", "out[i] = s / divisor(oh, ow);"),
    "max_backward": _GATHER.replace("SHARE", "if (arg[(plane * $oh + oh) * $ow + ow] == h * $w + w) { "
                                             "s += g[gb + oh * $gs2 + ow * $gs3]; }"),
    "avg_backward": _DIVISOR + _GATHER.replace("SHARE", "s += g[gb + oh * $gs2 + ow * $gs3] / divisor(oh, ow);"),
}


def _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, grad=None):
    """(:func:`_window` plus the gradient's layout, the output's shape), or None to decline."""
    geo = _window(input, kernel_size, stride, padding, dilation, ceil_mode) if _f32(input, grad) else None
    if geo is None:
        return None
    shape = (input.shape[0], geo["c"]) + _spatial(geo, len(kernel_size), "o")
    if grad is not None:
        if tuple(grad.shape) != shape:
            return None
        geo.update(go=grad._offset, **_strides("gs", _as_2d(grad)[1]))
    return geo, shape


def _pool(kind: str, geo: dict, shape: tuple, reads: list, extra: dict | None = None, dtype=None):
    """A fresh ``shape`` tensor from pooling kernel ``kind``, one invocation per element (see :func:`_pick`)."""
    out = new_tensor(shape, dtype or reads[0][1].dtype, reads[0][1].device)
    if numel(shape):
        values, consts = _pick(geo, _POOL[kind])
        run(("pool", kind), _POOL[kind], [("out", out, "i32" if kind == "argmax" else "f32")], reads, numel(shape),
            dict(values, total=numel(shape), **(extra or {})), consts=consts)
    return out
def max_pool(input, kernel_size, stride, padding, dilation, ceil_mode):
    """The max over each window (NaN wins), one invocation per output."""
    found = _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode)
    return NotImplemented if found is None else _pool("max", *found, [("x", input, "f32")])


def max_pool_backward(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode):
    """Each window's gradient to its first maximum: the windows' argmax, then a gather per input position."""
    found = _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, grad_output)
    if found is None:
        return NotImplemented
    geo, shape = found
    arg = _pool("argmax", geo, shape, [("x", input, "f32")], dtype=int32)
    return _pool("max_backward", geo, tuple(input.shape), [("g", grad_output, "f32"), ("arg", arg, "i32")])


def _avg_extra(count_include_pad, divisor_override) -> dict:
    return dict(cip=int(bool(count_include_pad)), override=int(divisor_override is not None),
                divisor=f32(divisor_override or 0))


def avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """Each window's sum over PyTorch's divisor, one invocation per output."""
    found = _pool_geometry(input, kernel_size, stride, padding, (1,) * len(kernel_size), ceil_mode)
    if found is None or divisor_override == 0:
        return NotImplemented
    return _pool("avg", *found, [("x", input, "f32")], _avg_extra(count_include_pad, divisor_override))


def avg_pool_backward(grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override):
    """Each window's gradient over its divisor, gathered per input position."""
    found = _pool_geometry(input, kernel_size, stride, padding, (1,) * len(kernel_size), ceil_mode, grad_output)
    if found is None or divisor_override == 0:
        return NotImplemented
    return _pool("avg_backward", found[0], tuple(input.shape), [("g", grad_output, "f32")],
                 _avg_extra(count_include_pad, divisor_override))


def kernels(runtime) -> dict:
    """The nn family: op name -> kernel."""
    return {"softmax": _softmax_kernel("softmax"), "log_softmax": _softmax_kernel("log_softmax"),
            "cross_entropy_loss": cross_entropy_loss, "cross_entropy_loss_backward": cross_entropy_loss_backward,
            "layer_norm": layer_norm, "layer_norm_backward": layer_norm_backward,
            "convolution": convolution, "convolution_backward": convolution_backward,
            "max_pool": max_pool, "max_pool_backward": max_pool_backward,
            "avg_pool": avg_pool, "avg_pool_backward": avg_pool_backward}
