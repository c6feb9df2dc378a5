"""Convolution (core.ops.conv, csrc/conv.c): ``convolution`` and ``convolution_backward`` as im2col + one OpenBLAS GEMM
per image and group. C takes one or two spatial dims (1-D runs as 2-D with a height of 1), any stride, padding,
dilation and groups (the rest: 3-D, an empty batch, runs the decomposition; see :class:`core_cpu_c.context.Family`).
"""

from __future__ import annotations

from ..context import FLOATS, Family

__all__ = ["kernels", "OPS", "same_float_dtype", "as_2d"]

OPS = ("convolution", "convolution_backward")
_INT_MAX = 2**31 - 1


def same_float_dtype(*tensors) -> bool:
    """Whether the tensors share one float32/float64 dtype."""
    dtype = tensors[0].dtype
    return dtype.name in FLOATS and all(t.dtype is dtype for t in tensors)


def as_2d(x, kernel, stride, padding, dilation):
    """(spatial sizes, kernel, stride, padding, dilation) as pairs of ints, a 1-D problem as 2-D with a height of
    1; None unless the problem is 1-D or 2-D."""
    values = (tuple(x.shape[2:]), kernel, stride, padding, dilation)
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
    parts = as_2d(x, tuple(weight.shape[2:]), stride, padding, dilation)
    if parts is None:
        return None
    (h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw) = parts
    n, c, o = x.shape[0], x.shape[1], weight.shape[0]
    if min(sh, sw, dh, dw, kh, kw) < 1 or min(ph, pw) < 0 or c != weight.shape[1] * groups or o % groups:
        return None
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if min(n, c, o, oh, ow) < 1 or max(o // groups, c // groups * kh * kw, oh * ow) > _INT_MAX:
        return None
    geometry = ffi.new("ccc_conv2d*", {
        "batch": n, "channels": c, "height": h, "width": w, "out_channels": o, "kernel_h": kh, "kernel_w": kw,
        "out_h": oh, "out_w": ow, "stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw, "dilation_h": dh,
        "dilation_w": dw, "groups": groups})
    return geometry, (oh, ow)[2 - (x.dim() - 2):]


class _Convolution(Family):
    ops, c_names = OPS, {"convolution": "conv2d", "convolution_backward": "conv2d_backward"}

    def convolution(self, input, weight, bias, stride, padding, dilation, groups):
        """``convolution`` over the batched input: bias preset in the output, then one GEMM per image and group."""
        tensors = (input, weight) if bias is None else (input, weight, bias)
        found = _conv_geometry(self.ffi, input, weight, stride, padding, dilation, groups) \
            if same_float_dtype(*tensors) else None
        if found is None or (bias is not None and tuple(bias.shape) != (weight.shape[0],)):
            return self.base["convolution"](input, weight, bias, stride, padding, dilation, groups)
        geometry, out_size = found
        x, w, b = input.contiguous(), weight.contiguous(), self.contiguous(bias)
        out, buf = self.empty((x.shape[0], w.shape[0]) + out_size, x.dtype)
        op = "convolution"
        failed = self.c[op, x.dtype.name](geometry, self.pointer(op, x), self.pointer(op, w), self.pointer(op, b), buf)
        self.check_scratch(op, failed)
        return out

    def convolution_backward(self, grad_output, input, weight, stride, padding, dilation, groups, output_mask):
        """(grad_input, grad_weight, grad_bias), None where ``output_mask`` is False."""
        found = _conv_geometry(self.ffi, input, weight, stride, padding, dilation, groups) \
            if same_float_dtype(grad_output, input, weight) else None
        if found is None or tuple(grad_output.shape) != (input.shape[0], weight.shape[0]) + found[1]:
            return self.base["convolution_backward"](grad_output, input, weight, stride, padding, dilation, groups,
                                                     output_mask)
        op = "convolution_backward"
        g, x, w = grad_output.contiguous(), input.contiguous(), weight.contiguous()
        results, bufs = self.outputs(output_mask, (tuple(x.shape), tuple(w.shape), (w.shape[0],)), x.dtype)
        self.check_scratch(op, self.c[op, x.dtype.name](found[0], self.pointer(op, g), self.pointer(op, x),
                                                        self.pointer(op, w), *bufs))
        return results


def kernels(ctx) -> dict:
    """{op: kernel} for :data:`OPS`."""
    return _Convolution(ctx).kernels()
