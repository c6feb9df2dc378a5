"""Convolution and pooling kernels (``convolution``, ``convolution_backward``, ``max_pool``, ``max_pool_backward``,
``avg_pool``, ``avg_pool_backward``): im2col + OpenBLAS GEMM per image and direct pooling loops in C (csrc/conv.c).

C takes float32/float64 problems with one or two spatial dims (a 1-D one runs as 2-D with a height of 1), any
stride, padding, dilation and groups, operands of one dtype; they are made contiguous and their geometry and
bounds are checked here first. Anything else (3-D, other or mixed dtypes, an empty batch) runs the op's
decomposition.
"""

from __future__ import annotations

from .ckernels import CKernels

__all__ = ["CONV_OPS", "build_conv_kernels"]

CONV_OPS = ("convolution", "convolution_backward", "max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward")
_DTYPES = ("float32", "float64")
_INT_MAX = 2**31 - 1


def _same_float_dtype(*tensors) -> bool:
    dtype = tensors[0].dtype
    return dtype.name in _DTYPES and all(t.dtype is dtype for t in tensors)


def _as_2d(x, kernel, stride, padding, dilation):
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
    parts = _as_2d(x, tuple(weight.shape[2:]), stride, padding, dilation)
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


def _pool_out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: with ceil_mode the last window must start inside the input or its left
    padding."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= n + p else out


def _pool_geometry(ffi, x, kernel_size, stride, padding, dilation, ceil_mode):
    """The ``ccc_pool2d`` of a max pool C can run, and its output spatial sizes; None otherwise."""
    parts = _as_2d(x, kernel_size, stride, padding, dilation)
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


class _Kernels(CKernels):
    """The kernels over one extension; each falls back to ``base[op]`` where C does not apply."""

    def __init__(self, ffi, lib, key: int, base: dict):
        super().__init__(ffi, key, base)
        self.conv = {d: getattr(lib, f"ccc_conv2d_{d}") for d in _DTYPES}
        self.conv_backward = {d: getattr(lib, f"ccc_conv2d_backward_{d}") for d in _DTYPES}
        self.pool = {d: getattr(lib, f"ccc_max_pool2d_{d}") for d in _DTYPES}
        self.pool_backward = {d: getattr(lib, f"ccc_max_pool2d_backward_{d}") for d in _DTYPES}
        self.avg = {d: getattr(lib, f"ccc_avg_pool2d_{d}") for d in _DTYPES}
        self.avg_backward = {d: getattr(lib, f"ccc_avg_pool2d_backward_{d}") for d in _DTYPES}

    def convolution(self, input, weight, bias, stride, padding, dilation, groups):
        """``convolution`` over the batched input: bias preset in the output, then one GEMM per image and group."""
        tensors = (input, weight) if bias is None else (input, weight, bias)
        found = _conv_geometry(self.ffi, input, weight, stride, padding, dilation, groups) \
            if _same_float_dtype(*tensors) else None
        if found is None or (bias is not None and tuple(bias.shape) != (weight.shape[0],)):
            return self.base["convolution"](input, weight, bias, stride, padding, dilation, groups)
        geometry, out_size = found
        x, w = input.contiguous(), weight.contiguous()
        b = None if bias is None else bias.contiguous()
        out, buf = self._empty((x.shape[0], w.shape[0]) + out_size, x.dtype)
        failed = self.conv[x.dtype.name](geometry, self._pointer("convolution", x), self._pointer("convolution", w),
                                         self._pointer("convolution", b), buf)
        _check_scratch("convolution", failed)
        return out

    def convolution_backward(self, grad_output, input, weight, stride, padding, dilation, groups, output_mask):
        """(grad_input, grad_weight, grad_bias), None where ``output_mask`` is False."""
        found = _conv_geometry(self.ffi, input, weight, stride, padding, dilation, groups) \
            if _same_float_dtype(grad_output, input, weight) else None
        if found is None or tuple(grad_output.shape) != (input.shape[0], weight.shape[0]) + found[1]:
            return self.base["convolution_backward"](grad_output, input, weight, stride, padding, dilation, groups,
                                                     output_mask)
        geometry = found[0]
        g, x, w = grad_output.contiguous(), input.contiguous(), weight.contiguous()
        shapes = (tuple(x.shape), tuple(w.shape), (w.shape[0],))
        results = [self._empty(shape, x.dtype) if wanted else (None, self.ffi.NULL)
                   for wanted, shape in zip(output_mask, shapes)]
        failed = self.conv_backward[x.dtype.name](
            geometry, self._pointer("convolution_backward", g), self._pointer("convolution_backward", x),
            self._pointer("convolution_backward", w), *(buf for _, buf in results))
        _check_scratch("convolution_backward", failed)
        return tuple(t for t, _ in results)

    def max_pool(self, input, kernel_size, stride, padding, dilation, ceil_mode):
        """``max_pool`` values over each (sample, channel) plane."""
        found = _pool_geometry(self.ffi, input, kernel_size, stride, padding, dilation, ceil_mode) \
            if _same_float_dtype(input) else None
        if found is None:
            return self.base["max_pool"](input, kernel_size, stride, padding, dilation, ceil_mode)
        geometry, out_size = found
        x = input.contiguous()
        out, buf = self._empty(tuple(x.shape[:2]) + out_size, x.dtype)
        _check_scratch("max_pool", self.pool[x.dtype.name](geometry, self._pointer("max_pool", x), buf))
        return out

    def max_pool_backward(self, grad_output, input, kernel_size, stride, padding, dilation, ceil_mode):
        """Each window's gradient added at its argmax, recomputed from ``input``."""
        found = _pool_geometry(self.ffi, input, kernel_size, stride, padding, dilation, ceil_mode) \
            if _same_float_dtype(grad_output, input) else None
        if found is None or tuple(grad_output.shape) != tuple(input.shape[:2]) + found[1]:
            return self.base["max_pool_backward"](grad_output, input, kernel_size, stride, padding, dilation,
                                                  ceil_mode)
        g, x = grad_output.contiguous(), input.contiguous()
        out, buf = self._empty(tuple(x.shape), x.dtype)
        failed = self.pool_backward[x.dtype.name](found[0], self._pointer("max_pool_backward", g),
                                                  self._pointer("max_pool_backward", x), buf)
        _check_scratch("max_pool_backward", failed)
        return out


    def _avg_geometry(self, input, kernel_size, stride, padding, ceil_mode, divisor_override, *others):
        """The pool geometry of an average pool C runs (float operands of one dtype, a non-zero divisor), or None."""
        if not _same_float_dtype(input, *others) or (divisor_override is not None and divisor_override == 0):
            return None
        return _pool_geometry(self.ffi, input, kernel_size, stride, padding, (1,) * len(kernel_size), ceil_mode)

    def avg_pool(self, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        """``avg_pool``: each window's sum (in double) over PyTorch's divisor, per (sample, channel) plane."""
        args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        found = self._avg_geometry(input, kernel_size, stride, padding, ceil_mode, divisor_override)
        if found is None:
            return self.base["avg_pool"](input, *args)
        geometry, out_size = found
        x = input.contiguous()
        out, buf = self._empty(tuple(x.shape[:2]) + out_size, x.dtype)
        self.avg[x.dtype.name](geometry, self._pointer("avg_pool", x), buf, int(bool(count_include_pad)),
                               float(divisor_override or 0))
        return out

    def avg_pool_backward(self, grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override):
        """Each window's gradient over its divisor, added to the window's input positions."""
        args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        found = self._avg_geometry(input, kernel_size, stride, padding, ceil_mode, divisor_override, grad_output)
        if found is None or tuple(grad_output.shape) != tuple(input.shape[:2]) + found[1]:
            return self.base["avg_pool_backward"](grad_output, input, *args)
        g = grad_output.contiguous()
        out, buf = self._empty(tuple(input.shape), input.dtype)
        self.avg_backward[g.dtype.name](found[0], self._pointer("avg_pool_backward", g), buf,
                                        int(bool(count_include_pad)), float(divisor_override or 0))
        return out


def _check_scratch(op: str, failed: int) -> None:
    if failed:
        raise MemoryError(f"{op}: cpu_c could not allocate its scratch memory")


def build_conv_kernels(ffi, lib, key: int, base: dict) -> dict:
    """``{op: kernel}`` for :data:`CONV_OPS`; ``base`` maps each op to what runs where C does not apply."""
    kernels = _Kernels(ffi, lib, key, base)
    return {op: getattr(kernels, op) for op in CONV_OPS}
