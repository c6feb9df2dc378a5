"""Attention functionals: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``."""

from __future__ import annotations

import math
import warnings

from ... import dtypes as dt, ops
from .activation import softmax
from .linear import linear
from .norm import dropout

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_HALF = (dt.float16, dt.bfloat16)


def _safe_softmax(scores):
    """Softmax over the last dim whose fully masked (all ``-inf``) rows give 0, not NaN, as PyTorch's SDPA does."""
    row_max = ops.amax(scores, -1, keepdim=True).detach()
    # a row of -inf has max -inf; shifting by 0 instead keeps exp at 0 (not NaN) and its gradient finite
    row_max = ops.where(ops.isinf(row_max), ops.zeros_like(row_max), row_max)
    e = ops.exp(scores - row_max)
    total = ops.sum(e, -1, keepdim=True)
    return e / (total + (total == 0).to(total.dtype))


def _attention_bias(attn_mask, is_causal: bool, L: int, S: int, dtype, device):
    """The additive mask (0 / -inf or the float mask itself); None when nothing is masked."""
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        # upper-left aligned lower triangle, also when L != S
        keep = ops.ones(L, S, dtype=dt.bool, device=device).tril(0)
        return ops.zeros(L, S, dtype=dtype, device=device).masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is None:
        return None
    if attn_mask.dtype == dt.bool:
        return ops.zeros(attn_mask.shape, dtype=dtype, device=device).masked_fill(attn_mask.logical_not(),
                                                                                   float("-inf"))
    return attn_mask.to(dtype)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False):
    """softmax(q kᵀ · scale + mask) v (``torch.nn.functional.scaled_dot_product_attention``; float16/bfloat16
    compute in float32; rows with every key masked give 0)."""
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"scaled_dot_product_attention(): expected query, key and value to have at least 2 dims, "
                           f"got {query.dim()}, {key.dim()} and {value.dim()}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention(): query {list(query.shape)}, key {list(key.shape)} and "
                           f"value {list(value.shape)} need query.size(-1) == key.size(-1) and "
                           f"key.size(-2) == value.size(-2)")
    if attn_mask is not None and attn_mask.dtype != dt.bool and not attn_mask.is_floating_point():
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
    out_dtype = query.dtype
    if out_dtype in _HALF:  # PyTorch's math path keeps the intermediates in float32
        query, key, value = query.float(), key.float(), value.float()
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        key = key.repeat_interleave(query.shape[-3] // key.shape[-3], -3)
        value = value.repeat_interleave(query.shape[-3] // value.shape[-3], -3)
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = ops.matmul(query * scale_factor, key.transpose(-2, -1))
    bias = _attention_bias(attn_mask, is_causal, L, S, scores.dtype, scores.device)
    if bias is None:
        weights = softmax(scores, -1)
    else:
        weights = _safe_softmax(scores + bias)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    out = ops.matmul(weights, value)
    return out.to(out_dtype) if out.dtype != out_dtype else out


# -- multi-head attention ---------------------------------------------------------------------------------------------
def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """PyTorch's shape rules for (un)batched MHA inputs; returns whether the input is batched."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D"
                                 f" but found {key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D"
                                 f" but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D"
                                 f" but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D"
                                 f" but found {key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D"
                                 f" but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D"
                                     f" but found {attn_mask.dim()}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query tensor")


def _canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type, check_other: bool = True):
    """A bool mask as a float one (True -> -inf); float masks pass through (PyTorch's ``F._canonical_mask``)."""
    if mask is None:
        return None
    is_float = mask.is_floating_point()
    if mask.dtype != dt.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.", stacklevel=3)
    if not is_float:
        mask = ops.zeros(mask.shape, dtype=target_type, device=mask.device).masked_fill(mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    return None if input is None else input.dtype


def _pad_last(mask):
    """Append one zero column (an unmasked extra key) to a float mask."""
    return ops.cat([mask, ops.zeros(*mask.shape[:-1], 1, dtype=mask.dtype, device=mask.device)], -1)


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate_weights):
    """q, k, v projections; one matmul when query, key and value are the same tensor."""
    if separate_weights is None:
        if query is key and key is value:
            return linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    else:
        w_q, w_k, w_v = separate_weights
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def _heads(x, bsz: int, num_heads: int, head_dim: int):
    """(S, N, E) -> (N, H, S, head_dim)."""
    return x.reshape(x.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3)


def _static_heads(static, name: str, bsz: int, num_heads: int, head_dim: int):
    """A static key/value of shape (N*H, S, head_dim) as (N, H, S, head_dim)."""
    if static.shape[0] != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got {static.shape[0]}")
    if static.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {static.shape[2]}")
    return static.reshape(bsz, num_heads, static.shape[1], head_dim)


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float, out_proj_weight,
                                 out_proj_bias, training: bool = True, key_padding_mask=None, need_weights: bool = True,
                                 attn_mask=None, use_separate_proj_weight: bool = False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights: bool = True, is_causal: bool = False):
    """Multi-head attention on (L, N, E) or unbatched (L, E) inputs; returns (output, weights or None)
    (``torch.nn.functional.multi_head_attention_forward``)."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint alone drives SDPA's causal masking
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # the merged mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
        for name, w in (("q_proj_weight", q_proj_weight), ("k_proj_weight", k_proj_weight),
                        ("v_proj_weight", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name} is None")
        separate = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        separate = None
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate)

    if attn_mask is not None:  # as (1 or N*H, L, S)
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:  # one learned extra key/value appended to the sequence
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = ops.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ops.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    q = _heads(q, bsz, num_heads, head_dim)
    k = _heads(k, bsz, num_heads, head_dim) if static_k is None else _static_heads(static_k, "static_k", bsz,
                                                                                     num_heads, head_dim)
    v = _heads(v, bsz, num_heads, head_dim) if static_v is None else _static_heads(static_v, "static_v", bsz,
                                                                                     num_heads, head_dim)
    if add_zero_attn:  # one all-zero extra key/value
        zeros = ops.zeros(bsz, num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = ops.cat([k, zeros], 2), ops.cat([v, zeros], 2)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    src_len = k.shape[2]

    if attn_mask is not None:  # (1 or N*H, L, S) -> broadcastable to (N, H, L, S)
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else attn_mask.reshape(bsz, num_heads,
                                                                                              tgt_len, src_len)
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0

    if need_weights:
        # PyTorch's explicit path: a plain softmax, so a fully masked row gives NaN here (SDPA gives 0)
        scores = ops.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        attn = ops.matmul(weights, v)
    else:
        weights = None
        attn = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    # (N, H, L, hd) -> (L, N, E)
    attn = attn.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim)
    out = linear(attn, out_proj_weight, out_proj_bias)
    if weights is not None and average_attn_weights:
        weights = weights.mean(1)
    if not is_batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights
