"""Autograd overhead: µs per forward+backward of ``(x*y).sum()`` on 4-element tensors and of a 10-layer chain of
elementwise ops, core vs PyTorch.

Run: ``python bench/autograd_overhead.py``. Target (issue 3): core ≤ 3× PyTorch. PyTorch is optional.
"""

from __future__ import annotations

import core
from _harness import compare, print_table

LAYERS = 10


def product_step(x, y):
    """One training-like step on tiny tensors: the cost is all graph recording and engine overhead."""

    def step():
        x.grad = y.grad = None
        (x * y).sum().backward()

    return step


def chain_step(x):
    """Ten layers of ``tanh(x * 1.01 + 0.1)``: three recorded ops per layer, then sum and backward."""

    def step():
        x.grad = None
        h = x
        for _ in range(LAYERS):
            h = (h * 1.01 + 0.1).tanh()
        h.sum().backward()

    return step


def cases_for(lib) -> dict:
    x = lib.ones(4, requires_grad=True)
    y = lib.full((4,), 2.0, requires_grad=True)
    z = lib.linspace(-1.0, 1.0, 4).requires_grad_()
    return {"(x*y).sum().backward(), 4 elem": product_step(x, y),
            f"{LAYERS}-layer tanh(x*1.01+0.1) chain + backward, 4 elem": chain_step(z)}


def main() -> None:
    contenders = {"core": cases_for(core)}
    try:
        import torch

        torch.set_num_threads(1)
        contenders["torch"] = cases_for(torch)
    except ImportError:
        print("(PyTorch not installed: core timings only)")
    cases = {case: {name: fns[case] for name, fns in contenders.items()} for case in contenders["core"]}
    results = compare(cases, number=2000, rounds=5)
    print_table(results, "Autograd overhead, median µs per forward+backward (lower is better)")


if __name__ == "__main__":
    main()
