"""cpu_c's max and average pooling (csrc/conv.c) against direct NumPy loops, value for value: the fast path for dense
windows (no padding, dilation 1, every window inside the input) and, beside it, geometries that take the generic
path (a ceil_mode window past the edge, padding). PyTorch's rules for max: a window's value is its first NaN, else
its maximum; the gradient goes to the first NaN, else to the first maximum (ties: the first in row-major order); a
window holding nothing above -inf gives no gradient (as the op's decomposition). Average: the window's sum in
double, in row-major order, over its divisor, rounded once."""

from __future__ import annotations

import numpy as np
import pytest

import core
import core.nn.functional as F
from core.dispatch import get_operator

pytest.importorskip("core_cpu_c", reason="the cpu_c plugin is not installed (pip install plugins/cpu_c)")
from cpu_c_support import count_c_calls  # noqa: E402

_OPS = ("max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward")


@pytest.fixture
def c_calls(monkeypatch, force_c):
    """C calls of the pooling ops (0: another path ran)."""
    return count_c_calls(monkeypatch, _OPS)


def _out_size(n, k, s, ceil_mode):
    """PyTorch's pooling_output_shape with no padding and dilation 1."""
    out = (n - k + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= n else out


def reference_max_pool(x, kernel, stride, ceil_mode, grad_output=None):
    """(values, gradient of x for grad_output) by a loop over every window of every (sample, channel) plane; windows
    clipped at the input's edge (ceil_mode)."""
    (kh, kw), (sh, sw) = kernel, stride
    planes = x.reshape(-1, *x.shape[-2:])
    h, w = planes.shape[1:]
    oh, ow = _out_size(h, kh, sh, ceil_mode), _out_size(w, kw, sw, ceil_mode)
    values = np.empty((len(planes), oh, ow), x.dtype)
    grad = np.zeros_like(planes)
    g = None if grad_output is None else grad_output.reshape(len(planes), oh, ow)
    for p in range(len(planes)):
        for i in range(oh):
            for j in range(ow):
                window = planes[p, i * sh:i * sh + kh, j * sw:j * sw + kw]
                flat = window.ravel()
                nans = np.flatnonzero(np.isnan(flat))
                at = nans[0] if len(nans) else int(np.argmax(flat))  # argmax: the first maximum
                values[p, i, j] = flat[at]
                if g is not None and (len(nans) or flat[at] > -np.inf):
                    grad[p, i * sh + at // window.shape[1], j * sw + at % window.shape[1]] += g[p, i, j]
    return values.reshape(*x.shape[:-2], oh, ow), grad.reshape(x.shape)


def _data(kind, shape, dtype, rng):
    if kind == "ties":  # small integers: several maxima per window, the first must win
        return rng.integers(-2, 3, shape).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype)
    if kind == "nan":  # NaNs inside windows (some windows with two), signed zeros beside them
        x[rng.random(shape) < 0.08] = np.nan
        x[rng.random(shape) < 0.1] = -0.0
        x[rng.random(shape) < 0.1] = 0.0
    if kind == "-inf":  # many windows wholly -inf (no gradient), some with a NaN among -infs
        x[rng.random(shape) < 0.7] = -np.inf
        x[rng.random(shape) < 0.03] = np.nan
    return x


def _assert_identical(got, expected):
    """Equal value for value: NaN where NaN, and the same sign of zero."""
    got = got.numpy()
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


# (input shape, kernel, stride, ceil_mode): dense windows unless marked
_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), False),  # windows tile the plane
    ((2, 3, 9, 7), (2, 2), (2, 2), False),  # floor: the last row and column are dropped
    ((2, 3, 9, 7), (2, 2), (2, 2), True),  # ceil_mode keeps clipped last windows: the generic path
    ((2, 2, 9, 12), (3, 3), (3, 3), True),  # ceil_mode where every window fits: dense
    ((2, 2, 10, 13), (2, 2), (3, 3), False),  # gaps between windows
    ((2, 2, 11, 12), (3, 3), (2, 2), False),  # overlapping windows
    ((1, 2, 6, 21), (2, 3), (2, 3), False),  # rectangular, a row of 7 windows (shorter than a block)
    ((2, 2, 6, 40), (2, 2), (2, 2), False),  # a row of 20 windows: two blocks and a part
    ((2, 3, 28, 28), (2, 2), (2, 2), False),  # LeNet's: rows of 14 windows (float32 2x2/2: AVX2 blocks of 8)
    ((2, 2, 4, 33), (2, 2), (2, 2), False),  # one block of 8 windows exactly, the last column dropped
    ((3, 2, 5, 6), (1, 1), (1, 1), False),
    ((2, 2, 12, 15), (5, 5), (5, 5), False),
    ((4, 16, 32, 32), (2, 2), (2, 2), False),  # enough work for the OpenMP loop
    ((1, 2, 18, 80), (9, 9), (9, 9), False),  # too wide to stage 8 windows: the max backward adds window by window
    ((2, 1, 1, 30), (1, 4), (1, 4), True),  # one row (as 1-D pooling): ceil_mode clips the last window
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["randn", "ties", "nan", "-inf"])
@pytest.mark.parametrize("case", range(len(_CASES)))
def test_max_pool_matches_a_numpy_loop(c_calls, case, kind, dtype):
    shape, kernel, stride, ceil_mode = _CASES[case]
    rng = np.random.default_rng(case)
    x = _data(kind, shape, dtype, rng)
    geometry = (kernel, stride, (0, 0), (1, 1), ceil_mode)
    out = get_operator("max_pool")(core.tensor(x), *geometry)
    g = rng.standard_normal(tuple(out.shape)).astype(dtype)
    g[rng.random(g.shape) < 0.1] = -0.0  # a -0 gradient lands as +0, as adding into zeros gives
    values, grad = reference_max_pool(x, kernel, stride, ceil_mode, g)
    _assert_identical(out, values)
    _assert_identical(get_operator("max_pool_backward")(core.tensor(g), core.tensor(x), *geometry), grad)
    assert c_calls["max_pool"] == 1 and c_calls["max_pool_backward"] == 1


def test_padding_takes_the_generic_path_with_the_same_rules(c_calls):
    # the padding adds -inf borders: the reference pools the padded input and drops the border's gradient
    x = _data("nan", (2, 3, 8, 9), "float32", np.random.default_rng(7))
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    geometry = ((2, 2), (2, 2), (1, 1), (1, 1), False)
    out = get_operator("max_pool")(core.tensor(x), *geometry)
    g = np.random.default_rng(8).standard_normal(tuple(out.shape)).astype("float32")
    values, grad = reference_max_pool(padded, (2, 2), (2, 2), False, g)
    _assert_identical(out, values)
    _assert_identical(get_operator("max_pool_backward")(core.tensor(g), core.tensor(x), *geometry),
                      grad[..., 1:-1, 1:-1])


def test_strided_input_and_autograd(c_calls):
    base = _data("ties", (2, 3, 14, 12), "float64", np.random.default_rng(3))
    x = core.tensor(base, requires_grad=True)
    view = x.transpose(-1, -2)  # (2, 3, 12, 14), not contiguous
    out = F.max_pool2d(view, 2)
    g = np.random.default_rng(4).standard_normal(tuple(out.shape))
    out.backward(core.tensor(g))
    values, grad = reference_max_pool(base.transpose(0, 1, 3, 2), (2, 2), (2, 2), False, g)
    _assert_identical(out.detach(), values)
    _assert_identical(x.grad, grad.transpose(0, 1, 3, 2))
    assert c_calls["max_pool"] == 1 and c_calls["max_pool_backward"] == 1


def test_max_pool1d(c_calls):
    x = _data("nan", (3, 4, 23), "float32", np.random.default_rng(5))
    out = F.max_pool1d(core.tensor(x), 3)
    values, _ = reference_max_pool(x[:, :, None, :], (1, 3), (1, 3), False)
    _assert_identical(out, values[:, :, 0])
    assert c_calls["max_pool"] == 1


def test_results_do_not_depend_on_the_thread_count(c_calls):
    import core_cpu_c

    x = core.tensor(_data("ties", (8, 16, 30, 30), "float32", np.random.default_rng(6)))
    g = core.randn(8, 16, 15, 15)
    geometry = ((2, 2), (2, 2), (0, 0), (1, 1), False)
    before = core_cpu_c.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            core_cpu_c.set_num_threads(threads)
            results.append([get_operator("max_pool")(x, *geometry).numpy(),
                            get_operator("max_pool_backward")(g, x, *geometry).numpy()])
    finally:
        core_cpu_c.set_num_threads(before)
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


def reference_avg_pool(x, kernel, stride, ceil_mode, divisor_override, grad_output):
    """(values, gradient of x) of average pooling with no padding: each window's sum in double (row-major, as the C
    loop) over its size (clipped by ceil_mode; no padding, so count_include_pad does not matter) or the override."""
    (kh, kw), (sh, sw) = kernel, stride
    planes = x.reshape(-1, *x.shape[-2:])
    h, w = planes.shape[1:]
    oh, ow = _out_size(h, kh, sh, ceil_mode), _out_size(w, kw, sw, ceil_mode)
    values = np.empty((len(planes), oh, ow), x.dtype)
    grad = np.zeros_like(planes)
    g = grad_output.reshape(len(planes), oh, ow)
    for p in range(len(planes)):
        for i in range(oh):
            for j in range(ow):
                rows, cols = slice(i * sh, i * sh + kh), slice(j * sw, j * sw + kw)
                window = planes[p, rows, cols]
                divisor = divisor_override or window.size
                total = 0.0
                for v in window.ravel():
                    total += float(v)
                values[p, i, j] = total / divisor
                grad[p, rows, cols] += x.dtype.type(float(g[p, i, j]) / divisor)
    return values.reshape(*x.shape[:-2], oh, ow), grad.reshape(x.shape)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("divisor_override", [None, 3])
@pytest.mark.parametrize("case", range(len(_CASES)))
def test_avg_pool_matches_a_numpy_loop(c_calls, case, divisor_override, dtype):
    shape, kernel, stride, ceil_mode = _CASES[case]
    rng = np.random.default_rng(case)
    x = _data("nan", shape, dtype, rng) * 3
    geometry = (kernel, stride, (0, 0), ceil_mode, True, divisor_override)
    out = get_operator("avg_pool")(core.tensor(x), *geometry)
    g = rng.standard_normal(tuple(out.shape)).astype(dtype)
    g[rng.random(g.shape) < 0.1] = -0.0
    values, grad = reference_avg_pool(x, kernel, stride, ceil_mode, divisor_override, g)
    _assert_identical(out, values)
    _assert_identical(get_operator("avg_pool_backward")(core.tensor(g), core.tensor(x), *geometry), grad)
    assert c_calls["avg_pool"] == 1 and c_calls["avg_pool_backward"] == 1
