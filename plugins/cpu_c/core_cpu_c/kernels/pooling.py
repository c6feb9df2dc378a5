"""Pooling (core.ops.pooling, csrc/conv.c): ``max_pool``, ``max_pool_backward``, ``avg_pool``, ``avg_pool_backward``,
direct loops over each (sample, channel) plane; one or two spatial dims, as convolution (:mod:`.conv`). The C picks
the path: dense windows (no padding, dilation 1, all inside the input) a vectorised one, other geometries the
generic one, with the same results (docs/backends/cpu_c.md, "Pooling paths"). float16/bfloat16 operands run the
float32 loops on exact float32 copies, the result rounded once (a max pool's values are the input's own, bit for
bit)."""

from __future__ import annotations

from core.backends.api import planning

from ..context import Family
from ..layout import noted
from .conv import as_2d, same_float_dtype

__all__ = ["kernels", "OPS"]

OPS = ("max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward")


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
    planes = x._shape[0] * x._shape[1]
    if min(planes, h, w, oh, ow) < 1:
        return None
    geometry = ffi.new("ccc_pool2d*", {
        "planes": planes, "height": h, "width": w, "out_h": oh, "out_w": ow, "kernel_h": kh, "kernel_w": kw,
        "stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw, "dilation_h": dh, "dilation_w": dw})
    return geometry, (oh, ow)[2 - (x.dim() - 2):]


class _Pooling(Family):
    ops, c_names = OPS, {op: op.replace("_pool", "_pool2d") for op in OPS}  # max_pool -> ccc_max_pool2d_<dtype>

    def _geometry(self, operands: tuple, kernel_size, stride, padding, dilation, ceil_mode):
        """The ``ccc_pool2d`` of a pool C runs over ``operands`` (input first, float, one dtype; dilation None: 1)
        and its output spatial sizes, or None."""
        if not same_float_dtype(*operands):
            return None
        dilation = (1,) * len(kernel_size) if dilation is None else dilation
        return _pool_geometry(self.ffi, operands[0], kernel_size, stride, padding, dilation, ceil_mode)

    def max_pool(self, input, kernel_size, stride, padding, dilation, ceil_mode):
        """``max_pool`` values over each (sample, channel) plane."""
        served = self.widened(self.max_pool, input, kernel_size, stride, padding, dilation, ceil_mode)
        if served is not None:
            return served
        found = self._geometry((input,), kernel_size, stride, padding, dilation, ceil_mode)
        if found is None:
            return self.base["max_pool"](input, kernel_size, stride, padding, dilation, ceil_mode)
        x = input.contiguous()
        out, buf = self.empty(x._shape[:2] + found[1], x.dtype)
        fn = self.c["max_pool", x.dtype.name]
        self.check_scratch("max_pool", fn(found[0], self.pointer("max_pool", x), buf))
        if planning():  # a capture: the replay calls C itself
            self.note(fn, (found[0], noted(self.ffi, x), noted(self.ffi, out)), out._shape, x.dtype)
        return out

    def max_pool_backward(self, grad_output, input, kernel_size, stride, padding, dilation, ceil_mode):
        """Each window's gradient added at its argmax, recomputed from ``input``."""
        served = self.widened(self.max_pool_backward, grad_output, input, kernel_size, stride, padding, dilation,
                              ceil_mode)
        if served is not None:
            return served
        op, args = "max_pool_backward", (kernel_size, stride, padding, dilation, ceil_mode)
        found = self._geometry((input, grad_output), *args)
        if found is None or grad_output._shape != input._shape[:2] + found[1]:
            return self.base[op](grad_output, input, *args)
        g, x = grad_output.contiguous(), input.contiguous()
        out, buf = self.empty(x._shape, x.dtype)
        fn = self.c[op, x.dtype.name]
        self.check_scratch(op, fn(found[0], self.pointer(op, g), self.pointer(op, x), buf))
        if planning():  # a capture: the replay calls C itself
            self.note(fn, (found[0], noted(self.ffi, g), noted(self.ffi, x), noted(self.ffi, out)), out._shape, x.dtype)
        return out

    def avg_pool(self, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        """``avg_pool``: each window's sum (in double) over PyTorch's divisor, per (sample, channel) plane."""
        served = self.widened(self.avg_pool, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                              divisor_override)
        if served is not None:
            return served
        args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        found = None if divisor_override == 0 else self._geometry((input,), kernel_size, stride, padding, None,
                                                                  ceil_mode)
        if found is None:
            return self.base["avg_pool"](input, *args)
        x = input.contiguous()
        out, buf = self.empty(x._shape[:2] + found[1], x.dtype)
        self.c["avg_pool", x.dtype.name](found[0], self.pointer("avg_pool", x), buf, int(bool(count_include_pad)),
                                         float(divisor_override or 0))
        return out

    def avg_pool_backward(self, grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override):
        """Each window's gradient over its divisor, added to the window's input positions."""
        served = self.widened(self.avg_pool_backward, grad_output, input, kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override)
        if served is not None:
            return served
        op, args = "avg_pool_backward", (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        found = None if divisor_override == 0 else self._geometry((input, grad_output), kernel_size, stride, padding,
                                                                  None, ceil_mode)
        if found is None or grad_output._shape != input._shape[:2] + found[1]:
            return self.base[op](grad_output, input, *args)
        g = grad_output.contiguous()
        out, buf = self.empty(tuple(input.shape), input.dtype)
        self.c[op, g.dtype.name](found[0], self.pointer(op, g), buf, int(bool(count_include_pad)),
                                 float(divisor_override or 0))
        return out

def kernels(ctx) -> dict:
    """{op: kernel} for :data:`OPS`."""
    return _Pooling(ctx).kernels()
