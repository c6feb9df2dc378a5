"""Reductions over dims (sum, prod, amax, amin, any, all, argmax, argmin): one invocation per output element
looping over the reduced extent (float sums in blocks, see WGSLRenderer.render_reduction); NaN propagates."""

from __future__ import annotations

import core
from core.backends.api import coalesce, padded, rank_bucket

from ..renderer import PACKED, RENDERER
from ._common import launch, new_tensor, numel
from .elementwise import compute_name, stored, supported

__all__ = ["kernels", "run_reduction"]

_ACCUMULATING = ("sum", "prod")  # accumulate in spec.compute_dtype; the others compare in the input's dtype


def run_reduction(op: str, spec, input, dims: tuple):
    """A fresh contiguous ``spec`` tensor reducing ``input`` over ``dims`` (kept dims in order, then reduced)."""
    keep = [d for d in range(input.dim()) if d not in dims]
    keep_layout = coalesce(tuple(input._shape[d] for d in keep), [[input._stride[d] for d in keep]])
    red_layout = coalesce(tuple(input._shape[d] for d in dims), [[input._stride[d] for d in dims]])
    acc = compute_name(spec.compute_dtype if op in _ACCUMULATING else input.dtype)
    if (rank_bucket(len(keep_layout[0])) is None or rank_bucket(len(red_layout[0])) is None
            or not (supported(input) and stored(spec.dtype.name) and stored(acc))):
        return NotImplemented
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    if numel(spec.shape):
        _stage(op, input, None, keep_layout, red_layout, acc, out)
    return out


def _stage(op: str, src, src_arg, keep_layout, red_layout, acc: str, out) -> None:
    """Reduce ``src`` (positions from ``src_arg`` when it reduces partials) into ``out``, through partials (one per
    chunk of RENDERER.CHUNK elements) while the reduced extent is longer than one chunk."""
    (keep_shape, (keep_strides,)), (red_shape, (red_strides,)) = keep_layout, red_layout
    n, r = numel(keep_shape), numel(red_shape)
    chunks = -(-r // RENDERER.CHUNK) if r else 1
    partial = chunks > 1
    arg_op = op.startswith("arg")
    if partial:  # the accumulators (bytes held in int32) and, for the arg ops, their positions
        outs = [new_tensor((n, chunks), getattr(core, acc if acc not in PACKED else "int32"), out.device)]
        outs += [new_tensor((n, chunks), core.int32, out.device)] if arg_op else []
    else:
        outs = [out]
    kr, rr = rank_bucket(len(keep_shape), allow_zero=True), rank_bucket(len(red_shape), allow_zero=True)
    in_dtype, out_dtype, indexed = src.dtype.name, outs[0].dtype.name, src_arg is not None
    params = (n * chunks, r, chunks, *padded(keep_shape, kr, 1), *padded(keep_strides, kr, 0),
              *padded(red_shape, rr, 1), *padded(red_strides, rr, 0), src._offset)
    launch(("red", op, in_dtype, acc, out_dtype, kr, rr, partial, indexed),
           lambda: RENDERER.render_reduction(op, in_dtype, acc, out_dtype, kr, rr, partial, indexed), outs,
           [src] + ([src_arg] if indexed else []), params, -(-n * chunks // PACKED.get(out_dtype, 1)))
    if partial:  # the partials of each output element, reduced again (a sum of sums, the max of maxima, ...)
        _stage(op, outs[0], outs[1] if arg_op else None, ((n,), ((chunks,),)), ((chunks,), ((1,),)), acc, out)


def _reduce_kernel(op: str):
    def kernel(spec, input, dims, keepdim=False, dtype=None):
        return run_reduction(op, spec, input, tuple(dims) if input.dim() else ())

    return kernel


def _arg_kernel(op: str):
    def kernel(spec, input, dim, keepdim=False):
        return run_reduction(op, spec, input, tuple(range(input.dim())) if dim is None else (
            (dim % input.dim(),) if input.dim() else ()))

    return kernel


def kernels(runtime) -> dict:
    """The reduction family: op name -> kernel."""
    table = {op: _reduce_kernel(op) for op in ("sum", "prod", "amax", "amin", "any", "all")}
    return table | {op: _arg_kernel(op) for op in ("argmax", "argmin")}
