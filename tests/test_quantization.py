"""Quantized tensors against NumPy's reference formulas on every device: quantize/dequantize per tensor and per
channel, the quantized dtypes and schemes, the queries, printing, fake quantization and its straight-through
gradient, and the clear errors for wrong arguments and for ordinary ops given a quantized tensor."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import core

QRANGE = {core.qint8: (-128, 127), core.quint8: (0, 255), core.qint32: (-(2 ** 31), 2 ** 31 - 1),
          core.quint4x2: (0, 15), core.quint2x4: (0, 3)}
STORAGE = {core.qint8: np.int8, core.quint8: np.uint8, core.qint32: np.int32, core.quint4x2: np.uint8,
           core.quint2x4: np.uint8}


def _rng():
    return np.random.default_rng(0)


def _np(t):
    return t.detach().cpu().numpy()


def _ref_quantize(x, scale, zero_point, qmin, qmax):
    """ATen's quantize_val: round-half-even of x times the float32 inverse scale, plus the zero point, clamped."""
    inv = np.float32(1.0) / np.asarray(scale, dtype=np.float32)
    return np.clip(np.rint(x.astype(np.float32) * inv) + zero_point, qmin, qmax)


# -- dtypes and schemes --------------------------------------------------------------------------------------

def test_quantized_dtypes_and_schemes():
    for d in QRANGE:
        assert not d.is_floating_point and not d.is_complex
        assert repr(d) == f"core.{d.name}"
        assert pickle.loads(pickle.dumps(d)) is d
    assert core.qint8.is_signed and core.qint32.is_signed and not core.quint8.is_signed
    assert core.qint32.itemsize == 4 and core.quint8.itemsize == 1
    assert repr(core.per_tensor_affine) == "core.per_tensor_affine"
    assert isinstance(core.per_channel_affine_float_qparams, core.qscheme)
    assert pickle.loads(pickle.dumps(core.per_channel_symmetric)) is core.per_channel_symmetric
    with pytest.raises(RuntimeError, match="Promotion"):
        core.promote_types(core.qint8, core.float32)


# -- quantize and dequantize -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", list(QRANGE))
def test_quantize_per_tensor_matches_numpy(device, dtype):
    x = _rng().uniform(-3, 3, size=(4, 5)).astype(np.float32)
    qmin, qmax = QRANGE[dtype]
    scale, zero_point = 0.05, (qmin + qmax + 1) // 2 if dtype is not core.qint32 else 7
    q = core.quantize_per_tensor(core.tensor(x, device=device), scale, zero_point, dtype)
    assert q.is_quantized and q.dtype is dtype and q.shape == (4, 5) and q.device.type == device
    assert q.qscheme() is core.per_tensor_affine
    assert q.q_scale() == scale and q.q_zero_point() == zero_point
    assert core.q_scale(q) == scale and core.q_zero_point(q) == zero_point
    expected = _ref_quantize(x, scale, zero_point, qmin, qmax)
    r = q.int_repr()
    assert r.dtype == core.dtypes.from_numpy_dtype(STORAGE[dtype]) and not r.is_quantized
    np.testing.assert_array_equal(_np(r), expected.astype(STORAGE[dtype]))
    np.testing.assert_array_equal(_np(core.int_repr(q)), _np(r))
    d = q.dequantize()
    assert d.dtype is core.float32 and not d.is_quantized
    np.testing.assert_allclose(_np(d), ((expected - zero_point) * scale).astype(np.float32), rtol=1e-6)
    np.testing.assert_array_equal(_np(core.dequantize(q)), _np(d))


def test_round_trip_error_within_half_scale(device):
    x = _rng().uniform(-1.2, 1.2, size=1000).astype(np.float32)  # inside qint8's range for every scale
    for scale in (0.01, 0.02, 0.3):
        q = core.quantize_per_tensor(core.tensor(x, device=device), scale, 0, core.qint8)
        assert np.abs(_np(q.dequantize()) - x).max() <= scale / 2 + 1e-6


def test_rounding_is_half_to_even_and_clamped(device):
    x = core.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 1000.0, -1000.0], device=device)
    q = core.quantize_per_tensor(x, 1.0, 0, core.qint8)
    assert q.int_repr().tolist() == [0, 2, 2, 0, -2, 127, -128]
    q4 = core.quantize_per_tensor(x, 1.0, 3, core.quint4x2)
    assert q4.int_repr().tolist() == [3, 5, 5, 3, 1, 15, 0]
    q32 = core.quantize_per_tensor(x, 1.0, 2 ** 30 + 1, core.qint32)  # exact beyond float32's 2**24
    assert q32.int_repr().tolist() == [2 ** 30 + 1, 2 ** 30 + 3, 2 ** 30 + 3, 2 ** 30 + 1, 2 ** 30 - 1,
                                       2 ** 30 + 1001, 2 ** 30 - 999]
    q2 = core.quantize_per_tensor(x, 1.0, 1, core.quint2x4)
    assert q2.int_repr().tolist() == [1, 3, 3, 1, 0, 3, 0]


def test_quantize_per_tensor_tensor_qparams_and_lists(device):
    x = _rng().normal(size=6).astype(np.float32)
    t = core.tensor(x, device=device)
    a = core.quantize_per_tensor(t, core.tensor(0.1), core.tensor(3), core.quint8)
    b = core.quantize_per_tensor(t, 0.1, 3, core.quint8)
    assert a.q_scale() == pytest.approx(0.1) and a.q_zero_point() == 3
    np.testing.assert_array_equal(_np(a.int_repr()), _np(b.int_repr()))
    qs = core.quantize_per_tensor([t, t * 2], core.tensor([0.1, 0.2]), core.tensor([0, 5]), core.qint8)
    assert [q.q_zero_point() for q in qs] == [0, 5]
    for q, y, s, z in zip(qs, (x, x * 2), (0.1, 0.2), (0, 5)):
        np.testing.assert_array_equal(_np(q.int_repr()), _ref_quantize(y, s, z, -128, 127))
    ds = core.dequantize(qs)
    assert len(ds) == 2 and all(d.dtype is core.float32 for d in ds)
    assert core.quantize_per_tensor(a, 0.5, 0, core.qint8) is a  # already quantized: returned as is


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_quantize_per_channel_matches_numpy(device, axis):
    rng = _rng()
    x = rng.uniform(-2, 2, size=(3, 4, 5)).astype(np.float32)
    n = x.shape[axis]
    scales = rng.uniform(0.01, 0.1, size=n)
    points = rng.integers(-10, 10, size=n)
    q = core.quantize_per_channel(core.tensor(x, device=device), core.tensor(scales), core.tensor(points), axis,
                                  core.qint8)
    assert q.qscheme() is core.per_channel_affine and q.q_per_channel_axis() == axis
    assert core.q_per_channel_axis(q) == axis
    assert q.q_per_channel_scales().dtype is core.float64 and q.q_per_channel_zero_points().dtype is core.int64
    np.testing.assert_array_equal(_np(core.q_per_channel_scales(q)), scales)
    np.testing.assert_array_equal(_np(core.q_per_channel_zero_points(q)), points)
    shape = [1, 1, 1]
    shape[axis] = n
    expected = _ref_quantize(x, scales.reshape(shape), points.reshape(shape), -128, 127)
    np.testing.assert_array_equal(_np(q.int_repr()), expected.astype(np.int8))
    deq = (expected - points.reshape(shape)).astype(np.float32) * scales.reshape(shape).astype(np.float32)
    np.testing.assert_allclose(_np(q.dequantize()), deq, rtol=1e-6)
    assert np.abs(_np(q.dequantize()) - x).max() <= scales.max() / 2 + 1e-6


def test_quantize_per_channel_float_qparams(device):
    x = _rng().uniform(0, 1, size=(2, 6)).astype(np.float32)
    scales, points = np.array([0.1, 0.07]), np.array([0.5, -1.25], dtype=np.float32)
    q = core.quantize_per_channel(core.tensor(x, device=device), core.tensor(scales), core.tensor(points), 0,
                                  core.quint8)
    assert q.qscheme() is core.per_channel_affine_float_qparams
    inv = (np.float32(1) / scales.astype(np.float32))[:, None]
    expected = np.clip(np.rint(x * inv + points[:, None]), 0, 255)
    np.testing.assert_array_equal(_np(q.int_repr()), expected)
    np.testing.assert_allclose(_np(q.dequantize()), (expected - points[:, None]) * scales[:, None], rtol=1e-6)


def test_quantize_per_tensor_dynamic(device):
    x = np.array([-1.0, 0.0, 1.0, 2.0, 0.25], dtype=np.float32)
    q = core.quantize_per_tensor_dynamic(core.tensor(x, device=device), core.qint8, False)
    # ATen's ChooseQuantizationParams by hand: scale = (2 - -1) / 255; zero point from the max side: 127 - 2/scale
    scale = 3.0 / 255
    assert q.q_scale() == pytest.approx(scale) and q.q_zero_point() == -43
    np.testing.assert_array_equal(_np(q.int_repr()), _ref_quantize(x, scale, -43, -128, 127))
    u = core.quantize_per_tensor_dynamic(core.tensor(x, device=device), core.quint8, True)  # reduce_range: [0, 127]
    assert u.q_scale() == pytest.approx(3.0 / 127) and u.q_zero_point() == 42
    positive = core.quantize_per_tensor_dynamic(core.tensor([1.0, 3.0], device=device), core.quint8, False)
    assert positive.q_zero_point() == 0 and positive.q_scale() == pytest.approx(3.0 / 255)
    assert core.quantize_per_tensor_dynamic(core.tensor(x), core.float16, False).dtype is core.float16


def test_dequantize_of_a_float_tensor_is_float32(device):
    t = core.tensor([1.5, 2.0], dtype=core.float64, device=device)
    assert t.dequantize().dtype is core.float32 and t.dequantize().tolist() == [1.5, 2.0]


# -- the quantized tensor as a Tensor ------------------------------------------------------------------------

def test_printing_like_pytorch():
    q = core.quantize_per_tensor(core.tensor([-1.0, 0.0, 1.0, 2.0]), 0.1, 10, core.quint8)
    assert repr(q) == ("tensor([-1.,  0.,  1.,  2.], size=(4,), dtype=core.quint8,\n"
                       "       quantization_scheme=core.per_tensor_affine, scale=0.1, zero_point=10)")
    p = core.quantize_per_channel(core.tensor([[-1.0, 0.0], [1.0, 2.0]]), core.tensor([0.1, 0.01]),
                                  core.tensor([10, 0]), 0, core.quint8)
    assert repr(p) == ("tensor([[-1.,  0.],\n        [ 1.,  2.]], size=(2, 2), dtype=core.quint8,\n"
                       "       quantization_scheme=core.per_channel_affine,\n"
                       "       scale=tensor([0.1000, 0.0100], dtype=core.float64),\n"
                       "       zero_point=tensor([10,  0]), axis=0)")
    assert p.int_repr().tolist() == [[0, 10], [100, 200]]


def test_ordinary_ops_on_a_quantized_tensor_raise(device):
    q = core.quantize_per_tensor(core.tensor([1.0, 2.0], device=device), 0.1, 0, core.qint8)
    backend = "Quantized" + (device.upper() if device in ("cpu", "cuda") else device.capitalize())  # QuantizedCUDA
    for fn in (lambda: q + 1, lambda: q.sum(), lambda: core.exp(q), lambda: core.stack([q, q]), lambda: q * q):
        with pytest.raises(NotImplementedError, match=f"could not run with arguments from the '{backend}' backend"):
            fn()
    with pytest.raises(TypeError, match="QInt8"):
        q.numpy()
    assert not core.tensor([1.0]).is_quantized and q.is_quantized


def test_clone_copy_pickle_and_values():
    import copy

    q = core.quantize_per_channel(core.tensor([[0.5, 1.0], [2.0, 3.0]]), core.tensor([0.5, 0.25]),
                                  core.tensor([1, 2]), 1, core.quint8)
    for other in (q.clone(), copy.deepcopy(q), pickle.loads(pickle.dumps(q))):
        assert other.qscheme() is q.qscheme() and other.q_per_channel_axis() == 1
        assert other.int_repr().tolist() == q.int_repr().tolist()
    assert q.tolist() == [[0.5, 1.0], [2.0, 3.0]]
    assert core.quantize_per_tensor(core.tensor(1.0), 0.5, 0, core.qint8).item() == 1.0


def test_quantization_errors():
    x = core.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"quantize_per_tensor\(\): dtype must be one of"):
        core.quantize_per_tensor(x, 0.1, 0, core.int8)
    with pytest.raises(RuntimeError, match="expected a floating-point input"):
        core.quantize_per_tensor(core.tensor([1, 2]), 0.1, 0, core.qint8)
    with pytest.raises(RuntimeError, match="zero_point 300 is out of range"):
        core.quantize_per_tensor(x, 0.1, 300, core.quint8)
    with pytest.raises(RuntimeError, match="scale must be a positive"):
        core.quantize_per_tensor(x, 0.0, 0, core.quint8)
    m = core.ones(2, 3)
    with pytest.raises(RuntimeError, match="axis 2 is out of range"):
        core.quantize_per_channel(m, core.ones(3), core.zeros(3, dtype=core.int64), 2, core.qint8)
    with pytest.raises(RuntimeError, match=r"expected 3 scales and zero_points \(the size of axis 1\), got 2"):
        core.quantize_per_channel(m, core.ones(2), core.zeros(2, dtype=core.int64), 1, core.qint8)
    with pytest.raises(RuntimeError, match="'scales' must be a 1-D tensor"):
        core.quantize_per_channel(m, core.ones(1, 2), core.zeros(2, dtype=core.int64), 0, core.qint8)
    with pytest.raises(RuntimeError, match="quantize_per_tensor_dynamic"):
        core.quantize_per_tensor_dynamic(x, core.qint32, False)
    q = core.quantize_per_tensor(x, 0.1, 0, core.qint8)
    with pytest.raises(RuntimeError, match=r"q_per_channel_scales\(\): expected a per-channel quantized tensor"):
        q.q_per_channel_scales()
    p = core.quantize_per_channel(m, core.ones(2), core.zeros(2, dtype=core.int64), 0, core.qint8)
    with pytest.raises(RuntimeError, match=r"q_scale\(\): expected a per-tensor quantized tensor"):
        p.q_scale()
    for fn in (lambda: x.int_repr(), lambda: x.q_scale(), lambda: x.qscheme(), lambda: core.q_per_channel_axis(x)):
        with pytest.raises(NotImplementedError, match="'CPU' backend: expected a quantized tensor"):
            fn()


# -- fake quantization ----------------------------------------------------------------------------------------

def _ref_fake_quant(x, scale, zero_point, qmin, qmax):
    inv = np.float32(1.0) / np.asarray(scale, dtype=np.float32)
    q = np.rint(x * inv + zero_point)
    return (np.clip(q, qmin, qmax) - zero_point) * np.asarray(scale, dtype=np.float32), (q >= qmin) & (q <= qmax)


def _away_from_boundaries(rng, shape, scale):
    """Values whose x / scale lies at least 0.1 from a rounding boundary (k + 0.5)."""
    return (rng.integers(-40, 40, size=shape) + rng.uniform(-0.4, 0.4, size=shape)) * scale


def test_fake_quantize_per_tensor_matches_numpy_with_straight_through_mask(device):
    rng = _rng()
    x = _away_from_boundaries(rng, (5, 6), 0.1).astype(np.float32)
    t = core.tensor(x, device=device, requires_grad=True)
    y = core.fake_quantize_per_tensor_affine(t, 0.1, 3, -20, 20)
    expected, mask = _ref_fake_quant(x, 0.1, 3, -20, 20)
    assert y.dtype is core.float32 and 0 < mask.sum() < mask.size
    np.testing.assert_allclose(_np(y), expected, rtol=1e-6, atol=1e-7)
    g = rng.normal(size=x.shape).astype(np.float32)
    y.backward(core.tensor(g, device=device))
    np.testing.assert_array_equal(_np(t.grad), g * mask)
    same = core.fake_quantize_per_tensor_affine(t, core.tensor(0.1), core.tensor(3, dtype=core.int32), -20, 20)
    np.testing.assert_array_equal(_np(same), _np(y))


@pytest.mark.parametrize("axis", [0, 1])
def test_fake_quantize_per_channel_matches_numpy(device, axis):
    rng = _rng()
    scales = np.array([0.1, 0.2, 0.05], dtype=np.float32)
    shape = [1, 1]
    shape[axis] = 3
    x = _away_from_boundaries(rng, (3, 3), scales.reshape(shape)).astype(np.float32)
    points = np.array([0, 5, -3], dtype=np.int32)
    t = core.tensor(x, device=device, requires_grad=True)
    y = core.fake_quantize_per_channel_affine(t, core.tensor(scales, device=device),
                                              core.tensor(points, device=device), axis, -25, 25)
    expected, mask = _ref_fake_quant(x, scales.reshape(shape), points.reshape(shape), -25, 25)
    np.testing.assert_allclose(_np(y), expected, rtol=1e-6, atol=1e-7)
    y.sum().backward()
    np.testing.assert_array_equal(_np(t.grad), mask.astype(np.float32))


def test_fake_quantize_straight_through_gradient_float64(device):
    """The straight-through estimator is not the (zero almost everywhere) derivative of the step function, so a
    finite-difference gradcheck cannot apply; the float64 gradient is checked exactly against the mask instead."""
    rng = _rng()
    x = _away_from_boundaries(rng, (4, 3), 0.25)
    t = core.tensor(x, dtype=core.float64, device=device, requires_grad=True)
    y = core.fake_quantize_per_tensor_affine(t, 0.25, 0, -30, 30)
    assert y.dtype is core.float64
    expected, mask = _ref_fake_quant(x, 0.25, 0, -30, 30)
    np.testing.assert_allclose(_np(y), expected, rtol=1e-12)
    (grad,) = core.autograd.grad(y.sum(), t)
    np.testing.assert_array_equal(_np(grad), mask.astype(np.float64))
    scales = core.tensor([0.25, 0.5, 0.125], dtype=core.float64, device=device)
    points = core.tensor([0, 1, -1], dtype=core.int32, device=device)
    y = core.fake_quantize_per_channel_affine(t, scales, points, 1, -30, 30)
    _, mask = _ref_fake_quant(x, np.array([[0.25, 0.5, 0.125]]), np.array([[0, 1, -1]]), -30, 30)
    assert 0 < mask.sum() < mask.size
    (grad,) = core.autograd.grad(y.sum(), t)
    np.testing.assert_array_equal(_np(grad), mask.astype(np.float64))


def test_fake_quantize_errors():
    x = core.ones(2, 3)
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or equal to `quant_max`"):
        core.fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 1)
    with pytest.raises(RuntimeError, match="`zero_point` must be between `quant_min` and `quant_max`"):
        core.fake_quantize_per_tensor_affine(x, 0.1, 10, 0, 5)
    with pytest.raises(RuntimeError, match="`axis` must be between 0 and number of dimensions of input"):
        core.fake_quantize_per_channel_affine(x, core.ones(3), core.zeros(3, dtype=core.int32), 2, 0, 5)
    with pytest.raises(RuntimeError, match="not consistent with input tensor"):
        core.fake_quantize_per_channel_affine(x, core.ones(2), core.zeros(2, dtype=core.int32), 1, 0, 5)
    with pytest.raises(RuntimeError, match="expected a floating-point input"):
        core.fake_quantize_per_tensor_affine(core.ones(2, dtype=core.int64), 0.1, 0, 0, 5)


# -- observers and parameter search ---------------------------------------------------------------------------

def _ref_choose_qparams(lo, hi, qmin, qmax, symmetric=False):
    """ATen's ChooseQuantizationParams for a range that needs no small-scale cut-off."""
    lo, hi = np.float32(lo), np.float32(hi)
    if symmetric and lo < 0 < hi:
        sq_min, sq_max = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        s = max(abs(lo / sq_min), abs(hi / sq_max))
        lo, hi = np.float32(s * sq_min), np.float32(s * sq_max)
    lo, hi = min(lo, np.float32(0)), max(hi, np.float32(0))
    scale = (float(hi) - float(lo)) / (qmax - qmin)
    zp_min, zp_max = qmin - float(lo) / scale, qmax - float(hi) / scale
    zp = zp_min if abs(qmin) - abs(float(lo) / scale) < abs(qmax) - abs(float(hi) / scale) else zp_max
    if symmetric and lo < 0 < hi:
        zp = (qmin + qmax) / 2
    return scale, int(np.clip(np.rint(zp), qmin, qmax))


@pytest.mark.parametrize("symmetric", [False, True])
def test_fused_moving_avg_obs_fake_quant_per_tensor(device, symmetric):
    rng = _rng()
    running_min = core.tensor([np.inf], device=device)
    running_max = core.tensor([-np.inf], device=device)
    scale, zero_point = core.ones(1, device=device), core.zeros(1, dtype=core.int32, device=device)
    on = core.tensor([1], device=device)
    ref_min = ref_max = None
    for step in range(3):
        x = rng.normal(size=(4, 5)).astype(np.float32) + step
        t = core.tensor(x, device=device, requires_grad=True)
        y = core.fused_moving_avg_obs_fake_quant(t, on, on, running_min, running_max, scale, zero_point, 0.01, -128,
                                                 127, 0, False, symmetric)
        ref_min = x.min() if ref_min is None else np.float32(ref_min + np.float32(0.01) * (x.min() - ref_min))
        ref_max = x.max() if ref_max is None else np.float32(ref_max + np.float32(0.01) * (x.max() - ref_max))
        np.testing.assert_allclose(_np(running_min), [ref_min], rtol=1e-6)
        np.testing.assert_allclose(_np(running_max), [ref_max], rtol=1e-6)
        s, z = _ref_choose_qparams(ref_min, ref_max, -128, 127, symmetric)
        np.testing.assert_allclose(_np(scale), [s], rtol=1e-6)
        assert zero_point.tolist() == [z]
        expected, mask = _ref_fake_quant(x, s, z, -128, 127)
        np.testing.assert_allclose(_np(y), expected, rtol=1e-5, atol=1e-6)
        y.sum().backward()
        np.testing.assert_array_equal(_np(t.grad), mask.astype(np.float32))
    off = core.tensor([0], device=device)
    x = core.tensor(rng.normal(size=3).astype(np.float32), device=device)
    before = running_min.tolist()
    out = core.fused_moving_avg_obs_fake_quant(x, off, off, running_min, running_max, scale, zero_point, 0.01, -128,
                                               127, 0)
    assert running_min.tolist() == before and out.tolist() == x.tolist()


def test_fused_moving_avg_obs_fake_quant_per_row(device):
    x = _rng().normal(size=(3, 8)).astype(np.float32)
    running_min, running_max = core.empty(0, device=device), core.empty(0, device=device)
    scale, zero_point = core.empty(0, device=device), core.empty(0, dtype=core.int32, device=device)
    on = core.tensor([1], device=device)
    y = core.fused_moving_avg_obs_fake_quant(core.tensor(x, device=device), on, on, running_min, running_max, scale,
                                             zero_point, 0.01, 0, 255, 0, True, False)
    np.testing.assert_array_equal(_np(running_min), x.min(1))
    np.testing.assert_array_equal(_np(running_max), x.max(1))
    params = [_ref_choose_qparams(lo, hi, 0, 255) for lo, hi in zip(x.min(1), x.max(1))]
    np.testing.assert_allclose(_np(scale), [p[0] for p in params], rtol=1e-6)
    assert zero_point.tolist() == [p[1] for p in params]
    expected, _ = _ref_fake_quant(x, np.float32([p[0] for p in params])[:, None],
                                  np.array([p[1] for p in params])[:, None], 0, 255)
    np.testing.assert_allclose(_np(y), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="ch_axis must be < self.dim()"):
        core.fused_moving_avg_obs_fake_quant(core.tensor(x), on, on, running_min, running_max, scale, zero_point,
                                             0.01, 0, 255, 2)


def _ref_quant_loss(x, xmin, xmax, bit_width):
    xmin = np.float32(np.float16(xmin))
    qmax = np.float32((1 << bit_width) - 1)
    rng_ = np.float32(xmax - xmin)
    scale = np.float32(1) if rng_ == 0 else np.float32(np.float16(rng_ / qmax))
    q = np.clip(np.rint((x - xmin) * (np.float32(1) / scale)), 0, qmax) * scale + xmin
    return np.float32(np.sqrt(np.sum((x - q) ** 2, dtype=np.float64)))


def _ref_choose_qparams_optimized(x, n_bins, ratio, bit_width):
    """ATen's greedy search, step by step."""
    f = np.float32
    xmin, xmax = f(x.min()), f(x.max())
    step = f((xmax - xmin) / f(n_bins))
    thr = f(int(n_bins * (1.0 - float(f(ratio)))) * step)
    best = cur = _ref_quant_loss(x, xmin, xmax, bit_width)
    lo, hi = xmin, xmax
    while f(lo + thr) < hi:
        left, right = _ref_quant_loss(x, f(lo + step), hi, bit_width), _ref_quant_loss(x, lo, f(hi - step), bit_width)
        if cur < left and cur < right and cur < best:
            best, xmin, xmax = cur, lo, hi
        if left < right:
            lo, cur = f(lo + step), left
        else:
            hi, cur = f(hi - step), right
    return xmax, xmin


@pytest.mark.parametrize("bit_width", [4, 2])
def test_choose_qparams_optimized(device, bit_width):
    x = _rng().normal(size=64).astype(np.float32)
    x[:3] = [6.0, -5.0, 4.5]  # outliers a narrower range should cut
    xmax, xmin = core.choose_qparams_optimized(core.tensor(x, device=device), 64, 200, 0.16, bit_width)
    assert xmax.shape == (1,) and xmax.dtype is core.float32
    ref_max, ref_min = _ref_choose_qparams_optimized(x, 200, 0.16, bit_width)
    assert (xmax.item(), xmin.item()) == (float(ref_max), float(ref_min))
    if bit_width == 4:  # with this seed the search finds a narrower range than the data's for 4 bits
        assert xmax.item() < 6.0 or xmin.item() > -5.0
    assert _ref_quant_loss(x, ref_min, ref_max, bit_width) <= _ref_quant_loss(x, x.min(), x.max(), bit_width)


# -- quantized ops ------------------------------------------------------------------------------------------------

def test_empty_quantized(device):
    q = core.quantize_per_tensor(core.ones(2, device=device), 0.5, 3, core.quint8)
    e = core.empty_quantized([3, 4], q)
    assert e.shape == (3, 4) and e.dtype is core.quint8 and e.q_scale() == 0.5 and e.q_zero_point() == 3
    assert e.device.type == device
    p = core.quantize_per_channel(core.ones(2, 3), core.tensor([0.1, 0.2], dtype=core.float64), core.tensor([0, 1]), 0,
                                  core.qint8)
    e = core.empty_quantized([2, 5], p)
    assert e.q_per_channel_axis() == 0 and e.q_per_channel_scales().tolist() == [0.1, 0.2]
    with pytest.raises(RuntimeError, match="2 channels along axis 0"):
        core.empty_quantized([3, 5], p)
    with pytest.raises(NotImplementedError, match="expected a quantized tensor"):
        core.empty_quantized([2], core.ones(2))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_quantized_max_pool(device, nd):
    x = _rng().uniform(-1, 1, size=(2, 3) + (6,) * nd).astype(np.float32)
    q = core.quantize_per_tensor(core.tensor(x, device=device), 0.01, 5, core.qint8)
    pool = (core.quantized_max_pool1d, core.quantized_max_pool2d, core.quantized_max_pool3d)[nd - 1]
    out = pool(q, [2] * nd, [2] * nd)
    assert out.dtype is core.qint8 and out.q_scale() == 0.01 and out.q_zero_point() == 5
    r = _np(q.int_repr())
    blocks = r.reshape((2, 3) + sum(((3, 2),) * nd, ()))
    expected = blocks.max(axis=tuple(3 + 2 * i for i in range(nd)))
    np.testing.assert_array_equal(_np(out.int_repr()), expected)
    dense = (core.max_pool1d, core.max_pool2d, core.max_pool3d)[nd - 1](q.dequantize(), [2] * nd)
    np.testing.assert_allclose(_np(out.dequantize()), _np(dense), rtol=1e-6)
    with pytest.raises(RuntimeError, match=f"quantized_max_pool{nd}d"):
        pool(core.quantize_per_tensor(core.ones(5), 0.1, 0, core.qint8), [1] * nd)


def test_quantized_batch_norm(device):
    rng = _rng()
    x = rng.uniform(-1, 1, size=(2, 3, 4, 4)).astype(np.float32)
    weight, bias = rng.uniform(0.5, 2, size=3).astype(np.float32), rng.normal(size=3).astype(np.float32)
    mean, var = rng.normal(size=3).astype(np.float32), rng.uniform(0.5, 2, size=3).astype(np.float32)
    q = core.quantize_per_tensor(core.tensor(x, device=device), 0.01, 128, core.quint8)
    t = lambda a: core.tensor(a, device=device)  # noqa: E731
    out = core.quantized_batch_norm(q, t(weight), t(bias), t(mean), t(var), 1e-5, 0.05, 100)
    assert out.dtype is core.quint8 and out.q_scale() == 0.05 and out.q_zero_point() == 100
    c = (slice(None), None, None)
    y = (_np(q.dequantize()) - mean[c]) * ((1 / np.sqrt(var + np.float32(1e-5))) * weight)[c] + bias[c]
    expected = _ref_quantize(y.astype(np.float32), 0.05, 100, 0, 255)
    assert np.abs(_np(out.int_repr()).astype(int) - expected).max() <= 1  # float order may move a tie by one
    assert (_np(out.int_repr()) == expected).mean() > 0.95
    plain = core.quantized_batch_norm(q, None, None, t(mean), t(var), 1e-5, 0.05, 100)
    y = (_np(q.dequantize()) - mean[c]) / np.sqrt(var + np.float32(1e-5))[c]
    assert np.abs(_np(plain.int_repr()).astype(int) - _ref_quantize(y, 0.05, 100, 0, 255)).max() <= 1
    with pytest.raises(RuntimeError, match=r"'mean' must be a tensor of shape \(3,\)"):
        core.quantized_batch_norm(q, None, None, core.zeros(2), t(var), 1e-5, 0.05, 100)
