"""Range creation against NumPy: dtype inference, sizes, negative steps, empty ranges, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.testing import assert_close


@pytest.mark.parametrize("args,expected_dtype", [
    ((5,), core.int64),
    ((2, 9, 3), core.int64),
    ((10, 0, -3), core.int64),
    ((5.0,), core.float32),
    ((1, 2.5, 0.1), core.float32),
    ((10, 0, -3.0), core.float32),
    ((0, 1, 0.25), core.float32),
    ((5, 5), core.int64),  # empty
    ((3, 3, -1), core.int64),
    ((np.int32(4),), core.int64),
])
def test_arange_values_and_dtype_inference(device, args, expected_dtype):
    result = core.arange(*args, device=device)
    assert result.dtype is expected_dtype and result.device.type == device
    expected = np.arange(*[float(a) if expected_dtype is core.float32 else int(a) for a in args], dtype=np.float64)
    assert_close(result, expected.astype(expected_dtype.numpy))


def test_arange_tensor_arguments_and_default_dtype(device):
    assert core.arange(core.tensor(3)).tolist() == [0, 1, 2]
    assert core.arange(core.tensor(3.0)).dtype is core.float32
    core.set_default_dtype(core.float64)
    try:
        assert core.arange(0.0, 1.0, 0.5, device=device).dtype is core.float64
    finally:
        core.set_default_dtype(core.float32)


@pytest.mark.parametrize("dtype", [core.float64, core.float16, core.bfloat16, core.int32, core.int8, core.uint8])
def test_arange_explicit_dtypes(device, dtype):
    result = core.arange(0, 20, 3, dtype=dtype, device=device)
    assert result.dtype is dtype
    assert_close(result, np.arange(0, 20, 3).astype(dtype.numpy))


def test_arange_integral_dtypes_truncate_like_pytorch(device):
    # int64 uses exact integer arithmetic on the truncated arguments; other dtypes size the range in float64
    assert core.arange(0, 5, 1.5, dtype=core.int64, device=device).tolist() == [0, 1, 2, 3, 4]
    assert core.arange(0, 5, 1.5, dtype=core.int32, device=device).tolist() == [0, 1, 2, 3]
    assert core.arange(-0.5, 5, 1, dtype=core.int64, device=device).tolist() == [0, 1, 2, 3, 4]
    assert core.arange(300, dtype=core.uint8, device=device)[-3:].tolist() == [41, 42, 43]  # wraps
    big = 2 ** 53 + 1
    assert core.arange(big, big + 3, device=device).tolist() == [big, big + 1, big + 2]


@settings(max_examples=25, deadline=None)
@given(start=st.integers(-20, 20), length=st.integers(0, 30), step=st.integers(1, 7), negative=st.booleans())
def test_arange_integer_sizes(start, length, step, negative):
    end = start - length if negative else start + length
    step = -step if negative else step
    assert_close(core.arange(start, end, step), np.arange(start, end, step, dtype=np.int64))


@settings(max_examples=25, deadline=None)
@given(start=st.floats(-10, 10), length=st.floats(0, 10), step=st.floats(0.05, 3))
def test_arange_float_sizes(start, length, step):
    result = core.arange(start, start + length, step, dtype=core.float64)
    expected_size = int(np.ceil(((start + length) - start) / step))
    assert result.shape == (expected_size,)
    assert_close(result, start + step * np.arange(expected_size, dtype=np.float64))


@pytest.mark.parametrize("args,message", [
    ((0, 10, 0), "step must be nonzero"),
    ((0, 10, -1), "upper bound and lower bound inconsistent with step sign"),
    ((10, 0, 1), "upper bound and lower bound inconsistent with step sign"),
    ((0, float("inf")), "unsupported range"),
    ((0, float("nan")), "unsupported range"),
])
def test_arange_errors(device, args, message):
    with pytest.raises(RuntimeError, match=message):
        core.arange(*args, device=device)


def test_arange_argument_errors(device):
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        core.arange(2, dtype=core.bool, device=device)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        core.arange(0, 5, 0.5, dtype=core.int64, device=device)  # the step truncates to 0
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        core.arange(3, requires_grad=True, device=device)
    assert core.arange(3.0, requires_grad=True, device=device).requires_grad
    with pytest.raises(TypeError, match="must be a real number"):
        core.arange("3")


def test_arange_out(device):
    out = core.empty(0, dtype=core.int64, device=device)
    assert core.arange(4, out=out) is out and out.tolist() == [0, 1, 2, 3]


def test_range_is_inclusive_and_deprecated(device):
    with pytest.warns(UserWarning, match="deprecated"):
        result = core.range(0, 3, device=device)
    assert result.dtype is core.float32 and result.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.warns(UserWarning):
        assert_close(core.range(0, 3, 0.7, device=device), (np.arange(5) * 0.7).astype(np.float32))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="inconsistent with step sign"):
        core.range(3, 0, device=device)


@pytest.mark.parametrize("start,end,steps", [(0, 10, 5), (-3.5, 2.25, 7), (1, 1, 4), (5, -5, 11), (0, 1, 1),
                                             (0, 1, 0), (2, 7, 2), (0, 1, 1000)])
@pytest.mark.parametrize("dtype", [core.float32, core.float64])
def test_linspace_matches_numpy(device, start, end, steps, dtype):
    result = core.linspace(start, end, steps, dtype=dtype, device=device)
    assert_close(result, np.linspace(start, end, steps).astype(dtype.numpy))
    if steps > 1:
        assert result[0].item() == np.float64(start).astype(dtype.numpy) and \
            result[-1].item() == np.float64(end).astype(dtype.numpy)  # both ends exact


def test_linspace_dtypes_and_arguments(device):
    assert core.linspace(0, 10, 4, dtype=core.int64, device=device).tolist() == [0, 3, 6, 10]
    assert core.linspace(0, -10, 4, dtype=core.int64, device=device).tolist() == [0, -3, -6, -10]
    assert core.linspace(0, 1, 3, device=device).dtype is core.float32
    assert core.linspace(core.tensor(0), core.tensor(1.0), 3, device=device).tolist() == [0.0, 0.5, 1.0]
    half = core.linspace(0, 1, 5, dtype=core.float16, device=device)
    assert_close(half, np.linspace(0, 1, 5).astype(np.float16))
    c = core.linspace(0, 1j, 3, device=device)
    assert c.dtype is core.complex64
    assert_close(c, np.linspace(0, 1j, 3).astype(np.complex64))
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        core.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="steps"):
        core.linspace(0, 1, 4.0)
    with pytest.raises(RuntimeError, match="only supports 0-dimensional start and end tensors"):
        core.linspace(core.tensor([0.0]), 1, 3)
    with pytest.raises(NotImplementedError, match="'Bool'"):
        core.linspace(0, 1, 3, dtype=core.bool)


def test_logspace(device):
    assert_close(core.logspace(0, 3, 4, device=device), np.logspace(0, 3, 4).astype(np.float32))
    assert_close(core.logspace(-2, 2, 9, base=2, dtype=core.float64, device=device), np.logspace(-2, 2, 9, base=2))
    assert core.logspace(0, 3, 4, dtype=core.int64, device=device).tolist() == [1, 10, 100, 1000]
    assert core.logspace(1, 3, 1, device=device).tolist() == [10.0]
    assert core.logspace(0, 1, 0, device=device).shape == (0,)


@pytest.mark.parametrize("n,m", [(3, None), (3, 2), (2, 4), (0, 3), (1, 1)])
@pytest.mark.parametrize("dtype", [core.float32, core.int64, core.bool])
def test_eye(device, n, m, dtype):
    assert_close(core.eye(n, m, dtype=dtype, device=device), np.eye(n, m).astype(dtype.numpy))


def test_eye_errors_and_out(device):
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        core.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -1"):
        core.eye(2, -1)
    out = core.empty(0, device=device)
    assert core.eye(2, out=out) is out and out.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert core.eye(2, requires_grad=True).requires_grad


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 4, 1), (4, 3, -1), (3, 4, -5), (3, 4, 10), (0, 0, 0),
                                            (1, 5, 2)])
def test_triangle_indices(device, row, col, offset):
    lower = core.tril_indices(row, col, offset, device=device)
    upper = core.triu_indices(row, col, offset, device=device)
    assert lower.dtype is core.int64 and lower.device.type == device
    assert_close(lower, np.stack(np.tril_indices(row, offset, col)).reshape(2, -1).astype(np.int64))
    assert_close(upper, np.stack(np.triu_indices(row, offset, col)).reshape(2, -1).astype(np.int64))


def test_triangle_indices_errors(device):
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        core.tril_indices(-1, 4)
    with pytest.raises(NotImplementedError, match="'Float'"):
        core.triu_indices(3, 3, dtype=core.float32)
    assert core.tril_indices(3, 3, dtype=core.int32).dtype is core.int32


def test_matches_torch():
    torch = pytest.importorskip("torch")
    cases = [(0, 1, 0.1), (1, 2.5, 0.1), (-3, 7, 0.7), (10, 0, -0.3)]
    for args in cases:
        # PyTorch's vectorised loop adds steps to a rounded chunk base: the same values within one float32 ulp
        for dtype, torch_dtype, ulp in ((core.float32, torch.float32, 1.2e-7), (core.float16, torch.float16, 1e-3)):
            expected = torch.arange(*args, dtype=torch_dtype).float().numpy()
            assert_close(core.arange(*args, dtype=dtype).float(), expected, rtol=ulp, atol=ulp)
    for start, end, steps in [(0, 1, 7), (-2.5, 3.3, 50), (0, 10, 4)]:
        for dtype, torch_dtype in ((core.float64, torch.float64), (core.int64, torch.int64)):
            assert_close(core.linspace(start, end, steps, dtype=dtype),
                         torch.linspace(start, end, steps, dtype=torch_dtype).numpy())
