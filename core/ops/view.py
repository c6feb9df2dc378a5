"""View ops: new shape/strides/offset over the same Storage, no kernel, no copy.

Each is declared as an op with one device-agnostic kernel (``default=``), so
autograd and tracing see views like any other op, and every backend gets them
for free.
"""

from __future__ import annotations

import numbers

from .. import dtypes as dt
from ..dispatch import define
from ..tensor import Tensor, contiguous_strides
from ._util import check_int_arg, documented, numel, wrap_dim, wrap_dims

__all__ = ["view", "view_as", "reshape", "transpose", "swapaxes", "swapdims", "permute", "t", "expand",
           "expand_as", "select", "narrow", "squeeze", "unsqueeze", "flatten", "unflatten", "unfold",
           "as_strided", "diagonal", "chunk", "split", "tensor_split", "unbind", "movedim", "moveaxis",
           "alias", "view_as_real", "view_as_complex", "view_as_real_copy", "view_as_complex_copy", "real", "imag"]


def _view_kernel(name: str, geometry):
    """Declare op ``name`` whose device-agnostic kernel is ``input._alias(*geometry(input, ...))``."""

    def kernel(input, *args):
        out = input._alias(*geometry(input, *args))
        out._base = input if input._base is None else input._base  # in-place writes through views rebase it
        return out

    kernel.__name__ = name
    return define(name, default=kernel, doc=geometry.__doc__ or "")


def _infer_size(op: str, shape: tuple, n: int) -> tuple:
    if -1 not in shape:  # the common case: every size given
        if numel(shape) == n and (not shape or min(shape) >= 0):
            return shape if shape.__class__ is tuple else tuple(shape)
        negative = [s for s in shape if s < 0]
        if negative:
            raise RuntimeError(f"{op}(): invalid shape dimension {negative[0]}")
        raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {n}")
    shape = tuple(shape)
    at = shape.index(-1)
    rest = shape[:at] + shape[at + 1:]
    if -1 in rest:
        raise RuntimeError(f"{op}(): only one dimension can be inferred")
    if rest and min(rest) < -1:
        raise RuntimeError(f"{op}(): invalid shape dimension {next(s for s in rest if s < -1)}")
    known = numel(rest)
    if known == 0 or n % known:
        raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {n}")
    return shape[:at] + (n // known,) + shape[at + 1:]


def compute_view_strides(old_shape: tuple, old_stride: tuple, new_shape: tuple):
    """Strides that let ``new_shape`` view the same elements, or None if no view exists (PyTorch's rule)."""
    if not old_shape:
        return tuple(1 for _ in new_shape)
    n = numel(old_shape)
    if n == 0:
        return contiguous_strides(new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def _view_geometry(input, shape):
    """View as ``shape`` (one dim may be -1); RuntimeError if the strides do not allow it."""
    shape = _infer_size("view", shape, numel(input._shape))
    if input._stride == contiguous_strides(input._shape):  # the common case needs no stride search
        return shape, contiguous_strides(shape), input._offset
    strides = compute_view_strides(input._shape, input._stride, shape)
    if strides is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans "
            "across two contiguous subspaces). Use .reshape(...) instead.")
    return shape, strides, input._offset


_view = _view_kernel("view", _view_geometry)


def view(input: Tensor, *shape) -> Tensor:
    """A view with another shape (``Tensor.view``); ``view(dtype)`` reinterprets the bytes."""
    if len(shape) == 1 and isinstance(shape[0], dt.dtype):
        return _view_dtype(input, shape[0])
    return _view(input, _shape_arg("view", shape))


def _shape_arg(op: str, shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if s.__class__ is int:  # the common case, without the abstract-class checks below
            out.append(s)
            continue
        if isinstance(s, Tensor):
            s = s.__index__()
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(f"{op}(): shape must be a sequence of ints, got {type(s).__name__}")
        out.append(int(s))
    return tuple(out)


def _dtype_view_kernel(name: str, geometry):
    """Declare view op ``name`` whose geometry also names the view's dtype (a reinterpretation of the bytes)."""

    def kernel(input, *args):
        shape, stride, offset, dtype = geometry(input, *args)
        out = input._alias(shape, stride, offset)
        out.dtype = dtype
        out._base = input if input._base is None else input._base
        return out

    kernel.__name__ = name
    return define(name, default=kernel, doc=geometry.__doc__ or "")


def _view_dtype_geometry(input, d):
    """Reinterpret the bytes as dtype ``d`` (same itemsize, or last dim rescaled)."""
    old, new = input.dtype.itemsize, d.itemsize
    if old == new:
        return input._shape, input._stride, input._offset, d
    if not input._shape or input._stride[-1] != 1:
        raise RuntimeError("self.stride(-1) must be 1 to view a tensor as a dtype of another element size")
    last = input._shape[-1] * old
    if last % new or (input._offset * old) % new or any((s * old) % new for s in input._stride[:-1]):
        raise RuntimeError(f"view(): cannot view {input.dtype.name} tensor of shape {list(input._shape)} as "
                           f"{d.name}: sizes and strides must be divisible by the new element size")
    shape = input._shape[:-1] + (last // new,)
    stride = tuple(s * old // new for s in input._stride[:-1]) + (1,)
    return shape, stride, input._offset * old // new, d


_view_dtype = _dtype_view_kernel("view.dtype", _view_dtype_geometry)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.view(other.shape)``."""
    return view(input, other._shape)


def reshape(input: Tensor, *shape) -> Tensor:
    """A view when the strides allow it, else a contiguous copy (``torch.reshape``)."""
    shape = _infer_size("reshape", _shape_arg("reshape", shape), numel(input._shape))
    if input._stride == contiguous_strides(input._shape) \
            or compute_view_strides(input._shape, input._stride, shape) is not None:
        return _view(input, shape)
    from .creation import clone

    return _view(clone(input), shape)


def _transpose_geometry(input, dim0, dim1):
    """Swap two dims."""
    n = len(input._shape)
    d0, d1 = wrap_dim(dim0, n, "transpose"), wrap_dim(dim1, n, "transpose")
    if n == 0:  # a 0-d tensor accepts dims 0/-1 and stays as it is
        return input._shape, input._stride, input._offset
    shape, stride = list(input._shape), list(input._stride)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    stride[d0], stride[d1] = stride[d1], stride[d0]
    return tuple(shape), tuple(stride), input._offset


transpose = _view_kernel("transpose", _transpose_geometry)
transpose.__doc__ = "Swap dims dim0 and dim1 (a view)."
swapaxes = swapdims = transpose


def _permute_geometry(input, dims):
    """Reorder dims."""
    n = len(input._shape)
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = wrap_dims(dims, n, "permute")
    return tuple(input._shape[d] for d in dims), tuple(input._stride[d] for d in dims), input._offset


_permute = _view_kernel("permute", _permute_geometry)


def permute(input: Tensor, *dims) -> Tensor:
    """Reorder dims (a view)."""
    return _permute(input, _shape_arg("permute", dims))


def t(input: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dims."""
    if input.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.dim()}D")
    return input if input.dim() < 2 else transpose(input, 0, 1)


def _expand_geometry(input, shape):
    """Broadcast size-1 dims to ``shape`` with stride 0 (-1 keeps a size)."""
    n_new, n_old = len(shape), len(input._shape)
    if n_new < n_old:
        raise RuntimeError(f"expand(): the number of sizes provided ({n_new}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({n_old})")
    out_shape, out_stride = [], []
    for i in range(n_new):
        j = i - (n_new - n_old)
        size = shape[i]
        if j < 0:
            if size < 0:
                raise RuntimeError(f"expand(): -1 is not allowed in a leading, non-existing dimension {i}")
            out_shape.append(size)
            out_stride.append(0)
            continue
        old = input._shape[j]
        if size == -1:
            size = old
        if old == size:
            out_shape.append(size)
            out_stride.append(input._stride[j])
        elif old == 1:
            out_shape.append(size)
            out_stride.append(0)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({size}) must match the existing size ({old}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(shape)}.  Tensor sizes: "
                               f"{list(input._shape)}")
    return tuple(out_shape), tuple(out_stride), input._offset


_expand = _view_kernel("expand", _expand_geometry)


def expand(input: Tensor, *sizes) -> Tensor:
    """Broadcast to a larger shape without copying (``Tensor.expand``)."""
    return _expand(input, _shape_arg("expand", sizes))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.expand(other.shape)``."""
    return expand(input, other._shape)


def _select_geometry(input, dim, index):
    """Drop dim ``dim`` at ``index``."""
    n = len(input._shape)
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, n, "select")
    size = input._shape[dim]
    index = check_int_arg("select", "index", index)
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input._shape)} at "
                         f"dimension {dim}")
    if index < 0:
        index += size
    return (input._shape[:dim] + input._shape[dim + 1:], input._stride[:dim] + input._stride[dim + 1:],
            input._offset + index * input._stride[dim])


select = _view_kernel("select", _select_geometry)


def _narrow_geometry(input, dim, start, length):
    """Elements ``start:start+length`` of dim ``dim``."""
    n = len(input._shape)
    if n == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, n, "narrow")
    size = input._shape[dim]
    start, length = check_int_arg("narrow", "start", start), check_int_arg("narrow", "length", length)
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    shape = list(input._shape)
    shape[dim] = length
    return tuple(shape), input._stride, input._offset + start * input._stride[dim]


narrow = _view_kernel("narrow", _narrow_geometry)


def _squeeze_geometry(input, dims):
    """Remove size-1 dims (all, or those in ``dims``)."""
    n = len(input._shape)
    dims = range(n) if dims is None else wrap_dims(dims, n, "squeeze")
    keep = [i for i in range(n) if not (i in dims and input._shape[i] == 1)]
    return tuple(input._shape[i] for i in keep), tuple(input._stride[i] for i in keep), input._offset


_squeeze = _view_kernel("squeeze", _squeeze_geometry)


def squeeze(input: Tensor, dim=None) -> Tensor:
    """Remove dims of size 1 (``torch.squeeze``)."""
    return _squeeze(input, dim if dim is None or isinstance(dim, numbers.Integral) else tuple(dim))


def _unsqueeze_geometry(input, dim):
    """Insert a size-1 dim at ``dim``."""
    n = len(input._shape)
    dim = wrap_dim(dim, n + 1, "unsqueeze")
    stride = input._stride[dim] * input._shape[dim] if dim < n else 1
    return (input._shape[:dim] + (1,) + input._shape[dim:], input._stride[:dim] + (stride,) + input._stride[dim:],
            input._offset)


unsqueeze = _view_kernel("unsqueeze", _unsqueeze_geometry)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when possible)."""
    n = input.dim()
    if n == 0:
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, n, "flatten"), wrap_dim(end_dim, n, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = input._shape[:s] + (numel(input._shape[s:e + 1]),) + input._shape[e + 1:]
    return reshape(input, shape)


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one may be -1)."""
    n = input.dim()
    dim = wrap_dim(dim, n, "unflatten")
    sizes = _infer_size("unflatten", tuple(sizes), input._shape[dim])
    return view(input, input._shape[:dim] + sizes + input._shape[dim + 1:])


def _unfold_geometry(input, dimension, size, step):
    """All windows of ``size`` along ``dimension``, ``step`` apart, as a new last dim."""
    n = len(input._shape)
    dim = wrap_dim(dimension, n, "unfold") if n else 0
    length = input._shape[dim] if n else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (length - size) // step + 1
    if not n:
        return (size,), (1,), input._offset
    shape = list(input._shape)
    stride = list(input._stride)
    shape[dim] = count
    window_stride = stride[dim]
    stride[dim] = step * window_stride
    return tuple(shape) + (size,), tuple(stride) + (window_stride,), input._offset


unfold = _view_kernel("unfold", _unfold_geometry)


def _as_strided_geometry(input, size, stride, storage_offset=None):
    """Any geometry over the storage; checked against the storage's size."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    offset = input._offset if storage_offset is None else int(storage_offset)
    if any(s < 0 for s in stride) or offset < 0:
        raise RuntimeError("as_strided: Negative strides and offsets are not supported")
    if all(size):
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if (last + 1) * input.dtype.itemsize > input._storage.nbytes:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
                               f"and itemsize {input.dtype.itemsize} requiring a storage size of "
                               f"{(last + 1) * input.dtype.itemsize} are out of bounds for storage of size "
                               f"{input._storage.nbytes}")
    return size, stride, offset


as_strided = _view_kernel("as_strided", _as_strided_geometry)


def _diagonal_geometry(input, offset=0, dim1=0, dim2=1):
    """The diagonal of dims ``dim1``/``dim2`` (shifted by ``offset``) as a new last dim."""
    n = len(input._shape)
    if n < 2:
        raise RuntimeError(f"diagonal dimensions requires at least 2 dims, got {n}")
    d1, d2 = wrap_dim(dim1, n, "diagonal"), wrap_dim(dim2, n, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    start = input._offset
    if offset >= 0:
        length = max(min(input._shape[d1], input._shape[d2] - offset), 0)
        start += offset * input._stride[d2] if length else 0
    else:
        length = max(min(input._shape[d1] + offset, input._shape[d2]), 0)
        start -= offset * input._stride[d1] if length else 0
    keep = [i for i in range(n) if i not in (d1, d2)]
    shape = tuple(input._shape[i] for i in keep) + (length,)
    stride = tuple(input._stride[i] for i in keep) + (input._stride[d1] + input._stride[d2],)
    return shape, stride, start


_diagonal_op = _view_kernel("diagonal", _diagonal_geometry)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """View of the ``offset``-th diagonal of dims ``dim1``/``dim2`` as the last dim (``torch.diagonal``)."""
    return _diagonal_op(input, offset, dim1, dim2)


def split(input: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Views of consecutive pieces along ``dim``: equal pieces of a size, or the given sizes."""
    n = input.dim()
    if n == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = wrap_dim(dim, n, "split")
    length = input._shape[dim]
    if isinstance(split_size_or_sections, numbers.Integral):
        size = int(split_size_or_sections)
        if size <= 0 and length:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {length}")
        sizes = [size] * (length // size) + ([length % size] if length % size else []) if size else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != length:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {length} (input tensor's "
                               f"size at dimension {dim}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(input, dim, start, s))
        start += s
    return tuple(out)


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """Split into ``n`` nearly equal pieces, or at the given indices (``torch.tensor_split``)."""
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    dim = wrap_dim(dim, input.dim(), "tensor_split")
    length = input._shape[dim]
    if isinstance(indices_or_sections, numbers.Integral):
        n = int(indices_or_sections)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(length, n)
        sizes = [q + 1] * r + [q] * (n - r)
    else:
        bounds = [0] + [min(max(int(i), 0), length) for i in indices_or_sections] + [length]
        sizes = [max(b - a, 0) for a, b in zip(bounds, bounds[1:])]
        starts = bounds[:-1]
        return tuple(narrow(input, dim, min(s, length), z) for s, z in zip(starts, sizes))
    return split(input, sizes, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """At most ``chunks`` views of equal size (the last may be smaller) along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    dim = wrap_dim(dim, input.dim(), "chunk")
    length = input._shape[dim]
    size = max(-(-length // chunks), 1) if length else 1
    return split(input, size, dim) if length else split(input, [0] * chunks, dim)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """Views of every slice along ``dim``, with ``dim`` removed."""
    if input.dim() == 0:
        raise IndexError("unbind(): Dimension specified as 0 but tensor has no dimensions")
    dim = wrap_dim(dim, input.dim(), "unbind")
    return tuple(select(input, dim, i) for i in range(input._shape[dim]))


def movedim(input: Tensor, source, destination) -> Tensor:
    """Move dims from ``source`` to ``destination`` positions (a view)."""
    n = input.dim()
    src = wrap_dims(source, n, "movedim")
    dst = wrap_dims(destination, n, "movedim")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    if n == 0:
        return alias(input)
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    order = [o if o is not None else next(rest) for o in order]
    return permute(input, order)


moveaxis = movedim


def _alias_geometry(input):
    """A view of the whole tensor (``x[:]``, ``x[...]``): same shape, strides and offset."""
    return input._shape, input._stride, input._offset


alias = _view_kernel("alias", _alias_geometry)


def _view_as_real_geometry(input):
    """A complex tensor's real and imaginary parts as a trailing dim of 2 (a real-dtype view)."""
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return (input._shape + (2,), tuple(2 * s for s in input._stride) + (1,), 2 * input._offset,
            input.dtype.to_real())


def _view_as_complex_geometry(input):
    """A float tensor whose last dim of 2 holds (real, imag) pairs, viewed as complex with that dim dropped."""
    if input.dtype not in (dt.float32, dt.float64):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {dt.legacy_name(input.dtype)}")
    if not input._shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input._shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input._stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in input._stride[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return (input._shape[:-1], tuple(s // 2 for s in input._stride[:-1]), input._offset // 2,
            input.dtype.to_complex())


_view_as_real = _dtype_view_kernel("view_as_real", _view_as_real_geometry)
_view_as_complex = _dtype_view_kernel("view_as_complex", _view_as_complex_geometry)


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor viewed as real with a trailing dim of 2 holding (real, imag) (``torch.view_as_real``)."""
    return _view_as_real(input)


def view_as_complex(input: Tensor) -> Tensor:
    """A float tensor with a last dim of 2 (stride 1) viewed as complex (``torch.view_as_complex``)."""
    return _view_as_complex(input)


def view_as_real_copy(input: Tensor) -> Tensor:
    """A contiguous copy of ``view_as_real(input)`` (``torch.view_as_real_copy``)."""
    return _view_as_real(input).clone()


def view_as_complex_copy(input: Tensor) -> Tensor:
    """A copy of ``view_as_complex(input)`` with its own storage (``torch.view_as_complex_copy``)."""
    return _view_as_complex(input).clone()


def real(input: Tensor) -> Tensor:
    """The real part of a complex tensor as a view (writes go through); a real ``input`` itself (``torch.real``)."""
    return select(_view_as_real(input), -1, 0) if input.is_complex() else input


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor as a view (writes go through) (``torch.imag``)."""
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return select(_view_as_real(input), -1, 1)


METHODS = {"view": view, "view_as": view_as, "reshape": reshape, "reshape_as": documented(
    "``self`` reshaped to ``other``'s shape (``torch.Tensor.reshape_as``).", lambda s, o: reshape(s, o._shape)),
           "transpose": transpose, "swapaxes": swapaxes, "swapdims": swapdims, "permute": permute, "t": t,
           "expand": expand, "expand_as": expand_as, "select": select, "narrow": narrow, "squeeze": squeeze,
           "unsqueeze": unsqueeze, "flatten": flatten, "unflatten": unflatten, "unfold": unfold,
           "as_strided": as_strided, "diagonal": diagonal, "chunk": chunk, "split": split,
           "tensor_split": tensor_split, "unbind": unbind, "movedim": movedim, "moveaxis": moveaxis}
