"""``SparseAdam``: Adam that updates only the entries a sparse gradient touches (``torch.optim.SparseAdam``)."""

from __future__ import annotations

import math

from .. import ops
from ..autograd import enable_grad, no_grad
from .adam import _check_betas
from .optimizer import Optimizer, _check_hyper, _scalar, _step_tensor

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Masked Adam for sparse gradients (``torch.optim.SparseAdam``).

    Only the entries present in the (coalesced) sparse gradient move; their moments follow Adam's rule and the
    step is ``lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)``. Dense gradients raise PyTorch's
    error. Core runs it densely: the sparse gradient is densified with a 0/1 mask of its entries.
    """

    def __init__(self, params, lr=1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        _check_hyper(0.0 < _scalar(lr), f"Invalid learning rate: {lr}")
        _check_hyper(0.0 < eps, f"Invalid epsilon value: {eps}")
        betas = _check_betas(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        where = [[g, i, p] for g, group in enumerate(self.param_groups) for i, p in enumerate(group["params"])]
        sparse_params = [[g, i] for g, i, p in where if p.is_sparse]
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        complex_params = [[g, i] for g, i, p in where if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        """One step over the parameters whose gradients are sparse; a dense gradient raises RuntimeError."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._sparse_update(p, p.grad, group)
        return loss

    def _sparse_update(self, p, grad, group) -> None:
        if not grad.is_sparse:
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["exp_avg"] = ops.zeros_like(p)
            state["exp_avg_sq"] = ops.zeros_like(p)
        grad = grad.coalesce()
        mask = ops.sparse_coo_tensor(grad.indices(), ops.ones_like(grad.values()), grad.shape).to_dense()
        mask = mask.to(dtype=p.dtype, device=p.device)
        dense = grad.to_dense().to(dtype=p.dtype, device=p.device)
        if group["maximize"]:
            dense = dense.neg()
        lr, (beta1, beta2), eps = _scalar(group["lr"]), group["betas"], group["eps"]
        state["step"] += 1
        step = state["step"].item()
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.add_(dense.sub(exp_avg).mul(mask), alpha=1 - beta1)  # untouched entries keep their moments
        exp_avg_sq.add_(dense.mul(dense).sub(exp_avg_sq).mul(mask), alpha=1 - beta2)
        step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        p.add_(exp_avg.mul(mask).div(exp_avg_sq.sqrt().add(eps)), alpha=-step_size)
