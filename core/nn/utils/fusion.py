"""Fold an eval-mode BatchNorm into the convolution or linear layer before it (``torch.nn.utils.fusion``)."""

from __future__ import annotations

import copy

from ... import ops
from ...autograd import no_grad
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _bn_defaults(bn_rm, bn_w, bn_b):
    """BatchNorm's affine weight and bias, ones and zeros when it has none."""
    return (ops.ones_like(bn_rm) if bn_w is None else bn_w), (ops.zeros_like(bn_rm) if bn_b is None else bn_b)


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose: bool = False):
    """The weight and bias of one convolution computing conv then eval-mode batch norm, as Parameters
    (``torch.nn.utils.fuse_conv_bn_weights``); ``transpose`` for a ConvTranspose weight (channels on dim 1)."""
    dtype = conv_w.dtype
    conv_b = ops.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w, bn_b = _bn_defaults(bn_rm, bn_w, bn_b)
    scale = bn_w * ops.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    fused_w = (conv_w * scale.reshape(shape)).to(dtype)
    fused_b = ((conv_b - bn_rm) * scale + bn_b).to(conv_b.dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The weight and bias of one linear layer computing linear then eval-mode batch norm, as Parameters
    (``torch.nn.utils.fuse_linear_bn_weights``)."""
    linear_b = ops.zeros_like(bn_rm) if linear_b is None else linear_b
    bn_w, bn_b = _bn_defaults(bn_rm, bn_w, bn_b)
    scale = bn_w * ops.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1)
    fused_b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)


def _check_eval(module, bn) -> None:
    if module.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("Fusion needs the batch norm's running statistics")


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` whose output equals ``bn(conv(x))`` for eval-mode modules
    (``torch.nn.utils.fuse_conv_bn_eval``)."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    with no_grad():
        fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                        bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` whose output equals ``bn(linear(x))`` for eval-mode modules
    (``torch.nn.utils.fuse_linear_bn_eval``)."""
    _check_eval(linear, bn)
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1")
    fused = copy.deepcopy(linear)
    with no_grad():
        fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                          bn.eps, bn.weight, bn.bias)
    return fused
