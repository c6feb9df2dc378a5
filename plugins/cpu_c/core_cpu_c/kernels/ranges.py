"""Range fills (core.ops.ranges, csrc/movement.c): ``arange_fill_`` and ``linspace_fill_`` (``logspace_fill_`` stays on
NumPy: its ``np.power`` may use SIMD code whose rounding differs from libm's ``pow``)."""

from __future__ import annotations

from ..layout import check_bounds
from ..movement import C, TYPE_CODES, Movement, writable

__all__ = ["kernels", "OPS"]

OPS = ("arange_fill_", "linspace_fill_")  # sized by the tensor filled
_INT64_MIN, _INT64_END = -(2**63), 2**63


class _Ranges(Movement):
    def _range_target(self, op: str, t):
        """(type code, element stride) of a 1-D tensor C can fill, else None."""
        code = TYPE_CODES.get(t.dtype.name)
        if code is None or len(t._shape) != 1 or not writable(t):
            return None
        check_bounds(op, t)
        return code, t._stride[0]

    def arange_fill_(self, base):
        def kernel(spec, self_, start, step):
            target = self._range_target("arange_fill_", self_)
            n = self_._shape[0] if self_._shape else 0
            if target is not None and type(start) in (int, bool, float) and type(step) in (int, bool, float):
                if n == 0:
                    return self_
                code, stride = target
                if isinstance(start, int) and isinstance(step, int):  # the reference computes in int64
                    if _INT64_MIN <= start < _INT64_END and _INT64_MIN <= step < _INT64_END:
                        if C["arange_int"](code, n, start, step, self.ptr(self_), stride) == 0:
                            return self_
                else:  # float64: start + step * index
                    try:
                        first, delta = float(start), float(step)
                    except OverflowError:
                        return base(spec, self_, start, step)
                    if C["arange_double"](code, n, first, delta, self.ptr(self_), stride) == 0:
                        return self_
            return base(spec, self_, start, step)

        return kernel

    def linspace_fill_(self, base):
        def kernel(spec, self_, start, end):
            target = self._range_target("linspace_fill_", self_)
            if target is not None and type(start) in (int, bool, float) and type(end) in (int, bool, float):
                try:
                    first, last = float(start), float(end)  # np.float64(x): correctly rounded, as float()
                except OverflowError:
                    return base(spec, self_, start, end)
                n = self_._shape[0]
                if n == 0 or C["linspace"](target[0], n, first, last, self.ptr(self_), target[1]) == 0:
                    return self_
            return base(spec, self_, start, end)

        return kernel


def kernels(ctx) -> dict:
    """{op: Kernel}, each falling back to the NumPy kernel it replaces."""
    return _Ranges(ctx).kernels(OPS)
