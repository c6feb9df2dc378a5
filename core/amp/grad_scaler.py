"""``GradScaler``: loss scaling for low-precision training (``torch.amp.GradScaler``).

The loss is multiplied by a scale before ``backward`` so small float16 gradients do not flush to zero; ``step``
divides the gradients by it again, skips the optimizer's step when any gradient is inf or NaN, and ``update``
shrinks the scale after such a step (``backoff_factor``) or grows it after ``growth_interval`` clean steps in a
row (``growth_factor``). The scale and the run of clean steps live in 0-d tensors on the loss's device.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

import numpy as np

from .. import dtypes
from ..autograd import no_grad
from ..tensor import Tensor

__all__ = ["GradScaler", "OptState"]


def _has_float64(device) -> bool:
    """Whether tensors on ``device`` can be float64 (WebGPU's cannot, like PyTorch's mps)."""
    from ..plugins.manager import runtime_for

    return runtime_for(device.type).supports_dtype(dtypes.float64)


class OptState(Enum):
    """Where one optimizer is in the iteration: gradients still scaled, unscaled, or stepped."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _unscale_and_check_(grads: list, found_inf: Tensor, inv_scale: Tensor) -> None:
    """Multiply each gradient by ``inv_scale`` in place and set ``found_inf`` to 1 if any holds an inf or NaN
    (torch's ``_amp_foreach_non_finite_check_and_unscale_``)."""
    from .. import ops

    for grad in grads:
        bad = ops.logical_not(ops.isfinite(grad)).any().to(found_inf.dtype)
        found_inf.copy_(ops.maximum(found_inf, bad))
        grad.mul_(inv_scale.to(grad.device))


class GradScaler:
    """Scale the loss, unscale the gradients, skip steps with inf/NaN gradients and adapt the scale
    (``torch.amp.GradScaler``)."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            from .autocast_mode import _device_available

            if not _device_available("cuda"):
                warnings.warn("core.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise ValueError(f"GradScaler: the growth factor must be > 1.0, got {growth_factor}")
            if not backoff_factor < 1.0:
                raise ValueError(f"GradScaler: the backoff factor must be < 1.0, got {backoff_factor}")
            self._init_scale = init_scale
            self._scale: Tensor | None = None  # made on the first scale(), on the outputs' device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: dict = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple:
        if self._scale is None or self._growth_tracker is None:
            raise RuntimeError(f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                               f"use scaler.scale(loss or outputs) earlier in the iteration.")
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device) -> None:
        from .. import ops

        self._scale = ops.full((), self._init_scale, dtype=dtypes.float32, device=device)
        self._growth_tracker = ops.full((), self._init_growth_tracker, dtype=dtypes.int32, device=device)

    def scale(self, outputs):
        """``outputs`` (a tensor, or an iterable of them) multiplied by the scale; unchanged when disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (str, bytes)) or not hasattr(outputs, "__iter__"):
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        scaled = map(self.scale, outputs)
        return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, found_inf: Tensor, allow_fp16: bool) -> dict:
        by_device: dict = defaultdict(list)
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is dtypes.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    by_device[param.grad.device].append(param.grad)
            per_device = {}
            for device, grads in by_device.items():
                per_device[device] = found_inf.to(device).clone()
                _unscale_and_check_(grads, per_device[device], inv_scale)
        return per_device

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place (at most once between ``update`` calls),
        recording whether any is inf or NaN."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float() if _has_float64(self._scale.device) \
            else self._scale.reciprocal()  # in float64 where the device has it (as PyTorch, which skips it on mps)
        found_inf = inv_scale.new_zeros(())
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, return_found_inf: bool = False, **kwargs):
        """Unscale ``optimizer``'s gradients (unless ``unscale_`` did) and run ``optimizer.step(*args,
        **kwargs)`` unless one is inf or NaN; returns what the step returned, None when it was skipped."""
        if not self._enabled:
            retval = optimizer.step(*args, **kwargs)
            return (retval, False) if return_found_inf else retval
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not optimizer_state["found_inf_per_device"]:
            raise RuntimeError("No inf checks were recorded for this optimizer.")
        found_inf = any(v.item() for v in optimizer_state["found_inf_per_device"].values())
        retval = None if found_inf else optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return (retval, found_inf) if return_found_inf else retval

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration: ``new_scale`` if given, else backed off after a skipped step or
        grown after ``growth_interval`` clean steps in a row (torch's ``_amp_update_scale_``)."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if not isinstance(new_scale, Tensor):
                scale.fill_(new_scale)
            else:
                if new_scale.device.type != self._device or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise ValueError("new_scale should be a float or a 1-element FloatTensor with "
                                     "requires_grad=False on the scaler's device.")
                scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [found for state in self._per_optimizer_states.values()
                          for found in state["found_inf_per_device"].values()]
            if not found_infs:
                raise RuntimeError("No inf checks were recorded prior to update.")
            if any(found.item() for found in found_infs):
                scale.fill_(scale.item() * self._backoff_factor)
                growth_tracker.fill_(0)
            else:
                successful = int(growth_tracker.item()) + 1
                if successful == self._growth_interval:
                    grown = float(np.float32(scale.item() * self._growth_factor))
                    if grown != float("inf"):  # a scale that would overflow float32 stays where it is
                        scale.fill_(grown)
                    successful = 0
                growth_tracker.fill_(successful)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def get_scale(self) -> float:
        """The current scale as a Python float; 1.0 when disabled."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a skipped step."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the factor the scale shrinks by after a skipped step."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row grow the scale."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set how many clean steps in a row grow the scale."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        """Whether this scaler scales at all."""
        return self._enabled

    def state_dict(self) -> dict:
        """The scaler's state: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({} when
        disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state from :meth:`state_dict` (a no-op when disabled)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if self._per_optimizer_states:
                raise RuntimeError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                   "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
