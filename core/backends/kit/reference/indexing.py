"""Reference kernels of the reading half of the indexing family: advanced indexing, gather and nonzero.

The front-end has validated every index, so these kernels index without checks. The writes (index_put_,
scatter_) scatter with ``ufunc.at``, which not every array module has: they are the backend's own.
"""

from __future__ import annotations


def at_least_1d(a):
    """``a``, or a 1-element view of a 0-d array."""
    return a.reshape(1) if a.ndim == 0 else a


def along(xp, index, dim: int) -> tuple:
    """The full array index that addresses, for every position p of ``index``, p with p[dim] = index[p]."""
    grids = list(xp.ogrid[tuple(slice(0, n) for n in index.shape)]) if index.ndim else []
    grids[dim] = index
    return tuple(grids)


def kernels(ctx) -> dict:
    """index, gather and nonzero over ``ctx``."""
    xp, array, wrap = ctx.xp, ctx.array, ctx.wrap

    def index(spec, input, indices):
        key = tuple(slice(None) if i is None else array(i) for i in indices)
        return wrap(array(input)[key], spec)  # an integer array index always makes a copy

    def gather(spec, input, dim, index):
        a, idx = at_least_1d(array(input)), at_least_1d(array(index))
        return wrap(a[along(xp, idx, dim % a.ndim)].reshape(spec.shape), spec)

    def nonzero(spec, input):
        return wrap(xp.argwhere(array(input)), spec)

    return {"index": index, "gather": gather, "nonzero": nonzero}
