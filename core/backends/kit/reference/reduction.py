"""Reference kernels of the reduction family: one wrapper per shape of primitive (reduce, arg-reduce, scan)."""

from __future__ import annotations

import sys
from math import prod as _prod

from . import COMPUTE_NP, compute_np, operands, silencer


class _Unbounded:
    min_numel = sys.maxsize


_UNBOUNDED = _Unbounded()  # a shortcut's threshold object where only the dispatcher's ``below`` bounds it


def kernels(ctx) -> dict:
    """Reductions, arg-reductions, scans and running extrema over ``ctx``."""
    xp, wrap, errstate = ctx.xp, ctx.wrap, ctx.errstate
    operand = operands(ctx)
    mute, unmute = silencer(ctx)

    def fresh(result, source, dims):
        """A result never aliases an input's memory (reductions over no dims can hand the input back)."""
        if dims:
            return result
        result = xp.asarray(result)
        return result.copy() if xp.may_share_memory(result, source) else result

    def reduce(fn, accumulate: bool):
        """Kernel of sum/prod (``accumulate``: in the compute dtype) or amax/amin/any/all."""

        def kernel(spec, input, dims, keepdim=False, dtype=None):
            cd = COMPUTE_NP[input.dtype]
            a = input._np  # the cached array when it has the compute dtype (what operand returns), else operand
            if a is None or a.dtype != cd:
                a = operand(input, cd)
            if accumulate:
                result = fn(a, axis=dims, keepdims=keepdim, dtype=COMPUTE_NP[spec.compute_dtype])
            else:
                token = mute()
                try:
                    result = fn(a, axis=dims, keepdims=keepdim)
                finally:
                    unmute(token)
            return wrap(result if dims else fresh(result, a, dims), spec)

        if accumulate:
            kernel.shortcut = lambda full, below, bound=None: reduce_shortcut(fn, full, below, bound)
        return kernel

    def reduce_shortcut(fn, full, below, bound):
        """The sum/prod kernel's ``shortcut`` (see ``core.dispatch.operator._shortcut``): a float32/float64 tensor
        reduced over some dims in its own dtype (no ``keepdim``, no ``dtype=``) with fewer than ``below`` elements
        (and fewer than ``bound.min_numel``, read per call, where a backend's kernel passes its own threshold
        object): the same array and result as the kernel given the meta function's spec, whose shape is the input's
        without the dims and whose dtypes are the input's; every other call goes to ``full``."""
        from ....dtypes import float32, float64
        from ....tensor import Tensor

        limit = _UNBOUNDED if bound is None else bound

        def call(input, dims, keepdim=False, dtype=None, *more, **kwargs):
            if keepdim is False and dtype is None and dims.__class__ is tuple and dims and not more and not kwargs \
                    and isinstance(input, Tensor) and (input.dtype is float32 or input.dtype is float64):
                a = input._np
                n = _prod(input._shape) if a is None else a.size
                if n < below and n < limit.min_numel:
                    if a is None:
                        a = ctx.array(input)  # a view's array, made once (what the kernel's operand does)
                    return wrap(fn(a, axis=dims, keepdims=False, dtype=a.dtype), input)
            return full(input, dims, keepdim, dtype, *more, **kwargs)

        return call

    def arg_reduce(fn):
        def kernel(spec, input, dim, keepdim=False):
            a = operand(input, compute_np(input.dtype))
            if dim is None:
                return wrap(xp.asarray(fn(a)).reshape(spec.shape), spec)
            return wrap(fn(a, axis=dim, keepdims=keepdim), spec)

        return kernel

    def scan(fn):
        def kernel(spec, input, dim, dtype=None):
            a = operand(input, compute_np(input.dtype))
            with errstate(all="ignore"):
                result = fn(a.reshape(a.shape or (1,)), axis=dim, dtype=compute_np(spec.compute_dtype))
            return wrap(result.reshape(a.shape), spec)

        return kernel

    def running_extremum(ufunc):
        """cummax/cummin: running values by ``ufunc.accumulate``; the index is the latest position that set them."""

        def kernel(spec, input, dim):
            a = operand(input, compute_np(input.dtype))
            flat = a.reshape(a.shape or (1,))
            values = ufunc.accumulate(flat, axis=dim) if flat.size else flat.copy()
            # ties take the latest index and every NaN takes its own index once the running value is NaN (PyTorch)
            sets = (flat == values) | (xp.isnan(flat) if flat.dtype.kind == "f" else False)
            positions = xp.arange(flat.shape[dim]).reshape([-1 if i == dim else 1 for i in range(flat.ndim)])
            indices = xp.where(sets, positions, 0)
            indices = xp.maximum.accumulate(indices, axis=dim) if flat.size else indices
            return wrap(values.reshape(a.shape), spec[0]), wrap(indices.reshape(a.shape), spec[1])

        return kernel

    return {
        "sum": reduce(ctx.reduce_sum, True), "prod": reduce(ctx.reduce_prod, True),
        "amax": reduce(xp.amax, False), "amin": reduce(xp.amin, False),
        "any": reduce(xp.any, False), "all": reduce(xp.all, False),
        "argmax": arg_reduce(xp.argmax), "argmin": arg_reduce(xp.argmin),
        "cumsum": scan(xp.cumsum), "cumprod": scan(xp.cumprod),
        "cummax": running_extremum(xp.maximum), "cummin": running_extremum(xp.minimum),
    }
