"""core on cuda beside PyTorch CUDA in one run: GEMM, elementwise, and mlp/cnn training steps.

Run: ``python bench/cuda_bench.py [--seconds 3]``. Needs a GPU, the core-cuda plugin and PyTorch with CUDA;
prints why and exits 0 when any is missing. Targets (issue 7): GEMM >= 0.9x PyTorch's, training steps >= 0.5x.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import core
from _harness import time_synced_us
from train_step import core_lenet, core_mlp, core_step, steps_per_second


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed"
    if not torch.cuda.is_available():
        return None, "PyTorch sees no CUDA device"
    return torch, ""


_timed = time_synced_us


def _torch_train_steps(torch):
    tnn = torch.nn
    mlp = tnn.Sequential(tnn.Linear(784, 512), tnn.ReLU(), tnn.Linear(512, 512), tnn.ReLU(), tnn.Linear(512, 10))
    lenet = tnn.Sequential(tnn.Conv2d(1, 6, 5), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Conv2d(6, 16, 5), tnn.ReLU(),
                           tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(256, 120), tnn.ReLU(), tnn.Linear(120, 84),
                           tnn.ReLU(), tnn.Linear(84, 10))
    mlp, lenet = mlp.cuda(), lenet.cuda()
    rng = np.random.default_rng(0)

    def make(model, optimizer, x, y):
        def step():
            optimizer.zero_grad()
            tnn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        return step

    return {
        "mlp_train_step": make(mlp, torch.optim.SGD(mlp.parameters(), lr=0.01, momentum=0.9),
                               torch.tensor(rng.standard_normal((128, 784)), dtype=torch.float32).cuda(),
                               torch.tensor(rng.integers(0, 10, 128)).cuda()),
        "cnn_train_step": make(lenet, torch.optim.Adam(lenet.parameters(), lr=1e-3),
                               torch.tensor(rng.standard_normal((64, 1, 28, 28)), dtype=torch.float32).cuda(),
                               torch.tensor(rng.integers(0, 10, 64)).cuda()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if not core.cuda.is_available():
        print(f"skipped: {core.cuda.unavailable_reason()}")
        return 0
    torch, why = _torch_cuda()
    if torch is None:
        print(f"skipped: {why} (the benchmark compares against PyTorch CUDA)")
        return 0
    sync_core, sync_torch = core.cuda.synchronize, torch.cuda.synchronize
    rng = np.random.default_rng(0)
    print(f"device: {core.cuda.get_device_name()}\n")
    print("| case | core | torch | core / torch (speed) |\n|---|---|---|---|")
    for n in (1024, 4096):
        a_np, b_np = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
        a, b = core.tensor(a_np, device="cuda"), core.tensor(b_np, device="cuda")
        ta, tb = torch.tensor(a_np).cuda(), torch.tensor(b_np).cuda()
        ours = _timed(lambda a=a, b=b: a @ b, sync_core, args.seconds)
        theirs = _timed(lambda a=ta, b=tb: a @ b, sync_torch, args.seconds)
        flops = 2 * n ** 3
        print(f"| sgemm {n} | {flops / ours / 1e6:.0f} GFLOP/s | {flops / theirs / 1e6:.0f} GFLOP/s | "
              f"{theirs / ours:.2f}x |")
    x_np = rng.standard_normal(1 << 24).astype(np.float32)
    x, tx = core.tensor(x_np, device="cuda"), torch.tensor(x_np).cuda()
    for name, ours_fn, theirs_fn in (("a*b+a (16M)", lambda: x * x + x, lambda: tx * tx + tx),
                                     ("exp (16M)", lambda: core.exp(x), lambda: torch.exp(tx)),
                                     ("sum (16M)", lambda: x.sum(), lambda: tx.sum())):
        ours, theirs = _timed(ours_fn, sync_core, args.seconds), _timed(theirs_fn, sync_torch, args.seconds)
        print(f"| {name} | {ours:.1f} µs | {theirs:.1f} µs | {theirs / ours:.2f}x |")
    core.manual_seed(0)
    x_mlp, y_mlp = rng.standard_normal((128, 784)).astype(np.float32), rng.integers(0, 10, 128)
    x_cnn, y_cnn = rng.standard_normal((64, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 64)
    mlp, lenet = core_mlp("cuda"), core_lenet("cuda")
    ours = {"mlp_train_step": core_step(mlp, core.optim.SGD(mlp.parameters(), lr=0.01, momentum=0.9),
                                        core.tensor(x_mlp, device="cuda"), core.tensor(y_mlp, device="cuda")),
            "cnn_train_step": core_step(lenet, core.optim.Adam(lenet.parameters(), lr=1e-3),
                                        core.tensor(x_cnn, device="cuda"), core.tensor(y_cnn, device="cuda"))}
    theirs = _torch_train_steps(torch)
    for name in ours:
        ours_rate = steps_per_second(lambda step=ours[name]: (step(), sync_core()), args.seconds)
        theirs_rate = steps_per_second(lambda step=theirs[name]: (step(), sync_torch()), args.seconds)
        print(f"| {name} | {ours_rate:.0f} steps/s | {theirs_rate:.0f} steps/s | {ours_rate / theirs_rate:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
