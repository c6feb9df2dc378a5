"""The one object every cpu_c kernel family is built from: the extension, the dispatch key, the kernels it extends
and the size under which NumPy's kernels run instead of C."""

from __future__ import annotations

from functools import partial

import core
from core.backends.api import get_operator, note_c_call

from .layout import pointer
from .runtime import fresh

__all__ = ["Context", "Family", "FLOATS"]

FLOATS = ("float32", "float64")  # the dtypes of the fused C families (conv to optimizers, gelu)
HALF_CODES = {"float16": 8, "bfloat16": 9}  # ccc_copy_cast's type codes (float32: 6)


class Context:
    """``ffi``/``lib`` of the extension, ``key`` (the dispatch key's mask, stamped on the tensors the kernels make)
    and ``min_numel`` (moved by ``core_cpu_c.set_min_numel``; each family derives its own thresholds from it)."""

    def __init__(self, ffi, lib, key, min_numel: int):
        self.ffi, self.lib, self.key, self.bit = ffi, lib, key.mask, key.bit
        self.from_buffer = ffi.from_buffer
        self.bool = core.bool
        self.min_numel = min_numel  # below it the NumPy kernel is faster: a C call + checks cost ~2 us
        self._references: dict = {}

    def reference(self, op: str):
        """What runs ``op`` where C does not apply: the kernel registered under cpu_c's key before cpu_c's own (the
        NumPy reference's: cpu_c extends it), else the op's decomposition; None when neither exists.

        Families read it while building their tables, before cpu_c's kernels are registered over it; it is cached, so a
        table rebuilt later (``set_min_numel``) still gets the reference, not cpu_c's own kernel."""
        if op not in self._references:
            operator = get_operator(op)
            self._references[op] = operator.kernels.get(self.bit) or operator.decomposition
        return self._references[op]

    def empty(self, shape: tuple, dtype):
        """A fresh contiguous output tensor and a cffi buffer over its bytes."""
        out = fresh(shape, dtype, self.key)
        return out, self.ffi.from_buffer(out._storage.data)

    def pointer(self, op: str, t):
        """NULL for None, else a pointer to ``t``'s first element once its view is checked against its storage."""
        return self.ffi.NULL if t is None else pointer(self.ffi, op, t)

    def longs(self, values: list):
        """A C ``long long[]`` of ``values`` (the strided walks' shapes, strides and offsets)."""
        return self.ffi.new("long long[]", values)

    def cast(self, t, dtype):
        """A fresh contiguous copy of ``t`` in ``dtype``, one of them float32 and the other float16/bfloat16: exact
        widening, or rounding to nearest even (csrc/half.h)."""
        src = t.contiguous()
        out, buf = self.empty(tuple(src.shape), dtype)
        codes = {"float32": 6, **HALF_CODES}
        if src.numel():
            meta = self.longs([src.numel(), 1, 1])
            self.lib.ccc_copy_cast(codes[dtype.name], codes[src.dtype.name], 1, meta, meta + 1, meta + 2, buf,
                                   self.pointer("cast", src))
        return out


class Family:
    """Base of the fused C families (conv, pooling, normalization, loss, optimizers, gelu), a kernel method per op.

    C takes float32/float64 operands of one dtype on one device, made contiguous and their bounds checked first;
    anything else runs ``base[op]`` (``ctx.reference(op)``, the op's decomposition, with the same formulas; read at
    construction: later lookups would find these kernels). ``c[op, dtype name]`` is the C function
    ``ccc_<c_names.get(op, op)>_<dtype>`` (tests count calls through it)."""

    ops: tuple = ()
    c_names: dict = {}

    def __init__(self, ctx):
        self.ctx, self.ffi, self.empty, self.pointer = ctx, ctx.ffi, ctx.empty, ctx.pointer
        self.float32 = core.float32
        self.base = {op: ctx.reference(op) for op in self.ops}
        self.c = {(op, d): getattr(ctx.lib, f"ccc_{self.c_names.get(op, op)}_{d}") for op in self.ops for d in FLOATS}

    def kernels(self) -> dict:
        """{op: the bound method of that name} for :attr:`ops`."""
        return {op: getattr(self, op) for op in self.ops}

    def note(self, fn, parts: tuple, shape: tuple, dtype, ffi=None) -> None:
        """Note C call ``fn(*parts)`` (a function of ``ffi``, default the extension's) whose fresh dense output of
        ``shape`` and ``dtype`` is the kernel's result, for a capture that plans (``core.backends.api.note_c_call``)."""
        note_c_call(fn, parts, (ffi or self.ffi).from_buffer, partial(fresh, shape, dtype, self.ctx.key))

    def outputs(self, output_mask, shapes, dtype) -> tuple:
        """(tensors, C buffers) of a backward's results: (None, NULL) where ``output_mask`` is False."""
        pairs = [self.empty(s, dtype) if wanted else (None, self.ffi.NULL) for wanted, s in zip(output_mask, shapes)]
        return tuple(t for t, _ in pairs), [buf for _, buf in pairs]

    def widened(self, kernel, *tensors_then_args):
        """``kernel`` over float32 copies of the leading half tensors (one dtype; the other arguments as given), its
        tensor result (or each tensor of a tuple of results) rounded back to that dtype once; None unless the leading
        tensors are of one half dtype. For kernels whose float32 result rounds to the half result (pooling: a max, a
        sum over a window; convolution: float32 accumulation, as PyTorch's CPU kernels do)."""
        split = next((i for i, a in enumerate(tensors_then_args) if not hasattr(a, "_storage")), len(tensors_then_args))
        tensors, args = tensors_then_args[:split], tensors_then_args[split:]
        dtype = tensors[0].dtype
        if dtype.name not in HALF_CODES or any(t.dtype is not dtype for t in tensors):
            return None
        out = kernel(*(self.ctx.cast(t, self.float32) for t in tensors), *args)
        if out.__class__ is tuple:
            return tuple(None if t is None else self.ctx.cast(t, dtype) for t in out)
        return self.ctx.cast(out, dtype)

    @staticmethod
    def contiguous(t):
        """``t.contiguous()``, None for None (an optional weight or bias)."""
        return None if t is None else t.contiguous()

    @staticmethod
    def check_scratch(op: str, failed: int) -> None:
        """Raise MemoryError for a C kernel that could not allocate its scratch memory."""
        if failed:
            raise MemoryError(f"{op}: cpu_c could not allocate its scratch memory")
