"""cuda kernels of the reduction family: reductions, arg-reductions and scans over the array module."""

from __future__ import annotations

from ._common import compute_np, operand


def kernels(rt) -> dict:
    xp = rt.xp

    def fresh(result, source, dims):
        """A result never aliases an input's memory (reductions over no dims can hand the input back)."""
        result = xp.asarray(result)
        return result.copy() if not dims and xp.shares_memory(result, source) else result

    def reduce(fn, accumulate: bool):
        def kernel(spec, input, dims, keepdim=False, dtype=None):
            a = operand(rt, input, compute_np(input.dtype))
            with rt.errstate():
                if accumulate:
                    result = fn(a, axis=dims, keepdims=keepdim, dtype=compute_np(spec.compute_dtype))
                else:
                    result = fn(a, axis=dims, keepdims=keepdim)
            return rt.wrap(fresh(result, a, dims), spec)
        return kernel

    def arg_reduce(fn):
        def kernel(spec, input, dim, keepdim=False):
            a = operand(rt, input, compute_np(input.dtype))
            result = fn(a).reshape(spec.shape) if dim is None else fn(a, axis=dim, keepdims=keepdim)
            return rt.wrap(result, spec)
        return kernel

    def scan(fn):
        def kernel(spec, input, dim, dtype=None):
            a = operand(rt, input, compute_np(input.dtype))
            with rt.errstate():
                result = fn(a.reshape(a.shape or (1,)), axis=dim, dtype=compute_np(spec.compute_dtype))
            return rt.wrap(result.reshape(a.shape), spec)
        return kernel

    return {"sum": reduce(xp.sum, True), "prod": reduce(xp.prod, True), "amax": reduce(xp.amax, False),
            "amin": reduce(xp.amin, False), "any": reduce(xp.any, False), "all": reduce(xp.all, False),
            "argmax": arg_reduce(xp.argmax), "argmin": arg_reduce(xp.argmin), "cumsum": scan(xp.cumsum),
            "cumprod": scan(xp.cumprod)}
