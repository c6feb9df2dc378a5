"""Optimizer updates: the SGD and Adam parameter updates as ops, so a backend can run each as one pass over memory.

Each op is a composite: its decomposition is the optimizer's algorithm written
with in-place tensor ops (PyTorch's documented single-tensor algorithm, step for
step), and a backend may register a fused kernel for it that keeps those
numerics (cpu_c does). They mutate ``param`` and the state tensors they are
given, and are called under ``no_grad`` by the optimizers in ``core/optim/`` (``SGD``, ``Adam``, ``AdamW``)
with real (not complex) tensors. A ``differentiable=True`` optimizer calls the decompositions directly, with grad
mode on, so autograd records every part; its ``lr`` may then be a tensor that requires grad.
"""

from __future__ import annotations

from ..dispatch import define
from ..tensor import Tensor

__all__: list = []
METHODS: dict = {}


def add_scaled_(param, update, scale, divisor=None):
    """``param += scale * update`` (``/ divisor``), in place; ``scale`` is a number or a tensor autograd reaches.

    A number takes the one-pass ``add_``/``addcdiv_``; a tensor learning rate (PyTorch's differentiable
    optimizers) multiplies instead, as ``torch.optim``'s ``param.addcmul_(grad, lr, value=-1)``.
    """
    if isinstance(scale, Tensor):
        return param.add_((update if divisor is None else update.div(divisor)).mul(scale))
    if divisor is None:
        return param.add_(update, alpha=scale)
    return param.addcdiv_(update, divisor, value=scale)


def _sgd_parts(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov):
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    if momentum != 0:
        momentum_buffer.mul_(momentum).add_(grad, alpha=1 - dampening)
        grad = grad.add(momentum_buffer, alpha=momentum) if nesterov else momentum_buffer
    add_scaled_(param, grad, -lr)
    return param


def _adam_parts(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
                decoupled):
    if weight_decay != 0:
        if decoupled:
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    if max_exp_avg_sq is not None:
        max_exp_avg_sq.maximum_(exp_avg_sq)
        exp_avg_sq = max_exp_avg_sq
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add(eps)
    add_scaled_(param, exp_avg, -step_size, denom)
    return param


sgd_update_ = define("sgd_update_", decomposition=_sgd_parts, inplace=True,
                     doc="one SGD step on param (and momentum_buffer) in place; momentum_buffer may be None when "
                         "momentum is 0")
adam_update_ = define("adam_update_", decomposition=_adam_parts, inplace=True,
                      doc="one Adam/AdamW step on param, exp_avg, exp_avg_sq (and max_exp_avg_sq for amsgrad) in "
                          "place")
