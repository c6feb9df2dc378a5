"""Convolution (core.ops.conv): ``convolution``, ``convolution_backward`` and ``convolution_pointwise`` (oneDNN only:
the residual and the activation as post-ops of the same primitive; elsewhere the decomposition runs).

float32, bfloat16 and float16 go to oneDNN first (csrc/onednn.c, :func:`core_cpu_c.lib.load_onednn`): 1-, 2- and
3-D, any stride, padding, dilation and groups, the bias fused; half problems only where oneDNN has an optimised kernel
for the CPU (on an AVX-512 BF16 CPU, bfloat16: PyTorch's CPU autocast runs the same primitives; a half problem oneDNN
declines runs the decomposition). Where oneDNN is not installed or declines a problem, and for float64, cpu_c's own C
runs (csrc/conv.c): im2col + one OpenBLAS GEMM per image and group, one or two spatial dims (1-D as 2-D
with a height of 1); the rest (3-D float64, an empty batch) runs the decomposition (:class:`core_cpu_c.context.Family`).
The backward of a narrow ungrouped convolution (a weight gradient of at most :data:`DOT_ROWS` im2col rows) is cpu_c's
C even where oneDNN would take it (see :meth:`_Convolution.convolution_backward`).
"""

from __future__ import annotations

import math

from core.backends.api import planning

from ..context import FLOATS, Family
from ..layout import noted
from ..lib import load
from .linalg import ACTIVATION_CODES

__all__ = ["kernels", "OPS", "same_float_dtype", "as_2d", "ONEDNN_CALLS", "conv_path"]

OPS = ("convolution", "convolution_backward")
_INT_MAX = 2**31 - 1
DNNL_DTYPES = {"float32": 0, "bfloat16": 1, "float16": 2}  # ccc_dnnl_conv.dtype
# csrc/conv.c's DOT_ROWS: im2col rows up to which cpu_c computes a weight gradient as dot products, and, for an
# ungrouped convolution, in place of oneDNN (1.6-4x faster on one to 24 input channels here; slower on RGB 3x3 = 27)
DOT_ROWS = load()[1].ccc_conv_dot_rows()
ONEDNN_CALLS = {"forward": 0, "backward_data": 0, "backward_weights": 0}  # oneDNN primitive runs (tests read them)


def conv_path() -> str:
    """Which kernels serve float32 convolution on cpu_c: "oneDNN X.Y.Z", or cpu_c's own C and why (``core info``)."""
    from ..lib import load_onednn, onednn_status

    status = onednn_status()
    return status if load_onednn() else f"cpu_c C (im2col + OpenBLAS); {status}"


def same_float_dtype(*tensors) -> bool:
    """Whether the tensors share one float32/float64 dtype."""
    dtype = tensors[0].dtype
    return dtype.name in FLOATS and all(t.dtype is dtype for t in tensors)


def as_2d(x, kernel, stride, padding, dilation):
    """(spatial sizes, kernel, stride, padding, dilation) as pairs of ints, a 1-D problem as 2-D with a height of
    1; None unless the problem is 1-D or 2-D."""
    values = (x._shape[2:], kernel, stride, padding, dilation)
    nd = x.dim() - 2
    if nd == 2 and all(len(v) == 2 for v in values):
        return tuple((int(v[0]), int(v[1])) for v in values)
    if nd == 1 and all(len(v) == 1 for v in values):
        return tuple((lead, int(v[0])) for lead, v in zip((1, 1, 1, 0, 1), values))
    return None


def _conv_geometry(ffi, x, weight, stride, padding, dilation, groups):
    """The ``ccc_conv2d`` of a convolution C can run, and its output spatial sizes; None otherwise."""
    if weight.dim() != x.dim() or not isinstance(groups, int) or groups < 1:
        return None
    parts = as_2d(x, weight._shape[2:], stride, padding, dilation)
    if parts is None:
        return None
    (h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw) = parts
    n, c, o = x._shape[0], x._shape[1], weight._shape[0]
    if min(sh, sw, dh, dw, kh, kw) < 1 or min(ph, pw) < 0 or c != weight._shape[1] * groups or o % groups:
        return None
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if min(n, c, o, oh, ow) < 1 or max(o // groups, c // groups * kh * kw, oh * ow) > _INT_MAX:
        return None
    geometry = ffi.new("ccc_conv2d*", {
        "batch": n, "channels": c, "height": h, "width": w, "out_channels": o, "kernel_h": kh, "kernel_w": kw,
        "out_h": oh, "out_w": ow, "stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw, "dilation_h": dh,
        "dilation_w": dw, "groups": groups})
    return geometry, (oh, ow)[2 - (x.dim() - 2):]


def _dnnl_problem(ffi, x, weight, stride, padding, dilation, groups, has_bias: bool):
    """The ``ccc_dnnl_conv`` of a float32/bfloat16/float16 convolution oneDNN may take (1 to 3 spatial dims, nothing
    empty) and its output spatial sizes; None otherwise."""
    nd = x.dim() - 2
    if not 1 <= nd <= 3 or weight.dim() != x.dim() or not isinstance(groups, int) or groups < 1 \
            or x.dtype.name not in DNNL_DTYPES or not all(len(v) == nd for v in (stride, padding, dilation)):
        return None
    size, kernel = x._shape[2:], weight._shape[2:]
    n, c, o = x._shape[0], x._shape[1], weight._shape[0]
    if min(stride + dilation + kernel) < 1 or min(padding) < 0 or c != weight._shape[1] * groups or o % groups:
        return None
    out = tuple((i + 2 * p - d * (k - 1) - 1) // s + 1
                for i, k, s, p, d in zip(size, kernel, stride, padding, dilation))
    if min((n, c, o) + out) < 1:
        return None
    pad3 = lambda v, fill: [int(e) for e in v] + [fill] * (3 - nd)  # noqa: E731 - unused dims stay fixed (the key)
    problem = ffi.new("ccc_dnnl_conv*", {
        "nd": nd, "batch": n, "channels": c, "out_channels": o, "groups": groups, "has_bias": int(has_bias),
        "dtype": DNNL_DTYPES[x.dtype.name],
        "in": pad3(size, 0), "kernel": pad3(kernel, 0), "out": pad3(out, 0), "stride": pad3(stride, 0),
        "pad": pad3(padding, 0), "dilation": pad3(dilation, 0)})
    return problem, out


class _Convolution(Family):
    ops, c_names = OPS, {"convolution": "conv2d", "convolution_backward": "conv2d_backward"}

    def __init__(self, ctx):
        from ..lib import load_onednn

        super().__init__(ctx)
        self.dnnl = load_onednn()  # (ffi, lib) or None

    def _dnnl(self, kind: str, problem, *tensors, out=None) -> bool:
        """Run oneDNN's ``kind`` primitive over the dense ``tensors`` of the problem's dtype (NULL for None, in the C
        call's order); False when oneDNN declines the problem (nothing was written). ``out``: the call's one fresh
        output (the last tensor), for a capture that plans to replay the call directly."""
        ffi, lib = self.dnnl
        pointers = [ffi.NULL if t is None else ffi.cast("void*", self.pointer(f"convolution ({kind})", t))
                    for t in tensors]
        fn = getattr(lib, f"ccc_dnnl_conv_{kind}")
        if fn(problem, *pointers):
            return False
        ONEDNN_CALLS[kind] += 1
        if out is not None and planning():  # the problem struct is this call's own: the replay may keep it
            self.note(fn, (problem, *[noted(ffi, t) for t in tensors]), out._shape, out.dtype, ffi)
        return True

    def _dnnl_forward(self, input, weight, bias, stride, padding, dilation, groups, activation: int = 0,
                      residual=None):
        """oneDNN's convolution (bias, ``residual`` and the activation of code ``activation`` fused), or None when it
        does not take the problem (a residual must be a dense tensor of the output's shape and dtype)."""
        if self.dnnl is None or (bias is not None and (bias.dtype is not input.dtype or bias.dim() != 1)):
            return None
        found = _dnnl_problem(self.dnnl[0], input, weight, stride, padding, dilation, groups, bias is not None) \
            if weight.dtype is input.dtype else None
        if found is None:
            return None
        shape = (input._shape[0], weight._shape[0]) + found[1]
        if residual is not None and (not hasattr(residual, "_storage") or residual.dtype is not input.dtype
                                     or residual._shape != shape or not residual.is_contiguous()
                                     or residual._storage.device != input._storage.device):
            return None
        found[0].activation = activation
        found[0].has_residual = int(residual is not None)
        x, w, b = input.contiguous(), weight.contiguous(), self.contiguous(bias)
        out, _ = self.empty(shape, x.dtype)
        return out if self._dnnl("forward", found[0], x, w, b, residual, out, out=out) else None

    def _dnnl_backward(self, grad_output, input, weight, stride, padding, dilation, groups, output_mask):
        """oneDNN's (grad_input, grad_weight, grad_bias), or None when it does not take the problem."""
        if self.dnnl is None or not (grad_output.dtype is input.dtype is weight.dtype):
            return None
        found = _dnnl_problem(self.dnnl[0], input, weight, stride, padding, dilation, groups, bool(output_mask[2]))
        if found is None or grad_output._shape != (input._shape[0], weight._shape[0]) + found[1]:
            return None
        problem, g, x, w = found[0], grad_output.contiguous(), input.contiguous(), weight.contiguous()
        grad_input = grad_weight = grad_bias = None
        if output_mask[1] or output_mask[2]:  # one primitive gives both; a grad_weight nobody wants is dropped
            grad_weight, _ = self.empty(w._shape, w.dtype)
            grad_bias = self.empty((w._shape[0],), w.dtype)[0] if output_mask[2] else None
            if not self._dnnl("backward_weights", problem, g, x, grad_weight, grad_bias):
                return None
        if output_mask[0]:
            problem.has_bias = 0  # backward data has no bias: one cache entry whatever the mask
            grad_input, _ = self.empty(x._shape, x.dtype)
            if not self._dnnl("backward_data", problem, g, w, grad_input):
                return None
        return grad_input, grad_weight if output_mask[1] else None, grad_bias

    def convolution(self, input, weight, bias, stride, padding, dilation, groups):
        """``convolution`` over the batched input: oneDNN for float32 (and half types where it has an optimised
        kernel; else they run in float32 and round once), else bias preset in the output, then one GEMM per image
        and group."""
        served = self._dnnl_forward(input, weight, bias, stride, padding, dilation, groups)
        if served is None:  # half operands oneDNN has no optimised kernel for: float32, rounded once
            served = self.widened(self.convolution, input, weight, bias, stride, padding, dilation, groups)
        if served is not None:
            return served
        tensors = (input, weight) if bias is None else (input, weight, bias)
        found = _conv_geometry(self.ffi, input, weight, stride, padding, dilation, groups) \
            if same_float_dtype(*tensors) else None
        if found is None or (bias is not None and bias._shape != (weight._shape[0],)):
            return self.base["convolution"](input, weight, bias, stride, padding, dilation, groups)
        geometry, out_size = found
        x, w, b = input.contiguous(), weight.contiguous(), self.contiguous(bias)
        out, buf = self.empty((x._shape[0], w._shape[0]) + out_size, x.dtype)
        op = "convolution"
        failed = self.c[op, x.dtype.name](geometry, self.pointer(op, x), self.pointer(op, w), self.pointer(op, b), buf)
        self.check_scratch(op, failed)
        return out

    def convolution_pointwise(self, input, weight, bias, stride, padding, dilation, groups, activation,
                              residual=None, /):
        """The convolution with ``residual`` added and ``activation`` applied in oneDNN's primitive (post-ops);
        ``NotImplemented`` (the decomposition: convolution, then the addition and the activation) where oneDNN does
        not take the problem or the residual is not a dense tensor laid out as the output."""
        code = 0 if activation is None else ACTIVATION_CODES.get(activation)
        served = None if code is None else \
            self._dnnl_forward(input, weight, bias, stride, padding, dilation, groups, code, residual)
        return NotImplemented if served is None else served

    def kernels(self) -> dict:
        """{op: kernel}: :data:`OPS` and ``convolution_pointwise`` (which has no C function of its own)."""
        return {**super().kernels(), "convolution_pointwise": self.convolution_pointwise}

    def convolution_backward(self, grad_output, input, weight, stride, padding, dilation, groups, output_mask):
        """(grad_input, grad_weight, grad_bias), None where ``output_mask`` is False. The weight gradient of an
        ungrouped convolution of at most :data:`DOT_ROWS` im2col rows (a first layer's few input channels, a narrow
        1x1) is cpu_c's own dot products, not oneDNN's (which blocks input channels by eight: LeNet's first layer
        took 2.8-3.6 ms there against 0.55-0.65 ms)."""
        found = _conv_geometry(self.ffi, input, weight, stride, padding, dilation, groups) \
            if same_float_dtype(grad_output, input, weight) else None
        if not (found is not None and output_mask[1] and groups == 1 and math.prod(weight._shape[1:]) <= DOT_ROWS):
            served = self._dnnl_backward(grad_output, input, weight, stride, padding, dilation, groups, output_mask)
            if served is None:
                served = self.widened(self.convolution_backward, grad_output, input, weight, stride, padding,
                                      dilation, groups, output_mask)
            if served is not None:
                return served
        if found is None or grad_output._shape != (input._shape[0], weight._shape[0]) + found[1]:
            return self.base["convolution_backward"](grad_output, input, weight, stride, padding, dilation, groups,
                                                     output_mask)
        op = "convolution_backward"
        g, x, w = grad_output.contiguous(), input.contiguous(), weight.contiguous()
        results, bufs = self.outputs(output_mask, (x._shape, w._shape, (w._shape[0],)), x.dtype)
        self.check_scratch(op, self.c[op, x.dtype.name](found[0], self.pointer(op, g), self.pointer(op, x),
                                                        self.pointer(op, w), *bufs))
        return results


def kernels(ctx) -> dict:
    """{op: kernel} for :data:`OPS`."""
    return _Convolution(ctx).kernels()
