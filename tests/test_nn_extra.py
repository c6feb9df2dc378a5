"""The rest of core.nn's layers against NumPy on every device: shrink activations, RReLU, Softmax2d, the padding
layers, the margin/likelihood losses (modules and functionals, gradients in float64), the distance layers,
ChannelShuffle and EmbeddingBag; constructor defaults, reprs and PyTorch's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import core
from core import nn
from core.autograd import gradcheck
from core.nn import functional as F
from core.testing import assert_close


def _rng():
    return np.random.default_rng(0)


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def _reduce(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


# -- activations ----------------------------------------------------------------------------------------------------

def test_shrinks_and_softmax2d(device):
    a = _rng().standard_normal((2, 3, 4, 5)).astype(np.float32)
    x = _t(a, device)
    assert_close(_np(nn.Softshrink(0.3)(x)), np.where(a > 0.3, a - 0.3, np.where(a < -0.3, a + 0.3, 0)))
    assert_close(_np(nn.Hardshrink(0.3)(x)), np.where(np.abs(a) > 0.3, a, 0))
    assert_close(_np(nn.Hardshrink()(x)), np.where(np.abs(a) > 0.5, a, 0))
    e = np.exp(a - a.max(axis=1, keepdims=True))
    assert_close(_np(nn.Softmax2d()(x)), e / e.sum(axis=1, keepdims=True))
    assert_close(_np(nn.Softmax2d()(x[0])), (e / e.sum(axis=1, keepdims=True))[0])
    assert repr(nn.Softshrink(0.3)) == "Softshrink(0.3)" and repr(nn.Hardshrink()) == "Hardshrink(0.5)"
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(x[0, 0])
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(x, -1.0)


def test_softshrink_gradient(device):
    a = _rng().standard_normal(7) * 2
    a[np.abs(np.abs(a) - 0.5) < 0.05] += 0.2  # keep away from the kinks
    assert gradcheck(F.softshrink, (_t(a, device, True),))


def test_rrelu_module(device):
    a = _rng().standard_normal((4, 6)).astype(np.float32)
    layer = nn.RReLU(0.1, 0.3)
    assert repr(layer) == "RReLU(lower=0.1, upper=0.3)" and repr(nn.RReLU(inplace=True)).endswith("inplace=True)")
    layer.eval()
    assert_close(_np(layer(_t(a, device))), np.where(a >= 0, a, a * 0.2))
    layer.train()
    out = _np(layer(_t(a, device)))
    slope = out[a < 0] / a[a < 0]
    assert np.all(out[a >= 0] == a[a >= 0]) and np.all((slope >= 0.1 - 1e-6) & (slope <= 0.3 + 1e-6))
    assert len(np.unique(np.round(slope, 5))) > 1  # a slope per element while training


# -- padding --------------------------------------------------------------------------------------------------------

_NP_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kind", ["Zero", "Constant", "Reflection", "Replication", "Circular"])
def test_padding_layers(device, nd, kind):
    a = _rng().standard_normal((2, 3) + (4,) * nd).astype(np.float32)
    padding = (1, 2, 2, 0, 0, 3)[: 2 * nd]
    pairs = [(0, 0), (0, 0)] + [(padding[2 * i], padding[2 * i + 1]) for i in reversed(range(nd))]
    cls = getattr(nn, f"{kind}Pad{nd}d")
    if kind == "Constant":
        layer, expected = cls(padding, 1.5), np.pad(a, pairs, constant_values=1.5)
        assert repr(layer) == f"ConstantPad{nd}d(padding={padding}, value=1.5)"
    elif kind == "Zero":
        layer, expected = cls(padding), np.pad(a, pairs)
        assert repr(layer) == f"ZeroPad{nd}d({padding})"
    else:
        mode = {"Reflection": "reflect", "Replication": "replicate", "Circular": "circular"}[kind]
        layer, expected = cls(padding), np.pad(a, pairs, mode=_NP_MODES[mode])
        assert repr(layer) == f"{kind}Pad{nd}d({padding})"
    assert_close(_np(layer(_t(a, device))), expected)
    two = cls(2, 0.0) if kind == "Constant" else cls(2)
    assert layer.state_dict() == {} and layer.padding == padding and two.padding == (2,) * (2 * nd)


# -- losses ---------------------------------------------------------------------------------------------------------

def _log_sigmoid(x):
    return -np.logaddexp(0, -x)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_soft_margin_losses(device, reduction):
    rng = _rng()
    x, y = rng.standard_normal((4, 5)), rng.choice([-1.0, 1.0], (4, 5))
    out = nn.SoftMarginLoss(reduction=reduction)(_t(x, device), _t(y, device))
    assert_close(_np(out), _reduce(np.log1p(np.exp(-y * x)), reduction))
    labels, w = (rng.random((4, 5)) > 0.5).astype(np.float64), rng.random(5)
    loss = -(labels * _log_sigmoid(x) + (1 - labels) * _log_sigmoid(-x)) * w
    out = nn.MultiLabelSoftMarginLoss(_t(w, device), reduction=reduction)(_t(x, device), _t(labels, device))
    assert_close(_np(out), _reduce(loss.mean(axis=1), reduction))
    assert "weight" in nn.MultiLabelSoftMarginLoss(_t(w, device)).state_dict()


def _multi_margin(x, y, p, margin, w):
    loss = np.zeros(len(x))
    for n in range(len(x)):
        for i in range(x.shape[1]):
            if i != y[n]:
                loss[n] += max(0.0, margin - x[n, y[n]] + x[n, i]) ** p * (w[y[n]] if w is not None else 1)
    return loss / x.shape[1]


@pytest.mark.parametrize("p,margin,weighted", [(1, 1.0, False), (2, 0.5, True)])
def test_multi_margin_loss(device, p, margin, weighted):
    rng = _rng()
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 4, 6)
    w = rng.random(4) if weighted else None
    layer = nn.MultiMarginLoss(p, margin, None if w is None else _t(w, device), reduction="none")
    assert_close(_np(layer(_t(x, device), _t(y, device))), _multi_margin(x, y, p, margin, w))
    out = F.multi_margin_loss(_t(x[0], device), _t(y[:1], device), p, margin)
    assert_close(_np(out), _multi_margin(x[:1], y[:1], p, margin, None)[0])
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)


def _multilabel_margin(x, y):
    loss = np.zeros(len(x))
    for n in range(len(x)):
        listed = []
        for j in y[n]:
            if j < 0:
                break
            listed.append(j)
        for j in listed:
            for i in range(x.shape[1]):
                if i not in listed:
                    loss[n] += max(0.0, 1 - (x[n, j] - x[n, i]))
    return loss / x.shape[1]


def test_multilabel_margin_loss(device):
    x = _rng().standard_normal((3, 4))
    y = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 0, 0]])
    out = nn.MultiLabelMarginLoss(reduction="none")(_t(x, device), _t(y, device))
    assert_close(_np(out), _multilabel_margin(x, y))
    assert_close(_np(F.multilabel_margin_loss(_t(x, device), _t(y, device))), _multilabel_margin(x, y).mean())
    assert_close(_np(F.multilabel_margin_loss(_t(x[0], device), _t(y[0], device))), _multilabel_margin(x, y)[0])
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(_t(x, device), _t(y[:, :2], device))


@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_loss(device, full):
    rng = _rng()
    x, y, var = rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), rng.random((5, 3)) + 0.1
    expected = 0.5 * (np.log(var) + (x - y) ** 2 / var) + (0.5 * math.log(2 * math.pi) if full else 0)
    layer = nn.GaussianNLLLoss(full=full, reduction="none")
    assert_close(_np(layer(_t(x, device), _t(y, device), _t(var, device))), expected)
    one_var = var[:, :1]  # one variance per sample, as (N,) and as (N, 1)
    expected = 0.5 * (np.log(one_var) + (x - y) ** 2 / one_var) + (0.5 * math.log(2 * math.pi) if full else 0)
    assert_close(_np(layer(_t(x, device), _t(y, device), _t(one_var[:, 0], device))), expected)
    assert_close(_np(nn.GaussianNLLLoss(full=full)(_t(x, device), _t(y, device), _t(one_var, device))),
                 expected.mean())
    small = np.full((5, 3), 1e-9)
    assert_close(_np(F.gaussian_nll_loss(_t(x, device), _t(y, device), _t(small, device), eps=1e-3)),
                 (0.5 * (np.log(1e-3) + (x - y) ** 2 / 1e-3)).mean())
    with pytest.raises(ValueError, match="var is of incorrect size"):
        layer(_t(x, device), _t(y, device), _t(var[:2], device))
    with pytest.raises(ValueError, match="var has negative entry"):
        layer(_t(x, device), _t(y, device), _t(-var, device))


def _distance(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_losses(device, swap):
    rng = _rng()
    a, p, n = (rng.standard_normal((4, 3)) for _ in range(3))
    d_neg = _distance(a, n)
    if swap:
        d_neg = np.minimum(d_neg, _distance(p, n))
    expected = np.maximum(_distance(a, p) - d_neg + 0.7, 0)
    args = (_t(a, device), _t(p, device), _t(n, device))
    assert_close(_np(nn.TripletMarginLoss(margin=0.7, swap=swap, reduction="none")(*args)), expected)
    assert_close(_np(nn.TripletMarginWithDistanceLoss(margin=0.7, swap=swap)(*args)), expected.mean())

    def cosine_distance(x1, x2):
        return 1 - F.cosine_similarity(x1, x2)

    def np_cosine(x1, x2):
        return 1 - (x1 * x2).sum(-1) / np.linalg.norm(x1, axis=-1) / np.linalg.norm(x2, axis=-1)

    d_neg = np_cosine(a, n)
    if swap:
        d_neg = np.minimum(d_neg, np_cosine(p, n))
    layer = nn.TripletMarginWithDistanceLoss(distance_function=cosine_distance, margin=0.7, swap=swap,
                                             reduction="sum")
    assert_close(_np(layer(*args)), np.maximum(np_cosine(a, p) - d_neg + 0.7, 0).sum())
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0 instead"):
        nn.TripletMarginWithDistanceLoss(margin=0)


def test_hinge_and_poisson_modules(device):
    rng = _rng()
    x, y = rng.standard_normal(6), rng.choice([-1.0, 1.0], 6)
    out = nn.HingeEmbeddingLoss(margin=0.5)(_t(x, device), _t(y, device))
    assert_close(_np(out), np.where(y == 1, x, np.maximum(0, 0.5 - x)).mean())
    rate, counts = rng.standard_normal(6), rng.integers(0, 5, 6).astype(np.float64)
    out = nn.PoissonNLLLoss(reduction="sum")(_t(rate, device), _t(counts, device))
    assert_close(_np(out), (np.exp(rate) - counts * rate).sum())
    out = nn.PoissonNLLLoss(log_input=False, eps=1e-3)(_t(np.abs(rate), device), _t(counts, device))
    assert_close(_np(out), (np.abs(rate) - counts * np.log(np.abs(rate) + 1e-3)).mean())


def test_new_loss_gradients(device):
    rng = _rng()
    x = _t(rng.standard_normal((3, 4)), device, True)
    signs, labels = _t(rng.choice([-1.0, 1.0], (3, 4)), device), _t((rng.random((3, 4)) > 0.5) * 1.0, device)
    assert gradcheck(lambda v: F.soft_margin_loss(v, signs), (x,))
    assert gradcheck(lambda v: F.multilabel_soft_margin_loss(v, labels), (x,))
    classes = _t(np.array([0, 2, 3]), device)
    assert gradcheck(lambda v: F.multi_margin_loss(v, classes, p=2, margin=3.0), (x,))
    listed = _t(np.array([[1, -1, 0, 0], [2, 0, -1, 0], [3, 1, 0, 2]]), device)
    assert gradcheck(lambda v: F.multilabel_margin_loss(v, listed, reduction="sum"), (x,))
    target, var = _t(rng.standard_normal((3, 4)), device), _t(rng.random((3, 4)) + 0.5, device, True)
    assert gradcheck(lambda v, s: F.gaussian_nll_loss(v, target, s, full=True), (x, var))
    p, n = _t(rng.standard_normal((3, 4)), device, True), _t(rng.standard_normal((3, 4)), device, True)
    assert gradcheck(lambda a, b, c: F.triplet_margin_with_distance_loss(a, b, c, margin=5.0, swap=True), (x, p, n))


# -- distances, channel shuffle, embedding bag ------------------------------------------------------------------------

def test_distance_layers(device):
    rng = _rng()
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    assert_close(_np(nn.PairwiseDistance()(_t(a, device), _t(b, device))), _distance(a, b))
    out = nn.PairwiseDistance(p=1.0, eps=0.0, keepdim=True)(_t(a, device), _t(b, device))
    assert_close(_np(out), np.abs(a - b).sum(-1, keepdims=True))
    cos = (a * b).sum(0) / np.linalg.norm(a, axis=0) / np.linalg.norm(b, axis=0)
    assert_close(_np(nn.CosineSimilarity(dim=0)(_t(a, device), _t(b, device))), cos)
    layer = nn.PairwiseDistance()
    assert (layer.norm, layer.eps, layer.keepdim) == (2.0, 1e-6, False)


def test_channel_shuffle(device):
    a = _rng().standard_normal((2, 6, 3, 3)).astype(np.float32)
    expected = a.reshape(2, 2, 3, 3, 3).transpose(0, 2, 1, 3, 4).reshape(2, 6, 3, 3)
    layer = nn.ChannelShuffle(2)
    assert_close(_np(layer(_t(a, device))), expected)
    assert repr(layer) == "ChannelShuffle(groups=2)"


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_module(device, mode):
    bag = nn.EmbeddingBag(10, 3, mode=mode).to(device)
    assert tuple(bag.weight.shape) == (10, 3) and list(bag.state_dict()) == ["weight"]
    assert repr(bag) == f"EmbeddingBag(10, 3, mode={mode})"
    w = _np(bag.weight)
    reduce = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
    indices, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4])
    out = bag(_t(indices, device), _t(offsets, device))
    assert_close(_np(out), np.stack([reduce(w[indices[:4]], 0), reduce(w[indices[4:]], 0)]))
    out = bag(_t(indices.reshape(2, 4), device))
    assert_close(_np(out), np.stack([reduce(w[indices[:4]], 0), reduce(w[indices[4:]], 0)]))
    pretrained = nn.EmbeddingBag.from_pretrained(_t(w, device), mode=mode)
    assert not pretrained.weight.requires_grad
    assert_close(_np(pretrained(_t(indices.reshape(2, 4), device))), _np(out))


def test_embedding_bag_padding_idx(device):
    bag = nn.EmbeddingBag(5, 2, mode="sum", padding_idx=-1)
    assert bag.padding_idx == 4 and np.all(_np(bag.weight)[4] == 0)
    assert repr(bag) == "EmbeddingBag(5, 2, mode=sum, padding_idx=4)"


# -- Transformer decoder and the full Transformer, against a NumPy transcription of the formulas ---------------------

def _np_attention(q_in, kv_in, attn, mask=None):
    """Multi-head attention of (T, N, E) queries over (S, N, E) keys/values with ``attn``'s weights."""
    w, b = _np(attn.in_proj_weight), _np(attn.in_proj_bias)
    e, heads = q_in.shape[-1], attn.num_heads
    q, k, v = q_in @ w[:e].T + b[:e], kv_in @ w[e:2 * e].T + b[e:2 * e], kv_in @ w[2 * e:].T + b[2 * e:]

    def split(x):  # (L, N, E) -> (N, heads, L, E / heads)
        return x.reshape(x.shape[0], x.shape[1], heads, e // heads).transpose(1, 2, 0, 3)

    scores = split(q) @ split(k).transpose(0, 1, 3, 2) / np.sqrt(e // heads)
    if mask is not None:
        scores = scores + mask
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    out = (scores / scores.sum(-1, keepdims=True)) @ split(v)  # (N, heads, T, d)
    out = out.transpose(2, 0, 1, 3).reshape(q_in.shape[0], q_in.shape[1], e)
    return out @ _np(attn.out_proj.weight).T + _np(attn.out_proj.bias)


def _np_norm(x, norm):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + norm.eps) * _np(norm.weight) + _np(norm.bias)


def _np_feed_forward(x, layer):
    hidden = np.maximum(x @ _np(layer.linear1.weight).T + _np(layer.linear1.bias), 0)
    return hidden @ _np(layer.linear2.weight).T + _np(layer.linear2.bias)


def _np_decoder_layer(x, memory, layer, mask=None):
    if layer.norm_first:
        x = x + _np_attention(_np_norm(x, layer.norm1), _np_norm(x, layer.norm1), layer.self_attn, mask)
        x = x + _np_attention(_np_norm(x, layer.norm2), memory, layer.multihead_attn)
        return x + _np_feed_forward(_np_norm(x, layer.norm3), layer)
    x = _np_norm(x + _np_attention(x, x, layer.self_attn, mask), layer.norm1)
    x = _np_norm(x + _np_attention(x, memory, layer.multihead_attn), layer.norm2)
    return _np_norm(x + _np_feed_forward(x, layer), layer.norm3)


def _np_encoder_layer(x, layer):
    x = _np_norm(x + _np_attention(x, x, layer.self_attn), layer.norm1)
    return _np_norm(x + _np_feed_forward(x, layer), layer.norm2)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_decoder_layer(device, norm_first):
    rng = _rng()
    layer = nn.TransformerDecoderLayer(8, 2, 16, norm_first=norm_first).to(device).double().eval()
    tgt, memory = rng.standard_normal((4, 3, 8)), rng.standard_normal((5, 3, 8))
    mask = nn.Transformer.generate_square_subsequent_mask(4, device=device, dtype=core.float64)
    out = layer(_t(tgt, device), _t(memory, device), tgt_mask=mask)
    assert_close(_np(out), _np_decoder_layer(tgt, memory, layer, _np(mask)), rtol=1e-6, atol=1e-8)
    stack = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(8).to(device).double())
    first, second = stack.layers
    expected = _np_norm(_np_decoder_layer(_np_decoder_layer(tgt, memory, first), memory, second), stack.norm)
    assert_close(_np(stack(_t(tgt, device), _t(memory, device))), expected, rtol=1e-6, atol=1e-8)
    assert "multihead_attn.in_proj_weight" in layer.state_dict() and "norm3.weight" in layer.state_dict()


def test_transformer(device):
    rng = _rng()
    model = nn.Transformer(8, 2, 1, 1, 16, batch_first=True).to(device).double().eval()
    src, tgt = rng.standard_normal((3, 5, 8)), rng.standard_normal((3, 4, 8))
    out = model(_t(src, device), _t(tgt, device))
    src_t, tgt_t = src.transpose(1, 0, 2), tgt.transpose(1, 0, 2)  # the NumPy helpers are time-major
    memory = _np_norm(_np_encoder_layer(src_t, model.encoder.layers[0]), model.encoder.norm)
    expected = _np_norm(_np_decoder_layer(tgt_t, memory, model.decoder.layers[0]), model.decoder.norm)
    assert_close(_np(out), expected.transpose(1, 0, 2), rtol=1e-6, atol=1e-8)
    mask = _np(nn.Transformer.generate_square_subsequent_mask(3))
    assert np.array_equal(mask, np.triu(np.full((3, 3), -np.inf), 1))
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(_t(src, device), _t(tgt[:2], device))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(_t(src[..., :4], device), _t(tgt[..., :4], device))


# -- power-average pooling and max unpooling --------------------------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
def test_lp_pool(device, nd):
    a = np.abs(_rng().standard_normal((2, 3) + (6,) * nd)) + 0.1
    layer = getattr(nn, f"LPPool{nd}d")(3, 2)
    assert repr(layer) == f"LPPool{nd}d(norm_type=3, kernel_size=2, stride=None, ceil_mode=False)"
    blocks = a.reshape((2, 3) + (3, 2) * nd)  # 2-wide non-overlapping windows
    axes = tuple(range(3, 3 + 2 * nd, 2))
    assert_close(_np(layer(_t(a, device))), (blocks ** 3).sum(axis=axes) ** (1 / 3))
    x = _t(a[:1, :1], device, True)
    assert gradcheck(lambda v: getattr(F, f"lp_pool{nd}d")(v, 2.0, 2, 2), (x,))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool(device, nd):
    a = _rng().standard_normal((2, 3) + (4,) * nd)
    pool = getattr(nn, f"MaxPool{nd}d")(2, return_indices=True)
    unpool = getattr(nn, f"MaxUnpool{nd}d")(2)
    assert repr(unpool) == f"MaxUnpool{nd}d(kernel_size={(2,) * nd}, stride={(2,) * nd}, padding={(0,) * nd})"
    pooled, indices = pool(_t(a, device))
    out = _np(unpool(pooled, indices))
    blocks = a.reshape((2, 3) + (2, 2) * nd)
    axes = tuple(range(3, 3 + 2 * nd, 2))
    window_max = blocks.max(axis=axes, keepdims=True)
    expected = np.where(blocks == window_max, blocks, 0).reshape(a.shape)  # each window keeps only its max
    assert_close(out, expected)
    bigger = _np(unpool(pooled, indices, output_size=(5,) * nd))
    assert bigger.shape == (2, 3) + (5,) * nd and np.isclose(bigger.sum(), expected.sum())
    with pytest.raises(ValueError, match="invalid output_size"):
        unpool(pooled, indices, output_size=(9,) * nd)
    x = _t(_np(pooled[:1]), device, True)
    assert gradcheck(lambda v: getattr(F, f"max_unpool{nd}d")(v, indices[:1], 2), (x,))


def test_deprecated_container_and_nllloss2d(device):
    with pytest.warns(UserWarning, match="nn.Container is deprecated"):
        box = nn.Container(first=nn.Linear(2, 3), second=nn.ReLU())
    assert list(dict(box.named_children())) == ["first", "second"] and "first.weight" in box.state_dict()
    rng = _rng()
    logits, target = rng.standard_normal((2, 3, 4, 5)), rng.integers(0, 3, (2, 4, 5))
    with pytest.warns(UserWarning, match="NLLLoss2d has been deprecated"):
        loss = nn.NLLLoss2d(reduction="sum")
    picked = np.take_along_axis(logits, target[:, None], axis=1)[:, 0]
    assert_close(_np(loss(_t(logits, device), _t(target, device))), -picked.sum())


def test_gumbel_softmax(device):
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    x = _t(np.tile(logits, (4000, 1)), device)
    hard = _np(F.gumbel_softmax(x, tau=0.5, hard=True))
    assert set(np.unique(hard)) == {0.0, 1.0} and np.all(hard.sum(1) == 1)
    assert np.allclose(hard.mean(0), [0.1, 0.2, 0.7], atol=0.03)  # the Gumbel-max trick samples softmax(logits)
    soft = _np(F.gumbel_softmax(x, tau=2.0))
    assert np.allclose(soft.sum(1), 1) and np.all(soft > 0) and np.all(soft < 1)
    core.manual_seed(3)
    first = _np(F.gumbel_softmax(x[:5], dim=0))
    core.manual_seed(3)
    assert np.array_equal(first, _np(F.gumbel_softmax(x[:5], dim=0))) and np.allclose(first.sum(0), 1)
    wide = _t(np.array([[0.0, 50.0, 0.0]]), device, True)
    out = F.gumbel_softmax(wide, hard=True)
    assert np.array_equal(_np(out), [[0.0, 1.0, 0.0]])
    (out * _t(np.array([[1.0, 2.0, 3.0]]), device)).sum().backward()
    assert np.all(np.isfinite(_np(wide.grad))) and wide.grad is not None  # straight-through: the soft gradient
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(x[:2], eps=1e-3)


# -- lazy layers ----------------------------------------------------------------------------------------------------

def test_lazy_linear(device):
    layer = nn.LazyLinear(4, device=device)
    assert isinstance(layer.weight, nn.UninitializedParameter) and layer.has_uninitialized_params()
    assert repr(layer) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    a = _rng().standard_normal((2, 3)).astype(np.float32)
    out = layer(_t(a, device))
    assert type(layer) is nn.Linear and layer.in_features == 3 and type(layer.weight) is nn.Parameter
    assert tuple(layer.weight.shape) == (4, 3) and list(layer.state_dict()) == ["weight", "bias"]
    assert np.all(np.abs(_np(layer.weight)) <= 1 / np.sqrt(3))  # kaiming_uniform_(a=√5) bound
    assert_close(_np(out), a @ _np(layer.weight).T + _np(layer.bias))
    out.sum().backward()
    assert layer.weight.grad is not None and not layer._forward_pre_hooks
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        _ = nn.LazyLinear(2).weight.shape


@pytest.mark.parametrize("name,base,groups,shape,weight_shape", [
    ("LazyConv1d", "Conv1d", 1, (2, 4, 7), (6, 4, 3)),
    ("LazyConv2d", "Conv2d", 2, (4, 5, 5), (6, 2, 3, 3)),  # unbatched: channels first
    ("LazyConvTranspose2d", "ConvTranspose2d", 2, (1, 4, 5, 5), (4, 3, 3, 3)),
    ("LazyConv3d", "Conv3d", 2, (1, 2, 4, 4, 4), (6, 1, 3, 3, 3))])
def test_lazy_convolutions(device, name, base, groups, shape, weight_shape):
    layer = getattr(nn, name)(6, 3, groups=groups).to(device)
    x = _t(_rng().standard_normal(shape).astype(np.float32), device)
    out = layer(x)
    assert type(layer) is getattr(nn, base) and tuple(layer.weight.shape) == weight_shape
    assert layer.in_channels == (shape[0] if len(shape) == len(weight_shape) - 1 else shape[1])
    reference = getattr(nn, base)(layer.in_channels, 6, 3, groups=groups).to(device)
    reference.load_state_dict(layer.state_dict())
    assert_close(_np(out), _np(reference(x)))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        getattr(nn, name)(6, 3, groups=3)(x)


def test_lazy_norms(device):
    a = _rng().standard_normal((4, 3, 5)).astype(np.float32)
    bn = nn.LazyBatchNorm1d(momentum=0.5).to(device)
    assert isinstance(bn.running_mean, nn.UninitializedBuffer)
    out = bn(_t(a, device))
    assert type(bn) is nn.BatchNorm1d and bn.num_features == 3
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    mean, var = a.mean(axis=(0, 2)), a.var(axis=(0, 2))
    assert_close(_np(out), (a - mean[:, None]) / np.sqrt(var[:, None] + 1e-5), rtol=1e-4, atol=1e-5)
    assert_close(_np(bn.running_mean), 0.5 * mean) and int(bn.num_batches_tracked) == 1
    inorm = nn.LazyInstanceNorm1d(affine=True).to(device)
    out = inorm(_t(a[0], device))  # unbatched (C, L): channels first
    assert type(inorm) is nn.InstanceNorm1d and inorm.num_features == 3 and tuple(inorm.weight.shape) == (3,)
    m, v = a[0].mean(axis=1, keepdims=True), a[0].var(axis=1, keepdims=True)
    assert_close(_np(out), (a[0] - m) / np.sqrt(v + 1e-5), rtol=1e-4, atol=1e-5)
    assert list(nn.LazyInstanceNorm2d().state_dict()) == []


@pytest.mark.parametrize("size", [1, 3, 4, 5])
def test_cross_map_lrn2d(device, size):
    a = _rng().standard_normal((2, 6, 3, 3))
    layer = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=2.0)
    assert repr(layer) == f"CrossMapLRN2d({size}, alpha=0.5, beta=0.75, k=2.0)"
    half = int((size - 1) / 2 + 1) - 1  # PyTorch's pre_pad - 1
    scale = np.stack([(a[:, max(c - half, 0):c + half + 1] ** 2).sum(1) for c in range(6)], 1) * 0.5 / size + 2.0
    assert_close(_np(layer(_t(a, device))), a * scale ** -0.75)
    assert gradcheck(layer, (_t(a[:1, :, :2, :2], device, True),))
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        layer(_t(a[0], device))


def _np_log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def test_adaptive_log_softmax_with_loss(device):
    model = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0).to(device).double()
    assert model.head_size == 5 and [tuple(p.shape) for p in model.tail[0].parameters()] == [(4, 8), (3, 4)]
    assert [tuple(p.shape) for p in model.tail[1].parameters()] == [(2, 8), (4, 2)]
    rng = _rng()
    x, target = rng.standard_normal((6, 8)), np.array([0, 2, 3, 5, 6, 9])
    head = _np_log_softmax(x @ _np(model.head.weight).T)
    full = [head[:, :3]]
    for i, (to_hidden, to_output) in enumerate(model.tail):
        cluster = _np_log_softmax(x @ _np(to_hidden.weight).T @ _np(to_output.weight).T)
        full.append(cluster + head[:, 3 + i:4 + i])
    full = np.concatenate(full, 1)
    assert np.allclose(np.exp(full).sum(1), 1)
    output, loss = model(_t(x, device), _t(target, device))
    assert_close(_np(output), full[np.arange(6), target])
    assert_close(_np(loss), -full[np.arange(6), target].mean())
    assert_close(_np(model.log_prob(_t(x, device))), full)
    assert np.array_equal(_np(model.predict(_t(x, device))), full.argmax(1))
    single = model(_t(x[0], device), _t(target[0], device))
    assert_close(_np(single.output), full[0, target[0]])
    xs = _t(x[:3], device, True)
    assert gradcheck(lambda v: model(v, _t(target[:3] + 3, device)).loss, (xs,))
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        model(_t(x[:1], device), _t(np.array([10]), device))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])


# -- fractional max pooling -------------------------------------------------------------------------------------------

def _np_starts(sample, size, out, kernel):
    """ATen's generate_intervals, in float32."""
    alpha = np.float32(size - kernel) / np.float32(out - 1)
    starts = [int(np.float32(i + sample) * alpha) - int(np.float32(sample) * alpha) for i in range(out - 1)]
    return starts + [size - kernel]


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool(device, nd):
    rng = _rng()
    size, out, kernel = 7, 4, 2
    a = rng.standard_normal((2, 3) + (size,) * nd).astype(np.float32)
    samples = rng.random((2, 3, nd)).astype(np.float32)
    layer = getattr(nn, f"FractionalMaxPool{nd}d")(kernel, output_size=out, return_indices=True,
                                                  _random_samples=_t(samples, device))
    values, indices = layer(_t(a, device))
    expected = np.zeros((2, 3) + (out,) * nd, dtype=np.float32)
    for b in range(2):
        for c in range(3):
            dims = samples[b, c][::-1] if nd == 2 else samples[b, c]  # 2-d samples are (width, height)
            starts = [_np_starts(s, size, out, kernel) for s in dims]
            for where in np.ndindex(*(out,) * nd):
                window = tuple(slice(starts[d][where[d]], starts[d][where[d]] + kernel) for d in range(nd))
                expected[(b, c) + where] = a[b, c][window].max()
    assert_close(_np(values), expected)
    flat = a.reshape(2, 3, -1)
    assert_close(np.take_along_axis(flat, _np(indices).reshape(2, 3, -1), 2).reshape(expected.shape), expected)
    ratio = getattr(F, f"fractional_max_pool{nd}d")(_t(a, device), kernel, output_ratio=0.5)
    assert tuple(ratio.shape) == (2, 3) + (3,) * nd
    assert np.all(np.isin(_np(ratio), a))  # every output is one of the inputs
    x = _t(a[:1, :1].astype(np.float64), device, True)
    fixed = _t(samples[:1, :1].astype(np.float64), device)
    assert gradcheck(lambda v: getattr(F, f"fractional_max_pool{nd}d")(v, kernel, out, _random_samples=fixed), (x,))
    with pytest.raises(ValueError, match="requires specifying either an output size, or a pooling ratio"):
        getattr(nn, f"FractionalMaxPool{nd}d")(2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        getattr(nn, f"FractionalMaxPool{nd}d")(2, output_ratio=1.5)
    with pytest.raises(RuntimeError, match="too large relative to input"):
        getattr(F, f"fractional_max_pool{nd}d")(_t(a, device), 5, output_size=5)


# -- single-process SyncBatchNorm and DataParallel, factory_kwargs ----------------------------------------------------

def test_sync_batch_norm_single_process(device):
    a = _rng().standard_normal((4, 3, 2, 5)).astype(np.float32)
    layer = nn.SyncBatchNorm(3, momentum=0.5).to(device)
    out = layer(_t(a, device))
    mean, var = a.mean(axis=(0, 2, 3)), a.var(axis=(0, 2, 3))
    assert_close(_np(out), (a - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5), rtol=1e-4, atol=1e-5)
    assert_close(_np(layer.running_mean), 0.5 * mean, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="expected at least 2D input \\(got 1D input\\)"):
        layer(_t(a[0, 0, 0], device))
    model = nn.Sequential(nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(3))).to(device)
    bn = model[1]
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted[2][0]) is nn.SyncBatchNorm
    assert converted[1].weight is bn.weight and converted[1].running_mean is bn.running_mean
    assert list(converted.state_dict()) == list(model.state_dict())


def test_data_parallel_runs_the_module(device):
    inner = nn.Linear(3, 2).to(device)
    wrapped = nn.DataParallel(inner)
    x = _t(_rng().standard_normal((4, 3)).astype(np.float32), device)
    assert_close(_np(wrapped(x)), _np(x) @ _np(inner.weight).T + _np(inner.bias))
    assert list(wrapped.state_dict()) == ["module.weight", "module.bias"] and wrapped.module is inner


def test_factory_kwargs():
    assert nn.factory_kwargs(None) == {}
    assert nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": core.float64}}) == {
        "device": "cpu", "dtype": core.float64}
    with pytest.raises(TypeError, match="dtype specified twice"):
        nn.factory_kwargs({"dtype": core.float32, "factory_kwargs": {"dtype": core.float64}})
    with pytest.raises(TypeError, match="unexpected kwargs"):
        nn.factory_kwargs({"shape": 3})
