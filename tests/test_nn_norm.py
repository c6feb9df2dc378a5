"""Normalisation, dropout, embedding and distance functionals and their modules, against NumPy (and torch when
installed): values, running statistics replayed step by step, train/eval, float64 gradchecks, reprs, state dicts."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
import core.nn as nn
import core.nn.functional as F
from core.autograd import gradcheck
from core.testing import assert_close, to_numpy


def randn(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def t(a, device, dtype=None, requires_grad=False):
    return core.tensor(a, device=device, dtype=dtype, requires_grad=requires_grad)


def npy(x):
    """A host NumPy copy of a tensor on any device (detached)."""
    return to_numpy(x.detach())


def channel_shape(ndim):
    return lambda v: v.reshape((-1,) + (1,) * (ndim - 2))


# -- NumPy references ------------------------------------------------------------------------------------------------
def np_batch_norm(x, weight=None, bias=None, eps=1e-5, mean=None, var=None):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = channel_shape(x.ndim)
    if mean is None:
        mean, var = x.mean(axes), x.var(axes)
    out = (x - shape(mean)) / np.sqrt(shape(var) + eps)
    if weight is not None:
        out = out * shape(weight)
    if bias is not None:
        out = out + shape(bias)
    return out


def np_instance_norm(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


def np_group_norm(x, groups, weight=None, bias=None, eps=1e-5):
    g = x.reshape(x.shape[0], groups, -1)
    out = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    shape = channel_shape(x.ndim)
    return out * shape(weight) + shape(bias) if weight is not None else out


def np_layer_norm(x, n, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(-n, 0))
    out = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return out * weight + bias if weight is not None else out


def np_local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    sq = np.concatenate([np.zeros_like(x[:, :size // 2]), x * x, np.zeros_like(x[:, :(size - 1) // 2])], 1)
    div = np.stack([sq[:, i:i + size].sum(1) for i in range(c)], 1) / size
    return x / (k + alpha * div) ** beta


# -- batch norm ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 3, 2)])
@pytest.mark.parametrize("dtype", [core.float32, core.float64])
def test_batch_norm_training_values(device, shape, dtype):
    x = randn(*shape)
    w, b = randn(3, seed=1), randn(3, seed=2)
    out = F.batch_norm(t(x, device, dtype), None, None, t(w, device, dtype), t(b, device, dtype), training=True)
    assert_close(out, np_batch_norm(x, w, b).astype(dtype.numpy), rtol=1e-4, atol=1e-5)


def test_batch_norm_eval_values_and_noncontiguous(device):
    x = randn(3, 4, 5)
    rm, rv, w, b = randn(4, seed=1), np.abs(randn(4, seed=2)) + 0.5, randn(4, seed=3), randn(4, seed=4)
    xt = t(np.ascontiguousarray(x.transpose(2, 1, 0)), device).permute(2, 1, 0)  # transposed layout
    assert not xt.is_contiguous()
    out = F.batch_norm(xt, t(rm, device), t(rv, device), t(w, device), t(b, device), training=False)
    assert_close(out, np_batch_norm(x, w, b, mean=rm, var=rv))


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_batch_norm_module_running_stats_replay(device, momentum):
    bn = nn.BatchNorm2d(3, momentum=momentum).to(device).double()
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(1, 4):
        x = randn(4, 3, 2, 3, seed=step) * step + step
        out = bn(t(x, device))
        assert_close(out, np_batch_norm(x), rtol=1e-6, atol=1e-6)
        factor = 1.0 / step if momentum is None else momentum
        n = x.size // 3
        rm = (1 - factor) * rm + factor * x.mean((0, 2, 3))
        rv = (1 - factor) * rv + factor * x.var((0, 2, 3)) * n / (n - 1)  # unbiased for the running estimate
        assert_close(bn.running_mean, rm)
        assert_close(bn.running_var, rv)
        assert bn.num_batches_tracked.item() == step
        assert bn.num_batches_tracked.dtype == core.int64
    bn.eval()
    x = randn(2, 3, 2, 2, seed=9)
    assert_close(bn(t(x, device)), np_batch_norm(x, mean=rm, var=rv))
    assert bn.num_batches_tracked.item() == 3  # eval leaves the statistics alone
    assert_close(bn.running_mean, rm)


def test_batch_norm_train_vs_eval(device):
    bn = nn.BatchNorm1d(4).to(device)
    x = t(randn(8, 4, dtype=np.float32) * 3 + 2, device)
    train_out = bn(x)
    bn.eval()
    eval_out = bn(x)
    assert not np.allclose(npy(train_out), npy(eval_out), atol=1e-2)
    assert_close(train_out.mean(0), np.zeros(4, np.float32), atol=1e-5, rtol=0)


def test_batch_norm_functional_momentum_and_no_running(device):
    x = randn(5, 2, 3)
    rm, rv = t(np.ones(2), device), t(np.full(2, 2.0), device)
    F.batch_norm(t(x, device), rm, rv, training=True, momentum=0.3)
    n = 15
    assert_close(rm, 0.7 + 0.3 * x.mean((0, 2)))
    assert_close(rv, 1.4 + 0.3 * x.var((0, 2)) * n / (n - 1))


def test_batch_norm_without_tracking(device):
    bn = nn.BatchNorm1d(3, track_running_stats=False, affine=False).to(device)
    assert bn.running_mean is None and bn.running_var is None and bn.num_batches_tracked is None
    assert list(bn.state_dict()) == [] and list(bn.parameters()) == []
    x = randn(6, 3, dtype=np.float32)
    bn.eval()  # no running statistics: batch statistics even in eval mode
    assert_close(bn(t(x, device)), np_batch_norm(x).astype(np.float32), rtol=1e-4, atol=1e-5)


def test_batch_norm_half(device):
    x = randn(8, 3, 4, dtype=np.float32)
    bn = nn.BatchNorm1d(3).to(device)
    out = bn.half()(t(x, device, core.float16))
    assert out.dtype == core.float16
    assert_close(out, np_batch_norm(x).astype(np.float16), rtol=1e-2, atol=1e-2)
    bn.eval()
    assert bn(t(x, device, core.float16)).dtype == core.float16


def test_batch_norm_float32_stats_with_half_input(device):
    x = randn(8, 3, dtype=np.float32)
    rm, rv = t(np.zeros(3, np.float32), device), t(np.ones(3, np.float32), device)
    out = F.batch_norm(t(x, device, core.float16), rm, rv, training=True)
    assert out.dtype == core.float16
    assert_close(rm, 0.1 * x.mean(0), rtol=1e-2, atol=1e-3)
    out = F.batch_norm(t(x, device, core.float16), rm, rv, training=False)
    assert out.dtype == core.float16


def test_batch_norm_empty_batch(device):
    rm, rv = t(np.zeros(3), device), t(np.ones(3), device)
    out = F.batch_norm(core.zeros(0, 3, device=device, dtype=core.float64), rm, rv, training=True)
    assert out.shape == (0, 3)
    assert_close(rm, np.zeros(3))


def test_batch_norm_errors(device):
    x = t(randn(4, 3, 5), device)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(x, t(np.zeros(4), device), t(np.ones(3), device), training=True)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        F.batch_norm(x, None, None, weight=t(np.ones(4), device), training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None, training=False)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(t(randn(1, 3), device), None, None, training=True)
    with pytest.raises(ValueError, match="eps must be positive"):
        F.batch_norm(x, None, None, training=True, eps=0.0)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(x)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(x.unsqueeze(0))
    with pytest.raises(ValueError, match=r"expected 5D input \(got 3D input\)"):
        nn.BatchNorm3d(3)(x)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(device, training):
    x = t(randn(3, 2, 2), device, requires_grad=True)
    w = t(randn(2, seed=1), device, requires_grad=True)
    b = t(randn(2, seed=2), device, requires_grad=True)
    rm, rv = t(randn(2, seed=3), device), t(np.abs(randn(2, seed=4)) + 1, device)
    if training:
        assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    else:
        assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=False), (x, w, b))


def test_batch_norm_module_backward_and_repr(device):
    bn = nn.BatchNorm2d(16).to(device)
    assert repr(bn) == "BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert repr(nn.BatchNorm1d(4, affine=False, momentum=None)) == \
        "BatchNorm1d(4, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)"
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    assert_close(bn.weight, np.ones(16, np.float32))
    assert_close(bn.bias, np.zeros(16, np.float32))
    bn(t(randn(2, 16, 2, 2, dtype=np.float32), device)).pow(2).sum().backward()
    assert bn.weight.grad.shape == (16,) and bn.bias.grad.shape == (16,)
    assert bn.running_mean.grad_fn is None and not bn.running_mean.requires_grad


def test_batch_norm_reset_and_state_dict_round_trip(device):
    bn = nn.BatchNorm1d(3).to(device)
    bn(t(randn(5, 3, dtype=np.float32) + 4, device))
    copy = nn.BatchNorm1d(3).to(device)
    copy.load_state_dict(bn.state_dict())
    bn.eval(), copy.eval()
    x = t(randn(4, 3, seed=3, dtype=np.float32), device)
    assert_close(copy(x), bn(x))
    assert copy.num_batches_tracked.item() == 1
    bn.reset_running_stats()
    assert_close(bn.running_mean, np.zeros(3, np.float32))
    assert bn.num_batches_tracked.item() == 0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=0, max_size=2), st.integers(2, 4), st.integers(1, 3))
def test_batch_norm_shapes_hypothesis(spatial, batch, channels):
    shape = (batch, channels, *spatial)
    x = randn(*shape)
    out = F.batch_norm(core.tensor(x), None, None, training=True)
    assert_close(out, np_batch_norm(x), rtol=1e-6, atol=1e-6)


# -- instance norm ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 3), (1, 2, 2, 2, 3)])
def test_instance_norm_values(device, shape):
    x = randn(*shape)
    assert_close(F.instance_norm(t(x, device)), np_instance_norm(x))
    w, b = randn(3, seed=1)[:shape[1]], randn(3, seed=2)[:shape[1]]
    s = channel_shape(len(shape))
    assert_close(F.instance_norm(t(x, device), weight=t(w, device), bias=t(b, device)),
                 np_instance_norm(x) * s(w) + s(b))


def test_instance_norm_running_stats_replay(device):
    norm = nn.InstanceNorm1d(3, track_running_stats=True, momentum=0.2).to(device).double()
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(3):
        x = randn(4, 3, 5, seed=step) + step
        assert_close(norm(t(x, device)), np_instance_norm(x))
        rm = 0.8 * rm + 0.2 * x.mean(2).mean(0)
        rv = 0.8 * rv + 0.2 * x.var(2, ddof=1).mean(0)
        assert_close(norm.running_mean, rm)
        assert_close(norm.running_var, rv)
    norm.eval()
    x = randn(2, 3, 4, seed=7)
    assert_close(norm(t(x, device)), (x - rm[:, None]) / np.sqrt(rv[:, None] + 1e-5))


def test_instance_norm_module_defaults_unbatched_and_repr(device):
    norm = nn.InstanceNorm2d(3).to(device)
    assert repr(norm) == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, " \
                         "bias=False, track_running_stats=False)"
    assert list(norm.parameters()) == [] and list(norm.state_dict()) == []
    x = randn(3, 4, 4, dtype=np.float32)
    out = norm(t(x, device))  # unbatched (C, H, W)
    assert out.shape == (3, 4, 4)
    assert_close(out, np_instance_norm(x[None])[0], rtol=1e-4, atol=1e-5)
    norm.eval()  # no running statistics: eval still uses the input's statistics
    assert_close(norm(t(x, device)), out)
    affine = nn.InstanceNorm1d(2, affine=True).to(device)
    assert [n for n, _ in affine.named_parameters()] == ["weight", "bias"]
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(2\), but got: 3"):
        affine(t(randn(2, 3, 4), device, core.float32))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(2)(t(randn(2, 3, 4), device))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        norm(t(randn(3, 4), device))


def test_instance_norm_errors(device):
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(t(randn(2, 3, 1), device))
    with pytest.raises(RuntimeError, match="running_mean should contain 12 elements not 16"):
        F.instance_norm(t(randn(4, 3, 5), device), t(np.zeros(4), device), t(np.ones(4), device))


def test_instance_norm_gradcheck(device):
    x = t(randn(2, 2, 3), device, requires_grad=True)
    w = t(randn(2, seed=1), device, requires_grad=True)
    b = t(randn(2, seed=2), device, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, w, b))


# -- group norm ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,groups", [((2, 4, 3), 2), ((3, 6, 2, 2), 3), ((2, 4), 4), ((2, 4, 5), 1)])
def test_group_norm_values(device, shape, groups):
    x = randn(*shape)
    c = shape[1]
    w, b = randn(c, seed=1), randn(c, seed=2)
    assert_close(F.group_norm(t(x, device), groups, t(w, device), t(b, device)), np_group_norm(x, groups, w, b))
    assert_close(F.group_norm(t(x, device), groups), np_group_norm(x, groups))


def test_group_norm_module_and_errors(device):
    gn = nn.GroupNorm(2, 4).to(device)
    assert repr(gn) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert repr(nn.GroupNorm(2, 4, affine=False)) == "GroupNorm(2, 4, eps=1e-05, affine=False, bias=False)"
    x = randn(3, 4, 5, dtype=np.float32)
    assert_close(gn(t(x, device)), np_group_norm(x, 2).astype(np.float32), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"num_channels \(5\) must be divisible by num_groups \(2\)"):
        nn.GroupNorm(2, 5)
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible by num_groups"):
        F.group_norm(t(randn(4, 3, 5), device), 2)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal to the number of channels"):
        F.group_norm(t(randn(4, 3, 5), device), 3, weight=t(np.ones(4), device))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(t(randn(4), device), 1)


def test_group_norm_gradcheck(device):
    x = t(randn(2, 4, 2), device, requires_grad=True)
    w = t(randn(4, seed=1), device, requires_grad=True)
    b = t(randn(4, seed=2), device, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))


# -- layer norm and RMS norm -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,normalized", [((2, 3, 4), (4,)), ((2, 3, 4), (3, 4)), ((5,), 5), ((2, 0, 3), (3,))])
def test_layer_norm_values(device, shape, normalized):
    x = randn(*shape)
    n = 1 if isinstance(normalized, int) else len(normalized)
    norm_shape = shape[len(shape) - n:]
    w, b = randn(*norm_shape, seed=1), randn(*norm_shape, seed=2)
    assert_close(F.layer_norm(t(x, device), normalized, t(w, device), t(b, device)), np_layer_norm(x, n, w, b))
    assert_close(F.layer_norm(t(x, device), normalized), np_layer_norm(x, n))


def test_layer_norm_module(device):
    ln = nn.LayerNorm(10).to(device)
    assert repr(ln) == "LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.LayerNorm((3, 4), bias=False)) == "LayerNorm((3, 4), eps=1e-05, elementwise_affine=True, bias=False)"
    assert ln.normalized_shape == (10,)
    assert list(nn.LayerNorm(3, elementwise_affine=False).parameters()) == []
    assert [n for n, _ in nn.LayerNorm(3, bias=False).named_parameters()] == ["weight"]
    x = randn(2, 10, dtype=np.float32)
    assert_close(ln(t(x, device)), np_layer_norm(x, 1).astype(np.float32), rtol=1e-4, atol=1e-5)
    assert ln(t(x, device)).requires_grad


def test_layer_norm_errors(device):
    x = t(randn(4, 3, 5), device)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but "
                                           r"got input of size\[4, 3, 5\]"):
        F.layer_norm(x, (4,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(x, (5,), weight=t(np.ones(4), device))


def test_layer_norm_gradcheck(device):
    x = t(randn(2, 2, 3), device, requires_grad=True)
    w = t(randn(2, 3, seed=1), device, requires_grad=True)
    b = t(randn(2, 3, seed=2), device, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (2, 3), w, b), (x, w, b))


def test_rms_norm(device):
    x = randn(2, 3, 4)
    w = randn(4, seed=1)
    expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.finfo(np.float64).eps) * w
    assert_close(F.rms_norm(t(x, device), (4,), t(w, device)), expected)
    m = nn.RMSNorm(4).to(device).double()
    assert repr(m) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
    assert_close(m(t(x, device)), expected / w)
    xt = t(x, device, requires_grad=True)
    wt = t(w, device, requires_grad=True)
    assert gradcheck(lambda x, w: F.rms_norm(x, (4,), w, eps=1e-6), (xt, wt))


# -- local response norm ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,size", [((2, 5, 3), 3), ((2, 4, 2, 3), 2), ((1, 3, 2, 2, 2), 5)])
def test_local_response_norm(device, shape, size):
    x = randn(*shape)
    assert_close(F.local_response_norm(t(x, device), size, alpha=0.1, beta=0.6, k=2.0),
                 np_local_response_norm(x, size, 0.1, 0.6, 2.0))
    m = nn.LocalResponseNorm(size)
    assert repr(m) == f"LocalResponseNorm({size}, alpha=0.0001, beta=0.75, k=1.0)"
    assert_close(m(t(x, device)), np_local_response_norm(x, size))


def test_local_response_norm_gradcheck_and_errors(device):
    x = t(randn(2, 4, 3), device, requires_grad=True)
    assert gradcheck(lambda x: F.local_response_norm(x, 3, alpha=0.5), (x,))
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality\s+input \(got 2 dimensions\)"):
        F.local_response_norm(t(randn(2, 3), device), 2)


# -- dropout ---------------------------------------------------------------------------------------------------------
def test_dropout_statistics_and_scaling(device):
    x = core.ones(200, 100, device=device)
    out = F.dropout(x, 0.3, training=True)
    values = npy(out)
    assert set(np.unique(values)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((values == 0).mean() - 0.3) < 0.02


def test_dropout_eval_and_edge_probabilities(device):
    x = t(randn(4, 5, dtype=np.float32), device)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0, training=True) is x
    assert_close(F.dropout(x, 1.0, training=True), np.zeros((4, 5), np.float32))
    for fn in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
            fn(x, 1.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got -0.1"):
        nn.Dropout(-0.1)


def test_dropout_gradient_is_the_mask(device):
    x = t(randn(50, 40), device, requires_grad=True)
    out = F.dropout(x, 0.4)
    out.sum().backward()
    kept = npy(out) != 0
    assert_close(x.grad, kept / 0.6)


def test_dropout_inplace(device):
    x = core.ones(100, 10, device=device)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x
    assert set(np.unique(npy(x))) <= {0.0, 2.0}


def test_dropout_module_train_eval(device):
    m = nn.Dropout(0.5)
    assert repr(m) == "Dropout(p=0.5, inplace=False)"
    x = core.ones(1000, device=device)
    assert (npy(m(x)) == 0).any()
    m.eval()
    assert_close(m(x), np.ones(1000, np.float32))


@pytest.mark.parametrize("fn,shape,batched", [
    (F.dropout1d, (8, 6, 5), True), (F.dropout1d, (6, 5), False), (F.dropout2d, (8, 6, 3, 3), True),
    (F.dropout2d, (8, 6, 5), True), (F.dropout3d, (4, 6, 2, 2, 2), True), (F.dropout3d, (6, 2, 2, 2), False)])
def test_channel_dropout_zeroes_whole_channels(device, fn, shape, batched):
    core.manual_seed(0)  # keeps some channels and drops others in every case (3 of 6 in the unbatched ones)
    x = core.ones(*shape, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropout2d warns about 3-D input (treated as (N, C, L))
        out = npy(fn(x, 0.5))
    assert out.shape == shape
    per_channel = out.reshape(shape[0] * shape[1] if batched else shape[0], -1)
    # every channel is either all dropped or all kept and scaled by 2
    assert all(len(np.unique(row)) == 1 and row[0] in (0.0, 2.0) for row in per_channel)
    assert 0.0 in per_channel[:, 0] and 2.0 in per_channel[:, 0]


def test_channel_dropout_errors_and_warnings(device):
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(core.ones(2, 3, 4, 5, device=device))
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(core.ones(2, 3, 4, device=device))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(core.ones(2, 3, device=device))
    for cls in (nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout):
        assert repr(cls(0.2, inplace=True)) == f"{cls.__name__}(p=0.2, inplace=True)"


def test_alpha_dropout_keeps_mean_and_variance(device):
    core.manual_seed(0)
    x = core.randn(400, 500, device=device, dtype=core.float64)
    out = npy(F.alpha_dropout(x, 0.2, training=True))
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    dropped_value = np.unique(out[np.isclose(out, out.min())])
    assert dropped_value.size >= 1
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False
    channel = npy(F.feature_alpha_dropout(core.ones(50, 8, 3, device=device), 0.5, training=True))
    assert all(len(np.unique(row)) == 1 for row in channel.reshape(-1, 3))


# -- embedding -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("index_dtype", [core.int64, core.int32])
def test_embedding_values(device, index_dtype):
    w = randn(6, 3)
    idx = np.array([[1, 2, 5], [0, 5, 5]])
    out = F.embedding(t(idx, device, index_dtype), t(w, device))
    assert_close(out, w[idx])
    assert F.embedding(t(np.array(4), device), t(w, device)).shape == (3,)


def test_embedding_padding_idx_gradient(device):
    w = t(randn(5, 3), device, requires_grad=True)
    idx = t(np.array([[0, 2, 0], [4, 2, 1]]), device)
    out = F.embedding(idx, w, padding_idx=2)
    assert_close(out.detach(), npy(w)[npy(idx)])  # forward still returns the padding row
    (out * t(randn(2, 3, 3, seed=5), device)).sum().backward()
    grad = npy(w.grad)
    assert np.all(grad[2] == 0) and np.all(grad[3] == 0)
    g_out = randn(2, 3, 3, seed=5)
    assert_close(w.grad[0], g_out[0, 0] + g_out[0, 2])
    assert_close(w.grad[4], g_out[1, 0])
    w.grad = None
    F.embedding(idx, w, padding_idx=-3).sum().backward()  # -3 wraps to 2
    assert np.all(npy(w.grad)[2] == 0)


def test_embedding_max_norm_and_scale_grad_by_freq(device):
    w_np = randn(5, 4) * 3
    w = t(w_np, device, requires_grad=True)
    idx = t(np.array([1, 3, 3]), device)
    out = F.embedding(idx, w, max_norm=1.0)
    norms = np.linalg.norm(npy(w), axis=1)
    assert np.all(norms[[1, 3]] <= 1.0 + 1e-6)
    assert_close(w.detach()[0], w_np[0])  # rows not looked up are untouched
    assert_close(out.detach(), npy(w)[[1, 3, 3]])
    w2 = t(w_np, device, requires_grad=True)
    F.embedding(idx, w2, scale_grad_by_freq=True).sum().backward()
    expected = np.zeros((5, 4))
    expected[1], expected[3] = 1.0, 1.0  # two lookups of row 3, each scaled by 1/2
    assert_close(w2.grad, expected)


def test_embedding_errors(device):
    w = t(randn(3, 2), device)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int"):
        F.embedding(t(np.array([1.0]), device), w)
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(t(np.array([5]), device), w)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(t(np.array([1]), device), t(randn(3), device))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(t(np.array([1]), device), w, padding_idx=3)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=-4)


def test_embedding_gradcheck(device):
    w = t(randn(4, 3), device, requires_grad=True)
    idx = t(np.array([[0, 3], [3, 1]]), device)
    assert gradcheck(lambda w: F.embedding(idx, w), (w,))
    assert gradcheck(lambda w: F.embedding(idx, w, max_norm=100.0), (w,))


def test_embedding_module(device):
    core.manual_seed(0)
    emb = nn.Embedding(10, 3, padding_idx=0).to(device)
    assert repr(emb) == "Embedding(10, 3, padding_idx=0)"
    assert repr(nn.Embedding(10, 3, max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True, sparse=True)) == \
        "Embedding(10, 3, max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True, sparse=True)"
    assert np.all(npy(emb.weight)[0] == 0)
    assert emb.weight.requires_grad and emb.weight.shape == (10, 3)
    assert abs(float(npy(emb.weight)[1:].std()) - 1) < 0.5  # N(0, 1) initialisation
    idx = t(np.array([[0, 1], [2, 0]]), device)
    emb(idx).sum().backward()
    assert np.all(npy(emb.weight.grad)[0] == 0)
    assert_close(emb.weight.grad[1], np.ones(3, np.float32))
    assert nn.Embedding(4, 2, padding_idx=-1).padding_idx == 3


def test_embedding_from_pretrained(device):
    weights = t(randn(4, 3, dtype=np.float32), device)
    emb = nn.Embedding.from_pretrained(weights)
    assert not emb.weight.requires_grad
    assert_close(emb(t(np.array([2, 0]), device)), npy(weights)[[2, 0]])
    assert nn.Embedding.from_pretrained(weights, freeze=False).weight.requires_grad
    emb_pad = nn.Embedding.from_pretrained(weights, padding_idx=1)
    assert not np.all(npy(emb_pad.weight)[1] == 0)  # pretrained rows are kept, padding row included
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(t(randn(3), device))
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nn.Embedding(5, 3, _weight=weights)


def test_embedding_state_dict_round_trip(device):
    a, b = nn.Embedding(6, 2).to(device), nn.Embedding(6, 2).to(device)
    b.load_state_dict(a.state_dict())
    idx = t(np.array([5, 1, 1]), device)
    assert_close(b(idx), a(idx))
    assert list(a.state_dict()) == ["weight"]


# -- one_hot ---------------------------------------------------------------------------------------------------------
def test_one_hot(device):
    idx = np.array([[0, 2], [1, 3]])
    out = F.one_hot(t(idx, device))
    assert out.dtype == core.int64
    assert_close(out, np.eye(4, dtype=np.int64)[idx])
    assert_close(F.one_hot(t(idx, device), 6), np.eye(6, dtype=np.int64)[idx])
    assert_close(F.one_hot(t(np.array(2), device), 3), np.array([0, 0, 1]))
    assert F.one_hot(core.zeros(0, dtype=core.int64, device=device), 3).shape == (0, 3)
    idx_t = t(np.arange(6).reshape(2, 3), device).t()  # non-contiguous
    assert_close(F.one_hot(idx_t), np.eye(6, dtype=np.int64)[np.arange(6).reshape(2, 3).T])


def test_one_hot_errors(device):
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(t(np.array([1.0]), device))
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(t(np.array([-1]), device))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(t(np.array([3]), device), 2)
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor."):
        F.one_hot(core.zeros(0, dtype=core.int64, device=device))


# -- normalize, distances --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1), (math.inf, 1), (2.0, (1, 2))])
def test_normalize(device, p, dim):
    x = randn(2, 3, 4)
    axis = dim if isinstance(dim, tuple) else (dim,)
    if p == math.inf:
        norm = np.abs(x).max(axis, keepdims=True)
    else:
        norm = (np.abs(x) ** p).sum(axis, keepdims=True) ** (1 / p)
    assert_close(F.normalize(t(x, device), p=p, dim=dim), x / np.maximum(norm, 1e-12))


def test_normalize_eps_out_and_gradcheck(device):
    zeros = core.zeros(2, 3, device=device, dtype=core.float64)
    assert_close(F.normalize(zeros), np.zeros((2, 3)))
    out = core.empty(2, 3, device=device, dtype=core.float64)
    x = randn(2, 3)
    result = F.normalize(t(x, device), out=out)
    assert result is out
    assert_close(out, x / np.linalg.norm(x, axis=1, keepdims=True))
    xt = t(x, device, requires_grad=True)
    assert gradcheck(lambda x: F.normalize(x, dim=1), (xt,))
    assert gradcheck(lambda x: F.normalize(x, p=3.0, dim=0), (xt,))


def test_pairwise_distance(device):
    a, b = randn(4, 5), randn(4, 5, seed=1)
    assert_close(F.pairwise_distance(t(a, device), t(b, device)), np.linalg.norm(a - b + 1e-6, axis=-1))
    assert_close(F.pairwise_distance(t(a, device), t(b, device), p=1.0, keepdim=True),
                 np.abs(a - b + 1e-6).sum(-1, keepdims=True))
    assert_close(F.pairwise_distance(t(a, device), t(b[0], device)), np.linalg.norm(a - b[0] + 1e-6, axis=-1))
    assert F.pairwise_distance(t(a[0], device), t(b[0], device)).shape == ()
    at, bt = t(a, device, requires_grad=True), t(b, device, requires_grad=True)
    assert gradcheck(lambda x, y: F.pairwise_distance(x, y), (at, bt))
    with pytest.raises(RuntimeError):
        F.pairwise_distance(t(randn(2, 3), device), t(randn(3, 3), device))


def test_cosine_similarity(device):
    a, b = randn(4, 5), randn(4, 5, seed=1)
    expected = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert_close(F.cosine_similarity(t(a, device), t(b, device)), expected)
    assert_close(F.cosine_similarity(t(a, device), t(b[:1], device), dim=-1),
                 (a * b[0]).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b[0])))
    assert F.cosine_similarity(t(a[0], device), t(b[0], device), dim=0).shape == ()
    zero = core.zeros(1, 5, device=device, dtype=core.float64)
    assert_close(F.cosine_similarity(zero, t(b[:1], device)), np.zeros(1))
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet common dtype is Long"):
        F.cosine_similarity(t(np.array([[1, 0]]), device), t(np.array([[1, 1]]), device))
    mixed = F.cosine_similarity(t(a, device, core.float16), t(b, device, core.float32))
    assert mixed.dtype == core.float32
    at, bt = t(a, device, requires_grad=True), t(b, device, requires_grad=True)
    assert gradcheck(lambda x, y: F.cosine_similarity(x, y), (at, bt))


# -- torch as an oracle (optional) -----------------------------------------------------------------------------------
def test_functionals_match_torch(device):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = randn(3, 4, 5)
    w, b = randn(4, seed=1), randn(4, seed=2)
    X, W, B = (torch.tensor(v) for v in (x, w, b))
    xc, wc, bc = (t(v, device) for v in (x, w, b))
    assert_close(F.batch_norm(xc, None, None, wc, bc, training=True),
                 tf.batch_norm(X, None, None, W, B, training=True).numpy())
    assert_close(F.group_norm(xc, 2, wc, bc), tf.group_norm(X, 2, W, B).numpy())
    assert_close(F.instance_norm(xc, weight=wc, bias=bc), tf.instance_norm(X, weight=W, bias=B).numpy())
    assert_close(F.layer_norm(xc, (5,)), tf.layer_norm(X, (5,)).numpy())
    assert_close(F.rms_norm(xc, (4, 5)), tf.rms_norm(X, (4, 5)).numpy())
    assert_close(F.local_response_norm(xc, 3), tf.local_response_norm(X, 3).numpy())
    assert_close(F.normalize(xc, p=1.5, dim=2), tf.normalize(X, p=1.5, dim=2).numpy())
    assert_close(F.pairwise_distance(xc, xc.flip(0)), tf.pairwise_distance(X, X.flip(0)).numpy())
    assert_close(F.cosine_similarity(xc, xc.flip(1), dim=2), tf.cosine_similarity(X, X.flip(1), dim=2).numpy())
    idx = np.array([[1, 0], [3, 3]])
    assert_close(F.one_hot(t(idx, device), 5), tf.one_hot(torch.tensor(idx), 5).numpy())
    # running statistics after one training step
    rm, rv = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    rmc, rvc = t(np.zeros(4), device), t(np.ones(4), device)
    tf.batch_norm(X, rm, rv, training=True, momentum=0.3)
    F.batch_norm(xc, rmc, rvc, training=True, momentum=0.3)
    assert_close(rmc, rm.numpy())
    assert_close(rvc, rv.numpy())


def test_gradients_match_torch(device):
    torch = pytest.importorskip("torch")
    x, w = randn(4, 3, 2), randn(3, seed=1)
    X, W = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    xc, wc = t(x, device, requires_grad=True), t(w, device, requires_grad=True)
    g = randn(4, 3, 2, seed=3)
    (torch.nn.functional.batch_norm(X, None, None, W, training=True) * torch.tensor(g)).sum().backward()
    (F.batch_norm(xc, None, None, wc, training=True) * t(g, device)).sum().backward()
    assert_close(xc.grad, X.grad.numpy())
    assert_close(wc.grad, W.grad.numpy())
    emb_w = randn(5, 2)
    EW, ew = torch.tensor(emb_w, requires_grad=True), t(emb_w, device, requires_grad=True)
    idx = np.array([0, 1, 1, 4, 0])
    torch.nn.functional.embedding(torch.tensor(idx), EW, padding_idx=1, scale_grad_by_freq=True).pow(2).sum().backward()
    F.embedding(t(idx, device), ew, padding_idx=1, scale_grad_by_freq=True).pow(2).sum().backward()
    assert_close(ew.grad, EW.grad.numpy())


@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("BatchNorm1d", (4,), {}, (5, 4, 3)),
    ("BatchNorm2d", (4,), {"momentum": None}, (3, 4, 2, 2)),
    ("BatchNorm3d", (2,), {"affine": False}, (2, 2, 2, 2, 2)),
    ("InstanceNorm1d", (4,), {"affine": True, "track_running_stats": True}, (2, 4, 3)),
    ("InstanceNorm2d", (4,), {}, (2, 4, 3, 3)),
    ("LayerNorm", ((3, 2),), {}, (2, 4, 3, 2)),
    ("GroupNorm", (2, 4), {}, (3, 4, 5)),
    ("RMSNorm", (3,), {"eps": 1e-6}, (2, 3)),
])
def test_modules_load_torch_state_dict(device, name, args, kwargs, shape):
    """A state_dict exported from torch loads here and gives the same outputs in train and eval mode."""
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(nn, name)(*args, **kwargs).to(device).double(), \
        getattr(torch.nn, name)(*args, **kwargs).double()
    assert repr(ours) == repr(theirs)
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(torch.randn(p.shape, dtype=p.dtype))
    for step in range(2):
        x = randn(*shape, seed=step)
        theirs(torch.tensor(x))
    result = ours.load_state_dict({k: core.tensor(v.numpy(), device=device) for k, v in theirs.state_dict().items()})
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = randn(*shape, seed=5)
    assert_close(ours(t(x, device)), theirs(torch.tensor(x)).detach().numpy())
    ours.eval(), theirs.eval()
    assert_close(ours(t(x, device)), theirs(torch.tensor(x)).detach().numpy())
    for key, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[key], value.numpy())


def test_embedding_loads_torch_state_dict(device):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Embedding(7, 3, padding_idx=2)
    ours = nn.Embedding(7, 3, padding_idx=2).to(device)
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: core.tensor(v.numpy(), device=device) for k, v in theirs.state_dict().items()})
    idx = np.array([[2, 6], [0, 1]])
    assert_close(ours(t(idx, device)), theirs(torch.tensor(idx)).detach().numpy())


@pytest.mark.parametrize("make, shape, expected_repr", [
    (lambda: nn.BatchNorm1d(3, bias=False), (4, 3),
     "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=True)"),
    (lambda: nn.BatchNorm2d(3, bias=False), (2, 3, 2, 2),
     "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=True)"),
    (lambda: nn.InstanceNorm1d(3, affine=True, bias=False), (2, 3, 5),
     "InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=False)"),
    (lambda: nn.GroupNorm(3, 3, bias=False), (2, 3, 4), "GroupNorm(3, 3, eps=1e-05, affine=True, bias=False)"),
], ids=["batchnorm1d", "batchnorm2d", "instancenorm1d", "groupnorm"])
def test_affine_norm_without_bias_learns_only_the_weight(device, make, shape, expected_repr):
    """``bias=False`` with an affine norm (LayerNorm's ``bias`` argument, which PyTorch 2.13's other norms take too
    and print in their reprs): a weight, no bias parameter, y = x̂ · w."""
    module = make().to(device).double()
    assert repr(module) == expected_repr
    assert [n for n, _ in module.named_parameters()] == ["weight"] and module.bias is None
    assert "bias" not in module.state_dict()
    w = randn(3, seed=1)
    with core.no_grad():
        module.weight.copy_(t(w, device))
    x = randn(*shape)
    # every case here normalises each channel over the batch (batch norm) or over its own positions (one channel
    # per group / instance norm): the reference is the per-channel normalisation scaled by w
    axes = (0,) + tuple(range(2, len(shape))) if "BatchNorm" in expected_repr else tuple(range(2, len(shape)))
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-5) * channel_shape(len(shape))(w)
    assert_close(module(t(x, device)), expected)
