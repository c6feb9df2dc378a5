"""``core.cuda``, ``core.opencl``, ``core.<any device type>``: per-device-type helpers, delegating to the plugin.

``import core`` imports no plugin, so these are looked up lazily (``core.__getattr__``) and ask the device
type's backend runtime at call time. A device type with no installed backend is simply "not available".
"""

from __future__ import annotations

__all__ = ["DeviceModule"]


class DeviceModule:
    """The ``torch.cuda``-like namespace of one device type: availability, devices, memory, seeding."""

    def __init__(self, device_type: str):
        self.device_type = device_type

    def __repr__(self) -> str:
        return f"<core.{self.device_type}: device helpers of the '{self.device_type}' backend>"

    def _runtime(self):
        from .plugins.manager import runtime_for

        return runtime_for(self.device_type)

    def _optional(self, method: str, *args, default=None):
        runtime = self._runtime()
        fn = getattr(runtime, method, None)
        return default if fn is None else fn(*args)

    def is_available(self) -> bool:
        """Whether a backend for this device type is installed, loads, and sees at least one device."""
        from .plugins.manager import BackendUnavailableError

        try:
            return self._runtime().device_count() > 0
        except BackendUnavailableError:
            return False

    def unavailable_reason(self) -> str:
        """Why :meth:`is_available` is False ('' when it is available)."""
        from .plugins.manager import BackendUnavailableError

        try:
            self._runtime()
            return ""
        except BackendUnavailableError as exc:
            return str(exc)

    def device_count(self) -> int:
        """How many devices of this type there are (0 when the backend is unavailable)."""
        return self._runtime().device_count() if self.is_available() else 0

    def get_device_name(self, device=None) -> str:
        """The name of a device (index or ``device`` object; the current one by default)."""
        index = self.current_device() if device is None else getattr(device, "index", device) or 0
        return self._runtime().device_name(index)

    def current_device(self) -> int:
        """The index of the current device."""
        return self._optional("current_device", default=0)

    def set_device(self, device) -> None:
        """Make ``device`` (an index or device) the current one."""
        index = getattr(device, "index", device) or 0
        self._optional("set_device", index)

    def synchronize(self, device=None) -> None:
        """Wait for all queued work on ``device`` to finish."""
        from .device import device as as_device

        self._runtime().synchronize(None if device is None else as_device(self.device_type, getattr(device, "index",
                                                                                                     device)))

    def memory_allocated(self, device=None) -> int:
        """Bytes held by live tensors."""
        return self._optional("memory_allocated", device, default=0)

    def max_memory_allocated(self, device=None) -> int:
        """Peak of :meth:`memory_allocated`."""
        return self._optional("max_memory_allocated", device, default=0)

    def memory_reserved(self, device=None) -> int:
        """Bytes held by the backend's memory pool (allocated + cached)."""
        return self._optional("memory_reserved", device, default=0)

    def empty_cache(self) -> None:
        """Return cached, unused memory to the system."""
        self._runtime().empty_cache()

    def memory_summary(self, device=None) -> str:
        """A readable summary of memory use."""
        summary = self._optional("memory_summary", device)
        if summary is not None:
            return summary
        return (f"{self.device_type}: allocated {self.memory_allocated(device)} B, "
                f"reserved {self.memory_reserved(device)} B")

    def manual_seed(self, seed: int) -> None:
        """Seed the current device's default generator."""
        self.manual_seed_all(seed)

    def manual_seed_all(self, seed: int) -> None:
        """Seed every device's default generator."""
        from .ops.random import manual_seed

        manual_seed(seed)
