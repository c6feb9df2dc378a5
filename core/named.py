"""Named singletons of core's namespace: the layouts, memory formats and quantization schemes."""

from __future__ import annotations

__all__ = ["NamedConstant"]


class NamedConstant:
    """A singleton named by a module attribute (``core.strided``, ``core.channels_last``, ``core.per_tensor_affine``):
    printed as ``core.<name>``, compared with ``is``, pickled as a reference to that attribute of its class's
    module, so unpickling gives the same object back."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"core.{self.name}"

    def __reduce__(self):
        return self.name  # pickle: the attribute of this name in the class's module (found through __module__)
