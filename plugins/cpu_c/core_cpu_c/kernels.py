"""cpu_c's kernels: compiled elementwise ops and a BLAS batched_matmul (reductions: reduce.py).

Each kernel validates its operands in Python (layout.py) and then makes one C
call; whatever C does not cover (integer/bool/half dtypes, mixed dtypes,
``alpha``, negative strides) is handed to the NumPy reference kernel it
replaces, so results never depend on which path ran.
"""

from __future__ import annotations

import math

import numpy as np
from core.backends.api import contiguous_strides

from .layout import check_bounds, collapse, operand
from .renderer import COMPARISONS, DTYPES, KERNEL_OPS, kernel_name
from .runtime import new_tensor

__all__ = ["Context", "build_kernels", "sized_thresholds"]

_INT_MAX = 2**31 - 1
KERNELS: dict = {}  # op name -> kernel, filled on the backend's first use
CONTEXT = None  # the Context the kernels share (core_cpu_c.set_min_numel moves its min_numel)


class Context:
    """What every kernel needs: the extension and the dispatch key of the tensors it makes."""

    def __init__(self, ffi, lib, key: int, bool_dtype, min_numel: int):
        self.ffi, self.lib, self.key, self.bool = ffi, lib, key, bool_dtype
        self.from_buffer = ffi.from_buffer
        self.min_numel = min_numel  # below it the NumPy kernel is faster: a C call + checks cost ~2 us


def _elementwise(ctx: Context, entry, shape: tuple, strides: tuple, n: int, out_dtype, operands: list):
    """Allocate the output and run the contiguous or the strided kernel of ``entry`` over ``operands``."""
    contig, strided = entry
    out, buf = new_tensor(shape, out_dtype, n * out_dtype.itemsize, ctx.key, strides)
    if n == 0:
        return out
    fb = ctx.from_buffer
    if all(o.strides is strides for o in operands):  # every input dense and full-size: no collapsing
        args = [n, fb(buf), 0]
        for o in operands:
            args += [fb(o.buffer), o.offset]
        contig(*args)
        return out
    cshape, cstrides = collapse(shape, [strides] + [o.strides for o in operands])
    if n == 1 or (len(cshape) == 1 and all(s == (1,) for s in cstrides)):
        args = [n, fb(buf), 0]
        for o in operands:
            args += [fb(o.buffer), o.offset]
        contig(*args)
        return out
    meta = list(cshape)
    for s in cstrides:
        meta += s
    meta += [0] + [o.offset for o in operands]
    strided(n, len(cshape), ctx.ffi.new("long long[]", meta), fb(buf), *[fb(o.buffer) for o in operands])
    return out


def _entries(ctx: Context, op: str) -> dict:
    return {d: (getattr(ctx.lib, kernel_name(op, d) + "_contig"), getattr(ctx.lib, kernel_name(op, d) + "_strided"))
            for d in DTYPES}


def _run(ctx: Context, op: str, entry, shape: tuple, out_dtype, compute_dtype, inputs: tuple):
    """The output tensor, or None when the NumPy kernel should run (a layout or dtype C does not take).

    Tiny calls never get here: the dispatcher sends them to the NumPy kernel (see :func:`sized_thresholds`).
    """
    n = math.prod(shape)
    strides = contiguous_strides(shape)
    operands = []
    for x in inputs:
        o = operand(op, x, compute_dtype, shape, strides, n)
        if o is None:
            return None
        operands.append(o)
    return _elementwise(ctx, entry, shape, strides, n, out_dtype, operands)


def _unary(ctx: Context, op: str, base):
    entries = _entries(ctx, op)

    def kernel(spec, input):
        cd = spec.compute_dtype
        entry = entries.get(cd.name)
        if entry is not None and spec.dtype == cd:
            out = _run(ctx, op, entry, spec.shape, cd, cd, (input,))
            if out is not None:
                return out
        return base(spec, input)

    return kernel


def _binary(ctx: Context, op: str, base):
    entries = _entries(ctx, op)
    compares = op in COMPARISONS
    has_alpha = op in ("add", "sub")

    def kernel(spec, a, b, alpha=1):
        cd = spec.compute_dtype
        entry = entries.get(cd.name)
        if entry is not None and alpha == 1 and spec.dtype == (ctx.bool if compares else cd):
            out = _run(ctx, op, entry, spec.shape, spec.dtype, cd, (a, b))
            if out is not None:
                return out
        return base(spec, a, b, alpha) if has_alpha else base(spec, a, b)

    return kernel


def _relu(ctx: Context, base):
    """relu is a composite with an optional kernel: called as ``relu(x)`` (no spec)."""
    entries = _entries(ctx, "relu")

    def kernel(x):
        entry = entries.get(x.dtype.name)
        out = None if entry is None else _run(ctx, "relu", entry, x._shape, x.dtype, x.dtype, (x,))
        return base(x) if out is None else out

    return kernel


def _activation_backward(ctx: Context, op: str, base):
    """tanh_backward(g, y) / sigmoid_backward(g, y) / relu_backward(g, x): composites with optional kernels (no
    spec)."""
    entries = _entries(ctx, op)

    def kernel(g, y):
        entry = entries.get(g.dtype.name)
        out = None
        if entry is not None and g._shape == y._shape:
            out = _run(ctx, op, entry, g._shape, g.dtype, g.dtype, (g, y))
        return base(g, y) if out is None else out

    return kernel


def _blas_layout(rows: int, cols: int, s0: int, s1: int):
    """(transposed, leading dim) under which BLAS reads a rows x cols matrix with strides (s0, s1); None if none."""
    if s1 == 1 or cols == 1:
        ld = s0 if rows > 1 else max(cols, 1)
        if max(1, cols) <= ld <= _INT_MAX:
            return 0, ld
    if s0 == 1 or rows == 1:
        ld = s1 if cols > 1 else max(rows, 1)
        if max(1, rows) <= ld <= _INT_MAX:
            return 1, ld
    return None


def _batch_offsets(offset: int, batch_shape: tuple, batch_strides: tuple) -> np.ndarray:
    offsets = np.array([offset], np.int64)
    for size, stride in zip(batch_shape, batch_strides):
        offsets = (offsets[:, None] + np.arange(size, dtype=np.int64) * stride).ravel()
    return offsets


def _matmul(ctx: Context, base):
    gemm = {d: getattr(ctx.lib, f"ccc_gemm_{d}") for d in DTYPES}

    def matrix(t, rows: int, cols: int):
        """(buffer, batch offsets, transposed, ld) of BLAS-readable operand ``t``; copies only odd layouts."""
        check_bounds("batched_matmul", t)
        *_, s0, s1 = t._stride
        layout = _blas_layout(rows, cols, s0, s1) if min(t._stride) >= 0 else None
        if layout is None:  # e.g. stride 0 inside a matrix (expand): BLAS needs a real leading dim
            from core.backends.numpy.runtime import array

            dense = np.ascontiguousarray(array(t))
            batch = dense.shape[:-2]
            strides = tuple(s // dense.itemsize for s in dense.strides[:-2])
            return dense, _batch_offsets(0, batch, strides), 0, max(cols, 1)
        return t._storage.data, _batch_offsets(t._offset, t._shape[:-2], t._stride[:-2]), layout[0], layout[1]

    def kernel(spec, a, b):
        d = spec.dtype
        fn = gemm.get(d.name)
        if fn is None or a.dtype != d or b.dtype != d:
            return base(spec, a, b)
        n, k = a._shape[-2:]
        m = b._shape[-1]
        shape = spec.shape
        if max(n, m, k) > _INT_MAX or math.prod(shape) * k < ctx.min_numel:
            return base(spec, a, b)
        out, buf = new_tensor(shape, d, math.prod(shape) * d.itemsize, ctx.key)
        if n == 0 or m == 0:
            return out
        if k == 0:
            buf[:] = 0
            return out
        a_buf, a_offs, ta, lda = matrix(a, n, k)
        b_buf, b_offs, tb, ldb = matrix(b, k, m)
        fb = ctx.from_buffer
        batch = len(a_offs)
        fn(batch, n, m, k, fb(a_buf), fb("long long[]", a_offs), ta, lda, fb(b_buf), fb("long long[]", b_offs), tb,
           ldb, fb(buf), 0)
        return out

    return kernel




def sized_thresholds(kernels: dict, min_numel: int) -> dict:
    """{op: dispatcher threshold} for the kernels the dispatcher sends to NumPy below ``min_numel`` elements.

    Elementwise ops are sized by their output; the product is sized by its output too, at a 64th of
    ``min_numel`` (it still checks output elements x k itself).
    """
    out = {op: min_numel for op in kernels if op != "batched_matmul"}
    if "batched_matmul" in kernels:
        out["batched_matmul"] = min_numel // 64
    return out


def build_kernels(ffi, lib, key: int, bool_dtype, base_kernels: dict, min_numel: int = 0) -> dict:
    """{op name: kernel} for every op cpu_c compiles, each falling back to ``base_kernels[op]``.

    Elementwise ops with fewer than ``min_numel`` elements and products with fewer than ``min_numel`` output
    elements times k use the NumPy kernel (its per-call cost is lower).
    """
    global CONTEXT
    ctx = CONTEXT = Context(ffi, lib, key, bool_dtype, min_numel)
    kernels = KERNELS
    for op, arity in KERNEL_OPS.items():
        base = base_kernels.get(op)
        if base is None:
            continue
        if op == "relu":
            kernels[op] = _relu(ctx, base)
        elif op in ("tanh_backward", "sigmoid_backward", "relu_backward"):
            kernels[op] = _activation_backward(ctx, op, base)
        elif arity == 1:
            kernels[op] = _unary(ctx, op, base)
        else:
            kernels[op] = _binary(ctx, op, base)
    if "batched_matmul" in base_kernels:
        kernels["batched_matmul"] = _matmul(ctx, base_kernels["batched_matmul"])
    return kernels

