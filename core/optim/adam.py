"""``Adam``: adaptive moment estimation, with AMSGrad and optionally decoupled weight decay (``torch.optim.Adam``)."""

from __future__ import annotations

from .. import ops
from ..ops.optimizers import adam_update_
from .optimizer import Optimizer, _check_fused, _check_hyper, _lr, _real_views, _scalar, _step_tensor

__all__ = ["Adam"]


def _check_betas(betas) -> tuple:
    _check_hyper(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
    _check_hyper(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    return tuple(_scalar(b) for b in betas)


class Adam(Optimizer):
    """Adam (``torch.optim.Adam``'s documented algorithm; ``decoupled_weight_decay=True`` is AdamW)."""

    def __init__(self, params, lr=1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        betas = _check_betas(betas)
        _check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check_fused(differentiable, fused)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"amsgrad": False, "maximize": False, "decoupled_weight_decay": False}

    def _update(self, p, grad, group) -> None:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["exp_avg"] = ops.zeros_like(p)
            state["exp_avg_sq"] = ops.zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = ops.zeros_like(p)
        lr, (beta1, beta2) = _lr(group), group["betas"]
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        state["step"] += 1
        step = state["step"].item()
        param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq = _real_views(
            p, grad, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"))
        update = adam_update_.decomposition if group.get("differentiable") else adam_update_  # as SGD's
        update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq if amsgrad else None, step, lr, beta1, beta2,
                     group["eps"], weight_decay, group["decoupled_weight_decay"])
