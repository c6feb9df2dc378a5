"""Devices: ``core.device("cuda:1")`` parsing and the default device.

A device is a (type, index) pair. Which backend serves a device type is the
plugin manager's business; this module only names devices.
"""

from __future__ import annotations

import threading

__all__ = ["device", "set_default_device", "get_default_device"]


class device:
    """A device a tensor lives on, like ``torch.device``: ``device("cpu")``, ``device("cuda", 1)``.

    Used as a context manager it makes itself the default device for factory
    functions in the block (``with core.device("opencl"): ...``).
    """

    __slots__ = ("type", "index", "_previous")

    def __new__(cls, type, index=None):  # noqa: A002 - PyTorch's name
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): an index cannot be given with a device object")
            return type
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            type, index = "cuda", type  # torch.device(0) means cuda:0
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string or device, got {type.__class__.__name__}")
        key = (type, index)
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        name, sep, idx = type.partition(":")
        if sep:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {type}")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if not name or not (name.replace("_", "").isalnum() and name[0].isalpha()):
            raise RuntimeError(f"Invalid device string: '{type}'")
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self = object.__new__(cls)
        object.__setattr__(self, "type", name)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "_previous", None)
        _CACHE[key] = self
        return self

    def __setattr__(self, name, value):
        raise AttributeError("device objects are immutable")

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        stack = _default_stack()
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _default_stack().pop()
        return False


_CACHE: dict = {}
_local = threading.local()
_api_default: list = [None]  # set_default_device (process-wide, as in PyTorch)


def _default_stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def set_default_device(dev) -> None:
    """Make ``dev`` the device factory functions use when none is given (``torch.set_default_device``)."""
    _api_default[0] = None if dev is None else device(dev)


def get_default_device() -> device:
    """The device factory functions use: a ``with device(...)`` block, else the API, env or config choice."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    if _api_default[0] is not None:
        return _api_default[0]
    from . import config  # the config layer resolves env / files / defaults

    return device(config.get("device"))


def as_device(dev) -> device:
    """``dev`` as a device; ``None`` means the default device."""
    if dev is None:
        return get_default_device()
    if isinstance(dev, device):
        return dev
    return device(dev)
