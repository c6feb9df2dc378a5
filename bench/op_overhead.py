"""Per-op overhead: µs per ``x + y`` on 1-element tensors and per ``x.sum()``, core vs NumPy vs PyTorch.

Run: ``python bench/op_overhead.py``. Target (issue 2): core ≤ 3× PyTorch. PyTorch is optional.
"""

from __future__ import annotations

import numpy as np

import core
from _harness import compare, print_table


def main() -> None:
    x, y = core.ones(1), core.ones(1)
    big = core.ones(1000)
    a, b = np.ones(1, np.float32), np.ones(1, np.float32)
    nbig = np.ones(1000, np.float32)
    cases = {
        "x + y (1 elem)": {"core": lambda: x + y, "numpy": lambda: a + b},
        "x.sum() (1 elem)": {"core": lambda: x.sum(), "numpy": lambda: a.sum()},
        "x * 2.0 (1 elem)": {"core": lambda: x * 2.0, "numpy": lambda: a * 2.0},
        "x.view(1, 1) (view op)": {"core": lambda: x.view(1, 1), "numpy": lambda: a.reshape(1, 1)},
        "x.exp() (1000 elem)": {"core": lambda: big.exp(), "numpy": lambda: np.exp(nbig)},
    }
    try:
        import torch

        torch.set_num_threads(1)
        tx, ty, tbig = torch.ones(1), torch.ones(1), torch.ones(1000)
        torch_fns = [lambda: tx + ty, lambda: tx.sum(), lambda: tx * 2.0, lambda: tx.view(1, 1), lambda: tbig.exp()]
        for fns, fn in zip(cases.values(), torch_fns):
            fns["torch"] = fn
    except ImportError:
        print("(PyTorch not installed: comparing with NumPy only)")
    results = compare(cases)
    print_table(results, "Op overhead, median µs per call (lower is better)")


if __name__ == "__main__":
    main()
