"""Pooling (core.ops.pooling, csrc/conv.c): ``max_pool``, ``max_pool_backward``, ``avg_pool``, ``avg_pool_backward``,
direct loops over each (sample, channel) plane.

C takes float32/float64 problems with one or two spatial dims (1-D as 2-D with a height of 1), operands of one
dtype, made contiguous first; anything else runs the op's decomposition.
"""

from __future__ import annotations

from .conv import DTYPES, as_2d, check_scratch, same_float_dtype

__all__ = ["kernels", "OPS"]

OPS = ("max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward")
_C_NAMES = {"max_pool": "max_pool2d", "max_pool_backward": "max_pool2d_backward", "avg_pool": "avg_pool2d",
            "avg_pool_backward": "avg_pool2d_backward"}


def _pool_out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: with ceil_mode the last window must start inside the input or its left
    padding."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= n + p else out


def _pool_geometry(ffi, x, kernel_size, stride, padding, dilation, ceil_mode):
    """The ``ccc_pool2d`` of a max pool C can run, and its output spatial sizes; None otherwise."""
    parts = as_2d(x, kernel_size, stride, padding, dilation)
    if parts is None:
        return None
    (h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw) = parts
    if min(kh, kw, sh, sw, dh, dw) < 1 or min(ph, pw) < 0:
        return None
    oh, ow = _pool_out_size(h, kh, sh, ph, dh, ceil_mode), _pool_out_size(w, kw, sw, pw, dw, ceil_mode)
    planes = x.shape[0] * x.shape[1]
    if min(planes, h, w, oh, ow) < 1:
        return None
    geometry = ffi.new("ccc_pool2d*", {
        "planes": planes, "height": h, "width": w, "out_h": oh, "out_w": ow, "kernel_h": kh, "kernel_w": kw,
        "stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw, "dilation_h": dh, "dilation_w": dw})
    return geometry, (oh, ow)[2 - (x.dim() - 2):]


class _Pooling:
    """The kernels over one context; each falls back to ``base[op]`` (``ctx.reference(op)``) where C does not
    apply. ``c`` maps
    (op, dtype name) to the C function."""

    def __init__(self, ctx):
        self.ctx, self.empty, self.pointer = ctx, ctx.empty, ctx.pointer
        self.base = {op: ctx.reference(op) for op in OPS}  # read now: later lookups would find these kernels
        self.c = {(op, d): getattr(ctx.lib, f"ccc_{_C_NAMES[op]}_{d}") for op in OPS for d in DTYPES}

    def max_pool(self, input, kernel_size, stride, padding, dilation, ceil_mode):
        """``max_pool`` values over each (sample, channel) plane."""
        found = _pool_geometry(self.ctx.ffi, input, kernel_size, stride, padding, dilation, ceil_mode) \
            if same_float_dtype(input) else None
        if found is None:
            return self.base["max_pool"](input, kernel_size, stride, padding, dilation, ceil_mode)
        geometry, out_size = found
        x = input.contiguous()
        out, buf = self.empty(tuple(x.shape[:2]) + out_size, x.dtype)
        check_scratch("max_pool", self.c["max_pool", x.dtype.name](geometry, self.pointer("max_pool", x), buf))
        return out

    def max_pool_backward(self, grad_output, input, kernel_size, stride, padding, dilation, ceil_mode):
        """Each window's gradient added at its argmax, recomputed from ``input``."""
        found = _pool_geometry(self.ctx.ffi, input, kernel_size, stride, padding, dilation, ceil_mode) \
            if same_float_dtype(grad_output, input) else None
        if found is None or tuple(grad_output.shape) != tuple(input.shape[:2]) + found[1]:
            return self.base["max_pool_backward"](grad_output, input, kernel_size, stride, padding, dilation,
                                                           ceil_mode)
        g, x = grad_output.contiguous(), input.contiguous()
        out, buf = self.empty(tuple(x.shape), x.dtype)
        failed = self.c["max_pool_backward", x.dtype.name](found[0], self.pointer("max_pool_backward", g),
                                                           self.pointer("max_pool_backward", x), buf)
        check_scratch("max_pool_backward", failed)
        return out

    def _avg_geometry(self, input, kernel_size, stride, padding, ceil_mode, divisor_override, *others):
        """The pool geometry of an average pool C runs (float operands of one dtype, a non-zero divisor), or None."""
        if not same_float_dtype(input, *others) or (divisor_override is not None and divisor_override == 0):
            return None
        return _pool_geometry(self.ctx.ffi, input, kernel_size, stride, padding, (1,) * len(kernel_size), ceil_mode)

    def avg_pool(self, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        """``avg_pool``: each window's sum (in double) over PyTorch's divisor, per (sample, channel) plane."""
        args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        found = self._avg_geometry(input, kernel_size, stride, padding, ceil_mode, divisor_override)
        if found is None:
            return self.base["avg_pool"](input, *args)
        geometry, out_size = found
        x = input.contiguous()
        out, buf = self.empty(tuple(x.shape[:2]) + out_size, x.dtype)
        self.c["avg_pool", x.dtype.name](geometry, self.pointer("avg_pool", x), buf,
                                         int(bool(count_include_pad)), float(divisor_override or 0))
        return out

    def avg_pool_backward(self, grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override):
        """Each window's gradient over its divisor, added to the window's input positions."""
        args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        found = self._avg_geometry(input, kernel_size, stride, padding, ceil_mode, divisor_override, grad_output)
        if found is None or tuple(grad_output.shape) != tuple(input.shape[:2]) + found[1]:
            return self.base["avg_pool_backward"](grad_output, input, *args)
        g = grad_output.contiguous()
        out, buf = self.empty(tuple(input.shape), input.dtype)
        self.c["avg_pool_backward", g.dtype.name](found[0], self.pointer("avg_pool_backward", g), buf,
                                                  int(bool(count_include_pad)), float(divisor_override or 0))
        return out


def kernels(ctx) -> dict:
    """{op: kernel} for :data:`OPS`."""
    family = _Pooling(ctx)
    return {op: getattr(family, op) for op in OPS}
