"""The torch-level nn functions (``torch.conv2d``, ``torch.batch_norm``, ``torch.lstm``, ...) with ATen's signatures,
and the functionals built on them (grid_sample, affine_grid, embedding_bag, pdist, ...), against NumPy on every
device; PyTorch's errors; gradients in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest

import core
import core.nn.functional as F
from core.autograd import gradcheck
from core.testing import assert_close


_DRAWS: dict = {}


@pytest.fixture(autouse=True)
def fresh_draws():
    """One generator per test, seeded 0: successive draws within a test differ, every run draws the same."""
    _DRAWS["rng"] = np.random.default_rng(0)


def _rng():
    return _DRAWS["rng"]


def _t(a, device, requires_grad=False, dtype=None):
    return core.tensor(np.asarray(a), device=device, requires_grad=requires_grad, dtype=dtype)


def _np(t):
    return t.detach().cpu().numpy()


def _f32(*shape):
    return _rng().standard_normal(shape).astype(np.float32)


# -- signature adapters: same values as F, ATen's argument order ------------------------------------------------------

def test_pooling(device):
    a = _f32(2, 3, 8)
    x = _t(a, device)
    windows = a.reshape(2, 3, 4, 2)
    assert_close(core.max_pool1d(x, 2), windows.max(-1))
    assert_close(core.avg_pool1d(x, 2), windows.mean(-1))
    values, indices = core.max_pool1d_with_indices(x, 2)
    assert_close(values, windows.max(-1))
    assert_close(indices, (windows.argmax(-1) + 2 * np.arange(4)).astype(np.int64))
    assert_close(core.adaptive_avg_pool1d(x, 4), windows.mean(-1))
    values, indices = core.adaptive_max_pool1d(x, 4)
    assert_close(values, windows.max(-1))
    a2 = _f32(1, 2, 4, 4)
    blocks = a2.reshape(1, 2, 2, 2, 2, 2).max((3, 5))
    assert_close(core.max_pool2d(_t(a2, device), 2), blocks)
    assert_close(core.max_pool2d(_t(a2, device), [2, 2], [2, 2]), blocks)
    assert_close(core.max_pool3d(_t(a2, device), 2), a2.reshape(1, 1, 2, 2, 2, 2, 2).max((2, 4, 6)))


def test_dropout_family(device):
    x = core.ones(200, 8, device=device)
    assert core.dropout(x, 0.5, False) is x
    out = core.dropout(x, 0.5, True)
    assert set(np.unique(_np(out))) <= {0.0, 2.0} and 0.3 < float((out == 0).float().mean()) < 0.7
    feature = _np(core.feature_dropout(core.ones(50, 6, 3, device=device), 0.5, True))
    assert all(len(np.unique(plane)) == 1 for plane in feature.reshape(300, 3))  # whole channels dropped
    y = core.ones(100, 4, device=device)
    assert core.dropout_(y, 0.5, True) is y and set(np.unique(_np(y))) <= {0.0, 2.0}
    alpha = _np(core.alpha_dropout(x, 0.5, True))
    assert len(np.unique(alpha)) == 2  # kept and dropped values, both affine-shifted
    assert core.feature_alpha_dropout(x, 0.5, False) is x
    for inplace in (core.alpha_dropout_, core.feature_alpha_dropout_, core.feature_dropout_):
        z = core.ones(10, 4, 2, device=device)
        assert inplace(z, 0.2, True) is z
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        core.dropout(x, 1.5, True)


def test_native_dropout(device):
    x = _t(_f32(300, 5), device)
    out, mask = core.native_dropout(x, 0.25, True)
    assert mask.dtype is core.bool
    assert_close(out, np.where(_np(mask), _np(x) / 0.75, 0), rtol=1e-6, atol=1e-6)
    assert 0.65 < float(mask.float().mean()) < 0.85
    out, mask = core.native_dropout(x, 0.25, False)
    assert bool(mask.all()) and out is not x and bool((out == x).all())
    with pytest.raises(RuntimeError, match="dropout probability"):
        core.native_dropout(x, -0.1, True)


def _batch_stats(a):
    dims = (0,) + tuple(range(2, a.ndim))
    return a.mean(dims), a.var(dims)


def test_batch_instance_group_layer_rms_norm(device):
    a = _f32(4, 3, 5)
    x = _t(a, device)
    w, b = _f32(3), _f32(3)
    mean, var = _batch_stats(a)
    running_mean, running_var = core.zeros(3, device=device), core.ones(3, device=device)
    out = core.batch_norm(x, _t(w, device), _t(b, device), running_mean, running_var, True, 0.1, 1e-5, False)
    expected = (a - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * w[:, None] + b[:, None]
    assert_close(out, expected, rtol=1e-4, atol=1e-5)
    assert_close(running_mean, 0.1 * mean, rtol=1e-4, atol=1e-6)
    assert_close(running_var, 0.9 + 0.1 * a.var((0, 2), ddof=1), rtol=1e-4, atol=1e-6)
    inst = core.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False)
    assert_close(inst, (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5), rtol=1e-4,
                 atol=1e-5)
    a4 = _f32(2, 4, 3)
    grouped = a4.reshape(2, 2, 6)
    expected = ((grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(grouped.var(-1, keepdims=True) + 1e-5))
    assert_close(core.group_norm(_t(a4, device), 2), expected.reshape(2, 4, 3), rtol=1e-4, atol=1e-5)
    assert_close(core.layer_norm(x, [5]), (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5),
                 rtol=1e-4, atol=1e-5)
    assert_close(core.rms_norm(x, [5], eps=1e-6), a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-6), rtol=1e-4,
                 atol=1e-5)


def test_native_norms(device):
    a = _f32(4, 3, 5)
    x = _t(a, device)
    out, mean, rstd = core.native_layer_norm(x, [3, 5], None, None, 1e-5)
    m, v = a.mean((1, 2), keepdims=True), a.var((1, 2), keepdims=True)
    assert mean.shape == (4, 1, 1) and rstd.shape == (4, 1, 1)
    assert_close(mean, m, rtol=1e-5, atol=1e-6)
    assert_close(rstd, 1 / np.sqrt(v + 1e-5), rtol=1e-4)
    assert_close(out, (a - m) / np.sqrt(v + 1e-5), rtol=1e-4, atol=1e-5)
    w, b = _f32(4), _f32(4)
    a2 = _f32(2, 4, 3)
    out, mean, rstd = core.native_group_norm(_t(a2, device), _t(w, device), _t(b, device), 2, 4, 3, 2, 1e-5)
    g = a2.reshape(2, 2, 6)
    assert mean.shape == (2, 2) and rstd.shape == (2, 2)
    assert_close(mean, g.mean(-1), rtol=1e-5, atol=1e-6)
    normalised = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(2, 4, 3)
    assert_close(out, normalised * w[:, None] + b[:, None], rtol=1e-4, atol=1e-5)
    running_mean, running_var = core.zeros(3, device=device), core.ones(3, device=device)
    out, save_mean, save_invstd = core.native_batch_norm(x, None, None, running_mean, running_var, True, 0.5, 1e-5)
    bm, bv = _batch_stats(a)
    assert_close(save_mean, bm, rtol=1e-5, atol=1e-6)
    assert_close(save_invstd, 1 / np.sqrt(bv + 1e-5), rtol=1e-4)
    assert_close(running_var, 0.5 + 0.5 * a.var((0, 2), ddof=1), rtol=1e-4)
    out, save_mean, save_invstd = core.native_batch_norm(x, None, None, running_mean, running_var, False, 0.5, 1e-5)
    assert save_mean.shape == (0,) and save_invstd.shape == (0,)
    expected = (a - _np(running_mean)[:, None]) / np.sqrt(_np(running_var)[:, None] + 1e-5)
    assert_close(out, expected, rtol=1e-4, atol=1e-5)
    assert_close(core.native_norm(x), np.linalg.norm(a.ravel()), rtol=1e-5)
    assert_close(core.native_norm(x, 1, [2], True, None), np.abs(a).sum(2, keepdims=True), rtol=1e-5)
    assert_close(core.norm_except_dim(x, 2, 0), np.sqrt((a * a).sum((1, 2), keepdims=True)), rtol=1e-5)
    assert_close(core.norm_except_dim(x, 2, 2), np.sqrt((a * a).sum((0, 1), keepdims=True)), rtol=1e-5)
    assert_close(core.norm_except_dim(x, 2, 1), np.sqrt((a * a).sum((0, 2), keepdims=True)), rtol=1e-5)
    assert_close(core.norm_except_dim(x, 2, -1), np.linalg.norm(a.ravel()), rtol=1e-5)


def test_native_norm_gradients():
    x = core.tensor(_rng().standard_normal((3, 2, 4)), requires_grad=True)
    w = core.tensor(_rng().standard_normal((2, 4)), requires_grad=True)
    assert gradcheck(lambda x, w: core.native_layer_norm(x, [2, 4], w, None, 1e-5), (x, w))
    assert gradcheck(lambda x: core.native_group_norm(x, None, None, 3, 2, 4, 1, 1e-5), (x,))
    assert gradcheck(lambda x: core.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)[0], (x,))


# -- SyncBatchNorm's building blocks --------------------------------------------------------------------------------

def test_batch_norm_stats_and_elemt(device):
    a = _f32(6, 3, 4)
    x = _t(a, device)
    mean, invstd = core.batch_norm_stats(x, 1e-5)
    bm, bv = _batch_stats(a)
    assert_close(mean, bm, rtol=1e-5, atol=1e-6)
    assert_close(invstd, 1 / np.sqrt(bv + 1e-5), rtol=1e-4)
    w, b = _f32(3), _f32(3)
    out = core.batch_norm_elemt(x, _t(w, device), _t(b, device), mean, invstd, 1e-5)
    assert_close(out, (a - bm[:, None]) / np.sqrt(bv[:, None] + 1e-5) * w[:, None] + b[:, None], rtol=1e-4,
                 atol=1e-5)
    running_mean, running_var = core.zeros(3, device=device), core.ones(3, device=device)
    mean, var = core.batch_norm_update_stats(x, running_mean, running_var, 0.1)
    assert_close(var, bv, rtol=1e-4, atol=1e-6)
    assert_close(running_mean, 0.1 * bm, rtol=1e-4, atol=1e-6)
    assert_close(running_var, 0.9 + 0.1 * a.var((0, 2), ddof=1), rtol=1e-4)


def test_batch_norm_gather_stats_equals_the_whole_batch(device):
    a = _f32(7, 3, 2)
    parts = [a[:2], a[2:7]]  # two "processes" with 2 and 5 samples
    stats = [core.batch_norm_stats(_t(p, device), 1e-5) for p in parts]
    means, invstds = core.stack([s[0] for s in stats]), core.stack([s[1] for s in stats])
    counts = _t(np.array([4.0, 10.0], np.float32), device)  # values per channel: samples * 2
    running_mean, running_var = core.zeros(3, device=device), core.ones(3, device=device)
    mean, invstd = core.batch_norm_gather_stats_with_counts(_t(a, device), means, invstds, running_mean, running_var,
                                                            0.1, 1e-5, counts)
    bm, bv = _batch_stats(a)
    assert_close(mean, bm, rtol=1e-4, atol=1e-5)
    assert_close(invstd, 1 / np.sqrt(bv + 1e-5), rtol=1e-3)
    assert_close(running_var, 0.9 + 0.1 * a.var((0, 2), ddof=1), rtol=1e-3)
    same = [core.batch_norm_stats(_t(p, device), 1e-5) for p in (a[:3], a[3:6])]
    mean, invstd = core.batch_norm_gather_stats(_t(a[:6], device), core.stack([s[0] for s in same]),
                                                core.stack([s[1] for s in same]), None, None, 0.1, 1e-5, 6)
    assert_close(mean, _batch_stats(a[:6])[0], rtol=1e-4, atol=1e-5)


def test_batch_norm_backward_pieces_match_autograd():
    a = _rng().standard_normal((5, 3, 4))
    x = core.tensor(a, requires_grad=True)
    w = core.tensor(_rng().standard_normal(3), requires_grad=True)
    grad = core.tensor(_rng().standard_normal((5, 3, 4)))
    out = core.batch_norm(x, w, None, None, None, True, 0.1, 1e-5, False)
    out.backward(grad)
    mean, invstd = core.batch_norm_stats(x.detach(), 1e-5)
    sum_dy, sum_dy_xmu, grad_weight, grad_bias = core.batch_norm_backward_reduce(grad, x.detach(), mean, invstd,
                                                                                 w.detach(), True, True, True)
    assert_close(grad_weight, _np(w.grad), rtol=1e-6, atol=1e-8)
    assert_close(grad_bias, _np(grad).sum((0, 2)), rtol=1e-8)
    count = core.tensor([20])
    grad_input = core.batch_norm_backward_elemt(grad, x.detach(), mean, invstd, w.detach(), sum_dy, sum_dy_xmu,
                                                count)
    assert_close(grad_input, _np(x.grad), rtol=1e-6, atol=1e-8)
    assert core.batch_norm_backward_reduce(grad, x.detach(), mean, invstd, None, False, False, False) == (None,) * 4


# -- losses and distances ------------------------------------------------------------------------------------------

def test_losses_with_integer_reduction(device):
    a, b = _f32(4, 3), _f32(4, 3)
    y = _t(np.array([1.0, -1.0, 1.0, -1.0], np.float32), device)
    x1, x2 = _t(a, device), _t(b, device)
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    expected = np.where(_np(y) == 1, 1 - cos, np.maximum(cos - 0.1, 0))
    assert_close(core.cosine_embedding_loss(x1, x2, y, 0.1, 0), expected, rtol=1e-4, atol=1e-6)
    assert_close(core.cosine_embedding_loss(x1, x2, y, 0.1), expected.mean(), rtol=1e-4)
    assert_close(core.margin_ranking_loss(x1[:, 0], x2[:, 0], y, 0.2, 2),
                 np.maximum(-_np(y) * (a[:, 0] - b[:, 0]) + 0.2, 0).sum(), rtol=1e-5)
    t = (_rng().random((4, 3)) > 0.5).astype(np.float32)
    bce = np.maximum(a, 0) - a * t + np.log1p(np.exp(-np.abs(a)))
    assert_close(core.binary_cross_entropy_with_logits(x1, _t(t, device), None, None, 0), bce, rtol=1e-4, atol=1e-6)
    logq = np.log(np.full((4, 3), 1 / 3, np.float32))
    p = np.abs(b) / np.abs(b).sum(1, keepdims=True)
    assert_close(core.kl_div(_t(logq, device), _t(p, device), 2), (p * (np.log(p) - logq)).sum(), rtol=1e-4)
    assert_close(core.kl_div(_t(logq, device), _t(np.log(p), device), 0, True), p * (np.log(p) - logq), rtol=1e-4,
                 atol=1e-6)
    with pytest.raises(ValueError, match="reduction must be 0"):
        core.kl_div(x1, x2, "mean")


def test_new_losses(device):
    a, b, c = _f32(5, 4), _f32(5, 4), _f32(5, 4)
    x = _t(a, device)
    target = _t(np.array([[1, -1, 1, -1]] * 5, np.float32), device)
    expected = np.where(_np(target) == 1, a, np.maximum(1.5 - a, 0))
    assert_close(core.hinge_embedding_loss(x, target, 1.5, 0), expected, rtol=1e-6)
    assert_close(F.hinge_embedding_loss(x, target, 1.5), expected.mean(), rtol=1e-5)
    counts = _rng().poisson(2.0, (5, 4)).astype(np.float32)
    y = _t(counts, device)
    assert_close(core.poisson_nll_loss(x, y, True, False, 1e-8, 0), np.exp(a) - counts * a, rtol=1e-5, atol=1e-6)
    rate = np.abs(a) + 0.1
    plain = rate - counts * np.log(rate + 1e-8)
    stirling = np.where(counts > 1, counts * np.log(np.maximum(counts, 1)) - counts
                        + 0.5 * np.log(2 * np.pi * np.maximum(counts, 1)), 0)
    assert_close(F.poisson_nll_loss(_t(rate, device), y, log_input=False, full=True, reduction="sum"),
                 (plain + stirling).sum(), rtol=1e-5)

    def distance(u, v, p=2):
        return (np.abs(u - v + 1e-6) ** p).sum(-1) ** (1 / p)

    anchor, positive, negative = x, _t(b, device), _t(c, device)
    d_neg = np.minimum(distance(a, c), distance(b, c))
    assert_close(core.triplet_margin_loss(anchor, positive, negative, 0.5, 2, 1e-6, True, 0),
                 np.maximum(distance(a, b) - d_neg + 0.5, 0), rtol=1e-4, atol=1e-6)
    assert_close(F.triplet_margin_loss(anchor, positive, negative, p=1),
                 np.maximum(distance(a, b, 1) - distance(a, c, 1) + 1, 0).mean(), rtol=1e-4)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_loss(anchor, positive, negative[0])


def test_new_losses_gradients():
    x = core.tensor(_rng().standard_normal((3, 4)), requires_grad=True)
    p = core.tensor(_rng().standard_normal((3, 4)), requires_grad=True)
    n = core.tensor(_rng().standard_normal((3, 4)), requires_grad=True)
    y = core.tensor(np.sign(_rng().standard_normal((3, 4))))
    counts = core.tensor(_rng().poisson(2.0, (3, 4)).astype(np.float64))
    assert gradcheck(lambda x: core.hinge_embedding_loss(x, y, 0.7, 1), (x,))
    assert gradcheck(lambda x: core.poisson_nll_loss(x, counts, True, True, 1e-8, 2), (x,))
    assert gradcheck(lambda x, p, n: core.triplet_margin_loss(x, p, n, 3.0, 2, 1e-6, True, 1), (x, p, n))
    assert gradcheck(lambda x: core.pdist(x, 3), (x,))


def test_distances(device):
    a, b = _f32(5, 3), _f32(5, 3)
    x = _t(a, device)
    i, j = np.triu_indices(5, 1)
    assert_close(core.pdist(x), np.linalg.norm(a[i] - a[j], axis=1), rtol=1e-5)
    assert_close(F.pdist(x, 1), np.abs(a[i] - a[j]).sum(1), rtol=1e-5)
    assert core.pdist(x[:1]).shape == (0,)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        core.pdist(x[0])
    assert_close(core.pairwise_distance(x, _t(b, device)), np.linalg.norm(a - b + 1e-6, axis=1), rtol=1e-5)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert_close(core.cosine_similarity(x, _t(b, device)), cos, rtol=1e-5)
    w = _f32(2, 3, 3)
    assert_close(core.bilinear(x, _t(b, device), _t(w, device)), np.einsum("ni,oij,nj->no", a, w, b), rtol=1e-4,
                 atol=1e-5)


def test_ctc_loss_integer_reduction(device):
    log_probs = core.log_softmax(_t(_f32(6, 2, 4), device), 2)
    targets = _t(np.array([[1, 2], [3, 3]], np.int64), device)
    per_sample = F.ctc_loss(log_probs, targets, [6, 5], [2, 2], reduction="none")
    assert_close(core.ctc_loss(log_probs, targets, [6, 5], [2, 2], 0, 0), _np(per_sample))
    assert_close(core.ctc_loss(log_probs, targets, [6, 5], [2, 2]), (_np(per_sample) / 2).mean(), rtol=1e-5)


# -- activations ---------------------------------------------------------------------------------------------------

def test_activations(device):
    a = _f32(4, 3)
    x = _t(a, device)
    assert_close(core.celu(x, 2.0), np.maximum(a, 0) + np.minimum(0, 2 * np.expm1(a / 2)), rtol=1e-5, atol=1e-6)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    assert_close(core.selu(x), scale * np.where(a > 0, a, alpha * np.expm1(a)), rtol=1e-5, atol=1e-6)
    assert_close(core.threshold(x, 0.1, 20.0), np.where(a > 0.1, a, np.float32(20.0)))
    assert_close(core.prelu(x, _t(np.array([0.1, 0.2, 0.3], np.float32), device)),
                 np.where(a > 0, a, a * np.array([0.1, 0.2, 0.3], np.float32)), rtol=1e-6)
    assert_close(core.hardshrink(x, 0.6), np.where(np.abs(a) > 0.6, a, 0))
    assert_close(x.hardshrink(), np.where(np.abs(a) > 0.5, a, 0))
    assert_close(F.hardshrink(x), np.where(np.abs(a) > 0.5, a, 0))
    assert_close(x.prelu(_t(np.array([0.5], np.float32), device)), np.where(a > 0, a, 0.5 * a))
    assert_close(core.rrelu(x), np.where(a >= 0, a, a * (1 / 8 + 1 / 3) / 2), rtol=1e-6)
    trained = _np(F.rrelu(x, 0.1, 0.3, training=True))
    slopes = trained[a < 0] / a[a < 0]
    assert np.all((slopes >= 0.1 - 1e-6) & (slopes <= 0.3 + 1e-6)) and len(np.unique(slopes.round(6))) > 1
    assert_close(trained[a >= 0], a[a >= 0])
    for inplace, args in ((core.celu_, ()), (core.selu_, ()), (core.threshold_, (0.0, 1.0)), (core.rrelu_, ()),
                          (F.rrelu_, ())):
        y = _t(a, device)
        assert inplace(y, *args) is y
    y = _t(a, device)
    core.threshold_(y, 0.0, 1.0)
    assert_close(y, np.where(a > 0, a, 1.0))
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the upper bound"):
        core.rrelu(x, 0.5, 0.1)


def test_activation_gradients():
    x = core.tensor(_rng().standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda x: core.hardshrink(x, 0.3), (x,))
    assert gradcheck(lambda x: core.rrelu(x, 0.1, 0.4), (x,))
    assert gradcheck(lambda x: core.celu(x, 0.5), (x,))


# -- convolution, padding, shuffles --------------------------------------------------------------------------------

def test_convolutions(device):
    a, w, b = _f32(2, 3, 7), _f32(4, 3, 3), _f32(4)
    x = _t(a, device)
    windows = np.stack([a[:, :, k:k + 5] for k in range(3)], -1)  # (N, C, L, K)
    expected = np.einsum("nclk,ock->nol", windows, w) + b[:, None]
    assert_close(core.conv1d(x, _t(w, device), _t(b, device)), expected, rtol=1e-4, atol=1e-5)
    assert_close(core.convolution(x, _t(w, device), _t(b, device), [1], [0], [1], False, [0], 1), expected,
                 rtol=1e-4, atol=1e-5)
    tbc = core.conv_tbc(_t(a.transpose(2, 0, 1), device), _t(w.transpose(2, 1, 0), device), _t(b, device), 0)
    assert_close(tbc, expected.transpose(2, 0, 1), rtol=1e-4, atol=1e-5)
    padded = F.conv_tbc(_t(a.transpose(2, 0, 1), device), _t(w.transpose(2, 1, 0), device), _t(b, device), 1)
    windows = np.stack([np.pad(a, ((0, 0), (0, 0), (1, 1)))[:, :, k:k + 7] for k in range(3)], -1)
    assert_close(padded, (np.einsum("nclk,ock->nol", windows, w) + b[:, None]).transpose(2, 0, 1), rtol=1e-4,
                 atol=1e-5)
    a2, w2 = _f32(1, 2, 4, 4), _f32(3, 2, 2, 2)
    same = F.conv2d(_t(a2, device), _t(w2, device), stride=2)
    assert_close(core.conv2d(_t(a2, device), _t(w2, device), None, 2), _np(same))
    assert_close(core.conv3d(_t(a2[None], device), _t(w2[:, :1, None], device)),
                 _np(F.conv3d(_t(a2[None], device), _t(w2[:, :1, None], device))))
    wt = _f32(3, 2, 3)
    transposed = np.zeros((2, 2, 9), np.float32)
    for k in range(3):  # each input step adds weight-scaled rows at offset step + k
        transposed[:, :, k:k + 7] += np.einsum("ncl,co->nol", a, wt[:, :, k])
    assert_close(core.conv_transpose1d(x, _t(wt, device)), transposed, rtol=1e-4, atol=1e-5)
    assert_close(core.convolution(x, _t(wt, device), None, [1], [0], [1], True, [0], 1), transposed, rtol=1e-4,
                 atol=1e-5)
    wt2 = _f32(2, 3, 2, 2)
    assert_close(core.conv_transpose2d(_t(a2, device), _t(wt2, device), stride=2),
                 _np(F.conv_transpose2d(_t(a2, device), _t(wt2, device), stride=2)))
    assert core.conv_transpose3d(_t(a2[None], device), _t(wt2[:1, :, None], device)).shape == (1, 3, 2, 5, 5)
    with pytest.raises(RuntimeError, match="expected a 3-, 4- or 5-dimensional weight"):
        core.convolution(x, _t(w[0], device), None, [1], [0], [1], False, [0], 1)


def test_conv_tbc_gradient():
    x = core.tensor(_rng().standard_normal((5, 2, 3)), requires_grad=True)
    w = core.tensor(_rng().standard_normal((2, 3, 4)), requires_grad=True)
    b = core.tensor(_rng().standard_normal(4), requires_grad=True)
    assert gradcheck(lambda x, w, b: core.conv_tbc(x, w, b, 1), (x, w, b))


def test_padding_and_shuffles(device):
    a = _f32(2, 6, 2, 2)
    x = _t(a, device)
    assert_close(core.constant_pad_nd(x, [1, 0, -1, 1], 3.5),
                 np.pad(a[:, :, 1:], ((0, 0), (0, 0), (0, 1), (1, 0)), constant_values=3.5))
    shuffled = a.reshape(2, 3, 2, 2, 2).transpose(0, 2, 1, 3, 4).reshape(2, 6, 2, 2)
    assert_close(core.channel_shuffle(x, 3), shuffled)
    assert_close(core.native_channel_shuffle(x, 3), shuffled)
    assert_close(F.channel_shuffle(x, 2), a.reshape(2, 2, 3, 2, 2).transpose(0, 2, 1, 3, 4).reshape(2, 6, 2, 2))
    assert_close(F.native_channel_shuffle(x, 2), _np(core.channel_shuffle(x, 2)))
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 6 channels and 4"):
        core.channel_shuffle(x, 4)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        core.channel_shuffle(x[0, 0], 1)
    a4 = _f32(1, 8, 2, 3)
    up = core.pixel_shuffle(_t(a4, device), 2)
    assert_close(up, a4.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6))
    assert_close(core.pixel_unshuffle(up, 2), a4)


# -- embeddings ---------------------------------------------------------------------------------------------------

def test_embedding_signature(device):
    w = _f32(5, 3)
    weight = _t(w, device)
    idx = _t(np.array([[0, 4], [2, 2]]), device)
    assert_close(core.embedding(weight, idx), w[[[0, 4], [2, 2]]])
    trained = core.tensor(w, device=device, requires_grad=True)
    core.embedding(trained, idx, 2).sum().backward()
    assert_close(trained.grad, np.array([[1] * 3, [0] * 3, [0] * 3, [0] * 3, [1] * 3], np.float32))
    renormed = _t(w * 10, device)
    assert core.embedding_renorm_(renormed, _t(np.array([1, 3]), device), 1.0, 2.0) is renormed
    r = _np(renormed)
    assert_close(np.linalg.norm(r[[1, 3]], axis=1), np.ones(2, np.float32), rtol=1e-5)
    assert_close(r[[0, 2, 4]], w[[0, 2, 4]] * 10)


def _bags_reference(w, indices, starts, mode, per_sample=None, padding=None):
    ends = list(starts[1:]) + [len(indices)]
    out = []
    for s, e in zip(starts, ends):
        picked = [k for k in range(s, e) if indices[k] != padding]
        if not picked:
            out.append(np.zeros(w.shape[1], np.float32))
            continue
        rows = w[indices[picked]] * (1 if per_sample is None else per_sample[picked][:, None])
        out.append({0: rows.sum(0), 1: rows.mean(0), 2: rows.max(0)}[mode])
    return np.stack(out)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag(device, mode):
    w = _f32(6, 3)
    indices = np.array([1, 2, 4, 5, 4, 3, 2, 0])
    starts = [0, 2, 2, 5]  # the third bag is empty
    output, offset2bag, bag_size, max_indices = core.embedding_bag(_t(w, device), _t(indices, device),
                                                                   _t(np.array(starts), device), False, mode)
    assert_close(output, _bags_reference(w, indices, starts, mode), rtol=1e-5, atol=1e-6)
    assert offset2bag.tolist() == [0, 0, 2, 2, 2, 3, 3, 3]  # the empty bag 1 owns nothing
    assert bag_size.tolist() == [2, 0, 3, 3]
    if mode == 2:
        assert_close(_np(max_indices), np.stack([indices[s:e][w[indices[s:e]].argmax(0)] if e > s else [0] * 3
                                                 for s, e in zip(starts, starts[1:] + [8])]))
    last = core.embedding_bag(_t(w, device), _t(indices, device), _t(np.array(starts + [8]), device), False, mode,
                              False, None, True, 4)[0]
    assert_close(last, _bags_reference(w, indices, starts, mode, padding=4), rtol=1e-5, atol=1e-6)
    mode_name = ("sum", "mean", "max")[mode]
    fixed = F.embedding_bag(_t(indices.reshape(2, 4), device), _t(w, device), mode=mode_name)
    assert_close(fixed, _bags_reference(w, indices, [0, 4], mode), rtol=1e-5, atol=1e-6)


def test_embedding_bag_weights_errors_and_gradient(device):
    w = _f32(4, 2)
    indices, offsets = np.array([0, 1, 3, 3]), np.array([0, 3])
    per_sample = _f32(4)
    out = F.embedding_bag(_t(indices, device), _t(w, device), _t(offsets, device), mode="sum",
                          per_sample_weights=_t(per_sample, device))
    assert_close(out, _bags_reference(w, indices, [0, 3], 0, per_sample), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(_t(indices, device), _t(w, device), _t(offsets, device), per_sample_weights=_t(per_sample,
                                                                                                      device))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(_t(indices, device), _t(w, device))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(_t(indices, device), _t(w, device), _t(offsets, device), mode="min")
    weight = core.tensor(_rng().standard_normal((4, 2)), requires_grad=True)
    for mode in ("sum", "mean", "max"):
        assert gradcheck(lambda w, mode=mode: F.embedding_bag(core.tensor(indices), w, core.tensor(offsets), mode=mode),
                         (weight,))


# -- grid sampling -------------------------------------------------------------------------------------------------

def _reflect(x, low2, high2):
    if low2 == high2:
        return 0.0
    low, span = low2 / 2, (high2 - low2) / 2
    d = abs(x - low)
    extra, flips = math.fmod(d, span), math.floor(d / span)
    return extra + low if flips % 2 == 0 else span - extra + low


def _source(c, n, padding, align):
    x = (c + 1) / 2 * (n - 1) if align else ((c + 1) * n - 1) / 2
    if padding == "reflection":
        x = _reflect(x, 0, 2 * (n - 1)) if align else _reflect(x, -1, 2 * n - 1)
    if padding != "zeros":
        x = min(max(x, 0), n - 1)
    return x


def _cubic(t, a=-0.75):
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic_taps(c, n, padding, align):
    """ATen's bicubic: the unpadded coordinate's four integer taps, each moved by the padding mode."""
    x = (c + 1) / 2 * (n - 1) if align else ((c + 1) * n - 1) / 2
    low = math.floor(x)
    positions = []
    for k in (-1, 0, 1, 2):
        p = float(low + k)
        if padding == "reflection":
            p = _reflect(p, 0, 2 * (n - 1)) if align else _reflect(p, -1, 2 * n - 1)
        if padding != "zeros":
            p = min(max(p, 0), n - 1)
        positions.append(int(round(p)))
    return positions, _cubic(x - low)


def _grid_sample_reference(a, grid, mode, padding, align):
    """A loop over output points, one spatial dim at a time (2-D and 3-D)."""
    n, c = a.shape[:2]
    spatial, nd = a.shape[2:], a.ndim - 2
    out = np.zeros((n, c) + grid.shape[1:-1])
    for b in range(n):
        for point in np.ndindex(*grid.shape[1:-1]):
            raw = [grid[(b,) + point + (nd - 1 - d,)] for d in range(nd)]
            coords = [_source(raw[d], spatial[d], padding, align) for d in range(nd)]
            if mode == "bicubic":
                corners = [_bicubic_taps(raw[d], spatial[d], padding, align) for d in range(nd)]
            elif mode == "nearest":
                corners = [([int(np.rint(x))], [1.0]) for x in coords]
            else:
                corners = [([math.floor(x), math.floor(x) + 1], [1 - (x - math.floor(x)), x - math.floor(x)])
                           for x in coords]
            for combo in np.ndindex(*[len(k) for k, _ in corners]):
                at = [corners[d][0][i] for d, i in enumerate(combo)]
                weight = np.prod([corners[d][1][i] for d, i in enumerate(combo)])
                if all(0 <= p < s for p, s in zip(at, spatial)):
                    out[(b, slice(None)) + point] += weight * a[(b, slice(None)) + tuple(at)]
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_2d(device, mode, padding, align):
    a = _f32(2, 3, 4, 5)
    grid = (_rng().uniform(-1.6, 1.6, (2, 3, 4, 2))).astype(np.float32)
    out = F.grid_sample(_t(a, device), _t(grid, device), mode, padding, align)
    assert out.shape == (2, 3, 3, 4)
    assert_close(out, _grid_sample_reference(a, grid, mode, padding, align).astype(np.float32), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("padding", ["zeros", "reflection"])
def test_grid_sampler_3d(device, padding):
    a = _f32(1, 2, 3, 4, 2)
    grid = (_rng().uniform(-1.3, 1.3, (1, 2, 2, 3, 3))).astype(np.float32)
    out = core.grid_sampler_3d(_t(a, device), _t(grid, device), 0, ("zeros", "border", "reflection").index(padding),
                               False)
    assert_close(out, _grid_sample_reference(a, grid, "bilinear", padding, False).astype(np.float32), rtol=1e-4,
                 atol=1e-5)
    nearest = core.grid_sampler(_t(a, device), _t(grid, device), 1, 1, True)
    assert_close(nearest, _grid_sample_reference(a, grid, "nearest", "border", True).astype(np.float32))
    with pytest.raises(RuntimeError, match="grid_sampler_2d\\(\\): expected 4D input"):
        core.grid_sampler_2d(_t(a, device), _t(grid, device), 0, 0, False)


def test_grid_sample_gradient_and_errors():
    x = core.tensor(_rng().standard_normal((1, 2, 3, 4)), requires_grad=True)
    grid = core.tensor(_rng().uniform(-0.9, 0.9, (1, 2, 3, 2)), requires_grad=True)
    for padding in (0, 1, 2):
        assert gradcheck(lambda x, g, padding=padding: core.grid_sampler_2d(x, g, 0, padding, False), (x, grid))
    assert gradcheck(lambda x: core.grid_sampler(x, grid.detach(), 1, 0, True), (x,))
    assert gradcheck(lambda x, g: core.grid_sampler(x, g, 2, 2, True), (x, grid))
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        core.grid_sampler(x.unsqueeze(2), core.zeros(1, 1, 2, 3, 3, dtype=x.dtype), 2, 0, False)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'cubic'"):
        F.grid_sample(x, grid, "cubic", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or 'reflection'"):
        F.grid_sample(x, grid, padding_mode="wrap", align_corners=False)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, grid)


def test_affine_grid(device):
    theta = _f32(2, 2, 3)
    size = (2, 1, 3, 4)
    for align in (False, True):
        xs, ys = np.linspace(-1, 1, 4), np.linspace(-1, 1, 3)
        if not align:
            xs, ys = xs * 3 / 4, ys * 2 / 3
        base = np.stack(list(np.meshgrid(xs, ys)) + [np.ones((3, 4))], -1)  # (H, W, 3), x first
        expected = np.einsum("hwk,njk->nhwj", base, theta)
        grid = F.affine_grid(_t(theta, device), size, align_corners=align)
        assert_close(grid, expected.astype(np.float32), rtol=1e-5, atol=1e-6)
        assert_close(core.affine_grid_generator(_t(theta, device), size, align), expected.astype(np.float32),
                     rtol=1e-5, atol=1e-6)
    identity = _t(np.array([[[1, 0, 0], [0, 1, 0]]], np.float32), device)
    image = _t(_f32(1, 2, 3, 4), device)
    sampled = F.grid_sample(image, F.affine_grid(identity, (1, 2, 3, 4), False), align_corners=False)
    assert_close(sampled, _np(image), rtol=1e-5, atol=1e-5)
    theta3 = _f32(1, 3, 4)
    grid3 = F.affine_grid(_t(theta3, device), (1, 1, 2, 3, 2), align_corners=True)
    zs, ys, xs = np.meshgrid(np.linspace(-1, 1, 2), np.linspace(-1, 1, 3), np.linspace(-1, 1, 2), indexing="ij")
    base3 = np.stack([xs, ys, zs, np.ones_like(xs)], -1)
    assert_close(grid3, np.einsum("dhwk,njk->ndhwj", base3, theta3).astype(np.float32), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        F.affine_grid(_t(theta3, device), size, align_corners=False)
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(_t(theta, device), (2, 1, 3), align_corners=False)
    t = core.tensor(_rng().standard_normal((1, 2, 3)), requires_grad=True)
    assert gradcheck(lambda t: core.affine_grid_generator(t, (1, 1, 2, 3), False), (t,))


# -- recurrent layers ----------------------------------------------------------------------------------------------

def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_cells(device):
    x, h, c = _f32(3, 4), _f32(3, 5), _f32(3, 5)
    w_ih, w_hh, b_ih, b_hh = _f32(20, 4), _f32(20, 5), _f32(20), _f32(20)
    args = [_t(v, device) for v in (w_ih, w_hh, b_ih, b_hh)]
    gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, g, o = np.split(gates, 4, 1)
    c_new = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    hy, cy = core.lstm_cell(_t(x, device), (_t(h, device), _t(c, device)), *args)
    assert_close(cy, c_new, rtol=1e-4, atol=1e-5)
    assert_close(hy, _sigmoid(o) * np.tanh(c_new), rtol=1e-4, atol=1e-5)
    pre = x @ w_ih[:5].T + b_ih[:5] + h @ w_hh[:5].T + b_hh[:5]
    assert_close(core.rnn_tanh_cell(_t(x, device), _t(h, device), *[a[:5] for a in args]), np.tanh(pre), rtol=1e-4,
                 atol=1e-5)
    assert_close(core.rnn_relu_cell(_t(x, device), _t(h, device), args[0][:5], args[1][:5]),
                 np.maximum(x @ w_ih[:5].T + h @ w_hh[:5].T, 0), rtol=1e-4, atol=1e-5)
    gx, gh = x @ w_ih[:15].T + b_ih[:15], h @ w_hh[:15].T + b_hh[:15]
    r, z = _sigmoid(gx[:, :5] + gh[:, :5]), _sigmoid(gx[:, 5:10] + gh[:, 5:10])
    n = np.tanh(gx[:, 10:] + r * gh[:, 10:])
    assert_close(core.gru_cell(_t(x, device), _t(h, device), *[a[:15] for a in args]), (1 - z) * n + z * h,
                 rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["rnn_tanh", "rnn_relu", "gru", "lstm"])
@pytest.mark.parametrize("bidirectional,batch_first", [(False, False), (True, True)])
def test_flat_weight_rnns_match_the_modules(device, name, bidirectional, batch_first):
    module_type = {"rnn_tanh": core.nn.RNN, "rnn_relu": core.nn.RNN, "gru": core.nn.GRU, "lstm": core.nn.LSTM}[name]
    kwargs = {"nonlinearity": "relu"} if name == "rnn_relu" else {}
    module = module_type(3, 4, num_layers=2, bidirectional=bidirectional, batch_first=batch_first, **kwargs).to(device)
    x = _t(_f32(2, 5, 3), device)
    layers = 2 * (2 if bidirectional else 1)
    h0 = _t(_f32(layers, 2 if batch_first else 5, 4), device)
    params = module._flat_weights
    if name == "lstm":
        c0 = _t(_f32(layers, 2 if batch_first else 5, 4), device) * 0.5
        expected, (h_n, c_n) = module(x, (h0, c0))
        output, hy, cy = core.lstm(x, (h0, c0), params, True, 2, 0.0, False, bidirectional, batch_first)
        assert_close(cy, _np(c_n), rtol=1e-5, atol=1e-6)
    else:
        expected, h_n = module(x, h0)
        output, hy = getattr(core, name)(x, h0, params, True, 2, 0.0, False, bidirectional, batch_first)
    assert_close(output, _np(expected), rtol=1e-5, atol=1e-6)
    assert_close(hy, _np(h_n), rtol=1e-5, atol=1e-6)


def test_flat_weight_rnn_numbers_and_errors(device):
    x, h = _f32(3, 1, 2), _f32(1, 1, 2)
    w_ih, w_hh = _f32(2, 2), _f32(2, 2)
    state, outputs = h[0], []
    for t in range(3):
        state = np.tanh(x[t] @ w_ih.T + state @ w_hh.T)
        outputs.append(state)
    output, hy = core.rnn_tanh(_t(x, device), _t(h, device), [_t(w_ih, device), _t(w_hh, device)], False, 1, 0.0,
                               False, False, False)
    assert_close(output, np.stack(outputs), rtol=1e-5, atol=1e-6)
    assert_close(hy, state[None], rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="expected 4 parameters per layer and direction, but got 2"):
        core.gru(_t(x, device), _t(h, device), [_t(w_ih, device), _t(w_hh, device)], True, 1, 0.0, False, False,
                 False)


def test_flat_weight_lstm_gradient():
    x = core.tensor(_rng().standard_normal((3, 2, 2)), requires_grad=True)
    h0, c0 = core.tensor(_rng().standard_normal((1, 2, 3))), core.tensor(_rng().standard_normal((1, 2, 3)))
    w_ih = core.tensor(_rng().standard_normal((12, 2)) * 0.5, requires_grad=True)
    w_hh = core.tensor(_rng().standard_normal((12, 3)) * 0.5, requires_grad=True)
    assert gradcheck(lambda x, a, b: core.lstm(x, (h0, c0), [a, b], False, 1, 0.0, False, False, False)[0],
                     (x, w_ih, w_hh))
    assert gradcheck(lambda x, a, b: core.gru_cell(x[0], h0[0], a[:9], b[:9]), (x, w_ih, w_hh))


def test_embedding_bag_scale_grad_by_freq(device):
    weight = core.tensor(_f32(4, 2), device=device, requires_grad=True)
    indices, offsets = _t(np.array([1, 1, 2, 1, 3]), device), _t(np.array([0, 2]), device)
    core.embedding_bag(weight, indices, offsets, True, 0)[0].sum().backward()
    # row 1 is looked up three times, so each lookup's gradient is divided by 3; rows 2 and 3 once
    assert_close(weight.grad, np.array([[0, 0], [1, 1], [1, 1], [1, 1]], np.float32), rtol=1e-6)
