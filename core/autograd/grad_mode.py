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

from ..dispatch.keys import Autograd, InferenceTensor, is_grad_enabled, set_grad_mode as _set, tls

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "set_multithreading_enabled", "is_multithreading_enabled",
           "is_view_replay_enabled", "_set_view_replay_enabled", "enforce_grad_layout_policy"]

# inference_mode excludes Autograd (no recording) and InferenceTensor (inference tensors dispatch as plain ones)
_INFERENCE_KEYS = Autograd.mask | InferenceTensor.mask

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
    """Inference mode (``torch.inference_mode``): no recording, and tensors allocated inside are inference tensors.

    Inference tensors have no version counter, refuse in-place writes and ``requires_grad=True`` outside the
    mode, and cannot be saved for backward; views of normal tensors made inside stay normal. ``mode=False``
    leaves the mode (and turns recording on) for a nested block. Also a decorator, with or without parentheses.
    """

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):  # @inference_mode without parentheses
            self.mode = True
            return self(mode)
        return self

    def __init__(self, mode: bool = True):
        self.mode = True if callable(mode) else bool(mode)

    def __enter__(self):
        self._previous_state = (tls.inference, tls.exclude & _INFERENCE_KEYS, tls.multithreading)
        tls.inference = self.mode
        # PyTorch's InferenceMode(enabled): grad mode and multithreading become ``not enabled``
        tls.exclude = tls.exclude | _INFERENCE_KEYS if self.mode else tls.exclude & ~_INFERENCE_KEYS
        tls.multithreading = not self.mode
        return self

    def __exit__(self, *exc):
        tls.inference, keys, tls.multithreading = self._previous_state
        tls.exclude = tls.exclude & ~_INFERENCE_KEYS | keys
        return False

    def clone(self) -> "inference_mode":
        """A fresh manager with the same mode (``torch.inference_mode.clone``)."""
        return self.__class__(self.mode)


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode()`` block is active in this thread (``torch.is_inference_mode_enabled``)."""
    return tls.inference


class _Flag(_Mode):
    """A thread-local autograd flag set at construction, so that it works as a plain call, a context manager (the
    previous value comes back on exit) or a decorator."""

    attribute = ""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._flag_previous = getattr(tls, self.attribute)
        setattr(tls, self.attribute, self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        setattr(tls, self.attribute, self._flag_previous)
        return False

    def __call__(self, fn):
        setattr(tls, self.attribute, self._flag_previous)  # as a decorator it changes nothing at definition

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.mode):
                return fn(*args, **kwargs)

        return wrapper


class set_multithreading_enabled(_Flag):
    """Turn multithreaded backward on or off (``torch.autograd.set_multithreading_enabled``): a plain call, a
    context manager or a decorator. core's engine runs backward on the calling thread either way; the flag is
    kept and read back by :func:`is_multithreading_enabled`."""

    attribute = "multithreading"


def is_multithreading_enabled() -> bool:
    """Whether multithreaded backward is enabled in this thread (``torch.autograd.is_multithreading_enabled``);
    False inside ``inference_mode``, as in PyTorch."""
    return tls.multithreading


class _set_view_replay_enabled(_Flag):
    """Turn view replay on or off (``torch._C._set_view_replay_enabled``, the setter behind PyTorch's
    ``_force_original_view_tracking``). core regenerates a view after an in-place write into its base with
    ``as_strided`` whatever the flag says; the flag is kept and read back by :func:`is_view_replay_enabled`."""

    attribute = "view_replay"


def is_view_replay_enabled() -> bool:
    """Whether view replay is enabled in this thread (``torch.autograd.is_view_replay_enabled``; off by
    default)."""
    return tls.view_replay


class enforce_grad_layout_policy(_Flag):
    """Whether backward enforces the gradient layout contract (``torch.autograd.enforce_grad_layout_policy``): a
    leaf's new ``.grad`` takes the leaf's strides when its elements are non-overlapping and dense, else row-major
    ones. With ``enable=False`` an incoming gradient nobody else holds becomes ``.grad`` whatever its strides
    (no copy). A plain call, a context manager or a decorator; thread-local."""

    attribute = "grad_layout_policy"

    def __init__(self, enable: bool = True):
        super().__init__(enable)
