"""The cpu_c backend (plugins/cpu_c): selection, compiled kernels vs the NumPy reference, validation, threads."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import core
from core.backends.api import Tensor
from core.dispatch import get_operator
from core.plugins.manager import get_manager
from core.testing import assert_close

cpu_c = pytest.importorskip("core_cpu_c", reason="the cpu_c plugin is not installed (pip install plugins/cpu_c)")
from cpu_c_support import count_c_calls, from_c, load_cpu_c, numpy_reference  # noqa: E402


def _run_python(code: str, **env) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


# -- selection ----------------------------------------------------------------------------------------------
def test_selected_for_cpu_when_installed():
    info = load_cpu_c()
    selected = get_manager().backend_for("cpu")
    if core.config.get("backends").get("cpu") not in (None, "cpu_c"):
        pytest.skip("config selects another cpu backend")
    assert selected is info and info.priority > get_manager().backends["numpy"].priority
    assert "cpu_c" in core.cpu.get_device_name()


def test_config_selects_the_numpy_reference_instead():
    code = "import core; from core.plugins.manager import get_manager; print(get_manager().backend_for('cpu').name)"
    assert _run_python(code, CORE_BACKENDS="cpu=numpy") == "numpy"


def test_generated_kernels_match_a_fresh_render():
    from core_cpu_c.gen import CSRC
    from core_cpu_c.renderer import render_all

    source, header = render_all()
    assert (CSRC / "elementwise_gen.c").read_text() == source, "run `python -m core_cpu_c.gen` and reinstall"
    assert (CSRC / "elementwise_gen.h").read_text() == header


# -- elementwise kernels ------------------------------------------------------------------------------------
def _layouts(dtype):
    rng = np.random.default_rng(0)
    base = core.tensor(rng.uniform(0.1, 0.9, (6, 10)).astype(dtype))
    row = core.tensor(rng.uniform(0.1, 0.9, (10,)).astype(dtype))
    return {
        "contiguous": (base, base * 0.5),
        "transposed": (base.t(), core.tensor(rng.uniform(0.1, 0.9, (10, 6)).astype(dtype))),
        "sliced": (base[::2, 1::3], base[1::2, ::4]),
        "broadcast": (base, row),
        "expanded": (row.unsqueeze(1).expand(10, 4), base[:4, :].t()),
        "scalar": (base.t(), 0.75),
        "zero_d": (core.tensor(np.array(0.3, dtype)), core.tensor(np.array(0.6, dtype))),
        "empty": (base[:0], row),
    }


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", list(_layouts("float32")))
def test_binary_kernels_match_numpy_on_strided_layouts(force_c, dtype, layout):
    from core_cpu_c.renderer import BINARY_OPS, OP_DTYPES

    a, b = _layouts(dtype)[layout]
    for op in BINARY_OPS:
        if op in ("tanh_backward", "sigmoid_backward", "relu_backward") or dtype not in OP_DTYPES[op]:
            continue
        actual = get_operator(op)(a, b)
        assert from_c(actual), f"{op} did not run the C kernel"
        assert_close(actual, numpy_reference(op, a, b), msg=f"{op} {layout}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_kernels_match_numpy_on_strided_layouts(force_c, dtype):
    from core_cpu_c.renderer import OP_DTYPES, UNARY_OPS

    for layout, (a, _) in _layouts(dtype).items():
        for op in UNARY_OPS:
            if dtype not in OP_DTYPES[op]:
                continue
            x = a + 1 if op == "acosh" else (a - 0.5 if op in ("relu", "sign", "abs", "neg") else a)
            actual = core.relu(x) if op == "relu" else get_operator(op)(x)
            assert from_c(actual), f"{op} did not run the C kernel"
            assert_close(actual, numpy_reference(op, x), msg=f"{op} {layout}")


def test_relu_keeps_nan_and_activation_backwards(force_c):
    x = core.tensor([-1.0, float("nan"), 2.0, 0.0])
    assert_close(core.relu(x), np.array([0.0, np.nan, 2.0, 0.0], np.float32))
    g, y = core.randn(5, 7, dtype=core.float64).t(), core.rand(7, 5, dtype=core.float64)
    for op in ("tanh_backward", "sigmoid_backward", "relu_backward"):
        actual = get_operator(op)(g, y - 0.5)
        assert from_c(actual)
        assert_close(actual, numpy_reference(op, g, y - 0.5))
    x = core.tensor([-1.0, float("nan"), 2.0, 0.0])
    assert_close(get_operator("relu_backward")(core.ones(4), x), np.array([0.0, 0.0, 1.0, 0.0], np.float32))


def test_other_dtypes_and_alpha_use_the_numpy_kernels(force_c):
    i = core.arange(12).reshape(3, 4)
    out = core.add(i, i, alpha=2)
    assert not from_c(out) and out.dtype == core.int64
    x = core.rand(3, 4)
    assert_close(core.add(x, x, alpha=2), x.numpy() * 3)
    assert_close(x + core.ones(3, 4, dtype=core.float64), x.numpy().astype(np.float64) + 1)
    h = core.rand(3, 4, dtype=core.float16)
    assert (h * h).dtype == core.float16


def test_large_tensors_use_threads_and_match_numpy():
    load_cpu_c()
    n = 1 << 18
    a, b = core.randn(n), core.randn(512, n // 512).t()
    out = core.exp(a) + 1.0
    assert from_c(out)
    assert_close(out, np.exp(a.numpy()) + np.float32(1.0), rtol=1e-5)
    prod = b * b
    assert from_c(prod)
    assert_close(prod, b.numpy() * b.numpy())


def test_tiny_tensors_use_the_numpy_kernels_by_default():
    load_cpu_c()
    import core_cpu_c
    from core_cpu_c.kernels.elementwise import ARITHMETIC_FACTOR, WRITTEN_FACTOR
    from core_cpu_c.plugin import DEFAULT_MIN_NUMEL

    from core.dispatch import get_operator

    saved = core_cpu_c.set_min_numel(DEFAULT_MIN_NUMEL)
    key = load_cpu_c().instance.key
    try:
        # the dispatcher picks the NumPy kernel itself (get_operator("add").tiers), no C-kernel frame in between
        assert get_operator("relu").tiers[key.bit][0] == DEFAULT_MIN_NUMEL
        # the cheap arithmetic stays on NumPy's shortcut longer: its ufunc beats a checked C call up to ~64K elements
        assert get_operator("add").tiers[key.bit][0] == DEFAULT_MIN_NUMEL * ARITHMETIC_FACTOR
        assert get_operator("lt").tiers[key.bit][0] == get_operator("add_").tiers[key.bit][0] \
            == get_operator("mul_out").tiers[key.bit][0] == DEFAULT_MIN_NUMEL * WRITTEN_FACTOR
        assert not from_c(core.rand(3) + core.rand(3))
        assert not from_c(core.rand(4, 4).relu()) and not from_c(core.rand(2, 8).softmax(-1))
        assert not from_c(core.rand(4, 4) @ core.rand(4, 4))
        assert not from_c(core.rand(DEFAULT_MIN_NUMEL) + 1)
        assert from_c(core.rand(DEFAULT_MIN_NUMEL * ARITHMETIC_FACTOR) + 1)
        assert from_c(core.rand(DEFAULT_MIN_NUMEL).relu()) and from_c(core.rand(64, 64).softmax(-1))
        assert from_c(core.rand(64, 64) @ core.rand(64, 64))
        core_cpu_c.set_min_numel(0)  # moves the dispatcher's thresholds too
        assert get_operator("add").tiers[key.bit][0] == 0
        assert from_c(core.rand(3) + core.rand(3)) and from_c(core.rand(4, 4) @ core.rand(4, 4))
    finally:
        core_cpu_c.set_min_numel(saved)


def test_set_min_numel_rejects_a_negative_threshold():
    load_cpu_c()
    import core_cpu_c

    with pytest.raises(ValueError, match="min_numel must be a non-negative integer, got -1"):
        core_cpu_c.set_min_numel(-1)


def _counted_loops(monkeypatch, op: str, dtype: str = "float32") -> dict:
    """{"contig": calls, "strided": calls} of cpu_c's C loops behind out-op ``op`` (``add_out``...) in ``dtype``."""
    from core.backends.api import backend_key

    info = load_cpu_c()
    if get_manager().backend_for("cpu") is not info:
        pytest.skip("cpu_c does not serve the cpu device here")
    core.add(core.ones(3), 1.0, out=core.empty(3))  # kernels are made on first use
    kernel = get_operator(op).kernels[backend_key("cpu").bit]
    entries = kernel.entries
    calls = {"contig": 0, "strided": 0}

    def counted(kind, fn):
        def call(*args):
            calls[kind] += 1
            return fn(*args)
        return call

    contig, strided = entries[dtype]
    monkeypatch.setitem(entries, dtype, (counted("contig", contig), counted("strided", strided)))
    return calls


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_out_arithmetic_runs_the_c_loop_into_out(monkeypatch, op):
    """``out=`` of add/sub/mul/div: cpu_c's contiguous or strided loop writes into out (dense, strided, a broadcast
    operand, a number, out as the input); an input sharing out's memory at other elements runs the NumPy reference
    (it buffers), with the same result."""
    calls = _counted_loops(monkeypatch, op + "_out")
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    rng = np.random.default_rng(0)
    a_np, b_np = (rng.uniform(0.5, 2.0, (6, 10)).astype(np.float32) for _ in range(2))
    a, b = core.tensor(a_np), core.tensor(b_np)
    fn = getattr(core, op)
    cases = [(a, b, core.empty(6, 10), ref(a_np, b_np), "contig"),
             (a, b[2], core.empty(6, 10), ref(a_np, b_np[2]), "strided"),
             (a, 2.0, core.empty(6, 10), ref(a_np, np.float32(2.0)), "strided"),
             (a, b, core.empty(10, 6).t(), ref(a_np, b_np), "strided"),
             (a.t(), b.t(), core.empty(20, 6)[::2], ref(a_np.T, b_np.T), "strided")]
    for x, y, out, want, kind in cases:
        before = dict(calls)
        assert fn(x, y, out=out) is out
        assert_close(out, want)
        assert calls[kind] == before[kind] + 1, (op, out.shape, out.stride())
    same = core.tensor(a_np)
    fn(same, b, out=same)  # out is the input: the same elements, read before each is written
    assert_close(same, ref(a_np, b_np))
    wide = core.tensor(np.concatenate([a_np, a_np[:, -1:]], 1))
    before = dict(calls)
    fn(wide[:, :-1], b, out=wide[:, 1:])
    assert calls == before, "an input overlapping out at other elements runs the NumPy reference"
    assert_close(wide[:, 1:], ref(a_np, b_np))


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_addcmul_addcdiv_out_and_in_place_run_one_c_loop(monkeypatch, op, dtype):
    """addcmul/addcdiv with ``out=`` and in place: one C loop of input + value * tensor1 op tensor2 (PyTorch's order,
    the value a scalar operand read once), the contiguous one when the tensors are dense, else the strided one; a
    value a half type does not hold exactly runs the NumPy reference (it computes in float32, as PyTorch)."""
    calls = _counted_loops(monkeypatch, op + "_out", dtype)
    d = getattr(core, dtype)
    rng = np.random.default_rng(1)
    x_np, a_np, b_np = (rng.uniform(0.5, 2.0, (8, 40)).astype(np.float32) for _ in range(3))
    x, a, b = (core.tensor(v, dtype=d) for v in (x_np, a_np, b_np))
    x_np, a_np, b_np = (t.to(core.float64).numpy() for t in (x, a, b))  # as stored in dtype

    def want(x_np, a_np, b_np, value):
        part = value * a_np * b_np if op == "addcmul" else value * a_np / b_np
        return core.tensor(x_np + part, dtype=d)

    tol = {"rtol": 2**-7, "atol": 0} if dtype == "bfloat16" else {}
    fn = getattr(core, op)
    for value, out, a_case, a_ref, kind in [(1, core.empty(8, 40, dtype=d), a, a_np, "contig"),
                                            (0.5, core.empty(40, 8, dtype=d).t(), a, a_np, "strided"),
                                            (-2, core.empty(8, 40, dtype=d), a[3], a_np[3], "strided")]:
        before = dict(calls)
        assert fn(x, a_case, b, value=value, out=out) is out
        assert_close(out, want(x_np, a_ref, b_np, value), **tol)
        assert calls[kind] == before[kind] + 1, (value, out.stride())
    same = x.clone()
    before = dict(calls)
    assert getattr(same, op + "_")(a, b, value=0.25) is same
    assert_close(same, want(x_np, a_np, b_np, 0.25), **tol)
    assert calls["contig"] == before["contig"] + 1
    if dtype == "bfloat16":
        before = dict(calls)
        fn(x, a, b, value=0.1, out=out)
        assert calls == before, "0.1 is not a bfloat16: the reference computes with it in float32"
        assert_close(out, want(x_np, a_np, b_np, 0.1), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_lerp_out_and_in_place_run_one_c_loop(monkeypatch, dtype):
    """lerp with ``out=`` and ``lerp_`` with a number weight: one C loop of ATen's two forms (the weight a scalar
    operand), contiguous or strided; the results equal the NumPy reference's, bit for bit."""
    calls = _counted_loops(monkeypatch, "lerp_out", dtype)
    d = getattr(core, dtype)
    cd = np.float64 if dtype == "float64" else np.float32  # the compute dtype (half types compute in float32)
    rng = np.random.default_rng(2)
    x, y = (core.tensor(rng.uniform(-3, 3, (8, 40)), dtype=d) for _ in range(2))
    x_np, y_np = (t.to(core.float64).numpy().astype(cd) for t in (x, y))

    def want(a, b, w):  # ATen's two forms in the compute dtype, rounded once to dtype
        w, one = cd(w), cd(1)
        return core.tensor(a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (one - w), dtype=d)

    for weight, out, end, end_np, kind in [(0.25, core.empty(8, 40, dtype=d), y, y_np, "contig"),
                                           (0.75, core.empty(8, 40, dtype=d), y, y_np, "contig"),
                                           (1.0, core.empty(40, 8, dtype=d).t(), y, y_np, "strided"),
                                           (-0.5, core.empty(8, 40, dtype=d), y[3], y_np[3], "strided")]:
        before = dict(calls)
        assert core.lerp(x, end, weight, out=out) is out
        assert calls[kind] == before[kind] + 1, (weight, out.stride())
        assert core.equal(out, want(x_np, end_np, weight)), weight
    same = x.clone()
    before = dict(calls)
    assert same.lerp_(y, 0.875) is same
    assert calls["contig"] == before["contig"] + 1
    if dtype == "float32":
        assert core.equal(core.lerp(x, y, 1.0, out=core.empty(8, 40)), y), "weight 1 gives end exactly"


# -- batched_matmul -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_transposed_batched_and_expanded_operands(force_c, dtype):
    rng = np.random.default_rng(1)

    def t(*shape):
        return core.tensor(rng.standard_normal(shape).astype(dtype))

    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {}
    cases = [
        (t(5, 3), t(3, 4)), (t(3, 5).t(), t(4, 3).t()), (t(7, 8)[::2, 1:4], t(6, 4)[::2]),
        (t(2, 5, 3), t(2, 3, 4)), (t(5, 3).expand(4, 5, 3), t(4, 4, 3).transpose(1, 2)),
        (t(1, 3), t(3, 1)), (t(5, 3), t(1, 4).expand(3, 4)),  # stride 0 inside a matrix: copied
        (t(4, 0), t(0, 3)), (t(0, 3), t(3, 2)),
    ]
    for a, b in cases:
        out = get_operator("batched_matmul")(a, b)
        assert from_c(out)
        assert_close(out, np.matmul(a.numpy(), b.numpy()), **tol)


def test_matmul_matches_numpy_through_the_public_api(force_c):
    a, b = core.randn(3, 4, 5), core.randn(5, 2)
    assert_close(a @ b, a.numpy() @ b.numpy(), rtol=1e-5, atol=1e-5)
    assert_close(core.addmm(core.ones(4, 2), a[0], b), 1 + a.numpy()[0] @ b.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation", [None, "relu", "tanh"])
def test_openblas_linear_fuses_bias_residual_and_relu(force_c, monkeypatch, activation):
    """With OpenBLAS running float32 products (``gemm_library()``: where oneDNN's matmul is not brgemm, or oneDNN is
    not loaded), ``linear``/``linear_pointwise`` write the bias into the output, sgemm adds the product, one pass adds
    the residual and applies a relu: NaN kept, and bit for bit the decomposition eager runs (linear, add, relu), so a
    traced graph's fused epilogue gives eager's values; another activation runs the decomposition itself."""
    from core_cpu_c.kernels import linalg

    if not hasattr(linalg, "gemm_library"):
        pytest.skip("the installed cpu_c is not this checkout's")
    monkeypatch.setitem(linalg._LIBRARY, "float32", "openblas")
    rng = np.random.default_rng(6)
    x_np, w_np, b_np, r_np = (rng.standard_normal(s).astype(np.float32) for s in ((2, 33, 70), (40, 70), (40,),
                                                                                  (2, 33, 40)))
    x_np[0, 3, 5] = np.nan  # a row of NaN: relu keeps it
    op = get_operator("linear_pointwise")
    linear = core.nn.functional.linear
    x, w, b, r = (core.tensor(a) for a in (x_np, w_np, b_np, r_np))
    y = x_np.astype(np.float64) @ w_np.T.astype(np.float64)
    act = {None: lambda v: v, "relu": lambda v: np.where(v > 0, v, np.where(np.isnan(v), v, 0)), "tanh": np.tanh}
    cases = [(b, None, y + b_np), (None, r, y + r_np), (b, r, y + b_np + r_np), (None, None, y)]
    for bias, residual, want in cases:
        before = dict(linalg.GEMM_CALLS)
        plain = residual is None and activation is None  # F.linear's own kernel
        got = linear(x, w, bias) if plain else op(x, w, bias, activation, residual)
        expected = act[activation](want).astype(np.float32)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-4, equal_nan=True)
        assert linalg.GEMM_CALLS["openblas"] == before["openblas"] + 1  # one sgemm, fused or in the decomposition
        assert linalg.GEMM_CALLS["linear"] == before["linear"] + 1
        eager = linear(x, w, bias) + (0 if residual is None else residual)
        eager = eager if activation is None else getattr(core, activation)(eager)
        np.testing.assert_array_equal(got.numpy(), eager.numpy())


# -- row reductions and fused softmax ----------------------------------------------------------------------------
def _row_inputs(dtype):
    """(tensor, the sorted reduced dims the row kernels take: a contiguous trailing block and evenly strided rows;
    softmax needs that layout, reductions take any layout)."""
    t = core.tensor(np.random.default_rng(0).standard_normal((6, 5, 7)).astype(dtype))
    return [(t, ([2], [1, 2], [0, 1, 2])),
            (t[:, :, 2:], ([2],)),  # rows of 5 in a wider tensor: row stride 7
            (t[::2], ([1, 2],)),  # the leading dims do not merge into one run of rows
            (t.transpose(0, 2), ())]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
def test_reductions_over_trailing_dims_match_numpy(force_c, dtype, op):
    # every layout and dim set runs C (the row kernels or the strided walk: tests/test_cpu_c_reduce.py)
    for x, _ in _row_inputs(dtype):
        a = x.numpy()
        for dims in ((-1,), (1, 2), (2, 1), (0, 1, 2), (0,)):
            for keepdim in (False, True):
                actual = getattr(core, op)(x, dims, keepdim=keepdim)
                assert_close(actual, getattr(np, op)(a, axis=dims, keepdims=keepdim), rtol=1e-5, atol=1e-5)
                assert from_c(actual)


def test_reductions_nan_empty_rows_and_fallbacks(force_c):
    x = core.tensor([[1.0, float("nan"), 3.0], [-1.0, 5.0, float("inf")], [float("-inf"), 0.0, 2.0]])
    for op in ("amax", "amin"):
        actual = getattr(core, op)(x, -1)
        assert from_c(actual)
        assert_close(actual, getattr(np, op)(x.numpy(), axis=-1))
    long = core.randn(1 << 17, dtype=core.float64)  # one long row: split across threads
    long[12345] = float("nan")
    assert np.isnan(core.amax(long).item()) and np.isnan(core.amin(long).item())
    assert_close(long.sum(), np.sum(long.numpy()))
    empty_rows = core.rand(4, 0)
    assert_close(empty_rows.sum(-1), np.zeros(4, np.float32))
    assert core.rand(0, 3).sum(-1).shape == (0,)
    assert core.rand(3, 4, dtype=core.float64).sum(-1, dtype=core.float32).dtype == core.float32  # NumPy path
    i = core.arange(12).reshape(3, 4)
    assert from_c(i.sum(-1)) and i.sum(-1).tolist() == [6, 22, 38]
    assert not from_c(i.sum(-1, dtype=core.float32))  # an integer sum in a float dtype: the NumPy kernel


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_fused_softmax_matches_the_numpy_kernel(force_c, dtype, op):
    special = np.array([[1.0, np.nan, 2.0], [np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf], [-np.inf, 0.0, 3.0]])
    inputs = [(x, [2] in in_c) for x, in_c in _row_inputs(dtype)]
    inputs += [(core.tensor(special.astype(dtype)), True), (core.rand(3, 0, dtype=core.float64), True)]
    for x, last_in_c in inputs:
        for dim in range(x.dim()):
            actual = getattr(core, op)(x, dim)
            assert from_c(actual) == (last_in_c and dim == x.dim() - 1)
            assert_close(actual, numpy_reference(op, x, dim), rtol=1e-5, atol=1e-6, equal_nan=True)


def test_cross_entropy_backward_through_the_fused_kernels(force_c):
    logits = core.randn(16, 10, dtype=core.float64, requires_grad=True)
    target = core.randint(0, 10, (16,))
    core.nn.functional.cross_entropy(logits, target).backward()
    p = np.exp(logits.detach().numpy())
    p /= p.sum(-1, keepdims=True)
    p[np.arange(16), target.numpy()] -= 1
    assert_close(logits.grad, p / 16, rtol=1e-6, atol=1e-9)


# -- fused optimizer updates ---------------------------------------------------------------------------------

def _run_update(op, tensors, args, fused: bool):
    """Copies of ``tensors`` after ``op`` ran as cpu_c's fused kernel or as its decomposition."""
    copies = [None if t is None else t.clone() for t in tensors]
    operator = get_operator(op)
    fn = operator.kernels[load_cpu_c().instance.key.bit] if fused else operator.decomposition
    with core.no_grad():
        fn(*copies, *args)
    return copies


@pytest.mark.parametrize("dtype", [core.float32, core.float64])
@pytest.mark.parametrize("options", [(0.1, 0.9, 0.0, 0.0, False), (0.05, 0.9, 0.1, 0.01, False),
                                     (0.1, 0.8, 0.0, 0.001, True), (0.1, 0.0, 0.0, 0.01, False)])
def test_fused_sgd_update_matches_its_decomposition(dtype, options):
    lr, momentum, dampening, weight_decay, nesterov = options
    p, g, buf = (core.randn(1000, dtype=dtype) for _ in range(3))
    tensors = [p, g, buf if momentum else None]
    fused = _run_update("sgd_update_", tensors, options, True)
    reference = _run_update("sgd_update_", tensors, options, False)
    for a, b in zip(fused, reference):
        if a is not None:
            assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert not core.equal(fused[0], p)


@pytest.mark.parametrize("dtype", [core.float32, core.float64])
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("weight_decay, decoupled", [(0.0, False), (0.01, False), (0.01, True)])
def test_fused_adam_update_matches_its_decomposition(dtype, amsgrad, weight_decay, decoupled):
    p, g = core.randn(1000, dtype=dtype), core.randn(1000, dtype=dtype)
    m, v = core.randn(1000, dtype=dtype) * 0.1, core.rand(1000, dtype=dtype)
    vmax = core.rand(1000, dtype=dtype) if amsgrad else None
    args = (3, 1e-3, 0.9, 0.999, 1e-8, weight_decay, decoupled)
    fused = _run_update("adam_update_", [p, g, m, v, vmax], args, True)
    reference = _run_update("adam_update_", [p, g, m, v, vmax], args, False)
    for a, b in zip(fused, reference):
        if a is not None:
            assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_fused_updates_bump_versions_and_leave_odd_layouts_to_the_decomposition():
    load_cpu_c()
    p, g, buf = core.randn(64), core.randn(64), core.randn(64)
    before = p._version, buf._version
    core.ops.optimizers.sgd_update_(p, g, buf, 0.1, 0.9, 0.0, 0.0, False)
    assert (p._version, buf._version) == (before[0] + 1, before[1] + 1)
    strided_grad = core.randn(64, 2)[:, 0]  # not contiguous: the decomposition runs, same result
    expected = p - 0.1 * (buf * 0.9 + strided_grad)
    core.ops.optimizers.sgd_update_(p, strided_grad, buf, 0.1, 0.9, 0.0, 0.0, False)
    assert_close(p, expected, rtol=1e-6, atol=1e-6)


# -- validation before C ------------------------------------------------------------------------------------
def _out_of_bounds_view():
    good = core.rand(4, 4)
    # A view that reaches past its storage (only a bug upstream could build one): the kernel must refuse it.
    return Tensor._make(good._storage, (4, 8), (8, 1), 0, good.dtype)


def test_out_of_bounds_views_are_refused_before_c(force_c):
    from core_cpu_c.layout import LayoutError

    bad = _out_of_bounds_view()
    with pytest.raises(LayoutError, match="reaches element 31 of a storage of 64 bytes"):
        core.exp(bad)
    with pytest.raises(LayoutError, match="reaches element"):
        get_operator("batched_matmul")(bad, core.rand(8, 2))


def test_bad_shapes_are_refused_before_c(force_c):
    from core_cpu_c.layout import LayoutError
    from core.dispatch import TensorSpec, backend_key

    add = get_operator("add").kernels[backend_key("cpu").bit]
    spec = TensorSpec((3, 4), core.float32, core.device("cpu"))
    with pytest.raises(LayoutError, match="does not broadcast"):
        add(spec, core.rand(3, 5), core.rand(3, 4))


def test_outputs_are_64_byte_aligned(force_c):
    for t in (core.empty(3), core.rand(5) + core.rand(5), core.rand(33, 3) @ core.rand(3, 7)):
        assert t.data_ptr() % 64 == 0


# -- threads -------------------------------------------------------------------------------------------------
def test_set_num_threads_sets_openmp_and_blas_together():
    load_cpu_c()
    from core_cpu_c.lib import load

    _, lib = load()
    before = cpu_c.get_num_threads()
    try:
        cpu_c.set_num_threads(1)
        assert cpu_c.get_num_threads() == 1 and lib.ccc_blas_num_threads() == 1
        cpu_c.set_num_threads(2)
        assert cpu_c.get_num_threads() == 2 and lib.ccc_blas_num_threads() == 2
    finally:
        cpu_c.set_num_threads(before)
    with pytest.raises(ValueError, match="positive int"):
        cpu_c.set_num_threads(0)


def test_core_num_threads_environment_variable():
    code = "import core; core.rand(2) + 1; import core_cpu_c; print(core_cpu_c.get_num_threads())"
    assert _run_python(code, CORE_NUM_THREADS="1") == "1"


# OpenBLAS's parallel jobs on the OpenMP team (csrc/blas.c, "One thread pool"): float64 products are OpenBLAS's
# dgemm on every machine (oneDNN takes float32 where it is loaded); 256 x 300 x 260 is above OpenBLAS's threshold
# for running one product on several threads.
_POOL_PRODUCT = """
import numpy as np, core, core_cpu_c
from core_cpu_c.lib import load, _STATE
core_cpu_c.set_num_threads(2)
_, lib = load()
rng = np.random.default_rng(0)
a, b = rng.standard_normal((256, 300)), rng.standard_normal((300, 260))
assert np.allclose((core.tensor(a) @ core.tensor(b)).numpy(), a @ b, rtol=1e-12, atol=1e-12)
"""


def _pool():
    """cpu_c's lib, skipping where OpenBLAS's jobs cannot run on an OpenMP team (a build without OpenMP)."""
    load_cpu_c()
    from core_cpu_c.lib import _STATE, load

    _, lib = load()
    if not lib.ccc_has_openmp():
        pytest.skip("cpu_c was built without OpenMP: OpenBLAS keeps its own pool")
    assert _STATE["blas_pool"], "the pool is installed by default (CORE_CPU_C_BLAS_POOL unset)"
    return lib


def test_openblas_runs_its_parallel_jobs_on_the_openmp_team(force_c):
    lib = _pool()
    before = cpu_c.get_num_threads()
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((256, 300)), rng.standard_normal((300, 260))
    try:
        cpu_c.set_num_threads(2)
        calls = lib.ccc_blas_pool_calls(0), lib.ccc_blas_pool_calls(1)
        out = core.tensor(a) @ core.tensor(b)
        assert lib.ccc_blas_pool_calls(0) > calls[0], "the product ran on OpenBLAS's own threads"
        assert lib.ccc_blas_pool_calls(1) == calls[1], "a full OpenMP team was expected"
        assert_close(out, a @ b, rtol=1e-12, atol=1e-12)
        cpu_c.set_num_threads(1)  # one thread: OpenBLAS runs the product itself, no parallel jobs
        calls = lib.ccc_blas_pool_calls(0)
        assert_close(core.tensor(a) @ core.tensor(b), a @ b, rtol=1e-12, atol=1e-12)
        assert lib.ccc_blas_pool_calls(0) == calls
    finally:
        cpu_c.set_num_threads(before)


def test_openblas_calls_from_many_python_threads_at_once(force_c):
    import threading

    _pool()
    before = cpu_c.get_num_threads()
    rng = np.random.default_rng(4)
    pairs = [(rng.standard_normal((256, 300)), rng.standard_normal((300, 260))) for _ in range(4)]
    results: list = [None] * len(pairs)

    def work(i):
        a, b = pairs[i]
        results[i] = [(core.tensor(a) @ core.tensor(b)).numpy() for _ in range(5)]

    try:
        cpu_c.set_num_threads(2)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pairs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a product never finished"
    finally:
        cpu_c.set_num_threads(before)
    for (a, b), outs in zip(pairs, results):
        for out in outs:  # one call's jobs would corrupt another's through OpenBLAS's shared buffers
            np.testing.assert_allclose(out, a @ b, rtol=1e-12, atol=1e-12)


def test_openblas_jobs_get_threads_of_their_own_when_the_team_is_short():
    _pool()
    # OMP_THREAD_LIMIT=1: OpenBLAS still splits the product in two (its count is 2), the OpenMP team has one thread
    out = _run_python(_POOL_PRODUCT + "print(lib.ccc_blas_pool_calls(1) > 0)", OMP_THREAD_LIMIT="1",
                      CORE_CPU_C_MIN_NUMEL="0")
    assert out == "True"


def test_a_forked_child_gets_openblas_pool_back():
    _pool()
    code = _POOL_PRODUCT + """
import os
pid = os.fork()
if pid == 0:  # libgomp cannot run a team in a child of a process whose team ran: OpenBLAS's own threads serve
    calls = lib.ccc_blas_pool_calls(0)
    ok = np.allclose((core.tensor(a) @ core.tensor(b)).numpy(), a @ b, rtol=1e-12, atol=1e-12)
    os._exit(0 if ok and lib.ccc_blas_pool_calls(0) == calls else 1)
print(os.waitpid(pid, 0)[1])
"""
    assert _run_python(code, CORE_CPU_C_MIN_NUMEL="0") == "0"


def test_blas_pool_environment_variable_leaves_openblas_its_own_threads():
    _pool()
    code = _POOL_PRODUCT + "print(_STATE['blas_pool'], lib.ccc_blas_pool_calls(0), lib.ccc_blas_pool_calls(1))"
    assert _run_python(code, CORE_CPU_C_BLAS_POOL="0", CORE_CPU_C_MIN_NUMEL="0") == "False 0 0"


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""), reason="AddressSanitizer's quarantine grows RSS")
def test_a_long_loop_keeps_a_flat_rss(force_c):
    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    a, b = core.rand(128, 128), core.rand(128, 128)
    for _ in range(20):
        (a * b + a) @ b
    start = rss()
    for _ in range(200):
        (a * b + a) @ b
    assert rss() - start < 8 << 20


# -- convolution and pooling (csrc/conv.c) ---------------------------------------------------------------------
_CONV_OPS = ("convolution", "convolution_backward", "max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward")


@pytest.fixture
def c_calls(monkeypatch):
    """Counts the C calls of the conv/pool kernels, per op: {op: calls} (0 when the decomposition ran)."""
    return count_c_calls(monkeypatch, _CONV_OPS)


def _decomposed(op, *args):
    return get_operator(op).decomposition(*args)


def _assert_all_close(got, expected, dtype):
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {}
    for g, e in zip(got, expected):
        assert (g is None) == (e is None)
        if e is not None:
            assert g.shape == e.shape
            assert_close(g, e, **tol)


# (input shape, weight shape, stride, padding, dilation, groups): 2-D and 1-D, groups, depthwise, pointwise (the
# input is its own im2col), windows that miss the last rows, a large per-image GEMM (images in sequence), and weight
# gradients of few im2col rows as dot products (one channel: eight rows a pass and a single one; images in sequence,
# the dot products over the threads)
_CONV_CASES = [
    ((3, 1, 12, 10), (5, 1, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 1, 40, 40), (16, 1, 5, 5), (1, 1), (0, 0), (1, 1), 1),
    ((3, 4, 9, 8), (6, 4, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((2, 4, 9, 11), (6, 2, 3, 2), (2, 3), (1, 2), (2, 1), 2),
    ((4, 6, 7, 7), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), 6),
    ((5, 8, 6, 5), (4, 8, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((2, 3, 10, 10), (2, 3, 4, 4), (3, 3), (0, 0), (1, 1), 1),
    ((1, 3, 8, 8), (5, 3, 2, 3), (2, 1), (1, 0), (1, 2), 1),
    ((2, 16, 24, 24), (32, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((3, 4, 17), (6, 2, 3), (2,), (1,), (2,), 2),
    ((2, 3, 9), (4, 3, 1), (1,), (0,), (1,), 1),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(_CONV_CASES)))
def test_convolution_kernels_match_the_decomposition(c_calls, dtype, case):
    x_shape, w_shape, stride, padding, dilation, groups = _CONV_CASES[case]
    d = getattr(core, dtype)
    x, w, b = core.randn(x_shape, dtype=d), core.randn(w_shape, dtype=d), core.randn(w_shape[0], dtype=d)
    geometry = (stride, padding, dilation, groups)
    for bias in (b, None):
        out = get_operator("convolution")(x, w, bias, *geometry)
        _assert_all_close([out], [_decomposed("convolution", x, w, bias, *geometry)], dtype)
    g = core.randn(tuple(out.shape), dtype=d)
    for mask in [(True, True, True), (True, False, False), (False, True, False), (False, False, True)]:
        got = get_operator("convolution_backward")(g, x, w, *geometry, mask)
        _assert_all_close(got, _decomposed("convolution_backward", g, x, w, *geometry, mask), dtype)
    assert c_calls["convolution"] == 2 and c_calls["convolution_backward"] == 4


def test_convolution_kernels_take_strided_operands(c_calls):
    x = core.randn(2, 3, 8, 9).transpose(2, 3)
    w = core.randn(3, 5, 3, 2).permute(1, 0, 2, 3)
    b = core.randn(10)[::2]
    geometry = ((1, 2), (1, 0), (1, 1), 1)
    out = get_operator("convolution")(x, w, b, *geometry)
    _assert_all_close([out], [_decomposed("convolution", x, w, b, *geometry)], "float32")
    g = core.randn(tuple(out.shape[::-1])).permute(3, 2, 1, 0)
    got = get_operator("convolution_backward")(g, x, w, *geometry, (True, True, True))
    _assert_all_close(got, _decomposed("convolution_backward", g, x, w, *geometry, (True, True, True)), "float32")
    assert c_calls["convolution"] == 1 and c_calls["convolution_backward"] == 1


def test_convolution_results_do_not_depend_on_the_thread_count(c_calls):
    x, w, b = core.randn(8, 3, 12, 12), core.randn(4, 3, 3, 3), core.randn(4)
    g = core.randn(8, 4, 10, 10)
    before = cpu_c.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            cpu_c.set_num_threads(threads)
            results.append([get_operator("convolution")(x, w, b, (1, 1), (0, 0), (1, 1), 1),
                            *get_operator("convolution_backward")(g, x, w, (1, 1), (0, 0), (1, 1), 1,
                                                                  (True, True, True))])
    finally:
        cpu_c.set_num_threads(before)
    _assert_all_close(results[0], results[1], "float32")


_POOL_CASES = [  # (input shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((2, 3, 9, 7), (3, 2), (2, 1), (1, 1), (1, 1), True),
    ((1, 2, 10, 9), (3, 3), (2, 3), (1, 0), (2, 2), True),
    ((3, 2, 5, 6), (2, 3), (1, 2), (1, 1), (1, 1), False),
    ((2, 3, 11), (3,), (2,), (1,), (2,), True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(_POOL_CASES)))
def test_max_pool_kernels_match_the_decomposition_with_ties(c_calls, dtype, case):
    shape, *geometry = _POOL_CASES[case]
    # small integers: many ties inside each window, where the first maximum must win
    x = core.tensor(np.random.default_rng(case).integers(-2, 3, shape), dtype=getattr(core, dtype))
    out = get_operator("max_pool")(x, *geometry)
    _assert_all_close([out], [_decomposed("max_pool", x, *geometry)], dtype)
    g = core.randn(tuple(out.shape), dtype=x.dtype)
    got = get_operator("max_pool_backward")(g, x, *geometry)
    _assert_all_close([got], [_decomposed("max_pool_backward", g, x, *geometry)], dtype)
    assert c_calls["max_pool"] == 1 and c_calls["max_pool_backward"] == 1


def test_max_pool_kernels_propagate_nan_and_skip_all_minus_inf_windows(c_calls):
    nan, inf = float("nan"), float("inf")
    x = core.tensor([[[[1.0, nan, 3.0, nan], [nan, 5.0, -inf, -inf], [0.0, 2.0, -inf, -inf], [2.0, 1.0, -inf, -inf]]]])
    geometry = ((2, 2), (2, 2), (0, 0), (1, 1), False)
    out = get_operator("max_pool")(x, *geometry)
    assert_close(out, core.tensor([[[[nan, nan], [2.0, -inf]]]]), equal_nan=True)
    grad = get_operator("max_pool_backward")(core.ones(1, 1, 2, 2), x, *geometry)
    # the first NaN and the first of the tied 2s get the gradient; the all -inf window gives none
    expected = core.tensor([[[[0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]])
    assert_close(grad, expected)
    assert_close(grad, _decomposed("max_pool_backward", core.ones(1, 1, 2, 2), x, *geometry))


_AVG_POOL_CASES = [  # (input shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), False, True, None),
    ((2, 3, 9, 7), (3, 3), (2, 2), (1, 1), True, True, None),  # ceil_mode's last window reaches past the padding
    ((2, 3, 9, 7), (3, 3), (2, 2), (1, 1), True, False, None),
    ((1, 2, 10, 9), (3, 2), (1, 3), (1, 0), False, False, None),
    ((3, 2, 5, 6), (2, 3), (1, 2), (1, 1), False, True, 5),
    ((2, 3, 11), (3,), (2,), (1,), True, False, None),
    ((1, 1, 64, 64), (3, 3), (1, 1), (1, 1), False, True, None),  # 36864 window reads: the OpenMP loop
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(_AVG_POOL_CASES)))
def test_avg_pool_kernels_match_the_decomposition(c_calls, dtype, case):
    shape, *geometry = _AVG_POOL_CASES[case]
    x = core.randn(*shape, dtype=getattr(core, dtype)) * 3
    if case == 1:
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)  # a strided input: made contiguous first
    out = get_operator("avg_pool")(x, *geometry)
    _assert_all_close([out], [_exact("avg_pool", x, *geometry)], dtype)
    g = core.randn(tuple(out.shape), dtype=x.dtype)
    got = get_operator("avg_pool_backward")(g, x, *geometry)
    _assert_all_close([got], [_exact("avg_pool_backward", g, x, *geometry)], dtype)
    assert c_calls["avg_pool"] == 1 and c_calls["avg_pool_backward"] == 1


def test_avg_pool_gradients_through_the_c_kernels_gradcheck(c_calls):
    from core.autograd import gradcheck, gradgradcheck

    x = core.randn(2, 2, 6, 5, dtype=core.float64, requires_grad=True)
    for args in ((3, 2, 1, True, False), (2, 1, 0, False, True, 3)):
        def pool(x, args=args):
            return core.nn.functional.avg_pool2d(x, *args)

        assert gradcheck(pool, (x,)) and gradgradcheck(pool, (x,))
    assert c_calls["avg_pool"] and c_calls["avg_pool_backward"]


def test_conv_and_pool_fall_back_where_c_does_not_apply(c_calls):
    geometry = ((1, 1, 1), (0, 1, 0), (1, 1, 1), 1)
    x3, w3 = core.randn(1, 2, 4, 4, 4), core.randn(3, 2, 2, 2, 2)
    assert_close(get_operator("convolution")(x3, w3, None, *geometry), _decomposed("convolution", x3, w3, None,
                                                                                   *geometry))
    xi = core.randint(-5, 5, (2, 3, 6, 6))
    pool = ((2, 2), (2, 2), (0, 0), (1, 1), False)
    assert_close(get_operator("max_pool")(xi, *pool), _decomposed("max_pool", xi, *pool))
    avg, avg3d = ((2, 2), (2, 2), (0, 0), False, True, None), ((2, 2, 2), (2, 2, 2), (0, 0, 0), False, True, None)
    for x, geometry in ((xi, avg), (core.randn(1, 2, 4, 4, 4), avg3d)):  # int, 3-D (half: test_cpu_c_half.py)
        assert_close(get_operator("avg_pool")(x, *geometry), _decomposed("avg_pool", x, *geometry))
    empty = core.randn(0, 2, 5, 5)
    assert get_operator("convolution")(empty, core.randn(3, 2, 3, 3), None, (1, 1), (0, 0), (1, 1), 1).shape \
        == (0, 3, 3, 3)
    assert c_calls == dict.fromkeys(_CONV_OPS, 0)
    # half operands oneDNN does not take run the float32 convolution (oneDNN's or C) and round once
    xh, wh = core.randn(1, 2, 5, 5).half(), core.randn(3, 2, 3, 3).half()
    out = get_operator("convolution")(xh, wh, None, (1, 1), (0, 0), (1, 1), 1)
    assert out.dtype == core.float16
    assert_close(out, get_operator("convolution")(xh.float(), wh.float(), None, (1, 1), (0, 0), (1, 1), 1).half())


def test_conv_and_pool_refuse_out_of_bounds_views_before_c(c_calls):
    from core_cpu_c.layout import LayoutError

    good = core.rand(1, 1, 4, 4)
    bad = Tensor._make(good._storage, (1, 1, 4, 8), (32, 32, 8, 1), 0, good.dtype)  # contiguous, past the end
    with pytest.raises(LayoutError, match="reaches element"):
        get_operator("convolution")(bad, core.rand(2, 1, 3, 3), None, (1, 1), (0, 0), (1, 1), 1)
    with pytest.raises(LayoutError, match="reaches element"):
        get_operator("max_pool")(bad, (2, 2), (2, 2), (0, 0), (1, 1), False)
    assert c_calls == dict.fromkeys(_CONV_OPS, 0)


def test_cnn_gradients_through_the_c_kernels_gradcheck(c_calls):
    from core.autograd import gradcheck, gradgradcheck

    x = core.randn(2, 4, 7, 6, dtype=core.float64, requires_grad=True)
    w = core.randn(6, 2, 3, 2, dtype=core.float64, requires_grad=True)
    b = core.randn(6, dtype=core.float64, requires_grad=True)

    def net(x, w, b):
        return core.nn.functional.max_pool2d(core.nn.functional.conv2d(x, w, b, (2, 1), 1, (1, 2), 2), 2, 1, 1)

    assert gradcheck(net, (x, w, b))
    x1, w1 = x[:, :, 0].detach().requires_grad_(), w[:, :, 0].detach().requires_grad_()
    assert gradgradcheck(lambda x, w: core.nn.functional.conv1d(x, w, None, 2, 1, 1, 2), (x1, w1))
    assert c_calls["convolution"] and c_calls["convolution_backward"] and c_calls["max_pool_backward"]


def test_conv_and_pool_kernels_match_torch(c_calls):
    torch = pytest.importorskip("torch")
    import core.nn.functional as F

    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((3, 4, 11, 10)), rng.standard_normal((6, 2, 3, 3)), rng.standard_normal(6)
    g = rng.standard_normal((3, 6, 5, 8))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    cx, cw, cb = (core.tensor(a, requires_grad=True) for a in (x, w, b))
    expected = torch.nn.functional.max_pool2d(torch.nn.functional.conv2d(tx, tw, tb, 2, 1, (1, 2), 2), 2, 1, 1, 1,
                                              True)
    out = F.max_pool2d(F.conv2d(cx, cw, cb, 2, 1, (1, 2), 2), 2, 1, 1, 1, True)
    assert_close(out, core.tensor(expected.detach().numpy()))
    g = rng.standard_normal(tuple(out.shape))
    expected.backward(torch.tensor(g))
    out.backward(core.tensor(g))
    for mine, theirs in ((cx, tx), (cw, tw), (cb, tb)):
        assert_close(mine.grad, core.tensor(theirs.grad.numpy()))
    assert c_calls["convolution_backward"] == 1 and c_calls["max_pool_backward"] == 1


# -- fused gelu and layer norm (csrc/norm.c) ---------------------------------------------------------------------
_NORM_OPS = ("gelu", "gelu_backward", "layer_norm", "layer_norm_backward", "batch_norm", "batch_norm_backward")


@pytest.fixture
def norm_calls(monkeypatch):
    """C calls of the gelu / layer norm / batch norm kernels, per op."""
    return count_c_calls(monkeypatch, _NORM_OPS)


def _exact(op, *args):
    """``op``'s decomposition run in float64 on float32 operands, rounded back: float32's C kernels keep their
    statistics and sums in double, more accurate than the float32 decomposition (whose sums over 1000 rows are
    ~1e-6 off). Other tensors (integer targets) stay as they are."""
    if not any(isinstance(a, Tensor) and a.dtype == core.float32 for a in args):
        return _decomposed(op, *args)
    out = _decomposed(op, *(a.double() if isinstance(a, Tensor) and a.dtype == core.float32 else a for a in args))
    return out.float() if isinstance(out, Tensor) else tuple(None if t is None else t.float() for t in out)


def _assert_close_to_decomposition(got, expected, dtype):
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-10}
    for g, e in zip(got, expected):
        assert (g is None) == (e is None)
        if e is not None:
            assert g.shape == e.shape and g.dtype == e.dtype
            assert_close(g, e, **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (4, 128, 96)])  # 49152 elements: the OpenMP loops
def test_gelu_kernels_match_the_decomposition(norm_calls, dtype, approximate, shape):
    d = getattr(core, dtype)
    x, g = core.randn(shape, dtype=d) * 3, core.randn(shape, dtype=d)
    _assert_close_to_decomposition([get_operator("gelu")(x, approximate)],
                                   [_exact("gelu", x, approximate)], dtype)
    _assert_close_to_decomposition([get_operator("gelu_backward")(g, x, approximate)],
                                   [_exact("gelu_backward", g, x, approximate)], dtype)
    assert norm_calls["gelu"] == 1 and norm_calls["gelu_backward"] == 1


_LAYER_NORM_CASES = [((5, 8), (8,)), ((2, 3, 10), (3, 10)), ((7,), (7,)), ((64, 16, 48), (48,)),
                     ((4, 96, 100), (96, 100))]  # the last two: OpenMP over rows, many and few of them


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("case", range(len(_LAYER_NORM_CASES)))
def test_layer_norm_kernels_match_the_decomposition(norm_calls, dtype, affine, case):
    shape, normalized = _LAYER_NORM_CASES[case]
    d = getattr(core, dtype)
    x, g = core.randn(shape, dtype=d) * 2 + 1, core.randn(shape, dtype=d)
    w = core.randn(normalized, dtype=d) if affine in ("weight", "both") else None
    b = core.randn(normalized, dtype=d) if affine in ("bias", "both") else None
    _assert_close_to_decomposition([get_operator("layer_norm")(x, normalized, w, b, 1e-5)],
                                   [_exact("layer_norm", x, normalized, w, b, 1e-5)], dtype)
    masks = [(True, True, True), (True, False, False), (False, True, False), (False, False, True)]
    for mask in masks:
        got = get_operator("layer_norm_backward")(g, x, normalized, w, b, 1e-5, mask)
        _assert_close_to_decomposition(got, _exact("layer_norm_backward", g, x, normalized, w, b, 1e-5, mask),
                                       dtype)
    assert norm_calls["layer_norm"] == 1 and norm_calls["layer_norm_backward"] == len(masks)


def test_norm_kernels_take_strided_operands(norm_calls):
    x = core.randn(16, 8).t()
    g = core.randn(16, 8).t()
    w = core.randn(32)[::2]
    _assert_close_to_decomposition([get_operator("gelu_backward")(g, x, "none")],
                                   [_exact("gelu_backward", g, x, "none")], "float32")
    _assert_close_to_decomposition([get_operator("layer_norm")(x, (16,), w, None, 1e-5)],
                                   [_exact("layer_norm", x, (16,), w, None, 1e-5)], "float32")
    mask = (True, True, True)
    _assert_close_to_decomposition(get_operator("layer_norm_backward")(g, x, (16,), w, None, 1e-5, mask),
                                   _exact("layer_norm_backward", g, x, (16,), w, None, 1e-5, mask), "float32")
    assert norm_calls["gelu_backward"] == 1 and norm_calls["layer_norm"] == 1 and norm_calls["layer_norm_backward"]


def test_layer_norm_backward_does_not_depend_on_the_thread_count(norm_calls):
    x, g, w = core.randn(256, 512), core.randn(256, 512), core.randn(512)
    before = cpu_c.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            cpu_c.set_num_threads(threads)
            results.append(get_operator("layer_norm_backward")(g, x, (512,), w, None, 1e-5, (True, True, True)))
    finally:
        cpu_c.set_num_threads(before)
    for other in results[1:]:  # the weight and bias gradients differ only in how the per-thread sums are added
        _assert_close_to_decomposition(other, results[0], "float32")
    assert norm_calls["layer_norm_backward"] == 3


def test_norm_kernels_fall_back_where_c_does_not_apply(norm_calls):
    x = core.randn(4, 8)
    for odd in (x.half(), core.randn(0, 8)):  # another dtype, an empty input
        for out in (get_operator("gelu")(odd, "none"), get_operator("layer_norm")(odd, (8,), None, None, 1e-5)):
            assert out.dtype == odd.dtype and out.shape == odd.shape
    w64 = core.randn(8, dtype=core.float64)  # mixed dtypes: the decomposition, which casts the weight
    assert_close(get_operator("layer_norm")(x, (8,), w64, None, 1e-5),
                 _decomposed("layer_norm", x, (8,), w64, None, 1e-5))
    g = core.randn(4, 8, dtype=core.float64)
    for got, expected in zip(get_operator("layer_norm_backward")(g, x, (8,), None, None, 1e-5, (True,) * 3),
                             _decomposed("layer_norm_backward", g, x, (8,), None, None, 1e-5, (True,) * 3)):
        assert_close(got, expected)
    assert_close(get_operator("gelu_backward")(g, x, "tanh"), _decomposed("gelu_backward", g, x, "tanh"))
    assert norm_calls == dict.fromkeys(_NORM_OPS, 0)


def test_norm_kernels_refuse_out_of_bounds_views_before_c(norm_calls):
    from core_cpu_c.layout import LayoutError

    good = core.rand(4, 4)
    bad = Tensor._make(good._storage, (4, 8), (8, 1), 0, good.dtype)  # contiguous, past the end
    with pytest.raises(LayoutError, match="reaches element"):
        get_operator("gelu")(bad, "none")
    with pytest.raises(LayoutError, match="reaches element"):
        get_operator("layer_norm")(bad, (8,), None, None, 1e-5)
    assert norm_calls == dict.fromkeys(_NORM_OPS, 0)


def test_transformer_gradients_through_the_norm_kernels_match_torch(norm_calls):
    torch = pytest.importorskip("torch")
    import core.nn.functional as F

    rng = np.random.default_rng(0)
    x, w, b, g = (rng.standard_normal(s) for s in ((4, 6, 16), (16,), (16,), (4, 6, 16)))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    cx, cw, cb = (core.tensor(a, requires_grad=True) for a in (x, w, b))
    for approximate in ("none", "tanh"):
        expected = torch.nn.functional.gelu(torch.nn.functional.layer_norm(tx, (16,), tw, tb), approximate=approximate)
        out = F.gelu(F.layer_norm(cx, (16,), cw, cb), approximate=approximate)
        assert_close(out, core.tensor(expected.detach().numpy()))
        expected.backward(torch.tensor(g))
        out.backward(core.tensor(g))
        for mine, theirs in ((cx, tx), (cw, tw), (cb, tb)):
            assert_close(mine.grad, core.tensor(theirs.grad.numpy()))
    assert norm_calls == {**dict.fromkeys(_NORM_OPS, 2), "batch_norm": 0, "batch_norm_backward": 0}


# -- fused batch norm (csrc/norm.c) ---------------------------------------------------------------------------------
_BATCH_NORM_SHAPES = [(6, 3), (4, 3, 7), (2, 5, 4, 3), (8, 16, 24, 24)]  # the last: OpenMP over channels


def _batch_norm_operands(shape, d, affine: bool):
    channels = shape[1]
    x = core.randn(shape, dtype=d) * 2 + 1
    w, b = (core.randn(channels, dtype=d), core.randn(channels, dtype=d)) if affine else (None, None)
    return x, core.randn(channels, dtype=d), core.rand(channels, dtype=d) + 0.5, w, b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", _BATCH_NORM_SHAPES)
def test_batch_norm_kernels_match_the_decomposition(norm_calls, dtype, training, affine, shape):
    d = getattr(core, dtype)
    x, rm, rv, w, b = _batch_norm_operands(shape, d, affine)
    expected_rm, expected_rv = rm.double(), rv.double()  # updated in place by the float64 decomposition
    expected = _decomposed("batch_norm", x.double(), expected_rm, expected_rv, *(None if t is None else t.double()
                                                                                 for t in (w, b)),
                           training, 0.1, 1e-5).to(d)
    before = (rm.clone(), rv.clone())
    _assert_close_to_decomposition([get_operator("batch_norm")(x, rm, rv, w, b, training, 0.1, 1e-5)],
                                   [expected], dtype)
    _assert_close_to_decomposition([rm, rv], [expected_rm.to(d), expected_rv.to(d)], dtype)
    assert training or (rm.equal(before[0]) and rv.equal(before[1]))
    g = core.randn(shape, dtype=d)
    masks = [(True, True, True), (True, False, False), (False, True, False), (False, False, True)]
    for mask in masks:
        got = get_operator("batch_norm_backward")(g, x, rm, rv, w, training, 1e-5, mask)
        _assert_close_to_decomposition(got, _exact("batch_norm_backward", g, x, rm, rv, w, training, 1e-5, mask),
                                       dtype)
    assert norm_calls["batch_norm"] == 1 and norm_calls["batch_norm_backward"] == len(masks)


def test_batch_norm_kernel_updates_the_running_statistics_as_torch_does(norm_calls):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4, 3, 2))
    mine, theirs = core.nn.BatchNorm2d(4).double(), torch.nn.BatchNorm2d(4).double()
    for momentum in (0.1, None):
        mine.momentum = theirs.momentum = momentum
        out = mine(core.tensor(x))
        expected = theirs(torch.tensor(x))
        assert_close(out, core.tensor(expected.detach().numpy()))
        assert_close(mine.running_mean, core.tensor(theirs.running_mean.numpy()))
        assert_close(mine.running_var, core.tensor(theirs.running_var.numpy()))
    assert norm_calls["batch_norm"] == 2


def test_batch_norm_kernels_fall_back_where_c_does_not_apply(norm_calls):
    x = core.randn(4, 3, 5)
    rm, rv = core.zeros(3), core.ones(3)
    strided_rm = core.zeros(6)[::2]  # C would write through it: the decomposition updates it instead
    got = get_operator("batch_norm")(x, strided_rm, rv.clone(), None, None, True, 0.1, 1e-5)
    assert_close(got, _decomposed("batch_norm", x, rm.clone(), rv.clone(), None, None, True, 0.1, 1e-5))
    assert_close(strided_rm, 0.1 * x.mean((0, 2)))
    w64 = core.randn(3, dtype=core.float64)  # mixed dtypes
    assert_close(get_operator("batch_norm")(x, rm, rv, w64, None, False, 0.1, 1e-5),
                 _decomposed("batch_norm", x, rm, rv, w64, None, False, 0.1, 1e-5))
    empty = core.randn(0, 3, 5)
    assert get_operator("batch_norm")(empty, rm, rv, None, None, True, 0.1, 1e-5).shape == (0, 3, 5)
    assert rm.equal(core.zeros(3)) and rv.equal(core.ones(3))
    g = core.randn(4, 3, 5, dtype=core.float64)
    for got, expected in zip(get_operator("batch_norm_backward")(g, x, rm, rv, None, True, 1e-5, (True,) * 3),
                             _decomposed("batch_norm_backward", g, x, rm, rv, None, True, 1e-5, (True,) * 3)):
        assert_close(got, expected)
    assert norm_calls["batch_norm"] == 0 and norm_calls["batch_norm_backward"] == 0


def test_batch_norm_kernels_do_not_depend_on_the_thread_count(norm_calls):
    x, g = core.randn(16, 8, 32, 32), core.randn(16, 8, 32, 32)
    before = cpu_c.get_num_threads()
    results = []
    try:
        for threads in (1, 3):
            cpu_c.set_num_threads(threads)
            rm, rv = core.zeros(8), core.ones(8)
            out = get_operator("batch_norm")(x, rm, rv, None, None, True, 0.1, 1e-5)
            results.append((out, rm, rv, *get_operator("batch_norm_backward")(g, x, None, None, None, True, 1e-5,
                                                                             (True, True, True))))
    finally:
        cpu_c.set_num_threads(before)
    assert all(a.equal(b) for a, b in zip(*results))
    assert norm_calls["batch_norm"] == 2 and norm_calls["batch_norm_backward"] == 2


# -- fused cross entropy (csrc/loss.c) -----------------------------------------------------------------------------
_LOSS_OPS = ("cross_entropy_loss", "cross_entropy_loss_backward")


@pytest.fixture
def loss_calls(monkeypatch):
    """C calls of the cross entropy kernels, per op."""
    return count_c_calls(monkeypatch, _LOSS_OPS)


def _cross_entropy_operands(rows: int, classes: int, dtype, weighted: bool, ignored: bool):
    x = core.randn(rows, classes, dtype=getattr(core, dtype)) * 4
    target = core.randint(0, classes, (rows,))
    if ignored:
        target[::3] = 2  # ignore_index 2: a class index, so its rows are skipped, not just out of range
    weight = core.rand(classes, dtype=x.dtype) + 0.5 if weighted else None
    return x, target, weight


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignored", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (1, 1), (1200, 40), (300, 10), (5000, 10)])  # 40 classes: a loop per row;
# 10: one flat loop per block of 256 rows (the last one partial); 48000 / 50000 logits: the OpenMP loops
def test_cross_entropy_kernels_match_the_decomposition(loss_calls, dtype, reduction, weighted, ignored, shape):
    x, target, weight = _cross_entropy_operands(*shape, dtype, weighted, ignored)
    ignore_index = 2 if ignored else -100
    args = (target, weight, reduction, ignore_index)
    loss = get_operator("cross_entropy_loss")(x, *args)
    _assert_close_to_decomposition([loss], [_exact("cross_entropy_loss", x, *args)], dtype)
    g = core.rand(*loss.shape, dtype=x.dtype) + 0.5
    _assert_close_to_decomposition([get_operator("cross_entropy_loss_backward")(g, x, *args)],
                                   [_exact("cross_entropy_loss_backward", g, x, *args)], dtype)
    assert loss_calls == dict.fromkeys(_LOSS_OPS, 1)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape", [(4, 5, 3), (2, 3, 4, 5), (3, 6, 1, 2, 2), (1, 2, 2)])
@pytest.mark.parametrize("permuted", [False, True])
def test_cross_entropy_kernels_take_class_dim_inputs(loss_calls, reduction, shape, permuted):
    """(N, C, d...) logits, contiguous or permuted views, and (N, d...) targets: the loss over N * d... rows."""
    x = core.randn(*shape, dtype=core.float64) * 3
    if permuted:
        x = (core.randn(*shape[2:], shape[0], shape[1], dtype=core.float64) * 3).movedim((-2, -1), (0, 1))
    target = core.randint(0, shape[1], shape[:1] + shape[2:])
    target[..., ::2] = 1  # ignore_index 1
    weight = core.rand(shape[1], dtype=x.dtype) + 0.5
    args = (target, weight, reduction, 1)
    loss = get_operator("cross_entropy_loss")(x, *args)
    assert tuple(loss.shape) == (tuple(target.shape) if reduction == "none" else ())
    assert_close(loss, _exact("cross_entropy_loss", x, *args), rtol=1e-12, atol=1e-12)
    g = core.rand(*loss.shape, dtype=x.dtype) + 0.5
    grad = get_operator("cross_entropy_loss_backward")(g, x, *args)
    assert tuple(grad.shape) == shape
    assert_close(grad, _exact("cross_entropy_loss_backward", g, x, *args), rtol=1e-12, atol=1e-12)
    assert loss_calls == dict.fromkeys(_LOSS_OPS, 1)


def test_cross_entropy_kernels_zero_ignored_rows_and_average_over_the_kept_weights(loss_calls):
    x = core.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5], [3.0, 1.0, -1.0]])
    target, weight = core.tensor([2, -100, 0]), core.tensor([2.0, 1.0, 0.5])
    losses = get_operator("cross_entropy_loss")(x, target, weight, "none", -100)
    lse = np.log(np.exp(x.numpy()).sum(1))
    assert_close(losses, core.tensor([0.5 * (lse[0] - 3.0), 0.0, 2.0 * (lse[2] - 3.0)]), rtol=1e-6, atol=1e-6)
    mean = get_operator("cross_entropy_loss")(x, target, weight, "mean", -100)
    assert_close(mean, losses.sum() / 2.5, rtol=1e-6, atol=1e-6)
    grad = get_operator("cross_entropy_loss_backward")(core.tensor(1.0), x, target, weight, "mean", -100)
    assert np.all(grad.numpy()[1] == 0)
    assert loss_calls == {"cross_entropy_loss": 2, "cross_entropy_loss_backward": 1}


def test_cross_entropy_kernels_take_strided_operands(loss_calls):
    x, target = core.randn(6, 10).t(), core.randint(0, 6, (20,))[::2]
    weight = core.rand(12)[::2]
    args = (target, weight, "mean", -100)
    assert_close(get_operator("cross_entropy_loss")(x, *args), _exact("cross_entropy_loss", x, *args),
                 rtol=1e-5, atol=1e-5)
    g = core.tensor(1.5)
    assert_close(get_operator("cross_entropy_loss_backward")(g, x, *args),
                 _exact("cross_entropy_loss_backward", g, x, *args), rtol=1e-5, atol=1e-5)
    assert loss_calls == dict.fromkeys(_LOSS_OPS, 1)


def test_cross_entropy_loss_does_not_depend_on_the_thread_count(loss_calls):
    x, target, _ = _cross_entropy_operands(4096, 16, "float32", False, True)
    before = cpu_c.get_num_threads()
    try:
        results = []
        for threads in (1, 2, 3):
            cpu_c.set_num_threads(threads)
            results.append(get_operator("cross_entropy_loss")(x, target, None, "mean", 2).item())
    finally:
        cpu_c.set_num_threads(before)
    assert results[0] == results[1] == results[2]
    assert loss_calls["cross_entropy_loss"] == 3


def test_cross_entropy_kernels_fall_back_where_c_does_not_apply(loss_calls):
    x, target = core.randn(4, 5), core.randint(0, 5, (4,))
    cases = [(x.half(), target, None), (core.randn(0, 5), target[:0], None),  # another dtype, an empty input
             (core.randn(4, 5, 0), core.randint(0, 5, (4, 0)), None),  # (N, C, d) with d = 0
             (x, target.int(), None), (x, target, core.rand(5, dtype=core.float64))]  # int32 targets, mixed dtypes
    for input, t, weight in cases:
        for reduction in ("none", "mean"):
            loss = get_operator("cross_entropy_loss")(input, t, weight, reduction, -100)
            assert_close(loss, _decomposed("cross_entropy_loss", input, t, weight, reduction, -100))
    g = core.tensor([1.0, 2.0, 3.0, 4.0], dtype=core.float64)  # a grad of another dtype
    assert_close(get_operator("cross_entropy_loss_backward")(g, x, target, None, "none", -100),
                 _decomposed("cross_entropy_loss_backward", g, x, target, None, "none", -100))
    assert loss_calls == dict.fromkeys(_LOSS_OPS, 0)


def test_cross_entropy_bad_targets_raise_the_decompositions_index_error(loss_calls):
    import core.nn.functional as F

    x = core.randn(4, 5, requires_grad=True)
    for bad in (core.tensor([0, 5, 1, 2]), core.tensor([0, -1, 1, 2]), core.tensor([-100, 1, 0, 9])):
        message = f"Target {bad[bad != -100][-1].item() if bad[-1] == 9 else bad[1].item()} is out of bounds"
        with pytest.raises(IndexError, match=message):
            F.cross_entropy(x, bad)
        with pytest.raises(IndexError, match=message):
            _decomposed("cross_entropy_loss", x, bad, None, "mean", -100)
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        get_operator("cross_entropy_loss_backward")(core.tensor(1.0), x.detach(), core.tensor([-3, 1, 0, 2]), None,
                                                     "sum", -100)
    assert loss_calls == {"cross_entropy_loss": 3, "cross_entropy_loss_backward": 1}


def test_cross_entropy_refuses_out_of_bounds_views_before_c(loss_calls):
    from core_cpu_c.layout import LayoutError

    good = core.rand(4, 4)
    bad = Tensor._make(good._storage, (4, 8), (8, 1), 0, good.dtype)  # contiguous, past the end
    with pytest.raises(LayoutError, match="reaches element"):
        get_operator("cross_entropy_loss")(bad, core.tensor([0, 1, 2, 3]), None, "mean", -100)
    assert loss_calls == dict.fromkeys(_LOSS_OPS, 0)


def test_mlp_cross_entropy_gradients_through_the_c_kernels_match_torch(loss_calls):
    import core.nn.functional as F

    torch = pytest.importorskip("torch")
    core.manual_seed(0)  # float32 gradients summed over three backward passes: a fixed draw, not ~3% flaky ones
    x, target, weight = _cross_entropy_operands(64, 10, "float32", True, True)
    cx, cw = x.clone().requires_grad_(True), core.randn(10, 10, requires_grad=True)
    tx, tw = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (cx, cw))
    for reduction in ("mean", "sum", "none"):
        loss = F.cross_entropy(cx @ cw, target, weight, ignore_index=2, reduction=reduction)
        expected = torch.nn.functional.cross_entropy(tx @ tw, torch.tensor(target.numpy()),
                                                     torch.tensor(weight.numpy()), ignore_index=2,
                                                     reduction=reduction)
        assert_close(loss, core.tensor(expected.detach().numpy()), rtol=1e-5, atol=1e-5)
        loss.sum().backward()
        expected.sum().backward()
        for c, t in ((cx, tx), (cw, tw)):
            assert_close(c.grad, core.tensor(t.grad.numpy()), rtol=1e-4, atol=1e-4)
    assert loss_calls == dict.fromkeys(_LOSS_OPS, 3)


def test_each_kernel_lives_in_the_family_module_of_its_op():
    """Issue 16's backend shape: an op's kernel is in core_cpu_c/kernels/<F>.py, F the core.ops module declaring it."""
    from core_cpu_c.kernels import FAMILIES
    from core_cpu_c.plugin import _STATE

    load_cpu_c()
    core.zeros(1) + 1  # the kernels are registered on first use
    for family in FAMILIES:
        for op in family.kernels(_STATE["context"]):
            assert get_operator(op).declared_in.rsplit(".", 1)[-1] == family.__name__.rsplit(".", 1)[-1], op
