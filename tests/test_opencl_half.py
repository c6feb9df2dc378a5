"""float16 and bfloat16 on opencl: stored in 16 bits, computed in float32 by the generated kernels (vload_half /
vstore_half_rte, bfloat16 by shifts and a rounding helper: no cl_khr_fp16 needed, so every OpenCL device runs them).

Each op must run on the device (the CPU fallback is disabled) and give the CPU reference's values: bit for bit for
arithmetic, comparisons and casts (both compute in float32 and round once), within one half ulp for math functions
(OpenCL's and NumPy's float32 functions may differ in their last bit), within the half type's rounding for sums and
products (the accumulation order differs). Under autocast an MLP's forward and backward run in half on the
device and match the CPU's autocast."""

from __future__ import annotations

import numpy as np
import pytest

import core

pytest.importorskip("core_opencl", reason="the core-opencl plugin is not installed")
pytestmark = pytest.mark.skipif(not core.opencl.is_available(), reason="no OpenCL device (install PoCL or a driver)")

DEV = "opencl"
HALF = ("float16", "bfloat16")
# one ulp of each half type at 1, and a float32-sized absolute slack: sums and products round differently
TOLERANCE = {"float16": dict(rtol=2e-3, atol=1e-3), "bfloat16": dict(rtol=1.6e-2, atol=1e-2)}


@pytest.fixture(autouse=True)
def no_fallback():
    core.config.set("fallback", False)  # a declined call raises instead of running on the CPU
    yield
    core.config.reset("fallback")


def _pair(dtype: str, *shape, seed: int = 0, low: float = -3, high: float = 3):
    """(cpu tensor, opencl tensor) of the same half values."""
    values = np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)
    cpu = core.tensor(values).to(getattr(core, dtype))
    return cpu, cpu.to(DEV)


def _same(device_result, cpu_result, ulp: int = 0):
    """The device's result copied back against the CPU's: equal (NaN where NaN), or within ``ulp`` units of the half
    type's last place (math functions: OpenCL's float32 functions and NumPy's may differ in float32's last bit,
    which now and then moves the rounding to half by one step)."""
    got, want = device_result.cpu(), cpu_result
    assert got.dtype is want.dtype and got.device.type == "cpu"
    g, w = (t.float().numpy() if t.dtype.is_floating_point else t.numpy() for t in (got, want))
    if ulp == 0:
        np.testing.assert_array_equal(g, w)
    else:
        step = 2.0 ** -10 if got.dtype is core.float16 else 2.0 ** -7
        np.testing.assert_allclose(g, w, rtol=ulp * step, atol=0, equal_nan=True)


EXACT_UNARY = ["neg", "abs", "floor", "relu"]
MATH_UNARY = ["exp", "log", "tanh", "sigmoid", "sqrt", "rsqrt", "sin", "erf", "expm1"]
EXACT_BINARY = ["add", "sub", "mul", "maximum", "minimum", "eq", "lt", "ge", "ne"]
MATH_BINARY = ["div", "pow", "atan2", "fmod"]


@pytest.mark.parametrize("dtype", HALF)
def test_elementwise_ops_run_on_the_device_with_the_cpu_values(dtype):
    (a, da), (b, db) = _pair(dtype, 33, 17, seed=1, low=0.1), _pair(dtype, 33, 17, seed=2, low=0.1)
    for op in EXACT_UNARY + MATH_UNARY:
        fn, ulp = getattr(core, op), int(op in MATH_UNARY)
        _same(fn(da), fn(a), ulp)
        _same(fn(da.mT), fn(a.mT), ulp)  # a strided operand
    for op in EXACT_BINARY + MATH_BINARY:
        fn, ulp = getattr(core, op), int(op in MATH_BINARY)
        _same(fn(da, db), fn(a, b), ulp)
        _same(fn(da, db[:1]), fn(a, b[:1]), ulp)  # broadcast
    _same(da * 0.5 + 2, a * 0.5 + 2)  # Python scalars, computed in float32
    _same(core.add(da, db, alpha=3), core.add(a, b, alpha=3))
    _same(core.where(da > db, da, db), core.where(a > b, a, b))
    _same(da.clamp(-1, 1), a.clamp(-1, 1))
    _same(da.clamp(min=0.5), a.clamp(min=0.5))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the CPU reference's NumPy, at 3e38 * 2
@pytest.mark.parametrize("dtype", HALF)
def test_special_values_round_and_propagate_as_on_the_cpu(dtype):
    info = np.finfo(np.float16) if dtype == "float16" else None
    big = 60000.0 if info is not None else 3.0e38
    values = core.tensor([0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), big, -big, 1e-7, 3.14159],
                         dtype=core.float32)
    cpu = values.to(getattr(core, dtype))
    dev = values.to(DEV).to(getattr(core, dtype))  # the cast on the device
    _same(dev, cpu)
    for fn in (lambda x: x * 2, lambda x: x + x, lambda x: x.float()):
        _same(fn(dev), fn(cpu))
    for fn in (core.exp, core.reciprocal):
        _same(fn(dev), fn(cpu), ulp=1)


@pytest.mark.parametrize("dtype", HALF)
def test_casts_between_half_and_other_dtypes(dtype):
    a, da = _pair(dtype, 9, 11, seed=3, low=-100, high=100)
    for target in (core.float32, core.float64, core.int32, core.int16, core.bool):
        _same(da.to(target), a.to(target))
    other = "bfloat16" if dtype == "float16" else "float16"
    _same(da.to(getattr(core, other)), a.to(getattr(core, other)))
    for source in (core.float32, core.int16, core.uint8, core.float64, core.int64):
        x = core.arange(-50, 49).to(source).reshape(9, 11) if source is not core.uint8 else core.arange(99).to(source)
        _same(x.to(DEV).to(getattr(core, dtype)), x.to(getattr(core, dtype)))
    full = core.empty(4, 5, dtype=getattr(core, dtype), device=DEV)
    _same(full.fill_(1.5), core.full((4, 5), 1.5, dtype=getattr(core, dtype)))
    _same(full.fill_(0.1), core.full((4, 5), 0.1, dtype=getattr(core, dtype)))  # rounded once from float64


@pytest.mark.parametrize("dtype", HALF)
def test_cat_and_flip(dtype):
    (a, da), (b, db) = _pair(dtype, 4, 6, seed=9), _pair(dtype, 3, 6, seed=10)
    _same(core.cat([da, db]), core.cat([a, b]))
    _same(core.cat([da.mT, db.mT], 1), core.cat([a.mT, b.mT], 1))
    small = core.tensor([[1, -2, 3, 4, 5, 6]], dtype=core.int8)
    _same(core.cat([da, small.to(DEV)]), core.cat([a, small]))  # int8 promotes to the half type
    wide = core.tensor([[1e-4, 2, 3, 4, 5, 6.0]], dtype=core.float32)
    _same(core.cat([da, wide.to(DEV)]), core.cat([a, wide]))  # the half type promotes to float32
    _same(core.flip(da, (0, 1)), core.flip(a, (0, 1)))


@pytest.mark.parametrize("dtype", HALF)
def test_reductions(dtype):
    a, da = _pair(dtype, 40, 70, seed=4)
    tol = TOLERANCE[dtype]
    for reduce in (lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.mT.sum(1, keepdim=True), lambda x: x.mean(1),
                   lambda x: x[:, :8].prod(1)):
        got = reduce(da)
        assert got.device.type == "opencl" and got.dtype is getattr(core, dtype)
        np.testing.assert_allclose(got.cpu().float().numpy(), reduce(a).float().numpy(), **tol)
    for exact in (lambda x: x.amax(0), lambda x: x.amin(1), lambda x: x.argmax(1), lambda x: x.argmin(0),
                  lambda x: (x > 0).any(1), lambda x: (x > -4).all(0), lambda x: x.cummax(1).values,
                  lambda x: x.cummin(0).indices):
        _same(exact(da), exact(a))
    for scan in (lambda x: x.cumsum(1), lambda x: x.mT.cumsum(0), lambda x: x[:, :6].cumprod(1)):
        got = scan(da)
        assert got.device.type == "opencl" and got.dtype is getattr(core, dtype)
        np.testing.assert_allclose(got.cpu().float().numpy(), scan(a).float().numpy(), **tol)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("shapes", [((37, 45), (45, 29)), ((3, 1, 7, 16), (5, 16, 9))])
def test_matmul_accumulates_in_float32(dtype, shapes):
    (a, da), (b, db) = _pair(dtype, *shapes[0], seed=5), _pair(dtype, *shapes[1], seed=6)
    got = da @ db
    assert got.device.type == "opencl" and got.dtype is getattr(core, dtype)
    exact = a.double() @ b.double()  # the float64 product of the same half values
    np.testing.assert_allclose(got.cpu().double().numpy(), exact.numpy(), **TOLERANCE[dtype])
    np.testing.assert_allclose((db.mT @ da.mT).cpu().double().numpy(), exact.mT.numpy(), **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", HALF)
def test_autocast_mlp_forward_and_backward_on_the_device(dtype):
    half = getattr(core, dtype)
    core.manual_seed(0)
    model = core.nn.Sequential(core.nn.Linear(20, 32), core.nn.ReLU(), core.nn.Linear(32, 5))
    device_model = core.nn.Sequential(core.nn.Linear(20, 32), core.nn.ReLU(), core.nn.Linear(32, 5)).to(DEV)
    device_model.load_state_dict({k: v.to(DEV) for k, v in model.state_dict().items()})
    x, target = core.randn(16, 20), core.randint(0, 5, (16,))
    results = []
    for m, device, xs, ts in ((model, "cpu", x, target), (device_model, DEV, x.to(DEV), target.to(DEV))):
        with core.autocast(device, dtype=half):
            out = m(xs)
            assert out.dtype is half and out.device.type == device
            loss = core.nn.functional.cross_entropy(out, ts)
        loss.backward()
        results.append((out.detach().cpu().float(), [p.grad.cpu() for p in m.parameters()]))
    (out_cpu, grads_cpu), (out_dev, grads_dev) = results
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(out_dev.numpy(), out_cpu.numpy(), **tol)
    for g_dev, g_cpu in zip(grads_dev, grads_cpu):
        assert g_dev.dtype is core.float32  # the parameters stay float32
        np.testing.assert_allclose(g_dev.numpy(), g_cpu.numpy(), rtol=tol["rtol"] * 4, atol=tol["atol"] * 4)


def test_fused_graphs_with_half_values_run_their_ops():
    """core.jit's fused kernels declare variables of each step's type: half groups run op by op (no warning)."""
    import warnings

    def f(x, y):
        return core.tanh(x * y + 1) * 2

    a, da = _pair("float16", 8, 9, seed=7)
    b, db = _pair("float16", 8, 9, seed=8)
    traced = core.jit.trace(f, (da, db))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with core.no_grad():
            _same(traced(da, db), f(a, b))


@pytest.mark.parametrize("dtype", HALF)
def test_indexing_and_sorting(dtype):
    """Indexed copies move the 16 bits (NaN and -0.0 included); scatter's reductions and accumulating puts combine
    in float32 and round once, as the CPU reference; sort, topk and nonzero compare in float (NaN last)."""
    a, da = _pair(dtype, 6, 5, seed=11)
    special = core.tensor([float("nan"), -0.0, 0.0, float("inf")]).to(getattr(core, dtype))
    a[1, :4], a[3, 1] = special, float("-inf")
    da = a.to(DEV)
    rows = core.tensor([0, 2, 5, -1])
    cols = core.randint(0, 5, (6, 3), generator=core.Generator().manual_seed(12))
    (s, ds), (v, dv) = _pair(dtype, 6, 3, seed=13), _pair(dtype, 4, 5, seed=14)
    d_rows, d_cols = rows.to(DEV), cols.to(DEV)
    _same(da[d_rows], a[rows])
    _same(da[d_rows, 1:], a[rows, 1:])
    _same(da.index_select(1, d_rows[:2]), a.index_select(1, rows[:2]))
    _same(da.gather(1, d_cols), a.gather(1, cols))
    _same(da.masked_select(da > 0), a.masked_select(a > 0))
    _same(da.nonzero(), a.nonzero())

    def written(fn, target, *args, **kwargs):
        copy = target.clone()
        fn(copy, *args, **kwargs)
        return copy

    _same(written(lambda t: t.__setitem__(d_rows, 2.5), da), written(lambda t: t.__setitem__(rows, 2.5), a))
    _same(written(lambda t: t.index_put_((d_rows,), dv, accumulate=True), da),
          written(lambda t: t.index_put_((rows,), v, accumulate=True), a))
    _same(written(lambda t: t.scatter_(1, d_cols, ds), da), written(lambda t: t.scatter_(1, cols, s), a))
    _same(written(lambda t: t.scatter_add_(1, d_cols, ds), da), written(lambda t: t.scatter_add_(1, cols, s), a))
    for reduce in ("sum", "prod", "amax", "amin", "mean"):
        for include_self in (True, False):
            _same(written(core.Tensor.scatter_reduce_, da, 1, d_cols, ds, reduce, include_self=include_self),
                  written(core.Tensor.scatter_reduce_, a, 1, cols, s, reduce, include_self=include_self))
    for descending in (False, True):
        values, indices = da.sort(1, descending=descending)
        want_values, want_indices = a.sort(1, descending=descending)
        _same(values, want_values)
        _same(indices, want_indices)
    _same(da.topk(2, 1)[0], a.topk(2, 1)[0])
    _same(da.argsort(0), a.argsort(0))
