"""``Adagrad``: per-coordinate learning rates from the sum of squared gradients (``torch.optim.Adagrad``)."""

from __future__ import annotations

from .. import ops
from ..ops.optimizers import add_scaled_
from .optimizer import Optimizer, _check_fused, _check_hyper, _lr, _real_views, _scalar, _step_tensor

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (``torch.optim.Adagrad``'s documented algorithm)."""

    def __init__(self, params, lr=1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 <= lr_decay, f"Invalid lr_decay value: {lr_decay}")
        _check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check_hyper(0.0 <= initial_accumulator_value,
                     f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        _check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check_fused(differentiable, fused)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # PyTorch creates Adagrad's state eagerly, so a state dict taken before the first step already has it.
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p) -> None:
        # PyTorch reads the constructor's value here, not the param group's.
        value = self.defaults["initial_accumulator_value"]
        state = self.state[p]
        state["step"] = _step_tensor()
        state["sum"] = ops.full_like(p, complex(value, value) if p.is_complex() else value)

    _GROUP_DEFAULTS = {"maximize": False}

    def _update(self, p, grad, group) -> None:
        state = self.state[p]
        if len(state) == 0:
            self._init_state(p)
        state["step"] += 1
        step = state["step"].item()
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        clr = _lr(group) / (1 + (step - 1) * group["lr_decay"])
        param, grad, state_sum = _real_views(p, grad, state["sum"])
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add(group["eps"])
        add_scaled_(param, grad, -clr, std)
