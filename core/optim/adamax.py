"""``Adamax``: Adam with an infinity-norm second moment (``torch.optim.Adamax``)."""

from __future__ import annotations

from .. import ops
from .adam import _check_betas
from ..ops.optimizers import add_scaled_
from .optimizer import Optimizer, _check_hyper, _lr, _real_views, _scalar, _step_tensor

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (``torch.optim.Adamax``'s documented algorithm)."""

    def __init__(self, params, lr=2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        betas = _check_betas(betas)
        _check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"maximize": False}

    def _update(self, p, grad, group) -> None:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["exp_avg"] = ops.zeros_like(p)
            state["exp_inf"] = ops.zeros_like(p)
        beta1, beta2 = group["betas"]
        state["step"] += 1
        step = state["step"].item()
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        param, grad, exp_avg, exp_inf = _real_views(p, grad, state["exp_avg"], state["exp_inf"])
        exp_avg.lerp_(grad, 1 - beta1)
        exp_inf.mul_(beta2).maximum_(grad.abs().add(group["eps"]))
        clr = _lr(group) / (1 - beta1 ** step)
        add_scaled_(param, exp_avg, -clr, exp_inf)
