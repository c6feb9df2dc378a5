"""Convolution, pooling, padding and resizing functionals (``torch.nn.functional``), built from Tensor ops.

Convolution reads its windows as a view (``Tensor.unfold`` per spatial dim, or a plain reshape when the windows
tile the input), lays them out as columns and does ONE (batched, grouped) matmul. Transposed convolution and
``fold`` add columns back into the output plane with strided adds (col2im). Max pooling's gradient reaches one
element per window, its first maximum, as in PyTorch. Resizing with the linear modes multiplies by small per-dim
interpolation matrices. Index tables and matrices depend only on the sizes, so they are built once per geometry
and device (plain Python arithmetic) and cached.

``convolution``, ``max_pool`` and ``avg_pool`` are dispatcher ops on batched inputs with normalised tuple arguments
(one traced node each; a backend may fuse them); the ``F.xxx`` functions check their arguments and call them.
``convolution`` and ``max_pool`` have derivative formulas (one autograd node each) calling the composites
``convolution_backward`` and ``max_pool_backward``, which backends may fuse too.
"""

from __future__ import annotations

import functools
import math
import struct
import warnings

from ... import dtypes as dt, ops
from ...autograd import is_grad_enabled, no_grad
from ...dispatch import define
from ...ops.derivatives import derivative

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "unfold", "fold", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "pad", "interpolate",
           "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle"]

_WORDS = {1: "one", 2: "two", 3: "three"}
_C_TYPES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}


# -- argument helpers ------------------------------------------------------------------------------------------

def _ntuple(value, n: int):
    """``value`` as an n-tuple of ints (an int or a 1-sequence repeats), or None when its length is wrong."""
    if isinstance(value, int):
        return (value,) * n
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * n
    return values if len(values) == n else None


def _conv_tuple(value, n: int, name: str) -> tuple:
    values = _ntuple(value, n)
    if values is None:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {name}={list(value)}")
    return values


def _pool_tuple(value, n: int, op: str, name: str) -> tuple:
    values = _ntuple(value, n)
    if values is None:
        word = _WORDS[n]
        raise RuntimeError(f"{op}: {name} must either be a single int, or a tuple of {word} ints"
                           if n > 1 else f"{op}: {name} must be a single int")
    return values


def _prod(values) -> int:
    return math.prod(values)


def _batch(input, nd: int, message):
    """``input`` with a batch dim (added when it has nd + 1 dims) and whether it had one; ``message()`` otherwise."""
    if input.dim() == nd + 2:
        return input, True
    if input.dim() == nd + 1:
        return input.unsqueeze(0), False
    raise RuntimeError(message())


def _unbatch(out, batched: bool):
    return out if batched else out.squeeze(0)


def _sizes(values) -> str:
    return " x ".join(map(str, values))


def _row_major(sizes) -> tuple:
    strides, acc = [], 1
    for n in reversed(sizes):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def _needs_grad(t) -> bool:
    return t.requires_grad and is_grad_enabled()


# -- views of windows, and their inverse (scatter-add of columns) ---------------------------------------------------

def _windows(x, kernel, stride, dilation):
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


def _columns(x, kernel, stride, dilation):
    """im2col: ``(N, C * prod(kernel), L)`` with the kernel offsets minor to the channel, and the out sizes."""
    nd = len(kernel)
    windows, out = _windows(x, kernel, stride, dilation)
    order = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    cols = windows.permute(order).reshape(x.shape[0], x.shape[1] * _prod(kernel), _prod(out))
    return cols, out


def _col2im(cols, channels, grid, output_size, kernel, dilation, padding, stride):
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
        out = ops.zeros(shape, dtype=cols.dtype, device=cols.device)
        for j in range(kernel[i]):
            run = slice(j * dilation[i], j * dilation[i] + stride[i] * (grid[i] - 1) + 1, stride[i])
            out[(slice(None),) * axis + (run,)].add_(x.select(2 + i, j))
        x = out
    if padded != tuple(output_size):
        crop = tuple(slice(p, p + o) for p, o in zip(padding, output_size))
        x = x[(slice(None), slice(None)) + crop].contiguous()
    return x


# -- padding ------------------------------------------------------------------------------------------------------

def _pad_constant(x, pads, value):
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
    out = ops.full(shape, value, dtype=x.dtype, device=x.device)
    out[(slice(None),) * lead + tuple(slice(l, l + n) for n, (l, _) in zip(spatial, pads))] = x
    return out


@functools.lru_cache(maxsize=256)
def _pad_index(mode: str, n: int, before: int, after: int, device):
    """The source position of every output position of one dim padded by ``mode``."""
    positions = range(-before, n + after)
    if mode == "reflect":
        source = [-j if j < 0 else (2 * (n - 1) - j if j >= n else j) for j in positions]
    elif mode == "replicate":
        source = [min(max(j, 0), n - 1) for j in positions]
    else:  # circular, like PyTorch: crop the negative amounts first, then wrap around what is left
        start, kept = max(-before, 0), n - max(-before, 0) - max(-after, 0)
        if kept <= 0 and (before > 0 or after > 0):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        source = [start + j % kept for j in range(-max(before, 0), kept + max(after, 0))]
    return ops.tensor(source, dtype=dt.int64, device=device)


def pad(input, pad, mode: str = "constant", value=None):
    """Pad the last ``len(pad) // 2`` dims, last dim first (``torch.nn.functional.pad``)."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    npad = len(pad) // 2
    if npad > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(npad))]  # natural dim order
    if mode == "constant":
        return _pad_constant(input, pairs, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if npad > 3 or input.dim() not in (npad + 1, npad + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.")
    first = input.dim() - npad
    if any(n == 0 for n in input.shape[1:]) or (input.dim() == npad + 1 and input.shape[0] == 0):
        raise RuntimeError(f"Expected {npad + 1}D or {npad + 2}D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {list(input.shape)}")
    out = input
    for i, (before, after) in enumerate(pairs):
        dim, n = first + i, input.shape[first + i]
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {dim} of input "
                               f"{list(input.shape)}")
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if before or after:
            out = ops.index_select(out, dim, _pad_index(mode, n, before, after, str(input.device)))
    return out


# -- convolution ----------------------------------------------------------------------------------------------------

def _conv_padding(padding, kernel, stride, dilation) -> list:
    """(before, after) per spatial dim for an int/tuple padding or 'valid'/'same'."""
    nd = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [(t // 2, t - t // 2) for t in totals]
    values = _conv_tuple(padding, nd, "padding")
    if any(p < 0 for p in values):
        raise RuntimeError("negative padding is not supported")
    return [(p, p) for p in values]


def _check_conv(x, weight, bias, groups, transposed: bool) -> None:
    """PyTorch's checks of channels, groups, bias and dtypes (x already batched)."""
    given = "Given transposed=1, " if transposed else "Given "
    if weight.shape[0] == 0 and not transposed:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least 1 at dimension 0, but got weight "
                           f"of size {list(weight.shape)} instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(weight.shape)}] instead")
    expected = weight.shape[0] if transposed else weight.shape[1] * groups
    if x.shape[1] != expected:
        what = "Given transposed=1" if transposed else f"Given groups={groups}"
        raise RuntimeError(f"{what}, weight of size {list(weight.shape)}, expected input{list(x.shape)} to have "
                           f"{expected} channels, but got {x.shape[1]} channels instead")
    out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(f"{given}weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")
    if x.dtype != weight.dtype:
        raise RuntimeError(f"expected scalar type {dt.legacy_name(x.dtype)} but found {dt.legacy_name(weight.dtype)}")
    if bias is not None and bias.dtype != x.dtype:
        raise RuntimeError(f"Input type ({_C_TYPES.get(x.dtype.name, x.dtype.name)}) and bias type "
                           f"({_C_TYPES.get(bias.dtype.name, bias.dtype.name)}) should be the same")


def _add_bias(out, bias, nd: int):
    return out if bias is None else out + bias.reshape((bias.shape[0],) + (1,) * nd)


def _conv_arguments(op: str, nd: int, input, weight, stride, dilation, groups) -> tuple:
    """What every convolution checks first: (batched input, batched flag, kernel, stride, dilation)."""
    x, batched = _batch(input, nd, lambda: f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, "
                                           f"but got input of size: {list(input.shape)}")
    if weight.dim() != nd + 2:
        raise RuntimeError(f"{op}: expected a {nd + 2}-dimensional weight, but got weight of size "
                           f"{list(weight.shape)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    stride = _conv_tuple(stride, nd, "stride")
    dilation = _conv_tuple(dilation, nd, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    return x, batched, tuple(weight.shape[2:]), stride, dilation


def _convolution_parts(input, weight, bias, stride, padding, dilation, groups):
    nd = len(stride)
    x = _pad_constant(input, [(p, p) for p in padding], 0) if any(padding) else input
    n, out_channels = x.shape[0], weight.shape[0]
    cols, out = _columns(x, tuple(weight.shape[2:]), stride, dilation)  # (N, C*K, L)
    if groups == 1:
        result = ops.matmul(weight.reshape(out_channels, cols.shape[1]), cols)  # (N, O, L)
    else:
        cols = cols.reshape(n, groups, cols.shape[1] // groups, cols.shape[2])
        result = ops.matmul(weight.reshape(groups, out_channels // groups, cols.shape[2]), cols)  # (N, G, O/G, L)
    return _add_bias(result.reshape((n, out_channels) + out), bias, nd)


_convolution_op = define(
    "convolution", decomposition=_convolution_parts,
    doc="convolution(input, weight, bias, stride, padding, dilation, groups): N-d cross-correlation of a batched "
        "(N, C, *spatial) input with a (O, C/groups, *kernel) weight; stride, padding (symmetric, zeros) and "
        "dilation are tuples of nd ints (nd = 1, 2 or 3), bias is None or (O,). A composite (im2col and one "
        "matmul) that backends may fuse")


def _convolution_backward_parts(grad_output, input, weight, stride, padding, dilation, groups, output_mask):
    """(grad_input, grad_weight, grad_bias) of :func:`_convolution_parts`, each None where output_mask says so:
    grad_input scatters ``weightᵀ @ grad_output`` back with col2im, grad_weight is ``grad_output @ im2colᵀ``
    summed over the batch. Written in Tensor ops, so it is differentiable itself (double backward)."""
    n, channels, out_channels = input.shape[0], input.shape[1], weight.shape[0]
    kernel, grid = tuple(weight.shape[2:]), tuple(grad_output.shape[2:])
    blocks, per_group = _prod(grid), channels // groups * _prod(kernel)
    g = grad_output.reshape(n, groups, out_channels // groups, blocks)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        w = weight.reshape(groups, out_channels // groups, per_group).transpose(1, 2)  # (G, C/G*K, O/G)
        cols = ops.matmul(w, g).reshape(n, channels * _prod(kernel), blocks)
        grad_input = _col2im(cols, channels, grid, tuple(input.shape[2:]), kernel, dilation, padding, stride)
    if output_mask[1]:
        x = _pad_constant(input, [(p, p) for p in padding], 0) if any(padding) else input
        cols, _ = _columns(x, kernel, stride, dilation)
        cols = cols.reshape(n, groups, per_group, blocks)
        grad_weight = ops.matmul(g, cols.transpose(-1, -2)).sum(0).reshape(weight.shape)  # (G, O/G, C/G*K)
    if output_mask[2]:
        grad_bias = grad_output.sum((0,) + tuple(range(2, grad_output.dim())))
    return grad_input, grad_weight, grad_bias


convolution_backward = define(
    "convolution_backward", decomposition=_convolution_backward_parts,
    doc="convolution_backward(grad_output, input, weight, stride, padding, dilation, groups, output_mask): "
        "(grad_input, grad_weight, grad_bias) of convolution, each None where the 3-bool output_mask is False. "
        "A composite (matmul and col2im, differentiable for double backward) that backends may fuse")


@derivative("convolution")
def _convolution_derivative(ctx, g):
    """One node per convolution: its backward is one op (a fused kernel where the backend has one)."""
    input, weight, bias = ctx.input(0), ctx.input(1), ctx.args[2]
    mask = (input.requires_grad, weight.requires_grad, bias is not None and bias.requires_grad)
    return convolution_backward(g, input, weight, *ctx.args[3:7], mask)


def _split_padding(pads) -> tuple:
    """Symmetric per-dim padding and the extra (0, 1) pads 'same' needs on the right of odd totals."""
    symmetric = tuple(min(l, r) for l, r in pads)
    return symmetric, [(l - p, r - p) for (l, r), p in zip(pads, symmetric)]


def _conv(op: str, nd: int, input, weight, bias, stride, padding, dilation, groups):
    x, batched, kernel, stride, dilation = _conv_arguments(op, nd, input, weight, stride, dilation, groups)
    pads = _conv_padding(padding, kernel, stride, dilation)
    _check_conv(x, weight, bias, groups, transposed=False)
    padded = [n + l + r for n, (l, r) in zip(x.shape[2:], pads)]
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(p < s for p, s in zip(padded, spans)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_sizes(padded)}). Kernel size: "
                           f"({_sizes(spans)}). Kernel size can't be greater than actual input size")
    symmetric, extra = _split_padding(pads)
    if any(r for _, r in extra):
        x = _pad_constant(x, extra, 0)
    return _unbatch(_convolution_op(x, weight, bias, stride, symmetric, dilation, int(groups)), batched)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation over ``(N, C, L)`` or ``(C, L)`` (``torch.nn.functional.conv1d``)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation over ``(N, C, H, W)`` or ``(C, H, W)`` (``torch.nn.functional.conv2d``)."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D cross-correlation over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` (``torch.nn.functional.conv3d``)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op: str, nd: int, input, weight, bias, stride, padding, output_padding, groups, dilation):
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    x, batched, kernel, stride, dilation = _conv_arguments(op, nd, input, weight, stride, dilation, groups)
    padding = _conv_tuple(padding, nd, "padding")
    output_padding = _conv_tuple(output_padding, nd, "output_padding")
    if any(p < 0 for p in padding + output_padding):
        raise RuntimeError("negative padding is not supported")
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        names = ("depth", "height", "width")[3 - nd:]
        parts = [f"{what}_{name}: {v}" for what, values in (("output_padding", output_padding), ("stride", stride),
                                                            ("dilation", dilation))
                 for name, v in zip(names, values)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(parts))
    _check_conv(x, weight, bias, groups, transposed=True)
    grid = tuple(x.shape[2:])
    out = tuple((i - 1) * s - 2 * p + d * (k - 1) + o + 1
                for i, s, p, d, k, o in zip(grid, stride, padding, dilation, kernel, output_padding))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({_sizes(grid)}). Calculated output size per channel: "
                           f"({_sizes(out)}). Output size is too small")
    n, in_channels, out_per_group = x.shape[0], weight.shape[0], weight.shape[1]
    k, blocks = _prod(kernel), _prod(grid)
    if groups == 1:
        w = weight.reshape(in_channels, out_per_group * k).t()  # (O*K, C)
        cols = ops.matmul(w, x.reshape(n, in_channels, blocks))  # (N, O*K, L)
    else:
        w = weight.reshape(groups, in_channels // groups, out_per_group * k).transpose(1, 2)  # (G, O/G*K, C/G)
        cols = ops.matmul(w, x.reshape(n, groups, in_channels // groups, blocks))  # (N, G, O/G*K, L)
    cols = cols.reshape(n, out_per_group * groups * k, blocks)
    result = _col2im(cols, out_per_group * groups, grid, out, kernel, dilation, padding, stride)
    return _unbatch(_add_bias(result, bias, nd), batched)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution (``torch.nn.functional.conv_transpose1d``); weight ``(C_in, C_out/groups, k)``."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution (``torch.nn.functional.conv_transpose2d``)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution (``torch.nn.functional.conv_transpose3d``)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


# -- unfold / fold --------------------------------------------------------------------------------------------------

def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: every sliding block of ``(N, C, H, W)`` as a column of ``(N, C*kh*kw, L)`` (``F.unfold``)."""
    if input.dim() not in (3, 4) or any(n == 0 for n in input.shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    x, batched = _batch(input, 2, lambda: "")
    kernel, dilation = _conv_tuple(kernel_size, 2, "kernel_size"), _conv_tuple(dilation, 2, "dilation")
    padding, stride = _conv_tuple(padding, 2, "padding"), _conv_tuple(stride, 2, "stride")
    blocks = [(n + 2 * p - d * (k - 1) - 1) // s + 1
              for n, p, d, k, s in zip(x.shape[2:], padding, dilation, kernel, stride)]
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding blocks "
                           f"as {tuple(blocks)}, but its components must be at least one.")
    if any(padding):
        x = _pad_constant(x, [(p, p) for p in padding], 0)
    cols, _ = _columns(x, kernel, stride, dilation)
    return _unbatch(cols, batched)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: sum the columns of ``(N, C*kh*kw, L)`` back into ``(N, C, *output_size)`` (``F.fold``)."""
    if input.dim() not in (2, 3) or any(n == 0 for n in input.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    output_size = _conv_tuple(output_size, 2, "output_size")
    kernel, dilation = _conv_tuple(kernel_size, 2, "kernel_size"), _conv_tuple(dilation, 2, "dilation")
    padding, stride = _conv_tuple(padding, 2, "padding"), _conv_tuple(stride, 2, "stride")
    k = _prod(kernel)
    if x.shape[1] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={x.shape[1]} and kernel_size={kernel}.")
    grid = tuple((o + 2 * p - d * (kk - 1) - 1) // s + 1
                 for o, p, d, kk, s in zip(output_size, padding, dilation, kernel, stride))
    if _prod(grid) != x.shape[2] or any(g < 1 for g in grid):
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {grid[0]} * {grid[1]} = {_prod(grid)}, but got "
                           f"input.size(2)={x.shape[2]}.")
    out = _col2im(x, x.shape[1] // k, grid, output_size, kernel, dilation, padding, stride)
    return _unbatch(out, batched)


# -- pooling --------------------------------------------------------------------------------------------------------

def _pool_out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: the last window must start inside the input or its left padding."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


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
    out = tuple(_pool_out_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (x.shape[1],) + spatial))}). Calculated output "
                           f"size: ({'x'.join(map(str, (x.shape[1],) + out))}). Output size is too small")
    return kernel, stride, padding, dilation, out


def _lowest(dtype):
    if dtype == dt.bool:
        return False
    return -math.inf if dtype.is_floating_point else dt.iinfo(dtype).min


@functools.lru_cache(maxsize=128)
def _window_table(spatial, kernel, stride, padding, dilation, out, device):
    """(L, K): the flat input-plane position of offset k of window l (clamped inside the input)."""
    per_dim = []
    for n, k, s, p, d, o in zip(spatial, kernel, stride, padding, dilation, out):
        per_dim.append([[min(max(w * s - p + j * d, 0), n - 1) for j in range(k)] for w in range(o)])
    return _table_from(per_dim, spatial, device)


def _table_from(per_dim, spatial, device):
    """Combine per-dim coordinates ``[window][offset]`` into an (L, K) table of flat positions in the input plane."""
    table = [[0]]
    for coords, step in zip(per_dim, _row_major(spatial)):
        table = [[a + b * step for a in row for b in coords[w]] for row in table for w in range(len(coords))]
    return ops.tensor(table, dtype=dt.int64, device=device)


def _window_argmax(candidates, table, lowest):
    """(flat input-plane position of each window's max (N, C, L), windows holding only ``lowest``) of
    ``candidates (N, C, L, K)``: the first maximum wins and NaN counts as the maximum, as in PyTorch."""
    n, c = candidates.shape[0], candidates.shape[1]
    with no_grad():
        position = candidates.argmax(-1, keepdim=True)
        flat = ops.gather(table.expand(n, c, table.shape[0], table.shape[1]), 3, position).reshape(n, c, table.shape[0])
        # a window that lies wholly in the padding holds only the lowest value, as in PyTorch
        empty = ops.gather(candidates, 3, position).reshape(n, c, table.shape[0]) == lowest
    return flat, empty


def _gather_max(x, candidates, table, out, return_indices: bool):
    """Max over ``candidates (N, C, L, K)``; with gradients or indices, gather it from ``x`` at its argmax."""
    n, c = x.shape[0], x.shape[1]
    if not return_indices and not _needs_grad(x):
        return candidates.amax(-1).reshape((n, c) + out), None
    lowest = _lowest(x.dtype)
    flat, empty = _window_argmax(candidates, table, lowest)
    values = ops.gather(x.reshape(n, c, _prod(x.shape[2:])), 2, flat)  # the gradient reaches one element per window
    values = ops.where(empty, lowest, values) if bool(empty.any()) else values
    return values.reshape((n, c) + out), flat.reshape((n, c) + out)


def _pool_windows(x, kernel, stride, padding, dilation, out, fill):
    """The ``(N, C, *out, *kernel)`` windows of a pool over ``x``, padded with ``fill``: left by padding, right as
    far as ceil_mode's last window reaches."""
    pads = [(p, max((o - 1) * s + d * (k - 1) + 1 - n - p, 0))
            for n, k, s, p, d, o in zip(x.shape[2:], kernel, stride, padding, dilation, out)]
    padded = _pad_constant(x, pads, fill) if any(l or r for l, r in pads) else x
    windows, _ = _windows(padded, kernel, stride, dilation)
    windows = windows[(slice(None),) * 2 + tuple(slice(0, o) for o in out)] \
        if tuple(windows.shape[2:2 + len(out)]) != out else windows
    return windows


def _pool_out(x, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    return tuple(_pool_out_size(n, k, s, p, d, ceil_mode)
                 for n, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation))


def _max_pool_candidates(x, kernel, stride, padding, dilation, ceil_mode):
    """(windows as ``(N, C, L, K)`` candidates padded with the lowest value, out sizes) of a max pool."""
    out = _pool_out(x, kernel, stride, padding, dilation, ceil_mode)
    windows = _pool_windows(x, kernel, stride, padding, dilation, out, _lowest(x.dtype))
    return windows.reshape(x.shape[0], x.shape[1], _prod(out), _prod(kernel)), out


def _max_pool_with_indices(x, kernel, stride, padding, dilation, ceil_mode):
    """(values, indices) of a max pool over the batched ``x`` with checked geometry (op by op under autograd)."""
    candidates, out = _max_pool_candidates(x, kernel, stride, padding, dilation, ceil_mode)
    table = _window_table(tuple(x.shape[2:]), kernel, stride, padding, dilation, out, str(x.device))
    return _gather_max(x, candidates, table, out, True)


def _max_pool_values(input, kernel_size, stride, padding, dilation, ceil_mode):
    # max_pool has its own derivative: this runs without autograd, so no argmax is needed
    candidates, out = _max_pool_candidates(input, kernel_size, stride, padding, dilation, ceil_mode)
    return candidates.amax(-1).reshape(tuple(input.shape[:2]) + out)


_max_pool_op = define(
    "max_pool", decomposition=_max_pool_values,
    doc="max_pool(input, kernel_size, stride, padding, dilation, ceil_mode): max over the sliding windows of a "
        "batched (N, C, *spatial) input; kernel_size, stride, padding (implicit -inf) and dilation are tuples of nd "
        "ints (nd = 1, 2 or 3). Values only (the indices variant is not an op). A composite that backends may fuse")


def _max_pool_backward_parts(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode):
    """Each window's gradient added to its argmax in the input (none for windows wholly in the padding); a
    scatter-add, so it is differentiable in grad_output (double backward)."""
    n, c = input.shape[0], input.shape[1]
    with no_grad():
        candidates, out = _max_pool_candidates(input, kernel_size, stride, padding, dilation, ceil_mode)
    table = _window_table(tuple(input.shape[2:]), kernel_size, stride, padding, dilation, out, str(input.device))
    flat, empty = _window_argmax(candidates, table, _lowest(input.dtype))
    g = grad_output.reshape(n, c, _prod(out))
    # the test skips a where in the common case; meta tensors have no values to test, so they take the where
    g = ops.where(empty, 0, g) if empty.device.type == "meta" or bool(empty.any()) else g
    grad = ops.zeros((n, c, _prod(input.shape[2:])), dtype=grad_output.dtype, device=grad_output.device)
    return ops.scatter_add(grad, 2, flat, g).reshape(input.shape)


max_pool_backward = define(
    "max_pool_backward", decomposition=_max_pool_backward_parts,
    doc="max_pool_backward(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode): the gradient "
        "of max_pool, each window's grad_output added to the input position of its first maximum (NaN counts as "
        "the maximum). A composite (argmax and scatter-add) that backends may fuse")


@derivative("max_pool")
def _max_pool_derivative(ctx, g):
    """One node per max pool; the argmax is recomputed from the input rather than saved."""
    return (max_pool_backward(g, ctx.input(0), *ctx.args[1:6]),)


def _max_pool(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, batched = _batch(input, nd, lambda: f"{op}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch "
                                           f"size for input, but got:{list(input.shape)}" if nd == 1 else
                        f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    kernel, stride, padding, dilation, _ = _pool_geometry(op, nd, x, kernel_size, stride, padding, dilation,
                                                          ceil_mode)
    if not return_indices:
        return _unbatch(_max_pool_op(x, kernel, stride, padding, dilation, bool(ceil_mode)), batched)
    values, indices = _max_pool_with_indices(x, kernel, stride, padding, dilation, bool(ceil_mode))
    return _unbatch(values, batched), _unbatch(indices, batched)


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
    if all(v == _prod(kernel) for v in divisors):
        return None
    return ops.tensor(divisors, dtype=dtype, device=device).reshape(out)


def _avg_pool_parts(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    nd = len(kernel_size)
    out = _pool_out(input, kernel_size, stride, padding, (1,) * nd, ceil_mode)
    windows = _pool_windows(input, kernel_size, stride, padding, (1,) * nd, out, 0)
    dims = tuple(range(-nd, 0))
    floating = input.dtype.is_floating_point
    divisor = _avg_divisor_of(input, kernel_size, stride, padding, out, count_include_pad, divisor_override)
    if floating and divisor_override is None and not hasattr(divisor, "shape"):
        return windows.mean(dims)
    total = windows.sum(dims)
    return total / divisor if floating else ops.div(total, divisor, rounding_mode="trunc").to(input.dtype)


_avg_pool_op = define(
    "avg_pool", decomposition=_avg_pool_parts,
    doc="avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override): mean over "
        "the sliding windows of a batched (N, C, *spatial) input; kernel_size, stride and padding (zeros) are "
        "tuples of nd ints (nd = 1, 2 or 3); divisor_override is None or a non-zero number. A composite that "
        "backends may fuse")


def _avg_divisor_of(input, kernel_size, stride, padding, out, count_include_pad, divisor_override):
    """What each window's sum is divided by: divisor_override, a per-window tensor of shape ``out``, or K."""
    if divisor_override is not None:
        return divisor_override
    divisor = _avg_divisor(tuple(input.shape[2:]), kernel_size, stride, padding, out, count_include_pad,
                           input.dtype if input.dtype.is_floating_point else dt.int64, str(input.device))
    return _prod(kernel_size) if divisor is None else divisor


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
    table = _table_from(per_dim, padded, str(input.device))  # (L, K) positions in the padded plane
    lk = table.shape[0] * table.shape[1]
    g = grad_output / _avg_divisor_of(input, kernel_size, stride, padding, out, count_include_pad, divisor_override)
    g = g.reshape(n, c, table.shape[0], 1).expand(n, c, table.shape[0], table.shape[1]).reshape(n, c, lk)
    grad = ops.zeros((n, c, _prod(padded)), dtype=g.dtype, device=g.device)
    grad = ops.scatter_add(grad, 2, table.reshape(1, 1, lk).expand(n, c, lk), g).reshape((n, c) + padded)
    return grad[(slice(None),) * 2 + tuple(slice(p, p + size) for p, size in zip(padding, spatial))]


avg_pool_backward = define(
    "avg_pool_backward", decomposition=_avg_pool_backward_parts,
    doc="avg_pool_backward(grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad, "
        "divisor_override): the gradient of avg_pool, each window's grad_output over its divisor added to the "
        "input positions of the window. A composite (scatter-add) that backends may fuse")


@derivative("avg_pool")
def _avg_pool_derivative(ctx, g):
    """One node per average pool; the backward needs only the input's geometry."""
    return (avg_pool_backward(g, ctx.input(0), *ctx.args[1:7]),)


def _avg_pool(op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for input to {op}, but got "
                           f"{input.dim()}-dimensional tensor of size {list(input.shape)}")
    x, batched = _batch(input, nd, lambda: "")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    kernel, stride, padding, _, _ = _pool_geometry(op, nd, x, kernel_size, stride, padding, 1, ceil_mode)
    result = _avg_pool_op(x, kernel, stride, padding, bool(ceil_mode), bool(count_include_pad), divisor_override)
    return _unbatch(result, batched)


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
    x, batched = _batch(input, nd, lambda: "")
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


def _along(x, dim: int, matrix):
    """Contract dim ``dim`` of ``x`` with ``matrix (out, in)``: ``out`` takes the place of ``in``."""
    shape = tuple(x.shape)
    if dim == len(shape) - 1:
        return ops.matmul(x, matrix.t())
    rest = _prod(shape[dim + 1:])
    y = ops.matmul(matrix, x.reshape(shape[:dim] + (shape[dim], rest)))
    return y.reshape(shape[:dim] + (matrix.shape[0],) + shape[dim + 1:])


def _adaptive_avg_pool(op, nd, input, output_size):
    x, batched, out = _adaptive_setup(op, nd, input, output_size)
    spatial = tuple(x.shape[2:])
    if any(o == 0 for o in out):
        return _unbatch(ops.zeros(tuple(x.shape[:2]) + out, dtype=x.dtype, device=x.device), batched)
    if all(n % o == 0 for n, o in zip(spatial, out)):  # equal windows that tile the input
        kernel = tuple(n // o for n, o in zip(spatial, out))
        windows, _ = _windows(x, kernel, kernel, (1,) * nd)
        return _unbatch(windows.mean(tuple(range(-nd, 0))), batched)
    for i, (n, o) in enumerate(zip(spatial, out)):
        if n != o:
            x = _along(x, 2 + i, _adaptive_matrix(n, o, x.dtype, str(x.device)))
    return _unbatch(x, batched)


def adaptive_avg_pool1d(input, output_size):
    """Average over ``output_size`` adaptive windows of ``(N, C, L)`` (``F.adaptive_avg_pool1d``)."""
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Average over adaptive windows of ``(N, C, H, W)``; None in output_size keeps that size."""
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """Average over adaptive windows of ``(N, C, D, H, W)`` (``F.adaptive_avg_pool3d``)."""
    return _adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size)


@functools.lru_cache(maxsize=128)
def _adaptive_table(spatial, out, device):
    """(L, Kmax) flat input positions of each adaptive window, short windows repeating their last position."""
    per_dim = []
    for n, o in zip(spatial, out):
        bounds = _adaptive_bounds(n, o)
        width = max(end - start for start, end in bounds)
        per_dim.append([[min(start + j, end - 1) for j in range(width)] for start, end in bounds])
    return _table_from(per_dim, spatial, device)


def _adaptive_max_pool(op, nd, input, output_size, return_indices):
    x, batched, out = _adaptive_setup(op, nd, input, output_size)
    table = _adaptive_table(tuple(x.shape[2:]), out, str(x.device))
    n, c = x.shape[0], x.shape[1]
    flat = x.reshape(n, c, _prod(x.shape[2:]))
    with no_grad():
        candidates = ops.index_select(flat, 2, table.reshape(-1)).reshape(n, c, table.shape[0], table.shape[1])
    values, indices = _gather_max(x, candidates, table, out, return_indices)
    if return_indices:
        return _unbatch(values, batched), _unbatch(indices, batched)
    return _unbatch(values, batched)


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


# -- resizing -------------------------------------------------------------------------------------------------------

def _f32(value: float) -> float:
    """``value`` rounded to float32, as PyTorch's kernels compute nearest-neighbour positions."""
    return struct.unpack("f", struct.pack("f", value))[0]


def _nearest_scale(n: int, o: int, scale) -> float:
    return _f32(1.0 / scale) if scale is not None and scale > 0 else _f32(n / o)


@functools.lru_cache(maxsize=128)
def _nearest_index(mode: str, n: int, o: int, scale, device):
    """Source position of each output position (PyTorch's nearest_idx / nearest-exact rules)."""
    if mode == "nearest" and o == n:
        source = list(range(o))
    elif mode == "nearest" and o == 2 * n:
        source = [i >> 1 for i in range(o)]
    else:
        step = _nearest_scale(n, o, scale)
        shift = 0.5 if mode == "nearest-exact" else 0.0
        source = [min(math.floor(_f32((i + shift) * step)), n - 1) for i in range(o)]
    return ops.tensor(source, dtype=dt.int64, device=device)


def _cubic_weights(t: float) -> list:
    """Keys' cubic convolution weights (A = -0.75) of the 4 taps around a point at fraction ``t``."""
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@functools.lru_cache(maxsize=128)
def _interp_matrix(mode: str, n: int, o: int, scale, align_corners: bool, dtype, device):
    """(o, n): linear or cubic interpolation weights along one dim (PyTorch's source-index rules)."""
    if align_corners:
        step = (n - 1) / (o - 1) if o > 1 else 0.0
    else:
        step = 1.0 / scale if scale is not None and scale > 0 else n / o
    rows = []
    for i in range(o):
        src = step * i if align_corners else step * (i + 0.5) - 0.5
        row = [0.0] * n
        if mode == "cubic":
            base = math.floor(src)
            for tap, w in enumerate(_cubic_weights(src - base)):
                row[min(max(base - 1 + tap, 0), n - 1)] += w
        else:
            src = max(src, 0.0)
            low = min(int(src), n - 1)
            high = low + (1 if low < n - 1 else 0)
            frac = min(max(src - low, 0.0), 1.0)
            row[low] += 1.0 - frac
            row[high] += frac
        rows.append(row)
    return ops.tensor(rows, dtype=dtype, device=device)


_LINEAR_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _output_sizes(input, size, scale_factor, mode, recompute_scale_factor):
    """PyTorch's rules for size / scale_factor: (output sizes, scales or None per dim)."""
    nd = input.dim() - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {spatial} and output size of {size}. Please provide "
                                 f"input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                                 f"format.")
            sizes = [int(s) for s in size]
        else:
            sizes = [int(size)] * nd
        scales = [None] * nd
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != nd:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {spatial} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 f"scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * nd
        sizes = [math.floor(n * s) for n, s in zip(spatial, scales)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor or (mode == "area" and size is None):
        scales = [None] * nd
    return sizes, scales


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False):
    """Resize ``(N, C, *spatial)`` by nearest, (bi/tri)linear, bicubic or area sampling (``F.interpolate``)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.dim() - 2
    modes = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
    if mode not in modes or nd not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    sizes, scales = _output_sizes(input, size, scale_factor, mode, recompute_scale_factor)
    if antialias:
        raise NotImplementedError("interpolate(): antialias=True is not supported")
    if mode == "area":
        return _adaptive_avg_pool(f"adaptive_avg_pool{nd}d", nd, input, sizes)
    device = str(input.device)
    if mode in ("nearest", "nearest-exact"):
        out = input
        for i, (n, o, s) in enumerate(zip(input.shape[2:], sizes, scales)):
            out = ops.index_select(out, 2 + i, _nearest_index(mode, n, o, s, device))
        return out
    need = _LINEAR_DIMS[mode]
    if nd != need:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need + 2}D input")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"upsample_{mode}{nd}d\" not implemented for '{dt.legacy_name(input.dtype)}'")
    kind = "cubic" if mode == "bicubic" else "linear"
    out = input
    for i, (n, o, s) in enumerate(zip(input.shape[2:], sizes, scales)):
        out = _along(out, 2 + i, _interp_matrix(kind, n, o, s, bool(align_corners), input.dtype, device))
    return out


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate` (``torch.nn.functional.upsample``)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with mode 'nearest'."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with mode 'bilinear' and align_corners=True."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor: int):
    """``(*, C*r², H, W) -> (*, C, H*r, W*r)`` (``torch.nn.functional.pixel_shuffle``)."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor: int):
    """``(*, C, H*r, W*r) -> (*, C*r², H, W)`` (``torch.nn.functional.pixel_unshuffle``)."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))
