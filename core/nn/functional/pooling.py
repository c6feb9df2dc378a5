"""Pooling functionals (``torch.nn.functional``): max, average and adaptive pooling over 1, 2 or 3 spatial dims.

``max_poolNd`` and ``avg_poolNd`` check PyTorch's arguments and call the ``max_pool`` and ``avg_pool`` ops (declared,
with their decompositions and backward ops, in ``core/ops/pooling.py``; their derivatives are in
``core/ops/derivatives.py``) on a batched input with normalised tuple arguments. The indices variants and adaptive
pooling are written here in Tensor ops: adaptive average pooling multiplies by small per-dim averaging matrices,
adaptive max pooling gathers each window's candidates through a cached index table.
"""

from __future__ import annotations

import functools

import numpy as np

from ... import dtypes as dt, ops
from ...autograd import no_grad
from ...ops._windows import prod, table_from, windows
from ...ops.pooling import avg_pool as avg_pool_op, gather_max, max_pool as max_pool_op, max_pool_with_indices, \
    pool_out_size
from ._utils import batch, ntuple, unbatch

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]

_WORDS = {1: "one", 2: "two", 3: "three"}


def _pool_tuple(value, n: int, op: str, name: str) -> tuple:
    values = ntuple(value, n)
    if values is None:
        word = _WORDS[n]
        raise RuntimeError(f"{op}: {name} must either be a single int, or a tuple of {word} ints"
                           if n > 1 else f"{op}: {name} must be a single int")
    return values


def _pool_geometry(op, nd, x, kernel_size, stride, padding, dilation, ceil_mode):
    """Checked (kernel, stride, padding, dilation, out) of a max/avg pool."""
    kernel = _pool_tuple(kernel_size, nd, op, "kernel_size")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _pool_tuple(stride, nd, op, "stride")
    padding = _pool_tuple(padding, nd, op, "padding")
    dilation = _pool_tuple(dilation, nd, op, "dilation")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel_size should be greater than zero, but got {list(kernel)}")
    if any(d <= 0 for d in dilation):
        names = ("dilationT", "dilationH", "dilationW")[3 - nd:]
        raise RuntimeError("dilation should be greater than zero, but got "
                           + " ".join(f"{name}: {d}" for name, d in zip(names, dilation)))
    for k, p, d in zip(kernel, padding, dilation):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    spatial = tuple(x.shape[2:])
    out = tuple(pool_out_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (x.shape[1],) + spatial))}). Calculated output "
                           f"size: ({'x'.join(map(str, (x.shape[1],) + out))}). Output size is too small")
    return kernel, stride, padding, dilation, out


def _max_pool(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, batched = batch(input, nd, lambda: f"{op}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch "
                                          f"size for input, but got:{list(input.shape)}" if nd == 1 else
                       f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    kernel, stride, padding, dilation, _ = _pool_geometry(op, nd, x, kernel_size, stride, padding, dilation,
                                                          ceil_mode)
    if not return_indices:
        return unbatch(max_pool_op(x, kernel, stride, padding, dilation, bool(ceil_mode)), batched)
    values, indices = max_pool_with_indices(x, kernel, stride, padding, dilation, bool(ceil_mode))
    return unbatch(values, batched), unbatch(indices, batched)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of ``(N, C, L)`` (``torch.nn.functional.max_pool1d``)."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of ``(N, C, H, W)``; indices are flat positions in each input plane."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of ``(N, C, D, H, W)`` (``torch.nn.functional.max_pool3d``)."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """:func:`max_pool1d` returning ``(values, indices)``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """:func:`max_pool2d` returning ``(values, indices)``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """:func:`max_pool3d` returning ``(values, indices)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_pool(op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for input to {op}, but got "
                           f"{input.dim()}-dimensional tensor of size {list(input.shape)}")
    x, batched = batch(input, nd, lambda: "")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    kernel, stride, padding, _, _ = _pool_geometry(op, nd, x, kernel_size, stride, padding, 1, ceil_mode)
    result = avg_pool_op(x, kernel, stride, padding, bool(ceil_mode), bool(count_include_pad), divisor_override)
    return unbatch(result, batched)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of ``(N, C, L)`` (``torch.nn.functional.avg_pool1d``)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for avg_pool1d)")
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding windows of ``(N, C, H, W)`` (``torch.nn.functional.avg_pool2d``)."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding windows of ``(N, C, D, H, W)`` (``torch.nn.functional.avg_pool3d``)."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


# -- adaptive pooling -------------------------------------------------------------------------------------------------

def _adaptive_setup(op, nd, input, output_size):
    """Batched input, whether it was batched, and the output sizes (None keeps the input's size)."""
    if input.dim() not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
                               f"#1 'self' (while checking arguments for {op})")
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")
    first = input.dim() - nd
    for d in range(1, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {d} being empty")
    sizes = (output_size,) * nd if output_size is None or isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != nd:
        if nd == 1:
            raise RuntimeError(f"{op}() argument 'output_size' should contain one int (got {len(sizes)})")
        raise RuntimeError(f"{op}(): internal error: output_size.size() must be {nd}")
    sizes = tuple(input.shape[first + i] if s is None else int(s) for i, s in enumerate(sizes))
    x, batched = batch(input, nd, lambda: "")
    return x, batched, sizes


def _adaptive_bounds(n: int, o: int) -> list:
    """PyTorch's adaptive windows: [floor(i*n/o), ceil((i+1)*n/o))."""
    return [((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]


@functools.lru_cache(maxsize=128)
def _adaptive_matrix(n: int, o: int, dtype, device):
    """(o, n): row i averages input window i."""
    rows = []
    for start, end in _adaptive_bounds(n, o):
        rows.append([1.0 / (end - start) if start <= j < end else 0.0 for j in range(n)])
    return ops.tensor(rows, dtype=dtype, device=device)


def along(x, dim: int, matrix):
    """Contract dim ``dim`` of ``x`` with ``matrix (out, in)``: ``out`` takes the place of ``in``."""
    shape = tuple(x.shape)
    if dim == len(shape) - 1:
        return ops.matmul(x, matrix.t())
    rest = prod(shape[dim + 1:])
    y = ops.matmul(matrix, x.reshape(shape[:dim] + (shape[dim], rest)))
    return y.reshape(shape[:dim] + (matrix.shape[0],) + shape[dim + 1:])


def adaptive_avg_pool(op, nd, input, output_size):
    x, batched, out = _adaptive_setup(op, nd, input, output_size)
    spatial = tuple(x.shape[2:])
    if any(o == 0 for o in out):
        return unbatch(ops.zeros(tuple(x.shape[:2]) + out, dtype=x.dtype, device=x.device), batched)
    if all(n % o == 0 for n, o in zip(spatial, out)):  # equal windows that tile the input
        kernel = tuple(n // o for n, o in zip(spatial, out))
        view, _ = windows(x, kernel, kernel, (1,) * nd)
        return unbatch(view.mean(tuple(range(-nd, 0))), batched)
    for i, (n, o) in enumerate(zip(spatial, out)):
        if n != o:
            x = along(x, 2 + i, _adaptive_matrix(n, o, x.dtype, str(x.device)))
    return unbatch(x, batched)


def adaptive_avg_pool1d(input, output_size):
    """Average over ``output_size`` adaptive windows of ``(N, C, L)`` (``F.adaptive_avg_pool1d``)."""
    return adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Average over adaptive windows of ``(N, C, H, W)``; None in output_size keeps that size."""
    return adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """Average over adaptive windows of ``(N, C, D, H, W)`` (``F.adaptive_avg_pool3d``)."""
    return adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size)


@functools.lru_cache(maxsize=128)
def _adaptive_table(spatial, out, device):
    """(L, Kmax) flat input positions of each adaptive window, short windows repeating their last position."""
    per_dim = []
    for n, o in zip(spatial, out):
        bounds = _adaptive_bounds(n, o)
        width = max(end - start for start, end in bounds)
        per_dim.append([[min(start + j, end - 1) for j in range(width)] for start, end in bounds])
    return table_from(per_dim, spatial, device)


def _adaptive_max_pool(op, nd, input, output_size, return_indices):
    x, batched, out = _adaptive_setup(op, nd, input, output_size)
    table = _adaptive_table(tuple(x.shape[2:]), out, str(x.device))
    n, c = x.shape[0], x.shape[1]
    flat = x.reshape(n, c, prod(x.shape[2:]))
    with no_grad():
        candidates = ops.index_select(flat, 2, table.reshape(-1)).reshape(n, c, table.shape[0], table.shape[1])
    values, indices = gather_max(x, candidates, table, out, return_indices)
    if return_indices:
        return unbatch(values, batched), unbatch(indices, batched)
    return unbatch(values, batched)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over adaptive windows of ``(N, C, L)`` (``F.adaptive_max_pool1d``)."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over adaptive windows of ``(N, C, H, W)``; indices are flat positions in each input plane."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over adaptive windows of ``(N, C, D, H, W)`` (``F.adaptive_max_pool3d``)."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool1d` returning ``(values, indices)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool2d` returning ``(values, indices)``."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool3d` returning ``(values, indices)``."""
    return adaptive_max_pool3d(input, output_size, True)


# -- power-average and unpooling (Tensor ops over the pooling functionals) --------------------------------------------

def _lp_pool(nd: int, average, input, norm_type: float, kernel_size, stride, ceil_mode: bool):
    """(sum over each window of x^p)^(1/p), as PyTorch: average pooling of x^p times the window size."""
    kernel = ntuple(kernel_size, nd)
    out = average(input.pow(norm_type), kernel, stride, 0, ceil_mode)
    return (ops.sign(out) * ops.relu(ops.abs(out))).mul(prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """The p-norm of sliding windows of ``(N, C, L)`` (``torch.nn.functional.lp_pool1d``)."""
    return _lp_pool(1, avg_pool1d, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """The p-norm of sliding windows of ``(N, C, H, W)`` (``torch.nn.functional.lp_pool2d``)."""
    return _lp_pool(2, avg_pool2d, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """The p-norm of sliding windows of ``(N, C, D, H, W)`` (``torch.nn.functional.lp_pool3d``)."""
    return _lp_pool(3, avg_pool3d, input, norm_type, kernel_size, stride, ceil_mode)


def _unpool_output_size(nd: int, spatial, kernel, stride, padding, output_size) -> list:
    """The default (in - 1) * stride - 2 * padding + kernel per dim, or ``output_size`` checked against it."""
    default = [(n - 1) * s - 2 * p + k for n, s, p, k in zip(spatial, stride, padding, kernel)]
    if output_size is None:
        return default
    output_size = [int(n) for n in output_size]
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d in range(nd):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
    return output_size


def _max_unpool(nd: int, input, indices, kernel_size, stride, padding, output_size):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"max_unpool{nd}d: Expected input to be {nd + 1}D or {nd + 2}D, but got "
                           f"{input.dim()}D")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    x, batched = batch(input, nd, lambda: "")
    index = indices if batched else indices.unsqueeze(0)
    kernel = ntuple(kernel_size, nd)
    stride = ntuple(stride if stride is not None else kernel_size, nd)
    size = _unpool_output_size(nd, x.shape[2:], kernel, stride, ntuple(padding, nd), output_size)
    n, c = x.shape[:2]
    flat = ops.zeros(n, c, prod(size), dtype=x.dtype, device=x.device)
    out = flat.scatter(2, index.reshape(n, c, -1), x.reshape(n, c, -1)).reshape(n, c, *size)
    return unbatch(out, batched)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Each value put back at the position ``max_pool1d``'s ``indices`` name, zeros elsewhere
    (``torch.nn.functional.max_unpool1d``)."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Each value put back at the position ``max_pool2d``'s ``indices`` name, zeros elsewhere
    (``torch.nn.functional.max_unpool2d``)."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Each value put back at the position ``max_pool3d``'s ``indices`` name, zeros elsewhere
    (``torch.nn.functional.max_unpool3d``)."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


# -- fractional max pooling (Graham): pseudo-random window starts from one uniform sample per plane and dim ----------

def _fractional_starts(sample, size: int, out: int, kernel: int, dtype) -> list:
    """ATen's generate_intervals: window starts from ``sample`` in [0, 1), computed in the input's float type."""
    if out <= 0:
        return []
    starts = []
    if out > 1:
        alpha = dtype(size - kernel) / dtype(out - 1)
        starts = [int(dtype(i + sample) * alpha) - int(dtype(sample) * alpha) for i in range(out - 1)]
    return starts + [size - kernel]


def _fractional_max_pool(nd: int, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    op = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    x, batched = batch(input, nd, lambda: f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                                          f"{list(input.shape)}")
    n, c, spatial = x.shape[0], x.shape[1], list(x.shape[2:])
    kernel = ntuple(kernel_size, nd)
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * nd
        output_size = [int(s * r) for s, r in zip(spatial, ratio)]
    out = ntuple(output_size, nd)
    for name, size, o, k in zip(("time", "height", "width")[3 - nd:], spatial, out, kernel):
        if o + k - 1 > size:
            raise RuntimeError(f"{op}_out(): pool {name} {k} too large relative to input {name} {size}")
    samples = ops.rand(n, c, nd, dtype=x.dtype, device=x.device) if _random_samples is None else _random_samples
    float_type = np.float32 if x.dtype.itemsize <= 4 else np.float64
    order = [1, 0] if nd == 2 else [0, 1, 2]  # ATen: the 2-d samples are (width, height), the 3-d (time, h, w)
    strides = [int(np.prod(spatial[d + 1:])) for d in range(nd)]
    offsets = np.zeros(tuple(kernel), dtype=np.int64)
    for d in range(nd):
        offsets = offsets + (np.arange(kernel[d]) * strides[d]).reshape([-1 if e == d else 1 for e in range(nd)])
    positions = np.zeros((n, c) + tuple(out) + (offsets.size,), dtype=np.int64)
    for b, planes in enumerate(samples.detach().cpu().tolist()):
        for ch, plane in enumerate(planes):
            grid = np.zeros(tuple(out), dtype=np.int64)
            for d in range(nd):
                starts = np.array(_fractional_starts(plane[order[d]], spatial[d], out[d], kernel[d], float_type))
                grid = grid + (starts * strides[d]).reshape([-1 if e == d else 1 for e in range(nd)])
            positions[b, ch] = grid[..., None] + offsets.reshape(-1)
    index = ops.tensor(positions, dtype=dt.int64, device=x.device)
    windows = ops.gather(x.reshape(n, c, -1), 2, index.reshape(n, c, -1)).reshape(tuple(positions.shape))
    values, which = windows.max(dim=-1)
    indices = ops.gather(index, -1, which.unsqueeze(-1)).squeeze(-1)
    values, indices = unbatch(values, batched), unbatch(indices, batched)
    return (values, indices) if return_indices else values


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                          _random_samples=None):
    """Max over pseudo-randomly placed ``kernel_size`` windows giving ``output_size`` (or ``output_ratio`` of the
    input size) over (N, C, H, W) (``torch.nn.functional.fractional_max_pool2d``)."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                          _random_samples=None):
    """Max over pseudo-randomly placed ``kernel_size`` windows giving ``output_size`` (or ``output_ratio`` of the
    input size) over (N, C, T, H, W) (``torch.nn.functional.fractional_max_pool3d``)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """(values, indices) of :func:`fractional_max_pool2d`."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """(values, indices) of :func:`fractional_max_pool3d`."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, True, _random_samples)
