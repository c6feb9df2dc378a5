"""Attention: scaled_dot_product_attention, MultiheadAttention and the transformer encoder against NumPy (and
PyTorch when importable)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import core
from core import nn
from core.autograd import gradcheck
from core.nn import functional as F
from core.testing import assert_close


# -- NumPy references -----------------------------------------------------------------------------------------------
def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    """PyTorch's documented reference (fully masked rows give 0)."""
    L, S = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    bias = np.zeros((L, S))
    if is_causal:
        bias = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf)
    if mask is not None:
        bias = np.where(mask, 0.0, -np.inf) if mask.dtype == bool else bias + mask
    scores = scores + bias
    with np.errstate(invalid="ignore"):
        weights = np.nan_to_num(np_softmax(scores), nan=0.0)
    return weights @ v


def np_mha(q, k, v, p, num_heads, key_padding_mask=None, attn_mask=None):
    """Time-major (L, N, E) multi-head attention with packed weights; returns (output, head-averaged weights)."""
    E = q.shape[-1]
    w_q, w_k, w_v = np.split(p["in_proj_weight"], 3)
    b_q, b_k, b_v = np.split(p["in_proj_bias"], 3)
    L, N, _ = q.shape
    S, hd = k.shape[0], E // num_heads

    def heads(x, n):  # (n, N, E) -> (N, H, n, hd)
        return x.reshape(n, N, num_heads, hd).transpose(1, 2, 0, 3)

    qh, kh, vh = heads(q @ w_q.T + b_q, L), heads(k @ w_k.T + b_k, S), heads(v @ w_v.T + b_v, S)
    scores = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(hd)
    if attn_mask is not None:
        scores = scores + np.where(attn_mask, -np.inf, 0.0)
    if key_padding_mask is not None:
        scores = scores + np.where(key_padding_mask, -np.inf, 0.0)[:, None, None, :]
    weights = np_softmax(scores)
    out = (weights @ vh).transpose(2, 0, 1, 3).reshape(L, N, E)
    return out @ p["out_proj.weight"].T + p["out_proj.bias"], weights.mean(1)


def np_layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _params(module):
    return {k: v.cpu().numpy().astype(np.float64) for k, v in module.state_dict().items()}


def _t(array, device, **kwargs):
    return core.tensor(array, device=device, **kwargs)


# -- scaled_dot_product_attention -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [core.float32, core.float64])
def test_sdpa_matches_numpy(dtype, device):
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((2, 3, 6, 7))
    Q, K, V = (_t(a, device, dtype=dtype) for a in (q, k, v))
    close = dict(atol=1e-5, rtol=1e-5, check_dtype=False)
    assert_close(F.scaled_dot_product_attention(Q, K, V), np_sdpa(q, k, v), **close)
    assert_close(F.scaled_dot_product_attention(Q, K, V, scale=0.3), np_sdpa(q, k, v, scale=0.3), **close)
    assert_close(F.scaled_dot_product_attention(Q, K, V, is_causal=True), np_sdpa(q, k, v, is_causal=True),
                 **close)
    mask = rng.random((4, 6)) > 0.4
    mask[1] = False  # a row where nothing is attended: 0, not NaN
    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=_t(mask, device))
    assert_close(out, np_sdpa(q, k, v, mask), **close)
    assert not np.isnan(out.cpu().numpy()).any()
    float_mask = rng.standard_normal((3, 1, 6))  # broadcast over batch and queries
    assert_close(F.scaled_dot_product_attention(Q, K, V, attn_mask=_t(float_mask, device, dtype=dtype)),
                 np_sdpa(q, k, v, float_mask), **close)


def test_sdpa_shapes_and_layouts(device):
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((6, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3, 2))
    # 2-D inputs, causal with L > S (upper-left aligned)
    out = F.scaled_dot_product_attention(_t(q, device), _t(k, device), _t(v, device), is_causal=True)
    assert tuple(out.shape) == (6, 2)
    assert_close(out, np_sdpa(q, k, v, is_causal=True), atol=1e-5, rtol=1e-5)
    # non-contiguous inputs
    kt = _t(k.T.copy(), device).t()
    assert_close(F.scaled_dot_product_attention(_t(q, device), kt, _t(v, device)), np_sdpa(q, k, v), atol=1e-5,
                 rtol=1e-5)
    # grouped-query attention: 4 query heads share 2 key/value heads
    qg, kg, vg = rng.standard_normal((1, 4, 3, 2)), rng.standard_normal((1, 2, 5, 2)), rng.standard_normal((1, 2, 5, 2))
    expected = np_sdpa(qg, np.repeat(kg, 2, 1), np.repeat(vg, 2, 1))
    assert_close(F.scaled_dot_product_attention(_t(qg, device), _t(kg, device), _t(vg, device), enable_gqa=True),
                 expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [core.float16, core.bfloat16])
def test_sdpa_half_precision(dtype, device):
    q = core.randn(2, 3, 4, device=device)
    out = F.scaled_dot_product_attention(q.to(dtype), q.to(dtype), q.to(dtype))
    assert out.dtype == dtype
    assert_close(out.float(), F.scaled_dot_product_attention(q, q, q), atol=5e-2, rtol=5e-2)


def test_sdpa_dropout(device):
    q = core.randn(2, 4, 3, device=device)
    assert_close(F.scaled_dot_product_attention(q, q, q, dropout_p=1.0), np.zeros((2, 4, 3), np.float32))
    core.manual_seed(0)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert not np.allclose(a.cpu().numpy(), F.scaled_dot_product_attention(q, q, q).cpu().numpy())


def test_sdpa_errors(device):
    q = core.randn(2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=core.ones(3, 3, dtype=core.bool, device=device),
                                       is_causal=True)
    with pytest.raises(RuntimeError, match="to have the same dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=core.zeros(3, 3, dtype=core.int64, device=device))
    with pytest.raises(RuntimeError, match="query.size\\(-1\\) == key.size\\(-1\\)"):
        F.scaled_dot_product_attention(q, q[..., :2], q)


def test_sdpa_gradcheck(device):
    rng = np.random.default_rng(2)
    q, k, v = (_t(rng.standard_normal(s), device, dtype=core.float64, requires_grad=True)
               for s in ((1, 2, 3), (1, 3, 3), (1, 3, 2)))
    mask = _t(np.array([[True, False, True], [False, False, False]]), device)
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), (q, k, v))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (q, k, v))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))


# -- MultiheadAttention ------------------------------------------------------------------------------------------------
def test_mha_parameters_init_and_repr(device):
    m = nn.MultiheadAttention(8, 2, device=device)
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == {
        "in_proj_weight": (24, 8), "in_proj_bias": (24,), "out_proj.weight": (8, 8), "out_proj.bias": (8,)}
    assert np.all(m.in_proj_bias.detach().cpu().numpy() == 0) and np.all(m.out_proj.bias.detach().cpu().numpy() == 0)
    assert m.head_dim == 4 and m._qkv_same_embed_dim
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
                       "out_features=8, bias=True)\n)")
    sep = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, bias=False, device=device)
    assert {k: tuple(v.shape) for k, v in sep.state_dict().items()} == {
        "q_proj_weight": (8, 8), "k_proj_weight": (8, 3), "v_proj_weight": (8, 5), "bias_k": (1, 1, 8),
        "bias_v": (1, 1, 8), "out_proj.weight": (8, 8)}
    assert sep.in_proj_weight is None and sep.in_proj_bias is None
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)


def test_mha_matches_numpy(device):
    rng = np.random.default_rng(3)
    m = nn.MultiheadAttention(6, 3, device=device, dtype=core.float64)
    with core.no_grad():
        m.in_proj_bias.copy_(core.randn(18, dtype=core.float64))
    q, kv = rng.standard_normal((4, 2, 6)), rng.standard_normal((5, 2, 6))
    kpm = np.zeros((2, 5), bool)
    kpm[1, 3:] = True
    am = np.triu(np.ones((4, 5), bool), 2)
    out, w = m(_t(q, device), _t(kv, device), _t(kv, device), key_padding_mask=_t(kpm, device),
               attn_mask=_t(am, device))
    e_out, e_w = np_mha(q, kv, kv, _params(m), 3, kpm, am)
    assert_close(out, e_out)
    assert_close(w, e_w)
    # self-attention (one packed projection), float masks, per-head weights, need_weights=False
    out, w = m(_t(q, device), _t(q, device), _t(q, device), average_attn_weights=False)
    assert tuple(w.shape) == (2, 3, 4, 4)
    assert_close(out, np_mha(q, q, q, _params(m), 3)[0])
    float_am = np.where(am[:, :4], -np.inf, 0.0)
    out2, none = m(_t(q, device), _t(q, device), _t(q, device), attn_mask=_t(float_am, device), need_weights=False)
    assert none is None
    assert_close(out2, np_mha(q, q, q, _params(m), 3, attn_mask=am[:, :4])[0])


def test_mha_batch_first_and_unbatched(device):
    m = nn.MultiheadAttention(4, 2, device=device)
    mb = nn.MultiheadAttention(4, 2, batch_first=True, device=device)
    mb.load_state_dict(m.state_dict())
    x = core.randn(3, 2, 4, device=device)
    out, w = m(x, x, x)
    xb = x.transpose(0, 1)
    out_b, w_b = mb(xb, xb, xb)
    assert_close(out_b, out.transpose(0, 1))
    assert_close(w_b, w)
    out_u, w_u = m(x[:, 1], x[:, 1], x[:, 1])
    assert tuple(out_u.shape) == (3, 4) and tuple(w_u.shape) == (3, 3)
    assert_close(out_u, out[:, 1])
    assert_close(w_u, w[1])


def test_mha_fully_masked_rows(device):
    m = nn.MultiheadAttention(4, 2, device=device)
    x = core.randn(3, 2, 4, device=device)
    kpm = core.zeros(2, 3, dtype=core.bool, device=device)
    kpm[1] = True
    # PyTorch: the explicit weights path gives NaN, the SDPA path gives 0 attention (output = out_proj bias)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's note on -inf - -inf
        assert np.isnan(m(x, x, x, key_padding_mask=kpm)[0][:, 1].detach().cpu().numpy()).all()
    out = m(x, x, x, key_padding_mask=kpm, need_weights=False)[0]
    assert_close(out[:, 1], np.zeros((3, 4), np.float32))


def test_mha_dropout_train_eval(device):
    m = nn.MultiheadAttention(4, 2, dropout=0.5, device=device)
    x = core.randn(3, 2, 4, device=device)
    m.eval()
    assert_close(m(x, x, x)[0], m(x, x, x)[0])
    m.train()
    core.manual_seed(0)
    outs = [m(x, x, x)[0].detach().cpu().numpy() for _ in range(2)]
    assert not np.allclose(outs[0], outs[1])


def test_mha_errors(device):
    m = nn.MultiheadAttention(4, 2, device=device)
    x = core.randn(3, 2, 4, device=device)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        m(x, x, x, attn_mask=core.zeros(2, 3, device=device))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        m(x, x, x, attn_mask=core.zeros(3, 3, dtype=core.int64, device=device))
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 4, but got 5"):
        m(core.randn(3, 2, 5), core.randn(3, 2, 5), core.randn(3, 2, 5))
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 3-D"):
        m(x, x[0], x[0])
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        m(x, x, x, key_padding_mask=core.zeros(2, 3, dtype=core.bool, device=device),
          attn_mask=core.zeros(3, 3, device=device))


def test_mha_gradcheck(device):
    m = nn.MultiheadAttention(4, 2, add_bias_kv=True, device=device, dtype=core.float64)
    q = core.randn(2, 1, 4, dtype=core.float64, device=device, requires_grad=True)
    kv = core.randn(3, 1, 4, dtype=core.float64, device=device, requires_grad=True)
    mask = core.tensor([[False, True, False], [False, False, False]], device=device)
    assert gradcheck(lambda q, kv, w: m(q, kv, kv, attn_mask=mask)[0], (q, kv, m.in_proj_weight))
    assert gradcheck(lambda q, kv, w: m(q, kv, kv, need_weights=False)[0], (q, kv, m.out_proj.weight))


def test_mha_state_dict_round_trip(device):
    m = nn.MultiheadAttention(6, 2, kdim=4, vdim=4, add_bias_kv=True, device=device)
    other = nn.MultiheadAttention(6, 2, kdim=4, vdim=4, add_bias_kv=True, device=device)
    other.load_state_dict(m.state_dict())
    q, kv = core.randn(3, 2, 6, device=device), core.randn(5, 2, 4, device=device)
    assert_close(other(q, kv, kv)[0], m(q, kv, kv)[0])


# -- TransformerEncoderLayer / TransformerEncoder ---------------------------------------------------------------------
ENCODER_LAYER_REPR = """TransformerEncoderLayer(
  (self_attn): MultiheadAttention(
    (out_proj): NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=True)
  )
  (linear1): Linear(in_features=4, out_features=8, bias=True)
  (dropout): Dropout(p=0.1, inplace=False)
  (linear2): Linear(in_features=8, out_features=4, bias=True)
  (norm1): LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
  (norm2): LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
  (dropout1): Dropout(p=0.1, inplace=False)
  (dropout2): Dropout(p=0.1, inplace=False)
)"""


def test_encoder_layer_structure_and_repr(device):
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, device=device)
    assert repr(layer) == ENCODER_LAYER_REPR
    assert list(layer.state_dict()) == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
        "norm2.weight", "norm2.bias"]
    assert layer.activation is F.relu and layer.activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(4, 2, activation="gelu").activation_relu_or_gelu == 2
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")
    no_bias = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, bias=False)
    assert all("bias" not in name for name in no_bias.state_dict())


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_numpy(norm_first, device):
    rng = np.random.default_rng(4)
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0, norm_first=norm_first,
                                       activation="gelu", device=device, dtype=core.float64)
    with core.no_grad():
        for p in layer.parameters():
            p.copy_(core.randn(p.shape, dtype=core.float64) * 0.5)
    p = _params(layer)
    x = rng.standard_normal((3, 2, 4))
    kpm = np.array([[False, False, True], [False, False, False]])
    sa = {k[len("self_attn."):]: v for k, v in p.items() if k.startswith("self_attn.")}

    def attention(h):
        return np_mha(h, h, h, sa, 2, key_padding_mask=kpm)[0]

    def feed_forward(h):
        from math import erf
        hidden = h @ p["linear1.weight"].T + p["linear1.bias"]
        hidden = hidden * 0.5 * (1 + np.vectorize(erf)(hidden / np.sqrt(2)))
        return hidden @ p["linear2.weight"].T + p["linear2.bias"]

    def norm(h, i):
        return np_layer_norm(h, p[f"norm{i}.weight"], p[f"norm{i}.bias"])

    if norm_first:
        h = x + attention(norm(x, 1))
        expected = h + feed_forward(norm(h, 2))
    else:
        h = norm(x + attention(x), 1)
        expected = norm(h + feed_forward(h), 2)
    assert_close(layer(_t(x, device), src_key_padding_mask=_t(kpm, device)), expected)


def test_encoder_deep_copies_layers_and_applies_norm(device):
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, device=device)
    encoder = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(4, device=device))
    assert len(encoder.layers) == 2 and encoder.num_layers == 2
    assert encoder.layers[0] is not layer and encoder.layers[0].linear1.weight is not encoder.layers[1].linear1.weight
    assert_close(encoder.layers[1].linear1.weight, layer.linear1.weight)
    assert "layers.1.self_attn.in_proj_weight" in encoder.state_dict() and "norm.weight" in encoder.state_dict()
    x = core.randn(3, 2, 4, device=device)
    expected = encoder.norm(encoder.layers[1](encoder.layers[0](x)))
    assert_close(encoder(x), expected)
    other = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, device=device), 2,
                                  norm=nn.LayerNorm(4, device=device))
    other.load_state_dict(encoder.state_dict())
    assert_close(other(x), encoder(x))


def test_encoder_masks_and_causal_detection(device):
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True, device=device)
    encoder = nn.TransformerEncoder(layer, num_layers=2)
    x = core.randn(2, 5, 4, device=device)
    causal = core.triu(core.full((5, 5), float("-inf"), device=device), 1)
    bool_causal = core.triu(core.ones(5, 5, dtype=core.bool, device=device), 1)
    out = encoder(x, mask=causal)
    assert_close(encoder(x, mask=bool_causal), out)
    assert_close(encoder(x, mask=causal, is_causal=True), out)
    # causal: the first position sees only itself, so later positions cannot change it
    x2 = x.clone()
    x2[:, 3:] = 0.0
    assert_close(encoder(x2, mask=causal)[:, :3], out[:, :3])
    kpm = core.tensor([[False] * 5, [False, False, False, True, True]], device=device)
    padded = encoder(x, src_key_padding_mask=kpm)
    x3 = x.clone()
    x3[1, 3:] = 7.0  # padded keys: their values must not reach the other positions
    assert_close(encoder(x3, src_key_padding_mask=kpm)[1, :3], padded[1, :3])
    assert tuple(encoder(x[0]).shape) == (5, 4)  # unbatched


def test_encoder_train_eval(device):
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.5), 1)
    encoder.to(device)
    x = core.randn(3, 2, 4, device=device)
    encoder.eval()
    assert_close(encoder(x), encoder(x))
    encoder.train()
    core.manual_seed(0)
    assert not np.allclose(encoder(x).detach().cpu().numpy(), encoder(x).detach().cpu().numpy())


def test_encoder_layer_gradcheck(device):
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0, device=device, dtype=core.float64)
    x = core.randn(2, 1, 4, dtype=core.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x, w, b: layer(x), (x, layer.linear1.weight, layer.norm1.bias))


# -- against PyTorch ------------------------------------------------------------------------------------------------
def _load_from_torch(module, t_module, device):
    assert list(module.state_dict()) == list(t_module.state_dict())
    module.load_state_dict({k: core.tensor(v.detach().cpu().numpy(), device=device)
                            for k, v in t_module.state_dict().items()})


@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True}, {"kdim": 3, "vdim": 5},
                                    {"add_bias_kv": True, "add_zero_attn": True}, {"bias": False}])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_matches_torch(kwargs, need_weights, device):
    torch = pytest.importorskip("torch")
    t_m = torch.nn.MultiheadAttention(8, 2, **kwargs).double()
    m = nn.MultiheadAttention(8, 2, **kwargs, device=device, dtype=core.float64)
    _load_from_torch(m, t_m, device)
    assert repr(m) == repr(t_m)
    rng = np.random.default_rng(5)
    n_first = kwargs.get("batch_first", False)
    q = rng.standard_normal((3, 4, 8) if n_first else (4, 3, 8))
    k = rng.standard_normal((3, 6, kwargs.get("kdim", 8)) if n_first else (6, 3, kwargs.get("kdim", 8)))
    v = rng.standard_normal((3, 6, kwargs.get("vdim", 8)) if n_first else (6, 3, kwargs.get("vdim", 8)))
    kpm = np.zeros((3, 6), bool)
    kpm[1, 4:] = True
    am = np.triu(np.ones((4, 6), bool), 3)
    t_args = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    args = [core.tensor(a, device=device, requires_grad=True) for a in (q, k, v)]
    t_out, t_w = t_m(*t_args, key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(am),
                     need_weights=need_weights, average_attn_weights=False)
    out, w = m(*args, key_padding_mask=_t(kpm, device), attn_mask=_t(am, device), need_weights=need_weights,
               average_attn_weights=False)
    assert_close(out, t_out.detach().cpu().numpy())
    if need_weights:
        assert_close(w, t_w.detach().cpu().numpy())
    t_out.pow(2).sum().backward()
    out.pow(2).sum().backward()
    for a, t_a in zip(args, t_args):
        assert_close(a.grad, t_a.grad.cpu().numpy())
    t_grads = {n: p.grad.cpu().numpy() for n, p in t_m.named_parameters()}
    for name, p in m.named_parameters():
        assert_close(p.grad, t_grads[name])


@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True, "norm_first": True, "activation": "gelu"},
                                    {"bias": False}])
def test_encoder_matches_torch(kwargs, device):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's nested-tensor fast-path notice
        t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, **kwargs).double()
        t_enc = torch.nn.TransformerEncoder(t_layer, 2, norm=torch.nn.LayerNorm(8).double())
    layer = nn.TransformerEncoderLayer(8, 2, 16, **kwargs, device=device, dtype=core.float64)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8, device=device, dtype=core.float64))
    assert repr(layer) == repr(t_layer)
    _load_from_torch(enc, t_enc, device)
    t_enc.eval()
    enc.eval()
    x = np.random.default_rng(6).standard_normal((3, 5, 8) if kwargs.get("batch_first") else (5, 3, 8))
    mask = np.triu(np.ones((5, 5), bool), 1)
    kpm = np.zeros((3, 5), bool)
    kpm[2, 3:] = True
    t_x = torch.tensor(x, requires_grad=True)  # requires_grad keeps PyTorch off its inference-only fast path
    t_out = t_enc(t_x, mask=torch.tensor(mask), src_key_padding_mask=torch.tensor(kpm))
    out = enc(_t(x, device), mask=_t(mask, device), src_key_padding_mask=_t(kpm, device))
    assert_close(out, t_out.detach().cpu().numpy())
    assert_close(enc(_t(x, device)), t_enc(t_x).detach().cpu().numpy())
