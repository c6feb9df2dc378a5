"""vmap overhead: ms per call of a small MLP's per-sample loss and per-sample gradients over a batch of 64, the
per-sample loop (``core.func._vmap_loop``, vmap before issue 19's vectorisation) against the vectorised vmap.

Run: ``python bench/vmap_per_sample.py``; prints the median of 15 timed calls of each.
"""

from __future__ import annotations

import statistics
import timeit

import core
import core.nn.functional as F
from core.func import _vmap_loop, functional_call, grad, vmap

BATCH = 64


def main() -> None:
    core.manual_seed(0)
    model = core.nn.Sequential(core.nn.Linear(784, 128), core.nn.ReLU(), core.nn.Linear(128, 10))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = core.randn(BATCH, 784), core.randint(0, 10, (BATCH,))

    def loss(p, sample, target):
        return F.cross_entropy(functional_call(model, p, (sample.unsqueeze(0),)), target.unsqueeze(0))

    for name, fn in (("per-sample loss", loss), ("per-sample grad", grad(loss))):
        medians = {}
        for label, transform in (("loop", _vmap_loop), ("vectorised", vmap)):
            mapped = transform(fn, in_dims=(None, 0, 0))
            mapped(params, x, y)  # warm up: kernels compiled, caches filled
            medians[label] = statistics.median(timeit.repeat(lambda f=mapped: f(params, x, y), number=1,
                                                                repeat=15))
        print(f"{name}: loop {medians['loop'] * 1e3:.2f} ms, vectorised {medians['vectorised'] * 1e3:.2f} ms "
              f"({medians['loop'] / medians['vectorised']:.1f}x)")


if __name__ == "__main__":
    main()
