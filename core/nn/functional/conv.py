"""Convolution, transposed convolution, unfold/fold and padding functionals (``torch.nn.functional``).

``conv1d``/``conv2d``/``conv3d`` check PyTorch's arguments and call the ``convolution`` op (declared, with its
decomposition, in ``core/ops/conv.py``; its derivative is in ``core/ops/derivatives.py``) on a batched input with
normalised tuple arguments. Transposed convolution and ``fold`` add columns back into the output plane with strided
adds (col2im); ``pad``'s non-constant modes are one ``index_select`` per padded dim with a cached index table.
"""

from __future__ import annotations

import functools

from ... import dtypes as dt, ops
from ...ops import nn_functions
from ...amp.autocast_mode import autocast_inputs
from ...ops._windows import col2im, columns, pad_constant, prod
from ...ops.conv import add_bias, convolution as convolution_op
from ._utils import batch, ntuple, unbatch

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "unfold", "fold", "pad", "conv_tbc"]

_C_TYPES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}


def _conv_tuple(value, n: int, name: str) -> tuple:
    values = ntuple(value, n)
    if values is None:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {name}={list(value)}")
    return values


def _sizes(values) -> str:
    return " x ".join(map(str, values))


# -- padding ------------------------------------------------------------------------------------------------------

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
        return pad_constant(input, pairs, 0 if value is None else value)
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


def _conv_arguments(op: str, nd: int, input, weight, stride, dilation, groups) -> tuple:
    """What every convolution checks first: (batched input, batched flag, kernel, stride, dilation)."""
    x, batched = batch(input, nd, lambda: f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, "
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


def _split_padding(pads) -> tuple:
    """Symmetric per-dim padding and the extra (0, 1) pads 'same' needs on the right of odd totals."""
    symmetric = tuple(min(l, r) for l, r in pads)
    return symmetric, [(l - p, r - p) for (l, r), p in zip(pads, symmetric)]


def _conv(op: str, nd: int, input, weight, bias, stride, padding, dilation, groups):
    input, weight, bias = autocast_inputs(op, input, weight, bias)  # torch lists conv*d under autocast
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
        x = pad_constant(x, extra, 0)
    return unbatch(convolution_op(x, weight, bias, stride, symmetric, dilation, int(groups)), batched)


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
    input, weight, bias = autocast_inputs(op, input, weight, bias)
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
    k, blocks = prod(kernel), prod(grid)
    if groups == 1:
        w = weight.reshape(in_channels, out_per_group * k).t()  # (O*K, C)
        cols = ops.matmul(w, x.reshape(n, in_channels, blocks))  # (N, O*K, L)
    else:
        w = weight.reshape(groups, in_channels // groups, out_per_group * k).transpose(1, 2)  # (G, O/G*K, C/G)
        cols = ops.matmul(w, x.reshape(n, groups, in_channels // groups, blocks))  # (N, G, O/G*K, L)
    cols = cols.reshape(n, out_per_group * groups * k, blocks)
    result = col2im(cols, out_per_group * groups, grid, out, kernel, dilation, padding, stride)
    return unbatch(add_bias(result, bias, nd), batched)


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
    x, batched = batch(input, 2, lambda: "")
    kernel, dilation = _conv_tuple(kernel_size, 2, "kernel_size"), _conv_tuple(dilation, 2, "dilation")
    padding, stride = _conv_tuple(padding, 2, "padding"), _conv_tuple(stride, 2, "stride")
    blocks = [(n + 2 * p - d * (k - 1) - 1) // s + 1
              for n, p, d, k, s in zip(x.shape[2:], padding, dilation, kernel, stride)]
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding blocks "
                           f"as {tuple(blocks)}, but its components must be at least one.")
    if any(padding):
        x = pad_constant(x, [(p, p) for p in padding], 0)
    cols, _ = columns(x, kernel, stride, dilation)
    return unbatch(cols, batched)


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
    k = prod(kernel)
    if x.shape[1] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={x.shape[1]} and kernel_size={kernel}.")
    grid = tuple((o + 2 * p - d * (kk - 1) - 1) // s + 1
                 for o, p, d, kk, s in zip(output_size, padding, dilation, kernel, stride))
    if prod(grid) != x.shape[2] or any(g < 1 for g in grid):
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {grid[0]} * {grid[1]} = {prod(grid)}, but got "
                           f"input.size(2)={x.shape[2]}.")
    out = col2im(x, x.shape[1] // k, grid, output_size, kernel, dilation, padding, stride)
    return unbatch(out, batched)


def conv_tbc(input, weight, bias, pad: int = 0):
    """1-D convolution of a (time, batch, channels) input (``torch.nn.functional.conv_tbc``)."""
    return nn_functions.conv_tbc(input, weight, bias, pad)
