"""Reference kernel of the sparse family: sparse @ dense through the array module's sparse library.

``sparse_mm`` (``core/ops/sparse.py``) multiplies a COO or CSR matrix, given as its components, by a dense matrix:
SciPy's sparse kernels (``scipy.sparse``) on NumPy, cuSPARSE through ``cupyx.scipy.sparse`` on CuPy. An array
module without a sparse library, and the dtypes those libraries do not multiply (integers, bool), decline the call
(``NotImplemented``): the op's composite (``index_select`` + ``index_add``) then runs it on the same device.
"""

from __future__ import annotations

import importlib

import numpy as np

from . import compute_np, operands

# array module -> (its sparse library, the index dtype that library takes)
_LIBRARIES = {"numpy": ("scipy.sparse", np.int64), "cupy": ("cupyx.scipy.sparse", np.int32)}


def sparse_library(xp) -> tuple:
    """(``scipy.sparse``-like module, index dtype) of array module ``xp``, or (None, None) when it has none."""
    name, index_dtype = _LIBRARIES.get(xp.__name__, (None, None))
    if name is None:
        return None, None
    try:
        return importlib.import_module(name), index_dtype
    except ImportError:
        return None, None


def kernels(ctx) -> dict:
    """sparse_mm over ``ctx`` (none when the array module has no sparse library)."""
    xp, wrap = ctx.xp, ctx.wrap
    operand = operands(ctx)
    library, index_dtype = sparse_library(xp)
    if library is None:
        return {}

    def sparse_mm(spec, rows, cols, values, dense, size, compressed, transpose):
        dtype = compute_np(spec.dtype)
        if dtype.kind not in "fc":
            return NotImplemented
        v, d = operand(values, dtype), operand(dense, dtype)
        r, c = operand(rows, index_dtype), operand(cols, index_dtype)
        shape = (int(size[0]), int(size[1]))
        if compressed:
            matrix = library.csr_matrix((v, c, r), shape=shape)
        else:
            matrix = library.coo_matrix((v, (r, c)), shape=shape)
        if transpose:
            matrix = matrix.T  # CSR -> CSC, COO -> COO with rows and columns swapped: no copy of the entries
        result = matrix @ xp.ascontiguousarray(d)
        return wrap(xp.ascontiguousarray(result).astype(spec.dtype.numpy, copy=False), spec)

    return {"sparse_mm": sparse_mm}
