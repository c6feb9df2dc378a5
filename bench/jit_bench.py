"""core.jit fusion: an 8-op elementwise chain eager vs traced+fused (cpu_c, opencl) vs PyTorch; model latency.

Run: ``cd bench && python jit_bench.py [--seconds S]``. The chain is
``((x * 1.5 + b).relu() * 0.5 - x).abs() / 3.0 + 1.0`` on 2^22 float32 (mul, add,
relu, mul, sub, abs, div, add: cheap ops, no transcendental to hide memory
traffic behind): eager runs 8 kernels and 8 round trips through memory, the
fused kernel reads x and b once and writes once. Then MLP 784-512-512-10
(batch 128) and LeNet (batch 64) inference latency, traced vs eager, under
``no_grad``. Issue-9 targets on cpu: traced+fused >= 3x eager core and >= 1.5x
PyTorch eager on the chain. Contenders alternate round by round and medians
are reported: the machine is shared and noisy.
"""

from __future__ import annotations

import os

# Before torch or core load libgomp (they share it): idle OpenMP workers that spin after one contender's kernels
# steal the cores from the next contender; measured here, torch's spinning pool made core's kernels 5x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import argparse  # noqa: E402
import statistics  # noqa: E402

import core  # noqa: E402
import core.jit as jit  # noqa: E402
import core.nn as nn  # noqa: E402
from _harness import print_table, time_synced_us  # noqa: E402
from core.testing import available_devices  # noqa: E402
from train_step import core_lenet  # noqa: E402

N = 1 << 22
TARGETS = {"eager": 3.0, "torch": 1.5}


def chain(x, b):
    """8 cheap elementwise ops."""
    return ((x * 1.5 + b).relu() * 0.5 - x).abs() / 3.0 + 1.0


def _sync(device: str):
    return core.opencl.synchronize if device == "opencl" else (lambda: None)


def _alternate(contenders: dict, sync, seconds: float, rounds: int = 3) -> dict:
    """Median µs per call of each contender, timed round-robin so that noise hits all alike.

    Every call waits for its device work: queuing thousands of 100 ms OpenCL calls in a timing window and waiting
    for them all at its end would take minutes.
    """
    samples = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            samples[name].append(time_synced_us(lambda fn=fn: (fn(), sync()), sync, seconds))
    return {name: statistics.median(v) for name, v in samples.items()}


def _torch_contenders(x, b) -> dict:
    try:
        import torch
    except ImportError:
        print("torch not importable: PyTorch columns n/a")
        return {}
    torch.set_num_threads(os.cpu_count() or 1)  # as many threads as cpu_c uses by default
    tx, tb = torch.from_numpy(x.numpy()), torch.from_numpy(b.numpy())
    contenders = {"torch": lambda: chain(tx, tb)}
    try:
        compiled = torch.compile(chain)
        compiled(tx, tb)  # compiles (tens of seconds with inductor)
        contenders["torch.compile"] = lambda: compiled(tx, tb)
    except Exception as exc:  # no compiler, unsupported platform...
        print(f"torch.compile: n/a ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})")
    return contenders


def chain_table(device: str, seconds: float) -> dict:
    x, b = core.randn(N, device=device), core.randn(N, device=device)
    traced = jit.trace(chain, (x, b))
    fused = [n.attrs["ops"] for n in traced.graph.nodes if n.op == "jit::fused"]
    print(f"\n{device}: traced graph runs {len(traced.graph.nodes)} node(s); fused: {fused or 'none'}")
    with core.no_grad():
        contenders = {"traced": lambda: traced(x, b), "eager": lambda: chain(x, b)}
        if device == "cpu":
            contenders.update(_torch_contenders(x, b))
        result = _alternate(contenders, _sync(device), seconds)
    print_table({f"8-op chain, 2^22 float32, {device}": result}, f"Elementwise chain on {device} (µs per call)",
                subject="traced")
    for other, target in TARGETS.items():
        if other in result:
            speedup = result[other] / result["traced"]
            print(f"traced+fused vs {other}: {speedup:.2f}x faster (target >= {target}x)")
    return result


def model_table(device: str, seconds: float) -> None:
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    models = {"MLP 784-512-512-10, batch 128": (mlp, core.randn(128, 784)),
              "LeNet, batch 64": (core_lenet("cpu"), core.randn(64, 1, 28, 28))}
    results = {}
    with core.no_grad():
        for case, (model, x) in models.items():
            model, x = model.to(device).eval(), x.to(device)
            traced = jit.trace(model, x)
            results[case] = _alternate({"traced": lambda t=traced, x=x: t(x), "eager": lambda m=model, x=x: m(x)},
                                       _sync(device), seconds)
    print_table(results, f"Inference latency on {device}, no_grad (µs per call)", subject="traced")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="timing window per contender and round")
    args = parser.parse_args()
    devices = [d for d in ("cpu", "opencl") if d in available_devices()]
    for device in devices:
        chain_table(device, args.seconds)
    for device in devices:
        model_table(device, args.seconds)


if __name__ == "__main__":
    main()
