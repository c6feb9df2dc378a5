"""cuda kernels of the reading half of the indexing family: advanced indexing and gather.

The writes (index_put_, scatter_) and nonzero run on the CPU fallback for now.
"""

from __future__ import annotations


def kernels(rt) -> dict:
    xp = rt.xp

    def index(spec, input, indices):
        key = tuple(slice(None) if i is None else rt.array(i) for i in indices)
        return rt.wrap(rt.array(input)[key], spec)  # an integer array index always makes a copy

    def gather(spec, input, dim, index):
        a, idx = rt.array(input), rt.array(index)
        a, idx = (a.reshape(1) if a.ndim == 0 else a), (idx.reshape(1) if idx.ndim == 0 else idx)
        dim %= a.ndim
        grids = list(xp.ogrid[tuple(slice(0, n) for n in idx.shape)])
        grids[dim] = idx
        return rt.wrap(a[tuple(grids)].reshape(spec.shape), spec)

    return {"index": index, "gather": gather}
