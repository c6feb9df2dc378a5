"""Tensor methods with no torch-level function, against NumPy on every device: in-place aliases, in-place view ops
(and their autograd rules), element-wise callables, legacy constructors and resizes, storage and autograd queries,
device predicates; PyTorch's errors (type and message)."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.autograd import gradcheck
from core.testing import assert_close


def _rng():
    return np.random.default_rng(0)


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


# -- in-place aliases --------------------------------------------------------------------------------

@pytest.mark.parametrize("alias, reference", [
    ("greater_", np.greater), ("greater_equal_", np.greater_equal), ("less_", np.less),
    ("less_equal_", np.less_equal), ("not_equal_", np.not_equal), ("arctan2_", np.arctan2)])
def test_binary_inplace_aliases(device, alias, reference):
    a, b = _rng().integers(-3, 3, (2, 4)).astype(np.float32), _rng().integers(-3, 3, (4,)).astype(np.float32)
    x = _t(a, device)
    version = x._version
    assert getattr(x, alias)(_t(b, device)) is x
    assert x.dtype is core.float32 and x._version > version
    assert_close(_np(x), reference(a, b).astype(np.float32))


def test_absolute_(device):
    a = _rng().standard_normal((3, 2)).astype(np.float32)
    x = _t(a, device)
    assert x.absolute_() is x
    assert_close(_np(x), np.abs(a))


@pytest.mark.parametrize("name, reference", [("cumsum_", np.cumsum), ("cumprod_", np.cumprod)])
def test_scan_inplace(device, name, reference):
    a = _rng().standard_normal((3, 4)).astype(np.float32)
    for dim in (0, 1, -1):
        x = _t(a, device)
        assert getattr(x, name)(dim) is x
        assert_close(_np(x), reference(a, axis=dim), rtol=1e-5, atol=1e-5)
    ints = _t(np.array([1, 2, 3], dtype=np.int32), device)
    getattr(ints, name)(0, dtype=core.int64)
    assert ints.dtype is core.int32 and ints.tolist() == reference([1, 2, 3]).tolist()


def test_scan_inplace_grad():
    a = core.tensor(_rng().standard_normal((3, 4)), dtype=core.float64, requires_grad=True)
    assert gradcheck(lambda x: (x * 1).cumsum_(1), (a,))
    assert gradcheck(lambda x: (x * 1).cumprod_(0), (a,))


def test_float_power_(device):
    a = np.abs(_rng().standard_normal(5)) + 0.5
    x = _t(a, device)
    assert x.dtype is core.float64 and x.float_power_(1.5) is x
    assert_close(_np(x), a ** 1.5)
    x.float_power_(_t(np.array([2.0]), device))
    assert_close(_np(x), a ** 3)
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float but the operation's "
                                           "result requires dtype Double"):
        _t(a.astype(np.float32), device).float_power_(2)


# -- in-place view ops -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, args, reference", [
    ("t_", (), lambda a: a.T), ("transpose_", (0, 2), lambda a: np.swapaxes(a, 0, 2)),
    ("swapaxes_", (1, -1), lambda a: np.swapaxes(a, 1, -1)), ("swapdims_", (0, 1), lambda a: np.swapaxes(a, 0, 1)),
    ("squeeze_", (), np.squeeze), ("squeeze_", (1,), lambda a: np.squeeze(a, 1)),
    ("unsqueeze_", (-1,), lambda a: a[..., None])])
def test_inplace_view_ops(device, name, args, reference):
    shape = (3, 4) if name == "t_" else (2, 1, 3)
    a = _rng().standard_normal(shape).astype(np.float32)
    x = _t(a, device)
    storage, version = x.untyped_storage(), x._version
    out_of_place = getattr(x, name[:-1])(*args)
    assert getattr(x, name)(*args) is x
    expected = reference(a)
    assert x.shape == expected.shape
    assert x.stride() == out_of_place.stride() and x.storage_offset() == out_of_place.storage_offset()
    assert x.untyped_storage() is storage and x._version == version + 1
    assert_close(_np(x), expected)


def test_inplace_view_ops_errors():
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        core.ones(1, 2, 3).t_()
    with pytest.raises(IndexError, match="Dimension out of range"):
        core.ones(2, 3).transpose_(0, 2)
    leaf = core.ones(2, 3, requires_grad=True)
    for call in (lambda: leaf.t_(), lambda: leaf.unsqueeze_(0), lambda: leaf[0].squeeze_()):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in an in-place"):
            call()
    assert leaf.shape == (2, 3)
    with core.no_grad():  # PyTorch allows it outside recording
        leaf.t_()
    assert leaf.shape == (3, 2) and leaf.is_leaf


def test_inplace_view_ops_grad():
    a = core.tensor(_rng().standard_normal((2, 3)), dtype=core.float64, requires_grad=True)

    def f(x):
        y = x * 2
        y.t_()
        y.unsqueeze_(0)
        y.swapdims_(0, 2)
        return y.squeeze_(-1) * core.arange(6, dtype=core.float64).reshape(2, 3)

    assert gradcheck(f, (a,))
    y = a * 2
    assert y.t_().grad_fn is not None and y.shape == (3, 2)
    w = a * 1
    z = w * w  # saves w: changing w in place afterwards must fail the backward
    w.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
