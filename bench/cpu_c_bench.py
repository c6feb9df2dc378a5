"""cpu_c vs NumPy: GEMM GFLOP/s, ``a*b+c`` bandwidth vs NumPy's copy bandwidth, tiny-op overhead vs the reference.

Run: ``cd bench && python cpu_c_bench.py``. The tiny-op overheads of cpu_c and of the NumPy reference
backend (``CORE_BACKENDS=cpu=numpy``) are each measured in subprocesses that alternate, five of each.
Issue-5 targets: GEMM >= 0.9x numpy.matmul; a*b+c >= 0.8x copy bandwidth; tiny-op overhead <= the reference's.
Noisy on a shared 2-core machine: read ratios, not absolutes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import core
from _harness import compare

OVERHEAD_FLAG = "--overhead-json"


def _best(fn, repeat: int = 5, number: int = 1) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def gemm_rows() -> list:
    rows = []
    for n in (512, 1024, 2048):
        a, b = core.randn(n, n), core.randn(n, n)
        na, nb = a.numpy(), b.numpy()
        flops = 2 * n ** 3
        repeat = 5 if n < 2048 else 3
        ours = flops / _best(lambda: a @ b, repeat) / 1e9
        theirs = flops / _best(lambda: na @ nb, repeat) / 1e9
        rows.append((f"GEMM {n} float32 (GFLOP/s)", ours, theirs, ours / theirs))
    return rows


def bandwidth_rows(rounds: int = 9) -> list:
    """GB/s of ``a*b+c`` (cpu_c and NumPy) and of NumPy's copy, timed in alternation; medians of the rounds."""
    n = 1 << 24
    a, b, c = core.randn(n), core.randn(n), core.randn(n)
    na, nb, nc = a.numpy(), b.numpy(), c.numpy()
    dst = np.empty_like(na)
    # a*b+c touches a, b, c and the result: 4 arrays' bytes (the intermediate a*b is not counted)
    cases = {"copy": (2 * na.nbytes, lambda: np.copyto(dst, na)), "ours": (4 * na.nbytes, lambda: a * b + c),
             "numpy": (4 * na.nbytes, lambda: na * nb + nc)}
    rates = {name: [] for name in cases}
    for _ in range(rounds):  # the machine's memory bandwidth drifts: alternate, so every round sees the same
        for name, (nbytes, fn) in cases.items():
            rates[name].append(nbytes / _best(fn, 1) / 1e9)
    ours, copy, numpy = (statistics.median(rates[k]) for k in ("ours", "copy", "numpy"))
    ratio = statistics.median(o / c for o, c in zip(rates["ours"], rates["copy"]))
    return [("a*b+c 2^24 float32 (GB/s, vs NumPy copy)", ours, copy, ratio),
            ("a*b+c 2^24 float32 (GB/s, vs NumPy a*b+c)", ours, numpy, ours / numpy)]


def overhead_cases() -> dict:
    x, y, s = core.randn(4, 4), core.randn(4, 4), core.randn(4)
    return {"x + y (4x4)": lambda: x + y, "x * 2.0 (4x4)": lambda: x * 2.0, "x + row (broadcast)": lambda: x + s,
            "exp(x) (4x4)": lambda: core.exp(x), "x @ y (4x4)": lambda: x @ y, "relu(x) (4x4)": lambda: core.relu(x)}


def overhead_us() -> dict:
    """µs per call of each tiny op on this process's ``cpu`` backend (best of 3 timings)."""
    results = compare({case: {"core": fn} for case, fn in overhead_cases().items()}, number=20000, rounds=3)
    return {case: by["core"] for case, by in results.items()}


def _overhead_in_subprocess(backends: str) -> dict:
    env = {**os.environ, "CORE_BACKENDS": backends}
    out = subprocess.run([sys.executable, __file__, OVERHEAD_FLAG], env=env, capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    return json.loads(out.stdout.strip().splitlines()[-1])


def overhead_pairs(rounds: int = 5) -> tuple:
    """Median µs per tiny op for cpu_c and for the NumPy reference, each measured in its own process; the two
    alternate (A B, B A, ...) so that machine noise falls on both alike."""
    ours, ref = [], []
    for i in range(rounds):
        order = [("cpu=cpu_c", ours), ("cpu=numpy", ref)]
        for backends, samples in (order if i % 2 == 0 else order[::-1]):
            samples.append(_overhead_in_subprocess(backends))
    return _medians(ours), _medians(ref)


def _medians(samples: list) -> dict:
    return {case: statistics.median(s[case] for s in samples) for case in samples[0]}


def main() -> None:
    from core.plugins.manager import get_manager

    backend = get_manager().backend_for("cpu").name
    threads = ""
    if backend == "cpu_c":
        import core_cpu_c

        threads = f", {core_cpu_c.get_num_threads()} threads"
    print(f"cpu backend: {backend}{threads}; NumPy {np.__version__}")
    rows = gemm_rows() + bandwidth_rows()
    print("\n| benchmark | cpu_c | NumPy | ratio |\n|---|---|---|---|")
    for name, ours, theirs, ratio in rows:
        print(f"| {name} | {ours:.1f} | {theirs:.1f} | {ratio:.2f}× |")
    ours, ref = overhead_pairs() if backend == "cpu_c" else (overhead_us(), _overhead_in_subprocess("cpu=numpy"))
    print("\n| tiny op (µs per call, median of 5 alternating processes) | cpu_c | NumPy reference | "
          "cpu_c / reference |\n|---|---|---|---|")
    for case in ours:
        print(f"| {case} | {ours[case]:.2f} | {ref[case]:.2f} | {ours[case] / ref[case]:.2f}× |")
    print(f"\nmedian tiny-op ratio: {statistics.median(ours[c] / ref[c] for c in ours):.2f}×")


if __name__ == "__main__":
    if OVERHEAD_FLAG in sys.argv:
        print(json.dumps(overhead_us()))
    else:
        main()
