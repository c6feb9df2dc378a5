"""``RMSprop``: gradient scaled by a running RMS, optionally centered and with momentum (``torch.optim.RMSprop``)."""

from __future__ import annotations

from .. import ops
from ..ops.optimizers import add_scaled_
from .optimizer import Optimizer, _check_hyper, _lr, _real_views, _scalar, _step_tensor

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (``torch.optim.RMSprop``'s documented algorithm)."""

    def __init__(self, params, lr=1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check_hyper(0.0 <= momentum, f"Invalid momentum value: {momentum}")
        _check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check_hyper(0.0 <= alpha, f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"momentum": 0, "centered": False, "maximize": False}

    def _update(self, p, grad, group) -> None:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["square_avg"] = ops.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = ops.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = ops.zeros_like(p)
        lr, alpha, momentum = _lr(group), group["alpha"], group["momentum"]
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        param, grad, square_avg, grad_avg, buf = _real_views(
            p, grad, state["square_avg"], state.get("grad_avg"), state.get("momentum_buffer"))
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt()
        else:
            avg = square_avg.sqrt()
        avg = avg.add(group["eps"])
        if momentum > 0:
            buf.mul_(momentum).addcdiv_(grad, avg)
            add_scaled_(param, buf, -lr)
        else:
            add_scaled_(param, grad, -lr, avg)
