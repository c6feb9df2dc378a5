"""core.utils.checkpoint: same gradients as without it, intermediates not kept alive."""

from __future__ import annotations

import weakref

import core
from core.utils.checkpoint import checkpoint


def _block(w, kept: list):
    def run(x):
        hidden = (x @ w).tanh()
        kept.append(weakref.ref(hidden))
        return (hidden @ w).sigmoid()

    return run


def test_checkpoint_gradients_equal_plain_backward(device):
    core.manual_seed(0)
    x = core.randn(4, 5, dtype=core.float64, device=device, requires_grad=True)
    w = core.randn(5, 5, dtype=core.float64, device=device, requires_grad=True)
    checkpoint(_block(w, []), x).sum().backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    _block(w, [])(x).sum().backward()
    assert core.allclose(gx, x.grad) and core.allclose(gw, w.grad)


def test_checkpoint_does_not_keep_intermediates(device):
    x = core.randn(4, 5, device=device, requires_grad=True)
    w = core.randn(5, 5, device=device, requires_grad=True)
    kept_plain, kept_checkpointed = [], []
    plain = _block(w, kept_plain)(x).sum()
    checkpointed = checkpoint(_block(w, kept_checkpointed), x).sum()
    assert kept_plain[0]() is not None, "without checkpoint the graph keeps the hidden activation"
    assert kept_checkpointed[0]() is None, "with checkpoint the hidden activation is freed after forward"
    plain.backward()
    checkpointed.backward()


def test_checkpoint_preserves_rng_state_for_dropout_like_blocks():
    core.manual_seed(1)
    x = core.ones(8, dtype=core.float64, requires_grad=True)

    def noisy(a):
        return a * core.rand(8, dtype=core.float64)

    out = checkpoint(noisy, x)
    out.sum().backward()
    assert core.allclose(x.grad, out.detach())  # the recomputation drew the same random numbers
