"""``Adafactor``: Adam-like steps with a factored (row x column) second moment (``torch.optim.Adafactor``)."""

from __future__ import annotations

from .. import dtypes as dt
from .. import ops
from .optimizer import Optimizer, _check_hyper, _scalar, _step_tensor

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor (``torch.optim.Adafactor``'s documented algorithm, with PyTorch's use of ``lr`` and ``eps1``).

    A gradient of 2 or more dims keeps running means of its squares over the last dim (``row_var``) and the
    second-last dim (``col_var``); a vector keeps ``variance``. ``eps=(None, 1e-3)`` takes the dtype's machine
    epsilon as ``eps1``. Weight decay is decoupled (``param *= 1 - lr * weight_decay``).
    """

    def __init__(self, params, lr=1e-2, beta2_decay: float = -0.8, eps: tuple = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None, maximize: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Learning rate should be >= 0 but is: {lr}")
        _check_hyper(0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}")
        _check_hyper(eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}")
        _check_hyper(0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}")
        _check_hyper(1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}")
        _check_hyper(0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"maximize": False}

    def _update(self, p, grad, group) -> None:
        if p.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        if grad.is_sparse:
            raise RuntimeError("Adafactor does not support sparse gradients")
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            if grad.dim() > 1:
                state["row_var"] = ops.zeros((*grad.shape[:-1], 1), dtype=grad.dtype, device=grad.device)
                state["col_var"] = ops.zeros((*grad.shape[:-2], 1, grad.shape[-1]), dtype=grad.dtype,
                                             device=grad.device)
            else:
                state["variance"] = ops.zeros_like(grad)
        lr, (eps1, eps2), weight_decay = _scalar(group["lr"]), group["eps"], group["weight_decay"]
        if eps1 is None:
            eps1 = dt.finfo(p.dtype).eps
        state["step"] += 1
        step = state["step"].item()
        one_minus_beta2 = step ** group["beta2_decay"]
        rho = min(lr, 1 / step ** 0.5)
        alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho  # relative step: scaled by RMS(param)
        if weight_decay != 0:
            p.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_var.lerp_(grad.mul(grad).mean(dim=-1, keepdim=True), one_minus_beta2)
            col_var.lerp_(grad.mul(grad).mean(dim=-2, keepdim=True), one_minus_beta2)
            var_estimate = row_var.matmul(col_var).div(row_var.mean(dim=-2, keepdim=True).clamp(min=eps1))
        else:
            state["variance"].lerp_(grad.mul(grad), one_minus_beta2)
            var_estimate = state["variance"]
        update = var_estimate.clamp(min=eps1 * eps1).rsqrt().mul(grad)
        denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))  # update clipping
        p.add_(update, alpha=-alpha / denom)
