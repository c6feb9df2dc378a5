"""cpu_c's oneDNN convolution and GEMM (plugins/cpu_c/core_cpu_c/csrc/onednn.c): they serve float32 when oneDNN is
installed, match a NumPy reference (convolution forward and backward: 1-, 2- and 3-D, stride, padding, dilation,
groups, bias; GEMM: transposed, sliced and batched operands), the convolution reuses its cached primitives, and
float64 and a disabled oneDNN are left to cpu_c's own C and OpenBLAS."""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import core
import core.nn.functional as F
from core.dispatch import get_operator
from core.testing import assert_close

pytest.importorskip("core_cpu_c", reason="the cpu_c plugin is not installed (pip install plugins/cpu_c)")
if not hasattr(pytest.importorskip("core_cpu_c.lib"), "load_onednn"):
    pytest.skip("the installed cpu_c is not this checkout's (it has no oneDNN path)", allow_module_level=True)
from core_cpu_c.kernels.conv import DOT_ROWS  # noqa: E402
from cpu_c_support import count_c_calls, load_cpu_c  # noqa: E402


@pytest.fixture
def dnnl():
    """(ffi, lib) of core_cpu_c._onednn, cpu_c serving ``cpu``; skips where oneDNN is not installed or not built."""
    load_cpu_c(require_selected=True)
    from core_cpu_c.lib import load_onednn, onednn_status

    found = load_onednn()
    if found is None:
        pytest.skip(onednn_status())
    return found


@pytest.fixture(params=["onednn", "openblas"])
def library(request, dnnl, monkeypatch):
    """Each library that can run float32 products and linears (csrc/onednn.c's matmul, OpenBLAS's sgemm: normally
    one is chosen per machine, ``gemm_library()``), forced for the test; its name."""
    from core_cpu_c.kernels import linalg

    monkeypatch.setitem(linalg._LIBRARY, "float32", request.param)
    return request.param


def _calls() -> dict:
    from core_cpu_c.kernels.conv import ONEDNN_CALLS

    return dict(ONEDNN_CALLS)


# -- the NumPy reference: one slice of the padded input per kernel offset, float64 --------------------------------
def _offsets(x, kernel, stride, padding, dilation, out):
    """(kernel offset, the padded input's slice it multiplies) for each offset of the kernel."""
    for k in itertools.product(*(range(n) for n in kernel)):
        yield k, (slice(None), slice(None)) + tuple(
            slice(ki * d, ki * d + s * (o - 1) + 1, s) for ki, d, s, o in zip(k, dilation, stride, out))


def _grouped(a, groups):  # (N, C, ...) -> (N, G, C/G, ...)
    return a.reshape((a.shape[0], groups, a.shape[1] // groups) + a.shape[2:])


def _reference(x, w, b, g, stride, padding, dilation, groups):
    """(out, grad_x, grad_w, grad_b) of conv(x, w) + b in float64 NumPy; ``g`` is the gradient of out (None: zeros)."""
    nd = x.ndim - 2
    kernel = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    out_size = tuple((i + 2 * p - d * (k - 1) - 1) // s + 1
                     for i, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation))
    wg = w.reshape((groups, w.shape[0] // groups) + w.shape[1:])  # (G, O/G, C/G, *K)
    g = np.zeros((x.shape[0], w.shape[0]) + out_size) if g is None else g
    gg = _grouped(g, groups)  # (N, G, O/G, *L)
    out = np.zeros((x.shape[0], groups, w.shape[0] // groups) + out_size)
    grad_xp, grad_w = np.zeros_like(xp), np.zeros_like(wg)
    for k, where in _offsets(xp, kernel, stride, padding, dilation, out_size):
        window = _grouped(xp[where], groups)  # (N, G, C/G, *L)
        flat = window.reshape(window.shape[:3] + (-1,))  # (N, G, C/G, L)
        wk = wg[(Ellipsis,) + k]  # (G, O/G, C/G)
        out += np.einsum("goc,ngcl->ngol", wk, flat).reshape(out.shape)
        grad_w[(Ellipsis,) + k] = np.einsum("ngol,ngcl->goc", gg.reshape(gg.shape[:3] + (-1,)), flat)
        grad_xp[where] += np.einsum("goc,ngol->ngcl", wk, gg.reshape(gg.shape[:3] + (-1,))).reshape(xp[where].shape)
    out = out.reshape((x.shape[0], w.shape[0]) + out_size) + b.reshape((-1,) + (1,) * nd)
    crop = (slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in zip(padding, x.shape[2:]))
    return out, grad_xp[crop], grad_w.reshape(w.shape), g.sum(axis=(0,) + tuple(range(2, g.ndim)))


# (input shape, weight shape, stride, padding, dilation, groups): 2-D plain, the referee's shape, strided + dilated +
# grouped, depthwise, pointwise, windows that miss the last rows (oneDNN's right padding), 1-D and 3-D
_CASES = [
    ((3, 4, 9, 8), (6, 4, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((4, 16, 28, 28), (32, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 4, 9, 11), (6, 2, 3, 2), (2, 3), (1, 2), (2, 1), 2),
    ((4, 6, 7, 7), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), 6),
    ((5, 8, 6, 5), (4, 8, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((2, 3, 10, 10), (2, 3, 4, 4), (3, 3), (0, 0), (1, 1), 1),
    ((1, 3, 8, 8), (5, 3, 2, 3), (2, 1), (1, 0), (1, 2), 1),
    ((3, 4, 17), (6, 2, 3), (2,), (1,), (2,), 2),
    ((2, 2, 5, 6, 7), (4, 2, 3, 2, 3), (1, 2, 1), (1, 0, 2), (1, 1, 2), 1),
]


def _case(i):
    x_shape, w_shape, stride, padding, dilation, groups = _CASES[i]
    rng = np.random.default_rng(i)
    x, w, b = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[0])
    ref = _reference(x, w, b, None, stride, padding, dilation, groups)[0]
    g = rng.standard_normal(ref.shape)
    return (x, w, b, g), (stride, padding, dilation, groups)


_TOL = {"rtol": 2e-4, "atol": 2e-4}


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_onednn_convolution_matches_numpy(dnnl, case):
    (x, w, b, g), geometry = _case(case)
    out, grad_x, grad_w, grad_b = _reference(x, w, b, g, *geometry)
    cx, cw, cb, cg = (core.tensor(a, dtype=core.float32) for a in (x, w, b, g))
    before = _calls()
    assert_close(get_operator("convolution")(cx, cw, cb, *geometry), core.tensor(out, dtype=core.float32), **_TOL)
    no_bias = out - b.reshape((-1,) + (1,) * (x.ndim - 2))
    assert_close(get_operator("convolution")(cx, cw, None, *geometry), core.tensor(no_bias, dtype=core.float32),
                 **_TOL)
    expected = [core.tensor(a, dtype=core.float32) for a in (grad_x, grad_w, grad_b)]
    for mask in [(True, True, True), (True, False, False), (False, True, False), (False, False, True)]:
        got = get_operator("convolution_backward")(cg, cx, cw, *geometry, mask)
        for wanted, r, e in zip(mask, got, expected):
            assert (r is None) == (not wanted)
            if wanted:
                assert r.shape == e.shape and r.dtype == core.float32
                assert_close(r, e, **_TOL)
    after = _calls()
    own = _own_weight_gradient(_CASES[case])  # cpu_c's C runs every mask that asks for the weight gradient
    assert after["forward"] - before["forward"] == 2
    assert after["backward_data"] - before["backward_data"] == (1 if own else 2)
    assert after["backward_weights"] - before["backward_weights"] == (1 if own else 3)  # the bias alone: oneDNN


def _own_weight_gradient(case) -> bool:
    x_shape, w_shape, *_, groups = case
    return len(x_shape) <= 4 and groups == 1 and math.prod(w_shape[1:]) <= DOT_ROWS


@pytest.mark.parametrize("x_shape, w_shape, padding", [((4, 1, 28, 28), (16, 1, 3, 3), (1, 1)),
                                                      ((3, 1, 12, 12), (6, 1, 5, 5), (0, 0)),
                                                      ((4, 8, 7, 9), (5, 8, 1, 1), (0, 0)),
                                                      ((2, 1, 20), (4, 1, 3), (1,))])
def test_narrow_weight_gradients_are_cpu_c_dot_products(dnnl, monkeypatch, x_shape, w_shape, padding):
    """A first layer's weight gradient (few input channels) is cpu_c's C, not oneDNN's, through autograd."""
    geometry = ((1,) * len(padding), padding, (1,) * len(padding), 1)
    rng = np.random.default_rng(len(x_shape) + w_shape[1])
    x, w, b = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[0])
    out = _reference(x, w, b, None, *geometry)[0]
    g = rng.standard_normal(out.shape)
    _, _, grad_w, grad_b = _reference(x, w, b, g, *geometry)
    cx = core.tensor(x, dtype=core.float32)
    cw, cb = (core.tensor(a, dtype=core.float32, requires_grad=True) for a in (w, b))
    conv = F.conv2d if len(x_shape) == 4 else F.conv1d
    before, c_calls = _calls(), count_c_calls(monkeypatch, ("convolution_backward",), onednn=True)
    conv(cx, cw, cb, *geometry).backward(core.tensor(g, dtype=core.float32))
    assert c_calls["convolution_backward"] == 1
    assert_close(cw.grad, core.tensor(grad_w, dtype=core.float32), **_TOL)
    assert_close(cb.grad, core.tensor(grad_b, dtype=core.float32), **_TOL)
    after = _calls()
    assert after["forward"] == before["forward"] + 1 and after["backward_weights"] == before["backward_weights"]


@pytest.mark.parametrize("case", [1, 2, 7, 8])
def test_onednn_gradients_through_autograd(dnnl, case):
    """F.conv*d + backward in float32 (oneDNN forward and both backward primitives) against NumPy's gradients."""
    (x, w, b, g), (stride, padding, dilation, groups) = _case(case)
    _, grad_x, grad_w, grad_b = _reference(x, w, b, g, stride, padding, dilation, groups)
    cx, cw, cb = (core.tensor(a, dtype=core.float32, requires_grad=True) for a in (x, w, b))
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[x.ndim - 2]
    before = _calls()
    conv(cx, cw, cb, stride, padding, dilation, groups).backward(core.tensor(g, dtype=core.float32))
    for t, e in ((cx, grad_x), (cw, grad_w), (cb, grad_b)):
        assert_close(t.grad, core.tensor(e, dtype=core.float32), **_TOL)
    after = _calls()
    assert all(after[k] > before[k] for k in after)


def test_onednn_takes_strided_operands(dnnl):
    x = core.randn(2, 3, 8, 9).transpose(2, 3)
    w = core.randn(3, 5, 3, 2).permute(1, 0, 2, 3)
    b = core.randn(10)[::2]
    geometry = ((1, 2), (1, 0), (1, 1), 1)
    before = _calls()
    out = get_operator("convolution")(x, w, b, *geometry)
    expected = _reference(*(a.numpy().astype(np.float64) for a in (x, w, b)), None, *geometry)[0]
    assert_close(out, core.tensor(expected, dtype=core.float32), **_TOL)
    assert _calls()["forward"] == before["forward"] + 1


def test_onednn_reuses_its_cached_primitives(dnnl):
    _, lib = dnnl
    lib.ccc_dnnl_cache_clear()
    x, w = core.randn(2, 3, 8, 8), core.randn(4, 3, 3, 3)
    first = get_operator("convolution")(x, w, None, (1, 1), (1, 1), (1, 1), 1)
    assert lib.ccc_dnnl_cache_size() == 1
    again = get_operator("convolution")(x * 2, w, None, (1, 1), (1, 1), (1, 1), 1)  # same problem, new data
    assert lib.ccc_dnnl_cache_size() == 1
    assert_close(again, first * 2, rtol=1e-5, atol=1e-5)
    get_operator("convolution")(core.randn(3, 3, 8, 8), w, None, (1, 1), (1, 1), (1, 1), 1)  # another batch size
    assert lib.ccc_dnnl_cache_size() == 2
    lib.ccc_dnnl_cache_clear()
    assert lib.ccc_dnnl_cache_size() == 0


def test_float64_and_empty_batches_stay_on_cpu_c_own_path(dnnl):
    before = _calls()
    x, w = core.randn(2, 3, 8, 8, dtype=core.float64), core.randn(4, 3, 3, 3, dtype=core.float64)
    out = get_operator("convolution")(x, w, None, (1, 1), (0, 0), (1, 1), 1)
    expected = _reference(x.numpy(), w.numpy(), np.zeros(4), None, (1, 1), (0, 0), (1, 1), 1)[0]
    assert_close(out, core.tensor(expected))
    empty = get_operator("convolution")(core.randn(0, 3, 8, 8), w.float(), None, (1, 1), (0, 0), (1, 1), 1)
    assert empty.shape == (0, 4, 6, 6)
    assert _calls() == before


def test_core_info_names_the_convolution_path(dnnl):
    from core_cpu_c.kernels.linalg import _onednn_impl, gemm_library

    name = core.cpu.get_device_name()
    assert "float32 convolution: oneDNN 3." in name
    impl = _onednn_impl(dnnl)
    assert impl  # e.g. "brg_matmul:avx512_core", "gemm:jit:f32"
    if gemm_library() == "onednn":
        assert "float32 GEMM: oneDNN 3." in name and f"matmul ({impl})" in name
    else:
        assert "float32 GEMM: OpenBLAS (on the OpenMP threads; oneDNN 3." in name and impl in name


def test_gemm_library_is_onednn_where_its_matmul_is_brgemm(dnnl):
    # the probe runs first: a product after it still runs (the probe once left oneDNN without its stream)
    code = ("import core; from core_cpu_c.kernels.linalg import gemm_library as g, _onednn_impl as i, onednn as o, "
            "GEMM_CALLS as c; impl = i(o()); p = core.ones(64, 128) @ core.ones(128, 64); "
            "print(g(), impl, c['float32'], c['openblas'], p.numpy().min())")
    chosen = {}
    for wanted in ("auto", "onednn", "openblas"):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                                env={**os.environ, "CORE_CPU_C_GEMM": wanted, "CORE_BACKENDS": "cpu=cpu_c"})
        assert result.returncode == 0, result.stderr
        chosen[wanted], impl, onednn_calls, openblas_calls, value = result.stdout.split()
        assert value == "128.0"
        assert (onednn_calls, openblas_calls) == (("1", "0") if chosen[wanted] == "onednn" else ("0", "1"))
    assert chosen["auto"] == ("onednn" if impl.startswith("brg") else "openblas")
    assert chosen["onednn"] == "onednn" and chosen["openblas"] == "openblas"


@pytest.mark.parametrize("case", ["plain", "a transposed", "b transposed", "sliced", "batched", "broadcast batch"])
def test_float32_gemm_runs_the_chosen_library_and_matches_numpy(library, case):
    from core_cpu_c.kernels.linalg import GEMM_CALLS

    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((3, 70, 90)).astype(np.float32)
    b_np = rng.standard_normal((3, 90, 50)).astype(np.float32)
    a, b = core.tensor(a_np), core.tensor(b_np)
    x, y, want = {
        "plain": (a[0], b[0], a_np[0] @ b_np[0]),
        "a transposed": (a[0].t().contiguous().t(), b[0], a_np[0] @ b_np[0]),
        "b transposed": (a[0], b[0].t().contiguous().t(), a_np[0] @ b_np[0]),
        "sliced": (a[0, 10:60, 5:85], b[0, 5:85, :40], a_np[0, 10:60, 5:85] @ b_np[0, 5:85, :40]),
        "batched": (a, b, a_np @ b_np),
        "broadcast batch": (a, b[1], a_np @ b_np[1]),
    }[case]
    counter = "float32" if library == "onednn" else "openblas"
    before = GEMM_CALLS[counter]
    assert_close(x @ y, core.tensor(want), rtol=1e-5, atol=1e-4)
    assert GEMM_CALLS[counter] == before + 1  # batched: one primitive (one C call) over every product
    assert_close(x.double() @ y.double(), core.tensor(want.astype(np.float64)), rtol=1e-5, atol=1e-4)
    assert GEMM_CALLS[counter] == before + 1  # float64: OpenBLAS's dgemm, not counted


@pytest.mark.parametrize("case", ["2-d", "3-d", "rows strided", "weight transposed", "no bias", "bias strided",
                                  "one output"])
def test_linear_is_one_product_with_the_bias_fused(library, case):
    """F.linear on float32 runs cpu_c's ``linear`` kernel (no separate add: a post-op of oneDNN's matmul, or the bias
    written before OpenBLAS's sgemm adds the product); forward and gradients match NumPy."""
    from core_cpu_c.kernels.linalg import GEMM_CALLS

    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((4, 12, 90)).astype(np.float32)
    w_np = rng.standard_normal((50, 90)).astype(np.float32)
    b_np = rng.standard_normal(100).astype(np.float32)
    x, w, b = core.tensor(x_np[1]), core.tensor(w_np), core.tensor(b_np[:50])
    ex, ew, eb = x_np[1], w_np, b_np[:50]
    if case == "3-d":
        x, ex = core.tensor(x_np), x_np
    elif case == "rows strided":
        x, ex = core.tensor(x_np)[:, ::3], x_np[:, ::3]
    elif case == "weight transposed":
        w = core.tensor(np.ascontiguousarray(w_np.T)).t()
    elif case == "no bias":
        b = eb = None
    elif case == "bias strided":
        b, eb = core.tensor(b_np)[::2], b_np[::2]
    elif case == "one output":
        w, ew, b, eb = core.tensor(w_np[:1]), w_np[:1], core.tensor(b_np[:1]), b_np[:1]
        x, ex = core.tensor(x_np), x_np  # 48 x 1 x 90: over cpu_c's min_numel
    x.requires_grad_(True)
    w.requires_grad_(True)
    want = ex.astype(np.float64) @ ew.T.astype(np.float64) + (0 if eb is None else eb)
    before = GEMM_CALLS["linear"]
    out = F.linear(x, w, b)
    assert GEMM_CALLS["linear"] == before + 1
    assert_close(out, core.tensor(want.astype(np.float32)), rtol=1e-5, atol=1e-4)
    g = rng.standard_normal(want.shape).astype(np.float32)
    out.backward(core.tensor(g))
    g2 = g.reshape(-1, g.shape[-1]).astype(np.float64)
    assert_close(x.grad, core.tensor((g.astype(np.float64) @ ew.astype(np.float64)).astype(np.float32)),
                 rtol=1e-5, atol=1e-4)
    assert_close(w.grad, core.tensor((g2.T @ ex.reshape(-1, 90).astype(np.float64)).astype(np.float32)),
                 rtol=1e-5, atol=1e-3)


def test_linear_serves_inference_mode_tensors(library):
    from core_cpu_c.kernels.linalg import GEMM_CALLS

    layer = core.nn.Linear(100, 50)
    x = core.randn(64, 100)
    want = layer(x).detach()
    before = GEMM_CALLS["linear"]
    with core.inference_mode():
        got = layer(x)
    assert GEMM_CALLS["linear"] == before + 1 and got.is_inference()
    assert_close(got, want)


_NP_ACTIVATIONS = {"relu": lambda y: np.maximum(y, 0), "sigmoid": lambda y: 1 / (1 + np.exp(-y)), "tanh": np.tanh}


@pytest.mark.parametrize("activation", sorted(_NP_ACTIVATIONS))
def test_epilogues_run_as_post_ops_of_one_primitive(library, activation):
    """linear_pointwise and convolution_pointwise: one oneDNN primitive each (bias and activation fused), equal to
    NumPy's float64 product then activation; the forward's cache entry differs from the plain op's."""
    from core_cpu_c.kernels.linalg import GEMM_CALLS

    rng = np.random.default_rng(7)
    x_np, w_np, b_np = (rng.standard_normal(s).astype(np.float32) for s in ((64, 96), (80, 96), (80,)))
    want = _NP_ACTIVATIONS[activation](x_np.astype(np.float64) @ w_np.T.astype(np.float64) + b_np)
    before = GEMM_CALLS["linear"]
    got = get_operator("linear_pointwise")(core.tensor(x_np), core.tensor(w_np), core.tensor(b_np), activation)
    assert GEMM_CALLS["linear"] == before + 1
    assert_close(got, core.tensor(want.astype(np.float32)), rtol=1e-5, atol=1e-4)
    x, w, b = core.randn(2, 4, 10, 10), core.randn(6, 4, 3, 3), core.randn(6)
    plain = F.conv2d(x, w, b, padding=1)
    calls = _calls()
    got = get_operator("convolution_pointwise")(x, w, b, (1, 1), (1, 1), (1, 1), 1, activation)
    assert _calls()["forward"] == calls["forward"] + 1
    assert_close(got, getattr(core, activation)(plain), rtol=1e-5, atol=1e-5)
    # bfloat16: oneDNN's primitive where the CPU has an optimised one, else the decomposition; the same result
    half = get_operator("linear_pointwise")(core.tensor(x_np).bfloat16(), core.tensor(w_np).bfloat16(),
                                            core.tensor(b_np).bfloat16(), activation)
    assert half.dtype is core.bfloat16
    assert_close(half.float(), core.tensor(want.astype(np.float32)), rtol=3e-2, atol=0.15)


@pytest.mark.parametrize("activation", [None, "relu", "tanh"])
def test_a_residual_is_a_post_op_of_the_same_matmul(library, activation):
    """linear_pointwise with a dense residual of the output's shape: one primitive; a transposed or broadcast one
    goes to the decomposition (the same values)."""
    from core_cpu_c.kernels.linalg import GEMM_CALLS

    rng = np.random.default_rng(8)
    x_np, w_np, b_np, r_np = (rng.standard_normal(s).astype(np.float32) for s in ((3, 40, 96), (80, 96), (80,),
                                                                                  (3, 40, 80)))
    y = x_np.astype(np.float64) @ w_np.T.astype(np.float64) + b_np + r_np
    want = y if activation is None else _NP_ACTIVATIONS[activation](y)
    op = get_operator("linear_pointwise")
    x, w, b, r = (core.tensor(a) for a in (x_np, w_np, b_np, r_np))
    before = GEMM_CALLS["linear"]
    assert_close(op(x, w, b, activation, r), core.tensor(want.astype(np.float32)), rtol=1e-5, atol=1e-4)
    assert GEMM_CALLS["linear"] == before + 1
    strided = core.tensor(np.ascontiguousarray(r_np.transpose(0, 2, 1))).transpose(1, 2)
    assert_close(op(x, w, b, activation, strided), core.tensor(want.astype(np.float32)), rtol=1e-5, atol=1e-4)
    row = core.tensor(r_np[0, 0])
    y = x_np.astype(np.float64) @ w_np.T.astype(np.float64) + b_np + r_np[0, 0]
    want = y if activation is None else _NP_ACTIVATIONS[activation](y)
    assert_close(op(x, w, b, activation, row), core.tensor(want.astype(np.float32)), rtol=1e-5, atol=1e-4)
    assert GEMM_CALLS["linear"] == before + 3  # the declined calls' decomposition runs the plain fused linear


@pytest.mark.parametrize("activation", [None, "relu", "sigmoid"])
def test_a_residual_is_a_post_op_of_the_same_convolution(dnnl, activation):
    """convolution_pointwise with a dense residual of the output's shape: one oneDNN primitive (the residual a binary
    post-op before the activation), equal to NumPy's float64 convolution plus the residual; a channels-last or
    broadcast residual goes to the decomposition (the same values); bfloat16 within its rounding."""
    rng = np.random.default_rng(9)
    x_np, w_np, b_np, r_np = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 9, 9), (6, 4, 3, 3), (6,),
                                                                                  (2, 6, 9, 9)))
    y = _reference(x_np.astype(np.float64), w_np.astype(np.float64), b_np.astype(np.float64), None, (1, 1), (1, 1),
                   (1, 1), 1)[0] + r_np
    want = core.tensor((y if activation is None else _NP_ACTIVATIONS[activation](y)).astype(np.float32))
    conv = get_operator("convolution_pointwise")
    x, w, b, r = (core.tensor(a) for a in (x_np, w_np, b_np, r_np))
    calls = _calls()
    with core.profiler.profile() as prof:
        assert_close(conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, activation, r), want, rtol=1e-5, atol=1e-4)
    assert _calls()["forward"] == calls["forward"] + 1
    assert [e.key for e in prof.key_averages()] == ["aten::convolution_pointwise"]  # no decomposition ran
    channels_last = r.contiguous(memory_format=core.channels_last)
    assert_close(conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, activation, channels_last), want, rtol=1e-5, atol=1e-4)
    column = core.tensor(r_np[:1, :, :1, :1])
    y = y - r_np + r_np[:1, :, :1, :1]
    broadcast = core.tensor((y if activation is None else _NP_ACTIVATIONS[activation](y)).astype(np.float32))
    assert_close(conv(x, w, b, (1, 1), (1, 1), (1, 1), 1, activation, column), broadcast, rtol=1e-5, atol=1e-4)
    assert _calls()["forward"] == calls["forward"] + 3  # the declined calls' decomposition runs the plain convolution
    half = conv(*(t.bfloat16() for t in (x, w, b)), (1, 1), (1, 1), (1, 1), 1, activation, r.bfloat16())
    assert half.dtype is core.bfloat16
    assert_close(half.float(), want, rtol=3e-2, atol=0.15)


def test_linear_leaves_other_dtypes_and_shapes_to_the_decomposition(dnnl):
    """float64, a 1-D weight's error and a broadcast bias are the decomposition's: same results, same errors."""
    from core_cpu_c.kernels.linalg import GEMM_CALLS

    rng = np.random.default_rng(4)
    x_np, w_np = rng.standard_normal((70, 90)), rng.standard_normal((60, 90))
    before = GEMM_CALLS["linear"]
    out = F.linear(core.tensor(x_np), core.tensor(w_np), core.tensor(np.ones(60)))
    assert_close(out, core.tensor(x_np @ w_np.T + 1))
    broadcast = F.linear(core.tensor(x_np, dtype=core.float32), core.tensor(w_np, dtype=core.float32),
                         core.tensor([2.0]))
    assert_close(broadcast, core.tensor((x_np @ w_np.T + 2).astype(np.float32)), rtol=1e-5, atol=1e-4)
    assert GEMM_CALLS["linear"] == before
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        F.linear(core.ones(70, 80), core.ones(60, 90))


def test_disabled_onednn_leaves_convolution_to_cpu_c_c():
    code = ("import numpy as np, core; from core.dispatch import get_operator; "
            "from core_cpu_c.kernels.conv import ONEDNN_CALLS; "
            "x = core.ones(1, 2, 4, 4); w = core.ones(3, 2, 3, 3); "
            "out = get_operator('convolution')(x, w, None, (1, 1), (0, 0), (1, 1), 1); "
            "from core_cpu_c.kernels.linalg import GEMM_CALLS; g = core.ones(64, 128) @ core.ones(128, 64); "
            "print(core.cpu.get_device_name()); print(out.numpy().ravel().tolist(), sum(ONEDNN_CALLS.values()), "
            "GEMM_CALLS['float32'], g.numpy().max())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "CORE_CPU_C_ONEDNN": "0", "CORE_BACKENDS": "cpu=cpu_c"})
    assert result.returncode == 0, result.stderr
    name, values = result.stdout.strip().splitlines()
    assert "float32 convolution: cpu_c C (im2col + OpenBLAS); disabled by CORE_CPU_C_ONEDNN=0" in name
    assert "float32 GEMM: OpenBLAS; disabled by CORE_CPU_C_ONEDNN=0" in name
    assert values == f"{[18.0] * 12} 0 0 128.0"


def test_onednn_primitives_follow_the_thread_count(dnnl):
    """A primitive is made per thread count (oneDNN splits its work for the count it is created under)."""
    import core_cpu_c

    (x, w, b, g), geometry = _case(1)
    expected = _reference(x, w, b, g, *geometry)
    cx, cw, cb, cg = (core.tensor(a, dtype=core.float32) for a in (x, w, b, g))
    before = core_cpu_c.get_num_threads()
    try:
        for threads in (1, 2):
            core_cpu_c.set_num_threads(threads)
            got = [get_operator("convolution")(cx, cw, cb, *geometry),
                   *get_operator("convolution_backward")(cg, cx, cw, *geometry, (True, True, True))]
            for r, e in zip(got, expected):
                assert_close(r, core.tensor(e, dtype=core.float32), **_TOL)
    finally:
        core_cpu_c.set_num_threads(before)


def _has_avx512_bf16() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_bf16" in f.read()
    except OSError:
        return False


@pytest.mark.parametrize("case", [0, 1, 2, 3, 7, 8])
def test_bfloat16_convolution_accumulates_in_float32(dnnl, case):
    """bfloat16 convolution (autocast's conv2d): oneDNN's bf16 primitives where the CPU has an optimised kernel (always
    with AVX-512 BF16), else the decomposition; against NumPy's float64 result over the same bfloat16 values, within
    the rounding of the result (and of the float32 accumulation) to bfloat16."""
    import ml_dtypes

    (x, w, b, g), geometry = _case(case)
    x, w, b, g = (a.astype(ml_dtypes.bfloat16) for a in (x, w, b, g))
    out, grad_x, grad_w, grad_b = _reference(*(a.astype(np.float64) for a in (x, w, b, g)), *geometry)
    cx, cw, cb, cg = (core.from_numpy(a) for a in (x, w, b, g))
    before = _calls()
    results = [get_operator("convolution")(cx, cw, cb, *geometry)]
    results += get_operator("convolution_backward")(cg, cx, cw, *geometry, (True, True, True))
    for r, e in zip(results, (out, grad_x, grad_w, grad_b)):
        assert r.dtype == core.bfloat16 and r.shape == e.shape
        scale = np.abs(e).max()
        np.testing.assert_allclose(r.float().numpy(), e, rtol=2**-7, atol=scale * 2**-12)
    if _has_avx512_bf16():
        after = _calls()
        assert [after[k] - before[k] for k in ("forward", "backward_data", "backward_weights")] == [1, 1, 1]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", ["plain", "a transposed", "b transposed", "batched", "expanded", "sliced"])
def test_half_matmul_accumulates_in_float32(dnnl, dtype, case):
    """float16/bfloat16 products (autocast's linear, matmul): oneDNN's matmul where it has an optimised kernel (bfloat16
    with AVX-512 BF16), else float32 sgemm; against float64 over the same values, within the result's rounding."""
    import ml_dtypes

    from core_cpu_c.kernels.linalg import GEMM_CALLS

    np_dtype = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[dtype]
    rng = np.random.default_rng(11)
    a_np, b_np = (rng.standard_normal(s).astype(np_dtype) for s in ((3, 40, 70), (3, 70, 30)))
    a, b = core.from_numpy(a_np), core.from_numpy(b_np)
    x, y, ex, ey = {
        "plain": (a[0], b[0], a_np[0], b_np[0]),
        "a transposed": (a[0].t().contiguous().t(), b[1], a_np[0], b_np[1]),
        "b transposed": (a[1], b[0].t().contiguous().t(), a_np[1], b_np[0]),
        "batched": (a, b, a_np, b_np),
        "expanded": (a[2].expand(3, 40, 70), b, np.broadcast_to(a_np[2], (3, 40, 70)), b_np),
        "sliced": (a[:, 5:30, 10:60], b[:, 10:60, ::2], a_np[:, 5:30, 10:60], b_np[:, 10:60, ::2]),
    }[case]
    before = GEMM_CALLS["half"]
    out = core.matmul(x, y)
    exact = np.matmul(ex.astype(np.float64), ey.astype(np.float64))
    assert out.dtype == getattr(core, dtype) and out.shape == exact.shape
    np.testing.assert_allclose(out.float().numpy(), exact, rtol=2**-7, atol=np.abs(exact).max() * 2**-12)
    if dtype == "bfloat16" and _has_avx512_bf16():
        # a column-strided operand (b[:, :, ::2]) is no BLAS layout: copied first, then served all the same
        assert GEMM_CALLS["half"] - before == 1


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_a_gelu_epilogue_is_one_onednn_matmul_without_grad(dnnl, approximate):
    """``linear_pointwise`` with a GELU activation (exact or tanh) is one primitive, GELU a post-op, where autograd
    does not record it; the exact GELU against SciPy's erf in float64."""
    from scipy.special import erf

    from core_cpu_c.kernels.linalg import GEMM_CALLS

    rng = np.random.default_rng(5)
    x_np, w_np, b_np = (rng.standard_normal(s).astype(np.float32) for s in ((32, 40), (24, 40), (24,)))
    y = x_np.astype(np.float64) @ w_np.T.astype(np.float64) + b_np
    if approximate == "none":
        want = 0.5 * y * (1 + erf(y / np.sqrt(2)))
    else:
        want = 0.5 * y * (1 + np.tanh(np.sqrt(2 / np.pi) * (y + 0.044715 * y ** 3)))
    activation = "gelu" if approximate == "none" else "gelu_tanh"
    before = GEMM_CALLS["linear"]
    with core.no_grad():
        out = get_operator("linear_pointwise")(core.tensor(x_np), core.tensor(w_np), core.tensor(b_np), activation)
    assert GEMM_CALLS["linear"] == before + 1
    assert_close(out, core.tensor(want.astype(np.float32)), rtol=1e-5, atol=1e-5)
