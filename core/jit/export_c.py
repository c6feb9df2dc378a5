"""``core.jit.export_c``: a traced model as portable C99 that runs with no Python and no core.

:func:`export_c` walks the traced graph (as traced, before fusion) and writes

* ``model.h`` — ``model_init``/``model_forward`` and the input/output shapes as constants;
* ``model.c`` — one static float32 buffer per intermediate value and one loop (or call of a small C helper)
  per node; views (``view``, ``permute``, ``transpose``, ``narrow``, ``select``, ``expand``, ...) cost
  nothing: they are strides over their base's buffer, read by the loops that consume them;
* ``model.weights`` — the parameters, buffers and constants as raw little-endian float32 after a 16-byte
  header (``CXW1``, uint32 version 2, uint64 count), written atomically — or, with ``embed_weights=True``,
  a C array in ``model.c`` (exact hexadecimal float literals). A linear's weight is stored the way the GEMM
  reads it (:func:`pack_panels`: ``w.T`` in panels of :data:`PANEL` columns), so nothing is repacked per call;
* ``main.c`` (``main=True``) — reads each input from a raw float32 file and writes each output to one;
* ``Makefile`` — ``cc -O2 -std=c99``; OpenMP and ``-O3 -march=native`` are detected and optional.

Linear, matmul and convolution (im2col) share one register-tiled SGEMM in portable C99 (``cx_gemm``: packed
column panels, an ``MR x NR`` accumulator block the compiler vectorises, K blocked for L1); a batch of one
takes a GEMV that reads each weight once, front to back. No BLAS is needed.

Every tensor is float32 in the C code: integer inputs (embedding indices) are passed as floats (exact below
2**24) and comparisons give 0/1. Unsupported ops are all listed in one :class:`ExportError` before any file
is written. See docs/jit.md, "Deploying without Python: C export".
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import numpy as np

from ..codegen.cstyle import BINARY_EXPRESSIONS, UNARY_EXPRESSIONS, CRenderer
from .ir import Value, flat_values

__all__ = ["export_c", "ExportError", "SUPPORTED_OPS"]

_C = CRenderer()
_VIEW_OPS = frozenset({"view", "permute", "transpose", "narrow", "select", "expand", "unsqueeze", "squeeze",
                       "slice", "as_strided", "alias", "diagonal", "unfold"})
_EXTRA_UNARY = {"gelu", "_to_copy", "clamp", "where"}
_REDUCTIONS = frozenset({"sum", "amax", "amin", "argmax", "argmin"})
_PARALLEL_MIN = 262144  # generated loops this long run under OpenMP (when built with it)
WEIGHTS_VERSION = 2  # 2: linear weights stored packed (pack_panels)
PANEL = 16  # columns per packed GEMM panel: CX_NR in the C runtime
_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


class ExportError(RuntimeError):
    """A graph that :func:`export_c` cannot write as C (the message lists every unsupported op)."""


def _contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _numel(shape) -> int:
    return math.prod(shape)


class _Layout:
    """Where a value lives: C buffer ``buf`` read with ``stride`` from ``offset`` (float elements)."""

    __slots__ = ("buf", "shape", "stride", "offset")

    def __init__(self, buf: str, shape, stride=None, offset: int = 0):
        self.buf, self.shape, self.offset = buf, tuple(shape), offset
        self.stride = tuple(stride) if stride is not None else _contiguous_strides(shape)

    @property
    def contiguous(self) -> bool:
        return all(st == c for sz, st, c in zip(self.shape, self.stride, _contiguous_strides(self.shape)) if sz != 1)

    def broadcast_to(self, shape) -> tuple:
        """The strides that read this value broadcast to ``shape`` (0 on broadcast dims)."""
        pad = len(shape) - len(self.shape)
        out = []
        for d, size in enumerate(shape):
            k = d - pad
            out.append(0 if k < 0 or self.shape[k] != size else self.stride[k])
        return tuple(out)

    def ptr(self) -> str:
        return f"({self.buf} + {self.offset})" if self.offset else self.buf


def _check(node) -> str | None:
    """Why ``node`` cannot be exported (None when it can)."""
    op, args = node.op, node.args
    if len(node.outputs) != 1:
        return "several outputs"
    if op in _VIEW_OPS or op in ("empty", "fill_", "copy_", "cat", "linear", "softmax", "log_softmax", "layer_norm"):
        return None
    if op in UNARY_EXPRESSIONS:
        return None
    if op in BINARY_EXPRESSIONS:
        if len(args) > 2 and op not in ("add", "sub") or node.kwargs:
            return "extra arguments"
        return None
    if op in _EXTRA_UNARY or op in _REDUCTIONS or op == "gather":
        return None
    if op == "batched_matmul":
        return None if len(args[0].shape) >= 2 and len(args[1].shape) >= 2 else "1-D operands"
    if op in ("convolution", "max_pool", "avg_pool"):
        return None if len(args[0].shape) in (3, 4) else "only 1-D and 2-D"
    if op == "batch_norm":
        return None if not args[5] and args[1] is not None else "training mode"
    if op == "index":
        idx = args[1]
        ok = len(idx) == 1 and isinstance(idx[0], Value) and idx[0].dtype.name.startswith(("int", "uint"))
        return None if ok else "only indexing dim 0 with one integer tensor (embedding)"
    return "no C kernel"


SUPPORTED_OPS = tuple(sorted(_VIEW_OPS | _EXTRA_UNARY | _REDUCTIONS | set(UNARY_EXPRESSIONS)
                             | set(BINARY_EXPRESSIONS) | {"empty", "fill_", "copy_", "cat", "linear", "softmax",
                                                          "log_softmax", "layer_norm", "batched_matmul",
                                                          "convolution", "max_pool", "avg_pool", "batch_norm",
                                                          "index", "gather"}))


def _lit(x) -> str:
    return _C.literal(x, "float32")


class _Emitter:
    """Turns the graph's nodes into C statements, tracking the layout of every value."""

    def __init__(self, graph, weights: dict, packed: dict):
        self.layouts: dict = {}
        self.packed = packed  # linear weight -> offset of its packed copy in cx_w
        self.buffers: list = []  # (name, size) of static intermediate buffers
        self.lines: list = []
        for k, v in enumerate(graph.inputs):
            self.layouts[v] = _Layout(f"in{k}", v.shape)
        for v, (_name, off) in weights.items():
            if off is not None:
                self.layouts[v] = _Layout("cx_w", v.shape, offset=off)

    # -- helpers ----------------------------------------------------------------------------------------
    def new_buffer(self, shape) -> _Layout:
        name = f"b{len(self.buffers)}"
        self.buffers.append((name, max(_numel(shape), 1)))
        return _Layout(name, shape)

    def emit(self, *lines):
        self.lines.extend("    " + line for line in lines)

    def loop(self, shape, layouts: list, body: str) -> None:
        """A ``for`` over the elements of ``shape``: ``j<k>`` indexes ``layouts[k]`` (broadcast), ``i`` is flat."""
        n = _numel(shape)
        if n == 0:
            return
        strides = [lay.broadcast_to(shape) for lay in layouts]
        decl, steps = [], []
        for k, lay in enumerate(layouts):
            if lay.shape == tuple(shape) and lay.contiguous:
                decl.append(f"j{k} = i + {lay.offset}")
                strides[k] = None
            else:
                decl.append(f"j{k} = {lay.offset}")
        dims = [d for d in range(len(shape)) if shape[d] != 1]
        for d in reversed(dims):
            adds = "".join(f" j{k} += q * {st[d]};" for k, st in enumerate(strides) if st is not None and st[d])
            if not adds:
                steps.append(f"r /= {shape[d]};")
                continue
            steps.append(f"q = r % {shape[d]}; r /= {shape[d]};{adds}")
        self.emit(*(["CX_PARALLEL"] if n >= _PARALLEL_MIN else []), f"for (long i = 0; i < {n}L; ++i) {{",
                  f"    long r = i, q = 0; long {', '.join(decl) or 'j0 = 0'};",
                  "    (void)r; (void)q;", *("    " + s for s in steps), f"    {body}", "}")

    def contiguous(self, v, shape=None) -> _Layout:
        """The layout of ``v`` as a contiguous buffer of ``shape`` (its own shape by default), copying if needed."""
        lay = self.layouts[v]
        shape = tuple(shape if shape is not None else lay.shape)
        if lay.shape == shape and lay.contiguous:
            return lay
        out = self.new_buffer(shape)
        self.loop(shape, [lay], f"{out.buf}[i] = {lay.buf}[j0];")
        return out

    def operand(self, x, k: int) -> str:
        return f"{self.layouts[x].buf}[j{k}]" if isinstance(x, Value) else _lit(x)

    def elementwise(self, node, template: str, operands: list) -> None:
        out_v = node.outputs[0]
        out = self.new_buffer(out_v.shape)
        tensors = [x for x in operands if isinstance(x, Value)]
        names, k = {}, 0
        for x in tensors:
            if id(x) not in names:
                names[id(x)] = k
                k += 1
        layouts = [None] * k
        for x in tensors:
            layouts[names[id(x)]] = self.layouts[x]
        expr = _C.expand(template, "float32")
        texts = [self.operand(x, names[id(x)]) if isinstance(x, Value) else _lit(x) for x in operands]
        for var, text in zip("abc", texts):
            expr = _replace_var(expr, var, f"({text})")
        self.loop(out_v.shape, layouts, f"{out.buf}[i] = (float)({expr});")
        self.layouts[out_v] = out

    # -- ops --------------------------------------------------------------------------------------------
    def node(self, node) -> None:
        op, args = node.op, node.args
        out_v = node.outputs[0]
        if op in _VIEW_OPS:
            self.layouts[out_v] = _view_layout(node, self.layouts[args[0]])
        elif op == "empty":
            self.layouts[out_v] = self.new_buffer(out_v.shape)
        elif op == "fill_":
            dst = self.layouts[args[0]]
            value = self.operand(args[1], 1) if not isinstance(args[1], Value) else None
            if value is None:  # fill with a 0-dim tensor
                src = self.layouts[args[1]]
                self.loop(dst.shape, [dst, src], f"{dst.buf}[j0] = {src.buf}[j1];")
            else:
                self.loop(dst.shape, [dst], f"{dst.buf}[j0] = {value};")
            self.layouts[out_v] = dst
        elif op == "copy_":
            dst, src = self.layouts[args[0]], self.layouts[args[1]]
            self.loop(dst.shape, [dst, src], f"{dst.buf}[j0] = {src.buf}[j1];")
            self.layouts[out_v] = dst
        elif op in UNARY_EXPRESSIONS:
            self.elementwise(node, UNARY_EXPRESSIONS[op], [args[0]])
        elif op in BINARY_EXPRESSIONS:
            a, b = args[0], args[1]
            alpha = args[2] if len(args) > 2 else 1
            template = BINARY_EXPRESSIONS[op]
            if alpha != 1:
                template = template.replace("b", f"(b * {_lit(alpha)})", 1)
            self.elementwise(node, template, [a, b])
        elif op == "gelu":
            tmpl = ("(0.5f * a * (1.0f + tanhf(0.7978845608028654f * (a + 0.044715f * a * a * a))))"
                    if args[1] == "tanh" else "(0.5f * a * (1.0f + erff(a * 0.7071067811865476f)))")
            self.elementwise(node, tmpl, [args[0]])
        elif op == "where":
            self.elementwise(node, "(a != 0 ? b : c)", list(args[:3]))
        elif op == "clamp":
            lo = args[1] if len(args) > 1 else node.kwargs.get("min")
            hi = args[2] if len(args) > 2 else node.kwargs.get("max")
            expr, operands = "a", [args[0]]
            for bound, cmp in ((lo, "<"), (hi, ">")):
                if bound is not None:
                    var = "bc"[len(operands) - 1]
                    expr = f"(({expr}) {cmp} {var} ? {var} : ({expr}))"
                    operands.append(bound)
            self.elementwise(node, expr, operands)
        elif op == "_to_copy":
            name = out_v.dtype.name
            expr = "a" if name in _FLOAT_DTYPES else "(float)(a != 0)" if name == "bool" else "truncf(a)"
            self.elementwise(node, expr, [args[0]])
        elif op in _REDUCTIONS:
            self.reduction(node)
        elif op == "cat":
            self.cat(node)
        else:
            getattr(self, "op_" + op)(node)

    def reduction(self, node) -> None:
        x, dims = node.args[0], node.args[1] if len(node.args) > 1 else None
        shape = x.shape
        nd = len(shape)
        if isinstance(dims, int):
            dims = [dims]
        dims = sorted({d % nd for d in dims}) if dims else list(range(nd))
        kept = [d for d in range(nd) if d not in dims]
        lay = self.layouts[x]
        perm = _Layout(lay.buf, [shape[d] for d in kept + dims], [lay.stride[d] for d in kept + dims], lay.offset)
        src = self._contig_layout(perm)
        inner = _numel([shape[d] for d in dims])
        out = self.new_buffer(node.outputs[0].shape)
        self.emit(f"cx_reduce_{node.op}({out.buf}, {src.ptr()}, {_numel(out.shape)}L, {inner}L);")
        self.layouts[node.outputs[0]] = out

    def op_gather(self, node) -> None:
        x, dim, idx = node.args[:3]
        dim %= max(len(x.shape), 1)
        lay = self.layouts[x]
        shape = tuple(x.shape[d] if d == dim else idx.shape[d] for d in range(len(x.shape)))
        src = self._contig_layout(_Layout(lay.buf, shape, lay.stride, lay.offset))
        out = self.new_buffer(idx.shape)
        outer, inner = _numel(idx.shape[:dim]), _numel(idx.shape[dim + 1:])
        self.emit(f"cx_gather({out.buf}, {src.ptr()}, {self.contiguous(idx).ptr()}, {outer}L, {x.shape[dim]}L, "
                  f"{idx.shape[dim]}L, {inner}L);")
        self.layouts[node.outputs[0]] = out

    def _contig_layout(self, lay: _Layout) -> _Layout:
        if lay.contiguous:
            return lay
        out = self.new_buffer(lay.shape)
        self.loop(lay.shape, [lay], f"{out.buf}[i] = {lay.buf}[j0];")
        return out

    def cat(self, node) -> None:
        tensors, dim = node.args[0], node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        out_v = node.outputs[0]
        dim %= len(out_v.shape)
        out = self.new_buffer(out_v.shape)
        start = 0
        for t in tensors:
            if _numel(t.shape) == 0 and len(t.shape) == 1:  # torch skips legacy empty (0,) tensors
                continue
            size = t.shape[dim]
            dst = _Layout(out.buf, t.shape, out.stride, start * out.stride[dim])
            src = self.layouts[t]
            self.loop(t.shape, [dst, src], f"{dst.buf}[j0] = {src.buf}[j1];")
            start += size
        self.layouts[out_v] = out

    def _opt(self, v) -> str:
        return self.contiguous(v).ptr() if isinstance(v, Value) else "NULL"

    def op_linear(self, node) -> None:
        x, w = node.args[0], node.args[1]
        b = node.args[2] if len(node.args) > 2 else None
        n, k = w.shape if len(w.shape) == 2 else (1, w.shape[0])
        if w in self.packed:
            wp = f"(cx_w + {self.packed[w]})" if self.packed[w] else "cx_w"
        else:  # a computed weight: packed on every call
            wp = self.new_buffer((k * _panels(n) * PANEL,)).buf
            self.emit(f"cx_pack({wp}, {self.contiguous(w).ptr()}, {k}L, {n}L, 1L, {k}L);")
        out = self.new_buffer(node.outputs[0].shape)
        m = _numel(x.shape) // max(k, 1)
        self.emit(f"cx_linear({out.buf}, {self.contiguous(x).ptr()}, {wp}, {self._opt(b)}, {m}L, {k}L, {n}L);")
        self.layouts[node.outputs[0]] = out

    def op_batched_matmul(self, node) -> None:
        a, b = node.args
        out_v = node.outputs[0]
        batch = out_v.shape[:-2]
        m, kk = a.shape[-2:]
        n = b.shape[-1]
        pa = self.contiguous(a, batch + (m, kk)).ptr()
        pb = self.contiguous(b, batch + (kk, n)).ptr()
        scratch = self.new_buffer((kk * _panels(n) * PANEL,))
        out = self.new_buffer(out_v.shape)
        self.emit(f"cx_bmm({out.buf}, {pa}, {pb}, {scratch.buf}, {_numel(batch)}L, {m}L, {kk}L, {n}L);")
        self.layouts[out_v] = out

    def op_convolution(self, node) -> None:
        x, w, b, stride, padding, dilation, groups = node.args[:7]
        two = len(x.shape) == 4
        xs = x.shape if two else x.shape[:2] + (1,) + x.shape[2:]
        ws = w.shape if two else w.shape[:2] + (1,) + w.shape[2:]
        ys = node.outputs[0].shape if two else node.outputs[0].shape[:2] + (1,) + node.outputs[0].shape[2:]
        st, pd, dl = (_pair(stride, two), _pair(padding, two, 0), _pair(dilation, two))
        col = self.new_buffer((xs[0] * ws[1] * ws[2] * ws[3] * _panels(ys[2] * ys[3]) * PANEL,))
        out = self.new_buffer(node.outputs[0].shape)
        self.emit(f"cx_conv2d({out.buf}, {self.contiguous(x).ptr()}, {self.contiguous(w).ptr()}, {self._opt(b)}, "
                  f"{col.buf}, {xs[0]}, {xs[1]}, {xs[2]}, {xs[3]}, {ws[0]}, {ws[2]}, {ws[3]}, {ys[2]}, {ys[3]}, "
                  f"{st[0]}, {st[1]}, {pd[0]}, {pd[1]}, {dl[0]}, {dl[1]}, {groups});")
        self.layouts[node.outputs[0]] = out

    def _pool(self, node, call: str) -> None:
        x = node.args[0]
        two = len(x.shape) == 4
        xs = x.shape if two else x.shape[:2] + (1,) + x.shape[2:]
        ys = node.outputs[0].shape if two else node.outputs[0].shape[:2] + (1,) + node.outputs[0].shape[2:]
        k, s, p = _pair(node.args[1], two), _pair(node.args[2] or node.args[1], two), _pair(node.args[3], two, 0)
        out = self.new_buffer(node.outputs[0].shape)
        self.emit(f"{call}({out.buf}, {self.contiguous(x).ptr()}, {xs[0] * xs[1]}L, {xs[2]}, {xs[3]}, {ys[2]}, "
                  f"{ys[3]}, {k[0]}, {k[1]}, {s[0]}, {s[1]}, {p[0]}, {p[1]}, " + "{extra});")
        self.layouts[node.outputs[0]] = out

    def op_max_pool(self, node) -> None:
        two = len(node.args[0].shape) == 4
        d = _pair(node.args[4], two)
        self._pool(node, "cx_maxpool2d")
        self.lines[-1] = self.lines[-1].replace("{extra}", f"{d[0]}, {d[1]}")

    def op_avg_pool(self, node) -> None:
        include_pad, divisor = node.args[5], node.args[6]
        self._pool(node, "cx_avgpool2d")
        self.lines[-1] = self.lines[-1].replace("{extra}", f"{int(bool(include_pad))}, {int(divisor or 0)}")

    def _rows(self, x, dim: int) -> tuple:
        dim %= len(x.shape)
        return _numel(x.shape[:dim]), x.shape[dim], _numel(x.shape[dim + 1:])

    def _softmax(self, node, log: int) -> None:
        x, dim = node.args[0], node.args[1]
        outer, d, inner = self._rows(x, dim)
        out = self.new_buffer(node.outputs[0].shape)
        self.emit(f"cx_softmax({out.buf}, {self.contiguous(x).ptr()}, {outer}L, {d}L, {inner}L, {log});")
        self.layouts[node.outputs[0]] = out

    def op_softmax(self, node) -> None:
        self._softmax(node, 0)

    def op_log_softmax(self, node) -> None:
        self._softmax(node, 1)

    def op_layer_norm(self, node) -> None:
        x, normalized, w, b, eps = node.args[:5]
        n = _numel(normalized)
        out = self.new_buffer(node.outputs[0].shape)
        self.emit(f"cx_layer_norm({out.buf}, {self.contiguous(x).ptr()}, {self._opt(w)}, {self._opt(b)}, "
                  f"{_numel(x.shape) // max(n, 1)}L, {n}L, {_lit(eps)});")
        self.layouts[node.outputs[0]] = out

    def op_batch_norm(self, node) -> None:
        x, mean, var, w, b, _training, _momentum, eps = node.args[:8]
        outer, c, inner = self._rows(x, 1)
        out = self.new_buffer(node.outputs[0].shape)
        self.emit(f"cx_batch_norm({out.buf}, {self.contiguous(x).ptr()}, {self._opt(mean)}, {self._opt(var)}, "
                  f"{self._opt(w)}, {self._opt(b)}, {outer}L, {c}L, {inner}L, {_lit(eps)});")
        self.layouts[node.outputs[0]] = out

    def op_index(self, node) -> None:
        table, (idx,) = node.args[0], node.args[1]
        rows, row = table.shape[0], _numel(table.shape[1:])
        out = self.new_buffer(node.outputs[0].shape)
        self.emit(f"cx_gather_rows({out.buf}, {self.contiguous(table).ptr()}, {self.contiguous(idx).ptr()}, "
                  f"{_numel(idx.shape)}L, {rows}L, {row}L);")
        self.layouts[node.outputs[0]] = out


def _replace_var(expr: str, var: str, text: str) -> str:
    """``expr`` with the single-letter identifier ``var`` replaced by ``text`` (not inside longer names)."""
    out, i = [], 0
    while i < len(expr):
        c = expr[i]
        if c == var and (i == 0 or not (expr[i - 1].isalnum() or expr[i - 1] == "_")) and \
                (i + 1 == len(expr) or not (expr[i + 1].isalnum() or expr[i + 1] == "_")):
            out.append(text)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _panels(n: int) -> int:
    return -(-n // PANEL)


def pack_panels(b: np.ndarray) -> np.ndarray:
    """``b[K, N]`` as the C GEMM reads it (``cx_pack``): ``ceil(N / PANEL)`` panels, each ``[K, PANEL]``
    row-major, zero past column ``N``, flattened. Linear weights ``w[N, K]`` are stored as ``pack_panels(w.T)``."""
    k, n = b.shape
    padded = np.zeros((k, _panels(n) * PANEL), np.float32)
    padded[:, :n] = b
    return np.ascontiguousarray(padded.reshape(k, -1, PANEL).transpose(1, 0, 2)).reshape(-1)


def _linear_weights(graph, stored) -> tuple:
    """The stored values used as a linear's weight (packed at export time), and those used anywhere else too."""
    linear, other = set(), set()
    for node in graph.nodes:
        for pos, a in enumerate(_flat_leaves(list(node.args) + list(node.kwargs.values()))):
            if isinstance(a, Value) and a in stored:
                (linear if node.op == "linear" and pos == 1 else other).add(a)
    other.update(v for v in _flat_leaves(graph.output) if isinstance(v, Value) and v in stored)
    return linear, other


def _pair(v, two: bool, fill: int = 1) -> tuple:
    """A 2-D pooling/convolution parameter: ``v`` itself in 2-D, ``(fill, v)`` for a 1-D op run as 2-D."""
    v = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if two:
        return v if len(v) == 2 else (v[0], v[0])
    return (fill, v[0])


def _view_layout(node, lay: _Layout) -> _Layout:
    """The layout of a view op's output, found by running the op on a probe tensor with ``lay``'s strides."""
    from .. import empty
    from ..dispatch.operator import OPERATORS

    size = lay.offset + sum((n - 1) * st for n, st in zip(lay.shape, lay.stride) if n > 0) + 1
    probe = empty(size)._alias(lay.shape, lay.stride, lay.offset)
    args = tuple(probe if a is node.args[0] else a for a in node.args)
    res = OPERATORS[node.op](*args, **node.kwargs)
    return _Layout(lay.buf, res._shape, res._stride, res._offset)


# The C helpers every exported model.c carries (float32 data, double accumulators where rounding matters).
_RUNTIME = r"""
#define CX_PRAGMA(x) _Pragma(#x)
#ifdef _OPENMP
#define CX_PARALLEL _Pragma("omp parallel for")
#define CX_PARALLEL_IF(cond) CX_PRAGMA(omp parallel for schedule(static) if (cond))
/* n blocks handed out one at a time (a thread the OS parks does not hold up a fixed share) to at most n threads */
#define CX_TEAM(n) ((n) < omp_get_max_threads() ? (int)(n) : omp_get_max_threads())
#define CX_PARALLEL_BLOCKS_IF(cond, n) CX_PRAGMA(omp parallel for schedule(dynamic) if (cond) num_threads(CX_TEAM(n)))
#else
#define CX_PARALLEL
#define CX_PARALLEL_IF(cond)
#define CX_PARALLEL_BLOCKS_IF(cond, n)
#endif
#ifdef _OPENMP
#include <omp.h>
#define CX_THREAD omp_get_thread_num() /* < the block count under CX_PARALLEL_BLOCKS_IF: a slot per thread */
#else
#define CX_THREAD 0
#endif
/* GEMM blocking (CX_NR is also the panel width of the packed weights, PANEL in export_c.py) */
#define CX_MR 6 /* the rows cx_tile spells out */
#define CX_NR 16
#define CX_KC 256
/* Work under these sizes stays on one thread (waking threads costs more, the more so on a busy machine) */
#define CX_PARALLEL_FLOPS 1048576L /* multiply-adds of a GEMM or convolution */
#define CX_PARALLEL_MIN 262144L /* elements a pooling, softmax or norm reads; _PARALLEL_MIN in export_c.py */
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define CX_FMA(a, b, c) fmaf(a, b, c) /* one instruction where the target has it (C99 does not contract) */
#else
#define CX_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* The SGEMM under every linear, matmul and convolution: C[M, N] (row stride ldc) = A[M, K] (row stride lda)
   @ B[K, N] + a bias per row (brow) or per column (bcol). B is read in panels of CX_NR columns: panel p's row k
   at b + p * ps + k * ldb, CX_NR floats, zero past N. Packed (linear weights, packed so at export time):
   ldb = CX_NR, ps = K * CX_NR, each panel one contiguous block. Row-major with rows padded to a multiple of
   CX_NR (the im2col of a convolution): ldb = the padded row, ps = CX_NR. One CX_MR x CX_NR block of C is
   accumulated in local arrays over a CX_KC slice of K (k outermost), so the j loop is what the compiler
   vectorises and the panel slice stays in L1 across the row blocks. */
static void cx_tile(float* restrict c, long ldc, const float* restrict a, long lda, const float* restrict bp,
                    long ldb, long K, long mr, long nr, int load, const float* brow, const float* bcol) {
    /* rows past mr repeat the last one (computed, not stored); one named array per row keeps them in registers */
    const float* restrict a0 = a;
    const float* restrict a1 = a + (mr > 1 ? 1 : 0) * lda;
    const float* restrict a2 = a + (mr > 2 ? 2 : mr - 1) * lda;
    const float* restrict a3 = a + (mr > 3 ? 3 : mr - 1) * lda;
    const float* restrict a4 = a + (mr > 4 ? 4 : mr - 1) * lda;
    const float* restrict a5 = a + (mr > 5 ? 5 : mr - 1) * lda;
    float c0[CX_NR], c1[CX_NR], c2[CX_NR], c3[CX_NR], c4[CX_NR], c5[CX_NR];
    float* rows[CX_MR];
    long i, j, k;
    for (j = 0; j < CX_NR; ++j) c0[j] = c1[j] = c2[j] = c3[j] = c4[j] = c5[j] = 0.0f;
    for (k = 0; k < K; ++k, bp += ldb) {
        float x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k], x4 = a4[k], x5 = a5[k];
        for (j = 0; j < CX_NR; ++j) {
            c0[j] = CX_FMA(x0, bp[j], c0[j]);
            c1[j] = CX_FMA(x1, bp[j], c1[j]);
            c2[j] = CX_FMA(x2, bp[j], c2[j]);
            c3[j] = CX_FMA(x3, bp[j], c3[j]);
            c4[j] = CX_FMA(x4, bp[j], c4[j]);
            c5[j] = CX_FMA(x5, bp[j], c5[j]);
        }
    }
    rows[0] = c0, rows[1] = c1, rows[2] = c2, rows[3] = c3, rows[4] = c4, rows[5] = c5;
    for (i = 0; i < mr; ++i, c += ldc) {
        const float* acc = rows[i];
        if (load) {
            for (j = 0; j < nr; ++j) c[j] += acc[j];
        } else {
            for (j = 0; j < nr; ++j) c[j] = acc[j];
        }
        if (brow)
            for (j = 0; j < nr; ++j) c[j] += brow[i];
        if (bcol)
            for (j = 0; j < nr; ++j) c[j] += bcol[j];
    }
}

/* y[N] = x[K] @ B[K, N] + bias: a batch of one reads each packed panel once, front to back (four partial sums
   per column keep the multiply-adds independent). */
static void cx_gemv(float* restrict y, const float* restrict x, const float* restrict bp, long ldb, long ps,
                    long K, long N, const float* bcol) {
    long p, np = (N + CX_NR - 1) / CX_NR;
    for (p = 0; p < np; ++p) {
        const float* restrict b = bp + p * ps;
        const float* xk;
        float acc[4][CX_NR];
        long j, k, n0 = p * CX_NR, nr = N - n0 < CX_NR ? N - n0 : CX_NR;
        for (k = 0; k < 4; ++k)
            for (j = 0; j < CX_NR; ++j) acc[k][j] = 0.0f;
        for (k = 0; k + 4 <= K; k += 4, b += 4 * ldb)
            for (j = 0; j < CX_NR; ++j) {
                acc[0][j] = CX_FMA(x[k], b[j], acc[0][j]);
                acc[1][j] = CX_FMA(x[k + 1], b[ldb + j], acc[1][j]);
                acc[2][j] = CX_FMA(x[k + 2], b[2 * ldb + j], acc[2][j]);
                acc[3][j] = CX_FMA(x[k + 3], b[3 * ldb + j], acc[3][j]);
            }
        for (xk = x + k; xk < x + K; ++xk, b += ldb) /* pointers: GCC misjudges an indexed tail's range */
            for (j = 0; j < CX_NR; ++j) acc[0][j] = CX_FMA(*xk, b[j], acc[0][j]);
        for (j = 0; j < nr; ++j)
            y[n0 + j] = ((acc[0][j] + acc[1][j]) + (acc[2][j] + acc[3][j])) + (bcol ? bcol[n0 + j] : 0.0f);
    }
}

/* C = A @ B (+ bias), B in panels (see cx_tile); a single row is a GEMV; threads (OpenMP)
   split the column panels when `threads` and the product is large enough. */
static void cx_gemm(float* c, long ldc, const float* a, long lda, const float* bp, long ldb, long ps, long M,
                    long K, long N, const float* brow, const float* bcol, int threads) {
    long np = (N + CX_NR - 1) / CX_NR, p;
    if (M == 1) {
        cx_gemv(c, a, bp, ldb, ps, K, N, bcol);
        if (brow)
            for (p = 0; p < N; ++p) c[p] += brow[0];
        return;
    }
    (void)threads;
    CX_PARALLEL_BLOCKS_IF(threads && np > 1 && M * N * K >= CX_PARALLEL_FLOPS, np)
    for (p = 0; p < np; ++p) {
        long n0 = p * CX_NR, nr = N - n0 < CX_NR ? N - n0 : CX_NR, k0 = 0, m0;
        do {
            long kc = K - k0 < CX_KC ? K - k0 : CX_KC, last = k0 + kc >= K;
            for (m0 = 0; m0 < M; m0 += CX_MR)
                cx_tile(c + m0 * ldc + n0, ldc, a + m0 * lda + k0, lda, bp + p * ps + k0 * ldb, ldb, kc,
                        M - m0 < CX_MR ? M - m0 : CX_MR, nr, k0 > 0, last && brow ? brow + m0 : NULL,
                        last && bcol ? bcol + n0 : NULL);
            k0 += kc;
        } while (k0 < K);
    }
}

/* bp = B[K, N] (B[k, n] at b[k * rs + n * cs]) packed in CX_NR-column panels for cx_gemm */
static void cx_pack(float* bp, const float* b, long K, long N, long rs, long cs) {
    long np = (N + CX_NR - 1) / CX_NR, p, k, j;
    for (p = 0; p < np; ++p)
        for (k = 0; k < K; ++k)
            for (j = 0; j < CX_NR; ++j) {
                long n = p * CX_NR + j;
                bp[(p * K + k) * CX_NR + j] = n < N ? b[k * rs + n * cs] : 0.0f;
            }
}

/* out[m, n] = sum_k x[m, k] * w[n, k] + b[n], w given packed (w^T in panels, see cx_tile) */
static void cx_linear(float* out, const float* x, const float* wp, const float* b, long M, long K, long N) {
    cx_gemm(out, N, x, K, wp, CX_NR, K * CX_NR, M, K, N, NULL, b, 1);
}

/* out[B, M, N] = a[B, M, K] @ b[B, K, N]; bp: scratch for one packed b[t] */
static void cx_bmm(float* out, const float* a, const float* b, float* bp, long B, long M, long K, long N) {
    long t;
    for (t = 0; t < B; ++t) {
        cx_pack(bp, b + t * K * N, K, N, N, 1);
        cx_gemm(out + t * M * N, N, a + t * M * K, K, bp, CX_NR, K * CX_NR, M, K, N, NULL, NULL, 1);
    }
}

/* col[R, Q] = the patches of one image's channels [C, H, W]: row r = (c, kh, kw), column q = (oh, ow), rows
   padded with zeros to Q (a multiple of CX_NR) and zero where the window leaves the image (padding) */
static void cx_im2col(float* col, const float* x, long C, long H, long W, long KH, long KW, long OH, long OW,
                      long Q, long sh, long sw, long ph, long pw, long dh, long dw) {
    long r, oh, ow, R = C * KH * KW;
    for (r = 0; r < R; ++r) {
        long c = r / (KH * KW), kh = r / KW % KH, kw = r % KW;
        float* dst = col + r * Q;
        for (oh = 0; oh < OH; ++oh, dst += OW) {
            long ih = oh * sh - ph + kh * dh;
            const float* row = x + (c * H + (ih < 0 || ih >= H ? 0 : ih)) * W;
            if (ih < 0 || ih >= H) {
                for (ow = 0; ow < OW; ++ow) dst[ow] = 0.0f;
            } else if (sw == 1 && pw == 0 && (OW - 1) + kw * dw < W) {
                for (ow = 0; ow < OW; ++ow) dst[ow] = row[ow + kw * dw]; /* the common case: one contiguous run */
            } else {
                for (ow = 0; ow < OW; ++ow) {
                    long iw = ow * sw - pw + kw * dw;
                    dst[ow] = (iw >= 0 && iw < W) ? row[iw] : 0.0f;
                }
            }
        }
        for (ow = OH * OW; ow < Q; ++ow) col[r * Q + ow] = 0.0f;
    }
}

/* 2-D convolution, NCHW, weight [O, C/groups, KH, KW]: per image and group, im2col then cx_gemm with the
   weight as A (its rows as stored) and the im2col as B; col: room for N im2cols (one per thread is used);
   images run in parallel */
static void cx_conv2d(float* out, const float* x, const float* w, const float* b, float* col, long N, long C, long H,
                      long W, long O, long KH, long KW, long OH, long OW, long sh, long sw, long ph, long pw,
                      long dh, long dw, long groups) {
    long cg = C / groups, og = O / groups, P = OH * OW, R = cg * KH * KW;
    long Q = (P + CX_NR - 1) / CX_NR * CX_NR, n;
    CX_PARALLEL_BLOCKS_IF(N > 1 && N * O * R * P >= CX_PARALLEL_FLOPS, N)
    for (n = 0; n < N; ++n) {
        long g;
        for (g = 0; g < groups; ++g) {
            float* cn = col + CX_THREAD * R * Q; /* one im2col per thread, reused while it is in cache */
            cx_im2col(cn, x + (n * C + g * cg) * H * W, cg, H, W, KH, KW, OH, OW, Q, sh, sw, ph, pw, dh, dw);
            cx_gemm(out + (n * O + g * og) * P, P, w + g * og * R, R, cn, Q, CX_NR, og, R, P, b ? b + g * og : NULL,
                    NULL, 0);
        }
    }
}

/* o[ow] = max(o[ow], xr[ow * sw + off]) for ow in [lo, hi), NaN propagating (branch-free: it vectorises) */
static void cx_max_into(float* restrict o, const float* restrict xr, long lo, long hi, long sw, long off) {
    long ow;
    for (ow = lo; ow < hi; ++ow) {
        float v = xr[ow * sw + off], m = o[ow];
        o[ow] = ((v > m) | (v != v)) ? v : m;
    }
}
static void cx_maxpool2d(float* out, const float* x, long NC, long H, long W, long OH, long OW, long KH, long KW,
                         long sh, long sw, long ph, long pw, long dh, long dw) {
    long t;
    CX_PARALLEL_IF(NC * OH * OW * KH * KW >= CX_PARALLEL_MIN)
    for (t = 0; t < NC; ++t) {
        long oh, ow, kh, kw;
        for (oh = 0; oh < OH; ++oh) {
            float* o = out + (t * OH + oh) * OW;
            for (ow = 0; ow < OW; ++ow) o[ow] = -INFINITY;
            for (kh = 0; kh < KH; ++kh) {
                long ih = oh * sh - ph + kh * dh;
                if (ih < 0 || ih >= H) continue;
                for (kw = 0; kw < KW; ++kw) {
                    /* the columns whose window tap (kh, kw) is inside the image: ow in [lo, hi), no test per element */
                    long off = kw * dw - pw, lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                    long hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / sw + 1;
                    cx_max_into(o, x + (t * H + ih) * W, lo, hi < OW ? hi : OW, sw, off);
                }
            }
        }
    }
}

static long cx_min(long a, long b) { return a < b ? a : b; }
static long cx_max(long a, long b) { return a > b ? a : b; }

static void cx_avgpool2d(float* out, const float* x, long NC, long H, long W, long OH, long OW, long KH, long KW,
                         long sh, long sw, long ph, long pw, int count_include_pad, long divisor_override) {
    long t;
    CX_PARALLEL_IF(NC * OH * OW * KH * KW >= CX_PARALLEL_MIN)
    for (t = 0; t < NC; ++t) {
        long oh, ow, ih, iw;
        for (oh = 0; oh < OH; ++oh)
            for (ow = 0; ow < OW; ++ow) {
                long h0 = oh * sh - ph, w0 = ow * sw - pw;
                long h1 = cx_min(h0 + KH, H + ph), w1 = cx_min(w0 + KW, W + pw);
                long padded = (h1 - h0) * (w1 - w0), div;
                double acc = 0.0;
                h0 = cx_max(h0, 0); w0 = cx_max(w0, 0); h1 = cx_min(h1, H); w1 = cx_min(w1, W);
                for (ih = h0; ih < h1; ++ih)
                    for (iw = w0; iw < w1; ++iw) acc += x[(t * H + ih) * W + iw];
                div = divisor_override ? divisor_override : count_include_pad ? padded : (h1 - h0) * (w1 - w0);
                out[(t * OH + oh) * OW + ow] = (float)(acc / (double)div);
            }
    }
}

/* softmax (or log_softmax) over the middle axis of [outer, D, inner] */
static void cx_softmax(float* out, const float* x, long outer, long D, long inner, int log_) {
    long t;
    CX_PARALLEL_IF(outer * inner * D >= CX_PARALLEL_MIN)
    for (t = 0; t < outer * inner; ++t) {
        long o = t / inner, in = t % inner, d;
        const float* xr = x + o * D * inner + in;
        float* yr = out + o * D * inner + in;
        float m = -INFINITY;
        double s = 0.0;
        for (d = 0; d < D; ++d) if (xr[d * inner] > m || xr[d * inner] != xr[d * inner]) m = xr[d * inner];
        for (d = 0; d < D; ++d) s += exp((double)xr[d * inner] - m);
        for (d = 0; d < D; ++d)
            yr[d * inner] = log_ ? (float)((double)xr[d * inner] - m - log(s))
                                 : (float)(exp((double)xr[d * inner] - m) / s);
    }
}

static void cx_layer_norm(float* out, const float* x, const float* w, const float* b, long rows, long n,
                          float eps) {
    long r;
    CX_PARALLEL_IF(rows * n >= CX_PARALLEL_MIN)
    for (r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        double mean = 0.0, var = 0.0, inv;
        long k;
        for (k = 0; k < n; ++k) mean += xr[k];
        mean /= (double)n;
        for (k = 0; k < n; ++k) var += (xr[k] - mean) * (xr[k] - mean);
        inv = 1.0 / sqrt(var / (double)n + eps);
        for (k = 0; k < n; ++k) {
            double y = (xr[k] - mean) * inv;
            if (w) y *= w[k];
            if (b) y += b[k];
            out[r * n + k] = (float)y;
        }
    }
}

/* batch_norm in eval mode over [outer, C, inner] */
static void cx_batch_norm(float* out, const float* x, const float* mean, const float* var, const float* w,
                          const float* b, long outer, long C, long inner, float eps) {
    long t;
    for (t = 0; t < outer * C; ++t) {
        long c = t % C, k;
        double scale = 1.0 / sqrt((double)var[c] + eps), shift;
        if (w) scale *= w[c];
        shift = (b ? b[c] : 0.0) - mean[c] * scale;
        for (k = 0; k < inner; ++k) out[t * inner + k] = (float)(x[t * inner + k] * scale + shift);
    }
}

static void cx_reduce_sum(float* out, const float* x, long n, long inner) {
    long i, k;
    for (i = 0; i < n; ++i) {
        double acc = 0.0;
        for (k = 0; k < inner; ++k) acc += x[i * inner + k];
        out[i] = (float)acc;
    }
}

static void cx_reduce_amax(float* out, const float* x, long n, long inner) {
    long i, k;
    for (i = 0; i < n; ++i) {
        float acc = -INFINITY;
        for (k = 0; k < inner; ++k) {
            float v = x[i * inner + k];
            if (v > acc || v != v) acc = v;
        }
        out[i] = acc;
    }
}

static void cx_reduce_amin(float* out, const float* x, long n, long inner) {
    long i, k;
    for (i = 0; i < n; ++i) {
        float acc = INFINITY;
        for (k = 0; k < inner; ++k) {
            float v = x[i * inner + k];
            if (v < acc || v != v) acc = v;
        }
        out[i] = acc;
    }
}

static void cx_reduce_argmax(float* out, const float* x, long n, long inner) {
    long i, k;
    for (i = 0; i < n; ++i) {
        long best = 0;
        for (k = 1; k < inner; ++k) {
            float v = x[i * inner + k], b = x[i * inner + best];
            if (b == b && (v > b || v != v)) best = k;
        }
        out[i] = (float)best;
    }
}

static void cx_reduce_argmin(float* out, const float* x, long n, long inner) {
    long i, k;
    for (i = 0; i < n; ++i) {
        long best = 0;
        for (k = 1; k < inner; ++k) {
            float v = x[i * inner + k], b = x[i * inner + best];
            if (b == b && (v < b || v != v)) best = k;
        }
        out[i] = (float)best;
    }
}

/* out[o, j, i] = x[o, idx[o, j, i], i] over [outer, D, inner] (gather along the middle axis) */
static void cx_gather(float* out, const float* x, const float* idx, long outer, long D, long DI, long inner) {
    long t;
    for (t = 0; t < outer * DI * inner; ++t) {
        long o = t / (DI * inner), i = t % inner, r = (long)idx[t];
        if (r < 0) r += D;
        out[t] = (r >= 0 && r < D) ? x[(o * D + r) * inner + i] : 0.0f;
    }
}

/* out[i, :] = table[idx[i], :] (embedding); an index out of range gives a zero row */
static void cx_gather_rows(float* out, const float* table, const float* idx, long n, long rows, long row) {
    long i, k;
    for (i = 0; i < n; ++i) {
        long r = (long)idx[i];
        if (r < 0) r += rows;
        for (k = 0; k < row; ++k) out[i * row + k] = (r >= 0 && r < rows) ? table[r * row + k] : 0.0f;
    }
}
"""


def _runtime_for(body: str) -> str:
    """The helpers of :data:`_RUNTIME` that ``body`` (or a helper it uses) calls: unused statics would warn."""
    import re

    chunks = _RUNTIME.strip("\n").split("\n\n")
    used, text, changed = [chunks[0]], body, True
    rest = chunks[1:]
    while changed:
        changed = False
        for chunk in list(rest):
            names = re.findall(r"static \w+ (cx_\w+)\(", chunk)
            if any(re.search(rf"\b{n}\(", text) for n in names):
                used.append(chunk)
                rest.remove(chunk)
                text += chunk
                changed = True
    order = {c: i for i, c in enumerate(chunks)}
    return "\n\n".join(sorted(used, key=order.get))


def _resolve_params(traced, graph) -> dict:
    """Qualified name -> tensor of every parameter/buffer the graph binds."""
    from .traced import TracedModule

    if isinstance(traced, TracedModule):
        out = {}
        for name in graph.params:
            owner, _, leaf = name.rpartition(".")
            module = traced.get_submodule(owner) if owner else traced
            out[name] = module._buffers[leaf] if leaf in module._buffers else module._parameters[leaf]
        return out
    return {name: traced._params[name] for name in graph.params}


def _as_float32(t) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(t.detach().cpu().numpy(), dtype=np.float32)).reshape(-1)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _shape_macros(kind: str, values: list) -> list:
    lines = [f"#define MODEL_NUM_{kind.upper()}S {len(values)}"]
    for k, v in enumerate(values):
        lines.append(f"#define MODEL_{kind.upper()}{k}_SIZE {max(_numel(v.shape), 1)}L  "
                     f"/* {v.dtype.name}[{', '.join(map(str, v.shape))}] */")
        lines.append(f"#define MODEL_{kind.upper()}{k}_NDIM {len(v.shape)}")
        lines.append(f"#define MODEL_{kind.upper()}{k}_SHAPE {{{', '.join(map(str, v.shape)) or '1'}}}")
    return lines


def _float_c(x: float) -> str:
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "-INFINITY" if x < 0 else "INFINITY"
    return float(x).hex() + "f"


_MAIN = r"""/* Reads each input from a raw float32 file, runs the model, writes each output to a raw float32 file. */
#include <stdio.h>
#include <stdlib.h>
#include "model.h"

static int read_file(const char* path, float* data, long n) {
    FILE* f = fopen(path, "rb");
    long got;
    if (!f) { fprintf(stderr, "cannot open %s\n", path); return 1; }
    got = (long)fread(data, sizeof(float), (size_t)n, f);
    fclose(f);
    if (got != n) { fprintf(stderr, "%s: expected %ld float32 values, read %ld\n", path, n, got); return 1; }
    return 0;
}

int main(int argc, char** argv) {
    static const long in_sizes[] = MODEL_INPUT_SIZES;
    static const long out_sizes[] = MODEL_OUTPUT_SIZES;
    const float* inputs[MODEL_NUM_INPUTS + 1]; /* + 1: C has no empty arrays */
    float* outputs[MODEL_NUM_OUTPUTS];
    int first = MODEL_EMBEDDED_WEIGHTS ? 1 : 2, k, rc;
    if (argc != first + MODEL_NUM_INPUTS + MODEL_NUM_OUTPUTS) {
        fprintf(stderr, "usage: %s %sINPUT_FILE x%d OUTPUT_FILE x%d\n", argv[0],
                MODEL_EMBEDDED_WEIGHTS ? "" : "WEIGHTS_FILE ", MODEL_NUM_INPUTS, MODEL_NUM_OUTPUTS);
        return 2;
    }
    if (model_init(MODEL_EMBEDDED_WEIGHTS ? NULL : argv[1]) != 0) {
        fprintf(stderr, "cannot load weights\n");
        return 1;
    }
    for (k = 0; k < MODEL_NUM_INPUTS; ++k) {
        float* buf = (float*)malloc(sizeof(float) * (size_t)in_sizes[k]);
        if (!buf || read_file(argv[first + k], buf, in_sizes[k])) return 1;
        inputs[k] = buf;
    }
    for (k = 0; k < MODEL_NUM_OUTPUTS; ++k) {
        outputs[k] = (float*)malloc(sizeof(float) * (size_t)out_sizes[k]);
        if (!outputs[k]) return 1;
    }
    rc = model_forward(inputs, outputs);
    if (rc != 0) { fprintf(stderr, "model_forward failed (%d)\n", rc); return 1; }
    for (k = 0; k < MODEL_NUM_OUTPUTS; ++k) {
        const char* path = argv[first + MODEL_NUM_INPUTS + k];
        FILE* f = fopen(path, "wb");
        if (!f || fwrite(outputs[k], sizeof(float), (size_t)out_sizes[k], f) != (size_t)out_sizes[k]) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        fclose(f);
    }
    return 0;
}
"""

_MAKEFILE = """# Builds the exported model with a C99 compiler alone: `make` (or `make CC=clang`).
# OPENMP: flags enabling OpenMP (detected: -fopenmp when $(CC) accepts it; `make OPENMP=` to turn it off).
# ARCH:   optimisation for this machine (detected: -O3 -march=native when $(CC) accepts them; `make ARCH=` off,
#         e.g. to build for another CPU). Nothing else is needed: the GEMM is the model's own C.
CC ?= cc
CFLAGS ?= -O2 -std=c99
ifeq ($(origin OPENMP), undefined)
OPENMP := $(shell printf 'int main(void){return 0;}\\n' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null \\
            && echo -fopenmp)
endif
ifeq ($(origin ARCH), undefined)
ARCH := $(shell printf 'int main(void){return 0;}\\n' | $(CC) -O3 -march=native -x c - -o /dev/null 2>/dev/null \\
          && echo -O3 -march=native)
endif

all: {all}

model.o: model.c model.h
\t$(CC) $(CFLAGS) $(ARCH) $(OPENMP) -c model.c -o model.o
{main_rules}
clean:
\trm -f model.o main.o model

.PHONY: all clean
"""

_MAIN_RULES = """
main.o: main.c model.h
\t$(CC) $(CFLAGS) -c main.c -o main.o

model: main.o model.o
\t$(CC) $(CFLAGS) $(ARCH) $(OPENMP) main.o model.o -o model -lm
"""


def export_c(traced, out_dir, *, embed_weights: bool = False, main: bool = True) -> dict:
    """Write a traced model as standalone C99 (``model.c``/``model.h``, weights, ``main.c``, ``Makefile``).

    Deployment without Python, in the spirit of exporting a ``torch.jit`` trace for an ahead-of-time
    runtime (PyTorch has no direct equivalent; ``torch.export`` + AOTInductor is the closest). ``traced`` is
    what :func:`core.jit.trace` returned; the graph of its current mode is written as traced (before fusion).
    ``model_forward(inputs, outputs)`` takes one contiguous float32 array per input and fills one per output
    (the graph's outputs flattened in order). Returns the paths written, by role. Raises :class:`ExportError`
    listing every unsupported op (and why) before writing anything.
    """
    from .traced import TracedFunction, TracedModule

    if not isinstance(traced, (TracedFunction, TracedModule)):
        raise TypeError(f"core.jit.export_c(): expected what core.jit.trace() returned, got {type(traced).__name__}")
    graph = traced.raw_graph
    problems = {}
    for node in graph.nodes:
        why = _check(node)
        if why is not None:
            problems.setdefault(node.op, why)
    outputs = flat_values(graph.output)
    if not outputs or any(not isinstance(x, Value) for x in _flat_leaves(graph.output)):
        problems.setdefault("<output>", "non-tensor outputs or none")
    if problems:
        listed = ", ".join(f"{op} ({why})" for op, why in sorted(problems.items()))
        raise ExportError(f"core.jit.export_c(): {len(problems)} op(s) cannot be exported to C: {listed}")

    params = _resolve_params(traced, graph)
    tensors = [(v, params[name]) for name, v in graph.params.items()]
    tensors += [(v, t) for v, t in graph.constants.values()]
    linear, other = _linear_weights(graph, {v for v, _t in tensors})
    offsets, packed, chunks, total = {}, {}, [], 0
    for v, t in tensors:
        data = _as_float32(t)
        offsets[v] = (v.name, None)
        if v in other or v not in linear:
            offsets[v] = (v.name, total)
            chunks.append(data)
            total += data.size
        if v in linear:  # w[N, K] stored as w^T in GEMM panels: read once, front to back, per call
            n, k = v.shape if len(v.shape) == 2 else (1, v.shape[0])
            packed[v] = total
            chunks.append(pack_panels(data.reshape(n, k).T))
            total += chunks[-1].size
    weights = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)

    em = _Emitter(graph, offsets, packed)
    for node in graph.nodes:
        em.node(node)
    for k, v in enumerate(outputs):
        lay = em.layouts[v]
        em.loop(v.shape, [lay], f"out{k}[i] = {lay.buf}[j0];")

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    header = ["/* Generated by core.jit.export_c: a traced model as portable C99. */", "#ifndef MODEL_H",
              "#define MODEL_H", "", f"#define MODEL_EMBEDDED_WEIGHTS {int(embed_weights)}",
              f"#define MODEL_NUM_WEIGHTS {total}L"]
    header += _shape_macros("input", graph.inputs) + _shape_macros("output", outputs)
    in_sizes = ", ".join(f"MODEL_INPUT{k}_SIZE" for k in range(len(graph.inputs))) or "0"
    out_sizes = ", ".join(f"MODEL_OUTPUT{k}_SIZE" for k in range(len(outputs)))
    header += [f"#define MODEL_INPUT_SIZES {{{in_sizes}}}", f"#define MODEL_OUTPUT_SIZES {{{out_sizes}}}",
               "", "/* Loads the weights (a path to model.weights; ignored, may be NULL, when they are embedded).",
               "   Returns 0 on success. Call once before model_forward. */",
               "int model_init(const char* weights_path);",
               "/* Runs the model: inputs[k] and outputs[k] are contiguous float32 arrays of MODEL_INPUTk_SIZE /",
               "   MODEL_OUTPUTk_SIZE elements. Returns 0 on success (not reentrant: intermediates are static). */",
               "int model_forward(const float* const* inputs, float* const* outputs);", "", "#endif", ""]
    lines, slots = _share_buffers(em.lines, em.buffers)
    body = "\n".join(lines)
    src = ["/* Generated by core.jit.export_c. */", "#include <math.h>", "#include <stdio.h>", "#include <string.h>",
           '#include "model.h"', "", _runtime_for(body), ""]
    if embed_weights:
        values = ", ".join(_float_c(x) for x in weights.tolist()) or "0.0f"
        src += [f"static const float cx_w[{max(total, 1)}] = {{{values}}};", "",
                "int model_init(const char* weights_path) { (void)weights_path; return 0; }"]
    else:
        src += [f"static float cx_w[{max(total, 1)}];", "", _LOADER]
    src += [f"static float s{k}[{size}];" for k, size in enumerate(slots)]
    src += ["", "int model_forward(const float* const* inputs, float* const* outputs) {"]
    src += [f"    const float* in{k} = inputs[{k}]; (void)in{k};" for k in range(len(graph.inputs))]
    src += [f"    float* out{k} = outputs[{k}];" for k in range(len(outputs))]
    if not graph.inputs:
        src.append("    (void)inputs;")
    src += [body, "    return 0;", "}", ""]
    files = {"header": out_dir / "model.h", "source": out_dir / "model.c", "makefile": out_dir / "Makefile"}
    files["header"].write_text("\n".join(header))
    files["source"].write_text("\n".join(src))
    if not embed_weights:
        files["weights"] = out_dir / "model.weights"
        blob = b"CXW1" + struct.pack("<IQ", WEIGHTS_VERSION, total) + weights.astype("<f4").tobytes()
        _write_atomic(files["weights"], blob)
    if main:
        files["main"] = out_dir / "main.c"
        files["main"].write_text(_MAIN)
    files["makefile"].write_text(_MAKEFILE.replace("{all}", "model" if main else "model.o")
                                 .replace("{main_rules}", _MAIN_RULES if main else ""))
    return files


def _share_buffers(lines: list, buffers: list) -> tuple:
    """Give intermediate buffers whose live ranges (first to last line naming them) do not overlap one static
    array: returns the rewritten lines and the size of each shared array ``s<k>``."""
    import re

    first, last = {}, {}
    for n, line in enumerate(lines):
        for name in re.findall(r"\bb\d+\b", line):
            first.setdefault(name, n)
            last[name] = n
    sizes = dict(buffers)
    slots, free_after, assign = [], [], {}
    for name in sorted(first, key=first.get):
        free = [k for k in range(len(slots)) if free_after[k] < first[name]]
        k = min(free, key=lambda k: (slots[k] < sizes[name], abs(slots[k] - sizes[name])), default=None)
        if k is None:
            k = len(slots)
            slots.append(0)
            free_after.append(-1)
        slots[k] = max(slots[k], sizes[name])
        free_after[k] = last[name]
        assign[name] = f"s{k}"
    return [re.sub(r"\bb\d+\b", lambda m: assign[m.group(0)], line) for line in lines], slots


def _flat_leaves(obj) -> list:
    if isinstance(obj, (tuple, list)):
        return [x for o in obj for x in _flat_leaves(o)]
    if isinstance(obj, dict):
        return [x for o in obj.values() for x in _flat_leaves(o)]
    return [obj]


_LOADER = r"""static unsigned long cx_le32(const unsigned char* p) {
    return (unsigned long)p[0] | ((unsigned long)p[1] << 8) | ((unsigned long)p[2] << 16) | ((unsigned long)p[3] << 24);
}

/* model.weights: "CXW1", uint32 version (2), uint64 count, then count little-endian float32 values. */
int model_init(const char* weights_path) {
    unsigned char head[16], buf[4096];
    long done = 0;
    FILE* f;
    if (!weights_path || !(f = fopen(weights_path, "rb"))) return 1;
    if (fread(head, 1, 16, f) != 16 || memcmp(head, "CXW1", 4) != 0 || cx_le32(head + 4) != 2 ||
        cx_le32(head + 8) != (unsigned long)MODEL_NUM_WEIGHTS || cx_le32(head + 12) != 0) {
        fclose(f);
        return 2;
    }
    while (done < MODEL_NUM_WEIGHTS) {
        long want = MODEL_NUM_WEIGHTS - done, k;
        if (want > 1024) want = 1024;
        if (fread(buf, 4, (size_t)want, f) != (size_t)want) { fclose(f); return 3; }
        for (k = 0; k < want; ++k) {
            unsigned long bits = cx_le32(buf + 4 * k);
            float x;
            unsigned int b32 = (unsigned int)bits;
            memcpy(&x, &b32, 4);
            cx_w[done + k] = x;
        }
        done += want;
    }
    fclose(f);
    return 0;
}
"""
