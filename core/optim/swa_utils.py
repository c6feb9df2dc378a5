"""Stochastic weight averaging and EMA of a model (``torch.optim.swa_utils``).

``AveragedModel`` keeps a running average (SWA by default, or EMA / any ``avg_fn``) of a model's parameters
(and buffers with ``use_buffers=True``); ``SWALR`` anneals each group's rate to a constant ``swa_lr``;
``update_bn`` recomputes BatchNorm statistics for the averaged weights with one pass over the data.
"""

from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Callable

from .. import dtypes as dt
from ..autograd import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from ..ops.creation import tensor as _tensor
from ..tensor import Tensor
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _lerp_all(averaged: list, current: list, weight) -> None:
    for p_avg, p_model in zip(averaged, current):
        if p_avg.is_floating_point() or p_avg.is_complex():
            p_avg.lerp_(p_model, float(weight))
        else:  # integer buffers (e.g. num_batches_tracked): the same formula, rounded back
            p_avg.copy_(p_avg + (p_model - p_avg) * float(weight))


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """A ``multi_avg_fn`` for an exponential moving average: ``ema = decay * ema + (1 - decay) * current``
    (``torch.optim.swa_utils.get_ema_multi_avg_fn``)."""

    def ema_update(ema_param_list: list, current_param_list: list, _num_averaged) -> None:
        with no_grad():
            _lerp_all(ema_param_list, current_param_list, 1 - decay)

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """A ``multi_avg_fn`` for the equal-weight running mean: ``avg += (current - avg) / (n + 1)``
    (``torch.optim.swa_utils.get_swa_multi_avg_fn``)."""

    def swa_update(averaged_param_list: list, current_param_list: list, num_averaged) -> None:
        with no_grad():
            n = num_averaged.item() if isinstance(num_averaged, Tensor) else num_averaged
            _lerp_all(averaged_param_list, current_param_list, 1 / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """An ``avg_fn`` returning ``decay * ema + (1 - decay) * current`` (``torch.optim.swa_utils.get_ema_avg_fn``)."""

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """An ``avg_fn`` returning ``avg + (current - avg) / (n + 1)`` (``torch.optim.swa_utils.get_swa_avg_fn``)."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose weights are a running average of the model's (``torch.optim.swa_utils.AveragedModel``).

    ``update_parameters(model)`` copies the weights on the first call and then averages them with ``avg_fn``
    (one tensor at a time) or ``multi_avg_fn`` (lists of tensors); with neither, the equal-weight SWA mean.
    With ``use_buffers=True`` the buffers are averaged too; otherwise they are copied from ``model``.
    ``n_averaged`` is a long buffer counting the updates.
    """

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("AveragedModel: only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _tensor(0, dtype=dt.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """Run the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold the current weights of ``model`` into the average and count one more update."""
        if self.use_buffers:
            averaged = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            current = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            averaged, current = list(self.module.parameters()), list(model.parameters())
        with no_grad():
            averaged = [p.detach() for p in averaged]
            current = [p.detach().to(a.device) for a, p in zip(averaged, current)]
            n = self.n_averaged.item()
            if n == 0:
                for p_avg, p_model in zip(averaged, current):
                    p_avg.copy_(p_model)
            elif self.avg_fn is not None:
                for p_avg, p_model in zip(averaged, current):
                    p_avg.copy_(self.avg_fn(p_avg, p_model, self.n_averaged.to(p_avg.device)))
            else:
                (self.multi_avg_fn or get_swa_multi_avg_fn())(averaged, current, self.n_averaged)
            if not self.use_buffers:  # keep the buffers in sync with the source model
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            self.n_averaged += 1


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` with one pass over ``loader``
    (``torch.optim.swa_utils.update_bn``): statistics are reset and averaged cumulatively (``momentum=None``).

    A batch that is a list or tuple contributes its first element; ``device`` moves each batch first.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each param group's rate from its current value to ``swa_lr`` over ``anneal_epochs`` steps, then hold it
    (``torch.optim.swa_utils.SWALR``); ``anneal_strategy`` is ``"cos"`` or ``"linear"``."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        for value, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}")
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha: float):
        """The rate the annealing started from, recovered from the current one (PyTorch's chainable form)."""
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        """The annealed rates: ``swa_lr * alpha + start_lr * (1 - alpha)`` with ``alpha`` the annealing fraction."""
        self._warn_if_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]

