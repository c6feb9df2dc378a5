"""Memory layouts of tensors (``torch.layout``): ``strided`` for dense tensors, the sparse formats for the rest."""

from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged"]


class layout:
    """How a tensor's elements are stored (``torch.layout``); the objects are singletons, compared with ``is``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"core.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name: str) -> layout:
    """The layout object called ``name`` (unpickling keeps the singletons)."""
    return globals()[name]


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")
