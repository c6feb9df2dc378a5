"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Grad mode is the Autograd key in the thread-local *exclude* set, a dispatch-key
fact (``core.dispatch.keys.is_grad_enabled`` / ``set_grad_mode``): with it
excluded, ops dispatch straight to the backends and record nothing. Being
thread-local, one thread's mode never leaks into another. The modes here set
that state; ops and the dispatcher read it from the dispatch layer.
"""

from __future__ import annotations

import copy
import functools

from ..dispatch.keys import is_grad_enabled, set_grad_mode as _set, tls

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]

class _Mode:
    """Base of the grad-mode context managers; each also works as a decorator."""

    enabled = True

    def __enter__(self):
        self._previous = is_grad_enabled()
        _set(self.enabled)
        return self

    def __exit__(self, *exc):
        _set(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with copy.copy(self):  # a fresh copy per call: re-entrant and thread-safe
                return fn(*args, **kwargs)

        return wrapper


class _BareDecorator(_Mode):
    """Modes usable as ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if callable(func):
            return self(func)
        return self

    def __init__(self, func=None):
        pass


class no_grad(_BareDecorator):
    """Disable gradient recording in the block or decorated function (``torch.no_grad``)."""

    enabled = False


class enable_grad(_BareDecorator):
    """Enable gradient recording in the block or decorated function (``torch.enable_grad``)."""

    enabled = True


class set_grad_enabled(_Mode):
    """Turn recording on or off: as a function call, a context manager or a decorator."""

    def __init__(self, mode: bool):
        self.enabled = bool(mode)
        self._previous = is_grad_enabled()
        self._switched_by_init = True
        _set(self.enabled)  # set_grad_enabled(False) as a plain call takes effect at once, like PyTorch

    def __enter__(self):
        if not self._switched_by_init:
            self._previous = is_grad_enabled()
        self._switched_by_init = False
        _set(self.enabled)
        return self

    def __call__(self, fn):
        _set(self._previous)  # as a decorator it changes nothing where the function is defined
        self._switched_by_init = False
        return super().__call__(fn)


class inference_mode(_Mode):
    """Like ``no_grad``, for inference (``torch.inference_mode``); ``inference_mode(False)`` is a no-op block."""

    enabled = False

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):  # @inference_mode without parentheses
            self.mode = True
            return self(mode)
        return self

    def __init__(self, mode: bool = True):
        self.mode = True if callable(mode) else bool(mode)

    def __enter__(self):
        self._previous_inference = getattr(tls, "inference", False)
        self._previous = is_grad_enabled()
        if self.mode:
            tls.inference = True
            _set(False)
        elif self._previous_inference:  # leaving an enclosing inference_mode: normal recording again
            tls.inference = False
            _set(True)
        return self

    def __exit__(self, *exc):
        tls.inference = self._previous_inference
        _set(self._previous)
        return False


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode()`` block is active in this thread."""
    return getattr(tls, "inference", False)
