"""cpu_c's kernels: compiled elementwise ops and a BLAS batched_matmul (reductions: reduce.py).

Each kernel validates its operands in Python (layout.py) and then makes one C
call; whatever C does not cover (half and complex dtypes, mixed dtypes,
``alpha``, negative strides, integer division by zero) is handed to the
NumPy reference kernel it replaces, so results never depend on which path ran.
"""

from __future__ import annotations

import math

import numpy as np
from core.backends.api import coalesce, contiguous_strides

from .layout import check_bounds, operand
from .renderer import BOOL_OUTPUT, DTYPES, KERNEL_OPS, OP_DTYPES, kernel_name
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
    """(output, the C call's result) of ``entry``'s contiguous or strided kernel over ``operands``.

    The result is None for void kernels (and when nothing ran); integer division kernels return how many zero
    divisors they met.
    """
    contig, strided = entry
    out, buf = new_tensor(shape, out_dtype, n * out_dtype.itemsize, ctx.key, strides)
    if n == 0:
        return out, None
    fb = ctx.from_buffer
    if all(o.strides is strides for o in operands):  # every input dense and full-size: no collapsing
        args = [n, fb(buf), 0]
        for o in operands:
            args += [fb(o.buffer), o.offset]
        return out, contig(*args)
    cshape, cstrides = coalesce(shape, [strides] + [o.strides for o in operands], min_rank=1)
    if n == 1 or (len(cshape) == 1 and all(s == (1,) for s in cstrides)):
        args = [n, fb(buf), 0]
        for o in operands:
            args += [fb(o.buffer), o.offset]
        return out, contig(*args)
    meta = list(cshape)
    for s in cstrides:
        meta += s
    meta += [0] + [o.offset for o in operands]
    return out, strided(n, len(cshape), ctx.ffi.new("long long[]", meta), fb(buf),
                        *[fb(o.buffer) for o in operands])


def _entries(ctx: Context, name: str, op: str | None = None) -> dict:
    """{dtype name: (contiguous, strided) entry} of C kernel ``name`` (of dispatcher op ``op``, default ``name``)."""
    return {d: (getattr(ctx.lib, kernel_name(name, d) + "_contig"), getattr(ctx.lib, kernel_name(name, d) + "_strided"))
            for d in OP_DTYPES[op or name]}


def _scalar(x, dtype):
    """Python number ``x`` as the reference kernel reads it in ``dtype`` (integers wrap); None if C cannot take it."""
    if dtype.is_floating_point:
        return x
    if isinstance(x, float):
        return None
    try:
        return np.asarray(x).astype(dtype.numpy).item()
    except (OverflowError, TypeError, ValueError):
        return None


def _run(ctx: Context, op: str, entry, shape: tuple, out_dtype, dtypes: tuple, inputs: tuple):
    """The output tensor, or None when the NumPy kernel should run (a layout or dtype C does not take, or an
    integer division by zero, which the reference reports).

    Input k is read as ``dtypes[k]``. Tiny calls never get here: the dispatcher sends them to the NumPy kernel
    (see :func:`sized_thresholds`).
    """
    n = math.prod(shape)
    strides = contiguous_strides(shape)
    operands = []
    for x, dtype in zip(inputs, dtypes):
        if not hasattr(x, "_storage") and isinstance(x, (bool, int, float)):
            x = _scalar(x, dtype)
        o = None if x is None else operand(op, x, dtype, shape, strides, n)
        if o is None:
            return None
        operands.append(o)
    out, result = _elementwise(ctx, entry, shape, strides, n, out_dtype, operands)
    return None if result else out


def _unary(ctx: Context, op: str, base):
    entries = _entries(ctx, op)
    bool_out = op in BOOL_OUTPUT

    def kernel(spec, input):
        cd = spec.compute_dtype
        entry = entries.get(cd.name)
        if entry is not None and spec.dtype == (ctx.bool if bool_out else cd):
            out = _run(ctx, op, entry, spec.shape, spec.dtype, (cd,), (input,))
            if out is not None:
                return out
        return base(spec, input)

    return kernel


def _binary(ctx: Context, op: str, base):
    entries = _entries(ctx, op)
    bool_out = op in BOOL_OUTPUT
    has_alpha = op in ("add", "sub")

    def kernel(spec, a, b, alpha=1):
        cd = spec.compute_dtype
        entry = entries.get(cd.name)
        if entry is not None and alpha == 1 and spec.dtype == (ctx.bool if bool_out else cd):
            out = _run(ctx, op, entry, spec.shape, spec.dtype, (cd, cd), (a, b))
            if out is not None:
                return out
        return base(spec, a, b, alpha) if has_alpha else base(spec, a, b)

    return kernel


def _where(ctx: Context, base):
    """where(condition, input, other): a bool or uint8 condition (nonzero selects input) over one dtype."""
    entries = _entries(ctx, "where")

    def kernel(spec, condition, input, other):
        cd = spec.compute_dtype
        entry = entries.get(cd.name)
        cond = getattr(condition, "dtype", None)
        if entry is not None and spec.dtype == cd and cond is not None and cond.name in ("bool", "uint8"):
            out = _run(ctx, "where", entry, spec.shape, cd, (cond, cd, cd), (condition, input, other))
            if out is not None:
                return out
        return base(spec, condition, input, other)

    return kernel


def _clamp(ctx: Context, base):
    """clamp(input, min=None, max=None): one C kernel per set of bounds given (tensors or numbers)."""
    entries = {name: _entries(ctx, name, "clamp") for name in ("clamp", "clamp_min", "clamp_max")}

    def kernel(spec, input, min=None, max=None):  # noqa: A002 - torch.clamp's names
        cd = spec.compute_dtype
        name = "clamp" if min is not None and max is not None else "clamp_min" if min is not None else "clamp_max"
        entry = entries[name].get(cd.name)
        if entry is not None and spec.dtype == cd and (min is not None or max is not None):
            inputs = tuple(x for x in (input, min, max) if x is not None)
            out = _run(ctx, "clamp", entry, spec.shape, cd, (cd,) * len(inputs), inputs)
            if out is not None:
                return out
        return base(spec, input, min, max)

    return kernel


def _relu(ctx: Context, base):
    """relu is a composite with an optional kernel: called as ``relu(x)`` (no spec)."""
    entries = _entries(ctx, "relu")

    def kernel(x):
        entry = entries.get(x.dtype.name)
        out = None if entry is None else _run(ctx, "relu", entry, x._shape, x.dtype, (x.dtype,), (x,))
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
            out = _run(ctx, op, entry, g._shape, g.dtype, (g.dtype, g.dtype), (g, y))
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
        elif op == "where":
            kernels[op] = _where(ctx, base)
        elif op == "clamp":
            kernels[op] = _clamp(ctx, base)
        elif op in ("tanh_backward", "sigmoid_backward", "relu_backward"):
            kernels[op] = _activation_backward(ctx, op, base)
        elif arity == 1:
            kernels[op] = _unary(ctx, op, base)
        else:
            kernels[op] = _binary(ctx, op, base)
    if "batched_matmul" in base_kernels:
        kernels["batched_matmul"] = _matmul(ctx, base_kernels["batched_matmul"])
    return kernels

