"""Convolution: the ``convolution`` op and ``convolution_backward``, its one-node derivative.

Both are composites over batched ``(N, C, *spatial)`` inputs with normalised tuple arguments (the
``F.conv*d`` wrappers in ``core/nn/functional/conv.py`` check PyTorch's arguments and call them). The
decomposition reads the windows as a view, lays them out as columns (im2col) and does ONE (batched,
grouped) matmul; the backward scatters columns back with col2im. Backends may fuse either (cpu_c does).
The derivative formula is in ``core/ops/derivatives.py``.
"""

from __future__ import annotations

from ..dispatch import define
from ._windows import col2im, columns, pad_constant, prod
from .linalg import epilogue_function, matmul, records_parts_at

__all__: list = []
METHODS: dict = {}


def add_bias(out, bias, nd: int):
    """``out + bias`` with the (C,) bias broadcast over the channel dim of an ``(N, C, *spatial)`` output."""
    return out if bias is None else out + bias.reshape((bias.shape[0],) + (1,) * nd)


def _convolution_parts(input, weight, bias, stride, padding, dilation, groups):
    nd = len(stride)
    x = pad_constant(input, [(p, p) for p in padding], 0) if any(padding) else input
    n, out_channels = x.shape[0], weight.shape[0]
    cols, out = columns(x, tuple(weight.shape[2:]), stride, dilation)  # (N, C*K, L)
    if groups == 1:
        result = matmul(weight.reshape(out_channels, cols.shape[1]), cols)  # (N, O, L)
    else:
        cols = cols.reshape(n, groups, cols.shape[1] // groups, cols.shape[2])
        result = matmul(weight.reshape(groups, out_channels // groups, cols.shape[2]), cols)  # (N, G, O/G, L)
    return add_bias(result.reshape((n, out_channels) + out), bias, nd)


convolution = define(
    "convolution", decomposition=_convolution_parts,
    doc="convolution(input, weight, bias, stride, padding, dilation, groups): N-d cross-correlation of a batched "
        "(N, C, *spatial) input with a (O, C/groups, *kernel) weight; stride, padding (symmetric, zeros) and "
        "dilation are tuples of nd ints (nd = 1, 2 or 3), bias is None or (O,). A composite (im2col and one "
        "matmul) that backends may fuse")


def _convolution_pointwise_parts(input, weight, bias, stride, padding, dilation, groups, activation, residual=None,
                                 /):
    apply = epilogue_function("convolution_pointwise", activation, residual)
    return apply(convolution(input, weight, bias, stride, padding, dilation, groups))


convolution_pointwise = define(
    "convolution_pointwise", decomposition=_convolution_pointwise_parts,
    doc="convolution_pointwise(input, weight, bias, stride, padding, dilation, groups, activation, residual=None, /) "
        "(positional arguments only): "
        "activation(convolution(...) + residual), activation None or one of relu, sigmoid, tanh, gelu, gelu_tanh: a "
        "convolution with its epilogue, what the JIT's epilogue pass makes of a convolution followed by an addition "
        "and the activation (gelu's only for graphs autograd does not record: recorded, the op runs as its parts). "
        "A composite that backends may fuse (cpu_c: one oneDNN convolution with the bias and the activation as a "
        "post-op)")
convolution_pointwise.records_parts = records_parts_at(7)


def _convolution_backward_parts(grad_output, input, weight, stride, padding, dilation, groups, output_mask):
    """(grad_input, grad_weight, grad_bias) of :func:`_convolution_parts`, each None where output_mask says so:
    grad_input scatters ``weightᵀ @ grad_output`` back with col2im, grad_weight is ``grad_output @ im2colᵀ``
    summed over the batch. Written in Tensor ops, so it is differentiable itself (double backward)."""
    n, channels, out_channels = input.shape[0], input.shape[1], weight.shape[0]
    kernel, grid = tuple(weight.shape[2:]), tuple(grad_output.shape[2:])
    blocks, per_group = prod(grid), channels // groups * prod(kernel)
    g = grad_output.reshape(n, groups, out_channels // groups, blocks)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        w = weight.reshape(groups, out_channels // groups, per_group).transpose(1, 2)  # (G, C/G*K, O/G)
        cols = matmul(w, g).reshape(n, channels * prod(kernel), blocks)
        grad_input = col2im(cols, channels, grid, tuple(input.shape[2:]), kernel, dilation, padding, stride)
    if output_mask[1]:
        x = pad_constant(input, [(p, p) for p in padding], 0) if any(padding) else input
        cols, _ = columns(x, kernel, stride, dilation)
        cols = cols.reshape(n, groups, per_group, blocks)
        grad_weight = matmul(g, cols.transpose(-1, -2)).sum(0).reshape(weight.shape)  # (G, O/G, C/G*K)
    if output_mask[2]:
        grad_bias = grad_output.sum((0,) + tuple(range(2, grad_output.dim())))
    return grad_input, grad_weight, grad_bias


convolution_backward = define(
    "convolution_backward", decomposition=_convolution_backward_parts,
    doc="convolution_backward(grad_output, input, weight, stride, padding, dilation, groups, output_mask): "
        "(grad_input, grad_weight, grad_bias) of convolution, each None where the 3-bool output_mask is False. "
        "A composite (matmul and col2im, differentiable for double backward) that backends may fuse")
