"""Learning-rate schedulers (``torch.optim.lr_scheduler``): each step rewrites the ``lr`` of every param group.

Most schedulers are *chainable*: ``get_lr`` derives the new rate from the group's current one, so several
schedulers can act on one optimizer. ``step(epoch)`` (deprecated in PyTorch) uses the closed form instead.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable

from ..tensor import Tensor
from .optimizer import Optimizer, _scalar

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "PolynomialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please use "
    "`scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the closed "
    "form is used instead of the new chainable form, where available. Please open an issue if you are unable to "
    "replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")


def _format_param(name: str, optimizer: Optimizer, param) -> list:
    """One value per param group: a list/tuple of the right length, or a scalar repeated."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has {len(param)} "
                             f"values, param_groups has {len(optimizer.param_groups)}.")
    else:
        param = [param] * len(optimizer.param_groups)
    return [p.clone() if isinstance(p, Tensor) else p for p in param]


def _group_values(optimizer: Optimizer, key: str) -> list:
    """``group[key]`` of every param group (tensors cloned, so later in-place updates don't change them)."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _set_group_value(group: dict, key: str, value) -> None:
    # A tensor learning rate is updated in place: a compiled or captured step may hold a reference to it.
    if isinstance(group[key], Tensor):
        group[key].fill_(_scalar(value))
    else:
        group[key] = value


def _check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _callables_state(fns: list) -> list:
    """What a state dict keeps of lambdas: plain functions can't be saved, callable objects keep their ``__dict__``."""
    return [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy() for fn in fns]


class LRScheduler:
    """Base class of the schedulers (``torch.optim.lr_scheduler.LRScheduler``)."""

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0.\nThis typically happens when:\n1. You're trying "
                                   "to resume training from a checkpoint but haven't properly loaded the optimizer "
                                   "state\n2. You're using last_epoch >= 0 for a fresh training run (not "
                                   "recommended)")
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Set the learning rates of epoch ``last_epoch + 1`` without counting a user step."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The learning rates the last ``step`` set, one per param group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The learning rates of the current epoch (called by ``step``; use ``get_last_lr`` to read them)."""
        raise NotImplementedError

    def _warn_if_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, deprecated) and write the new rates into the optimizer."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and "
                          "later, you should call them in the opposite order: `optimizer.step()` before "
                          "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
                          "value of the learning rate schedule. See more details at "
                          "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                          UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _current_lrs(self) -> list:
        return _group_values(self.optimizer, "lr")

    def _scaled_lrs(self, factor: float) -> list:
        return [group["lr"] * factor for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler  # PyTorch's old name


class _LambdaScheduler(LRScheduler):
    """Shared by LambdaLR and MultiplicativeLR: one callable per param group, state dicts keep callable objects."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """The attributes but the optimizer; lambdas saved only as callable objects' ``__dict__``."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = _callables_state(self.lr_lambdas)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes and the callable objects' ``__dict__``."""
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """``lr = initial_lr * lr_lambda(epoch)`` (``torch.optim.lr_scheduler.LambdaLR``)."""

    def get_lr(self) -> list:
        """``base_lr * lr_lambda(last_epoch)`` per group."""
        self._warn_if_outside_step()
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """``lr *= lr_lambda(epoch)`` each step (``torch.optim.lr_scheduler.MultiplicativeLR``)."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        fns = lr_lambda if isinstance(lr_lambda, (list, tuple)) else [lr_lambda]
        for fn in fns:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list:
        """The current rate times ``lr_lambda(last_epoch)`` per group (unchanged at construction)."""
        self._warn_if_outside_step()
        if self._is_initial:
            return self._current_lrs()
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs (``torch.optim.lr_scheduler.StepLR``)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """Decay by ``gamma`` when ``last_epoch`` is a positive multiple of ``step_size``."""
        self._warn_if_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return self._scaled_lrs(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each milestone (``torch.optim.lr_scheduler.MultiStepLR``)."""

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """Decay by ``gamma`` (once per repetition of the milestone) when ``last_epoch`` is a milestone."""
        self._warn_if_outside_step()
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        return self._scaled_lrs(self.gamma ** self.milestones[self.last_epoch])

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the rate by ``factor`` until epoch ``total_iters`` (``torch.optim.lr_scheduler.ConstantLR``)."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """Scale by ``factor`` at epoch 0 and back by ``1 / factor`` at ``total_iters``."""
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return self._scaled_lrs(self.factor)
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return self._scaled_lrs(1.0 / self.factor)

    def _get_closed_form_lr(self) -> list:
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the rate linearly from ``start_factor`` to ``end_factor`` (``torch.optim.lr_scheduler.LinearLR``)."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The ratio of consecutive factors of the linear ramp, applied to the current rate."""
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return self._scaled_lrs(self.start_factor)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        delta = self.end_factor - self.start_factor
        return self._scaled_lrs(1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta))

    def _get_closed_form_lr(self) -> list:
        delta = self.end_factor - self.start_factor
        return [base_lr * (self.start_factor + delta * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the rate by ``gamma`` every epoch (``torch.optim.lr_scheduler.ExponentialLR``)."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current rate times ``gamma`` (unchanged at construction)."""
        self._warn_if_outside_step()
        if self._is_initial:
            return self._current_lrs()
        return self._scaled_lrs(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the rate polynomially to zero over ``total_iters`` (``torch.optim.lr_scheduler.PolynomialLR``)."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The ratio of consecutive polynomial factors, applied to the current rate."""
        self._warn_if_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        decay = ((1.0 - self.last_epoch / self.total_iters)
                 / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return self._scaled_lrs(decay)

    def _get_closed_form_lr(self) -> list:
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial rate to ``eta_min`` over ``T_max`` epochs, in PyTorch's recursive form."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """``eta_min + (lr - eta_min) * (1 + cos(pi t / T)) / (1 + cos(pi (t - 1) / T))``; past T_max it rises again."""
        self._warn_if_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and self.last_epoch > 0:  # kept from PyTorch: the closed form on a first step
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max))
                    / 2 for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:  # the ratio below is 0/0 at the minimum
            return [g["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, g in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) \
            / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
        return [ratio * (g["lr"] - self.eta_min) + self.eta_min for g in groups]

    def _get_closed_form_lr(self) -> list:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


def _check_schedulers(owner: str, optimizer, schedulers) -> None:
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             "kwargs to be specified when calling `step`, but got one at index "
                             f"{i} in the given schedulers sequence.")
        if optimizer != scheduler.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{scheduler.__class__.__name__} at index {i} has {scheduler.optimizer}, which is "
                             f"different from {optimizer.__class__.__name__}.")


class _SchedulerContainer(LRScheduler):
    """State dicts of SequentialLR and ChainedScheduler: the children's state dicts nested under ``_schedulers``."""

    def state_dict(self) -> dict[str, Any]:
        """The attributes but the optimizer, with each child scheduler's state dict."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes and each child scheduler."""
        state_dict = dict(state_dict)
        schedulers = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, saved in zip(self._schedulers, schedulers):
            scheduler.load_state_dict(saved)


class SequentialLR(_SchedulerContainer):
    """Run ``schedulers`` one after another, switching at ``milestones`` (``torch.optim.lr_scheduler.SequentialLR``)."""

    def __init__(self, optimizer: Optimizer, schedulers: list, milestones: list, last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{self.__class__.__name__} expects at least one scheduler, but got no scheduler.")
        _check_schedulers(self.__class__.__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Building the children already stepped each of them once: undo that and start the first one afresh.
        for group in self.optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        self.recursive_undo()
        index = bisect_right(self._milestones, 0)
        self._schedulers[index]._initial_step()
        self._last_lr = schedulers[index].get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Step back ``last_epoch`` of every (nested) child scheduler."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:
        """Step the active child; at a milestone the next child starts from its epoch 0."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_SchedulerContainer):
    """Step several chainable schedulers together each epoch (``torch.optim.lr_scheduler.ChainedScheduler``)."""

    def __init__(self, schedulers, optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{self.__class__.__name__} expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(self.__class__.__name__, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        """Step every child scheduler in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` when a metric stops improving (``lr_scheduler.ReduceLROnPlateau``)."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0,
                 eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _group_values(self.optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None) -> None:
        """Record ``metrics``; after more than ``patience`` epochs without improvement, reduce the rates."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during the cooldown don't count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self, epoch) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the `optimizer` "
                                   f"({len(self.optimizer.param_groups)}) differs from when `ReduceLROnPlateau` was "
                                   f"initialized ({len(self.min_lrs)}), usually due to a new param group being added "
                                   "to the optimizer. Please modify the `min_lrs` field to match the length of the "
                                   "`optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:  # changes smaller than eps are ignored
                _set_group_value(group, "lr", new_lr)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict``."""
        self.__dict__.update(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode)


def _set_momentum(group: dict, use_beta1: bool, momentum: float) -> None:
    """Momentum-cycling schedulers write SGD's ``momentum`` or Adam-style ``betas[0]``."""
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _init_momentum_cycle(optimizer: Optimizer, base_momentum, max_momentum, last_epoch: int):
    """Check the optimizer has a momentum; on a fresh start write ``max_momentum`` and remember both bounds."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    use_beta1 = "betas" in optimizer.defaults
    base_momentums = _format_param("base_momentum", optimizer, base_momentum)
    max_momentums = _format_param("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for m_momentum, b_momentum, group in zip(max_momentums, base_momentums, optimizer.param_groups):
            _set_momentum(group, use_beta1, m_momentum)
            group["max_momentum"] = m_momentum
            group["base_momentum"] = b_momentum
    return use_beta1, base_momentums, max_momentums


class CyclicLR(LRScheduler):
    """Cyclical learning rate between ``base_lr`` and ``max_lr`` (``torch.optim.lr_scheduler.CyclicLR``).

    Unlike most schedulers it is meant to be stepped after every batch.
    """

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Callable[[float], float] | None = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_group_value(group, "lr", lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ["triangular", "triangular2", "exp_range"] and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1, self.base_momentums, self.max_momentums = _init_momentum_cycle(
                optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        # The built-in modes fix the scale mode; a custom scale_fn keeps the caller's.
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x) -> float:
        """The amplitude scale of cycle (or iteration) ``x``: 1, ``1 / 2**(x - 1)``, ``gamma**x`` or custom."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self) -> list:
        """The triangular wave at ``last_epoch``, scaled per cycle or per iteration; also cycles the momentum."""
        self._warn_if_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * scale
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base_m, max_m in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(group, self.use_beta1, max_m - (max_m - base_m) * scale_factor * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The attributes but the optimizer; a custom ``scale_fn`` only as a callable object's ``__dict__``."""
        state = super().state_dict()
        state["_scale_fn_custom"] = _callables_state([self._scale_fn_custom])[0] \
            if self._scale_fn_custom is not None else None
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes (and a custom ``scale_fn`` object's ``__dict__``)."""
        state_dict = dict(state_dict)
        saved_fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if saved_fn is not None:
            self._scale_fn_custom.__dict__.update(saved_fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every ``T_i`` epochs, ``T_i`` growing by ``T_mult`` (SGDR)."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """``eta_min + (base_lr - eta_min) * (1 + cos(pi T_cur / T_i)) / 2``."""
        self._warn_if_outside_step()
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance one epoch, or go to ``epoch`` (a float allowed: fractions of an epoch for per-batch steps)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm up to ``max_lr``, then anneal far below the start (``lr_scheduler.OneCycleLR``).

    Stepped after every batch, ``total_steps`` times in all.
    """

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        up_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                       "max_momentum"),
                _phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", self.optimizer, max_lr)
        if last_epoch == -1:
            for max_lr_i, group in zip(max_lrs, self.optimizer.param_groups):
                group["initial_lr"] = max_lr_i / div_factor
                group["max_lr"] = max_lr_i
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1, _, _ = _init_momentum_cycle(optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        """The rate (and momentum) of step ``last_epoch``, annealed within the phase it falls in."""
        self._warn_if_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total steps is "
                             f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lrs.append(self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal_func(group[phase["start_momentum"]], group[phase["end_momentum"]],
                                                     pct)
                        _set_momentum(group, self.use_beta1, momentum)
                    break
                start_step = phase["end_step"]
        return lrs


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str, end_momentum: str) -> dict:
    """One phase of OneCycleLR: where it ends and which param-group keys hold its start and end values."""
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr, "start_momentum": start_momentum,
            "end_momentum": end_momentum}
