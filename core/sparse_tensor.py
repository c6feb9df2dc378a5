"""SparseTensor: a Tensor whose layout is sparse, held as its dense component tensors.

A COO tensor holds ``indices`` (sparse_dim x nnz, int64) and ``values`` (nnz x dense dims); a compressed one
(CSR, CSC, BSR, BSC) holds its compressed indices, its plain indices and its values. Its Storage carries the
``Sparse`` dispatch key, which ranks above every other key: an op called with a sparse operand runs its Sparse
kernel (``core/ops/sparse.py``), written as a composite over the components, or raises naming the op and the
layout. Autograd lives on the components: a sparse tensor requires grad when its values do, and its ``grad`` is
the gradient of its values laid out with its own indices (PyTorch's sparse gradient of a sparse leaf).
"""

from __future__ import annotations

from . import layouts as _layout
from .dispatch.keys import Sparse
from .storage import Storage
from .tensor import Tensor, contiguous_strides

__all__ = ["SparseTensor", "make_sparse", "COMPRESSED_LAYOUTS", "SPARSE_LAYOUTS"]

COMPRESSED_LAYOUTS = (_layout.sparse_csr, _layout.sparse_csc, _layout.sparse_bsr, _layout.sparse_bsc)
SPARSE_LAYOUTS = (_layout.sparse_coo,) + COMPRESSED_LAYOUTS
# PyTorch's dispatch-key names for the layouts, used in error messages ('SparseCPU', 'SparseCsrCPU')
_KEY_PREFIX = {_layout.sparse_coo: "Sparse"} | {lay: "SparseCsr" for lay in COMPRESSED_LAYOUTS}


def make_sparse(layout, shape: tuple, values: Tensor, indices: Tensor | None = None, compressed: Tensor | None = None,
                plain: Tensor | None = None, coalesced: bool = False) -> "SparseTensor":
    """A sparse tensor of ``layout`` and ``shape`` over the given components (no checks: constructors check)."""
    t = object.__new__(SparseTensor)
    t._layout = layout
    t._shape = tuple(shape)
    t._stride = contiguous_strides(t._shape)  # never exposed (stride() raises); lets shape logic reach the dispatcher
    t._offset = 0
    t._np = None
    t.dtype = values.dtype
    t._values = values
    t._indices = indices
    t._compressed = compressed
    t._plain = plain
    t._coalesced = coalesced
    t._storage = Storage(None, 0, values.device, values._storage.backend, Sparse.mask | values._storage.key)
    return t


class SparseTensor(Tensor):
    """A tensor with a sparse layout (COO, CSR, CSC, BSR, BSC) over dense component tensors."""

    @property
    def layout(self):
        return self._layout

    @property
    def is_sparse(self) -> bool:
        return self._layout is _layout.sparse_coo

    @property
    def is_sparse_csr(self) -> bool:
        return self._layout is _layout.sparse_csr

    @property
    def dispatch_name(self) -> str:
        """PyTorch's name of the backend this tensor dispatches to (``'SparseCPU'``), for error messages."""
        device = self._storage.device.type
        return _KEY_PREFIX[self._layout] + (device.upper() if device in ("cpu", "cuda") else device.capitalize())

    # -- autograd lives on the values ------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._values.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> "SparseTensor":
        """Set ``requires_grad`` in place (on the values, which hold this tensor's gradient)."""
        self._values.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._values.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._values.grad_fn is None

    @property
    def grad(self):
        """The gradient as a sparse tensor with this tensor's indices (None before backward)."""
        g = self._values.grad
        return None if g is None else self.with_values(g)

    @grad.setter
    def grad(self, value) -> None:
        if value is not None and isinstance(value, SparseTensor):
            value = value._values
        self._values.grad = value

    @property
    def grad_holder(self) -> Tensor:
        """The tensor autograd differentiates for this one: its values (``autograd.grad``/``backward(inputs=)``)."""
        return self._values

    def with_values(self, values: Tensor) -> "SparseTensor":
        """This tensor's indices and shape over other values (same nnz): the sparse form of a values gradient."""
        return make_sparse(self._layout, self._shape, values, self._indices, self._compressed, self._plain,
                           self._coalesced)

    def clone(self, *, memory_format=None) -> "SparseTensor":
        """A copy with its own components (``torch.Tensor.clone``); differentiable in the values."""
        parts = [None if p is None else p.clone() for p in (self._indices, self._compressed, self._plain)]
        return make_sparse(self._layout, self._shape, self._values.clone(), *parts, coalesced=self._coalesced)

    def detach(self) -> "SparseTensor":
        """The same indices over detached values (``torch.Tensor.detach``)."""
        return self.with_values(self._values.detach())

    @property
    def data(self) -> "SparseTensor":
        return self.detach()

    @property
    def _version(self) -> int:
        return self._values._version

    # -- what a sparse tensor does not have ----------------------------------------------------------
    def stride(self, dim=None):
        """Sparse tensors have no strides (PyTorch raises the same)."""
        raise RuntimeError(f"Sparse tensors do not have strides (layout {self._layout!r})")

    def is_contiguous(self, memory_format=None) -> bool:
        """Sparse tensors have no memory layout to be contiguous in (PyTorch raises the same)."""
        raise RuntimeError(f"Tensors of type {self.dispatch_name}Impl do not have is_contiguous")

    def storage_offset(self) -> int:
        """Sparse tensors have no storage offset (PyTorch raises the same)."""
        raise RuntimeError(f"Cannot access storage_offset of {self.dispatch_name}Impl")

    def data_ptr(self) -> int:
        """Sparse tensors have no single data pointer (PyTorch raises the same)."""
        raise RuntimeError(f"Cannot access data pointer of Tensor that doesn't have storage (layout "
                           f"{self._layout!r})")

    def numpy(self, *, force: bool = False):
        """Sparse tensors have no array view (PyTorch raises the same TypeError)."""
        raise TypeError(f"can't convert {self._layout.name} layout tensor to numpy. Use Tensor.to_dense() first.")

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def tolist(self):
        """Sparse tensors have no nested-list form (PyTorch raises the same)."""
        raise TypeError(f"tolist() is not supported for {self._layout.name} layout tensors; use Tensor.to_dense()")

    def item(self):
        """The value of a one-element sparse tensor (0 when nothing is stored)."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        from .ops.sparse import to_dense

        return to_dense(self).item()

    def __reduce_ex__(self, protocol):
        from .ops.sparse import _rebuild_sparse

        parts = tuple(None if p is None else p.detach().cpu() for p in (self._indices, self._compressed, self._plain))
        return (_rebuild_sparse, (self._layout, self._shape, self._values.detach().cpu(), *parts, self._coalesced,
                                  str(self.device), self.requires_grad))

    def __deepcopy__(self, memo):
        from .ops.sparse import _rebuild_sparse

        parts = tuple(None if p is None else p.clone() for p in (self._indices, self._compressed, self._plain))
        result = _rebuild_sparse(self._layout, self._shape, self._values.detach().clone(), *parts, self._coalesced,
                                 str(self.device), self.requires_grad)
        memo[id(self)] = result
        return result
