"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov and weight decay (``torch.optim.SGD``)."""

from __future__ import annotations

from ..ops.optimizers import add_scaled_, sgd_update_
from .optimizer import Optimizer, _check_fused, _check_hyper, _lr, _scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum (``torch.optim.SGD``'s documented algorithm)."""

    def __init__(self, params, lr=1e-3, momentum: float = 0, dampening: float = 0, weight_decay: float = 0,
                 nesterov: bool = False, *, maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check_hyper(_scalar(lr) >= 0.0, f"Invalid learning rate: {lr}")
        _check_hyper(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check_hyper(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        _check_fused(differentiable, fused)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        _check_hyper(not nesterov or (momentum > 0 and dampening == 0),
                     "Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"nesterov": False, "maximize": False}

    def _update(self, p, grad, group) -> None:
        momentum, lr = group["momentum"], _lr(group)
        buf = None
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:  # the first step seeds the buffer with the (weight-decayed) gradient
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])
                # PyTorch detaches this first buffer; a differentiable step keeps it a function of the gradient
                buf = state["momentum_buffer"] = grad.clone() if group.get("differentiable") else grad.detach().clone()
                grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
                add_scaled_(p, grad, -lr)
                return
        # a differentiable step runs the decomposition, recorded part by part (a fused kernel is not differentiable)
        update = sgd_update_.decomposition if group.get("differentiable") else sgd_update_
        update(p, grad, buf, lr, momentum, group["dampening"], group["weight_decay"],
                    group["nesterov"])
