"""Train a small MLP for a few steps and print its losses: ``python train_mlp.py toy`` (or ``cpu``)."""

import sys

import numpy as np

import core
import core.nn as nn
import core.nn.functional as F
from core.dispatch.operator import fallback_counts


def train(device, steps=5):
    """The losses of ``steps`` SGD steps of Linear-ReLU-Linear on fixed random data."""
    core.manual_seed(0)  # weights are drawn on the CPU, then moved: the same start on every device
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    optimizer = core.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    x = core.tensor(rng.standard_normal((32, 4)), dtype=core.float32, device=device)
    y = core.tensor(rng.integers(0, 3, 32), device=device)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    print("losses:", *train(sys.argv[1] if len(sys.argv) > 1 else "toy"))
    print("CPU fallbacks:", dict(fallback_counts))
