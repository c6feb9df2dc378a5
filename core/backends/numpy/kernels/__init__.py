"""The NumPy reference backend's kernels: the kit's reference families over NumPy, and NumPy's own.

Each family exposes ``kernels(ctx) -> dict`` (op name -> kernel; a kernel of an op with a meta function takes
the meta's spec first, then the op's arguments). The shared families live in ``core.backends.kit.reference``
(cuda runs the same code over CuPy); index_put_/scatter_ (``ufunc.at``), random (NumPy's ``Generator``),
sorting and ranges are written here over NumPy alone.
"""

from __future__ import annotations

from ...kit import collect
from ...kit.reference import (creation, decompositions, derivatives, elementwise, linalg, reduction, shape, sparse,
                              spectral)
from . import indexing, random, ranges, sorting

FAMILIES = (elementwise, derivatives, reduction, shape, indexing, linalg, decompositions, creation, random, sorting,
            ranges, spectral, sparse)


def all_kernels(ctx=None) -> dict:
    """op name -> kernel, over ``ctx`` (default: the NumPy runtime's :data:`~core.backends.numpy.runtime.CONTEXT`)."""
    from ..runtime import CONTEXT

    return collect(FAMILIES, CONTEXT if ctx is None else ctx)
