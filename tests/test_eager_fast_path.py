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


def _arithmetic_cases():
    """(op name, a, b) calls: the shortcut's common ones and the unusual ones it must hand to the full path."""
    rng = _rng()

    def t(shape, dtype):
        data = rng.standard_normal(shape) * 4
        return core.tensor(data.astype(dtype) if np.dtype(dtype).kind == "f" else data.round().astype(dtype))

    square = t((3, 4), np.float32)
    cases = []
    for name in ("add", "sub", "mul", "div"):
        for dtype in (np.float32, np.float64, np.int32, np.int64, np.float16, np.bool_):
            a, b = t((3, 4), dtype), t((3, 4), dtype)
            if dtype is np.bool_ and name == "sub":
                continue  # an error, tested elsewhere
            cases += [(name, a, b), (name, a, b.t().contiguous().t())]  # same shape, b not contiguous
        cases += [(name, square, 2.5), (name, 3, square), (name, square, True), (name, square, 1j),
                  (name, t((3, 4), np.int64), 2), (name, t((3, 4), np.int64), 2.5),
                  (name, square, t((4,), np.float32)), (name, square, t((3, 4), np.float64)),
                  (name, square.t(), square.t()), (name, square[:, ::2], square[:, 1::2]),
                  (name, t((), np.float32), t((), np.float32)), (name, t((0, 4), np.float32), t((0, 4), np.float32)),
                  (name, square, core.tensor(2.0)),
                  # views without an array of their own yet (a backward's expanded gradient)
                  (name, core.tensor(2.5).expand(3, 4), square), (name, square, square.view(3, 4)),
                  (name, square.view(3, 4), square.view(3, 4)[0].expand(3, 4))]
    return cases


@pytest.fixture
def numpy_small_tier():
    """The NumPy kernels serve small arithmetic calls, as by default (CI runs cpu_c's C kernels at every size)."""
    from core.dispatch.keys import CPU

    ops = [get_operator(name) for name in ("add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_", "fill_")]
    saved = [(op, op.tiers[CPU.bit][0]) for op in ops if CPU.bit in op.tiers]
    for op, _ in saved:
        op.set_min_numel(CPU, 4096)
    yield
    for op, min_numel in saved:
        op.set_min_numel(CPU, min_numel)


@pytest.mark.parametrize("case", range(len(_arithmetic_cases())))
def test_arithmetic_shortcut_gives_what_the_meta_path_gives(case, numpy_small_tier):
    from core.dispatch.operator import set_debug

    name, a, b = _arithmetic_cases()[case]
    fn = getattr(core, name)
    out = fn(a, b)
    set_debug(True)  # every output checked against the meta function's spec: no shortcut
    try:
        want = fn(a, b)
    finally:
        set_debug(False)
    assert (out.dtype, out.shape, out.stride()) == (want.dtype, want.shape, want.stride())
    np.testing.assert_array_equal(out.numpy(), want.numpy())


def _outcome(fn, *args):
    """What ``fn(*args)`` returns, or the type and message of what it raises."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - compared between the two paths
        return type(e), str(e)


@pytest.mark.parametrize("case", range(len(_arithmetic_cases())))
def test_in_place_shortcut_writes_what_the_meta_path_writes(case, numpy_small_tier):
    from core.dispatch.operator import set_debug

    name, a, b = _arithmetic_cases()[case]
    if not isinstance(a, core.Tensor) or 0 in a.stride():
        return  # a number or a broadcast view: no in-place form
    mine, want = a.clone(), a.clone()
    out = _outcome(getattr(mine, name + "_"), b)
    set_debug(True)
    try:
        expected = _outcome(getattr(want, name + "_"), b)
    finally:
        set_debug(False)
    if isinstance(expected, tuple):
        assert out == expected
        return
    assert out is mine and expected is want
    assert (mine.dtype, mine.shape, mine.stride()) == (want.dtype, want.shape, want.stride())
    np.testing.assert_array_equal(mine.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", [core.float32, core.float64, core.float16, core.int32, core.bool])
def test_fill_shortcut_writes_what_the_meta_path_writes(dtype, numpy_small_tier):
    from core.dispatch.operator import set_debug

    values = [1, 0, -3, 0.1, 1e-46, 3.4e38, 1e300, -0.0, float("inf"), 2 ** 24 + 1, 2 ** 60 + 1, True, 2.5 + 1j,
              2.5 + 0j]
    for value in values:
        for make in (lambda: core.empty(3, 4, dtype=dtype), lambda: core.empty(4, 6, dtype=dtype)[:, ::2]):
            mine, want = make(), make()
            out = _outcome(mine.fill_, value)
            set_debug(True)
            try:
                expected = _outcome(want.fill_, value)
            finally:
                set_debug(False)
            if isinstance(expected, tuple):
                assert out == expected, value
                continue
            assert out is mine, value
            np.testing.assert_array_equal(mine.numpy(), want.numpy(), err_msg=str(value))
    if not dtype.is_complex:  # PyTorch: a complex value with an imaginary part does not fit a real dtype
        with pytest.raises(RuntimeError, match="without overflow"):
            core.zeros(2, dtype=dtype).fill_(2.5 + 1j)


def test_arithmetic_shortcut_skips_the_meta_function_only_for_common_calls(monkeypatch, numpy_small_tier):
    from core.dispatch.operator import invalidate_caches

    calls = []
    for name in ("add", "add_", "fill_"):
        op = get_operator(name)
        monkeypatch.setattr(op, "meta", lambda *args, meta=op.meta, **kwargs: calls.append(args) or meta(*args,
                                                                                                     **kwargs))
    invalidate_caches()
    try:
        x, y = core.ones(5), core.ones(5)
        x + y, x + 1.5, 2 * x, x + y.expand(5)  # a fresh view: its array is made once
        x.add_(y), x.add_(2.0), x.add_(y.expand(5)), x.fill_(1), x[::2].fill_(0.5)
        assert calls == []
        x + y.double()
        x.add(y, alpha=2)
        x.add_(y, alpha=2)
        x.fill_(True)
        assert len(calls) == 5  # promotion, alpha: the full path (add_'s meta asks add's)
    finally:
        monkeypatch.undo()
        invalidate_caches()


@pytest.fixture
def numpy_small_reductions():
    """The NumPy kernels serve small reductions, as by default (CI runs cpu_c's C kernels at every size)."""
    try:
        import core_cpu_c
    except ImportError:
        yield
        return
    previous = core_cpu_c.set_min_numel(4096)
    yield
    core_cpu_c.set_min_numel(previous)


def _reduction_cases():
    """(op name, input, dims, keepdim, dtype) calls of the sum/prod operators: the shortcut's common ones and the
    ones it must hand to the full path."""
    rng = _rng()
    square = core.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    cases = []
    for name in ("sum", "prod"):
        for dtype in (np.float32, np.float64, np.float16, np.int32, np.bool_):
            x = core.tensor((rng.standard_normal((3, 4)) * 3).astype(dtype))
            cases += [(name, x, (0, 1), False, None), (name, x, (1,), False, None), (name, x, (0,), True, None)]
        cases += [(name, square.t(), (0, 1), False, None), (name, square[:, ::2], (1,), False, None),
                  (name, core.tensor(2.5).expand(3, 4), (0, 1), False, None),  # a view without an array yet
                  (name, square, (0, 1), False, core.float64), (name, square, (), False, None),
                  (name, core.tensor(1.5), (), False, None), (name, core.empty(0, 4), (0,), False, None),
                  (name, core.empty(0, 4), (0, 1), False, None)]
    return cases


@pytest.mark.parametrize("case", range(len(_reduction_cases())))
def test_reduction_shortcut_gives_what_the_meta_path_gives(case, numpy_small_reductions):
    from core.dispatch.operator import set_debug

    name, x, dims, keepdim, dtype = _reduction_cases()[case]
    op = get_operator(name)
    out = op(x, dims, keepdim, dtype)
    set_debug(True)  # every output checked against the meta function's spec: no shortcut
    try:
        want = op(x, dims, keepdim, dtype)
    finally:
        set_debug(False)
    assert (out.dtype, out.shape, out.stride()) == (want.dtype, want.shape, want.stride())
    np.testing.assert_array_equal(out.numpy(), want.numpy())
    assert not np.shares_memory(out.numpy(), x.numpy())


def test_reduction_shortcut_skips_the_meta_function_only_for_common_calls(monkeypatch, numpy_small_reductions):
    from core.dispatch.operator import invalidate_caches

    calls = []
    op = get_operator("sum")
    monkeypatch.setattr(op, "meta", lambda *args, meta=op.meta, **kwargs: calls.append(args) or meta(*args, **kwargs))
    invalidate_caches()
    try:
        x = core.ones(3, 4)
        assert x.sum().item() == 12 and x.sum(1).tolist() == [4.0] * 3 and x.double().sum().item() == 12
        assert calls == []
        x.sum(1, keepdim=True), x.sum(dtype=core.float64), x.int().sum(), x.half().sum()
        assert len(calls) == 4  # keepdim, a dtype argument, integral and half inputs: the full path
    finally:
        monkeypatch.undo()
        invalidate_caches()
