"""Anomaly detection: name the forward op whose backward produced NaN (``torch.autograd.detect_anomaly``)."""

from __future__ import annotations

import threading
import traceback

__all__ = ["set_detect_anomaly", "detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "check_nan",
           "record_forward"]


class _State(threading.local):
    """This thread's anomaly settings. The defaults are class attributes: a thread that never set them reads them
    without an AttributeError raised and caught inside ``getattr`` (the autograd kernel reads ``enabled`` on
    every recorded op, the engine on every backward)."""

    enabled = False
    check_nan = True


_state = _State()


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on in this thread."""
    return _state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks backward results for NaN in this thread."""
    return _state.check_nan


class set_detect_anomaly:
    """Turn anomaly detection (and its NaN check) on or off: a function call or a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._previous = is_anomaly_enabled(), is_anomaly_check_nan_enabled()
        _state.enabled, _state.check_nan = bool(mode), bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self._previous
        return False


class detect_anomaly(set_detect_anomaly):
    """Context manager enabling anomaly detection in its block."""

    def __init__(self, check_nan: bool = True):
        super().__init__(True, check_nan)


def record_forward(node) -> None:
    """Remember where the forward op ran (only while anomaly detection is on)."""
    node.metadata["traceback"] = "".join(traceback.format_stack()[:-3])


def check_nan(node, grads) -> None:
    """Raise naming ``node``'s forward op when one of its input gradients holds NaN (if the NaN check is on)."""
    if not is_anomaly_check_nan_enabled():
        return
    from ..ops.elementwise import isnan
    from ..ops.reduction import any as any_

    for i, g in enumerate(grads):
        if g is not None and g.is_floating_point() and bool(any_(isnan(g))):
            where = node.metadata.get("traceback", "")
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output; it is the "
                               f"backward of the forward op '{node.op_name}'"
                               + (f", which ran at:\n{where}" if where else ""))
