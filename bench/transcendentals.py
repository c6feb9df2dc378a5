"""core (cpu_c) vs NumPy on float32 transcendental ops and activation backwards: 2^20 elements, GB/s and ratio.

Run: ``cd bench && python transcendentals.py [--threads N] [--only exp,tanh] [--json FILE]``. Each op's core call
and its NumPy counterpart alternate (rounds of a few calls each): medians, and the best round of each (on a busy
shared machine the best is the closer estimate of the uncontended speed). GB/s counts every input read and the
output written once (4 bytes each per element). The NumPy side is ``np.<op>`` where NumPy has the ufunc; erf, erfc
and gelu use ``scipy.special.erf``/``erfc`` (NumPy has none), the other activations and backwards NumPy's formula in
float32 (the reference backend's own expression). Issue 22's target: core >= 1.0x NumPy for every transcendental
op. NumPy runs on one thread; core on cpu_c's OpenMP threads (``--threads``). Read ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import timeit

import numpy as np
from scipy import special

import core

N = 1 << 20
SQRT_HALF, SQRT_2_OVER_PI = math.sqrt(0.5), math.sqrt(2 / math.pi)


def _inputs(rng, domain: tuple, count: int) -> list:
    lo, hi = domain
    return [rng.uniform(lo, hi, N).astype(np.float32) for _ in range(count)]


def _np_gelu_backward(g, x, approximate: str):
    if approximate == "tanh":
        t = np.tanh((x + np.float32(0.044715) * x * x * x) * np.float32(SQRT_2_OVER_PI))
        slope = (1 + t) * np.float32(0.5) + x * np.float32(0.5) * (1 - t * t) * (
            np.float32(SQRT_2_OVER_PI) * (1 + np.float32(3 * 0.044715) * x * x))
        return g * slope
    density = np.exp(x * x * np.float32(-0.5)) * np.float32(1 / math.sqrt(2 * math.pi))
    return g * ((1 + special.erf(x * np.float32(SQRT_HALF))) * np.float32(0.5) + x * density)


def cases() -> dict:
    """{name: (core function, NumPy function, input domain, number of inputs)}."""
    from core.ops.derivatives import sigmoid_backward, tanh_backward
    from core.ops.elementwise import gelu_backward

    F = core.nn.functional
    unary = {op: (getattr(core, op), getattr(np, op), (-3, 3), 1)
             for op in ("exp", "exp2", "expm1", "sin", "cos", "tan", "atan", "sinh", "cosh", "tanh", "asinh")}
    unary |= {op: (getattr(core, op), getattr(np, op), (0.01, 10), 1) for op in ("log", "log2", "log10", "log1p")}
    unary |= {"asin": (core.asin, np.arcsin, (-0.99, 0.99), 1), "acos": (core.acos, np.arccos, (-0.99, 0.99), 1),
              "atanh": (core.atanh, np.arctanh, (-0.99, 0.99), 1), "acosh": (core.acosh, np.arccosh, (1, 10), 1),
              "erf": (core.erf, special.erf, (-3, 3), 1), "erfc": (core.erfc, special.erfc, (-3, 3), 1)}
    binary = {"atan2": (core.atan2, np.arctan2, (-3, 3), 2), "hypot": (core.hypot, np.hypot, (-3, 3), 2),
              "pow": (core.pow, np.power, (0.1, 3), 2), "logaddexp": (core.logaddexp, np.logaddexp, (-3, 3), 2)}
    activations = {
        "sigmoid": (core.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-6, 6), 1),
        "gelu": (F.gelu, lambda x: x * np.float32(0.5) * (1 + special.erf(x * np.float32(SQRT_HALF))), (-3, 3), 1),
        "gelu tanh": (lambda x: F.gelu(x, approximate="tanh"),
                      lambda x: x * np.float32(0.5) * (1 + np.tanh((x + np.float32(0.044715) * x * x * x)
                                                                   * np.float32(SQRT_2_OVER_PI))), (-3, 3), 1),
        "silu": (F.silu, lambda x: x / (1 + np.exp(-x)), (-6, 6), 1),
        "softplus": (F.softplus, lambda x: np.logaddexp(x, np.float32(0)), (-6, 6), 1),
        "tanh_backward": (tanh_backward, lambda g, y: g * (1 - y * y), (-1, 1), 2),
        "sigmoid_backward": (sigmoid_backward, lambda g, y: g * y * (1 - y), (0, 1), 2),
        "gelu_backward": (lambda g, x: gelu_backward(g, x, "none"), lambda g, x: _np_gelu_backward(g, x, "none"),
                          (-3, 3), 2),
        "gelu_backward tanh": (lambda g, x: gelu_backward(g, x, "tanh"),
                               lambda g, x: _np_gelu_backward(g, x, "tanh"), (-3, 3), 2),
    }
    return unary | binary | activations


def measure(only: set | None, rounds: int, number: int) -> dict:
    """{name: {"core": µs, "numpy": µs, "bytes": bytes moved}} for every case (or those in ``only``)."""
    rng = np.random.default_rng(0)
    timed, moved = {}, {}
    for name, (ours, theirs, domain, count) in cases().items():
        if only and name not in only:
            continue
        arrays = _inputs(rng, domain, count)
        tensors = [core.tensor(a) for a in arrays]
        np.testing.assert_allclose(ours(*tensors).numpy(), theirs(*arrays), rtol=1e-4, atol=1e-5, err_msg=name)
        timed[name] = {"core": lambda f=ours, t=tensors: f(*t), "numpy": lambda f=theirs, a=arrays: f(*a)}
        moved[name] = (count + 1) * 4 * N
    samples = {name: {side: [] for side in fns} for name, fns in timed.items()}
    for _ in range(rounds):  # the contenders alternate within each round, so noise hits both alike
        for name, fns in timed.items():
            for side, fn in fns.items():
                fn()  # warm
                samples[name][side].append(timeit.timeit(fn, number=number) / number * 1e6)
    return {name: {**{side: statistics.median(v) for side, v in by.items()},
                   **{f"{side} best": min(v) for side, v in by.items()}, "bytes": moved[name]}
            for name, by in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=0, help="cpu_c's OpenMP threads (0: as configured)")
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=10, help="calls per timed sample")
    parser.add_argument("--json", default="", help="also write the results to this file")
    args = parser.parse_args()
    from core.plugins.manager import get_manager

    backend = get_manager().backend_for("cpu").name
    threads = ""
    if backend == "cpu_c":
        import core_cpu_c

        if args.threads:
            core_cpu_c.set_num_threads(args.threads)
        threads = f", {core_cpu_c.get_num_threads()} threads"
    print(f"cpu backend: {backend}{threads}; NumPy {np.__version__}; float32, 2^20 elements")
    results = measure(set(args.only.split(",")) - {""} or None, args.rounds, args.number)
    print("\n| op | core GB/s | NumPy GB/s | core / NumPy | best-of: core | NumPy | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        ours, theirs = r["bytes"] / r["core"] / 1e3, r["bytes"] / r["numpy"] / 1e3
        best, their_best = r["bytes"] / r["core best"] / 1e3, r["bytes"] / r["numpy best"] / 1e3
        print(f"| {name} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f}× | {best:.2f} | {their_best:.2f} | "
              f"{best / their_best:.2f}× |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
