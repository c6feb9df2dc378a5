"""``NAdam``: Adam with Nesterov momentum and a momentum-decay schedule (``torch.optim.NAdam``)."""

from __future__ import annotations

from .. import ops
from .adam import _check_betas
from ..ops.optimizers import add_scaled_
from .optimizer import Optimizer, _check_hyper, _lr, _real_views, _scalar, _step_tensor

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (``torch.optim.NAdam``'s documented algorithm; ``decoupled_weight_decay=True`` is NAdamW)."""

    def __init__(self, params, lr=2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        betas = _check_betas(betas)
        _check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check_hyper(0.0 <= momentum_decay, f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"maximize": False, "decoupled_weight_decay": False}

    def _update(self, p, grad, group) -> None:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            # Like the step, PyTorch keeps the running product of the mu_t as a float32 scalar tensor.
            state["mu_product"] = _step_tensor(1.0)
            state["exp_avg"] = ops.zeros_like(p)
            state["exp_avg_sq"] = ops.zeros_like(p)
        lr, (beta1, beta2) = _lr(group), group["betas"]
        weight_decay, momentum_decay = group["weight_decay"], group["momentum_decay"]
        state["step"] += 1
        step = state["step"].item()
        bias_correction2 = 1 - beta2 ** step
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(p, alpha=weight_decay)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        state["mu_product"] *= mu
        mu_product = state["mu_product"].item()
        mu_product_next = mu_product * mu_next
        param, grad, exp_avg, exp_avg_sq = _real_views(p, grad, state["exp_avg"], state["exp_avg_sq"])
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add(group["eps"])
        add_scaled_(param, grad, -lr * (1.0 - mu) / (1.0 - mu_product), denom)
        add_scaled_(param, exp_avg, -lr * mu_next / (1.0 - mu_product_next), denom)
