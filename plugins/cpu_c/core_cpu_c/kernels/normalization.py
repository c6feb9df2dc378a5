"""Normalization (core.ops.normalization, csrc/norm.c): fused ``layer_norm``, ``layer_norm_backward``, ``batch_norm``,
``batch_norm_backward``, one C pass instead of one per tensor op of the decompositions (which run for an empty
input or non-contiguous running statistics; see :class:`core_cpu_c.context.Family`)."""

from __future__ import annotations

import math

from ..context import FLOATS, Family

__all__ = ["kernels", "OPS"]

OPS = ("layer_norm", "layer_norm_backward", "batch_norm", "batch_norm_backward")


def _fits(input, *others) -> bool:
    """Whether C takes these operands: ``input`` non-empty float32/float64, the others (None or tensors) of its
    dtype and device."""
    dtype = input.dtype
    return dtype.name in FLOATS and input.numel() > 0 and all(
        t is None or (t.dtype is dtype and t.device == input.device) for t in others)


def _rows(input, normalized_shape, *vectors) -> int:
    """The number of rows of a layer norm C can run (``input`` ends with ``normalized_shape``, each vector None or
    of its size); 0 otherwise."""
    shape = tuple(normalized_shape)
    cols = math.prod(shape)
    if cols == 0 or tuple(input.shape[input.dim() - len(shape):]) != shape or any(
            v is not None and v.numel() != cols for v in vectors):
        return 0
    return input.numel() // cols


def _channels(input, *vectors) -> int:
    """The channel count of a batch norm C can run (each vector None or of C elements); 0 otherwise."""
    channels = input.shape[1] if input.dim() >= 2 else 0
    return channels if all(v is None or v.numel() == channels for v in vectors) else 0


def _extents(input) -> tuple:
    """(N, C, elements per channel and sample) of a batch norm's input."""
    n, c = input.shape[0], input.shape[1]
    return n, c, input.numel() // (n * c)


class _Normalization(Family):
    ops = OPS

    def layer_norm(self, input, normalized_shape, weight, bias, eps):
        """Each row over the trailing ``normalized_shape`` dims normalised, then scaled and shifted."""
        rows = _rows(input, normalized_shape, weight, bias) if _fits(input, weight, bias) else 0
        if not rows:
            return self.base["layer_norm"](input, normalized_shape, weight, bias, eps)
        op, x, w, b = "layer_norm", input.contiguous(), self.contiguous(weight), self.contiguous(bias)
        out, buf = self.empty(tuple(x.shape), x.dtype)
        self.c[op, x.dtype.name](rows, x.numel() // rows, self.pointer(op, x), self.pointer(op, w),
                                 self.pointer(op, b), float(eps), buf)
        return out

    def layer_norm_backward(self, grad, input, normalized_shape, weight, bias, eps, output_mask):
        """(grad_input, grad_weight, grad_bias), None where ``output_mask`` is False; the statistics recomputed."""
        rows = _rows(input, normalized_shape, weight) if _fits(input, grad, weight) else 0
        if not rows or tuple(grad.shape) != tuple(input.shape):
            return self.base["layer_norm_backward"](grad, input, normalized_shape, weight, bias, eps, output_mask)
        op, g, x, w = "layer_norm_backward", grad.contiguous(), input.contiguous(), self.contiguous(weight)
        shapes = (tuple(x.shape), tuple(normalized_shape), tuple(normalized_shape))
        results, bufs = self.outputs(output_mask, shapes, x.dtype)
        self.check_scratch(op, self.c[op, x.dtype.name](rows, x.numel() // rows, self.pointer(op, g),
                                                        self.pointer(op, x), self.pointer(op, w), float(eps), *bufs))
        return results

    def batch_norm(self, input, running_mean, running_var, weight, bias, training, momentum, eps):
        """Per-channel normalisation; training updates the running statistics in place (they must be
        contiguous: C writes them)."""
        stats = (running_mean, running_var)
        if (not _fits(input, *stats, weight, bias) or not _channels(input, *stats, weight, bias)
                or any(t is not None and not t.is_contiguous() for t in stats)):
            return self.base["batch_norm"](input, running_mean, running_var, weight, bias, training, momentum, eps)
        op, x, w, b = "batch_norm", input.contiguous(), self.contiguous(weight), self.contiguous(bias)
        out, buf = self.empty(tuple(x.shape), x.dtype)
        update = training and momentum != 0.0
        targets = [self.pointer(op, t) if update or not training else self.ffi.NULL for t in stats]
        self.c[op, x.dtype.name](*_extents(x), self.pointer(op, x), self.pointer(op, w), self.pointer(op, b), *targets,
                                 int(bool(training)),
                                 0.0 if momentum is None else float(momentum), float(eps), buf)
        if update:
            for t in stats:
                if t is not None:
                    t._storage.version += 1
        return out

    def batch_norm_backward(self, grad, input, running_mean, running_var, weight, training, eps, output_mask):
        """(grad_input, grad_weight, grad_bias), None where ``output_mask`` is False; training recomputes the
        batch statistics, evaluation reads the running ones."""
        stats = (None, None) if training else (running_mean, running_var)
        if (not _fits(input, grad, *stats, weight) or not _channels(input, *stats, weight)
                or tuple(grad.shape) != tuple(input.shape)):
            return self.base["batch_norm_backward"](grad, input, running_mean, running_var, weight, training, eps,
                                                    output_mask)
        op, g, x, w = "batch_norm_backward", grad.contiguous(), input.contiguous(), self.contiguous(weight)
        rm, rv = (self.contiguous(t) for t in stats)
        results, bufs = self.outputs(output_mask, (tuple(x.shape), (x.shape[1],), (x.shape[1],)), x.dtype)
        self.c[op, x.dtype.name](*_extents(x), self.pointer(op, g), self.pointer(op, x), self.pointer(op, rm),
                                 self.pointer(op, rv), self.pointer(op, w), int(bool(training)), float(eps), *bufs)
        return results


def kernels(ctx) -> dict:
    """{op: kernel} for :data:`OPS`."""
    return _Normalization(ctx).kernels()
