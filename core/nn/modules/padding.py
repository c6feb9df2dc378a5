"""Padding layers: ``F.pad`` with a fixed padding and mode, one class per mode and dimensionality."""

from __future__ import annotations

from .. import functional as F
from ..functional._utils import ntuple
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    """Pads the last ``nd`` dims by ``padding`` (an int for every side, or a 2*nd tuple, last dim first)."""

    nd, mode = 1, "constant"

    def __init__(self, padding):
        super().__init__()
        padding_tuple = ntuple(padding, 2 * self.nd)
        self.padding = padding_tuple if padding_tuple is not None else tuple(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    """Pads with a constant ``value``."""

    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


def _padding_class(name: str, base: type, nd: int, mode: str, what: str) -> type:
    doc = f"Pads the last {nd} dim{'s' if nd > 1 else ''} {what} (``torch.nn.{name}``)."
    return type(name, (base,), {"nd": nd, "mode": mode, "__doc__": doc, "__module__": __name__})


ConstantPad1d = _padding_class("ConstantPad1d", _ConstantPadNd, 1, "constant", "with a constant value")
ConstantPad2d = _padding_class("ConstantPad2d", _ConstantPadNd, 2, "constant", "with a constant value")
ConstantPad3d = _padding_class("ConstantPad3d", _ConstantPadNd, 3, "constant", "with a constant value")
ReflectionPad1d = _padding_class("ReflectionPad1d", _PadNd, 1, "reflect", "with the reflection of the input")
ReflectionPad2d = _padding_class("ReflectionPad2d", _PadNd, 2, "reflect", "with the reflection of the input")
ReflectionPad3d = _padding_class("ReflectionPad3d", _PadNd, 3, "reflect", "with the reflection of the input")
ReplicationPad1d = _padding_class("ReplicationPad1d", _PadNd, 1, "replicate", "by repeating the edge values")
ReplicationPad2d = _padding_class("ReplicationPad2d", _PadNd, 2, "replicate", "by repeating the edge values")
ReplicationPad3d = _padding_class("ReplicationPad3d", _PadNd, 3, "replicate", "by repeating the edge values")
CircularPad1d = _padding_class("CircularPad1d", _PadNd, 1, "circular", "by wrapping the input around")
CircularPad2d = _padding_class("CircularPad2d", _PadNd, 2, "circular", "by wrapping the input around")
CircularPad3d = _padding_class("CircularPad3d", _PadNd, 3, "circular", "by wrapping the input around")


class _ZeroPadNd(_ConstantPadNd):
    """Pads with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


ZeroPad1d = _padding_class("ZeroPad1d", _ZeroPadNd, 1, "constant", "with zeros")
ZeroPad2d = _padding_class("ZeroPad2d", _ZeroPadNd, 2, "constant", "with zeros")
ZeroPad3d = _padding_class("ZeroPad3d", _ZeroPadNd, 3, "constant", "with zeros")
