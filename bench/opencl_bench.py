"""core on opencl beside core on cpu and plain NumPy: op overhead, elementwise throughput, GEMM, training steps.

Run: ``python bench/opencl_bench.py [--seconds 2]``. On PoCL (a CPU OpenCL) this measures the backend's
overhead, not GPU speed. Prints why and exits 0 when no OpenCL device is available.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import core
from _harness import time_synced_us
from train_step import core_lenet, core_mlp, core_step, steps_per_second


_timed = time_synced_us


def _row(name: str, unit: str, values: dict) -> str:
    cells = " | ".join(f"{values[k]:.1f} {unit}" if values.get(k) is not None else "—" for k in ("opencl", "cpu",
                                                                                                  "numpy"))
    ratio = values["cpu"] / values["opencl"] if unit == "µs" else values["opencl"] / values["cpu"]
    return f"| {name} | {cells} | {ratio:.2f}× |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    if not core.opencl.is_available():
        print(f"skipped: {core.opencl.unavailable_reason()}")
        return 0
    sync = {"opencl": core.opencl.synchronize, "cpu": lambda: None, "numpy": lambda: None}
    rng = np.random.default_rng(0)
    print(f"opencl device: {core.opencl.get_device_name()}; cpu backend: {core.cpu.unavailable_reason() or 'default'}")
    print("\n| case | opencl | cpu | numpy | opencl speed / cpu |\n|---|---|---|---|---|")

    def bench(name, make):
        values = {}
        for dev in ("opencl", "cpu", "numpy"):
            fn = make(dev)
            values[dev] = None if fn is None else _timed(fn, sync[dev], args.seconds)
        print(_row(name, "µs", values), flush=True)

    def on(dev, array):
        return array if dev == "numpy" else core.tensor(array, device=dev)

    small = rng.standard_normal(4).astype(np.float32)
    bench("op overhead: x + y (4 elements)", lambda d: (lambda x=on(d, small): x + x))
    big = rng.standard_normal(1 << 20).astype(np.float32)
    bench("a * b + a (1M)", lambda d: (lambda x=on(d, big): x * x + x))
    bench("exp (1M)", lambda d: (lambda x=on(d, big): np.exp(x) if d == "numpy" else core.exp(x)))
    bench("sum (1M)", lambda d: (lambda x=on(d, big): x.sum()))
    for n in (256, 512):
        a = rng.standard_normal((n, n)).astype(np.float32)
        bench(f"sgemm {n}", lambda d, a=a: (lambda x=on(d, a): x @ x))
    print("\n| case | opencl | cpu | numpy | opencl / cpu |\n|---|---|---|---|---|")
    core.manual_seed(0)
    x_mlp, y_mlp = rng.standard_normal((128, 784)).astype(np.float32), rng.integers(0, 10, 128)
    x_cnn, y_cnn = rng.standard_normal((64, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 64)
    for name, build, opt, x, y in (("mlp_train_step", core_mlp, lambda p: core.optim.SGD(p, lr=0.01, momentum=0.9),
                                    x_mlp, y_mlp),
                                   ("cnn_train_step", core_lenet, lambda p: core.optim.Adam(p, lr=1e-3), x_cnn, y_cnn)):
        rates = {"numpy": None}
        for dev in ("opencl", "cpu"):
            model = build(dev)
            step = core_step(model, opt(model.parameters()), core.tensor(x, device=dev), core.tensor(y, device=dev))
            rates[dev] = steps_per_second(lambda step=step, dev=dev: (step(), sync[dev]()), args.seconds)
        print(_row(name, "steps/s", rates), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
