"""bfloat16 on the cuda device: held as bits, computed in float32.

CuPy has no bfloat16 arrays, so a bfloat16 tensor's array is its ``uint16`` bits (:mod:`core_cuda.arrays`). A kernel
call that involves bfloat16 runs the float32 kernel instead: each bfloat16 tensor argument is widened (its bits
shifted into the upper half of a float32: exact), a bfloat16 spec or ``dtype`` argument becomes float32, and each
output the op gives in bfloat16 is rounded from float32 once, to nearest even (NaN kept, made quiet), as PyTorch's
CUDA kernels compute bfloat16 in float32 ("opmath") and round the result. Widening and rounding are elementwise
array expressions: CuPy kernels on the GPU, NumPy on the ``cudasim`` test device.

``copy_`` (casts into bfloat16 through float32, as PyTorch's conversions go, and out of it) and ``fill_`` write
bfloat16 memory; other in-place ops on bfloat16 decline to their decomposition (the op, then ``copy_``: on the
device too); the float8 types (PyTorch has no arithmetic for them) decline to the counted CPU fallback.
"""

from __future__ import annotations

import functools

import numpy as np

from core.backends.api import Storage, Tensor, TensorSpec, contiguous_strides, get_operator
from core.dtypes import bfloat16, dtype, float32

__all__ = ["widen", "narrow", "computing_bfloat16"]


def widen(xp, bits):
    """float32 values of the bfloat16 ``bits`` (a uint16 array, any layout): exact."""
    return (bits.astype(xp.uint32) << 16).view(xp.float32)


def narrow(xp, values):
    """The bfloat16 bits (uint16, contiguous) nearest the float32 array ``values``, ties to even; NaN stays NaN (its
    sign and leading payload bits, made quiet)."""
    u = values.astype(xp.float32, copy=False).view(xp.uint32)
    rounded = (u + (0x7FFF + ((u >> 16) & 1))) >> 16  # a finite value rounds to inf past bfloat16's range
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return xp.where(nan, (u >> 16) | 0x40, rounded).astype(xp.uint16, order="C")


def _float32_copy(rt, t):
    """A float32 tensor on ``t``'s device holding the values of bfloat16 tensor ``t``."""
    return rt.wrap(widen(rt.xp, rt.array(t)), TensorSpec(t._shape, float32, t._storage.device))


def _rounded(rt, out):
    """A bfloat16 tensor holding float32 tensor ``out``'s values rounded."""
    bits = narrow(rt.xp, rt.array(out))
    shape, device = tuple(bits.shape), out._storage.device
    rt._note_peak(device.index or 0)
    storage = Storage(bits.reshape(-1).view(np.uint8), bits.nbytes, device, rt, rt.key.mask)
    return Tensor._make(storage, shape, contiguous_strides(shape), 0, bfloat16, bits)


def _spec32(spec):
    """``spec`` with bfloat16 as float32 (dtype and compute dtype); other specs as they are."""
    if spec.dtype is not bfloat16 and spec.compute_dtype is not bfloat16:
        return spec
    return TensorSpec(spec.shape, float32 if spec.dtype is bfloat16 else spec.dtype, spec.device,
                      float32 if spec.compute_dtype is bfloat16 else spec.compute_dtype, spec.extra)


def _arg32(rt, a):
    """An argument with bfloat16 tensors widened and bfloat16 specs and dtypes as float32."""
    if a.__class__ is tuple or a.__class__ is list:
        return a.__class__(_arg32(rt, b) for b in a)
    if isinstance(a, TensorSpec):
        return _spec32(a)
    if a is bfloat16:
        return float32
    if getattr(a, "dtype", None) is bfloat16 and hasattr(a, "_storage"):
        return _float32_copy(rt, a)
    return a


def _involves(args, kwargs, storage_only: frozenset) -> set:
    """The storage-only dtypes among the tensors, specs and dtype arguments of a call (nested one level)."""
    found = set()
    for a in (*args, *kwargs.values()):
        for b in (a if a.__class__ is tuple or a.__class__ is list else (a,)):
            d = b if b.__class__ is dtype else getattr(b, "dtype", None)
            if d.__class__ is dtype and d in storage_only:
                found.add(d)
    return found


def _outputs_in_bfloat16(args, out):
    """Which outputs the op gives in bfloat16: those its spec says (the first argument of a kernel with a meta
    function), or, for a kernel without one (an output like its first input), all when the first tensor is."""
    first = args[0] if args else None
    if isinstance(first, TensorSpec):
        return (first.dtype is bfloat16,)
    if first.__class__ is tuple and first and all(isinstance(s, TensorSpec) for s in first):
        return tuple(s.dtype is bfloat16 for s in first)
    like = next((a for a in args if hasattr(a, "_storage")), None)
    n = len(out) if out.__class__ is tuple else 1
    return (like is not None and like.dtype is bfloat16,) * n


def computing_bfloat16(rt, name: str, fn, storage_only: frozenset):
    """The kernel ``fn`` of op ``name``, taking calls that involve bfloat16 in float32 (see the module docstring)
    and declining those with another storage-only dtype or an in-place write into bfloat16 memory."""
    if name == "copy_":
        return _copy(rt, fn, storage_only)
    if name == "fill_":
        return _fill(rt, fn, storage_only)
    writes = bool(get_operator(name).writes)

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        found = _involves(args, kwargs, storage_only)
        if not found:
            return fn(*args, **kwargs)
        if writes or found != {bfloat16}:
            return NotImplemented
        out = fn(*(_arg32(rt, a) for a in args), **{k: _arg32(rt, v) for k, v in kwargs.items()})
        if out is NotImplemented:
            return out
        wanted = _outputs_in_bfloat16(args, out)
        if out.__class__ is tuple:
            return tuple(_rounded(rt, o) if w and getattr(o, "dtype", None) is float32 else o
                         for o, w in zip(out, wanted))
        return _rounded(rt, out) if wanted[0] and getattr(out, "dtype", None) is float32 else out

    return kernel


def _copy(rt, copy_, storage_only: frozenset):
    """``copy_``: one dtype's bits as they are (any storage-only dtype); a cast into bfloat16 through float32 (as
    PyTorch's and ml_dtypes' casts go: float64 rounds twice), or out of bfloat16 into any dtype; float8 casts
    decline."""
    xp = rt.xp

    @functools.wraps(copy_)
    def kernel(spec, self, src, non_blocking=False):
        d, s = self.dtype, src.dtype
        if d is s or (d not in storage_only and s not in storage_only):
            return copy_(spec, self, src, non_blocking)
        if d is bfloat16 and s not in storage_only:
            xp.copyto(rt.array(self), narrow(xp, rt.array(src)))
            return self
        if s is bfloat16 and d not in storage_only:
            with rt.errstate(all="ignore"):
                xp.copyto(rt.array(self), widen(xp, rt.array(src)), casting="unsafe")
            return self
        return NotImplemented

    return kernel


def _fill(rt, fill_, storage_only: frozenset):
    """``fill_`` of bfloat16: the value rounded once on the host (ml_dtypes, as the CPU's fill), then its bits."""
    @functools.wraps(fill_)
    def kernel(spec, self, value):
        if self.dtype not in storage_only:
            return fill_(spec, self, value)
        if self.dtype is not bfloat16:
            return NotImplemented
        bits = np.asarray(value).astype(bfloat16.numpy).reshape(1).view(np.uint16)[0]
        rt.array(self).fill(int(bits))
        return self

    return kernel
