"""Elementwise kernels (core.ops.elementwise): the generated C loops of renderer.py over any strides and
broadcasting, fused softmax/log_softmax along the last dim (csrc/reduce.c) and fused GELU (csrc/norm.c).

float16/bfloat16 run the same loops, each element loaded as float32 and the result rounded once (csrc/half.h).
Each kernel validates its operands in Python (layout.py) and then makes one C call; whatever C does not cover
(complex dtypes, mixed dtypes, ``alpha``, negative strides, integer division by zero) is handed to the
reference kernel it replaces (``ctx.reference(op)``), so results never depend on which path ran.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from core.backends.api import Kernel, Ptr, coalesce, contiguous_strides, is_contiguous, note_c_call, planning

from ..context import Family
from ..layout import MISSING, check_bounds, operand, remember
from ..movement import writable
from ..renderer import BOOL_OUTPUT, COMPARISONS, DTYPES, FUSED_OUT, HALF, KERNEL_OPS, OP_DTYPES, kernel_name
from ..runtime import fresh, new_tensor

__all__ = ["kernels", "min_numel", "composite", "DERIVATIVES"]

DERIVATIVES = ("tanh_backward", "sigmoid_backward", "relu_backward")  # in KERNEL_OPS, their family is derivatives
_GELU_APPROXIMATE = {"none": 0, "tanh": 1}
# The cheap ops' dispatcher thresholds, as multiples of min_numel: below them NumPy (the reference's shortcut, one
# ufunc on one thread) costs less than a checked C call. Medians on 2-core Xeon (AVX-512) and EPYC (AVX2) machines:
# x + y crosses at 32-64K elements, x * 2.0 at 64-128K, x < y near 128K, add_/mul_/add(out=) at 128-256K.
ARITHMETIC = ("add", "sub", "mul", "div")
ARITHMETIC_FACTOR = 16  # add, sub, mul, div from 16 * min_numel elements (65,536 by default)
WRITTEN_FACTOR = 32  # comparisons and the arithmetic written in place or into out=, from 32 * min_numel (131,072)


def min_numel(ctx) -> int:
    """The dispatcher's threshold: calls with fewer output elements run the NumPy kernel, whose per-call cost is
    lower than a validated C call (softmax is sized by its input, which is its output)."""
    return ctx.min_numel


def _elementwise(ctx, entry, shape: tuple, strides: tuple, n: int, out_dtype, operands: list, into=None,
                 walked: int | None = None):
    """(output, the C call's result) of ``entry``'s contiguous or strided kernel over ``operands``, into a fresh
    tensor of ``strides`` or into tensor ``into`` (of ``shape`` and ``strides``, checked by the caller).

    ``walked``: how many leading operands decide between the two kernels (default all); the rest are numbers the
    contiguous kernel reads once (addcmul's value). The result is None for void kernels (and when nothing ran);
    integer division kernels return how many zero divisors they met.
    """
    contig, strided = entry
    if into is None:
        out, buf = new_tensor(shape, out_dtype, n * out_dtype.itemsize, ctx.key, strides)
        out_offset = 0
    else:
        out, buf, out_offset = into, into._storage.data, into._offset
    if n == 0:
        return out, None
    fb = ctx.from_buffer
    for x in operands[:walked]:
        if x.strides is not strides:  # not all dense and full-size: collapse the dims
            layout = _strided_layout(shape, strides, operands)
            if layout is not None:
                rank, sizes_strides = layout
                meta = [*sizes_strides, out_offset]
                buffers = [fb(buf)]
                for o in operands:
                    meta.append(o.offset)
                    buffers.append(fb(o.buffer))
                longs = ctx.longs(meta)
                result = strided(n, rank, longs, *buffers)
                if not result and planning():
                    _note(ctx, strided, (n, rank, longs, Ptr(buf), *[Ptr(o.buffer) for o in operands]), into, shape,
                          out_dtype, strides)
                return out, result
            break
    args = [n, fb(buf), out_offset]
    for o in operands:
        args += [fb(o.buffer), o.offset]
    result = contig(*args)
    if not result and planning():
        parts = [n, Ptr(buf), out_offset]
        for o in operands:
            parts += [Ptr(o.buffer), o.offset]
        _note(ctx, contig, tuple(parts), into, shape, out_dtype, strides)
    return out, result


def _note(ctx, fn, parts: tuple, into, shape: tuple, out_dtype, strides: tuple) -> None:
    """Note ``fn(*parts)`` for a capture (``core.backends.api.note_c_call``): written ``into`` a tensor, or into a
    fresh output made alike on each replay."""
    make = None if into is not None else partial(fresh, shape, out_dtype, ctx.key, strides)
    note_c_call(fn, parts, ctx.from_buffer, make)


_LAYOUTS: dict = {}  # (shape, output strides, operands' strides) -> (rank, (sizes, then strides)) or None


def _strided_layout(shape: tuple, strides: tuple, operands: list):
    """(rank, sizes followed by each operand's strides, output first) of the coalesced walk over ``shape``, or None
    when the operands walk as one dense run (the contiguous kernel serves them); remembered per layout."""
    key = (shape, strides, *[o.strides for o in operands])
    layout = _LAYOUTS.get(key, MISSING)
    if layout is MISSING:
        cshape, cstrides = coalesce(shape, list(key[1:]), min_rank=1)
        layout = None
        if math.prod(shape) > 1 and (len(cshape) > 1 or any(s != (1,) for s in cstrides)):
            layout = (len(cshape), (*cshape, *[n for s in cstrides for n in s]))
        remember(_LAYOUTS, key, layout)
    return layout


def c_entries(ctx, name: str, op: str | None = None) -> dict:
    """{dtype name: (contiguous, strided) entry} of C kernel ``name`` (of dispatcher op ``op``, default ``name``)."""
    return {d: (getattr(ctx.lib, kernel_name(name, d) + "_contig"), getattr(ctx.lib, kernel_name(name, d) + "_strided"))
            for d in OP_DTYPES[op or name]}


def _scalar(x, dtype):
    """Python number ``x`` as the reference kernel reads it in ``dtype`` (integers wrap); None if C cannot take it.

    Half kernels read a scalar operand from a buffer of their own dtype, while the reference (as PyTorch) computes
    with it in float32: only scalars the half dtype holds exactly (1, 0.5, 2, ...) take the C path.
    """
    if dtype.name in HALF:
        with np.errstate(over="ignore"):
            value = np.float32(x)
            exact = np.array(value).astype(dtype.numpy).astype(np.float32) == value
        return x if exact or value != value else None
    if dtype.is_floating_point:
        return x
    if isinstance(x, float):
        return None
    try:
        return np.asarray(x).astype(dtype.numpy).item()
    except (OverflowError, TypeError, ValueError):
        return None


def run(ctx, op: str, entry, shape: tuple, out_dtype, dtypes: tuple, inputs: tuple):
    """The output tensor, or None when the NumPy kernel should run (a layout or dtype C does not take, or an
    integer division by zero, which the reference reports).

    Input k is read as ``dtypes[k]``. Tiny calls never get here: the dispatcher sends them to the NumPy kernel
    (see :func:`min_numel`).
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


def _pointwise(ctx, op: str, base, arity: int):
    """A unary kernel(spec, input) or binary kernel(spec, a, b[, alpha]) of a generated C loop (``alpha`` 1 only)."""
    entries = c_entries(ctx, op)
    bool_out = op in BOOL_OUTPUT
    has_alpha = op in ("add", "sub")

    def kernel(spec, *inputs, alpha=1):
        if len(inputs) > arity:  # add/sub's alpha, passed as the third argument
            inputs, alpha = inputs[:arity], inputs[arity]
        cd = spec.compute_dtype
        entry = entries.get(cd.name)
        if entry is not None and alpha == 1 and spec.dtype == (ctx.bool if bool_out else cd):
            out = run(ctx, op, entry, spec.shape, spec.dtype, (cd,) * arity, inputs)
            if out is not None:
                return out
        return base(spec, *inputs, alpha) if has_alpha else base(spec, *inputs)

    return kernel


def _written_into(ctx, name: str, entry, out, inputs: tuple, walked: int | None = None) -> bool:
    """Run ``entry``'s loop over ``inputs`` (tensors or numbers, read in out's dtype) into ``out`` (any non-negative
    strides; ``walked`` as :func:`_elementwise`'s); False, nothing written, where C cannot take the call: an operand
    that shares out's memory but not its elements (the reference buffers it), a layout or number C does not take."""
    if min(out._stride, default=0) < 0 or not writable(out) or any(_overlaps(x, out) for x in inputs):
        return False
    d = out.dtype
    check_bounds(name, out)
    shape = out._shape
    n = math.prod(shape)
    dense = contiguous_strides(shape)  # the one object _elementwise's contiguous path recognises
    operands = []
    for x in inputs:
        if not hasattr(x, "_storage"):
            x = _scalar(x, d)
        o = None if x is None else operand(name, x, d, shape, dense, n)
        if o is None:
            return False
        operands.append(o)
    _elementwise(ctx, entry, shape, dense if out._stride == dense else out._stride, n, d, operands, into=out,
                 walked=walked)
    return True


def _writing(ctx, name: str, op: str, base, inputs: int, own: bool = False, walked: int | None = None):
    """The kernel of op ``name(out, *args)`` that runs C kernel ``op``'s loop into ``out`` (one dtype, see
    :func:`_written_into`), else ``base``: its first ``inputs`` arguments are the loop's operands (after ``out``
    itself when ``own``: ``add_(self, other)``), any further one an alpha that must be 1.

    - ``add_ sub_ mul_ div_(self, other[, alpha])``: ``inputs=1, own=True``.
    - ``add_out ...(out, input, other[, alpha])``: ``inputs=2``.
    - ``addcmul_out``/``addcdiv_out(out, input, tensor1, tensor2, value)`` and ``lerp_out(out, input, end,
      weight)``: every argument an operand, the value or weight a scalar one (``walked``: the tensors), read once
      by the contiguous loop, so dense tensors keep it and its streaming stores; in PyTorch's order or ATen's lerp.
    """
    entries = c_entries(ctx, op)

    def kernel(spec, out, *args, **kwargs):
        operands, alpha = args[:inputs], args[inputs:]
        entry = entries.get(out.dtype.name)
        if entry is None or kwargs or len(operands) != inputs or alpha not in ((), (1,)) \
                or spec.compute_dtype is not out.dtype \
                or not _written_into(ctx, name, entry, out, (out, *operands) if own else operands, walked):
            return base(spec, out, *args, **kwargs)  # keyword arguments (alpha=...) too
        return out

    kernel.entries = entries  # {dtype name: (contiguous, strided) C entry}: what tests count the loops of
    return kernel


def _overlaps(x, out) -> bool:
    """Whether tensor (or number) ``x`` shares ``out``'s memory other than as the very same elements."""
    return hasattr(x, "_storage") and x._storage is out._storage and \
        (x._offset, x._stride, x._shape) != (out._offset, out._stride, out._shape)


def _where(ctx, op: str, base):
    """where(condition, input, other): a bool or uint8 condition (nonzero selects input) over one dtype."""
    entries = c_entries(ctx, "where")

    def kernel(spec, condition, input, other):
        cd = spec.compute_dtype
        entry = entries.get(cd.name)
        cond = getattr(condition, "dtype", None)
        if entry is not None and spec.dtype == cd and cond is not None and cond.name in ("bool", "uint8"):
            out = run(ctx, "where", entry, spec.shape, cd, (cond, cd, cd), (condition, input, other))
            if out is not None:
                return out
        return base(spec, condition, input, other)

    return kernel


def _clamp(ctx, op: str, base):
    """clamp(input, min=None, max=None): one C kernel per set of bounds given (tensors or numbers)."""
    entries = {name: c_entries(ctx, name, "clamp") for name in ("clamp", "clamp_min", "clamp_max")}

    def kernel(spec, input, min=None, max=None):  # noqa: A002 - torch.clamp's names
        cd = spec.compute_dtype
        name = "clamp" if min is not None and max is not None else "clamp_min" if min is not None else "clamp_max"
        entry = entries[name].get(cd.name)
        if entry is not None and spec.dtype == cd and (min is not None or max is not None):
            inputs = tuple(x for x in (input, min, max) if x is not None)
            out = run(ctx, "clamp", entry, spec.shape, cd, (cd,) * len(inputs), inputs)
            if out is not None:
                return out
        return base(spec, input, min, max)

    return kernel


def composite(ctx, op: str, base):
    """The optional kernel of a composite (no spec: ``relu(x)``, ``tanh_backward(g, y)``) over operands of one shape
    and dtype."""
    entries = c_entries(ctx, op)

    def kernel(x, *others):
        entry = entries.get(x.dtype.name)
        out = None
        if entry is not None:
            for t in others:
                if t._shape != x._shape:
                    return base(x, *others)
            out = run(ctx, op, entry, x._shape, x.dtype, (x.dtype,) * (1 + len(others)), (x, *others))
        return base(x, *others) if out is None else out

    return kernel


def _rows(op: str, x, k: int):
    """(rows, cols, row stride) when the last ``k`` dims of ``x`` are one contiguous block per row and the leading
    dims one evenly strided run of rows; None when C cannot take that layout (the NumPy kernel runs)."""
    shape, strides = x._shape, x._stride
    if any(s < 0 for s in strides):
        return None
    lead = len(shape) - k
    if not is_contiguous(shape[lead:], strides[lead:]):
        return None
    cshape, cstrides = coalesce(shape[:lead], [strides[:lead]], min_rank=1)
    if len(cshape) != 1:
        return None
    check_bounds(op, x)
    return math.prod(shape[:lead]), math.prod(shape[lead:]), cstrides[0][0]


def _softmax(ctx, op: str, base):
    """softmax/log_softmax along the last dim (composites: kernel(input, dim), no spec), one row per pass."""
    fns = {d: getattr(ctx.lib, f"ccc_softmax_{d}") for d in DTYPES}
    take_log = int(op == "log_softmax")

    def kernel(input, dim):
        d = input.dtype
        fn = fns.get(d.name)
        shape = input._shape
        n = math.prod(shape)
        if fn is not None and dim == len(shape) - 1:
            layout = _rows(op, input, 1)
            if layout is not None:
                rows, cols, row_stride = layout
                out, buf = new_tensor(shape, d, n * d.itemsize, ctx.key)
                if n:
                    fn(rows, cols, ctx.from_buffer(input._storage.data), input._offset, row_stride,
                       ctx.from_buffer(buf), take_log)
                return out
        return base(input, dim)

    return kernel


class _Gelu(Family):
    """Fused ``gelu`` / ``gelu_backward`` (composites, no spec: libm's erf/tanh/exp in the tensor's type); operands
    of one float32/float64 dtype, made contiguous first. Anything else runs the decomposition."""

    ops = ("gelu", "gelu_backward")

    def gelu(self, input, approximate):
        """``x * Φ(x)`` elementwise, exact (erf) or with the tanh approximation."""
        if approximate not in _GELU_APPROXIMATE or input.dtype.name not in DTYPES or not input.numel():
            return self.base["gelu"](input, approximate)
        x = input.contiguous()
        out, buf = self.empty(tuple(x.shape), x.dtype)
        self.c["gelu", x.dtype.name](x.numel(), self.pointer("gelu", x), buf, _GELU_APPROXIMATE[approximate])
        return out

    def gelu_backward(self, grad, input, approximate):
        """``grad * gelu'(input)`` elementwise."""
        op = "gelu_backward"
        if (approximate not in _GELU_APPROXIMATE or input.dtype.name not in DTYPES or not input.numel()
                or grad.dtype is not input.dtype or grad.device != input.device
                or tuple(grad.shape) != tuple(input.shape)):
            return self.base[op](grad, input, approximate)
        g, x = grad.contiguous(), input.contiguous()
        out, buf = self.empty(tuple(x.shape), x.dtype)
        self.c[op, x.dtype.name](x.numel(), self.pointer(op, g), self.pointer(op, x), buf,
                                 _GELU_APPROXIMATE[approximate])
        return out

def kernels(ctx) -> dict:
    """{op: Kernel} of every elementwise op cpu_c compiles (sized by :func:`min_numel`), softmax, and gelu."""
    sized = min_numel(ctx)
    special = {"relu": composite, "where": _where, "clamp": _clamp}
    table = {}
    for op, arity in KERNEL_OPS.items():
        if op in FUSED_OUT:
            continue  # loops of the addcmul_out/addcdiv_out/lerp_out ops (below), not ops of their own
        base = ctx.reference(op)
        if base is None or op in DERIVATIVES:
            continue
        build = special.get(op)
        fn = build(ctx, op, base) if build else _pointwise(ctx, op, base, arity)
        factor = ARITHMETIC_FACTOR if op in ARITHMETIC else WRITTEN_FACTOR if op in COMPARISONS else 1
        table[op] = Kernel(fn, min_numel=sized * factor)
    for op in ("softmax", "log_softmax"):
        if (base := ctx.reference(op)) is not None:
            table[op] = Kernel(_softmax(ctx, op, base), min_numel=sized)
    for op in ARITHMETIC:
        if (base := ctx.reference(op + "_")) is not None:
            table[op + "_"] = Kernel(_writing(ctx, op + "_", op, base, 1, own=True), min_numel=sized * WRITTEN_FACTOR)
        if (base := ctx.reference(op + "_out")) is not None:
            table[op + "_out"] = Kernel(_writing(ctx, op + "_out", op, base, 2), min_numel=sized * WRITTEN_FACTOR)
    for op, operands in FUSED_OUT.items():
        if (base := ctx.reference(op + "_out")) is not None:
            table[op + "_out"] = Kernel(_writing(ctx, op + "_out", op, base, len(operands), walked=len(operands) - 1),
                                        min_numel=sized)
    return {**table, **_Gelu(ctx).kernels()}
