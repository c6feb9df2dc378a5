"""Pooling: the ``max_pool`` and ``avg_pool`` ops and their one-node derivatives ``max_pool_backward`` and
``avg_pool_backward``.

All four are composites over batched ``(N, C, *spatial)`` inputs with normalised tuple arguments (the
``F.*pool*d`` wrappers in ``core/nn/functional/pooling.py`` check PyTorch's arguments and call them); backends
may fuse them (cpu_c does). Max pooling's gradient reaches one element per window, its first maximum (NaN counts
as the maximum), as in PyTorch. Index tables depend only on the sizes, so they are built once per geometry and
device and cached. The derivative formulas are in ``core/ops/derivatives.py``.
"""

from __future__ import annotations

import functools
import math

from .. import dtypes as dt
from ..dispatch.keys import grad_disabled, is_grad_enabled
from ..dispatch import define
from ._windows import pad_constant, prod, table_from, windows
from .creation import tensor, zeros
from .elementwise import div, where
from .indexing import gather, scatter_add

__all__: list = []
METHODS: dict = {}


def pool_out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: the last window must start inside the input or its left padding."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_out(x, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    return tuple(pool_out_size(n, k, s, p, d, ceil_mode)
                 for n, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation))


def _lowest(dtype):
    if dtype == dt.bool:
        return False
    return -math.inf if dtype.is_floating_point else dt.iinfo(dtype).min


@functools.lru_cache(maxsize=128)
def window_table(spatial, kernel, stride, padding, dilation, out, device):
    """(L, K): the flat input-plane position of offset k of window l (clamped inside the input)."""
    per_dim = []
    for n, k, s, p, d, o in zip(spatial, kernel, stride, padding, dilation, out):
        per_dim.append([[min(max(w * s - p + j * d, 0), n - 1) for j in range(k)] for w in range(o)])
    return table_from(per_dim, spatial, device)


def _window_argmax(candidates, table, lowest):
    """(flat input-plane position of each window's max (N, C, L), windows holding only ``lowest``) of
    ``candidates (N, C, L, K)``: the first maximum wins and NaN counts as the maximum, as in PyTorch."""
    n, c = candidates.shape[0], candidates.shape[1]
    with grad_disabled():
        position = candidates.argmax(-1, keepdim=True)
        flat = gather(table.expand(n, c, table.shape[0], table.shape[1]), 3, position).reshape(n, c, table.shape[0])
        # a window that lies wholly in the padding holds only the lowest value, as in PyTorch
        empty = gather(candidates, 3, position).reshape(n, c, table.shape[0]) == lowest
    return flat, empty


def gather_max(x, candidates, table, out, return_indices: bool):
    """Max over ``candidates (N, C, L, K)``; with gradients or indices, gather it from ``x`` at its argmax."""
    n, c = x.shape[0], x.shape[1]
    if not return_indices and not (x.requires_grad and is_grad_enabled()):
        return candidates.amax(-1).reshape((n, c) + out), None
    lowest = _lowest(x.dtype)
    flat, empty = _window_argmax(candidates, table, lowest)
    values = gather(x.reshape(n, c, prod(x.shape[2:])), 2, flat)  # the gradient reaches one element per window
    values = where(empty, lowest, values) if bool(empty.any()) else values
    return values.reshape((n, c) + out), flat.reshape((n, c) + out)


def _pool_windows(x, kernel, stride, padding, dilation, out, fill):
    """The ``(N, C, *out, *kernel)`` windows of a pool over ``x``, padded with ``fill``: left by padding, right as
    far as ceil_mode's last window reaches."""
    pads = [(p, max((o - 1) * s + d * (k - 1) + 1 - n - p, 0))
            for n, k, s, p, d, o in zip(x.shape[2:], kernel, stride, padding, dilation, out)]
    padded = pad_constant(x, pads, fill) if any(l or r for l, r in pads) else x
    view, _ = windows(padded, kernel, stride, dilation)
    view = view[(slice(None),) * 2 + tuple(slice(0, o) for o in out)] \
        if tuple(view.shape[2:2 + len(out)]) != out else view
    return view


# -- max pooling ----------------------------------------------------------------------------------------------------

def _max_pool_candidates(x, kernel, stride, padding, dilation, ceil_mode):
    """(windows as ``(N, C, L, K)`` candidates padded with the lowest value, out sizes) of a max pool."""
    out = _pool_out(x, kernel, stride, padding, dilation, ceil_mode)
    view = _pool_windows(x, kernel, stride, padding, dilation, out, _lowest(x.dtype))
    return view.reshape(x.shape[0], x.shape[1], prod(out), prod(kernel)), out


def max_pool_with_indices(x, kernel, stride, padding, dilation, ceil_mode):
    """(values, indices) of a max pool over the batched ``x`` with checked geometry (op by op under autograd):
    the indices variant is not an op."""
    candidates, out = _max_pool_candidates(x, kernel, stride, padding, dilation, ceil_mode)
    table = window_table(tuple(x.shape[2:]), kernel, stride, padding, dilation, out, str(x.device))
    return gather_max(x, candidates, table, out, True)


def _max_pool_values(input, kernel_size, stride, padding, dilation, ceil_mode):
    # max_pool has its own derivative: this runs without autograd, so no argmax is needed
    candidates, out = _max_pool_candidates(input, kernel_size, stride, padding, dilation, ceil_mode)
    return candidates.amax(-1).reshape(tuple(input.shape[:2]) + out)


max_pool = define(
    "max_pool", decomposition=_max_pool_values,
    doc="max_pool(input, kernel_size, stride, padding, dilation, ceil_mode): max over the sliding windows of a "
        "batched (N, C, *spatial) input; kernel_size, stride, padding (implicit -inf) and dilation are tuples of nd "
        "ints (nd = 1, 2 or 3). Values only (the indices variant is not an op). A composite that backends may fuse")


def _max_pool_backward_parts(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode):
    """Each window's gradient added to its argmax in the input (none for windows wholly in the padding); a
    scatter-add, so it is differentiable in grad_output (double backward)."""
    n, c = input.shape[0], input.shape[1]
    with grad_disabled():
        candidates, out = _max_pool_candidates(input, kernel_size, stride, padding, dilation, ceil_mode)
    table = window_table(tuple(input.shape[2:]), kernel_size, stride, padding, dilation, out, str(input.device))
    flat, empty = _window_argmax(candidates, table, _lowest(input.dtype))
    g = grad_output.reshape(n, c, prod(out))
    # the test skips a where in the common case; meta tensors have no values to test, so they take the where
    g = where(empty, 0, g) if empty.device.type == "meta" or bool(empty.any()) else g
    grad = zeros((n, c, prod(input.shape[2:])), dtype=grad_output.dtype, device=grad_output.device)
    return scatter_add(grad, 2, flat, g).reshape(input.shape)


max_pool_backward = define(
    "max_pool_backward", decomposition=_max_pool_backward_parts,
    doc="max_pool_backward(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode): the gradient "
        "of max_pool, each window's grad_output added to the input position of its first maximum (NaN counts as "
        "the maximum). A composite (argmax and scatter-add) that backends may fuse")


# -- average pooling ------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=128)
def _avg_divisor(spatial, kernel, stride, padding, out, count_include_pad: bool, dtype, device):
    """Per-window divisors (PyTorch's rule: windows count padding but not what lies beyond it), or None if all K."""
    per_dim = []
    for n, k, s, p, o in zip(spatial, kernel, stride, padding, out):
        sizes = []
        for w in range(o):
            start = w * s - p
            end = min(start + k, n + p)
            sizes.append(end - start if count_include_pad else min(end, n) - max(start, 0))
        per_dim.append(sizes)
    divisors = [1]
    for sizes in per_dim:
        divisors = [a * b for a in divisors for b in sizes]
    if all(v == prod(kernel) for v in divisors):
        return None
    return tensor(divisors, dtype=dtype, device=device).reshape(out)


def _avg_divisor_of(input, kernel_size, stride, padding, out, count_include_pad, divisor_override):
    """What each window's sum is divided by: divisor_override, a per-window tensor of shape ``out``, or K."""
    if divisor_override is not None:
        return divisor_override
    divisor = _avg_divisor(tuple(input.shape[2:]), kernel_size, stride, padding, out, count_include_pad,
                           input.dtype if input.dtype.is_floating_point else dt.int64, str(input.device))
    return prod(kernel_size) if divisor is None else divisor


def _avg_pool_parts(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    nd = len(kernel_size)
    out = _pool_out(input, kernel_size, stride, padding, (1,) * nd, ceil_mode)
    view = _pool_windows(input, kernel_size, stride, padding, (1,) * nd, out, 0)
    dims = tuple(range(-nd, 0))
    floating = input.dtype.is_floating_point
    divisor = _avg_divisor_of(input, kernel_size, stride, padding, out, count_include_pad, divisor_override)
    if floating and divisor_override is None and not hasattr(divisor, "shape"):
        return view.mean(dims)
    total = view.sum(dims)
    return total / divisor if floating else div(total, divisor, rounding_mode="trunc").to(input.dtype)


avg_pool = define(
    "avg_pool", decomposition=_avg_pool_parts,
    doc="avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override): mean over "
        "the sliding windows of a batched (N, C, *spatial) input; kernel_size, stride and padding (zeros) are "
        "tuples of nd ints (nd = 1, 2 or 3); divisor_override is None or a non-zero number. A composite that "
        "backends may fuse")


def _avg_pool_backward_parts(grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                             divisor_override):
    """avg_pool is linear: each window's grad_output over its divisor is added to every position of the window in
    the padded plane, and the padding is cropped. A scatter-add, so it is differentiable in grad_output."""
    nd = len(kernel_size)
    n, c, spatial = input.shape[0], input.shape[1], tuple(input.shape[2:])
    out = _pool_out(input, kernel_size, stride, padding, (1,) * nd, ceil_mode)
    padded = tuple(p + size + max((o - 1) * s + k - size - p, 0)
                   for size, k, s, p, o in zip(spatial, kernel_size, stride, padding, out))
    per_dim = [[[w * s + j for j in range(k)] for w in range(o)] for k, s, o in zip(kernel_size, stride, out)]
    table = table_from(per_dim, padded, str(input.device))  # (L, K) positions in the padded plane
    lk = table.shape[0] * table.shape[1]
    g = grad_output / _avg_divisor_of(input, kernel_size, stride, padding, out, count_include_pad, divisor_override)
    g = g.reshape(n, c, table.shape[0], 1).expand(n, c, table.shape[0], table.shape[1]).reshape(n, c, lk)
    grad = zeros((n, c, prod(padded)), dtype=g.dtype, device=g.device)
    grad = scatter_add(grad, 2, table.reshape(1, 1, lk).expand(n, c, lk), g).reshape((n, c) + padded)
    return grad[(slice(None),) * 2 + tuple(slice(p, p + size) for p, size in zip(padding, spatial))]


avg_pool_backward = define(
    "avg_pool_backward", decomposition=_avg_pool_backward_parts,
    doc="avg_pool_backward(grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad, "
        "divisor_override): the gradient of avg_pool, each window's grad_output over its divisor added to the "
        "input positions of the window. A composite (scatter-add) that backends may fuse")
