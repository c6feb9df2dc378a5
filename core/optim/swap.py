"""``swap_in_optimizer_params_and_state``: step an optimizer on other parameters and state for a while
(``torch.optim.swap_in_optimizer_params_and_state``)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any

from ..tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _fail(message: str):
    raise RuntimeError(f"{_NAME} requires {message}")


def _plan(optimizer, swapin_parameters: dict, swapin_optim_state: dict) -> tuple[dict, list]:
    """Check the swap-in state dict against the live optimizer; pair each live group with its saved group and
    its slice of ``swapin_parameters`` (taken in order, group after group, as PyTorch does)."""
    if not optimizer.state:
        _fail("initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        _fail("a DCP-style optimizer state_dict.")
    state = swapin_optim_state.get("state")
    if not isinstance(state, dict):
        _fail("swapin_optim_state['state'] to be a dict mapping packed parameter ids to per-param state dicts, "
              f"got {type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        _fail("optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        _fail("per-parameter optimizer state entries to be dictionaries.")
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        _fail(f"swapin_optim_state['param_groups'] to be a list of param-group dicts, got {type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    flat = list(swapin_parameters.values())
    offset, seen, plan = 0, set(), []
    for idx, (group, saved) in enumerate(zip(optimizer.param_groups, groups)):
        if not isinstance(saved, dict):
            _fail("each optimizer param group to be a dictionary.")
        ids = saved.get("params")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            _fail("optimizer.state_dict()-style param_groups[*]['params'] entries keyed by packed parameter ids.")
        if len(ids) != len(group["params"]):
            raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of params than the "
                               "live optimizer param group.")
        saved_only = [k for k in saved if k not in group]
        live_only = [k for k in group if k not in saved]
        if saved_only or live_only:
            _fail("optimizer.state_dict()-style param group keys to exactly match the live optimizer group keys "
                  f"for group {idx}. Keys only in swap-in: {saved_only}. Keys only in live: {live_only}.")
        seen.update(ids)
        if offset + len(ids) > len(flat):
            _fail("the explicit parameter state to match optimizer.param_groups ordering.")
        plan.append((group, saved, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        _fail(f"swapin_optim_state['state'] to be keyed only by packed parameter ids from "
              f"param_groups[*]['params']; got extra keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict[str, Tensor],
                                       swapin_optim_state: dict[str, Any]):
    """Within the context, ``optimizer`` works on ``swapin_parameters`` and the state of ``swapin_optim_state``
    (an ``optimizer.state_dict()``-shaped dict); its own parameters, state and group options come back on exit
    (``torch.optim.swap_in_optimizer_params_and_state``).

    The parameters are given in the optimizer's parameter order (e.g. ``dict(model.named_parameters())``). Steps
    update the swapped-in tensors in place, so in-place changes reach ``swapin_optim_state``'s tensors; new entries
    or replaced tensors in the state do not.
    """
    state, plan = _plan(optimizer, swapin_parameters, swapin_optim_state)
    live_state = optimizer.state
    snapshots = [dict(group) for group in optimizer.param_groups]
    try:
        swapped: defaultdict = defaultdict(dict)
        for group, saved, params in plan:
            group.update({k: v for k, v in saved.items() if k != "params"})
            group["params"] = params
            for param, pid in zip(params, saved["params"]):
                swapped[param] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = live_state
