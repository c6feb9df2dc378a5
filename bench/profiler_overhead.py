"""Profiler overhead: µs per ``x + y`` (1 element) and per small-MLP training step with ``core.profiler`` off and
on, and the cost the profiler adds per recorded op.

Run: ``python bench/profiler_overhead.py``. Off and on alternate within each round (medians of 5 rounds); "on"
times the calls inside a running ``profile()`` block (its start and its end, which builds the events, are not
timed). The opencl rows (when a device is there) include keeping each kernel's OpenCL event.
"""

from __future__ import annotations

import statistics
import timeit

import numpy as np

import core
import core.nn as nn
from core.profiler import profile


def add_case(device: str):
    x = core.ones(1, device=device)
    y = core.ones(1, device=device)
    return lambda: x + y


def mlp_case(device: str):
    """One SGD step of a 16-32-4 MLP on a batch of 8: forward, loss, backward, step."""
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    x = core.tensor(rng.standard_normal((8, 16)).astype(np.float32), device=device)
    target = core.tensor(rng.standard_normal((8, 4)).astype(np.float32), device=device)
    optimizer = core.optim.SGD(model.parameters(), lr=0.01)

    def step():
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), target).backward()
        optimizer.step()

    return step


def ops_per_call(fn) -> int:
    """How many spans one call records (op calls; device events not counted)."""
    with profile() as prof:
        fn()
    return sum(not e.is_device_event for e in prof.events())


def time_off_on(fn, number: int, rounds: int = 5) -> tuple:
    """(median µs per call with the profiler off, the same with it on)."""
    off, on = [], []
    fn()
    for _ in range(rounds):
        off.append(timeit.timeit(fn, number=number) / number * 1e6)
        prof = profile()
        prof.start()
        try:
            on.append(timeit.timeit(fn, number=number) / number * 1e6)
        finally:
            prof.stop()
    return statistics.median(off), statistics.median(on)


def main() -> None:
    devices = ["cpu"] + (["opencl"] if core.opencl.is_available() else [])
    print("\nProfiler overhead, median µs per call (lower is better)\n")
    print("| case | device | ops per call | off µs | on µs | on / off | added µs per op |")
    print("|---|---|---|---|---|---|---|")
    for device in devices:
        for name, make, number in (("x + y, 1 element", add_case, 5000), ("MLP 16-32-4 SGD step, batch 8", mlp_case,
                                                                          300)):
            fn = make(device)
            ops = ops_per_call(fn)
            off, on = time_off_on(fn, number)
            print(f"| {name} | {device} | {ops} | {off:.2f} | {on:.2f} | {on / off:.2f}× | {(on - off) / ops:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
