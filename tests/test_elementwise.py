"""Elementwise ops beyond the conformance table: arguments, in-place variants, out=, errors."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.dispatch import get_operator
from core.testing import assert_close


def test_add_sub_alpha_and_reflected_scalars(device):
    a = core.tensor([1.0, 2.0], device=device)
    b = core.tensor([10.0, 20.0], device=device)
    assert_close(core.add(a, b, alpha=2), np.array([21.0, 42.0], np.float32))
    assert_close(core.sub(a, b, alpha=0.5), np.array([-4.0, -8.0], np.float32))
    assert_close(1 - a, np.array([0.0, -1.0], np.float32))
    assert_close(2 / a, np.array([2.0, 1.0], np.float32))
    assert_close(2 ** a, np.array([2.0, 4.0], np.float32))
    assert_close(7 // a, np.array([7.0, 3.0], np.float32))
    assert_close(5 % a, np.array([0.0, 1.0], np.float32))
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        core.add(core.ones(2, dtype=core.int64, device=device), core.ones(2, dtype=core.int64, device=device),
                 alpha=0.5)


def test_inplace_ops_write_through_and_check_casting(device):
    a = core.zeros(2, 3, device=device)
    row = a.select(0, 1)
    row.add_(1).mul_(3).sub_(1)
    a.T.select(0, 0).fill_(-1)
    assert_close(a, np.array([[-1, 0, 0], [-1, 2, 2]], np.float32))
    i = core.ones(3, dtype=core.int64, device=device)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.add_(0.5)
    i += 2
    assert i.tolist() == [3, 3, 3]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        core.ones(3, device=device).add_(core.ones(2, 3, device=device))
    x = core.tensor([0.25, 4.0], device=device)
    assert x.sqrt_() is x and x.tolist() == [0.5, 2.0]
    x.clamp_(max=1.0)
    assert x.tolist() == [0.5, 1.0]


_IN_PLACE = {"add": lambda a, b, alpha: a + alpha * b, "sub": lambda a, b, alpha: a - alpha * b,
             "mul": lambda a, b, alpha: a * b, "div": lambda a, b, alpha: a / b}


@pytest.mark.parametrize("op", list(_IN_PLACE))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bfloat16"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "broadcast", "scalar", "itself",
                                    "overlapping"])
def test_arithmetic_in_place_writes_into_self(device, op, dtype, layout):
    """``add_``/``sub_``/``mul_``/``div_`` outside autograd are ops of their own (no separate copy on the CPU
    backends): into any layout of self, with alpha, broadcasting, a Python number, self as its own operand, and
    an operand overlapping self (read as before the write)."""
    from core.profiler import profile

    if op == "div" and dtype == "int32":
        pytest.skip("true division of integers makes floats: it computes, then refuses the cast (tested above)")
    d = getattr(core, dtype)
    base = np.arange(1, 4 * 70 + 1).reshape(4, 70) % 13 + 1
    other_np = (np.arange(4 * 70).reshape(4, 70) % 7 + 1).astype(np.float64)
    t = core.tensor(base, dtype=d, device=device)
    target, expect = t, base.astype(np.float64)
    other = core.tensor(other_np, dtype=d, device=device)
    if layout == "transposed":
        t = core.tensor(base.T.copy(), dtype=d, device=device)
        target, expect = t.t(), base.T.copy().T.astype(np.float64)
    elif layout == "strided":
        target, expect, other, other_np = t[:, ::2], expect[:, ::2], other[:, ::2], other_np[:, ::2]
    elif layout == "broadcast":
        other, other_np = other[1], other_np[1]
    elif layout == "scalar":
        other = other_np = 2
    elif layout == "itself":
        other, other_np = target, expect
    elif layout == "overlapping":
        target, expect, other, other_np = t[:, 1:], expect[:, 1:], t[:, :-1], expect[:, :-1].copy()
    pointer, version = target.data_ptr(), target._version
    alpha = (2 if dtype == "int32" else 0.5) if op in ("add", "sub") else 1
    with profile() as prof:
        kwargs = {"alpha": alpha} if op in ("add", "sub") else {}
        assert getattr(target, op + "_")(other, **kwargs) is target
    names = {e.key for e in prof.key_averages()}
    assert f"aten::{op}_" in names
    if target.device.type == "cpu":  # the NumPy reference and cpu_c write in place; other backends compute, then copy
        assert f"aten::{op}" not in names and "aten::copy_" not in names
    want = _IN_PLACE[op](expect, np.asarray(other_np, np.float64), alpha)
    tol = {"rtol": 2**-7, "atol": 0} if dtype == "bfloat16" else {}
    assert_close(target, core.tensor(want, dtype=d, device=device), **tol)
    assert target.data_ptr() == pointer and target._version == version + 1


@pytest.mark.parametrize("op", list(_IN_PLACE))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bfloat16"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "broadcast", "scalar", "input",
                                    "overlapping"])
def test_arithmetic_out_writes_into_out(device, op, dtype, layout):
    """``add``/``sub``/``mul``/``div`` with ``out=`` outside autograd run ops of their own (``add_out``...; no
    separate copy on the CPU backends): into any layout of out, with alpha, broadcasting, a Python number, out as
    the input, and an input overlapping out (read as before the write)."""
    from core.profiler import profile

    if op == "div" and dtype == "int32":
        pytest.skip("true division of integers makes floats: it computes, then refuses the cast (test_out_argument)")
    d = getattr(core, dtype)
    first = (np.arange(1, 4 * 70 + 1).reshape(4, 70) % 13 + 1).astype(np.float64)
    second = (np.arange(4 * 70).reshape(4, 70) % 7 + 1).astype(np.float64)
    input, other = core.tensor(first, dtype=d, device=device), core.tensor(second, dtype=d, device=device)
    out = core.full((4, 70), -1, dtype=d, device=device)
    if layout == "transposed":
        out = core.full((70, 4), -1, dtype=d, device=device).t()
    elif layout == "strided":
        out = core.full((4, 140), -1, dtype=d, device=device)[:, ::2]
        input, first = core.tensor(np.repeat(first, 2, 1), dtype=d, device=device)[:, 1::2], first
    elif layout == "broadcast":
        other, second = other[1], second[1]
    elif layout == "scalar":
        other = second = 3
    elif layout == "input":
        out = input
    elif layout == "overlapping":
        wide = core.tensor(np.concatenate([first, first[:, -1:]], 1), dtype=d, device=device)
        out, input = wide[:, 1:], wide[:, :-1]
    pointer, version = out.data_ptr(), out._version
    alpha = (2 if dtype == "int32" else 0.5) if op in ("add", "sub") else 1
    with profile() as prof:
        kwargs = {"alpha": alpha} if op in ("add", "sub") else {}
        assert getattr(core, op)(input, other, out=out, **kwargs) is out
    names = {e.key for e in prof.key_averages()}
    assert f"aten::{op}_out" in names
    if out.device.type == "cpu":  # the NumPy reference and cpu_c write into out; other backends compute, then copy
        assert f"aten::{op}" not in names and "aten::copy_" not in names
    want = _IN_PLACE[op](first, np.asarray(second, np.float64), alpha)
    tol = {"rtol": 2**-7, "atol": 0} if dtype == "bfloat16" else {}
    assert_close(out, core.tensor(want, dtype=d, device=device), **tol)
    assert out.data_ptr() == pointer and out._version == version + 1


_FUSED = {"addcmul": lambda x, a, b, v: x + v * a * b, "addcdiv": lambda x, a, b, v: x + v * a / b}


@pytest.mark.parametrize("op", list(_FUSED))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("form", ["out", "in place", "out transposed", "broadcast", "overlapping"])
def test_addcmul_addcdiv_write_into_out_in_one_op(device, op, dtype, form):
    """``addcmul``/``addcdiv`` with ``out=`` and their in-place forms, outside autograd, are one op each
    (``addcmul_out``...): no product or quotient tensor and no copy on the CPU backends; any layout of out, operands
    broadcast, and an input overlapping out (read as before the write)."""
    from core.profiler import profile

    d = getattr(core, dtype)
    x_np = (np.arange(3 * 50).reshape(3, 50) % 11 + 1).astype(np.float64)
    a_np = (np.arange(3 * 50).reshape(3, 50) % 5 + 1).astype(np.float64) / 2
    b_np = (np.arange(3 * 50).reshape(3, 50) % 7 + 1).astype(np.float64) / 4
    x, a, b = (core.tensor(v, dtype=d, device=device) for v in (x_np, a_np, b_np))
    value = 0.5 if form != "out" else 1
    fn = getattr(core, op)
    out = core.full((3, 50), -1.0, dtype=d, device=device)
    if form == "out transposed":
        out = core.full((50, 3), -1.0, dtype=d, device=device).t()
    elif form == "broadcast":
        a, a_np = a[1], a_np[1]
    elif form == "overlapping":
        wide = core.tensor(np.concatenate([x_np, x_np[:, -1:]], 1), dtype=d, device=device)
        out, x = wide[:, 1:], wide[:, :-1]
    pointer, version = out.data_ptr(), out._version
    with profile() as prof:
        if form == "in place":
            out = x
            pointer, version = out.data_ptr(), out._version
            assert getattr(x, op + "_")(a, b, value=value) is x
        else:
            assert fn(x, a, b, value=value, out=out) is out
    names = {e.key for e in prof.key_averages()}
    assert f"aten::{op}_out" in names
    if out.device.type == "cpu":  # the NumPy reference and cpu_c write into out; other backends compute, then copy
        assert not names & {"aten::mul", "aten::div", "aten::add", "aten::copy_"}, names
    want = _FUSED[op](x_np, a_np, b_np, value)
    tol = {"rtol": 2**-7, "atol": 0} if dtype == "bfloat16" else {}
    assert_close(out, core.tensor(want, dtype=d, device=device), **tol)
    assert out.data_ptr() == pointer and out._version == version + 1


def _lerp_np(x, y, w):
    """ATen's two forms of lerp, in the operands' dtype: from input where |w| < 0.5, else back from end."""
    w = np.asarray(w, x.dtype)
    return np.where(np.abs(w) < 0.5, x + w * (y - x), y - (y - x) * (np.asarray(1, x.dtype) - w))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("form", ["out", "in place", "out transposed", "broadcast", "overlapping"])
def test_lerp_writes_into_out_in_one_op(device, dtype, form):
    """``lerp`` with ``out=`` and ``lerp_`` with a number weight, outside autograd, are one op (``lerp_out``): no
    difference, product or copy on the CPU backends; weights on both sides of 0.5 (PyTorch's two forms)."""
    from core.profiler import profile

    d = getattr(core, dtype)
    rng = np.random.default_rng(3)
    x_np, y_np = (rng.uniform(-4, 4, (3, 50)) for _ in range(2))
    x, y = (core.tensor(v, dtype=d, device=device) for v in (x_np, y_np))
    x_np, y_np = (t.to(core.float64).cpu().numpy() for t in (x, y))  # as stored in dtype
    tol = {"rtol": 2**-7, "atol": 2**-6} if dtype == "bfloat16" else {}
    for weight in (0.25, -0.375, 0.5, 0.75, 1.0):
        out = core.full((3, 50), -1.0, dtype=d, device=device)
        x_case, y_case = x, y
        if form == "out transposed":
            out = core.full((50, 3), -1.0, dtype=d, device=device).t()
        elif form == "broadcast":
            y_case = y[1]
        elif form == "overlapping":
            wide = core.tensor(np.concatenate([x_np, x_np[:, -1:]], 1), dtype=d, device=device)
            out, x_case = wide[:, 1:], wide[:, :-1]
        elif form == "in place":
            out = x_case = x.clone()
        pointer, version = out.data_ptr(), out._version
        with profile() as prof:
            if form == "in place":
                assert x_case.lerp_(y_case, weight) is out
            else:
                assert core.lerp(x_case, y_case, weight, out=out) is out
        names = {e.key for e in prof.key_averages()}
        assert "aten::lerp_out" in names
        if out.device.type == "cpu":  # the NumPy reference and cpu_c write into out; other backends compute, copy
            assert not names & {"aten::mul", "aten::sub", "aten::add", "aten::copy_"}, names
        cd = np.float64 if dtype == "float64" else np.float32  # PyTorch's compute dtype
        want = _lerp_np(x_np.astype(cd), (y_np[1] if form == "broadcast" else y_np).astype(cd), weight)
        assert_close(out, core.tensor(want, dtype=d, device=device), **tol)
        assert out.data_ptr() == pointer and out._version == version + 1
        if weight == 1.0 and form in ("out", "in place"):
            assert np.array_equal(out.to(core.float64).cpu().numpy(), y_np), "weight 1 gives end exactly"


@pytest.mark.parametrize("op", ["addcmul", "addcdiv", "lerp"])
def test_fused_ops_write_a_new_result_in_one_op(device, op):
    """Outside autograd and a trace, ``addcmul``/``addcdiv``/``lerp`` of contiguous operands of one shape and a
    number value run their ``*_out`` op into a new tensor; other layouts, autograd and traces compute from the parts
    (a trace keeps them: they fuse and export)."""
    from core.profiler import profile

    rng = np.random.default_rng(5)
    x_np, a_np, b_np = (rng.uniform(0.5, 2.0, (4, 30)).astype(np.float32) for _ in range(3))
    x, a, b = (core.tensor(v, device=device) for v in (x_np, a_np, b_np))
    if op == "lerp":
        call, want = (lambda x, a, b: core.lerp(x, a, 0.75)), _lerp_np(x_np, a_np, np.float32(0.75))
    else:
        call = lambda x, a, b: getattr(core, op)(x, a, b, value=0.5)  # noqa: E731
        want = x_np + 0.5 * a_np * b_np if op == "addcmul" else x_np + 0.5 * a_np / b_np
    with profile() as prof:
        y = call(x, a, b)
    names = {e.key for e in prof.key_averages()}
    assert f"aten::{op}_out" in names and y.shape == (4, 30) and y.is_contiguous()
    if y.device.type == "cpu":
        assert not names & {"aten::mul", "aten::div", "aten::add", "aten::sub"}, names
    assert_close(y, want)
    xt = core.tensor(np.ascontiguousarray(x_np.T), device=device).t()  # transposed: the parts pick the layout
    xg = x.clone().requires_grad_()
    for args in ((xt, a, b), (xg, a, b)):
        with profile() as prof:
            y = call(*args)
        assert f"aten::{op}_out" not in {e.key for e in prof.key_averages()}
        assert_close(y.detach(), want)
    graph = str(core.jit.trace(call, (x, a, b)).graph)
    assert f"{op}_out" not in graph and "empty" not in graph, graph


def test_lerp_takes_pytorch_two_forms(device):
    """``core.lerp`` computes as ATen does: ``input + w * (end - input)`` for |w| < 0.5, else
    ``end - (end - input) * (1 - w)`` (a tensor weight picks per element), so w = 1 gives ``end`` exactly."""
    rng = np.random.default_rng(4)
    x_np = rng.uniform(-10, 10, 64).astype(np.float32)
    y_np = rng.uniform(-1, 1, 64).astype(np.float32)
    w_np = rng.uniform(-1, 2, 64).astype(np.float32)
    x, y, w = (core.tensor(v, device=device) for v in (x_np, y_np, w_np))
    assert np.array_equal(core.lerp(x, y, 1.0).cpu().numpy(), y_np)
    assert not np.array_equal(x_np + np.float32(1) * (y_np - x_np), y_np)  # the one-form formula would miss it
    for weight in (0.3, 0.7):
        assert_close(core.lerp(x, y, weight), _lerp_np(x_np, y_np, np.float32(weight)))
    assert_close(core.lerp(x, y, w), _lerp_np(x_np, y_np, w_np))
    out = core.empty(64, device=device)
    assert core.lerp(x, y, w, out=out) is out
    assert_close(out, _lerp_np(x_np, y_np, w_np))
    with pytest.raises(RuntimeError, match="expected floating operands of out's dtype"):
        get_operator("lerp_out")(core.empty(2, dtype=core.int64, device=device), core.ones(2, device=device),
                                 core.ones(2, device=device), 0.5)
    with pytest.raises(TypeError, match=r"lerp_out\(\): expected out, input, end tensors and a number weight"):
        get_operator("lerp_out")(core.empty(2, device=device), core.ones(2, device=device), core.ones(2, device=device))


def test_lerp_gradients_on_both_sides_of_one_half(device):
    """lerp's gradients are ``1 - w``, ``w`` and ``end - input`` for weights on either side of 0.5 (float64)."""
    rng = np.random.default_rng(4)
    x_np, y_np, w_np = rng.uniform(-10, 10, 64), rng.uniform(-1, 1, 64), rng.uniform(-1, 2, 64)
    xg, yg, wg = (core.tensor(v, device=device, requires_grad=True) for v in (x_np, y_np, w_np))
    core.lerp(xg, yg, wg).sum().backward()
    assert_close(xg.grad, 1 - w_np)
    assert_close(yg.grad, w_np)
    assert_close(wg.grad, y_np - x_np)
    for weight in (0.25, 0.75):
        xg.grad = yg.grad = None
        core.lerp(xg, yg, weight).sum().backward()
        assert_close(xg.grad, np.full(64, 1 - weight))
        assert_close(yg.grad, np.full(64, weight))


def test_addcmul_addcdiv_with_autograd_or_other_dtypes_compute_then_copy(device):
    """Where ``addcmul_out`` does not take a call (autograd recording, integer or mixed dtypes, a number value out
    of range of a half type), the result is computed from its parts and copied, as before; its checks stand."""
    from core.profiler import profile

    x = core.tensor([1.0, 2.0], device=device, requires_grad=True)
    a, b = core.tensor([3.0, 4.0], device=device), core.tensor([2.0, 8.0], device=device)
    with profile() as prof:
        y = core.addcmul(x, a, b, value=0.5)
        y.sum().backward()
    assert "aten::addcmul_out" not in {e.key for e in prof.key_averages()}
    assert y.tolist() == [4.0, 18.0] and x.grad.tolist() == [1.0, 1.0]
    ints = core.tensor([1, 2], device=device)
    out = core.empty(2, dtype=core.int64, device=device)
    assert core.addcmul(ints, ints, ints, value=2, out=out) is out and out.tolist() == [3, 10]
    mixed = core.empty(2, dtype=core.float64, device=device)
    assert core.addcdiv(a, a, b, out=mixed) is mixed and mixed.tolist() == [4.5, 4.5]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        core.ones(2, device=device).addcmul_(core.ones(3, 2, device=device), core.ones(2, device=device))
    with pytest.raises(RuntimeError, match="expected floating operands of out's dtype"):
        get_operator("addcmul_out")(core.empty(2, dtype=core.int64, device=device), ints, ints, ints)
    for fn in (core.addcmul, core.addcdiv, core.add):
        with pytest.raises(TypeError, match="argument 'out' must be Tensor, not list"):
            fn(a, b, b, out=[0.0, 0.0]) if fn is not core.add else fn(a, b, out=[0.0, 0.0])


def test_parameters_and_buffers_take_the_ops_written_in_place(device):
    """An optimizer's in-place arithmetic on a Parameter (under no_grad) or a Buffer runs the ops that write in place
    (``add_``, ``addcmul_out``, ``addcdiv_out``, ``mul_out``), as on a plain Tensor: no result computed, then
    copied."""
    from core.profiler import profile

    p = core.nn.Parameter(core.ones(4, device=device))
    b = core.nn.Buffer(core.full((4,), 2.0, device=device))
    t = core.full((4,), 3.0, device=device)
    with core.no_grad(), profile() as prof:
        p.add_(b, alpha=0.5)
        p.addcmul_(t, t, value=0.5)
        p.addcdiv_(b, t, value=-3)
        b.add_(p)
        core.mul(p, 2, out=p)
    names = {e.key for e in prof.key_averages()}
    assert {"aten::add_", "aten::addcmul_out", "aten::addcdiv_out", "aten::mul_out"} <= names
    if p.device.type == "cpu":
        assert "aten::copy_" not in names
    assert p.tolist() == [9.0] * 4 and b.tolist() == [6.5] * 4 and p.requires_grad


def test_out_of_another_shape_dtype_or_with_autograd_computes_then_copies(device):
    """Where the ``*_out`` ops do not take a call (out to be resized, a result cast to out's dtype, autograd
    recording), ``out=`` computes the result and copies it in, as before."""
    from core.profiler import profile

    a = core.tensor([1.0, 2.0], device=device, requires_grad=True)
    out = core.empty(2, device=device)
    with profile() as prof:
        core.mul(a, 3, out=out)
    names = {e.key for e in prof.key_averages()}
    assert "aten::mul_out" not in names and out.tolist() == [3.0, 6.0]
    wide = core.empty(2, dtype=core.float64, device=device)
    assert core.add(a.detach(), 1, out=wide) is wide and wide.tolist() == [2.0, 3.0]
    with pytest.raises(RuntimeError, match="writes a result of shape \\[2\\] and dtype float32 into out of shape"):
        get_operator("add_out")(core.empty(3, device=device), a.detach(), a.detach())


def test_out_argument(device):
    out = core.empty(0, device=device)
    core.mul(core.ones(2, device=device), 3, out=out)
    assert out.tolist() == [3.0, 3.0]
    with pytest.warns(UserWarning, match="was resized"):
        resized = core.exp(core.ones(2, device=device), out=core.empty(3, device=device))
    assert resized.shape == (2,)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        core.add(core.ones(2, device=device), 1, out=core.zeros(2, dtype=core.int64, device=device))
    a, b, c = (core.tensor(v, device=device) for v in ([1.0, 2.0], [3.0, 4.0], [2.0, 8.0]))
    out = core.empty(2, device=device)
    assert core.addcmul(a, b, c, value=0.5, out=out) is out and out.tolist() == [4.0, 18.0]
    assert core.addcdiv(a, b, c, value=2, out=out) is out and out.tolist() == [4.0, 3.0]
    assert core.lerp(a, b, 0.25, out=out) is out and out.tolist() == [1.5, 2.5]


def test_review_regressions(device):
    assert core.zeros(3, device=device)._version == 0
    x = core.ones(3, device=device) * 2
    y = core.tensor(x)
    y[0] = 5
    assert x.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="without overflow"):
        core.zeros(2, dtype=core.uint8, device=device).fill_(300)
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        core.tensor([True], device=device) - 1
    assert core.add(core.tensor([5], device=device), core.tensor([1.0], device=device), alpha=2.5).tolist() == [7.5]
    assert (core.tensor([2, 1, -1, -1], device=device) ** core.tensor([-1, -2, -3, -2], device=device)).tolist() \
        == [0, 1, -1, 1]
    assert (core.tensor(1.0, device=device) == None) is False  # noqa: E711 - the point of the test
    assert core.tensor(3.0, device=device).transpose(0, -1).item() == 3.0
    assert core.tensor(3.0, device=device).flip(0).item() == 3.0
    with pytest.raises(IndexError, match="no dimensions"):
        core.tensor(3.0, device=device).unbind(0)
    z = core.zeros(3, dtype=core.int64, device=device)
    with pytest.raises(RuntimeError, match="dtypes match"):
        z[[0, 2]] = core.tensor([1.7, 2.2], device=device)


def test_division_rounding_modes(device):
    a = core.tensor([-7, 7, -8], device=device)
    b = core.tensor([2, -2, 3], device=device)
    assert core.div(a, b).dtype is core.float32
    assert core.div(a, b, rounding_mode="trunc").tolist() == [-3, -3, -2]
    assert core.div(a, b, rounding_mode="floor").tolist() == [-4, -4, -3]
    assert core.div(a.float(), b.float(), rounding_mode="trunc").tolist() == [-3.0, -3.0, -2.0]
    assert core.remainder(a, b).tolist() == [1, -1, 1]
    assert core.fmod(a, b).tolist() == [-1, 1, -2]
    with pytest.raises(ValueError, match="rounding_mode"):
        core.div(a, b, rounding_mode="round")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        core.floor_divide(a, core.zeros(3, dtype=core.int64, device=device))


def test_type_errors_follow_pytorch(device):
    f = core.ones(2, device=device)
    b = core.ones(2, dtype=core.bool, device=device)
    with pytest.raises(TypeError, match="bitwise_and.*integral and bool"):
        f & f
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        _ = b - b
    with pytest.raises(TypeError, match="neg.*bool"):
        _ = -b
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        core.ones(2, dtype=core.int64, device=device) ** -1
    with pytest.raises(TypeError, match="expected Tensor or number"):
        f + "a"
    with pytest.raises(RuntimeError, match=r"not broadcastable"):
        f + core.ones(3, device=device)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        f * core.ones(3, device=device)


def test_where_clamp_and_friends(device):
    x = core.tensor([-2.0, 0.5, 3.0], device=device)
    assert core.where(x > 0, x, 0.0).tolist() == [0.0, 0.5, 3.0]
    assert core.where(x > 0, 1, 0).dtype is core.int64
    assert x.where(x < 1, core.tensor(9.0, device=device)).tolist() == [-2.0, 0.5, 9.0]
    lo = core.tensor([-1.0, 1.0, 0.0], device=device)
    assert core.clamp(x, min=lo, max=2.0).tolist() == [-1.0, 1.0, 2.0]
    assert core.clamp(core.tensor([float("nan")], device=device), 0, 1).isnan().tolist() == [True]
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        core.clamp(x)
    with pytest.raises(RuntimeError, match="condition to be a boolean"):
        core.where(x, x, x)
    assert_close(core.lerp(x, core.zeros(3, device=device), 0.5), np.array([-1.0, 0.25, 1.5], np.float32))
    assert_close(core.addcmul(x, x, x, value=2), np.array([6.0, 1.0, 21.0], np.float32))
    nan = core.tensor([float("nan"), float("inf"), -float("inf"), 1.0], device=device)
    assert core.nan_to_num(nan, posinf=5.0, neginf=-5.0).tolist() == [0.0, 5.0, -5.0, 1.0]
    assert core.isclose(x, x + 1e-7).all().item()
    assert core.allclose(x, x.clone())
    assert core.equal(x, x.clone()) and not core.equal(x, x + 1)


def test_comparison_operators_and_shifts(device):
    a = core.tensor([1, 2, 3], device=device)
    assert (a == 2).tolist() == [False, True, False] and (a != 2).dtype is core.bool
    assert (a >= core.tensor([3, 2, 1], device=device)).tolist() == [False, True, True]
    assert (a << 2).tolist() == [4, 8, 12] and (a >> 1).tolist() == [0, 1, 1]
    assert (~core.tensor([True, False], device=device)).tolist() == [False, True]
    assert (a ^ 3).tolist() == [2, 1, 0] and (a | 4).tolist() == [5, 6, 7]


def test_half_precision_computes_in_float32(device):
    x = core.tensor([1000.0, 0.001], dtype=core.float16, device=device)
    y = (x * 3).float()
    assert_close(y, np.array([1000.0, 0.001], np.float16).astype(np.float32) * 3, rtol=1e-3, atol=0)
    b = core.tensor([1.5, 2.25], dtype=core.bfloat16, device=device)
    assert (b + b).dtype is core.bfloat16 and (b + b).tolist() == [3.0, 4.5]


def test_matches_torch_on_mixed_promotion(device):
    torch = pytest.importorskip("torch")
    for dtype in ("int32", "uint8", "float16", "bool"):
        ours = core.ones(3, dtype=getattr(core, dtype), device=device)
        theirs = torch.ones(3, dtype=getattr(torch, dtype))
        for scalar in (2, 2.5, True):
            for fn in ("add", "mul", "div", "maximum"):
                if fn == "maximum":
                    continue
                o = getattr(core, fn)(ours, scalar)
                t = getattr(torch, fn)(theirs, scalar)
                assert o.dtype.name == str(t.dtype).split(".")[1], (dtype, scalar, fn)
                np.testing.assert_allclose(o.float().cpu().numpy(), t.float().numpy(), rtol=1e-3)


@pytest.mark.parametrize("dtype,real", [(core.complex64, np.float32), (core.complex128, np.float64)])
def test_complex_parts_abs_and_angle_are_real_and_keep_the_imaginary_part(device, dtype, real):
    values = np.array([1 + 2j, 3 - 1j, -2 + 0j, 0 - 0.5j])
    z = core.tensor(values, dtype=dtype, device=device)
    for fn, expected in ((core.real, values.real), (core.imag, values.imag), (core.abs, np.abs(values)),
                         (core.angle, np.angle(values))):
        result = fn(z)
        assert result.dtype is core.dtypes.from_numpy_dtype(np.dtype(real)), fn.__name__
        assert_close(result, expected.astype(real), rtol=1e-6, atol=1e-6)
    assert_close(z.imag, values.imag.astype(real))
    assert core.abs(core.tensor([-3, 4], device=device)).dtype is core.int64  # real inputs keep their dtype
