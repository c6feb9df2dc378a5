"""Convolution, transposed convolution, unfold/fold and pad against direct NumPy loops (and torch when installed):
a stride/padding/dilation/groups grid, 'same' padding, dtypes and layouts, float64 gradchecks, errors with
PyTorch's messages, and the Conv/ConvTranspose/Fold/Unfold modules (init, state dict, padding modes, repr)."""

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

RNG = np.random.default_rng(1234)


def _randn(*shape):
    return RNG.standard_normal(shape)


def _np(t):
    return core.testing.to_numpy(t.detach())


def _t(a, device, dtype=core.float64, requires_grad=False):
    return core.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


# -- NumPy references: direct loops over output (or input) positions --------------------------------------------------

def ref_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation by looping over output positions; padding is an int, a per-dim list or (l, r) pairs."""
    nd = w.ndim - 2
    stride, dilation = _per_dim(stride, nd), _per_dim(dilation, nd)
    pads = [(p, p) if isinstance(p, int) else p for p in _per_dim(padding, nd)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    spans = [d * (k - 1) + 1 for k, d in zip(w.shape[2:], dilation)]
    out_sizes = [(xp.shape[2 + i] - spans[i]) // stride[i] + 1 for i in range(nd)]
    out = np.zeros((n, o) + tuple(out_sizes))
    og = o // groups
    for pos in itertools.product(*[range(s) for s in out_sizes]):
        window = xp[(slice(None), slice(None)) + tuple(
            slice(p * s, p * s + span, d) for p, s, span, d in zip(pos, stride, spans, dilation))]
        for g in range(groups):
            patch = window[:, g * cg:(g + 1) * cg].reshape(n, -1)
            out[(slice(None), slice(g * og, (g + 1) * og)) + pos] = patch @ w[g * og:(g + 1) * og].reshape(og, -1).T
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def ref_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Scatter every input element times the kernel into the output, then crop the padding."""
    nd = w.ndim - 2
    stride, padding = _per_dim(stride, nd), _per_dim(padding, nd)
    output_padding, dilation = _per_dim(output_padding, nd), _per_dim(dilation, nd)
    n, cin = x.shape[:2]
    og, kernel = w.shape[1], w.shape[2:]
    cg = cin // groups
    full = [(i - 1) * s + d * (k - 1) + 1 + op for i, s, d, k, op in
            zip(x.shape[2:], stride, dilation, kernel, output_padding)]
    out = np.zeros((n, og * groups) + tuple(full))
    for pos in itertools.product(*[range(s) for s in x.shape[2:]]):
        for kpos in itertools.product(*[range(k) for k in kernel]):
            target = tuple(p * s + kk * d for p, s, kk, d in zip(pos, stride, kpos, dilation))
            for g in range(groups):
                contrib = x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos] @ w[(slice(g * cg, (g + 1) * cg),
                                                                                     slice(None)) + kpos]
                out[(slice(None), slice(g * og, (g + 1) * og)) + target] += contrib
    out = out[(slice(None), slice(None)) + tuple(slice(p, f - p) for p, f in zip(padding, full))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nd)
    return out


def ref_unfold(x, kernel, dilation=1, padding=0, stride=1):
    kernel, dilation, padding, stride = (_per_dim(v, 2) for v in (kernel, dilation, padding, stride))
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, c = x.shape[:2]
    blocks = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(2)]
    cols = np.zeros((n, c, kernel[0], kernel[1], blocks[0], blocks[1]))
    for bi, bj, ki, kj in itertools.product(range(blocks[0]), range(blocks[1]), range(kernel[0]), range(kernel[1])):
        cols[:, :, ki, kj, bi, bj] = xp[:, :, bi * stride[0] + ki * dilation[0], bj * stride[1] + kj * dilation[1]]
    return cols.reshape(n, c * kernel[0] * kernel[1], blocks[0] * blocks[1])


def ref_fold(cols, output_size, kernel, dilation=1, padding=0, stride=1):
    output_size, kernel, dilation, padding, stride = (_per_dim(v, 2) for v in
                                                      (output_size, kernel, dilation, padding, stride))
    n = cols.shape[0]
    c = cols.shape[1] // (kernel[0] * kernel[1])
    padded = [o + 2 * p for o, p in zip(output_size, padding)]
    blocks = [(padded[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(2)]
    out = np.zeros((n, c, padded[0], padded[1]))
    cols = cols.reshape(n, c, kernel[0], kernel[1], blocks[0], blocks[1])
    for bi, bj, ki, kj in itertools.product(range(blocks[0]), range(blocks[1]), range(kernel[0]), range(kernel[1])):
        out[:, :, bi * stride[0] + ki * dilation[0], bj * stride[1] + kj * dilation[1]] += cols[:, :, ki, kj, bi, bj]
    return out[:, :, padding[0]:padding[0] + output_size[0], padding[1]:padding[1] + output_size[1]]


def _per_dim(value, nd):
    return [value] * nd if isinstance(value, int) else list(value)


NP_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def ref_pad(x, pad, mode="constant", value=0.0):
    """``F.pad`` via np.pad (negative constant amounts crop)."""
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)][::-1]
    lead = x.ndim - len(pairs)
    crop = tuple(slice(max(-l, 0), x.shape[lead + i] - max(-r, 0)) for i, (l, r) in enumerate(pairs))
    x = x[(slice(None),) * lead + crop]
    widths = [(0, 0)] * lead + [(max(l, 0), max(r, 0)) for l, r in pairs]
    kwargs = {"constant_values": value} if mode == "constant" else {}
    return np.pad(x, widths, mode=NP_PAD_MODES[mode], **kwargs)


# -- conv: the grid ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("dilation", [1, 2, (2, 1)])
def test_conv2d_grid_matches_numpy(groups, dilation, device):
    x, w, b = _randn(2, 4, 7, 6), _randn(6, 4 // groups, 3, 2), _randn(6)
    for stride, padding in itertools.product([1, 2, (2, 1)], [0, 1, (2, 1), "valid", "same"]):
        if padding == "same" and stride != 1:
            continue
        pads = "same" if padding == "same" else (0 if padding == "valid" else padding)
        if pads == "same":
            totals = [d * (k - 1) for k, d in zip((3, 2), _per_dim(dilation, 2))]
            pads = [(t // 2, t - t // 2) for t in totals]
        expected = ref_conv(x, w, b, stride, pads, dilation, groups)
        actual = F.conv2d(_t(x, device), _t(w, device), _t(b, device), stride, padding, dilation, groups)
        assert_close(actual, expected, msg=f"stride={stride} padding={padding}")


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2), (1, 2, 3, 1), (3, 1, 2, 4),
                                                            (1, "same", 2, 2), (2, "valid", 1, 1)])
def test_conv1d_matches_numpy(stride, padding, dilation, groups, device):
    x, w, b = _randn(3, 4, 11), _randn(8, 4 // groups, 3), _randn(8)
    pads = padding
    if padding == "same":
        pads = [(dilation * 2 // 2, dilation * 2 - dilation * 2 // 2)]
    elif padding == "valid":
        pads = 0
    actual = F.conv1d(_t(x, device), _t(w, device), _t(b, device), stride, padding, dilation, groups)
    assert_close(actual, ref_conv(x, w, b, stride, pads, dilation, groups))


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), ((1, 2, 1), 1, 1, 2), (2, (1, 0, 1), 2, 1)])
def test_conv3d_matches_numpy(stride, padding, dilation, groups, device):
    x, w = _randn(2, 2, 5, 6, 5), _randn(4, 2 // groups, 2, 3, 2)
    actual = F.conv3d(_t(x, device), _t(w, device), None, stride, padding, dilation, groups)
    assert_close(actual, ref_conv(x, w, None, stride, padding, dilation, groups))


def test_conv_same_padding_is_asymmetric_for_even_kernels(device):
    """'same' puts the odd extra element on the right, and keeps the spatial size."""
    x, w = _randn(1, 2, 6, 7), _randn(3, 2, 4, 2)
    actual = F.conv2d(_t(x, device), _t(w, device), padding="same", dilation=(1, 3))
    assert tuple(actual.shape) == (1, 3, 6, 7)
    assert_close(actual, ref_conv(x, w, None, 1, [(1, 2), (1, 2)], (1, 3)))


def test_conv_depthwise_and_pointwise(device):
    x = _randn(2, 6, 5, 5)
    depthwise, pointwise = _randn(6, 1, 3, 3), _randn(4, 6, 1, 1)
    assert_close(F.conv2d(_t(x, device), _t(depthwise, device), padding=1, groups=6),
                 ref_conv(x, depthwise, None, 1, 1, 1, 6))
    assert_close(F.conv2d(_t(x, device), _t(pointwise, device)), ref_conv(x, pointwise))


def test_conv_tiled_windows_fast_path(device):
    """stride == kernel reads the windows with a reshape; a size not divisible by the kernel drops the tail."""
    x, w = _randn(2, 3, 9, 8), _randn(5, 3, 2, 2)
    assert_close(F.conv2d(_t(x, device), _t(w, device), stride=2), ref_conv(x, w, None, 2))
    xt = _t(x, device, requires_grad=True)
    F.conv2d(xt, _t(w, device), stride=2).sum().backward()
    expected = np.zeros_like(x)
    expected[:, :, :8, :8] = np.tile(w.sum(0), (4, 4))
    assert_close(xt.grad, expected)


# -- dtypes, layouts, shapes -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(core.float32, 1e-5), (core.float16, 1e-2), (core.bfloat16, 5e-2)])
def test_conv2d_dtypes(dtype, tol, device):
    x, w, b = _randn(2, 3, 6, 6), _randn(4, 3, 3, 3) * 0.3, _randn(4)
    actual = F.conv2d(_t(x, device, dtype), _t(w, device, dtype), _t(b, device, dtype), padding=1)
    assert actual.dtype == dtype
    expected = ref_conv(_np(_t(x, device, dtype)).astype(np.float64),
                        _np(_t(w, device, dtype)).astype(np.float64),
                        _np(_t(b, device, dtype)).astype(np.float64), 1, 1)
    np.testing.assert_allclose(_np(actual.float()), expected, rtol=tol, atol=tol * 4)


def test_conv2d_non_contiguous_inputs(device):
    base = _randn(2, 3, 8, 10)
    w = _randn(4, 3, 3, 3)
    weight = _t(w.transpose(0, 1, 3, 2).copy(), device).transpose(2, 3)  # a transposed (non-contiguous) weight
    cases = {
        "transposed": (_t(base, device).transpose(2, 3), base.transpose(0, 1, 3, 2)),
        "stepped": (_t(base, device)[:, :, ::2, 1::3], base[:, :, ::2, 1::3]),
        "expanded": (_t(base[:1], device).expand(3, 3, 8, 10), np.broadcast_to(base[:1], (3, 3, 8, 10))),
    }
    for name, (actual_input, expected_input) in cases.items():
        assert_close(F.conv2d(actual_input, weight, padding=1), ref_conv(expected_input, w, None, 1, 1), msg=name)


def test_conv_unbatched_and_empty_batch(device):
    x, w, b = _randn(3, 6, 5), _randn(4, 3, 3, 2), _randn(4)
    out = F.conv2d(_t(x, device), _t(w, device), _t(b, device), padding=1)
    assert_close(out, ref_conv(x[None], w, b, 1, 1)[0])
    empty = F.conv2d(core.zeros(0, 3, 6, 5, dtype=core.float64, device=device), _t(w, device), stride=2)
    assert tuple(empty.shape) == (0, 4, 2, 2)
    assert tuple(F.conv1d(core.zeros(0, 2, 5, device=device), core.zeros(3, 2, 2, device=device)).shape) == (0, 3, 4)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 2), cg=st.integers(1, 2), og=st.integers(1, 2), groups=st.integers(1, 2),
       h=st.integers(1, 7), w=st.integers(1, 7), kh=st.integers(1, 3), kw=st.integers(1, 3),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), padding=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)), bias=st.booleans())
def test_conv2d_random_shapes(n, cg, og, groups, h, w, kh, kw, stride, padding, dilation, bias, device):
    if h + 2 * padding[0] < dilation[0] * (kh - 1) + 1 or w + 2 * padding[1] < dilation[1] * (kw - 1) + 1:
        return
    x, weight = _randn(n, cg * groups, h, w), _randn(og * groups, cg, kh, kw)
    b = _randn(og * groups) if bias else None
    actual = F.conv2d(_t(x, device), _t(weight, device), None if b is None else _t(b, device), stride, padding,
                      dilation, groups)
    assert_close(actual, ref_conv(x, weight, b, stride, padding, dilation, groups))


# -- transposed convolution --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("groups", [1, 2])
def test_conv_transpose2d_grid_matches_numpy(groups, device):
    x, b = _randn(2, 4, 4, 3), _randn(6)
    w = _randn(4, 6 // groups, 3, 2)
    for stride, padding, output_padding, dilation in itertools.product([1, 2, (3, 1)], [0, 1, (1, 0)], [0, 1],
                                                                       [1, 2]):
        if any(op >= s and op >= dilation for op, s in zip(_per_dim(output_padding, 2), _per_dim(stride, 2))):
            continue
        expected = ref_conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation)
        actual = F.conv_transpose2d(_t(x, device), _t(w, device), _t(b, device), stride, padding, output_padding,
                                    groups, dilation)
        assert_close(actual, expected, msg=f"{stride} {padding} {output_padding} {dilation}")


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [(1, 0, 0, 1, 1), (2, 1, 1, 2, 1),
                                                                           (3, 2, 0, 1, 2), (1, 1, 1, 1, 2)])
def test_conv_transpose1d_matches_numpy(stride, padding, output_padding, groups, dilation, device):
    x, w, b = _randn(2, 4, 5), _randn(4, 3, 3), _randn(3 * groups)
    w = w[:, :3] if groups == 1 else _randn(4, 3, 3)
    actual = F.conv_transpose1d(_t(x, device), _t(w, device), _t(b, device), stride, padding, output_padding,
                                groups, dilation)
    assert_close(actual, ref_conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation))


def test_conv_transpose_is_the_adjoint_of_conv(device):
    """<conv(x), y> == <x, conv_transpose(y)> with the same weight: the defining property."""
    x, w = _randn(2, 3, 9, 8), _randn(5, 3, 3, 3)
    y = _randn(2, 5, 5, 4)
    lhs = (_np(F.conv2d(_t(x, device), _t(w, device), stride=2, padding=1, dilation=1)) * y).sum()
    rhs = (x * _np(F.conv_transpose2d(_t(y, device), _t(w, device), stride=2, padding=1,
                                                output_padding=(0, 1)))).sum()
    assert math.isclose(lhs, rhs, rel_tol=1e-10)


def test_conv_transpose_unbatched_and_3d(device):
    x, w = _randn(2, 3, 3), _randn(2, 3, 2, 2)
    assert_close(F.conv_transpose2d(_t(x, device), _t(w, device), stride=2),
                 ref_conv_transpose(x[None], w, None, 2)[0])
    x3, w3 = _randn(1, 2, 2, 3, 2), _randn(2, 2, 2, 2, 2)
    assert_close(F.conv_transpose3d(_t(x3, device), _t(w3, device), stride=(1, 2, 1)),
                 ref_conv_transpose(x3, w3, None, (1, 2, 1)))


# -- unfold / fold -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,dilation,padding,stride", [(2, 1, 0, 1), ((2, 3), 2, 1, 2), (3, (1, 2), (0, 1), 1),
                                                            (2, 1, 0, 2)])
def test_unfold_fold_match_numpy(kernel, dilation, padding, stride, device):
    x = _randn(2, 3, 7, 8)
    cols = F.unfold(_t(x, device), kernel, dilation, padding, stride)
    expected = ref_unfold(x, kernel, dilation, padding, stride)
    assert_close(cols, expected)
    c = _randn(*expected.shape)
    assert_close(F.fold(_t(c, device), (7, 8), kernel, dilation, padding, stride),
                 ref_fold(c, (7, 8), kernel, dilation, padding, stride))
    assert_close(F.unfold(_t(x[0], device), kernel, dilation, padding, stride), expected[0])  # unbatched
    assert_close(F.fold(_t(c[0], device), (7, 8), kernel, dilation, padding, stride),
                 ref_fold(c, (7, 8), kernel, dilation, padding, stride)[0])


def test_fold_of_unfold_counts_overlaps(device):
    x = np.ones((1, 1, 4, 4))
    out = F.fold(F.unfold(_t(x, device), 2), (4, 4), 2)
    assert_close(out, np.array([[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]], dtype=float)[None, None])
    tiles = _t(_randn(2, 3, 6, 4), device)
    assert_close(F.fold(F.unfold(tiles, 2, stride=2), (6, 4), 2, stride=2), tiles)


def test_unfold_fold_errors(device):
    with pytest.raises(RuntimeError, match=r"calculated shape of the array of sliding blocks as \(0, 0\)"):
        F.unfold(core.zeros(1, 3, 8, 8, device=device), 9)
    with pytest.raises(RuntimeError, match=r"Expected 3D or 4D \(batch mode\) tensor"):
        F.unfold(core.zeros(3, 8, device=device), 2)
    with pytest.raises(RuntimeError, match=r"calculated number of sliding blocks 3 \* 3 = 9, but got "
                                           r"input.size\(2\)=8"):
        F.fold(core.zeros(1, 12, 8, device=device), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"divisible by the product of kernel_size, but got input.size\(1\)=13"):
        F.fold(core.zeros(1, 13, 9, device=device), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"Expected 2D or 3D \(batch mode\) tensor"):
        F.fold(core.zeros(1, 12, 9, 1, device=device), (4, 4), 2)


# -- pad ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((2, 3, 6), (2, 1)), ((3, 6), (0, 3)), ((2, 3, 5, 6), (1, 2, 3, 0)),
                                       ((3, 5, 6), (2, 2, 1, 1)), ((1, 2, 4, 5, 3), (1, 1, 2, 0, 0, 3))])
def test_pad_matches_numpy(mode, shape, pad, device):
    x = _randn(*shape)
    assert_close(F.pad(_t(x, device), pad, mode), ref_pad(x, pad, mode))


def test_pad_constant_value_negative_and_many_dims(device):
    x = _randn(2, 3, 4, 5)
    assert_close(F.pad(_t(x, device), (1, 1, 2, 0, 1, 1), value=3.5), ref_pad(x, (1, 1, 2, 0, 1, 1), value=3.5))
    assert_close(F.pad(_t(x, device), (-1, 2, 0, -3)), ref_pad(x, (-1, 2, 0, -3)))
    for mode in ("reflect", "replicate", "circular"):  # negative amounts crop first (circular wraps what is left)
        assert_close(F.pad(_t(x, device), (-1, 2, 1, -2), mode), ref_pad(x, (-1, 2, 1, -2), mode), msg=mode)
    assert_close(F.pad(_t(x, device), [1, 0, 0, 0, 0, 0, 1, 1]), ref_pad(x, (1, 0, 0, 0, 0, 0, 1, 1)))
    ints = core.arange(6, device=device).reshape(2, 3)
    assert_close(F.pad(ints, (1, 1), value=7), np.pad(np.arange(6).reshape(2, 3), [(0, 0), (1, 1)],
                                                      constant_values=7))
    assert_close(F.pad(_t(x, device), (1, 2, 1, 1), "reflect", value=0), ref_pad(x, (1, 2, 1, 1), "reflect"))


def test_pad_errors(device):
    x = core.zeros(1, 3, 8, 8, device=device)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times the input "
                                           "dimension but got padding length 10 and input of dimension 4"):
        F.pad(x, (1,) * 10)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor"):
        F.pad(x, (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(x, (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value argument'):
        F.pad(x, (1, 1, 1, 1), mode="reflect", value=1.0)
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension, "
                                           r"but got: padding \(8, 8\) at dimension 3 of input \[1, 3, 8, 8\]"):
        F.pad(x, (8, 8, 1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        F.pad(core.zeros(3, 8, device=device), (9, 1), mode="circular")
    with pytest.raises(RuntimeError, match="narrow"):
        F.pad(core.zeros(2, 3, 2, 8, device=device), (2, 1, -2, -1))


# -- gradients ---------------------------------------------------------------------------------------------------------

def _leaves(device, *shapes):
    return tuple(_t(_randn(*s), device, requires_grad=True) for s in shapes)


def test_gradcheck_conv1d_conv2d_conv3d(device):
    x, w, b = _leaves(device, (2, 4, 6), (4, 2, 3), (4,))
    assert gradcheck(lambda x, w, b: F.conv1d(x, w, b, 2, 1, 1, 2), (x, w, b))
    x, w, b = _leaves(device, (1, 2, 5, 4), (3, 2, 2, 3), (3,))
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, (2, 1), 1, (1, 2)), (x, w, b))
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, padding="same"), (x, w, b))
    x, w = _leaves(device, (1, 1, 3, 4, 3), (2, 1, 2, 2, 2))
    assert gradcheck(lambda x, w: F.conv3d(x, w, None, 1, (0, 1, 0)), (x, w))


def test_gradcheck_conv_transpose(device):
    x, w, b = _leaves(device, (1, 4, 3), (4, 2, 3), (4,))
    assert gradcheck(lambda x, w, b: F.conv_transpose1d(x, w, b, 2, 1, 1, 2), (x, w, b))
    x, w = _leaves(device, (1, 2, 3, 2), (2, 2, 2, 3))
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, None, 2, (1, 0), 1, 1, (1, 2)), (x, w))
    x, w = _leaves(device, (1, 2, 2, 2, 2), (2, 1, 2, 1, 2))
    assert gradcheck(lambda x, w: F.conv_transpose3d(x, w, None, (1, 2, 1), 0, 0, 2), (x, w))


def test_gradcheck_unfold_fold_pad(device):
    (x,) = _leaves(device, (1, 2, 4, 5))
    assert gradcheck(lambda x: F.unfold(x, 2, 1, 1, (1, 2)), (x,))
    (c,) = _leaves(device, (1, 8, 9))
    assert gradcheck(lambda c: F.fold(c, (4, 5), 2, 1, 1, 2), (c,))
    for mode in ("constant", "reflect", "replicate", "circular"):
        assert gradcheck(lambda x, mode=mode: F.pad(x, (2, 1, 1, 3), mode), (x,)), mode
    assert gradcheck(lambda x: F.pad(x, (-1, 2, 1, -2), value=2.0), (x,))


# -- errors ------------------------------------------------------------------------------------------------------------

def test_conv_errors(device):
    w = core.zeros(16, 3, 3, 3, device=device)
    with pytest.raises(RuntimeError, match=r"^Given groups=1, weight of size \[16, 3, 3, 3\], expected "
                                           r"input\[1, 4, 8, 8\] to have 3 channels, but got 4 channels instead$"):
        F.conv2d(core.zeros(1, 4, 8, 8, device=device), w)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 4, 8, 8\] to have 3 channels"):
        F.conv2d(core.zeros(4, 8, 8, device=device), w)  # unbatched input is reported batched, like PyTorch
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got "
                                           r"input of size: \[8, 8\]"):
        F.conv2d(core.zeros(8, 8, device=device), w)
    x = core.zeros(1, 3, 8, 8, device=device)
    with pytest.raises(RuntimeError, match=r"expected bias to be 1-dimensional with 16 elements, but got bias of "
                                           r"size \[8\] instead"):
        F.conv2d(x, w, core.zeros(8, device=device))
    with pytest.raises(RuntimeError, match=r"Given groups=3, expected weight to be divisible by 3 at dimension 0, "
                                           r"but got weight of size \[\[16, 3, 3, 3\]\] instead"):
        F.conv2d(x, w, groups=3)
    with pytest.raises(RuntimeError, match="non-positive groups is not supported"):
        F.conv2d(x, w, groups=0)
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: \(2 x 2\). Kernel size: "
                                           r"\(3 x 3\). Kernel size can't be greater than actual input size"):
        F.conv2d(core.zeros(1, 3, 2, 2, device=device), w)
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(x, w, stride=0)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Invalid padding string: 'foo'"):
        F.conv2d(x, w, padding="foo")
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        F.conv2d(x, w, padding=-1)
    with pytest.raises(RuntimeError, match=r"dilation should be greater than zero, but got \[0, 0\]"):
        F.conv2d(x, w, dilation=0)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        F.conv2d(x.double(), w)
    with pytest.raises(RuntimeError, match=r"Input type \(float\) and bias type \(double\) should be the same"):
        F.conv2d(x, w, core.zeros(16, dtype=core.float64, device=device))
    with pytest.raises(RuntimeError, match=r"expected stride to be a single integer value or a list of 2 values"):
        F.conv2d(x, w, stride=(1, 1, 1))


def test_conv_transpose_errors(device):
    x = core.zeros(1, 3, 8, 8, device=device)
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation, but got "
                                           "output_padding_height: 1 output_padding_width: 1 stride_height: 1 "
                                           "stride_width: 1 dilation_height: 1 dilation_width: 1"):
        F.conv_transpose2d(x, core.zeros(3, 2, 3, 3, device=device), output_padding=1)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[3, 2, 3, 3\], expected "
                                           r"input\[1, 4, 8, 8\] to have 3 channels, but got 4 channels instead"):
        F.conv_transpose2d(core.zeros(1, 4, 8, 8, device=device), core.zeros(3, 2, 3, 3, device=device))
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[4, 2, 3, 3\], expected bias to "
                                           r"be 1-dimensional with 4 elements, but got bias of size \[3\] instead"):
        F.conv_transpose2d(core.zeros(1, 4, 8, 8, device=device), core.zeros(4, 2, 3, 3, device=device),
                           core.zeros(3, device=device), groups=2)
    with pytest.raises(RuntimeError, match=r"Calculated output size per channel: \(-1 x -1\). Output size is too"):
        F.conv_transpose2d(core.zeros(1, 4, 1, 1, device=device), core.zeros(4, 2, 3, 3, device=device), padding=2)
    with pytest.raises(TypeError, match="argument 'padding' must be tuple of ints, not str"):
        F.conv_transpose2d(x, core.zeros(3, 2, 3, 3, device=device), padding="same")


# -- modules -----------------------------------------------------------------------------------------------------------

def test_conv_module_parameters_and_default_init(device):
    core.manual_seed(0)
    m = nn.Conv2d(4, 8, (3, 2), groups=2, device=device)
    assert [name for name, _ in m.named_parameters()] == ["weight", "bias"]
    assert tuple(m.weight.shape) == (8, 2, 3, 2) and tuple(m.bias.shape) == (8,)
    bound = 1 / math.sqrt(2 * 3 * 2)  # kaiming_uniform_(a=√5) gives the same bound as the bias: 1/√fan_in
    for p in (m.weight, m.bias):
        values = _np(p)
        assert np.all(np.abs(values) <= bound) and values.std() > bound / 4
    t = nn.ConvTranspose2d(4, 6, 3, groups=2, bias=False, device=device)
    assert tuple(t.weight.shape) == (4, 3, 3, 3) and t.bias is None
    assert [name for name, _ in t.named_parameters()] == ["weight"]


def test_conv_module_forward_and_state_dict_round_trip(device):
    core.manual_seed(1)
    m = nn.Conv2d(2, 3, 3, stride=2, padding=1, dilation=1, device=device).double()
    x = _randn(2, 2, 7, 6)
    out = m(_t(x, device))
    assert_close(out, ref_conv(x, _np(m.weight), _np(m.bias), 2, 1))
    fresh = nn.Conv2d(2, 3, 3, stride=2, padding=1, device=device).double()
    fresh.load_state_dict(m.state_dict())
    assert_close(fresh(_t(x, device)), out)
    t = nn.ConvTranspose1d(2, 4, 3, stride=2, padding=1, output_padding=1, device=device).double()
    t2 = nn.ConvTranspose1d(2, 4, 3, stride=2, padding=1, output_padding=1, device=device).double()
    t2.load_state_dict(t.state_dict())
    x1 = _t(_randn(1, 2, 5), device)
    assert_close(t2(x1), t(x1))
    assert_close(t(x1), ref_conv_transpose(_np(x1), _np(t.weight), _np(t.bias), 2, 1,
                                           1))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_module_padding_modes(mode, device):
    m = nn.Conv2d(2, 3, (3, 2), padding=(1, 2), padding_mode=mode, device=device).double()
    x = _randn(1, 2, 5, 6)
    padded = ref_pad(x, (2, 2, 1, 1), mode)
    assert_close(m(_t(x, device)), ref_conv(padded, _np(m.weight), _np(m.bias)))
    same = nn.Conv1d(2, 2, 4, padding="same", padding_mode=mode, device=device).double()
    x1 = _randn(1, 2, 7)
    assert_close(same(_t(x1, device)), ref_conv(ref_pad(x1, (1, 2), mode), _np(same.weight),
                                                _np(same.bias)))


def test_conv_transpose_module_output_size(device):
    m = nn.ConvTranspose2d(3, 2, 3, stride=2, device=device)
    x = core.randn(1, 3, 4, 4, device=device)
    assert tuple(m(x).shape) == (1, 2, 9, 9)
    assert tuple(m(x, output_size=(10, 9)).shape) == (1, 2, 10, 9)
    assert tuple(m(x, output_size=[1, 2, 10, 10]).shape) == (1, 2, 10, 10)
    with pytest.raises(ValueError, match=r"requested an output size of \[11, 9\], but valid sizes range from "
                                         r"\[9, 9\] to \[10, 10\]"):
        m(x, output_size=(11, 9))


def test_conv_module_constructor_errors():
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(2, 2, 3, groups=0)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 2, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(2, 3, 3, groups=2)
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(2, 2, 3, padding="full")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv1d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")


def test_conv_module_reprs():
    assert repr(nn.Conv2d(1, 16, 3, padding=1)) == \
        "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    assert repr(nn.Conv2d(1, 16, 3, padding="same", bias=False, dilation=2, padding_mode="reflect")) == \
        "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=same, dilation=(2, 2), bias=False, " \
        "padding_mode=reflect)"
    assert repr(nn.Conv1d(4, 8, 3, stride=2, groups=2)) == "Conv1d(4, 8, kernel_size=(3,), stride=(2,), groups=2)"
    assert repr(nn.Conv3d(2, 4, 3)) == "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1))"
    assert repr(nn.ConvTranspose2d(4, 8, 3, stride=2, output_padding=1, dilation=2)) == \
        "ConvTranspose2d(4, 8, kernel_size=(3, 3), stride=(2, 2), dilation=(2, 2), output_padding=(1, 1))"
    assert repr(nn.Fold((4, 4), 2)) == "Fold(output_size=(4, 4), kernel_size=2, dilation=1, padding=0, stride=1)"
    assert repr(nn.Unfold(2, padding=1)) == "Unfold(kernel_size=2, dilation=1, padding=1, stride=1)"


def test_fold_unfold_modules(device):
    x = _randn(2, 3, 5, 6)
    unfold, fold = nn.Unfold((2, 3), padding=1, stride=2), nn.Fold((5, 6), (2, 3), padding=1, stride=2)
    cols = unfold(_t(x, device))
    assert_close(cols, ref_unfold(x, (2, 3), 1, 1, 2))
    assert_close(fold(cols), ref_fold(ref_unfold(x, (2, 3), 1, 1, 2), (5, 6), (2, 3), 1, 1, 2))


def test_conv_small_cnn_trains(device):
    """A conv -> relu -> pool -> linear net on a toy task: the loss falls (gradients flow through every layer)."""
    core.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(16, 2)).to(device)
    x = core.randn(32, 1, 4, 4, device=device)
    y = (x[:, 0, :2].sum((1, 2)) > x[:, 0, 2:].sum((1, 2))).long()
    opt = core.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0]


# -- torch as an oracle (optional) -------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv_functionals_and_gradients_match_torch(device):
    torch = pytest.importorskip("torch")
    cases = [
        ("conv1d", (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
        ("conv2d", (2, 4, 7, 6), (6, 4, 3, 2), dict(stride=(2, 1), padding="valid", dilation=(1, 2))),
        ("conv2d", (2, 4, 7, 6), (6, 2, 2, 2), dict(padding="same", groups=2)),
        ("conv3d", (1, 2, 4, 5, 4), (3, 2, 2, 2, 3), dict(stride=(1, 2, 1), padding=1)),
        ("conv_transpose1d", (2, 4, 5), (4, 3, 3), dict(stride=3, padding=1, output_padding=2, groups=2)),
        ("conv_transpose2d", (2, 4, 4, 3), (4, 2, 3, 2), dict(stride=2, padding=(1, 0), output_padding=1,
                                                              dilation=(1, 2))),
    ]
    for name, xs, ws, kwargs in cases:
        x, w = _randn(*xs), _randn(*ws)
        ours = [_t(x, device, requires_grad=True), _t(w, device, requires_grad=True)]
        theirs = [torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)]
        out = getattr(F, name)(*ours, **kwargs)
        expected = getattr(torch.nn.functional, name)(*theirs, **kwargs)
        assert_close(out, expected.detach().cpu().numpy(), msg=name)
        g = _randn(*expected.shape)
        (out * _t(g, device)).sum().backward()
        (expected * torch.tensor(g)).sum().backward()
        for a, b in zip(ours, theirs):
            assert_close(a.grad, b.grad.cpu().numpy(), msg=name)


def test_conv_modules_load_torch_state_dicts(device):
    torch = pytest.importorskip("torch")
    specs = [("Conv1d", (4, 6, 3), dict(stride=2, groups=2), (2, 4, 9)),
             ("Conv2d", (3, 4, (3, 2)), dict(padding=1, padding_mode="circular"), (2, 3, 6, 5)),
             ("Conv2d", (2, 4, 3), dict(padding="same", dilation=2, bias=False, padding_mode="reflect"), (1, 2, 7, 7)),
             ("Conv3d", (2, 2, 2), dict(padding=(1, 0, 1)), (1, 2, 3, 4, 3)),
             ("ConvTranspose1d", (4, 2, 3), dict(stride=2, output_padding=1), (2, 4, 5)),
             ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, groups=2), (1, 4, 3, 4))]
    for name, args, kwargs, shape in specs:
        theirs = getattr(torch.nn, name)(*args, **kwargs).double()
        ours = getattr(nn, name)(*args, **kwargs).to(device).double()
        ours.load_state_dict({k: core.tensor(v.detach().cpu().numpy(), device=device)
                              for k, v in theirs.state_dict().items()})
        assert repr(ours) == repr(theirs)
        x = _randn(*shape)
        assert_close(ours(_t(x, device)), theirs(torch.tensor(x)).detach().cpu().numpy(), msg=name)


def test_pad_matches_torch(device):
    torch = pytest.importorskip("torch")
    x = _randn(2, 3, 5, 4)
    for mode, pad in [("constant", (1, -1, 2, 0, 1, 1)), ("reflect", (3, 1, 0, 4)), ("replicate", (2, 5, 3, 0)),
                      ("circular", (4, 1, -2, 3))]:
        assert_close(F.pad(_t(x, device), pad, mode), torch.nn.functional.pad(torch.tensor(x), pad, mode).cpu().numpy(),
                     msg=mode)
