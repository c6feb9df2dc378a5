"""Pooling, adaptive pooling, interpolation and pixel shuffle against direct NumPy loops (and torch when installed):
kernel/stride/padding/dilation/ceil_mode grids, indices, PyTorch's average divisors, dtypes and layouts, NaN and
-inf, float64 gradchecks (one gradient per window for max), errors, and the modules' forward and repr."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
import core.testing
import core.nn as nn
import core.nn.functional as F
from core.autograd import gradcheck
from core.testing import assert_close

RNG = np.random.default_rng(4321)


def _randn(*shape):
    return RNG.standard_normal(shape)


def _t(a, device, dtype=core.float64, requires_grad=False):
    return core.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def _per_dim(value, nd):
    return [value] * nd if isinstance(value, int) else list(value)


def _out_size(n, k, s, p, d, ceil_mode):
    span = d * (k - 1) + 1
    out = (n + 2 * p - span + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= n + p else out


# -- NumPy references -------------------------------------------------------------------------------------------------

def ref_max_pool(x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Values and flat input-plane indices, scanning each window in row-major order (first maximum wins)."""
    nd = x.ndim - 2
    kernel = _per_dim(kernel, nd)
    stride = kernel if stride is None else _per_dim(stride, nd)
    padding, dilation = _per_dim(padding, nd), _per_dim(dilation, nd)
    spatial = x.shape[2:]
    out = [_out_size(n, k, s, p, d, ceil_mode) for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    values = np.zeros(x.shape[:2] + tuple(out), dtype=x.dtype)
    indices = np.zeros(x.shape[:2] + tuple(out), dtype=np.int64)
    plane = x.reshape(x.shape[:2] + (-1,))
    for pos in itertools.product(*[range(o) for o in out]):
        coords = [[o * s - p + j * d for j in range(k)] for o, s, p, d, k in zip(pos, stride, padding, dilation,
                                                                                     kernel)]
        flat = [sum(c * int(np.prod(spatial[i + 1:])) for i, c in enumerate(point))
                for point in itertools.product(*coords) if all(0 <= c < n for c, n in zip(point, spatial))]
        if not flat:  # a window wholly in the padding: PyTorch gives -inf (and an index that means nothing)
            values[(slice(None), slice(None)) + pos] = -np.inf
            indices[(slice(None), slice(None)) + pos] = -1
            continue
        window = plane[:, :, flat]
        best = np.argmax(window, axis=-1)  # NaN counts as the maximum, first occurrence wins
        values[(slice(None), slice(None)) + pos] = np.take_along_axis(window, best[..., None], -1)[..., 0]
        indices[(slice(None), slice(None)) + pos] = np.asarray(flat)[best]
    return values, indices


def ref_avg_pool(x, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """PyTorch's documented divisor: the window clipped to the padded input, or to the input without padding."""
    nd = x.ndim - 2
    kernel = _per_dim(kernel, nd)
    stride = kernel if stride is None else _per_dim(stride, nd)
    padding = _per_dim(padding, nd)
    spatial = x.shape[2:]
    out = [_out_size(n, k, s, p, 1, ceil_mode) for n, k, s, p in zip(spatial, kernel, stride, padding)]
    result = np.zeros(x.shape[:2] + tuple(out))
    for pos in itertools.product(*[range(o) for o in out]):
        starts = [o * s - p for o, s, p in zip(pos, stride, padding)]
        ends = [min(a + k, n + p) for a, k, n, p in zip(starts, kernel, spatial, padding)]
        pool_size = math.prod(e - a for a, e in zip(starts, ends))
        starts = [max(a, 0) for a in starts]
        ends = [min(e, n) for e, n in zip(ends, spatial)]
        total = x[(slice(None), slice(None)) + tuple(slice(a, e) for a, e in zip(starts, ends))].sum(
            axis=tuple(range(2, 2 + nd)))
        if divisor_override:
            divisor = divisor_override
        elif count_include_pad:
            divisor = pool_size
        else:
            divisor = math.prod(e - a for a, e in zip(starts, ends))
        result[(slice(None), slice(None)) + pos] = total / divisor
    return result


def _adaptive_windows(n, o):
    return [(math.floor(i * n / o), math.ceil((i + 1) * n / o)) for i in range(o)]


def ref_adaptive_pool(x, output_size, reduce):
    """``reduce(window)`` over PyTorch's adaptive windows [floor(i*n/o), ceil((i+1)*n/o))."""
    nd = x.ndim - 2
    sizes = [n if o is None else o for n, o in zip(x.shape[2:], _per_dim(output_size, nd))]
    result = np.zeros(x.shape[:2] + tuple(sizes))
    bounds = [_adaptive_windows(n, o) for n, o in zip(x.shape[2:], sizes)]
    for pos in itertools.product(*[range(o) for o in sizes]):
        window = x[(slice(None), slice(None)) + tuple(slice(*bounds[i][p]) for i, p in enumerate(pos))]
        result[(slice(None), slice(None)) + pos] = reduce(window.reshape(window.shape[:2] + (-1,)))
    return result


def _linear_source(dst, n, o, align_corners, scale=None):
    if align_corners:
        return dst * (n - 1) / (o - 1) if o > 1 else 0.0
    step = 1 / scale if scale else n / o
    return max((dst + 0.5) * step - 0.5, 0.0)


def ref_bilinear(x, out, align_corners, scales=(None, None)):
    """Blend the four neighbours of each output pixel's source point."""
    n, c, h, w = x.shape
    result = np.zeros((n, c) + tuple(out))
    for i, j in itertools.product(range(out[0]), range(out[1])):
        sy = _linear_source(i, h, out[0], align_corners, scales[0])
        sx = _linear_source(j, w, out[1], align_corners, scales[1])
        y0, x0 = min(int(sy), h - 1), min(int(sx), w - 1)
        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
        fy, fx = sy - y0, sx - x0
        result[:, :, i, j] = ((1 - fy) * ((1 - fx) * x[:, :, y0, x0] + fx * x[:, :, y0, x1])
                              + fy * ((1 - fx) * x[:, :, y1, x0] + fx * x[:, :, y1, x1]))
    return result


def ref_nearest(x, out):
    """Output pixel i reads input floor(i * n / o) along each dim (sizes chosen so float32 rounding agrees)."""
    for d, o in enumerate(out):
        n = x.shape[2 + d]
        x = np.take(x, [min(math.floor(i * n / o), n - 1) for i in range(o)], axis=2 + d)
    return x


def ref_pixel_shuffle(x, r):
    n, c, h, w = x.shape
    out = np.zeros((n, c // (r * r), h * r, w * r))
    for ch, i, j in itertools.product(range(c // (r * r)), range(r), range(r)):
        out[:, ch, i::r, j::r] = x[:, ch * r * r + i * r + j]
    return out


# -- max pooling ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,stride", [(2, None), (3, 1), ((2, 3), (1, 2)), (3, 2)])
def test_max_pool2d_grid_matches_numpy(kernel, stride, device):
    x = _randn(2, 3, 7, 8)
    for padding, dilation, ceil_mode in itertools.product([0, 1], [1, 2, (2, 1)], [False, True]):
        if any(p > (d * (k - 1) + 1) // 2 for k, d, p in zip(_per_dim(kernel, 2), _per_dim(dilation, 2),
                                                             _per_dim(padding, 2))):
            continue
        values, indices = F.max_pool2d(_t(x, device), kernel, stride, padding, dilation, ceil_mode, True)
        expected_values, expected_indices = ref_max_pool(x, kernel, stride, padding, dilation, ceil_mode)
        msg = f"padding={padding} dilation={dilation} ceil_mode={ceil_mode}"
        assert_close(values, expected_values, msg=msg)
        assert_close(indices, expected_indices, msg=msg)
        assert_close(F.max_pool2d(_t(x, device), kernel, stride, padding, dilation, ceil_mode), expected_values)


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", [(2, None, 0, 1, False), (3, 2, 1, 1, True),
                                                                      (2, 1, 1, 3, False), (4, 3, 2, 1, True)])
def test_max_pool1d_and_3d_match_numpy(kernel, stride, padding, dilation, ceil_mode, device):
    x = _randn(2, 3, 11)
    values, indices = F.max_pool1d(_t(x, device), kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    expected = ref_max_pool(x, kernel, stride, padding, dilation, ceil_mode)
    assert_close(values, expected[0])
    assert_close(indices, expected[1])
    x3 = _randn(1, 2, 5, 4, 6)
    k3 = min(kernel, 3)
    values, indices = F.max_pool3d(_t(x3, device), k3, stride, min(padding, k3 // 2), 1, ceil_mode, True)
    expected = ref_max_pool(x3, k3, stride, min(padding, k3 // 2), 1, ceil_mode)
    assert_close(values, expected[0])
    assert_close(indices, expected[1])


def test_max_pool_dtypes_nan_and_infinities(device):
    ints = RNG.integers(-50, 50, (2, 3, 6, 6))
    values, indices = F.max_pool2d(core.tensor(ints, device=device), 3, 2, 1, return_indices=True)
    expected = ref_max_pool(ints, 3, 2, 1)
    assert values.dtype == core.int64
    assert_close(values, expected[0])
    assert_close(indices, expected[1])
    half = _t(_randn(1, 2, 4, 4), device, core.float16)
    assert F.max_pool2d(half, 2).dtype == core.float16
    assert_close(F.max_pool2d(half, 2), ref_max_pool(core.testing.to_numpy(half), 2)[0])
    x = _randn(1, 1, 4, 4)
    x[0, 0, 1, 0] = np.nan
    x[0, 0, 2:, 2:] = -np.inf
    values, indices = F.max_pool2d(_t(x, device), 2, padding=1, return_indices=True)
    expected = ref_max_pool(x, 2, padding=1)
    assert_close(values, expected[0])
    assert_close(indices, expected[1])


def test_max_pool_layouts_unbatched_and_empty(device):
    base = _randn(2, 3, 8, 6)
    transposed = _t(base, device).transpose(2, 3)
    assert_close(F.max_pool2d(transposed, 2, 1), ref_max_pool(base.transpose(0, 1, 3, 2), 2, 1)[0])
    stepped = _t(base, device)[:, ::2, ::2]
    assert_close(F.max_pool2d(stepped, (2, 3)), ref_max_pool(base[:, ::2, ::2], (2, 3))[0])
    expanded = _t(base[:, :1], device).expand(2, 4, 8, 6)
    assert_close(F.max_pool2d(expanded, 3, 2, 1), ref_max_pool(np.broadcast_to(base[:, :1], (2, 4, 8, 6)), 3, 2, 1)[0])
    values, indices = F.max_pool2d(_t(base[0], device), 2, return_indices=True)
    expected = ref_max_pool(base[:1], 2)
    assert_close(values, expected[0][0])
    assert_close(indices, expected[1][0])
    assert tuple(F.max_pool2d(core.zeros(0, 3, 4, 4, device=device), 2).shape) == (0, 3, 2, 2)
    assert tuple(F.avg_pool2d(core.zeros(0, 3, 4, 4, device=device), 2).shape) == (0, 3, 2, 2)


@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 7), w=st.integers(1, 7), k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)), p=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)), ceil_mode=st.booleans())
def test_max_pool2d_random_shapes(h, w, k, s, p, d, ceil_mode, device):
    spans = [dd * (kk - 1) + 1 for kk, dd in zip(k, d)]
    if any(pp > span // 2 for pp, span in zip(p, spans)) or any(n + 2 * pp < span for n, pp, span in
                                                                zip((h, w), p, spans)):
        return
    x = _randn(1, 2, h, w)
    values, indices = F.max_pool2d(_t(x, device), k, s, p, d, ceil_mode, True)
    expected = ref_max_pool(x, k, s, p, d, ceil_mode)
    assert_close(values, expected[0])
    meaningful = expected[1] >= 0
    np.testing.assert_array_equal(indices.cpu().numpy()[meaningful], expected[1][meaningful])


def test_max_pool_gradient_reaches_one_element_per_window(device):
    """Ties (here: zeros after a ReLU) send the gradient to the first maximum only, like PyTorch."""
    x = _t(np.zeros((1, 1, 4, 4)), device, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    expected = np.zeros((1, 1, 4, 4))
    expected[0, 0, ::2, ::2] = 1
    assert_close(x.grad, expected)
    y = _t(np.arange(16.0).reshape(1, 1, 4, 4), device, requires_grad=True)
    F.max_pool2d(y, 3, 1).sum().backward()  # overlapping windows: the shared maximum collects every window
    expected = np.zeros((1, 1, 4, 4))
    expected[0, 0, 2:, 2:] = 1
    assert_close(y.grad, expected)


# -- average pooling -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,stride,padding", [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 0)), (3, 1, 1)])
def test_avg_pool2d_grid_matches_numpy(kernel, stride, padding, device):
    x = _randn(2, 3, 7, 8)
    for ceil_mode, count_include_pad, divisor in itertools.product([False, True], [True, False], [None, 5]):
        expected = ref_avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
        actual = F.avg_pool2d(_t(x, device), kernel, stride, padding, ceil_mode, count_include_pad, divisor)
        assert_close(actual, expected, msg=f"ceil_mode={ceil_mode} count_include_pad={count_include_pad} "
                                           f"divisor={divisor}")


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad", [(2, None, 0, False, True),
                                                                               (3, 2, 1, True, True),
                                                                               (3, 2, 1, True, False),
                                                                               (4, 3, 2, False, False)])
def test_avg_pool1d_and_3d_match_numpy(kernel, stride, padding, ceil_mode, count_include_pad, device):
    x = _randn(2, 3, 11)
    assert_close(F.avg_pool1d(_t(x, device), kernel, stride, padding, ceil_mode, count_include_pad),
                 ref_avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad))
    x3 = _randn(1, 2, 5, 4, 6)
    k3 = min(kernel, 3)
    assert_close(F.avg_pool3d(_t(x3, device), k3, stride, min(padding, k3 // 2), ceil_mode, count_include_pad),
                 ref_avg_pool(x3, k3, stride, min(padding, k3 // 2), ceil_mode, count_include_pad))


def test_avg_pool_documented_divisors(device):
    """PyTorch's examples: ceil_mode windows past the padding do not count, count_include_pad=False drops pads."""
    ones = core.ones(1, 1, 6, dtype=core.float64, device=device)
    assert core.testing.to_numpy(F.avg_pool1d(ones, 3, 2, 1, ceil_mode=True)).tolist() == [[[2 / 3, 1.0, 1.0, 0.5]]]
    assert core.testing.to_numpy(F.avg_pool1d(ones, 3, 2, 1, ceil_mode=True, count_include_pad=False)).tolist() == \
        [[[1.0, 1.0, 1.0, 1.0]]]


def test_avg_pool_dtypes(device):
    x = _randn(2, 2, 6, 6)
    for dtype, tol in ((core.float32, 1e-6), (core.float16, 2e-3), (core.bfloat16, 2e-2)):
        actual = F.avg_pool2d(_t(x, device, dtype), 2)
        assert actual.dtype == dtype
        np.testing.assert_allclose(core.testing.to_numpy(actual.double()), ref_avg_pool(core.testing.to_numpy(_t(x, device, dtype)
                                                                                              .double()), 2),
                                   rtol=tol, atol=tol)
    ints = RNG.integers(-20, 20, (1, 2, 4, 4))
    actual = F.avg_pool2d(core.tensor(ints, device=device), 2)  # integers divide and truncate, like PyTorch
    assert actual.dtype == core.int64
    assert_close(actual, np.trunc(ref_avg_pool(ints.astype(float), 2)).astype(np.int64))


# -- adaptive pooling -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("output_size", [1, 2, 3, (3, 4), (None, 5), (5, None), 7, (4, 6)])
def test_adaptive_pool2d_matches_numpy(output_size, device):
    x = _randn(2, 3, 7, 6)
    assert_close(F.adaptive_avg_pool2d(_t(x, device), output_size),
                 ref_adaptive_pool(x, output_size, lambda w: w.mean(-1)))
    values, indices = F.adaptive_max_pool2d(_t(x, device), output_size, return_indices=True)
    assert_close(values, ref_adaptive_pool(x, output_size, lambda w: w.max(-1)))
    plane = x.reshape(2, 3, -1)
    assert_close(np.take_along_axis(plane, core.testing.to_numpy(indices).reshape(2, 3, -1), -1).reshape(values.shape),
                 core.testing.to_numpy(values))


@pytest.mark.parametrize("output_size", [1, 3, 4, 11])
def test_adaptive_pool1d_and_3d_match_numpy(output_size, device):
    x = _randn(2, 3, 11)
    assert_close(F.adaptive_avg_pool1d(_t(x, device), output_size),
                 ref_adaptive_pool(x, output_size, lambda w: w.mean(-1)))
    assert_close(F.adaptive_max_pool1d(_t(x, device), output_size),
                 ref_adaptive_pool(x, output_size, lambda w: w.max(-1)))
    x3 = _randn(1, 2, 5, 4, 3)
    size3 = (min(output_size, 4), 3, None)
    assert_close(F.adaptive_avg_pool3d(_t(x3, device), size3), ref_adaptive_pool(x3, size3, lambda w: w.mean(-1)))
    assert_close(F.adaptive_max_pool3d(_t(x3, device), size3), ref_adaptive_pool(x3, size3, lambda w: w.max(-1)))


def test_adaptive_pool_unbatched_and_float32(device):
    x = _randn(3, 7, 5)
    assert_close(F.adaptive_avg_pool2d(_t(x, device), 3), ref_adaptive_pool(x[None], 3, lambda w: w.mean(-1))[0])
    out = F.adaptive_avg_pool2d(_t(x[None], device, core.float32), (2, 4))
    assert out.dtype == core.float32
    assert_close(out, ref_adaptive_pool(x[None], (2, 4), lambda w: w.mean(-1)).astype(np.float32))


# -- interpolation -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [(8, 12), (3, 2), (4, 9), (2, 6)])
def test_interpolate_nearest_and_bilinear_match_numpy(size, device):
    x = _randn(2, 3, 4, 6)
    assert_close(F.interpolate(_t(x, device), size=size), ref_nearest(x, size))
    for align_corners in (False, True):
        assert_close(F.interpolate(_t(x, device), size=size, mode="bilinear", align_corners=align_corners),
                     ref_bilinear(x, size, align_corners), msg=f"align_corners={align_corners}")


def test_interpolate_scale_factor(device):
    x = _randn(1, 2, 4, 5)
    assert_close(F.interpolate(_t(x, device), scale_factor=2), ref_nearest(x, (8, 10)))
    assert_close(F.interpolate(_t(x, device), scale_factor=(1.5, 2.5), mode="bilinear"),
                 ref_bilinear(x, (6, 12), False, scales=(1.5, 2.5)))
    # with recompute_scale_factor the sampling uses in/out instead of 1/scale_factor
    assert_close(F.interpolate(_t(x, device), scale_factor=(1.5, 2.5), mode="bilinear",
                               recompute_scale_factor=True), ref_bilinear(x, (6, 12), False))
    ints = core.arange(10, device=device).reshape(1, 1, 10)
    assert core.testing.to_numpy(F.interpolate(ints, scale_factor=0.35)).tolist() == [[[0, 2, 5]]]
    assert core.testing.to_numpy(F.interpolate(ints, size=3)).tolist() == [[[0, 3, 6]]]
    assert core.testing.to_numpy(F.interpolate(ints, size=3, mode="nearest-exact")).tolist() == [[[1, 5, 8]]]


def test_interpolate_linear_area_and_3d(device):
    x = _randn(2, 3, 7)
    out = F.interpolate(_t(x, device), size=11, mode="linear", align_corners=True)
    assert_close(out, ref_bilinear(x[:, :, None], (1, 11), True)[:, :, 0])
    assert_close(F.interpolate(_t(x, device), size=3, mode="area"),
                 ref_adaptive_pool(x, 3, lambda w: w.mean(-1)))
    x3 = _randn(1, 2, 2, 3, 2)
    assert_close(F.interpolate(_t(x3, device), scale_factor=2), ref_nearest(x3, (4, 6, 4)))
    tri = F.interpolate(_t(x3, device), size=(3, 5, 4), mode="trilinear", align_corners=True)
    assert tuple(tri.shape) == (1, 2, 3, 5, 4)
    assert_close(tri[:, :, ::2, ::2, ::3], x3[:, :, :, :, :])  # align_corners keeps the corner samples


def test_upsample_aliases_warn(device):
    x = _t(_randn(1, 1, 2, 2), device)
    with pytest.warns(UserWarning, match="deprecated"):
        out = F.upsample(x, scale_factor=2)
    assert_close(out, ref_nearest(core.testing.to_numpy(x), (4, 4)))
    with pytest.warns(UserWarning, match="deprecated"):
        out = F.upsample_bilinear(x, size=3)
    assert_close(out, ref_bilinear(core.testing.to_numpy(x), (3, 3), True))


# -- pixel shuffle -----------------------------------------------------------------------------------------------------

def test_pixel_shuffle_and_unshuffle(device):
    x = _randn(2, 8, 3, 4)
    shuffled = F.pixel_shuffle(_t(x, device), 2)
    assert_close(shuffled, ref_pixel_shuffle(x, 2))
    assert_close(F.pixel_unshuffle(shuffled, 2), x)
    batched = _randn(2, 3, 9, 2, 2)  # extra leading dims are kept
    assert_close(F.pixel_shuffle(_t(batched, device), 3),
                 ref_pixel_shuffle(batched.reshape(6, 9, 2, 2), 3).reshape(2, 3, 1, 6, 6))
    assert_close(F.pixel_shuffle(_t(x[0], device), 2), ref_pixel_shuffle(x[:1], 2)[0])


# -- gradients ---------------------------------------------------------------------------------------------------------

def _leaf(device, *shape):
    return _t(_randn(*shape), device, requires_grad=True)


def test_gradcheck_pooling(device):
    x = _leaf(device, 1, 2, 5, 6)
    assert gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1, 1, True), (x,))
    assert gradcheck(lambda x: F.max_pool2d(x, 2, 1, 0, 2), (x,))
    assert gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), (x,))
    assert gradcheck(lambda x: F.avg_pool2d(x, 2, divisor_override=3), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool2d(x, (3, 4)), (x,))
    assert gradcheck(lambda x: F.adaptive_max_pool2d(x, (2, 4)), (x,))
    x1 = _leaf(device, 2, 2, 7)
    assert gradcheck(lambda x: F.max_pool1d(x, 3, 2, 1), (x1,))
    assert gradcheck(lambda x: F.avg_pool1d(x, 3, 2, 1, True), (x1,))
    assert gradcheck(lambda x: F.adaptive_avg_pool1d(x, 3), (x1,))
    assert gradcheck(lambda x: F.adaptive_max_pool1d(x, 3), (x1,))
    x3 = _leaf(device, 1, 1, 3, 4, 3)
    assert gradcheck(lambda x: F.max_pool3d(x, 2, 1, 1), (x3,))
    assert gradcheck(lambda x: F.avg_pool3d(x, 2, (1, 2, 1), 1, False, False), (x3,))
    assert gradcheck(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), (x3,))
    assert gradcheck(lambda x: F.adaptive_max_pool3d(x, (2, 3, 2)), (x3,))


def test_gradcheck_interpolate_and_pixel_shuffle(device):
    x = _leaf(device, 1, 2, 3, 4)
    assert gradcheck(lambda x: F.interpolate(x, size=(5, 3)), (x,))
    assert gradcheck(lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear"), (x,))
    assert gradcheck(lambda x: F.interpolate(x, size=(4, 6), mode="bilinear", align_corners=True), (x,))
    assert gradcheck(lambda x: F.interpolate(x, size=(5, 5), mode="bicubic"), (x,))
    assert gradcheck(lambda x: F.interpolate(x, size=(2, 3), mode="area"), (x,))
    assert gradcheck(lambda x: F.interpolate(x.flatten(2), size=7, mode="linear"), (x,))
    y = _leaf(device, 1, 8, 2, 3)
    assert gradcheck(lambda y: F.pixel_shuffle(y, 2), (y,))
    assert gradcheck(lambda y: F.pixel_unshuffle(y, (2)), (_leaf(device, 1, 2, 4, 6),))


# -- errors ------------------------------------------------------------------------------------------------------------

def test_pooling_errors(device):
    x = core.zeros(1, 3, 8, 8, device=device)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got pad=2, "
                                           "kernel_size=3 and dilation=1"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match=r"Given input size: \(3x2x2\). Calculated output size: \(3x0x0\). "
                                           r"Output size is too small"):
        F.max_pool2d(core.zeros(1, 3, 2, 2, device=device), 3)
    with pytest.raises(RuntimeError, match=r"Given input size: \(3x2x2\). Calculated output size: \(3x0x0\)"):
        F.avg_pool2d(core.zeros(1, 3, 2, 2, device=device), 3)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        F.max_pool2d(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero, but got dilationH: 0 dilationW: 0"):
        F.max_pool2d(x, 2, dilation=0)
    with pytest.raises(RuntimeError, match="max_pool2d: kernel_size must either be a single int, or a tuple of two "
                                           "ints"):
        F.max_pool2d(x, (2, 2, 2))
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match=r"max_pool1d: Expected 2D or 3D \(batch mode\) tensor"):
        F.max_pool1d(core.zeros(8, device=device), 2)
    with pytest.raises(RuntimeError, match=r"non-empty 3D or 4D \(batch mode\) tensor expected for input"):
        F.max_pool2d(core.zeros(3, 8, device=device), 2)
    with pytest.raises(RuntimeError, match="Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 "
                                           "'self' \\(while checking arguments for avg_pool1d\\)"):
        F.avg_pool1d(core.zeros(8, device=device), 2)
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[3, 8\]"):
        F.adaptive_avg_pool2d(core.zeros(3, 8, device=device), 3)
    with pytest.raises(RuntimeError, match=r"adaptive_max_pool2d\(\): Expected input to have non-zero size for "
                                           r"non-batch dimensions, but input has sizes \[2, 0, 8\] with dimension 1"):
        F.adaptive_max_pool2d(core.zeros(2, 0, 8, device=device), 2)
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool1d\(\) argument 'output_size' should contain one int "
                                           r"\(got 2\)"):
        F.adaptive_avg_pool1d(core.zeros(1, 2, 8, device=device), (2, 2))


def test_interpolate_and_shuffle_errors(device):
    x = core.zeros(1, 3, 8, 8, device=device)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=4, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial dimensions"):
        F.interpolate(x, size=(4, 4, 4))
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(core.zeros(1, 3, 8, device=device), scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(NotImplementedError, match=r"Input Error: Only 3D, 4D and 5D input Tensors supported \(got "
                                                  r"4D\) for the modes: .* \(got foo\)"):
        F.interpolate(x, scale_factor=2, mode="foo")
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an explicit size"):
        F.interpolate(x, size=4, recompute_scale_factor=True)
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=3 is not divisible by 4"):
        F.pixel_shuffle(x, 2)
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                                           r"input.size\(-2\)=7 is not divisible by 2"):
        F.pixel_unshuffle(core.zeros(1, 3, 7, 8, device=device), 2)
    with pytest.raises(RuntimeError, match="pixel_shuffle expects input to have at least 3 dimensions, but got input "
                                           "with 2 dimension"):
        F.pixel_shuffle(core.zeros(3, 8, device=device), 2)


# -- modules -----------------------------------------------------------------------------------------------------------

def test_pooling_modules_forward_and_state(device):
    x = _t(_randn(2, 3, 7, 6), device)
    pool = nn.MaxPool2d(3, 2, 1, return_indices=True, ceil_mode=True)
    values, indices = pool(x)
    expected = ref_max_pool(core.testing.to_numpy(x), 3, 2, 1, 1, True)
    assert_close(values, expected[0])
    assert_close(indices, expected[1])
    assert_close(nn.AvgPool2d(2, count_include_pad=False, padding=1)(x),
                 ref_avg_pool(core.testing.to_numpy(x), 2, None, 1, False, False))
    assert_close(nn.AvgPool1d(3, 2)(x[0]), ref_avg_pool(core.testing.to_numpy(x[0]), 3, 2))
    assert_close(nn.AdaptiveAvgPool2d((None, 4))(x), ref_adaptive_pool(core.testing.to_numpy(x), (None, 4),
                                                                      lambda w: w.mean(-1)))
    assert_close(nn.AdaptiveMaxPool1d(4)(x[0]), ref_adaptive_pool(core.testing.to_numpy(x[0]), 4, lambda w: w.max(-1)))
    for module in (pool, nn.AvgPool2d(2), nn.AdaptiveMaxPool2d(2), nn.Upsample(scale_factor=2), nn.PixelShuffle(2)):
        assert dict(module.state_dict()) == {}  # no parameters or buffers, like PyTorch
        assert list(module.parameters()) == []


def test_resize_modules_forward(device):
    x = _t(_randn(1, 4, 3, 4), device)
    assert_close(nn.Upsample(scale_factor=2)(x), ref_nearest(core.testing.to_numpy(x), (6, 8)))
    assert_close(nn.Upsample(size=(5, 7), mode="bilinear")(x), ref_bilinear(core.testing.to_numpy(x), (5, 7), False))
    assert_close(nn.UpsamplingBilinear2d(scale_factor=2)(x), ref_bilinear(core.testing.to_numpy(x), (6, 8), True))
    assert_close(nn.UpsamplingNearest2d(size=(6, 2))(x), ref_nearest(core.testing.to_numpy(x), (6, 2)))
    assert_close(nn.PixelShuffle(2)(x), ref_pixel_shuffle(core.testing.to_numpy(x), 2))
    assert_close(nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(x)), x)


def test_module_reprs():
    cases = {
        nn.MaxPool2d(2): "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
        nn.MaxPool2d((2, 3), 1, 1, 2, True, True):
            "MaxPool2d(kernel_size=(2, 3), stride=1, padding=1, dilation=2, ceil_mode=True)",
        nn.MaxPool1d(2): "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
        nn.AvgPool2d(2): "AvgPool2d(kernel_size=2, stride=2, padding=0)",
        nn.AvgPool1d(2): "AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))",
        nn.AvgPool2d(3, 2, 1, True, False, 2): "AvgPool2d(kernel_size=3, stride=2, padding=1)",
        nn.AdaptiveAvgPool2d((2, 3)): "AdaptiveAvgPool2d(output_size=(2, 3))",
        nn.AdaptiveAvgPool1d(2): "AdaptiveAvgPool1d(output_size=2)",
        nn.AdaptiveMaxPool2d((None, 2), True): "AdaptiveMaxPool2d(output_size=(None, 2))",
        nn.Upsample(scale_factor=2): "Upsample(scale_factor=2.0, mode='nearest')",
        nn.Upsample(size=(3, 4), mode="bilinear"): "Upsample(size=(3, 4), mode='bilinear')",
        nn.UpsamplingNearest2d(scale_factor=2): "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')",
        nn.UpsamplingBilinear2d(size=3): "UpsamplingBilinear2d(size=3, mode='bilinear')",
        nn.PixelShuffle(2): "PixelShuffle(upscale_factor=2)",
        nn.PixelUnshuffle(3): "PixelUnshuffle(downscale_factor=3)",
    }
    for module, text in cases.items():
        assert repr(module) == text


# -- torch as an oracle (optional) -------------------------------------------------------------------------------------

def test_pooling_values_indices_and_gradients_match_torch(device):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = _randn(2, 3, 9, 7)
    cases = [("max_pool2d", dict(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)),
             ("max_pool2d", dict(kernel_size=(2, 3), stride=1, padding=(1, 0), dilation=(2, 1))),
             ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
             ("avg_pool2d", dict(kernel_size=(3, 2), stride=(2, 3), padding=1, divisor_override=4)),
             ("adaptive_avg_pool2d", dict(output_size=(4, 5))), ("adaptive_max_pool2d", dict(output_size=(4, 3))),
             ("interpolate", dict(scale_factor=1.6, mode="bilinear")),
             ("interpolate", dict(size=(4, 11), mode="bicubic", align_corners=True)),
             ("interpolate", dict(scale_factor=(0.6, 1.75), mode="bicubic")),
             ("interpolate", dict(scale_factor=0.45, mode="nearest")),
             ("interpolate", dict(size=(13, 5), mode="nearest-exact")),
             ("interpolate", dict(size=(4, 3), mode="area")), ("pixel_unshuffle", dict(downscale_factor=1))]
    for name, kwargs in cases:
        ours = _t(x, device, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        out = getattr(F, name)(ours, **kwargs)
        expected = getattr(tf, name)(theirs, **kwargs)
        assert_close(out, expected.detach().cpu().numpy(), msg=f"{name} {kwargs}")
        g = _randn(*expected.shape)
        (out * _t(g, device)).sum().backward()
        (expected * torch.tensor(g)).sum().backward()
        assert_close(ours.grad, theirs.grad.cpu().numpy(), msg=f"{name} {kwargs}")
    for name in ("max_pool2d", "adaptive_max_pool2d"):
        args = (3, 2, 1) if name == "max_pool2d" else ((4, 3),)
        indices = getattr(F, name)(_t(x, device), *args, return_indices=True)[1]
        assert_close(indices, getattr(tf, name)(torch.tensor(x), *args, return_indices=True)[1].cpu().numpy())


def test_pooling_module_reprs_match_torch():
    torch = pytest.importorskip("torch")
    specs = [("MaxPool3d", (2,), {}), ("AvgPool3d", (2, 1, 1), {}), ("AdaptiveAvgPool3d", ((1, None, 2),), {}),
             ("AdaptiveMaxPool1d", (3, True), {}), ("Upsample", (), dict(scale_factor=(2, 3), mode="bicubic")),
             ("Upsample", (), dict(size=5, mode="linear", align_corners=True))]
    for name, args, kwargs in specs:
        assert repr(getattr(nn, name)(*args, **kwargs)) == repr(getattr(torch.nn, name)(*args, **kwargs))
