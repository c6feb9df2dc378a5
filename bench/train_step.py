"""Training steps per second: mlp_train_step (784-512-512-10, batch 128, SGD momentum) and cnn_train_step
(LeNet-like on 1×28×28, batch 64, Adam), for core, a hand-written NumPy baseline and PyTorch (when installed).

Run: ``python bench/train_step.py [--device cpu]``. The numbers of the issue-4 closing note are the NumPy
reference backend's; the compiled backends have their own issues.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import core
import core.nn as nn
import core.nn.functional as F
from numpy_models import NumpyLeNet, NumpyMLP


def core_mlp(device):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(device)


def core_lenet(device):
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10)).to(device)


def core_step(model, optimizer, x, y):
    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def torch_steps():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(2)
    tnn = torch.nn
    mlp = tnn.Sequential(tnn.Linear(784, 512), tnn.ReLU(), tnn.Linear(512, 512), tnn.ReLU(), tnn.Linear(512, 10))
    lenet = tnn.Sequential(tnn.Conv2d(1, 6, 5), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Conv2d(6, 16, 5), tnn.ReLU(),
                           tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(256, 120), tnn.ReLU(), tnn.Linear(120, 84),
                           tnn.ReLU(), tnn.Linear(84, 10))

    def make(model, optimizer, x, y):
        def step():
            optimizer.zero_grad()
            loss = tnn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()

        return step

    rng = np.random.default_rng(0)
    return {
        "mlp_train_step": make(mlp, torch.optim.SGD(mlp.parameters(), lr=0.01, momentum=0.9),
                               torch.tensor(rng.standard_normal((128, 784)), dtype=torch.float32),
                               torch.tensor(rng.integers(0, 10, 128))),
        "cnn_train_step": make(lenet, torch.optim.Adam(lenet.parameters(), lr=1e-3),
                               torch.tensor(rng.standard_normal((64, 1, 28, 28)), dtype=torch.float32),
                               torch.tensor(rng.integers(0, 10, 64))),
    }


def steps_per_second(step, seconds: float = 2.0, rounds: int = 3) -> float:
    """Median steps/s over ``rounds`` windows of about ``seconds`` each (after 2 warm-up steps)."""
    step()
    step()
    rates = []
    for _ in range(rounds):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / rounds:
            step()
            count += 1
        rates.append(count / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    core.manual_seed(0)
    x_mlp, y_mlp = rng.standard_normal((128, 784)).astype(np.float32), rng.integers(0, 10, 128)
    x_cnn, y_cnn = rng.standard_normal((64, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 64)
    mlp, lenet = core_mlp(args.device), core_lenet(args.device)
    contenders = {
        "mlp_train_step": {
            "core": core_step(mlp, core.optim.SGD(mlp.parameters(), lr=0.01, momentum=0.9),
                              core.tensor(x_mlp, device=args.device), core.tensor(y_mlp, device=args.device)),
            "numpy": (lambda m=NumpyMLP(rng): m.step(x_mlp, y_mlp)),
        },
        "cnn_train_step": {
            "core": core_step(lenet, core.optim.Adam(lenet.parameters(), lr=1e-3),
                              core.tensor(x_cnn, device=args.device), core.tensor(y_cnn, device=args.device)),
            "numpy": (lambda m=NumpyLeNet(rng): m.step(x_cnn, y_cnn)),
        },
    }
    for case, step in (torch_steps() or {}).items():
        contenders[case]["torch"] = step
    print(f"\nTraining steps per second on {args.device} (higher is better; medians)\n")
    names = ["core", "numpy"] + (["torch"] if "torch" in contenders["mlp_train_step"] else [])
    print("| case | " + " | ".join(f"{n} steps/s" for n in names) + " | "
          + " | ".join(f"core / {n}" for n in names[1:]) + " |")
    print("|" + "---|" * (1 + 2 * len(names) - 1))
    for case, by in contenders.items():
        rates = {n: steps_per_second(by[n], args.seconds) for n in names}
        print(f"| {case} | " + " | ".join(f"{rates[n]:.1f}" for n in names) + " | "
              + " | ".join(f"{rates['core'] / rates[n]:.2f}×" for n in names[1:]) + " |")


if __name__ == "__main__":
    main()
