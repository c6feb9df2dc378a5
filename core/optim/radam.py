"""``RAdam``: Adam with a rectified adaptive learning rate (``torch.optim.RAdam``)."""

from __future__ import annotations

import math

from .. import ops
from .adam import _check_betas
from ..ops.optimizers import add_scaled_
from .optimizer import Optimizer, _check_hyper, _lr, _real_views, _scalar, _step_tensor

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (``torch.optim.RAdam``'s documented algorithm; ``decoupled_weight_decay=True`` is RAdamW)."""

    def __init__(self, params, lr=1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        betas = _check_betas(betas)
        _check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"maximize": False, "decoupled_weight_decay": False}

    def _update(self, p, grad, group) -> None:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["exp_avg"] = ops.zeros_like(p)
            state["exp_avg_sq"] = ops.zeros_like(p)
        lr, (beta1, beta2), weight_decay = _lr(group), group["betas"], group["weight_decay"]
        state["step"] += 1
        step = state["step"].item()
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(p, alpha=weight_decay)
        param, grad, exp_avg, exp_avg_sq = _real_views(p, grad, state["exp_avg"], state["exp_avg_sq"])
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:  # the variance is tractable: rectify the adaptive learning rate
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive_lr = exp_avg_sq.sqrt().add(group["eps"]).reciprocal().mul(math.sqrt(bias_correction2))
            add_scaled_(param, exp_avg.mul(adaptive_lr), -lr / bias_correction1 * rect)
        else:  # early steps: un-adapted momentum SGD
            add_scaled_(param, exp_avg, -lr / bias_correction1)
