"""Memory layouts of tensors (``torch.layout``): ``strided`` for dense tensors, the sparse formats for the rest."""

from __future__ import annotations

from .named import NamedConstant

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged"]


class layout(NamedConstant):
    """How a tensor's elements are stored (``torch.layout``); the objects are singletons, compared with ``is``."""

    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")
