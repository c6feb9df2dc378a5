"""Range creation: arange, range, linspace, logspace, eye, tril_indices, triu_indices.

The front ends work out the size and dtype on the host, allocate the output on
its device, and call one in-place fill primitive per sequence (``arange_fill_``,
``linspace_fill_``, ``logspace_fill_``), so a backend fills the values where
they live. ``eye`` is zeros plus a fill of the diagonal view; the triangle
indices are computed on the host.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import dtypes as dt
from ..dispatch import TensorSpec, define
from ..errors import op_error
from ..tensor import Tensor
from ._util import check_int_arg, finish_out
from .creation import _check_dtype, _finish, allocate, fill_, resolve_device, tensor, zeros
from .view import diagonal

__all__ = ["arange", "eye", "linspace", "logspace", "range", "tril_indices", "triu_indices"]
METHODS: dict = {}

_FLOAT = 2


# -- the fill primitives -------------------------------------------------------------------------------

def _fill_meta(op: str, *, complex_ok: bool):
    def meta(self, *values):
        if not isinstance(self, Tensor) or self.ndim != 1:
            raise op_error(RuntimeError, op, "expected a 1-D tensor to fill", self)
        if self.dtype is dt.bool or (self.dtype.category > _FLOAT and not complex_ok):
            raise NotImplementedError(f"{op}(): \"{op}\" not implemented for '{dt.legacy_name(self.dtype)}'")
        return TensorSpec(self._shape, self.dtype, self.device)

    return meta


arange_fill_ = define(
    "arange_fill_", meta=_fill_meta("arange", complex_ok=False), primitive=True, inplace=True,
    doc="self[i] = start + i * step for the 1-D self (any strides); computed in int64 when start and step are "
        "Python ints (integral self), else in float64, then cast to self's dtype (integers wrap).")
linspace_fill_ = define(
    "linspace_fill_", meta=_fill_meta("linspace", complex_ok=True), primitive=True, inplace=True,
    doc="self[i] = n evenly spaced values from start to end (n = len(self)), computed in float64 (complex128 "
        "for complex self) as start + i * step for i < n // 2 and end - (n - 1 - i) * step after, with "
        "step = (end - start) / (n - 1); then cast to self's dtype (truncating for integers).")
logspace_fill_ = define(
    "logspace_fill_", meta=_fill_meta("logspace", complex_ok=True), primitive=True, inplace=True,
    doc="self[i] = base ** v[i] where v is linspace_fill_'s float64 sequence from start to end; then cast.")


def _filled(op, t: Tensor, *values) -> Tensor:
    op(t, *values)
    t._storage.version += 1
    return t


# -- arange, range -------------------------------------------------------------------------------------

def _scalar(op: str, name: str, value):
    """A Python number from a number, a NumPy scalar or a one-element tensor."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise op_error(RuntimeError, op, f"argument '{name}' must be a number or a one-element tensor", value)
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    if not isinstance(value, numbers.Number) or isinstance(value, complex):
        raise TypeError(f"{op}(): argument '{name}' must be a real number, not {type(value).__name__}")
    return value


def _is_integral(value) -> bool:
    return isinstance(value, numbers.Integral)


def _check_bounds(op: str, start, end, step) -> None:
    """PyTorch's checks: nonzero step, finite bounds, step sign consistent with end - start."""
    if step == 0:
        raise op_error(RuntimeError, op, "step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise op_error(RuntimeError, op, f"unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise op_error(RuntimeError, op, "upper bound and lower bound inconsistent with step sign")


def _accumulated(d: dt.dtype, *values):
    """The values in PyTorch's accumulate type: int64 (truncated) for integral dtypes, float64 otherwise."""
    if d.category < _FLOAT:
        if not all(math.isfinite(v) for v in values):
            return values  # left to _check_bounds, which names them
        return tuple(int(v) for v in values)
    return tuple(float(v) for v in values)


def _arange_size(start, end, step, d: dt.dtype) -> int:
    xstart, xend, xstep = _accumulated(d, start, end, step)
    _check_bounds("arange", xstart, xend, xstep)
    if d is dt.int64:
        # exact integer arithmetic: int64 ranges can exceed float64's precision
        sign = 1 if xstep > 0 else -1
        size = (xend - xstart + xstep - sign) // xstep
    else:
        size = math.ceil((float(end) - float(start)) / float(step))
    if size < 0 or size > 2 ** 63 - 1:
        raise op_error(RuntimeError, "arange", "invalid size, possible overflow?")
    return int(size)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 when all are ints (``torch.arange``)."""
    if end is None:
        start, end = 0, start
    start, end, step = (_scalar("arange", n, v) for n, v in (("start", start), ("end", end), ("step", step)))
    if dtype is None:
        dtype = dt.int64 if all(_is_integral(v) for v in (start, end, step)) else dt.get_default_dtype()
    d = _check_dtype("arange", dtype)
    size = _arange_size(start, end, step, d)
    xstart, _, xstep = _accumulated(d, start, end, step)
    result = _filled(arange_fill_, allocate((size,), d, resolve_device(device), "arange"), xstart, xstep)
    return finish_out("arange", _finish(result, requires_grad), out)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` INCLUSIVE, default dtype (deprecated ``torch.range``)."""
    warnings.warn("core.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use core.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    start, end, step = (_scalar("range", n, v) for n, v in (("start", start), ("end", end), ("step", step)))
    d = _check_dtype("range", dtype)
    xstart, xend, xstep = _accumulated(d, start, end, step)
    _check_bounds("range", xstart, xend, xstep)
    size = int((xend - xstart) / xstep) + 1
    result = _filled(arange_fill_, allocate((size,), d, resolve_device(device), "range"), xstart, xstep)
    return finish_out("range", _finish(result, requires_grad), out)


# -- linspace, logspace --------------------------------------------------------------------------------

def _space_args(op: str, start, end, steps, dtype) -> tuple:
    for value in (start, end):
        if isinstance(value, Tensor) and value.ndim != 0:
            raise op_error(RuntimeError, op, f"{op} only supports 0-dimensional start and end tensors, but got "
                           f"start with {getattr(start, 'ndim', 0)} dimension(s) and end with "
                           f"{getattr(end, 'ndim', 0)} dimension(s).")
    start, end = (v.item() if isinstance(v, (Tensor, np.generic)) else v for v in (start, end))
    for name, value in (("start", start), ("end", end)):
        if not isinstance(value, numbers.Number):
            raise TypeError(f"{op}(): argument '{name}' must be a number, not {type(value).__name__}")
    steps = check_int_arg(op, "steps", steps)
    if steps < 0:
        raise op_error(RuntimeError, op, "number of steps must be non-negative")
    if dtype is None:
        is_complex = isinstance(start, complex) or isinstance(end, complex)
        dtype = dt.scalar_dtype(1j) if is_complex else dt.get_default_dtype()
    d = _check_dtype(op, dtype)
    if d.category < _FLOAT and not isinstance(start, complex) and not isinstance(end, complex):
        start, end = _accumulated(d, start, end)  # PyTorch converts the ends to the integral dtype first
    return start, end, steps, d


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (``torch.linspace``)."""
    start, end, steps, d = _space_args("linspace", start, end, steps, dtype)
    result = _filled(linspace_fill_, allocate((steps,), d, resolve_device(device), "linspace"), start, end)
    return finish_out("linspace", _finish(result, requires_grad), out)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """``base ** linspace(start, end, steps)`` (``torch.logspace``)."""
    start, end, steps, d = _space_args("logspace", start, end, steps, dtype)
    base = _scalar("logspace", "base", base)
    result = _filled(logspace_fill_, allocate((steps,), d, resolve_device(device), "logspace"), start, end, base)
    return finish_out("logspace", _finish(result, requires_grad), out)


# -- eye, triangle indices -----------------------------------------------------------------------------

def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """An ``n x m`` matrix with ones on the diagonal (``torch.eye``)."""
    n = check_int_arg("eye", "n", n)
    m = n if m is None else check_int_arg("eye", "m", m)
    for name, value in (("n", n), ("m", m)):
        if value < 0:
            raise op_error(RuntimeError, "eye", f"{name} must be greater or equal to 0, got {value}")
    result = zeros((n, m), dtype=dtype, device=device)
    fill_(diagonal(result), 1)
    return finish_out("eye", _finish(result, requires_grad), out)


def _triangle_indices(op: str, numpy_fn, row, col, offset, dtype, device) -> Tensor:
    row, col, offset = (check_int_arg(op, n, v) for n, v in (("row", row), ("col", col), ("offset", offset)))
    for name, value in (("row", row), ("col", col)):
        if value < 0:
            raise op_error(RuntimeError, op, f"{name} must be non-negative, got {value}")
    d = dt.int64 if dtype is None else _check_dtype(op, dtype)
    if d.category != 1:
        raise NotImplementedError(f"{op}(): \"{op}\" not implemented for '{dt.legacy_name(d)}'")
    # row-major order, as PyTorch; small enough to compute on the host and copy once
    rows, cols = numpy_fn(row, offset, col)
    return tensor(np.stack([rows, cols]).reshape(2, -1), dtype=d, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """Coordinates (2 x N) of the lower triangle of a ``row x col`` matrix (``torch.tril_indices``)."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """Coordinates (2 x N) of the upper triangle of a ``row x col`` matrix (``torch.triu_indices``)."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)
