"""Sliding windows over spatial dims, shared by the convolution and pooling ops and their ``nn.functional`` wrappers.

A window view is ``Tensor.unfold`` per spatial dim (or a plain reshape when the windows tile the input); im2col lays
the windows out as columns; col2im adds columns back into a plane with strided adds. Inputs are batched
``(N, C, *spatial)``.
"""

from __future__ import annotations

import math

from .. import dtypes as dt
from .creation import full, tensor, zeros

__all__: list = []


def prod(values) -> int:
    """Product of a sequence of ints (1 when empty)."""
    return math.prod(values)


def row_major(sizes) -> tuple:
    """Contiguous strides, in elements, of a tensor of shape ``sizes``."""
    strides, acc = [], 1
    for n in reversed(sizes):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def pad_constant(x, pads, value):
    """``x`` with ``pads[i] = (before, after)`` added to its last ``len(pads)`` dims; negative amounts crop."""
    lead = x.dim() - len(pads)
    spatial = x.shape[lead:]
    if any(l < 0 or r < 0 for l, r in pads):
        for n, (l, r) in zip(spatial, pads):
            if n + min(l, 0) + min(r, 0) < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        x = x[(slice(None),) * lead + tuple(slice(-min(l, 0), n + min(r, 0)) for n, (l, r) in zip(spatial, pads))]
        spatial = x.shape[lead:]
        pads = [(max(l, 0), max(r, 0)) for l, r in pads]
    if not any(l or r for l, r in pads):
        return x
    shape = tuple(x.shape[:lead]) + tuple(n + l + r for n, (l, r) in zip(spatial, pads))
    out = full(shape, value, dtype=x.dtype, device=x.device)
    out[(slice(None),) * lead + tuple(slice(l, l + n) for n, (l, _) in zip(spatial, pads))] = x
    return out


def windows(x, kernel, stride, dilation):
    """A view ``(N, C, *out, *kernel)`` of every window over x's spatial dims (2..), and ``out``."""
    nd = len(kernel)
    spatial = x.shape[2:]
    out = tuple((n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(spatial, kernel, stride, dilation))
    if tuple(stride) == tuple(kernel) and all(d == 1 for d in dilation):
        # windows that tile the input are a reshape of it, whose gradient is a reshape too (no scatter)
        if any(o * k != n for o, k, n in zip(out, kernel, spatial)):
            x = x[(slice(None), slice(None)) + tuple(slice(0, o * k) for o, k in zip(out, kernel))]
        split = x.reshape(tuple(x.shape[:2]) + tuple(v for o, k in zip(out, kernel) for v in (o, k)))
        return split.permute((0, 1) + tuple(range(2, 2 + 2 * nd, 2)) + tuple(range(3, 3 + 2 * nd, 2))), out
    for i, (k, s, d) in enumerate(zip(kernel, stride, dilation)):
        x = x.unfold(2 + i, d * (k - 1) + 1, s)
        if d > 1:
            x = x[..., ::d]
    return x, out


def columns(x, kernel, stride, dilation):
    """im2col: ``(N, C * prod(kernel), L)`` with the kernel offsets minor to the channel, and the out sizes."""
    nd = len(kernel)
    view, out = windows(x, kernel, stride, dilation)
    order = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    cols = view.permute(order).reshape(x.shape[0], x.shape[1] * prod(kernel), prod(out))
    return cols, out


def col2im(cols, channels, grid, output_size, kernel, dilation, padding, stride):
    """col2im: sum ``cols (N, C * prod(kernel), prod(grid))`` into ``(N, C, *output_size)``, as ``fold``.

    One spatial dim at a time, last first, each kernel offset's block is added into a strided run of positions
    (as unfold's derivative does): sum(kernel) strided adds, no scatter (NumPy runs those element by element).
    """
    n, nd = cols.shape[0], len(kernel)
    padded = tuple(max(o + 2 * p, (g - 1) * s + d * (k - 1) + 1)
                   for o, p, g, s, d, k in zip(output_size, padding, grid, stride, dilation, kernel))
    x = cols.reshape((n, channels) + tuple(kernel) + tuple(grid))  # (N, C, k_0.., g_0.., P_i+1..) as dims fold
    for i in reversed(range(nd)):
        axis = 2 + 2 * i  # where dim i's positions sit once its kernel axis (2 + i) is selected away
        shape = tuple(x.shape[:2 + i]) + tuple(x.shape[3 + i:3 + 2 * i]) + (padded[i],) + tuple(x.shape[4 + 2 * i:])
        out = zeros(shape, dtype=cols.dtype, device=cols.device)
        for j in range(kernel[i]):
            run = slice(j * dilation[i], j * dilation[i] + stride[i] * (grid[i] - 1) + 1, stride[i])
            out[(slice(None),) * axis + (run,)].add_(x.select(2 + i, j))
        x = out
    if padded != tuple(output_size):
        crop = tuple(slice(p, p + o) for p, o in zip(padding, output_size))
        x = x[(slice(None), slice(None)) + crop].contiguous()
    return x


def table_from(per_dim, spatial, device):
    """Combine per-dim coordinates ``[window][offset]`` into an (L, K) table of flat positions in the input plane."""
    table = [[0]]
    for coords, step in zip(per_dim, row_major(spatial)):
        table = [[a + b * step for a in row for b in coords[w]] for row in table for w in range(len(coords))]
    return tensor(table, dtype=dt.int64, device=device)
