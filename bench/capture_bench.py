"""Whole-step capture against eager, for core and PyTorch: the referee's training steps and an MLP size grid.

    python bench/capture_bench.py [--threads 2] [--rounds 5] [--seconds 0.5] [--no-grid]

Contenders, alternating round by round (medians of steps/s): core eager, core with the step compiled with
``core.compile(step, mode="reduce-overhead")`` (its kernel calls recorded once and replayed, see docs/jit.md), and
PyTorch eager when torch is importable. The steps are the referee's (``../shared/bench/workloads.py``, the models of
``amp_bench.py``): MLP 784-512-512-10 at batch 128 with SGD (momentum 0.9) and a LeNet-like CNN at batch 64 with
Adam, forward + cross-entropy + backward + step + zero_grad. The grid runs the MLP step 784-H-H-10 for batch 32 to
512 and hidden 128 to 2048 (issue 22: the ratio must hold over it). Every contender's first loss is checked against
core eager's.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time

import numpy as np

from amp_bench import models

GRID_BATCH = (32, 128, 512)
GRID_HIDDEN = (128, 512, 2048)


def _mlp(torch, hidden: int):
    nn = torch.nn
    return nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))


def make_step(torch, model, make_optimizer, x_np, y_np, state, capture: bool):
    """A training step of ``model`` (loaded with ``state``) on fixed data; captured with ``capture``."""
    model.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    optimizer = make_optimizer(model.parameters())
    x, y = torch.tensor(x_np), torch.tensor(y_np)

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return torch.compile(step, mode="reduce-overhead") if capture else step


def contenders(frameworks: dict, build, shape) -> dict:
    """{name: step} for one case; ``build(torch)`` gives (model, make_optimizer) for a framework."""
    core = frameworks["core"]
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(shape).astype(np.float32)
    y_np = rng.integers(0, 10, shape[0])
    core.manual_seed(0)
    state = {k: v.detach().numpy().copy() for k, v in build(core)[0].state_dict().items()}
    steps = {}
    for name, torch, capture in (("core eager", core, False), ("core captured", core, True),
                                 ("torch eager", frameworks.get("torch"), False)):
        if torch is not None:
            model, make_optimizer = build(torch)
            steps[name] = make_step(torch, model, make_optimizer, x_np, y_np, state, capture)
    first = {name: float(step().detach()) for name, step in steps.items()}
    for name, loss in first.items():
        if not np.isclose(loss, first["core eager"], rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{name}: first loss {loss} differs from core eager's {first['core eager']}")
    for step in steps.values():
        for _ in range(3):  # the captured step records calls 1-3 (the first creates optimizer state)
            step()
    return steps


def measure(steps: dict, rounds: int, seconds: float) -> dict:
    rates = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            count, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                step()
                count += 1
            rates[name].append(count / (time.perf_counter() - start))
    return {name: statistics.median(v) for name, v in rates.items()}


def table(title: str, results: dict) -> None:
    names = list(next(iter(results.values())))
    ratios = [("core captured", "core eager")] + [(a, "torch eager") for a in ("core eager", "core captured")
                                                  if "torch eager" in names]
    print(f"\n{title}\n")
    print("| case | " + " | ".join(f"{n} steps/s" for n in names) + " | " +
          " | ".join(f"{a} / {b}" for a, b in ratios) + " |")
    print("|---|" + "---|" * (len(names) + len(ratios)))
    for case, by in results.items():
        print(f"| {case} | " + " | ".join(f"{by[n]:.1f}" for n in names) + " | " +
              " | ".join(f"{by[a] / by[b]:.2f}×" for a, b in ratios) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5, help="timed seconds per contender per round")
    parser.add_argument("--no-grid", action="store_true", help="only the referee's two steps")
    args = parser.parse_args()
    frameworks = {"core": importlib.import_module("core")}
    try:
        frameworks["torch"] = importlib.import_module("torch")
    except ImportError:
        print("torch not importable: no PyTorch column")
    for fw in frameworks.values():
        fw.set_num_threads(args.threads)
    print(f"{args.threads} threads; median of {args.rounds} alternating rounds of {args.seconds} s")
    referee = {}
    for name, label in (("mlp", "mlp_train_step (784-512-512-10, b128, SGD)"), ("cnn", "cnn_train_step (b64, Adam)")):
        def build(torch, name=name):
            model, make_optimizer, _ = models(torch, "cpu")[name]
            return model, make_optimizer

        shape = models(frameworks["core"], "cpu")[name][2]
        referee[label] = measure(contenders(frameworks, build, shape), args.rounds, args.seconds)
    table("The referee's training steps", referee)
    if args.no_grid:
        return
    grid = {}
    for hidden in GRID_HIDDEN:
        for batch in GRID_BATCH:
            def build(torch, hidden=hidden):
                return _mlp(torch, hidden), lambda p, torch=torch: torch.optim.SGD(p, lr=0.01, momentum=0.9)

            grid[f"MLP 784-{hidden}-{hidden}-10, batch {batch}"] = measure(
                contenders(frameworks, build, (batch, 784)), args.rounds, args.seconds)
    table("MLP training step over batch and hidden size (SGD, momentum 0.9)", grid)


if __name__ == "__main__":
    main()
