"""Tensor methods with no torch-level function: in-place aliases, in-place view ops, element-wise Python callables,
the legacy constructors and resizes, and small queries (``Tensor.sum_to_size``, ``Tensor.dim_order``, ...).

All are composites of existing ops (or geometry changes on ``self``), so they run on every device and, where PyTorch
differentiates them, get autograd from the ops they are built of.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..autograd.kernel import _check_inplace
from ..dispatch.keys import is_grad_enabled
from ..tensor import Tensor
from .elementwise import METHODS as _ELEMENTWISE, _inplace, float_power
from .reduction import cumprod, cumsum
from .view import squeeze, swapaxes, swapdims, t, transpose, unsqueeze

__all__: list = []
METHODS: dict = {}


def _method(fn):
    METHODS[fn.__name__] = fn
    return fn


# -- in-place aliases --------------------------------------------------------------------------------

for _alias, _target in (("absolute_", "abs_"), ("arctan2_", "atan2_"), ("greater_", "gt_"),
                        ("greater_equal_", "ge_"), ("less_", "lt_"), ("less_equal_", "le_"),
                        ("not_equal_", "ne_")):
    METHODS[_alias] = _ELEMENTWISE[_target]

_cumsum_ = _inplace("cumsum", cumsum)
_cumprod_ = _inplace("cumprod", cumprod)


@_method
def cumsum_(self, dim, dtype=None):
    """In-place running sum along ``dim`` (``torch.Tensor.cumsum_``)."""
    return _cumsum_(self, dim, dtype=dtype)


@_method
def cumprod_(self, dim, dtype=None):
    """In-place running product along ``dim`` (``torch.Tensor.cumprod_``)."""
    return _cumprod_(self, dim, dtype=dtype)


_float_power_ = _inplace("float_power", float_power)


@_method
def float_power_(self, exponent):
    """In-place ``float_power``; self must already be double (or complex double) (``torch.Tensor.float_power_``)."""
    wanted = dt.complex128 if self.is_complex() or (isinstance(exponent, Tensor) and exponent.is_complex()) \
        or isinstance(exponent, complex) else dt.float64
    if self.dtype is not wanted:
        raise RuntimeError(f"the base given to float_power_ has dtype {dt.legacy_name(self.dtype)} but the "
                           f"operation's result requires dtype {dt.legacy_name(wanted)}")
    return _float_power_(self, exponent)


# -- in-place view ops: self takes the view's shape and strides ---------------------------------------

def _inplace_view(name: str, view_fn):
    def method(self, *args, **kwargs):
        recording = is_grad_enabled()
        if recording:
            _check_inplace(self)
        # The view is taken of a snapshot of self: its backward node must keep self's old geometry.
        before = self._alias(self._shape, self._stride, self._offset)
        before._base, before.requires_grad, before.grad_fn = self._base, self.requires_grad, self.grad_fn
        if "_output_nr" in self.__dict__:
            before.__dict__["_output_nr"] = self.__dict__["_output_nr"]
        view = view_fn(before, *args, **kwargs)
        self._shape, self._stride, self._offset, self._np = view._shape, view._stride, view._offset, None
        if recording and view.grad_fn is not None:
            self.grad_fn = view.grad_fn
            self.__dict__["_output_nr"] = view.__dict__.get("_output_nr", 0)
        self._storage.version += 1
        return self

    method.__name__ = name
    method.__doc__ = (f"In-place ``{name[:-1]}``: self's shape and strides change, its data stays "
                      f"(``torch.Tensor.{name}``).")
    return method


for _name, _view in (("t_", t), ("transpose_", transpose), ("swapaxes_", swapaxes), ("swapdims_", swapdims),
                     ("squeeze_", squeeze), ("unsqueeze_", unsqueeze)):
    METHODS[_name] = _inplace_view(_name, _view)
