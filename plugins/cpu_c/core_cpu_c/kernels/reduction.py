"""Reductions and scans (core.ops.reduction, csrc/reduce.c): sum/prod/amax/amin/any/all over any dims,
argmax/argmin, cumsum/cumprod/cummax/cummin.

Each kernel validates its operand in Python (dtype, non-negative strides, bounds), splits its dims into kept and
reduced (or scanned) ones, collapses each group and makes one C call that walks the strides; what C does not take
(sum's ``dtype=`` to another type, negative strides) runs the NumPy reference kernel it replaces. float16/bfloat16
sum/amax/amin (and so mean) run the row kernels (one contiguous row per output), computing in float32 and summing
in double, rounded once; half sums into their own dtype also take the strided walk (any dims and layout: the column
sum of a bias's gradient); other half reductions and layouts run the reference.

No dispatcher threshold: the output can be one element for a million inputs, so each kernel checks its *input*
size against ``ctx.min_numel`` itself.
"""

from __future__ import annotations

import math
from functools import partial

from core.backends.api import Ptr, coalesce, note_c_call, planning

from ..layout import check_bounds, remember
from ..renderer import HALF
from ..runtime import fresh, new_tensor

__all__ = ["kernels", "OPS"]

OPS = ("sum", "prod", "amax", "amin", "any", "all", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin")

_FLOATS = ("float32", "float64")
_INTS = ("int8", "uint8", "int16", "int32", "int64", "bool")
_ALL = _FLOATS + _INTS
_MAXD = 64  # csrc/reduce.c's MAXD: dims of one collapsed group
_IDENTITY = {"sum": 0, "prod": 1, "any": 0, "all": 1}  # what an empty reduction gives


def _collapse(shape, strides, dims) -> tuple:
    """(sizes, strides) of ``dims`` walked in that order, coalesced to at least one dim."""
    sizes, (steps,) = coalesce(tuple(shape[d] for d in dims), [tuple(strides[d] for d in dims)], min_rank=1)
    return sizes, steps


def _walk(x, reduced: tuple, reorder: bool):
    """(meta, number of outputs) of csrc/reduce.c's strided reduction of ``x`` over the dims ``reduced`` (walked
    in that order; ``reorder`` sorts them by decreasing stride, which only order-free reductions may do). The kept
    dims keep their order, the output being dense over them; each group is collapsed, and ``block`` is set when
    the last kept dim has a smaller stride than every reduced dim (C then walks neighbouring outputs together)."""
    shape, strides = x._shape, x._stride
    key = (shape, strides, reduced, reorder)
    walk = _WALKS.get(key)
    if walk is None:
        kshape, kst = _collapse(shape, strides, [d for d in range(len(shape)) if d not in reduced])
        if reorder and len(reduced) > 1:
            reduced = sorted(reduced, key=strides.__getitem__, reverse=True)  # stable: ties keep their order
        rshape, rst = _collapse(shape, strides, reduced)
        block = int(kshape[-1] > 1 and kst[-1] < min(rst))
        walk = remember(_WALKS, key, ((len(kshape), len(rshape), block), (*kshape, *kst, *rshape, *rst),
                                      math.prod(kshape)))
    head, tail, nout = walk
    return (*head, x._offset, *tail), nout


_WALKS: dict = {}  # (shape, strides, reduced dims, reorder) -> (counts and block, sizes and strides, outputs)


def _out_dtype_ok(op: str, spec, d) -> bool:
    """Whether ``spec`` asks for what the C kernel computes from input dtype ``d``."""
    if op in ("sum", "prod"):  # floats in their own dtype, integers and bool in int64 (sum's dtype rule)
        want = d.name if d.name in _FLOATS else "int64"
        return spec.dtype.name == want and spec.compute_dtype.name == want
    if op in ("amax", "amin"):
        return spec.dtype == d
    return True  # any/all: bool (uint8 for uint8), one byte of 0/1 either way


def _usable(ctx, x, names) -> bool:
    """Whether C takes ``x``: a dtype in ``names``, at least ``min_numel`` elements, non-negative strides."""
    return (x.dtype.name in names and len(x._shape) <= _MAXD and math.prod(x._shape) >= ctx.min_numel
            and min(x._stride, default=0) >= 0)


def _reduction(ctx, op: str, base):
    """sum/prod/amax/amin/any/all over any dims of any layout (non-negative strides): kernel(spec, input, dims,
    keepdim[, dtype]). Float sum/amax/amin whose reduced elements are one contiguous row per output take the
    vectorised row kernels; everything else csrc/reduce.c's strided walk."""
    general = {d: getattr(ctx.lib, f"ccc_reduce_{op}_{d}") for d in _ALL + (HALF if op == "sum" else ())}
    # {(input dtype, output dtype): row kernel}; a half sum also into float32 (mean's, sum(dtype=float32)'s)
    rows = {(d, d): getattr(ctx.lib, f"ccc_{op}_{d}") for d in _FLOATS + HALF} if op in ("sum", "amax", "amin") else {}
    if op == "sum":
        rows.update({(d, "float32"): getattr(ctx.lib, f"ccc_sum_{d}_float32") for d in HALF})

    def kernel(spec, input, dims, keepdim=False, dtype=None):
        d = input.dtype
        row = rows.get((d.name, spec.dtype.name))
        half = d.name in HALF
        if not (_usable(ctx, input, _ALL + HALF) and (row is not None if half else _out_dtype_ok(op, spec, d))):
            return base(spec, input, dims, keepdim, dtype)
        meta, nout = _walk(input, tuple(dims), True)
        nk, nr, block = meta[:3]
        by_rows = row is not None and not block and nk == 1 and nr == 1 and meta[-1] == 1
        if half and not by_rows and (d.name not in general or spec.dtype is not d):  # the strided walk: half sums
            return base(spec, input, dims, keepdim, dtype)
        check_bounds(op, input)
        odt = spec.dtype
        out, buf = new_tensor(spec.shape, odt, nout * odt.itemsize, ctx.key)
        if nout == 0:
            return out
        rshape = meta[4 + 2 * nk:4 + 2 * nk + nr]
        if 0 in rshape:  # an empty reduction: sum 0, prod 1, any False, all True (amax/amin: the meta refused)
            buf.view(odt.numpy)[:] = _IDENTITY[op]
            return out
        if by_rows:
            fn, args = row, [nout, rshape[0], input._storage.data, input._offset, meta[4 + nk], buf]
        else:
            fn, args = general[d.name], [ctx.longs(meta), input._storage.data, buf]
        pointers = (2, 5) if by_rows else (1, 2)
        fb = ctx.from_buffer
        for i in pointers:
            args[i] = fb(args[i])
        fn(*args)
        if planning():  # a capture: the replay calls C itself
            for i, array in zip(pointers, (input._storage.data, buf)):
                args[i] = Ptr(array)
            note_c_call(fn, tuple(args), fb, partial(fresh, spec.shape, odt, ctx.key))
        return out

    kernel.c_functions = {"rows": rows, "strided": general}  # {table: {key: C function}}, for tests to count
    shortcut = getattr(base, "shortcut", None)
    if shortcut is not None:  # calls under min_numel are the reference kernel's: so are its shortcut's
        kernel.shortcut = lambda full, below: shortcut(full, below, ctx)
    return kernel


def _arg_reduction(ctx, op: str, base):
    """argmax/argmin over one dim or the flattened input (dim None): kernel(spec, input, dim, keepdim); the first
    NaN, else the first extremum, as np.argmax."""
    fns = {d: getattr(ctx.lib, f"ccc_reduce_{op}_{d}") for d in _ALL if d != "bool"}

    def kernel(spec, input, dim, keepdim=False):
        if not _usable(ctx, input, fns) or math.prod(input._shape) == 0:
            return base(spec, input, dim, keepdim)
        check_bounds(op, input)
        reduced = tuple(range(len(input._shape))) if dim is None else (dim,)
        meta, nout = _walk(input, reduced, False)
        out, buf = new_tensor(spec.shape, spec.dtype, nout * 8, ctx.key)
        fns[input.dtype.name](ctx.longs(meta), ctx.from_buffer(input._storage.data),
                              ctx.from_buffer(buf))
        return out

    kernel.c_functions = {"strided": fns}
    return kernel


def _scan(ctx, op: str, base):
    """cumsum/cumprod (kernel(spec, input, dim[, dtype])) and cummax/cummin (kernel(spec, input, dim) ->
    (values, indices)) along one dim of any layout, in NumPy's accumulate order."""
    fns = {d: getattr(ctx.lib, f"ccc_scan_{op}_{d}") for d in _ALL}
    pair = op in ("cummax", "cummin")

    def kernel(spec, input, dim, dtype=None):  # cummax/cummin take no dtype
        d = input.dtype
        vspec = spec[0] if pair else spec
        if not (_usable(ctx, input, _ALL) and (pair or _out_dtype_ok("sum", spec, d))):
            return base(spec, input, dim) if pair else base(spec, input, dim, dtype)
        check_bounds(op, input)
        shape, strides = input._shape, input._stride
        n = math.prod(shape)
        odt = vspec.dtype
        out, buf = new_tensor(shape, odt, n * odt.itemsize, ctx.key)
        idx, ibuf = new_tensor(shape, spec[1].dtype, n * 8, ctx.key) if pair else (None, None)
        if n:
            ostrides = out._stride
            if not shape:  # 0-d: one element
                shape, strides, ostrides, dim = (1,), (0,), (0,), 0
            kept = [k for k in range(len(shape)) if k != dim]
            kshape, (kin, kout) = coalesce(tuple(shape[k] for k in kept), [tuple(strides[k] for k in kept),
                                                                          tuple(ostrides[k] for k in kept)], min_rank=1)
            block = int(kshape[-1] > 1 and shape[dim] > 1 and kout[-1] < ostrides[dim])
            meta = (len(kshape), block, input._offset, shape[dim], strides[dim], ostrides[dim], *kshape, *kin, *kout)
            fns[d.name](ctx.longs(meta), ctx.from_buffer(input._storage.data),
                        ctx.from_buffer(buf), ctx.from_buffer(ibuf) if pair else ctx.ffi.NULL)
        return (out, idx) if pair else out

    kernel.c_functions = {"strided": fns}
    return kernel


def kernels(ctx) -> dict:
    """{op: kernel} of the reductions and scans, each falling back to the NumPy kernel it replaces."""
    build = {"arg": _arg_reduction, "cum": _scan}
    return {op: build.get(op[:3], _reduction)(ctx, op, base) for op in OPS if (base := ctx.reference(op)) is not None}
