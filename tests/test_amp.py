"""core.amp: autocast's per-op dtypes (PyTorch's Autocast Op Reference), nesting, the weight-cast cache, gradients,
custom_fwd/custom_bwd, a backend's policy override, and GradScaler's skip / backoff / growth arithmetic."""

from __future__ import annotations

import pickle
import warnings

import ml_dtypes
import numpy as np
import pytest

import core
import core.nn as nn
import core.nn.functional as F
from core.amp import policy
from core.amp.state import STATE


def low_of(device) -> core.dtype:
    return core.get_autocast_dtype(device)


def rounded(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` rounded to a low-precision dtype and back to float64 (what a cast to it keeps)."""
    np_low = ml_dtypes.bfloat16 if dtype is core.bfloat16 else np.float16
    return a.astype(np_low).astype(np.float64)


def randn(rng, *shape, device, requires_grad=False):
    return core.tensor(rng.standard_normal(shape).astype(np.float32), device=device, requires_grad=requires_grad)


# -- per-op dtypes -------------------------------------------------------------------------------------------

def test_lower_precision_ops(device):
    rng = np.random.default_rng(0)
    x, w, b = randn(rng, 4, 3, device=device), randn(rng, 5, 3, device=device), randn(rng, 5, device=device)
    img, kernel = randn(rng, 1, 2, 5, 5, device=device), randn(rng, 3, 2, 3, 3, device=device)
    low = low_of(device)
    with core.autocast(device):
        outs = {"linear": F.linear(x, w, b), "matmul": x @ w.t(), "mm": core.mm(x, w.t()),
                "bmm": core.bmm(x.unsqueeze(0), w.t().unsqueeze(0))[0], "conv2d": F.conv2d(img, kernel),
                "conv_transpose1d": F.conv_transpose1d(img[:, :, 0], kernel[:, :, 0].transpose(0, 1)),
                "mixed matmul": x.to(low) @ w.t(),  # operands of different dtypes: both cast, as torch does
                "addmm": core.addmm(b, x, w.t()), "baddbmm": core.baddbmm(b, x.unsqueeze(0), w.t().unsqueeze(0))[0],
                "addbmm": core.addbmm(b, x.unsqueeze(0), w.t().unsqueeze(0)), "mv": core.mv(w, x[0]),
                "addmv": core.addmv(b, w, x[0])}
        if device != "cpu":
            outs["addr"] = core.addr(w, b, x[0])  # on CUDA's list only
        else:
            assert core.addr(w, b, x[0]).dtype is core.float32
    for name, out in outs.items():
        assert out.dtype is low, name
    expected = rounded(x.cpu().numpy(), low) @ rounded(w.cpu().numpy(), low).T
    np.testing.assert_allclose(outs["mm"].float().cpu().numpy(), expected, rtol=2e-2, atol=2e-2)
    for name in ("linear", "addmm", "baddbmm", "addbmm"):
        np.testing.assert_allclose(outs[name].float().cpu().numpy(), expected + rounded(b.cpu().numpy(), low),
                                   rtol=2e-2, atol=3e-2, err_msg=name)


def test_fp32_ops(device):
    rng = np.random.default_rng(0)
    low = low_of(device)
    x = randn(rng, 3, 4, device=device).to(low)
    target = core.tensor([0, 2, 1], device=device)
    with core.autocast(device):
        outs = {"prod": x.prod(), "cross_entropy": F.cross_entropy(x, target)}
        if device != "cpu":  # CUDA's list (every device type but cpu): reductions, exp/log, softmax
            outs.update(softmax=core.softmax(x, 1), log_softmax=F.log_softmax(x, 1), sum=x.sum(), exp=x.exp(),
                        log=x.abs().log(), pow=x ** 2, cumsum=x.cumsum(1))
    for name, out in outs.items():
        assert out.dtype is core.float32, name
    xs = x.float().cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(outs["prod"].item(), np.prod(xs), rtol=1e-5)
    logp = xs - np.log(np.exp(xs).sum(1, keepdims=True))
    np.testing.assert_allclose(outs["cross_entropy"].item(), -logp[[0, 1, 2], [0, 2, 1]].mean(), rtol=1e-5)
    if device != "cpu":
        np.testing.assert_allclose(outs["log_softmax"].cpu().numpy(), logp, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outs["sum"].item(), xs.sum(), rtol=1e-5)


def test_cpu_lists_leave_softmax_and_sum_alone():
    x = core.randn(3, 4).bfloat16()
    with core.autocast("cpu"):
        assert core.softmax(x, 1).dtype is core.bfloat16  # on CUDA's fp32 list, not on CPU's
        assert x.sum().dtype is core.bfloat16


def test_promote_ops(device):
    low = low_of(device)
    a, b = core.randn(3, device=device), core.randn(3, device=device)
    op = (lambda u, v: core.cat([u, v])) if device == "cpu" else core.atan2
    with core.autocast(device):
        assert op(a.to(low), b.to(low)).dtype is low
        mixed = op(a.to(low), b)
        assert mixed.dtype is core.float32
    expected = op(a.to(low).float(), b)
    np.testing.assert_allclose(mixed.cpu().numpy(), expected.cpu().numpy(), rtol=1e-6)


def test_unlisted_and_ineligible_calls_keep_their_dtypes(device):
    low = low_of(device)
    x = core.randn(2, 3, device=device)
    w64 = core.randn(4, 3, device=device, dtype=core.float64)
    with core.autocast(device):
        assert (x.to(low) + x).dtype is core.float32  # add is unlisted: ordinary promotion
        assert core.relu(x.to(low)).dtype is low
        assert F.linear(x.double(), w64).dtype is core.float64  # float64 is never cast
        assert core.mm(core.ones(2, 3, dtype=core.int64, device=device),
                       core.ones(3, 2, dtype=core.int64, device=device)).dtype is core.int64
        assert x.to(low).prod(dtype=core.float64).dtype is core.float64  # an explicit dtype= is respected
        y = x.clone()
        y.mul_(2)  # in-place ops are not eligible
        assert y.dtype is core.float32


# -- regions ---------------------------------------------------------------------------------------------------

def test_nesting_disabling_and_decorator(device):
    x, w = core.randn(2, 3, device=device), core.randn(4, 3, device=device)
    low = low_of(device)
    assert not core.is_autocast_enabled(device)
    with core.autocast(device):
        assert core.is_autocast_enabled(device)
        with core.autocast(device, enabled=False):
            assert not core.is_autocast_enabled(device)
            assert F.linear(x, w).dtype is core.float32
        with core.autocast(device, dtype=core.float16):
            assert core.get_autocast_dtype(device) is core.float16
            assert F.linear(x, w).dtype is core.float16
        assert core.get_autocast_dtype(device) is low
        assert F.linear(x, w).dtype is low
    assert not core.is_autocast_enabled(device)
    assert F.linear(x, w).dtype is core.float32

    @core.amp.autocast(device)
    def forward(a):
        return F.linear(a, w)

    assert forward(x).dtype is low
    assert not core.is_autocast_enabled(device)


def test_state_functions():
    assert core.get_autocast_dtype("cpu") is core.bfloat16 and core.get_autocast_dtype("cuda") is core.float16
    assert core.get_autocast_cpu_dtype() is core.bfloat16 and core.get_autocast_gpu_dtype() is core.float16
    core.set_autocast_enabled("cpu", True)
    try:
        assert core.is_autocast_enabled("cpu") and core.is_autocast_cpu_enabled()
        assert not core.is_autocast_enabled()  # no argument: cuda
        assert core.mm(core.ones(2, 2), core.ones(2, 2)).dtype is core.bfloat16
    finally:
        core.set_autocast_enabled("cpu", False)
    assert core.mm(core.ones(2, 2), core.ones(2, 2)).dtype is core.float32
    core.set_autocast_cpu_dtype(core.float16)
    try:
        assert core.get_autocast_dtype("cpu") is core.float16
    finally:
        STATE.dtype.pop("cpu")  # back to the backend's default
    assert core.autocast_increment_nesting() == 1 and core.autocast_decrement_nesting() == 0
    with pytest.raises(TypeError, match="device_type"):
        core.is_autocast_enabled(3)


def test_bad_arguments():
    with pytest.raises(ValueError, match="device_type"):
        core.autocast(1)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'nosuchdevice'"):
        core.autocast("nosuchdevice")
    assert not core.amp.is_autocast_available("nosuchdevice") and core.amp.is_autocast_available("cpu")
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        region = core.autocast("cpu", dtype=core.float32)
    with region:
        assert not core.is_autocast_enabled("cpu")
    if not core.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not core.amp.GradScaler().is_enabled()
        with pytest.warns(UserWarning, match="device_type of 'cuda', but CUDA is not available"):
            with core.autocast("cuda"):
                assert not core.is_autocast_enabled("cuda")


# -- the weight-cast cache -------------------------------------------------------------------------------------

def test_weight_cast_cache(device):
    x = core.randn(2, 3, device=device)
    w = core.randn(4, 3, device=device, requires_grad=True)
    with core.autocast(device):
        F.linear(x, w)
        cast = STATE.cache[id(w)][1]
        assert cast.dtype is low_of(device)
        F.linear(x, w)
        assert STATE.cache[id(w)][1] is cast and len(STATE.cache) == 1  # cast once per region; x is no leaf weight
        with core.autocast(device):
            pass
        assert id(w) in STATE.cache  # an inner region's exit keeps the outer region's casts
    assert not STATE.cache
    with core.autocast(device, cache_enabled=False):
        F.linear(x, w)
        assert not STATE.cache


# -- gradients -------------------------------------------------------------------------------------------------

def test_gradients_reach_float32_weights(device):
    rng = np.random.default_rng(0)
    x = randn(rng, 4, 3, device=device)
    w = randn(rng, 5, 3, device=device, requires_grad=True)
    low = low_of(device)
    with core.autocast(device):
        out = F.linear(x, w)
        loss = (out.float() ** 2).sum()
    loss.backward()
    assert w.grad.dtype is core.float32
    xr, wr = rounded(x.cpu().numpy(), low), rounded(w.detach().cpu().numpy(), low)
    expected = 2 * rounded(rounded(xr @ wr.T, low), low).T @ xr  # backward runs in the low dtype too
    np.testing.assert_allclose(w.grad.cpu().numpy(), expected, rtol=3e-2, atol=3e-2)


def test_float64_gradcheck_passes_through(device):
    x = core.randn(3, 2, dtype=core.float64, device=device)
    with core.autocast(device):
        assert core.autograd.gradcheck(lambda w: F.linear(x, w), (core.randn(4, 2, dtype=core.float64,
                                                                         device=device, requires_grad=True),))


class ScaledSquare(core.autograd.Function):
    """y = x * x * k, forward pinned to float32 by custom_fwd(cast_inputs=float32)."""

    @staticmethod
    @core.amp.custom_fwd(device_type="cpu", cast_inputs=core.float32)
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        ctx.inner_dtype = core.mm(x.reshape(1, -1), x.reshape(-1, 1)).dtype  # autocast is off inside
        return x * x * k

    @staticmethod
    @core.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        ctx.backward_autocast = core.is_autocast_enabled("cpu")
        return grad * 2 * x * ctx.k, None


def test_custom_fwd_and_bwd():
    x = core.tensor([1.5, -2.0, 0.25], requires_grad=True)
    with core.autocast("cpu"):
        y = ScaledSquare.apply(x.bfloat16(), 3.0)
    assert y.dtype is core.float32
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [9.0, -12.0, 1.5])
    assert y.grad_fn is not None
    with pytest.raises(ValueError, match="device_type"):
        core.amp.custom_fwd(device_type=None)


def test_custom_fwd_without_cast_keeps_autocast_for_backward():
    seen = {}

    class Double(core.autograd.Function):
        @staticmethod
        @core.amp.custom_fwd(device_type="cpu")
        def forward(ctx, x):
            seen["forward"] = core.is_autocast_enabled("cpu")
            return x * 2

        @staticmethod
        @core.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            seen["backward"] = core.is_autocast_enabled("cpu")
            return grad * 2

    x = core.ones(2, requires_grad=True)
    with core.autocast("cpu"):
        out = Double.apply(x)
    out.sum().backward()  # outside the region, backward still runs under the forward's autocast state
    assert seen == {"forward": True, "backward": True}


# -- a backend's override --------------------------------------------------------------------------------------

class FakeRuntime:
    autocast_dtypes = (core.float16,)
    autocast_policy = {"exp": policy.LOWER, "prod": None, "relu": policy.FP32}


def test_backend_policy_override(monkeypatch):
    monkeypatch.setattr(policy, "_runtime", lambda device_type: FakeRuntime())
    monkeypatch.setattr(policy, "_MERGED", {})
    monkeypatch.setattr(STATE, "dtype", {})
    assert core.get_autocast_dtype("cpu") is core.float16  # the backend's preferred dtype is the default
    x = core.randn(3)
    with core.autocast("cpu"):
        assert x.exp().dtype is core.float16
        assert x.prod().dtype is core.float32  # taken off the list: runs in its input dtype
        assert x.half().prod().dtype is core.float16
        assert core.relu(x.half()).dtype is core.float32
    with pytest.warns(UserWarning, match="only supports dtype of core.float16"):
        core.autocast("cpu", dtype=core.bfloat16)
    FakeRuntime.autocast_policy = {"exp": "fast"}
    monkeypatch.setattr(policy, "_MERGED", {})
    try:
        with pytest.raises(ValueError, match="'exp' has policy 'fast'"):
            policy.policy_for("cpu")
    finally:
        FakeRuntime.autocast_policy = {"exp": policy.LOWER, "prod": None, "relu": policy.FP32}


# -- GradScaler ------------------------------------------------------------------------------------------------

def one_param_step(scaler, opt, p, grad_value):
    """One iteration whose gradient of ``p`` is ``grad_value`` times the scale (inf/NaN stay inf/NaN)."""
    opt.zero_grad()
    loss = scaler.scale((p * core.tensor(float(grad_value), device=p.device)).sum())
    loss.backward()
    result = scaler.step(opt)
    scaler.update()
    return result


def test_grad_scaler_growth_and_backoff_sequence(device):
    p = core.ones(2, device=device, requires_grad=True)
    opt = core.optim.SGD([p], lr=0.1)
    scaler = core.amp.GradScaler(device, init_scale=8.0, growth_factor=2.0, backoff_factor=0.25,
                                 growth_interval=2)
    assert scaler.get_scale() == 8.0  # before the first scale()
    grads = [1.0, 1.0, 1.0, float("inf"), 1.0, float("nan"), 1.0, 1.0]
    scales, values, trackers = [], [], []
    for g in grads:
        one_param_step(scaler, opt, p, g)
        scales.append(scaler.get_scale())
        values.append(p[0].item())
        trackers.append(scaler.state_dict()["_growth_tracker"])
    # by hand: grow x2 after 2 clean steps in a row, x0.25 and a reset after a non-finite gradient
    assert scales == [8.0, 16.0, 16.0, 4.0, 4.0, 1.0, 1.0, 2.0]
    assert trackers == [1, 0, 1, 0, 1, 0, 1, 0]
    steps = np.cumsum([0.0 if not np.isfinite(g) else 0.1 * g for g in grads])
    np.testing.assert_allclose(values, 1.0 - steps, rtol=1e-6)


def test_grad_scaler_skips_step_on_inf(device):
    p = core.ones(3, device=device, requires_grad=True)
    opt = core.optim.SGD([p], lr=1.0)
    scaler = core.amp.GradScaler(device, init_scale=4.0)
    opt.zero_grad()
    scaler.scale(p.sum()).backward()
    p.grad[1] = float("inf")
    assert scaler.step(opt) is None  # skipped: torch returns None
    np.testing.assert_array_equal(p.detach().cpu().numpy(), [1.0, 1.0, 1.0])
    scaler.update()
    assert scaler.get_scale() == 2.0
    opt.zero_grad()
    scaler.scale(p.sum() * 3).backward()
    scaler.unscale_(opt)
    np.testing.assert_allclose(p.grad.cpu().numpy(), [3.0, 3.0, 3.0])  # unscaled: d(3 * sum)/dp
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    np.testing.assert_allclose(p.detach().cpu().numpy(), [-2.0, -2.0, -2.0])
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)


def test_grad_scaler_scale_structures_and_manual_update(device):
    scaler = core.amp.GradScaler(device, init_scale=3.0)
    a, b = core.ones(2, device=device), core.full((1,), 2.0, device=device)
    out = scaler.scale([a, (b,)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    np.testing.assert_allclose(out[1][0].cpu().numpy(), [6.0])
    with pytest.raises(ValueError, match="outputs must be a Tensor"):
        scaler.scale(5)
    scaler.update(new_scale=10.0)
    assert scaler.get_scale() == 10.0
    scaler.update(new_scale=core.tensor([5.0], device=device))
    assert scaler.get_scale() == 5.0
    with pytest.raises(RuntimeError, match="No inf checks were recorded"):
        scaler.update()
    with pytest.raises(RuntimeError, match="Attempted step but _scale is None"):
        core.amp.GradScaler(device).step(core.optim.SGD([core.ones(1, requires_grad=True)], lr=1.0))


def test_grad_scaler_state_dict_round_trip(device):
    p = core.ones(1, device=device, requires_grad=True)
    opt = core.optim.SGD([p], lr=0.1)
    scaler = core.amp.GradScaler(device, init_scale=16.0, growth_interval=5)
    for g in (1.0, float("inf"), 1.0):
        one_param_step(scaler, opt, p, g)
    state = scaler.state_dict()
    assert state == {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                     "_growth_tracker": 1}
    fresh = core.amp.GradScaler(device)
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state
    restored = pickle.loads(pickle.dumps(scaler))
    assert restored.state_dict() == state
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        fresh.load_state_dict({})
    disabled = core.amp.GradScaler(device, enabled=False)
    assert disabled.state_dict() == {} and disabled.get_scale() == 1.0 and not disabled.is_enabled()
    assert disabled.scale(p) is p
    with pytest.raises(ValueError, match="growth factor must be > 1.0"):
        core.amp.GradScaler(device, growth_factor=0.5)


def test_grad_scaler_refuses_float16_gradients():
    p = core.ones(2, dtype=core.float16, requires_grad=True)
    opt = core.optim.SGD([p], lr=0.1)
    scaler = core.amp.GradScaler("cpu", init_scale=2.0)
    scaler.scale(p.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.step(opt)


# -- training ----------------------------------------------------------------------------------------------

def train_mlp(device, mixed: bool, steps: int = 60) -> float:
    rng = np.random.default_rng(0)
    x = core.tensor(rng.standard_normal((64, 8)).astype(np.float32), device=device)
    target = core.tensor((rng.standard_normal((64, 8)) @ rng.standard_normal(8) > 0).astype(np.int64),
                         device=device)
    core.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    opt = core.optim.SGD(model.parameters(), lr=0.5)
    scaler = core.amp.GradScaler(device, enabled=mixed)
    for _ in range(steps):
        opt.zero_grad()
        with core.autocast(device, dtype=core.bfloat16, enabled=mixed):
            logits = model(x)
            loss = F.cross_entropy(logits, target)
        assert logits.dtype is (core.bfloat16 if mixed else core.float32)
        assert loss.dtype is core.float32  # cross_entropy is on both fp32 lists
        scaler.scale(loss).backward()
        assert all(p.grad.dtype is core.float32 for p in model.parameters())
        scaler.step(opt)
        scaler.update()
    with core.no_grad():
        return F.cross_entropy(model(x), target).item()


def test_mixed_precision_training_matches_float32(device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a backend without bfloat16 GEMM falls back to the CPU
        full, mixed = train_mlp(device, False), train_mlp(device, True)
    print(f"final loss on {device}: float32 {full:.4f}, bfloat16 autocast {mixed:.4f}")
    assert full < 0.3  # it learned
    assert abs(mixed - full) < 0.05


# -- torch's deprecated per-device names ----------------------------------------------------------------------

def test_deprecated_device_amp_names():
    with pytest.warns(FutureWarning, match=r"Please use `core.amp.autocast\('cpu', args...\)`"):
        region = core.cpu.amp.autocast()
    with region:
        assert core.is_autocast_enabled("cpu") and core.get_autocast_dtype("cpu") is core.bfloat16
    with pytest.warns(FutureWarning, match="core.cpu.amp.GradScaler"):
        scaler = core.cpu.amp.GradScaler(init_scale=4.0)
    assert isinstance(scaler, core.amp.GradScaler) and scaler.get_scale() == 4.0
    assert issubclass(core.cuda.amp.autocast, core.autocast)
    with pytest.warns(FutureWarning, match="core.cuda.amp.custom_fwd"):
        core.cuda.amp.custom_fwd(cast_inputs=core.float32)
    assert not hasattr(core.opencl, "amp")


@pytest.mark.parametrize("device_type, is_enabled, set_enabled, get_dtype, set_dtype", [
    ("cpu", core.is_autocast_cpu_enabled, core.set_autocast_cpu_enabled, core.get_autocast_cpu_dtype,
     core.set_autocast_cpu_dtype),
    ("cuda", core.is_autocast_enabled, core.set_autocast_enabled, core.get_autocast_gpu_dtype,
     core.set_autocast_gpu_dtype),
    ("ipu", core.is_autocast_ipu_enabled, core.set_autocast_ipu_enabled, core.get_autocast_ipu_dtype,
     core.set_autocast_ipu_dtype),
    ("xla", core.is_autocast_xla_enabled, core.set_autocast_xla_enabled, core.get_autocast_xla_dtype,
     core.set_autocast_xla_dtype),
])
def test_legacy_per_device_state_functions(device_type, is_enabled, set_enabled, get_dtype, set_dtype):
    default = core.bfloat16 if device_type == "cpu" else core.float16
    assert get_dtype() is default and not is_enabled()
    set_enabled(True)
    set_dtype(core.bfloat16 if default is core.float16 else core.float16)
    try:
        assert is_enabled() and core.is_autocast_enabled(device_type)
        assert get_dtype() is not default and core.get_autocast_dtype(device_type) is get_dtype()
    finally:
        set_enabled(False)
        core.set_autocast_dtype(device_type, default)
    assert not core.is_autocast_enabled(device_type) and get_dtype() is default
    STATE.dtype.pop(device_type)
    with pytest.raises(TypeError, match="must be core.dtype"):
        core.set_autocast_dtype(device_type, "float16")


def test_cache_state_functions():
    w = core.randn(4, 3, requires_grad=True)
    assert core.is_autocast_cache_enabled()
    core.set_autocast_cache_enabled(False)
    try:
        with core.autocast("cpu"):  # a region started with cache_enabled=None follows the thread's setting
            F.linear(core.randn(2, 3), w)
            assert not STATE.cache
    finally:
        core.set_autocast_cache_enabled(True)
    with core.autocast("cpu"):
        F.linear(core.randn(2, 3), w)
        assert id(w) in STATE.cache
        core.clear_autocast_cache()
        assert not STATE.cache


def test_a_cpu_scalar_does_not_decide_the_device_type(device):
    if device == "cpu":
        pytest.skip("needs a second device type")
    x = core.randn(3, device=device).to(low_of(device))
    with core.autocast(device):
        assert core.pow(core.tensor(2.0), x).dtype is core.float32  # pow: on the fp32 list of CUDA's lists
        # a 0-d CPU tensor is not eligible on another device type: the promotion ignores it, as torch's does
        assert core.atan2(core.tensor(0.5), x).dtype is low_of(device)
