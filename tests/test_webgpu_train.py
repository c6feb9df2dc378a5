"""Issue 24's proof: an MLP and a LeNet-style CNN train on webgpu to the losses they reach on cpu (float32
tolerance), with the CPU fallback switched off, so every op of the steps ran on the device."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import nn
from core.dispatch.operator import fallback_counts
from core.plugins import manager
from core.testing import assert_close

pytest.importorskip("core_webgpu", reason="the core-webgpu plugin is not installed")
_available, _reason = manager.runtime_for("webgpu").is_available()
pytestmark = pytest.mark.skipif(not _available, reason=f"webgpu unavailable: {_reason}")


def _mlp():
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 10))


def _lenet():
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16 * 2 * 2, 32), nn.GELU(), nn.Linear(32, 10))


def _train(make, shape, optimizer, device, steps=4):
    """Losses of ``steps`` training steps of a fresh ``make()`` model on one batch (seeded: the same weights and data
    on every device)."""
    core.manual_seed(0)
    model = make().to(device)
    opt = optimizer(model.parameters())
    rng = np.random.default_rng(0)
    x = core.tensor(rng.standard_normal((16,) + shape).astype(np.float32), device=device)
    y = core.tensor(rng.integers(0, 10, 16), device=device)
    losses = []
    for _ in range(steps):  # fitting one batch: the loss must fall
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


@pytest.mark.parametrize("name, make, shape, optimizer", [
    ("mlp", _mlp, (64,), lambda p: core.optim.Adam(p, lr=1e-2)),
    ("lenet", _lenet, (1, 16, 16), lambda p: core.optim.SGD(p, lr=0.05, momentum=0.9)),
])
def test_trains_to_the_cpu_losses_with_every_op_on_the_device(name, make, shape, optimizer):
    expected = _train(make, shape, optimizer, "cpu")
    before = sum(n for (_, dev), n in fallback_counts.items() if dev == "webgpu")
    core.config.set("fallback", False)  # a declined call raises instead of running on the CPU
    try:
        losses = _train(make, shape, optimizer, "webgpu")
    finally:
        core.config.reset("fallback")
    assert sum(n for (_, dev), n in fallback_counts.items() if dev == "webgpu") == before
    assert expected[-1] < expected[0]  # the model learns (on both devices alike)
    assert_close(losses, expected, rtol=1e-4, atol=1e-5)
