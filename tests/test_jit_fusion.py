"""core.jit's fusion pass and ``jit::fused``: which nodes group, fused results equal eager on every device, autograd
through fused groups, the cpu_c compiler (cache, threads, failures) and CUDA sources compiling to PTX."""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import core
import core.jit as jit
import core.nn as nn
from core.codegen import CRenderer, FusedKernel, FusedReduction, FusedStep
from core.jit.fused import STATS
from core.jit.passes import optimize
from core.jit.passes.fusion import find_groups
from core.plugins import manager
from core.testing import assert_close

CPU = core.device("cpu")


def _fuses(device: str) -> bool:
    dev = core.device(device)
    return manager.runtime_for(dev.type).supports_fusion(dev)


needs_cpu_fusion = pytest.mark.skipif(not _fuses("cpu"), reason="the cpu backend does not fuse (no cpu_c or no gcc)")


def _fused_nodes(graph) -> list:
    return [n for n in graph.nodes if n.op == "jit::fused"]


def _ops(graph) -> list:
    return [n.op for n in graph.nodes]


def _trace(fn, *inputs):
    return jit.trace(fn, inputs)


def _kernel_runs(fn, *args):
    """(result, how many fused kernels launched) of ``fn(*args)``."""
    before = STATS["kernel"]
    out = fn(*args)
    return out, STATS["kernel"] - before


# -- grouping rules ----------------------------------------------------------------------------------------------

@needs_cpu_fusion
def test_an_elementwise_chain_becomes_one_fused_node():
    def f(x, a):
        return ((x * 2.0 + a).relu() * 3 - 1) / a

    traced = _trace(f, core.randn(4, 8), core.randn(8))
    assert _ops(traced.graph) == ["jit::fused"]
    assert "jit::fused[mul, add, relu, mul, sub, div](%x, %a)" in str(traced.graph)
    kernel = traced.graph.nodes[0].attrs["kernel"]
    assert kernel.shape == (4, 8) and kernel.inputs == ("float32", "float32") and len(kernel.steps) == 6


@needs_cpu_fusion
def test_a_value_read_outside_the_group_becomes_an_extra_output():
    def f(x, w):
        y = x * 2
        z = (y - 1).exp() + y
        return z, y @ w

    x, w = core.randn(3, 4), core.randn(4, 2)
    traced = _trace(f, x, w)
    (node,) = _fused_nodes(traced.graph)
    assert node.attrs["ops"] == ["mul", "sub", "exp", "add"] and len(node.outputs) == 2
    with core.no_grad():
        (z, p), runs = _kernel_runs(traced, x, w)
    assert runs == 1
    assert_close(z, f(x, w)[0])
    assert_close(p, f(x, w)[1])


@needs_cpu_fusion
def test_open_groups_merge_at_a_node_reading_both():
    def f(x, y):
        a = x * 2
        b = y + 1  # a second group: nothing outside read the first yet
        return (a * b).exp()

    graph = _trace(f, core.randn(4), core.randn(4)).raw_graph
    assert [[n.op for n in g] for g in find_groups(graph)] == [["mul", "add", "mul", "exp"]]


@needs_cpu_fusion
def test_an_outside_reader_seals_the_group_before_later_nodes():
    def f(x, w):
        y = x * 2 + 1
        m = y @ w  # reads y: nothing after this may join y's group
        return (y - 3) * 4, m

    graph = _trace(f, core.randn(3, 4), core.randn(4, 4)).raw_graph
    assert [[n.op for n in g] for g in find_groups(graph)] == [["mul", "add"], ["sub", "mul"]]


@needs_cpu_fusion
def test_an_inplace_node_is_a_barrier():
    def f(x):
        a = x * 2
        b = a + 1
        x.add_(1)  # a fused node placed after this would read the mutated x
        return b * 3 + x

    x = core.randn(5)
    graph = _trace(f, x.clone()).raw_graph
    groups = [[n.op for n in g] for g in find_groups(graph)]
    assert ["mul", "add"] in groups and not any("copy_" in g for g in groups)
    assert all(len(g) < 4 for g in groups)
    traced = jit.trace(f, (x.clone(),))
    with core.no_grad():
        assert_close(traced(x.clone()), f(x.clone()))


@needs_cpu_fusion
def test_an_unsupported_op_breaks_the_chain_and_single_nodes_stay():
    def f(x):
        y = (x * 2 + 1).cumsum(0)
        return (y * 3 - 1).matmul(x.t()).relu()

    x = core.randn(4, 4)
    traced = _trace(f, x)
    assert [[n.op for n in g] for g in find_groups(traced.raw_graph)] == [["mul", "add"], ["mul", "sub"], ["relu"]]
    ops = _ops(traced.graph)
    assert ops.count("jit::fused") == 2 and ops.index("jit::fused") < ops.index("cumsum") and "relu" in ops
    with core.no_grad():
        assert_close(traced(x), f(x))


@needs_cpu_fusion
def test_smaller_shapes_broadcast_in_and_reductions_close_groups():
    def layer_norm(x, w, b):
        mu = x.mean(-1, keepdim=True)
        d = x - mu
        var = (d * d).mean(-1, keepdim=True)
        return d * (var + 1e-5).rsqrt() * w + b

    args = core.randn(6, 5, 32), core.randn(32), core.randn(32)
    traced = _trace(layer_norm, *args)
    assert [n.attrs["ops"] for n in _fused_nodes(traced.graph)] == [["sub", "mul", "sum"], ["div", "add", "rsqrt"],
                                                                      ["mul", "mul", "add"]]
    with core.no_grad():
        out, runs = _kernel_runs(traced, *args)
    assert runs == 3
    assert_close(out, layer_norm(*args), rtol=1e-5, atol=1e-5)


@needs_cpu_fusion
def test_groups_stay_on_one_device():
    if "opencl" not in core.testing.available_devices():
        pytest.skip("needs a second device (opencl)")

    def f(x, y):
        a = x * 2 + 1
        b = y * 3 - 1
        return a.exp() * 2, (b + 1).relu()

    x, y = core.randn(8), core.randn(8, device="opencl")
    traced = _trace(f, x, y)
    devices = [{v.device.type for v in n.inputs + n.outputs} for n in _fused_nodes(traced.graph)]
    assert devices == [{"cpu"}, {"opencl"}]
    with core.no_grad():
        for got, want in zip(traced(x, y), f(x, y)):
            assert_close(got, want)


def test_the_numpy_reference_backend_does_not_fuse(monkeypatch):
    from core.backends.numpy.runtime import RUNTIME as NUMPY

    assert NUMPY.supports_fusion(CPU) is False
    with pytest.raises(NotImplementedError, match="does not compile fused kernels"):
        NUMPY.compile_fused(None, CPU)
    graph = _trace(lambda x: (x * 2 + 1).exp(), core.randn(4)).raw_graph
    monkeypatch.setitem(manager._RUNTIME_CACHE, "cpu", NUMPY)
    assert _ops(optimize(graph)) == ["mul", "add", "exp"]


# -- numerics: fused kernels equal eager on every device ---------------------------------------------------------

def _check(device, fn, *inputs, rtol=1e-5, atol=1e-6, expect_kernels=None):
    """Traced ``fn`` equals eager on the CPU reference under no_grad; every fused node launched its kernel (or
    ``expect_kernels[device]`` kernels ran: a backend may decline a layout)."""
    traced = jit.trace(fn, inputs)
    with core.no_grad():
        got, runs = _kernel_runs(traced, *inputs)
        want = fn(*[x.cpu() for x in inputs])
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert_close(g, w, rtol=rtol, atol=atol)
    if _fuses(device):
        n = len(_fused_nodes(traced.graph))
        assert n >= 1 and runs == (expect_kernels or {}).get(device, n)
    return traced


def test_broadcasting_scalars_and_comparisons(device):
    def f(x, a, c):
        y = core.where(x > 0.25, x * a, -x / c)
        y = (y + 2).sigmoid() * core.maximum(y, a) - y.abs().sqrt()
        nan_where_positive = core.where(x < 0, y, float("nan"))
        return (y.clamp(-0.5, 0.75) + (x <= c).float(), nan_where_positive * float("inf"),
                core.sub(nan_where_positive.relu(), a, alpha=-2.5), core.add(x, y, alpha=2))

    x, a, c = core.randn(4, 8, 16, device=device), core.randn(16, device=device), core.rand(8, 1, device=device) + 1
    _check(device, f, x, a, c)


def test_non_contiguous_inputs_and_strided_rows(device):
    def f(x, y):
        return (x * 2 - y).tanh() + x.exp() * 0.5

    x = core.randn(10, 6, device=device).t()  # transposed: inner stride 6
    y = core.randn(20, 12, device=device)[::2, 1:7].t()  # sliced, then transposed
    _check(device, f, x, y)


def test_float64_and_casts(device):
    if not manager.runtime_for(core.device(device).type).supports_float64:
        pytest.skip(f"{device} has no float64")

    def f(x, y):
        z = x.double() * y + 1e-300
        return (z.log() * -1).float() + x, z

    x, y = core.rand(3, 5, device=device) + 0.1, core.rand(5, dtype=core.float64, device=device)
    _check(device, f, x, y, rtol=1e-12, atol=1e-12)


def test_reductions_over_trailing_and_all_dims(device):
    def f(x):
        y = (x * 0.5).exp()
        return (y.sum(), (x - 1).amax((1, 2)), (x + 1).amin(-1, keepdim=True), (x * x).mean((-1,)),
                (y + 1).sum((0, 1, 2), keepdim=True))

    x = core.randn(16, 9, 33, device=device)
    _check(device, f, x, rtol=1e-5, atol=1e-4)
    x[2, 3, 4] = float("nan")
    _check(device, f, x.transpose(0, 2), rtol=1e-5, atol=1e-4)  # NaN propagates; strided reduced dims


def test_large_inputs_use_threads(device):
    def f(x, b):
        return (((x * 1.5 + b).relu() * 0.5 - x).abs() / 3.0 + 1.0, (x * b).sum(-1), (x * x - 0.5).sum(),
                (x - b).amax((0, 1)))

    # multiples of 1/8: every sum is exact in float32 too, whatever the order; a device declines the reductions to
    # one long row (their ops run)
    x, b = core.randint(-8, 8, (300, 1000), device=device) / 8, core.randint(-8, 8, (1000,), device=device) / 8
    _check(device, f, x, b, expect_kernels={"opencl": 2, "cuda": 2, "webgpu": 2})


def test_empty_tensors(device):
    def f(x):
        return (x * 2 + 1).exp(), (x - 1).sum(-1)

    # opencl, cuda and webgpu leave the sums of nothing unfused
    _check(device, f, core.randn(0, 4, device=device), expect_kernels={"opencl": 1, "cuda": 1, "webgpu": 1})


# -- autograd ----------------------------------------------------------------------------------------------------

def test_gradients_through_a_fused_group_equal_eager(device):
    def f(x, w):
        return ((x * w + 1).tanh() * 2 - x).sum(-1)

    x = core.randn(4, 6, device=device, requires_grad=True)
    w = core.randn(6, device=device, requires_grad=True)
    traced = jit.trace(f, (x, w))
    before = dict(STATS)
    traced(x, w).sum().backward()
    if _fused_nodes(traced.graph):  # a forward and a generated backward kernel (core.jit.fused_backward)
        assert STATS["unfused"] == before["unfused"] and STATS["kernel"] >= before["kernel"] + 2
    got = x.grad, w.grad
    x.grad = w.grad = None
    f(x, w).sum().backward()
    assert_close(got[0], x.grad, rtol=1e-5)
    assert_close(got[1], w.grad, rtol=1e-5)


@needs_cpu_fusion
def test_gradcheck_of_a_traced_function_with_fused_groups():
    def f(x, y):
        return ((x * y).sigmoid() + x.exp() * 0.25 - y).sum(-1)

    x = core.rand(3, 4, dtype=core.float64, requires_grad=True)
    y = core.rand(4, dtype=core.float64, requires_grad=True)
    traced = jit.trace(f, (x, y))
    assert _fused_nodes(traced.graph)
    assert core.autograd.gradcheck(traced, (x, y))


# -- models after the whole pipeline -----------------------------------------------------------------------------

class _NormedBlock(nn.Module):
    """Linear, SiLU written out, a hand-written LayerNorm with parameters: chains that fuse inside a module."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(12, 16)
        self.weight = nn.Parameter(core.rand(16) + 0.5)
        self.bias = nn.Parameter(core.randn(16))

    def forward(self, x):
        h = self.lin(x)
        h = h * h.sigmoid()
        d = h - h.mean(-1, keepdim=True)
        return d * ((d * d).mean(-1, keepdim=True) + 1e-5).rsqrt() * self.weight + self.bias


def test_models_equal_eager_after_optimize(device):
    lenet = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 10))
    models = [
        (_NormedBlock(), core.randn(3, 7, 12)),
        (nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)),
         core.randn(8, 784)),
        (lenet, core.randn(4, 1, 28, 28)),
        (nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1, batch_first=True), core.randn(2, 5, 16)),
    ]
    for model, x in models:
        model = model.to(device).eval()
        x = x.to(device)
        traced = jit.trace(model, x)
        with core.no_grad():
            assert_close(traced(x), model(x), rtol=1e-4, atol=1e-5)
    block = jit.trace(models[0][0], models[0][1].to(device))
    assert len(_fused_nodes(block.graph)) == (4 if _fuses(device) else 0)
    assert_close(block(models[0][1].to(device)), models[0][0](models[0][1].to(device)), rtol=1e-4, atol=1e-5)


# -- the cpu_c compiler ------------------------------------------------------------------------------------------

try:
    from core_cpu_c import jit as cpu_c_jit
except ImportError:
    cpu_c_jit = None
needs_cpu_c = pytest.mark.skipif(cpu_c_jit is None, reason="the core-cpu-c plugin is not installed")


@needs_cpu_fusion
def test_fused_kernels_follow_set_num_threads():
    import core_cpu_c

    _, lib = cpu_c_jit.compile_library("#include <omp.h>\nint threads(void) { int n = 0;\n#pragma omp parallel\n"
                                       "{\n#pragma omp master\nn = omp_get_num_threads();\n}\nreturn n; }\n",
                                       "int threads(void);")
    before = core_cpu_c.get_num_threads()
    try:
        for n in (1, 2):
            core_cpu_c.set_num_threads(n)
            assert lib.threads() == n
    finally:
        core_cpu_c.set_num_threads(before)


@needs_cpu_fusion
def test_libraries_are_cached_on_disk_by_source(monkeypatch, tmp_path):
    monkeypatch.setenv("CORE_JIT_CACHE_DIR", str(tmp_path))
    source = f"int answer(void) {{ return {np.random.default_rng().integers(1 << 30)}; }}\n"
    _, lib = cpu_c_jit.compile_library(source, "int answer(void);")
    assert lib.answer() == int(source.split("return ")[1].split(";")[0])
    assert [p.suffix for p in tmp_path.iterdir()] == [".so"]  # no temporary files left behind
    with pytest.raises(RuntimeError, match="gcc failed to compile a fused kernel"):
        cpu_c_jit.compile_library("int broken(void) { return }", "int broken(void);")


@needs_cpu_c
def test_without_gcc_cpu_c_does_not_fuse_and_says_why(monkeypatch):
    monkeypatch.setattr(cpu_c_jit, "compiler", lambda: None)
    from core_cpu_c.runtime import RUNTIME

    assert RUNTIME.supports_fusion(CPU) is False
    with pytest.raises(RuntimeError, match="need gcc on PATH"):
        cpu_c_jit.compile_library("int f(void) { return 1; }", "int f(void);")


@needs_cpu_fusion
def test_a_kernel_that_fails_to_compile_warns_and_runs_the_ops(monkeypatch):
    def f(x):
        return (x * 2 + 1).exp()

    x = core.randn(5)
    traced = jit.trace(f, (x,))
    from core_cpu_c.runtime import CpuCRuntime

    def broken(self, kernel, dev):
        raise RuntimeError("no compiler today")

    monkeypatch.setattr(CpuCRuntime, "compile_fused", broken)
    with pytest.warns(RuntimeWarning, match=r"could not compile fused_mul_add_exp for cpu .*no compiler today"):
        out = traced(x)
    assert_close(out, f(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per node
        assert_close(traced(x), f(x))


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_the_core_c_dialect_renders_a_fused_reduction_that_runs(tmp_path):
    """CRenderer.render_fused (the coordinate-peeling form the device dialects share), compiled and run."""
    steps = (FusedStep("mul", "(a * b)", (("in", 0), ("in", 1)), "float64", "float64"),
             FusedStep("sub", "(a - b)", (("v", 0), ("lit", 0.5)), "float64", "float64"))
    kernel = FusedKernel("fused_mul_sub", (3, 4), ("float64", "float64"), steps, (0,),
                         FusedReduction("sum", 1, 1, False, "float64", "float64"))
    name, source = CRenderer().render_fused(kernel, 1, 1)
    (tmp_path / "k.c").write_text(source)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-fopenmp", str(tmp_path / "k.c"), "-o", str(tmp_path / "k.so"),
                    "-lm"], check=True)
    x = np.arange(12.0).reshape(4, 3).T  # transposed: strides (1, 3)
    b = np.array([1.0, -2.0, 3.0, 0.5])  # broadcast over rows
    product, total = np.empty((3, 4)), np.empty(3)
    i64 = ctypes.c_longlong

    def longs(*values):
        return (i64 * len(values))(*values)

    def ptr(a):
        return a.ctypes.data_as(ctypes.c_void_p)

    getattr(ctypes.CDLL(str(tmp_path / "k.so")), name)(
        i64(3), i64(4), longs(3), longs(4), ptr(product), ptr(total),
        ptr(x), longs(1), longs(3), i64(0), ptr(b), longs(0), longs(1), i64(0))
    np.testing.assert_allclose(product, x * b)
    np.testing.assert_allclose(total, (x * b - 0.5).sum(-1))


def test_c_literals_spell_special_values():
    r = CRenderer()
    assert r.literal(float("inf"), "float32") == "((float)(INFINITY))"
    assert r.literal(-math.inf, "float64") == "((double)(-INFINITY))"
    assert r.literal(float("nan"), "float32") == "((float)(NAN))"
    assert r.literal(0.1, "float64") == "((double)(0.1))" and r.literal(3, "float32") == "((float)(3.0))"


# -- CUDA: rendered fused sources compile to PTX (no GPU needed) -------------------------------------------------

def _nvrtc():
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
        return nvrtc
    except Exception:
        return None


NVRTC = _nvrtc()


@pytest.mark.skipif(NVRTC is None, reason="NVRTC is not available (pip install nvidia-cuda-nvrtc)")
def test_cuda_fused_sources_compile_to_ptx():
    core_cuda_jit = pytest.importorskip("core_cuda.jit", reason="the core-cuda plugin is not installed")
    steps = (FusedStep("mul", "(a * b)", (("in", 0), ("lit", 1.5)), "float32", "float32"),
             FusedStep("add", "(a + b)", (("v", 0), ("in", 1)), "float64", "float64"),
             FusedStep("gt", "(a > b)", (("v", 1), ("lit", -math.inf)), "bool", "float64"),
             FusedStep("where", "(a != 0 ? b : c)", (("v", 2), ("v", 1), ("lit", math.nan)), "float64", "float64"),
             FusedStep("exp", "{f:exp}(a)", (("v", 3),), "float64", "float64"))
    elementwise = FusedKernel("fused_test", (4, 8), ("float32", "float64"), steps, (2, 4))
    reduction = FusedKernel("fused_test_red", (4, 8), ("float32", "float64"), steps, (4,),
                            FusedReduction("amax", 4, 1, True, "float64", "float64"))
    cases = [(elementwise, (r,)) for r in range(4)] + [(reduction, (k, r)) for k in (0, 2) for r in (1, 3)]
    for kernel, ranks in cases:
        name, source = core_cuda_jit.RENDERER.render_fused(kernel, *ranks)
        program = NVRTC.createProgram(source, "fused.cu", [], [])
        try:
            NVRTC.compileProgram(program, ["-arch=compute_80"])
            ptx = NVRTC.getPTX(program)
        except NVRTC.NVRTCError as exc:
            pytest.fail(f"NVRTC: {exc}\n{NVRTC.getProgramLog(program)}\n{source}")
        finally:
            NVRTC.destroyProgram(program)
        assert f".entry {name}(" in (ptx.decode() if isinstance(ptx, bytes) else ptx)
