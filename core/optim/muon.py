"""``Muon``: momentum SGD whose update is orthogonalized by a Newton-Schulz iteration (``torch.optim.Muon``)."""

from __future__ import annotations

import math

from .. import ops
from .optimizer import Optimizer, _check_hyper, _scalar

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float, use_addmm: bool):
    """``ns_steps`` quintic Newton-Schulz iterations pushing the singular values of ``grad`` towards 1.

    As PyTorch, the iteration runs in bfloat16 on the wide orientation of the matrix, after scaling it to a
    Frobenius (hence spectral) norm of at most 1.
    """
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    x = grad.bfloat16()
    if tall:
        x = x.T
    x = x.div(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        if use_addmm:
            x = ops.addmm(x, ops.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
        else:
            x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, param_shape) -> float:
    """The learning rate scaled for the matrix shape: ``"original"`` (Keller Jordan) or ``"match_rms_adamw"``."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Muon (``torch.optim.Muon``'s documented algorithm) for 2-D parameters.

    ``B = momentum * B + (1 - momentum) * g`` (a lerp), the Nesterov update ``g.lerp(B, momentum)``, orthogonalized
    by ``ns_steps`` Newton-Schulz iterations in bfloat16, then decoupled weight decay and a shape-adjusted step.
    State: ``momentum_buffer``.
    """

    def __init__(self, params, lr=1e-3, weight_decay: float = 0.1, momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C), eps: float = EPS,
                 ns_steps: int = DEFAULT_NS_STEPS, adjust_lr_fn: str | None = None, use_addmm: bool = False) -> None:
        _check_hyper(0.0 <= _scalar(lr), f"Learning rate should be >= 0 but is: {lr}")
        _check_hyper(0.0 <= momentum, f"momentum should be >= 0 but is: {momentum}")
        _check_hyper(0.0 <= weight_decay, f"weight decay should be >= 0 but is: {weight_decay}")
        _check_hyper(adjust_lr_fn in (None, "original", "match_rms_adamw"),
                     f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn,
                        use_addmm=use_addmm)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _update(self, p, grad, group) -> None:
        if p.is_complex():
            raise RuntimeError("Muon does not support complex parameters")
        if grad.is_sparse:
            raise RuntimeError("Muon does not support sparse gradients")
        state = self.state[p]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = ops.zeros_like(grad)
        buf, momentum, lr = state["momentum_buffer"], group["momentum"], _scalar(group["lr"])
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = _zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"],
                                             group["use_addmm"])
        p.mul_(1 - lr * group["weight_decay"])
        p.add_(update.to(p.dtype), alpha=-_adjust_lr(lr, group["adjust_lr_fn"], p.shape))
