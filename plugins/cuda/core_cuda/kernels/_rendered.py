"""The rendered path of cuda's elementwise kernels: float tensors of one dtype launch generated CUDA C.

Anything else (Python scalars, mixed dtypes, integers, ``alpha != 1``, a layout beyond the rendered ranks)
runs the kit's reference kernel over the array module.
"""

from __future__ import annotations

import numpy as np

from ..codegen import FLOAT_DTYPES, out_dtype_of, raw_ops

__all__ = ["with_rendered"]

_RAW = raw_ops()  # op -> arity
_COMPOSITES = ("relu", "tanh_backward", "sigmoid_backward")  # no spec: the output is like the first input


def with_rendered(rt, table: dict) -> dict:
    """``table`` with each op that has a rendered kernel trying it first, then its reference kernel."""
    for op in _RAW.keys() & table.keys():
        table[op] = (_composite if op in _COMPOSITES else _with_spec)(rt, op, table[op])
    return table


def _with_spec(rt, op: str, reference):
    arity = _RAW[op]

    def kernel(spec, *args, **kwargs):
        # add/sub take alpha: only alpha == 1 is the rendered a + b
        if all(x == 1 for x in args[arity:]) and all(x == 1 for x in kwargs.values()):
            out = _launch(rt, op, spec, args[:arity])
            if out is not None:
                return out
        return reference(spec, *args, **kwargs)

    return kernel


def _composite(rt, op: str, reference):
    def kernel(*tensors):
        out = _launch(rt, op, _Like(tensors), tensors)
        return reference(*tensors) if out is None else out

    return kernel


def _launch(rt, op: str, spec, tensors):
    """The result of the rendered kernel of ``op``, or None when it does not apply."""
    if rt.raw is None:
        return None
    dtype = getattr(tensors[0], "dtype", None)
    dtype = dtype.name if dtype is not None else None
    if dtype not in FLOAT_DTYPES or spec.dtype.name != out_dtype_of(op, dtype):
        return None
    for t in tensors:  # scalars and mixed dtypes take the reference path
        if not hasattr(t, "_storage") or t.dtype.name != dtype:
            return None
    out = rt.xp.empty(spec.shape, spec.dtype.numpy)
    if not rt.raw.launch(op, dtype, out, [rt.array(t) for t in tensors]):
        return None
    return rt.wrap(out, spec)


class _Like:
    """The output spec of a composite: its inputs' broadcast shape, the first one's dtype and device."""

    __slots__ = ("shape", "dtype", "device")

    def __init__(self, tensors):
        self.shape = np.broadcast_shapes(*(t._shape for t in tensors))
        self.dtype, self.device = tensors[0].dtype, tensors[0].device
