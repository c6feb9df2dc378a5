"""``Adadelta``: step sizes from running averages of squared gradients and updates (``torch.optim.Adadelta``)."""

from __future__ import annotations

from .. import ops
from ..ops.optimizers import add_scaled_
from .optimizer import Optimizer, _check_hyper, _lr, _real_views, _scalar, _step_tensor

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (``torch.optim.Adadelta``'s documented algorithm)."""

    def __init__(self, params, lr=1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        _check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"maximize": False}

    def _update(self, p, grad, group) -> None:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["square_avg"] = ops.zeros_like(p)
            state["acc_delta"] = ops.zeros_like(p)
        rho, eps = group["rho"], group["eps"]
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        param, grad, square_avg, acc_delta = _real_views(p, grad, state["square_avg"], state["acc_delta"])
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt()
        delta = acc_delta.add(eps).sqrt().div(std).mul(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        add_scaled_(param, delta, -_lr(group))
