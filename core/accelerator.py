"""``core.accelerator``: PyTorch's device-agnostic API (``torch.accelerator``, 2.6+), answered by the plugin that
serves the current accelerator.

PyTorch has one accelerator type per build; core may have several device types loaded (cuda, opencl, a
third-party one). The current accelerator is, in this order:

1. the default device's type (``core.set_default_device``, ``with core.device(...)``, the ``device`` setting),
   when it is not ``cpu`` or ``meta`` -- the program's own choice, as a PyTorch build's is;
2. else the first *available* device type, cuda, then opencl, then the others by name;
3. else none: ``current_accelerator()`` is None, ``is_available()`` False, ``device_count()`` 0, and the other
   functions raise PyTorch's RuntimeError ("Cannot access accelerator device when none is available.").

Every function delegates to the device module of that type (``core.cuda``, ``core.opencl``, ...).
"""

from __future__ import annotations

from collections import OrderedDict

from .device import device, get_default_device
from .device_module import DeviceModule, get_device_module

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "device_count", "device_index",
           "empty_cache", "is_available", "max_memory_allocated", "max_memory_reserved", "memory_allocated",
           "memory_reserved", "memory_stats", "reset_peak_memory_stats", "set_device_idx", "set_device_index",
           "synchronize"]

NOT_ACCELERATORS = ("cpu", "meta")
PREFERRED = ("cuda", "opencl")  # then every other device type with a backend, by name


def _candidates() -> list:
    """Device types that may be the accelerator, in the order they are tried."""
    from .plugins.manager import get_manager

    manager = get_manager()
    manager.scan()
    served = {info.device_type for info in manager.backends.values()} - set(NOT_ACCELERATORS)
    return [t for t in PREFERRED if t in served] + sorted(served - set(PREFERRED))


def _module(device_type: str) -> DeviceModule:
    try:
        return get_device_module(device_type)
    except RuntimeError:  # a default device type no backend serves: a module that reports itself unavailable
        return DeviceModule(device_type)


def current_accelerator(check_available: bool = False) -> device | None:
    """The current accelerator as a device with no index, or None (``torch.accelerator.current_accelerator``).

    ``check_available`` also requires it to be available: a default device whose backend cannot run is then None.
    """
    default = get_default_device().type
    if default not in NOT_ACCELERATORS:
        if check_available and not _module(default).is_available():
            return None
        return device(default)
    for device_type in _candidates():
        if _module(device_type).is_available():
            return device(device_type)
    return None


def _current_module() -> DeviceModule:
    """The current accelerator's device module; PyTorch's RuntimeError when there is none, or it cannot run."""
    accelerator = current_accelerator()
    if accelerator is None:
        tried = ", ".join(_candidates()) or "none installed"
        raise RuntimeError("Cannot access accelerator device when none is available. (device types tried: "
                           f"{tried}; `python -m core info` says why each is unavailable)")
    module = _module(accelerator.type)
    if not module.is_available():
        from .plugins.manager import BackendUnavailableError

        raise BackendUnavailableError(f"the current accelerator '{accelerator.type}' (the default device type) is "
                                      f"not available: {module.unavailable_reason() or 'no device found'}")
    return module


def _index(device_arg, optional: bool) -> tuple:
    """``(module, index)`` for a device argument (an index, a device or its string) of the current accelerator."""
    module = _current_module()
    if isinstance(device_arg, (str, device)):
        device_arg = device(device_arg)
        if device_arg.type != module.device_type:
            raise ValueError(f"{device_arg.type} doesn't match the current accelerator {module.device_type}.")
        if device_arg.index is None and not optional:
            raise ValueError(f"Expected a core.device with a specified index or an integer, but got:{device_arg}")
    return module, module.index_of(device_arg)


def is_available() -> bool:
    """Whether there is a current accelerator and it sees at least one device (``torch.accelerator.is_available``)."""
    accelerator = current_accelerator()
    return accelerator is not None and _module(accelerator.type).is_available()


def device_count() -> int:
    """How many devices the current accelerator has; 0 when there is none (``torch.accelerator.device_count``)."""
    accelerator = current_accelerator()
    return 0 if accelerator is None else _module(accelerator.type).device_count()


def current_device_index() -> int:
    """The index of the current accelerator's current device (``torch.accelerator.current_device_index``)."""
    return _current_module().current_device()


def set_device_index(device, /) -> None:
    """Make ``device`` (an index, or a device of the accelerator's type) the current one; a negative index is a
    no-op (``torch.accelerator.set_device_index``)."""
    module, index = _index(device, optional=False)
    if index >= 0:
        module.set_device(index)


def current_device_idx() -> int:
    """Deprecated alias of :func:`current_device_index` (``torch.accelerator.current_device_idx``)."""
    import warnings

    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device, /) -> None:
    """Deprecated alias of :func:`set_device_index` (``torch.accelerator.set_device_idx``)."""
    import warnings

    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:  # noqa: N801 - PyTorch's name
    """Make device index ``device`` current inside a ``with`` block and restore the previous one after; ``None``
    changes nothing (``torch.accelerator.device_index``)."""

    def __init__(self, device: int | None, /) -> None:
        self.index = device
        self.previous = -1

    def __enter__(self) -> None:
        if self.index is not None:
            self.previous = current_device_index()
            set_device_index(self.index)

    def __exit__(self, *exc_info) -> bool:
        if self.index is not None:
            set_device_index(self.previous)
        return False


def synchronize(device=None, /) -> None:
    """Wait for all queued work on ``device`` (the current one by default) to finish
    (``torch.accelerator.synchronize``)."""
    module, index = _index(device, optional=True)
    module.synchronize(index)


# -- memory (torch.accelerator.memory, 2.8+) -------------------------------------------------------------------------
def empty_cache() -> None:
    """Return the current accelerator's cached, unused memory to the system (``torch.accelerator.empty_cache``)."""
    _current_module().empty_cache()


def memory_allocated(device=None, /) -> int:
    """Bytes held by live tensors on ``device`` (``torch.accelerator.memory_allocated``)."""
    module, index = _index(device, optional=True)
    return module.memory_allocated(index)


def max_memory_allocated(device=None, /) -> int:
    """Peak of :func:`memory_allocated` since the start or the last :func:`reset_peak_memory_stats`; the current value
    on a backend that records no peak (``torch.accelerator.max_memory_allocated``)."""
    module, index = _index(device, optional=True)
    return module.max_memory_allocated(index)


def memory_reserved(device=None, /) -> int:
    """Bytes the backend's memory pool holds on ``device``: allocated plus cached
    (``torch.accelerator.memory_reserved``)."""
    module, index = _index(device, optional=True)
    return module.memory_reserved(index)


def max_memory_reserved(device=None, /) -> int:
    """Peak of :func:`memory_reserved`; the current value on a backend that records no peak
    (``torch.accelerator.max_memory_reserved``)."""
    module, index = _index(device, optional=True)
    return module.max_memory_reserved(index)


def reset_peak_memory_stats(device=None, /) -> None:
    """Start the memory peaks again from now (``torch.accelerator.reset_peak_memory_stats``)."""
    module, index = _index(device, optional=True)
    module.reset_peak_memory_stats(index)


def memory_stats(device=None, /) -> OrderedDict:
    """Memory statistics under PyTorch's names, those the backend can answer (``torch.accelerator.memory_stats``)."""
    module, index = _index(device, optional=True)
    return module.memory_stats(index)
