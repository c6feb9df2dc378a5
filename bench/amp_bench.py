"""Mixed-precision training steps: float32 against bfloat16 autocast, for core and (when installed) PyTorch, in one
run with the contenders alternating and medians reported.

    python bench/amp_bench.py [--device cpu] [--threads 2] [--rounds 5] [--seconds 1.0]

The steps are the referee's (``../shared/bench/workloads.py``): an MLP 784-512-512-10 at batch 128 with SGD
(momentum 0.9) and a LeNet-like CNN at batch 64 with Adam, each forward + cross-entropy + backward + step +
zero_grad. The code below is written against the PyTorch API and run on ``core`` and on ``torch`` alike.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time


def models(torch, device):
    nn = torch.nn
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    cnn = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                        nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(),
                        nn.Linear(128, 10))
    return {"mlp": (mlp.to(device), lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9), (128, 784)),
            "cnn": (cnn.to(device), lambda p: torch.optim.Adam(p, lr=1e-3), (64, 1, 28, 28))}


def step_fn(torch, device, name: str, amp: bool):
    """One training step of workload ``name`` (float32, or under bfloat16 autocast with ``amp``)."""
    torch.manual_seed(0)
    model, make_optimizer, shape = models(torch, device)[name]
    optimizer = make_optimizer(model.parameters())
    x = torch.randn(*shape, device=device)
    y = torch.randint(0, 10, (shape[0],), device=device)

    def step():
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=amp):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


def steps_per_second(step, seconds: float) -> float:
    step()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        count += 1
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="timed seconds per contender per round")
    args = parser.parse_args()
    frameworks = {"core": importlib.import_module("core")}
    try:
        frameworks["torch"] = importlib.import_module("torch")
    except ImportError:
        pass
    for torch in frameworks.values():
        torch.set_num_threads(args.threads)
    contenders = {(fw, name, amp): step_fn(torch, args.device, name, amp)
                  for fw, torch in frameworks.items() for name in ("mlp", "cnn") for amp in (False, True)}
    rates = {key: [] for key in contenders}
    for _ in range(args.rounds):
        for key, step in contenders.items():
            rates[key].append(steps_per_second(step, args.seconds))
    median = {key: statistics.median(v) for key, v in rates.items()}
    print(f"\nsteps/s, median of {args.rounds} alternating rounds, device {args.device}, {args.threads} threads\n")
    names = list(frameworks)
    print("| workload | " + " | ".join(f"{fw} fp32 | {fw} bf16 autocast | {fw} bf16/fp32" for fw in names)
          + (" | core/torch bf16 |" if "torch" in frameworks else " |"))
    print("|---|" + "---|---|---|" * len(names) + ("---|" if "torch" in frameworks else ""))
    for name in ("mlp", "cnn"):
        cells = []
        for fw in names:
            fp32, bf16 = median[(fw, name, False)], median[(fw, name, True)]
            cells += [f"{fp32:.1f}", f"{bf16:.1f}", f"{bf16 / fp32:.2f}×"]
        if "torch" in frameworks:
            cells.append(f"{median[('core', name, True)] / median[('torch', name, True)]:.2f}×")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
