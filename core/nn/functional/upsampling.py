"""Resizing functionals (``torch.nn.functional``): ``interpolate`` and its deprecated aliases, pixel (un)shuffle.

The nearest modes are one ``index_select`` per spatial dim; the linear and cubic modes multiply by small per-dim
interpolation matrices; 'area' is adaptive average pooling. Index tables and matrices depend only on the sizes, so
they are built once per geometry and device (plain Python arithmetic) and cached.
"""

from __future__ import annotations

import functools
import math
import struct
import warnings

from ... import dtypes as dt, ops
from ...ops import nn_functions
from .pooling import adaptive_avg_pool, along

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle", "native_channel_shuffle"]

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


def _check_sizes(spatial: list, sizes: list) -> None:
    """PyTorch's upsample check (UpSample.h): every input and output spatial size is positive."""
    if all(n > 0 for n in spatial) and all(o > 0 for o in sizes):
        return
    names = "DHW"[3 - len(spatial):]

    def listed(values):
        return ", ".join(f"{name}: {v}" for name, v in zip(names, values))

    joiner = ") and output (" if len(spatial) == 1 else ") output ("
    raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({listed(spatial)}"
                       f"{joiner}{listed(sizes)})")


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
        return adaptive_avg_pool(f"adaptive_avg_pool{nd}d", nd, input, sizes)
    _check_sizes(list(input.shape[2:]), sizes)
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
        out = along(out, 2 + i, _interp_matrix(kind, n, o, s, bool(align_corners), input.dtype, device))
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


def channel_shuffle(input, groups: int):
    """Interleave the channels of ``groups`` equal groups (``torch.nn.functional.channel_shuffle``)."""
    return nn_functions.channel_shuffle(input, groups)


def native_channel_shuffle(input, groups: int):
    """:func:`channel_shuffle` (``torch.nn.functional.native_channel_shuffle``)."""
    return nn_functions.native_channel_shuffle(input, groups)
