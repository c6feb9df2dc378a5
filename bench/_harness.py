"""Timing helpers shared by the benchmarks: alternate contenders, report medians and ratios."""

from __future__ import annotations

import statistics
import timeit


def time_synced_us(fn, sync, seconds: float) -> float:
    """Median µs per call of ``fn`` over 3 windows; queued device work is waited for (``sync``) in each."""
    fn()
    sync()
    rates = []
    for _ in range(3):
        count, start = 0, timeit.default_timer()
        while timeit.default_timer() - start < seconds / 3:
            fn()
            count += 1
        sync()
        rates.append((timeit.default_timer() - start) / count * 1e6)
    return sorted(rates)[1]


def compare(cases: dict, number: int = 20000, rounds: int = 5) -> dict:
    """``{case: {contender: median µs}}``; contenders alternate within each round so noise hits all alike."""
    samples = {case: {name: [] for name in fns} for case, fns in cases.items()}
    for _ in range(rounds):
        for case, fns in cases.items():
            for name, fn in fns.items():
                fn()  # warm
                samples[case][name].append(timeit.timeit(fn, number=number) / number * 1e6)
    return {case: {name: statistics.median(v) for name, v in by.items()} for case, by in samples.items()}


def print_table(results: dict, title: str, subject: str = "core") -> None:
    """A Markdown table of µs per call and ``subject``'s ratio to every other contender."""
    names = list(next(iter(results.values())))
    others = [n for n in names if n != subject]
    print(f"\n{title}\n")
    print("| case | " + " | ".join(f"{n} µs" for n in names) + " | " +
          " | ".join(f"{subject} / {n}" for n in others) + " |")
    print("|" + "---|" * (1 + len(names) + len(others)))
    for case, by in results.items():
        ratios = " | ".join(f"{by[subject] / by[n]:.2f}×" for n in others)
        print(f"| {case} | " + " | ".join(f"{by[n]:.2f}" for n in names) + f" | {ratios} |")
