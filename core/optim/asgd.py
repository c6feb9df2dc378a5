"""``ASGD``: averaged stochastic gradient descent (``torch.optim.ASGD``)."""

from __future__ import annotations

from .. import ops
from .optimizer import Optimizer, _check_hyper, _real_views, _scalar, _step_tensor

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD (``torch.optim.ASGD``): SGD with a decaying step size and a running average ``ax`` of the iterates.

    The state holds ``step``, ``eta`` (the current step size), ``mu`` (the averaging rate) and ``ax`` (the average),
    as PyTorch's; ``eta`` and ``mu`` are float32 scalar tensors like the step counter.
    """

    def __init__(self, params, lr=1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"maximize": False}

    def _update(self, p, grad, group) -> None:
        state = self.state[p]
        lr, lambd, alpha, t0 = _scalar(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["eta"] = _step_tensor(lr)
            state["mu"] = _step_tensor(1.0)
            state["ax"] = ops.zeros_like(p)
        state["step"] += 1
        step = state["step"].item()
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        param, grad, ax = _real_views(p, grad, state["ax"])
        eta, mu = state["eta"].item(), state["mu"].item()
        param.mul_(1 - lambd * eta)
        param.add_(grad, alpha=-eta)
        if mu != 1:
            ax.add_(param.sub(ax).mul(mu))
        else:
            ax.copy_(param)
        state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
        state["mu"].fill_(1 / max(1, step - t0))
