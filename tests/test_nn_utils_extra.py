"""core.nn.utils' fusion and reparametrisation helpers on every device: batch norm folded into conv/linear layers
matches the unfused pair, weight_norm and spectral_norm recompute the weight as PyTorch does (state_dict keys,
NumPy power iteration, gradients) and their remove_ functions undo them."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import nn
from core.autograd import gradcheck
from core.testing import assert_close


def _np(t):
    return t.detach().cpu().numpy()


def _randomise_bn(bn, device):
    rng = np.random.default_rng(0)
    n = bn.num_features
    with core.no_grad():
        bn.running_mean.copy_(core.tensor(rng.standard_normal(n), dtype=bn.running_mean.dtype, device=device))
        bn.running_var.copy_(core.tensor(rng.random(n) + 0.5, dtype=bn.running_var.dtype, device=device))
        bn.weight.copy_(core.tensor(rng.standard_normal(n), dtype=bn.weight.dtype, device=device))
        bn.bias.copy_(core.tensor(rng.standard_normal(n), dtype=bn.bias.dtype, device=device))
    return bn.eval()


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(device, transpose):
    conv = (nn.ConvTranspose2d(3, 4, 3) if transpose else nn.Conv2d(3, 4, 3)).to(device).eval()
    bn = _randomise_bn(nn.BatchNorm2d(4).to(device), device)
    x = core.tensor(np.random.default_rng(1).standard_normal((2, 3, 6, 6)).astype(np.float32), device=device)
    fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    assert fused is not conv and isinstance(fused.weight, nn.Parameter)
    assert_close(_np(fused(x)), _np(bn(conv(x))), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(conv.train(), bn)


def test_fuse_linear_bn_eval_and_weights(device):
    linear = nn.Linear(5, 4, bias=False).to(device).eval()
    bn = _randomise_bn(nn.BatchNorm1d(4).to(device), device)
    x = core.tensor(np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32), device=device)
    fused = nn.utils.fuse_linear_bn_eval(linear, bn)
    assert_close(_np(fused(x)), _np(bn(linear(x))), rtol=1e-4, atol=1e-5)
    w, b = (_np(t) for t in (bn.weight, bn.bias))
    scale = w / np.sqrt(_np(bn.running_var) + bn.eps)
    fw, fb = nn.utils.fuse_linear_bn_weights(linear.weight, None, bn.running_mean, bn.running_var, bn.eps, None,
                                             None)
    assert_close(_np(fw), _np(linear.weight) / np.sqrt(_np(bn.running_var) + bn.eps)[:, None])
    assert_close(_np(fb), -_np(bn.running_mean) / np.sqrt(_np(bn.running_var) + bn.eps))
    assert_close(_np(fused.bias), -_np(bn.running_mean) * scale + b, rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(linear, _randomise_bn(nn.BatchNorm1d(3).to(device), device))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm(device, dim):
    layer = nn.Linear(3, 4).to(device).double()
    w = _np(layer.weight)
    layer = nn.utils.weight_norm(layer, dim=dim)
    assert list(layer.state_dict()) == ["bias", "weight_g", "weight_v"]
    norm = np.sqrt((w ** 2).sum()) if dim is None else np.linalg.norm(w, axis=1 - dim, keepdims=True)
    assert_close(_np(layer.weight_g), norm)
    with core.no_grad():
        layer.weight_g.mul_(2.0)
    x = core.tensor(np.random.default_rng(1).standard_normal((2, 3)), device=device)
    assert_close(_np(layer(x)), _np(x) @ (2 * w).T + _np(layer.bias))
    g, v = layer.weight_g, layer.weight_v
    assert gradcheck(lambda gg, vv: vv * (gg / core.norm_except_dim(vv, 2, -1 if dim is None else dim)), (
        g.detach().clone().requires_grad_(), v.detach().clone().requires_grad_()))
    layer(x).sum().backward()
    assert g.grad is not None and v.grad is not None
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        nn.utils.weight_norm(layer, dim=dim)
    nn.utils.remove_weight_norm(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight"] and isinstance(layer.weight, nn.Parameter)
    assert_close(_np(layer.weight), 2 * w)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(layer)


def test_spectral_norm(device):
    layer = nn.utils.spectral_norm(nn.Linear(5, 4).to(device).double())
    assert list(layer.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    w, u = _np(layer.weight_orig).copy(), _np(layer.weight_u).copy()
    x = core.tensor(np.random.default_rng(1).standard_normal((2, 5)), device=device)
    out = layer(x)  # training: one power-iteration step first
    v = w.T @ u
    v /= np.linalg.norm(v)
    u = w @ v
    u /= np.linalg.norm(u)
    sigma = u @ w @ v
    assert_close(_np(layer.weight_u), u) and assert_close(_np(layer.weight_v), v)
    assert_close(_np(out), _np(x) @ (w / sigma).T + _np(layer.bias))
    out.sum().backward()
    assert layer.weight_orig.grad is not None
    for _ in range(50):
        layer(x)
    assert_close(np.linalg.norm(_np(layer.weight), 2), 1.0, rtol=1e-5, atol=1e-6)
    layer.eval()
    before = _np(layer.weight_u).copy()
    layer(x)
    assert np.array_equal(_np(layer.weight_u), before)  # no power iteration in eval
    nn.utils.remove_spectral_norm(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight"]
    assert_close(np.linalg.norm(_np(layer.weight), 2), 1.0, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(layer)
    conv_t = nn.utils.spectral_norm(nn.ConvTranspose1d(2, 3, 2).to(device))
    assert tuple(conv_t.weight_u.shape) == (3,)  # dim 1 (out channels) for ConvTranspose


def test_convert_conv_weight_memory_format(device):
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Sequential(nn.ConvTranspose2d(4, 2, 2)),
                          nn.Conv3d(2, 2, 1)).to(device)
    before = [_np(p).copy() for p in model.parameters()]
    x = core.tensor(np.random.default_rng(1).standard_normal((1, 3, 5, 5)).astype(np.float32), device=device)
    expected = _np(model[2](model[0](x)))
    assert nn.utils.convert_conv2d_weight_memory_format(model, core.channels_last) is model
    assert model[0].weight.is_contiguous(memory_format=core.channels_last)
    assert model[2][0].weight.is_contiguous(memory_format=core.channels_last)
    assert model[3].weight.is_contiguous()  # a Conv3d is not a 2-D convolution
    nn.utils.convert_conv3d_weight_memory_format(model, core.channels_last_3d)
    assert model[3].weight.is_contiguous(memory_format=core.channels_last_3d)
    assert all(np.array_equal(_np(p), b) for p, b in zip(model.parameters(), before))
    assert_close(_np(model[2](model[0](x))), expected)


def test_skip_init(device):
    layer = nn.utils.skip_init(nn.Linear, 3, 4, device=device)
    assert isinstance(layer, nn.Linear) and tuple(layer.weight.shape) == (4, 3)
    assert layer.weight.device.type == core.device(device).type and isinstance(layer.weight, nn.Parameter)
    assert tuple(layer(core.ones(2, 3, device=device)).shape) == (2, 4)
    norm = nn.utils.skip_init(nn.BatchNorm1d, 5)
    assert list(norm.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        nn.utils.skip_init(nn.ReLU)
