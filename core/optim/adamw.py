"""``AdamW``: Adam with decoupled weight decay (``torch.optim.AdamW``)."""

from __future__ import annotations

from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam whose weight decay shrinks the parameters directly, not through the moments (``torch.optim.AdamW``)."""

    def __init__(self, params, lr=1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
