"""Products (core.ops.linalg): ``batched_matmul`` (so matmul, mm, bmm, addmm), ``linear`` and ``linear_pointwise``.

float32 products run on one of two libraries, chosen once per process (:func:`gemm_library`): oneDNN's matmul
primitive where its float32 matmul is one of its brgemm kernels (AVX-512, AMX machines), OpenBLAS's ``sgemm``
where oneDNN's is its older ``gemm:jit`` (AVX2 machines: 1.45x OpenBLAS's time at 512^3 on a 2-core AMD EPYC)
or oneDNN is not loaded. Both run on the OpenMP team of cpu_c's other kernels (OpenBLAS's parallel jobs through its
threads callback, csrc/blas.c). On oneDNN (csrc/onednn.c: cached per problem) transposed or sliced operands are
strides, products one stride apart one batched primitive, and ``linear`` adds its bias in the same primitive and
``linear_pointwise`` applies its activation there too, as a post-op; on OpenBLAS ``linear`` writes the bias into
the output and lets ``sgemm`` add the product, as PyTorch's addmm, then one pass adds a residual and applies a relu
(other activations: the decomposition), eager's roundings, so traced and eager results stay equal bit for bit.
float16/bfloat16 run oneDNN's matmul where it has an optimised kernel for the CPU (on an AVX-512 BF16 CPU,
bfloat16: its dot-product instructions, as PyTorch's CPU autocast). Elsewhere, and for float64, OpenBLAS's
``sgemm``/``dgemm`` runs with the batch loop in C and transposes as BLAS flags; half operands are then widened to
float32 in C, multiplied by ``sgemm`` and the product rounded once (csrc/blas.c). Every path accumulates in float32
(PyTorch's CPU opmath); only the order of the additions differs."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from core import dtypes
from core.backends.api import Kernel, Ptr, coalesce, note_c_call, planning

from ..layout import check_bounds, first_element, noted, remember
from ..lib import load_onednn
from ..renderer import DTYPES, HALF
from ..runtime import array, fresh, new_tensor

__all__ = ["kernels", "min_numel", "gemm_path", "gemm_library", "GEMM_CALLS", "ACTIVATION_CODES"]

_INT_MAX = 2**31 - 1
_DNNL_DTYPES = {"float32": 0, "bfloat16": 1, "float16": 2}  # ccc_dnnl_gemm.dtype
# products oneDNN ran, by dtype; fused linears, by either library; float32 products OpenBLAS ran (tests read them)
GEMM_CALLS = {"float32": 0, "half": 0, "linear": 0, "openblas": 0}
_LIBRARY: dict = {}  # gemm_library()'s choice, made once
# csrc/onednn.h's post-op codes (ccc_dnnl_gemm.activation)
ACTIVATION_CODES = {"relu": 1, "sigmoid": 2, "tanh": 3, "gelu": 4, "gelu_tanh": 5}


def onednn():
    """(ffi, lib) of cpu_c's oneDNN module, or None (tests patch it to force the sgemm path)."""
    return load_onednn()


def gemm_library() -> str:
    """"onednn" or "openblas": the library that runs float32 products and linears (chosen once: the module's
    docstring says how; ``CORE_CPU_C_GEMM=onednn`` or ``openblas`` overrides where oneDNN is loaded)."""
    choice = _LIBRARY.get("float32")
    if choice is None:
        import os

        dnnl = onednn()
        wanted = os.environ.get("CORE_CPU_C_GEMM", "auto")
        if dnnl is None or wanted == "openblas":
            choice = "openblas"
        elif wanted == "onednn":
            choice = "onednn"
        else:
            choice = "onednn" if "brg" in _onednn_impl(dnnl) else "openblas"
        _LIBRARY["float32"] = choice
    return choice


def _onednn_impl(dnnl) -> str:
    """oneDNN's implementation name for a 512^3 float32 matmul ("" when it cannot say)."""
    ffi, lib = dnnl
    name = ffi.new("char[]", 128)
    return "" if lib.ccc_dnnl_matmul_impl(512, 512, 512, name, 128) else ffi.string(name).decode()


def gemm_path() -> str:
    """Which library serves float32 GEMM on cpu_c (``core info``): oneDNN's matmul, or OpenBLAS and why."""
    from ..lib import onednn_status

    dnnl = onednn()
    if dnnl is None:
        return f"OpenBLAS; {onednn_status()}"
    if gemm_library() == "onednn":
        return f"{onednn_status()} matmul ({_onednn_impl(dnnl)})"
    return f"OpenBLAS (on the OpenMP threads; {onednn_status()}'s float32 matmul here: {_onednn_impl(dnnl)})"


def min_numel(ctx) -> int:
    """The dispatcher's threshold, in output elements: a 64th of ``ctx.min_numel`` (the kernel itself also sends
    calls under ``ctx.min_numel`` output elements x k to NumPy)."""
    return ctx.min_numel // 64


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


def _operand(op: str, t, rows: int, cols: int):
    """(buffer, element offset, transposed, ld) of BLAS-readable operand ``t``, the offset an int for a matrix and
    an array of one per product for a batch; copies only odd layouts."""
    check_bounds(op, t)
    *_, s0, s1 = t._stride
    layout = _blas_layout(rows, cols, s0, s1) if min(t._stride) >= 0 else None
    if layout is None:  # e.g. stride 0 inside a matrix (expand): BLAS needs a real leading dim
        dense = np.ascontiguousarray(array(t))
        batch = dense.shape[:-2]
        strides = tuple(s // dense.itemsize for s in dense.strides[:-2])
        return dense, _batch_offsets(0, batch, strides) if batch else 0, 0, max(cols, 1)
    batch = t._shape[:-2]
    offsets = _batch_offsets(t._offset, batch, t._stride[:-2]) if batch else t._offset
    return t._storage.data, offsets, layout[0], layout[1]


def _matrix(t, rows: int, cols: int, s0: int, s1: int):
    """The (buffer, offset, transposed, ld) of the rows x cols matrix with strides (s0, s1) at ``t``'s offset in
    its storage (bounds checked on ``t``), or None where BLAS cannot read that layout."""
    layout = _blas_layout(rows, cols, s0, s1)
    if layout is None:
        return None
    return t._storage.data, t._offset, layout[0], layout[1]


_ZERO: dict = {}  # ffi -> a C array holding one 0 (never written): the offsets of a single product at its pointers


def _c_operand(ffi, buffer, offsets, size: int) -> tuple:
    """(pointer, offsets array, products) of an operand for the C GEMM entries: a single product (``offsets`` an
    int) points at its first element, with offset 0, and needs no offsets array from NumPy."""
    if offsets.__class__ is int:
        zero = _ZERO.get(ffi)
        if zero is None:
            zero = _ZERO[ffi] = ffi.new("long long[1]")
        return ffi.from_buffer(buffer) + offsets * size, zero, 1
    return ffi.from_buffer(buffer), ffi.from_buffer("long long[]", offsets), len(offsets)


_PROBLEMS: dict = {}  # (n, m, k, ta, lda, tb, ldb, dtype code, bias, activation, residual) -> ccc_dnnl_gemm struct


def _problem(ffi, key: tuple):
    """The ``ccc_dnnl_gemm`` struct of ``key`` (C only reads it), made once per problem."""
    problem = _PROBLEMS.get(key)
    if problem is None:
        names = ("n", "m", "k", "ta", "lda", "tb", "ldb", "dtype", "has_bias", "activation", "has_residual")
        problem = remember(_PROBLEMS, key, ffi.new("ccc_dnnl_gemm*", dict(zip(names, key))))
    return problem


def _c_part(ffi, buffer, offsets, size: int):
    """The pointer argument :func:`_c_operand` makes, as a capture's note takes it (``core.backends.api.Ptr``)."""
    return Ptr(buffer, offsets * size if offsets.__class__ is int else 0)


def _onednn_product(dtype, n: int, m: int, k: int, a: tuple, b: tuple, bias, out_buf, activation: int = 0,
                    residual=None, make=None) -> bool:
    """``out = act(A @ B (+ bias) (+ residual))`` on oneDNN's matmul (operands as :func:`_operand` gives them,
    ``bias`` a dense 1-D tensor or None, ``residual`` a tensor laid out as ``out`` or None, ``act`` the activation of
    code ``activation``: :data:`ACTIVATION_CODES`, 0 none); False (nothing written) where oneDNN is not loaded or
    declines the problem."""
    dnnl = onednn()
    code = _DNNL_DTYPES.get(dtype.name)
    if dnnl is None or code is None:
        return False
    ffi, lib = dnnl
    fb = ffi.from_buffer
    (a_buf, a_offsets, ta, lda), (b_buf, b_offsets, tb, ldb) = a, b
    size = dtype.itemsize
    problem = _problem(ffi, (n, m, k, ta, lda, tb, ldb, code, int(bias is not None), activation,
                             int(residual is not None)))
    a_ptr, a_offs, count = _c_operand(ffi, a_buf, a_offsets, size)
    b_ptr, b_offs, _ = _c_operand(ffi, b_buf, b_offsets, size)
    if lib.ccc_dnnl_matmul(problem, count, a_ptr, a_offs, b_ptr, b_offs, first_element(ffi, bias),
                           first_element(ffi, residual), fb(out_buf)):
        return False
    GEMM_CALLS["float32" if code == 0 else "half"] += 1
    if make is not None:  # a capture plans: the replay calls oneDNN itself
        note_c_call(lib.ccc_dnnl_matmul, (problem, count, _c_part(ffi, a_buf, a_offsets, size), a_offs,
                                          _c_part(ffi, b_buf, b_offsets, size), b_offs, noted(ffi, bias),
                                          noted(ffi, residual), Ptr(out_buf)), fb, make)
    return True


def _matmul(ctx, base):
    gemm = {d: getattr(ctx.lib, f"ccc_gemm_{d}") for d in DTYPES + HALF}
    float32 = dtypes.float32

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
        left, right = _operand("batched_matmul", a, n, k), _operand("batched_matmul", b, k, m)
        make = partial(fresh, shape, d, ctx.key) if planning() else None
        if d is not float32 or gemm_library() == "onednn":
            if _onednn_product(d, n, m, k, left, right, None, buf, make=make):
                return out
        else:
            GEMM_CALLS["openblas"] += 1
        (a_buf, a_offsets, ta, lda), (b_buf, b_offsets, tb, ldb) = left, right
        a_ptr, a_offs, count = _c_operand(ctx.ffi, a_buf, a_offsets, d.itemsize)
        b_ptr, b_offs, _ = _c_operand(ctx.ffi, b_buf, b_offsets, d.itemsize)
        if fn(count, n, m, k, a_ptr, a_offs, ta, lda, b_ptr, b_offs, tb, ldb, ctx.from_buffer(buf), 0):
            raise MemoryError(f"batched_matmul: cannot allocate the float32 copies of {d.name} operands "
                              f"({n}x{k} and {k}x{m})")
        if make is not None:
            size = d.itemsize
            note_c_call(fn, (count, n, m, k, _c_part(ctx.ffi, a_buf, a_offsets, size), a_offs, ta, lda,
                             _c_part(ctx.ffi, b_buf, b_offsets, size), b_offs, tb, ldb, Ptr(buf), 0),
                        ctx.from_buffer, make)
        return out

    return kernel


def _linear(ctx) -> dict:
    """{"linear", "linear_pointwise": their kernels}, both one oneDNN matmul (``_fused_linear``)."""

    def linear(input, weight, bias=None):
        """``input @ weight.T + bias`` as one oneDNN matmul with the bias fused; ``NotImplemented`` (the
        decomposition) for other dtypes, shapes or devices, small problems and without oneDNN."""
        return _fused_linear(ctx, input, weight, bias, 0, None)

    def linear_pointwise(input, weight, bias, activation, residual=None, /):
        """``activation(input @ weight.T + bias + residual)`` as one oneDNN matmul, the rest as post-ops;
        ``NotImplemented`` (the decomposition) as :func:`linear`, and for a residual that is not dense and of the
        output's shape."""
        code = 0 if activation is None else ACTIVATION_CODES.get(activation, -1)
        return NotImplemented if code < 0 else _fused_linear(ctx, input, weight, bias, code, residual)

    return {"linear": linear, "linear_pointwise": linear_pointwise}


def _fused_linear(ctx, input, weight, bias, code: int, residual):
    """The output of ``linear`` with the activation of ``code`` and ``residual`` fused, or NotImplemented."""
    d = input.dtype
    device = input._storage.device
    if d.name not in _DNNL_DTYPES or weight.dtype is not d or input.dim() < 1 or weight.dim() != 2 \
            or weight._storage.device is not device:
        return NotImplemented
    m, k = weight._shape
    lead = input._shape[:-1]
    n = math.prod(lead)
    if bias is not None and (bias.dtype is not d or bias._shape != (m,)
                             or bias._storage.device is not device):
        return NotImplemented
    if input._shape[-1] != k or min(n, m, k) == 0 or max(n, m, k) > _INT_MAX or n * m * k < ctx.min_numel:
        return NotImplemented
    blas = d is dtypes.float32 and gemm_library() == "openblas"
    if (blas and code not in (0, 1)) or (not blas and onednn() is None):
        return NotImplemented  # the decomposition: OpenBLAS's linear then the activation, as eager runs them
    check_bounds("linear", input)
    check_bounds("linear", weight)
    rows = coalesce(lead, [input._stride[:-1]], min_rank=1)
    if len(rows[0]) > 1:  # rows that are not one stride apart
        input = input.contiguous()
        rows = coalesce(lead, [input._stride[:-1]], min_rank=1)
    a = _matrix(input, n, k, rows[1][0][0], input._stride[-1])
    b = _matrix(weight, k, m, weight._stride[1], weight._stride[0])  # weight.T
    if a is None or b is None:
        return NotImplemented
    if bias is not None:
        if bias._stride != (1,) and m > 1:
            bias = bias.contiguous()
        check_bounds("linear", bias)
    shape = lead + (m,)
    if residual is not None:
        if not hasattr(residual, "_storage") or residual.dtype is not d or residual._shape != shape \
                or residual._storage.device != device or not residual.is_contiguous():
            return NotImplemented
        check_bounds("linear", residual)
    out, buf = new_tensor(shape, d, n * m * d.itemsize, ctx.key)
    make = partial(fresh, shape, d, ctx.key) if planning() else None
    if blas:  # operands checked above: pointers to their first elements (a and b start where input and weight do)
        ffi = ctx.ffi
        ctx.lib.ccc_linear_float32(n, m, k, first_element(ffi, input), a[2], a[3], first_element(ffi, weight), b[2],
                                   b[3], first_element(ffi, bias), first_element(ffi, residual), code,
                                   ffi.from_buffer(buf))
        GEMM_CALLS["openblas"] += 1
        if make is not None:
            note_c_call(ctx.lib.ccc_linear_float32, (n, m, k, noted(ffi, input), a[2], a[3], noted(ffi, weight),
                                                     b[2], b[3], noted(ffi, bias), noted(ffi, residual), code,
                                                     Ptr(buf)), ffi.from_buffer, make)
    elif not _onednn_product(d, n, m, k, a, b, bias, buf, code, residual, make):
        return NotImplemented
    GEMM_CALLS["linear"] += 1
    return out


def kernels(ctx) -> dict:
    """{"batched_matmul": Kernel over the reference kernel it extends, "linear" and "linear_pointwise": the fused
    kernels}."""
    base = ctx.reference("batched_matmul")
    return {} if base is None else {"batched_matmul": Kernel(_matmul(ctx, base), min_numel=min_numel(ctx)),
                                    **_linear(ctx)}
