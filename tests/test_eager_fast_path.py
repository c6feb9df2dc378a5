"""The thin eager path (issue 22): remembered meta results, cheap warning silencing, the implicit gradient.

Each fast path must give what the general path gives, and step aside whenever the call is unusual.
"""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.backends.kit.reference import ArrayContext, silencer
from core.dispatch import get_operator


def _rng():
    return np.random.default_rng(0)


def test_binary_spec_is_remembered_only_for_same_dtype_calls():
    add = get_operator("add")
    a = core.tensor(_rng().standard_normal(3).astype(np.float32))
    spec = add.meta(a, a)
    assert add.meta(a, a.clone()) is spec  # same shape, dtype and device: the remembered spec
    assert add.meta(a, 2.0) is spec  # a float scalar does not promote a float32 tensor
    promoted = add.meta(a, a.double())
    assert promoted is not spec and promoted.dtype is core.float64 and promoted.shape == (3,)
    i = core.tensor([1, 2, 3])
    assert add.meta(i, 2.5).dtype is core.float32  # a float scalar promotes an integer tensor
    assert add.meta(i, i).dtype is core.int64 and add.meta(i, i).shape == (3,)
    assert add.meta(a, a.reshape(3, 1)).shape == (3, 3)  # broadcasting goes through the general meta


def test_true_division_of_integers_follows_the_default_dtype_each_call():
    i = core.tensor([1, 2, 4])
    assert (i / i).dtype is core.float32
    previous = core.get_default_dtype()
    core.set_default_dtype(core.float64)
    try:
        out = i / i
        assert out.dtype is core.float64
        np.testing.assert_array_equal(out.numpy(), np.ones(3))
    finally:
        core.set_default_dtype(previous)
    assert (i / i).dtype is core.float32


def test_remembered_spec_never_skips_an_error():
    b = core.tensor([True, False])
    with pytest.raises(RuntimeError, match="Subtraction"):
        b - b
    with pytest.raises(RuntimeError, match="Subtraction"):
        b - b  # the failing call is never remembered
    f = core.ones(2)
    with pytest.raises(TypeError):
        core.bitwise_and(f, f)


def test_reduction_spec_depends_on_dims_keepdim_and_dtype():
    x = core.tensor(_rng().standard_normal((2, 3)).astype(np.float32))
    a = x.numpy()
    np.testing.assert_allclose(x.sum(0).numpy(), a.sum(0), rtol=1e-6)
    np.testing.assert_allclose(x.sum(1).numpy(), a.sum(1), rtol=1e-6)
    assert x.sum(1, keepdim=True).shape == (2, 1)
    assert x.sum(1).shape == (2,)
    assert x.sum(dtype=core.float64).dtype is core.float64
    assert x.sum().dtype is core.float32
    assert core.tensor([1, 2]).sum().dtype is core.int64
    with pytest.raises(TypeError, match="dtype"):
        x.sum(dtype="float64")
    with pytest.raises(IndexError):
        core.empty(0, 2).amax(0)
    with pytest.raises(IndexError):
        core.empty(0, 2).amax(0)  # still raising the second time


def test_kernels_silence_float_warnings_and_restore_the_callers_state():
    big = core.tensor(np.array([3e38], np.float32))
    with np.errstate(all="raise"):
        out = big * big  # overflow: inf, as PyTorch gives, and no FloatingPointError from NumPy's state
        assert np.isinf(out.numpy()[0])
        with pytest.raises(FloatingPointError):
            np.float32(3e38) * np.float32(3e38)  # the caller's state is back after the op
    assert np.geterr()["over"] == "warn"


def test_silencer_from_errstate_for_contexts_without_mute():
    ctx = ArrayContext(xp=np, array=None, wrap=None, special=None, errstate=np.errstate, reduce_sum=None,
                       reduce_prod=None)
    mute, unmute = silencer(ctx)
    with np.errstate(all="raise"):
        token = mute()
        assert np.geterr()["over"] == "ignore"
        unmute(token)
        assert np.geterr()["over"] == "raise"


def test_implicit_gradient_of_a_scalar_output():
    rng = _rng()
    xs, ys = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    x = core.tensor(xs, requires_grad=True)
    y = core.tensor(ys, requires_grad=True)
    for _ in range(2):  # gradients accumulate
        (x * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * ys, rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), 2 * xs, rtol=1e-6)
    d = core.tensor(np.float64(1.5), requires_grad=True)
    (d * d).backward()
    assert d.grad.dtype is core.float64 and d.grad.item() == 3.0
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (x * y).backward()
