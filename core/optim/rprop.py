"""``Rprop``: resilient backpropagation, sign-based steps with per-element adaptive sizes (``torch.optim.Rprop``)."""

from __future__ import annotations

from .. import ops
from .optimizer import Optimizer, _check_hyper, _real_views, _scalar, _step_tensor

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop (``torch.optim.Rprop``'s documented algorithm).

    Each element keeps a step size that grows by ``etas[1]`` while its gradient keeps its sign and shrinks by
    ``etas[0]`` when the sign flips (that step is then skipped and the stored gradient zeroed), clamped to
    ``step_sizes``. State: ``step``, ``prev`` (the last gradient) and ``step_size``, as PyTorch's.
    """

    def __init__(self, params, lr=1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 < etas[0] < 1.0 < etas[1], f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"maximize": False}

    def _update(self, p, grad, group) -> None:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["prev"] = ops.zeros_like(p)
            lr = _scalar(group["lr"])
            # a complex entry is two independent reals: both parts start at lr (as PyTorch)
            state["step_size"] = ops.full_like(grad, complex(lr, lr) if p.is_complex() else lr)
        (eta_minus, eta_plus), (step_min, step_max) = group["etas"], group["step_sizes"]
        state["step"] += 1
        param, grad, prev, step_size = _real_views(p, grad, state["prev"], state["step_size"])
        agreement = grad.mul(prev)
        flipped = agreement < 0
        factor = ops.ones_like(step_size).masked_fill(agreement > 0, eta_plus).masked_fill(flipped, eta_minus)
        step_size.mul_(factor).clamp_(step_min, step_max)
        grad = grad.masked_fill(flipped, 0)  # after a sign flip: no step, and forget the sign
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)
