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
        key = (type, index)
        cached = _CACHE.get(key) if isinstance(type, (str, int)) else None
        if cached is not None:
            return cached
        name, index = parse(type, index)
        self = _CACHE.get((name, index))  # equal devices are one object: ``is`` compares them
        if self is None:
            _check_type(name)
            new = object.__new__(cls)
            object.__setattr__(new, "type", name)
            object.__setattr__(new, "index", index)
            object.__setattr__(new, "_previous", None)
            self = _CACHE.setdefault((name, index), new)  # atomic: two threads making one device get one object
        if isinstance(type, (str, int)):
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
        if other is self:
            return True
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return other is self  # device() returns the one object of each (type, index)

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


def parse(type, index=None) -> tuple:  # noqa: A002 - PyTorch's name
    """(device type, index or None) of a device spec (``"cuda:1"``, ``("cuda", 1)``, ``0``), checking its syntax
    only: whether a backend has that type is checked when a device is made."""
    if isinstance(type, int) and not isinstance(type, bool) and index is None:
        type, index = "cuda", type  # torch.device(0) means cuda:0
    if not isinstance(type, str):
        raise TypeError(f"device() expected a string or device, got {type.__class__.__name__}")
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
    return name, index


# {(type, index), and each spelling device() was called with (("cuda:0", None), (0, None)): the one device object}
_CACHE: dict = {}

# PyTorch's device types (c10's DeviceType): a device may name one whether or not a backend for it is installed,
# as in PyTorch, where ``torch.device("mps")`` works on a machine without one.
TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                      "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def _check_type(name: str) -> None:
    """A device type must be PyTorch's or one an installed backend registers; else a BackendUnavailableError (a
    RuntimeError, as PyTorch's) with the plugin manager's account of why no backend has that type (a failed or
    blocked plugin, a typo: "did you mean 'cuda'?"), then, on a line of its own, PyTorch's message."""
    if name in TORCH_DEVICE_TYPES:
        return
    from .plugins.manager import BackendUnavailableError, get_manager  # lazily: plugins name devices while loading

    manager = get_manager()
    if manager.scanning:  # a plugin being loaded may name its own type before its backend is registered
        return
    manager.scan()
    extra = sorted({info.device_type for info in manager.backends.values()} - set(TORCH_DEVICE_TYPES))
    if name in extra:
        return
    raise BackendUnavailableError(f"{manager.unserved_message(name)}\nExpected one of "
                                  f"{', '.join(TORCH_DEVICE_TYPES + tuple(extra))} device type at start of device "
                                  f"string: {name}")


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
