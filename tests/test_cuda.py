"""The cuda backend (plugins/cuda): clean unavailability, every CUDA C source compiles to PTX, kernel logic on host.

Without a GPU (the CI case) the backend must report itself unavailable with the reason, its kernels must still
compile through NVRTC (or nvcc), and its kernel code — written over an array module — runs here on NumPy as
the ``cudasim`` device (two devices, host memory) against the op-conformance suite. Tests that need a GPU skip.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import core

core_cuda = pytest.importorskip("core_cuda", reason="the core-cuda plugin is not installed (pip install plugins/cuda)")
from core_cuda import codegen, raw  # noqa: E402
from core_cuda.arrays import DeviceArrays  # noqa: E402
from core_cuda.kernels import all_kernels  # noqa: E402
from core_cuda.runtime import probe  # noqa: E402

from core.backends.api import Runtime, hookimpl, register_all  # noqa: E402
from core.backends.kit.reference import elementwise  # noqa: E402
from core.testing.backend_check import DEFAULT_GRAD_OPS  # noqa: E402

GPU_OK, GPU_REASON = probe()
needs_gpu = pytest.mark.skipif(not GPU_OK, reason=f"cuda unavailable: {GPU_REASON}")


# -- availability ----------------------------------------------------------------------------------------

@pytest.mark.skipif(GPU_OK, reason="a GPU is present: the unavailable path cannot be observed")
def test_without_gpu_cuda_is_unavailable_with_reason_and_hint():
    assert GPU_REASON.startswith(("no CUDA device", "CuPy not installed"))
    assert not core.cuda.is_available() and core.cuda.device_count() == 0
    reason = core.cuda.unavailable_reason()
    assert GPU_REASON in reason and "pip install -e '.[cuda]' -e plugins/cuda" in reason
    with pytest.raises(RuntimeError, match="backend 'cuda' for device type 'cuda' is unavailable"):
        core.zeros(2, device="cuda")


@pytest.mark.skipif(GPU_OK, reason="a GPU is present: the unavailable path cannot be observed")
def test_core_info_shows_cuda_unavailable():
    out = subprocess.run([sys.executable, "-m", "core", "info"], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    line = next(line for line in out.splitlines() if line.split()[:2] == ["cuda", "cuda"])
    assert "unavailable: " in line and GPU_REASON in line


def test_probe_without_cupy_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    ok, reason = probe()
    assert not ok and reason.startswith("CuPy not installed")


# -- layouts of rendered kernels --------------------------------------------------------------------------

def _elements(base: np.ndarray, shape, strides) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(base, shape, tuple(s * base.itemsize for s in strides)).ravel()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=0, max_size=5), st.data())
def test_coalesced_layout_walks_the_same_elements(shape, data):
    """Permuted, broadcast and size-1 dims: the plan addresses each operand's elements in the output's order."""
    shape = tuple(shape)
    n = int(np.prod(shape))
    out = np.empty(shape, np.float32)
    perm = data.draw(st.permutations(range(len(shape))))
    a = np.arange(n, dtype=np.float32).reshape([shape[p] for p in perm]).transpose(np.argsort(perm))
    kept = tuple(s if data.draw(st.booleans()) else 1 for s in shape)[data.draw(st.integers(0, len(shape))):]
    b = np.arange(int(np.prod(kept)), dtype=np.float32).reshape(kept)
    plan = raw.plan(out, [a, b])
    if plan is None:  # beyond the compiled ranks: the ufunc path takes it
        assert len(shape) > codegen.MAX_RANK
        return
    flat, strides = plan
    assert len(flat) <= max(len(shape), 0) and int(np.prod(flat)) == n
    np.testing.assert_array_equal(_elements(a, flat, strides[1]), a.ravel())
    np.testing.assert_array_equal(_elements(b, flat, strides[2]), np.broadcast_to(b, shape).ravel())
    np.testing.assert_array_equal(_elements(np.arange(n, dtype=np.float32).reshape(shape), flat, strides[0]),
                                  np.arange(n, dtype=np.float32))


# -- every CUDA C source compiles to PTX ---------------------------------------------------------------------

def _nvrtc():
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()  # loads libnvrtc: fails without the nvidia-cuda-nvrtc wheel or a toolkit
        return nvrtc
    except Exception:
        return None


NVRTC = _nvrtc()
NVCC = shutil.which("nvcc")
ARCH = "-arch=compute_80"


def compile_to_ptx(source: str, tmp_path) -> str:
    """PTX of ``source`` through NVRTC (or nvcc); AssertionError with the compiler's log on any error."""
    if NVRTC is not None:
        program = NVRTC.createProgram(source, "kernel.cu", [], [])
        try:
            NVRTC.compileProgram(program, [ARCH])
            ptx = NVRTC.getPTX(program)
            return ptx.decode() if isinstance(ptx, bytes) else ptx
        except NVRTC.NVRTCError as exc:
            pytest.fail(f"NVRTC: {exc}\n{NVRTC.getProgramLog(program)}\n--- source ---\n{source[:4000]}")
        finally:
            NVRTC.destroyProgram(program)
    cu = tmp_path / "kernel.cu"
    cu.write_text(source)
    done = subprocess.run([NVCC, "--ptx", ARCH, str(cu), "-o", str(tmp_path / "kernel.ptx")], capture_output=True,
                          text=True, timeout=300)
    if done.returncode:
        pytest.fail(f"nvcc: {done.stderr}\n--- source ---\n{source[:4000]}")
    return (tmp_path / "kernel.ptx").read_text()


needs_compiler = pytest.mark.skipif(NVRTC is None and NVCC is None,
                                    reason="neither NVRTC (pip install nvidia-cuda-nvrtc) nor nvcc is available")
RAW_CASES = [(op, dtype) for op in codegen.raw_ops() for dtype in codegen.FLOAT_DTYPES]


@needs_compiler
@pytest.mark.parametrize("op,dtype", RAW_CASES, ids=[f"{o}-{d}" for o, d in RAW_CASES])
def test_kernel_compiles_to_ptx(op, dtype, tmp_path):
    kernel = codegen.render(codegen.CudaRenderer(), op, dtype, codegen.raw_ops()[op], 2)
    ptx = compile_to_ptx(kernel.source, tmp_path)
    assert f".entry {kernel.name}(" in ptx


@needs_compiler
@pytest.mark.parametrize("dtype", codegen.FLOAT_DTYPES)
def test_every_rank_of_every_kernel_compiles_to_ptx(dtype, tmp_path):
    """All sources of one dtype (every op x rank 0..MAX_RANK) as one program: each must compile."""
    kernels = [k for k in codegen.all_kernel_sources() if k.in_dtypes[0] == dtype]
    preamble = codegen.CudaRenderer().preamble()
    source = preamble + "\n" + "\n".join(k.source.replace(preamble, "") for k in kernels)
    ptx = compile_to_ptx(source, tmp_path)
    missing = [k.name for k in kernels if f".entry {k.name}(" not in ptx]
    assert not missing and len(kernels) == len(codegen.raw_ops()) * (codegen.MAX_RANK + 1)


def test_cuda_dialect_spellings():
    source = codegen.render(codegen.CudaRenderer(), "exp", "float16", 1, 3).source
    assert 'extern "C" __global__ void exp_float16_float16_3d(long long n' in source
    assert "blockIdx.x * blockDim.x + threadIdx.x" in source and "expf(a)" in source
    assert "const half_t* in_a" in source and "const float a = ((float)(in_a[a_at]));" in source
    assert "((a) != (a))" in codegen.render(codegen.CudaRenderer(), "relu", "float32", 1, 1).source  # NaN stays NaN


# -- the kernels' logic on the host: the cudasim device ------------------------------------------------------

class HostRaw:
    """Stands in for RawElementwise: the same launch plan, evaluated with NumPy over the planned strides."""

    def __init__(self):
        table = {**elementwise.unary_table(np, _special()), **elementwise.binary_table(np, _special())}
        table.update(add=np.add, sub=np.subtract, positive=lambda a: a,
                     relu=lambda a: np.where((a > 0) | np.isnan(a), a, 0),
                     tanh_backward=lambda g, y: g * (1 - y * y), sigmoid_backward=lambda g, y: g * y * (1 - y))
        self.table = table
        self.launches = 0

    def launch(self, op, dtype, out, inputs) -> bool:
        if out.size == 0:
            return True
        plan = raw.plan(out, inputs)
        if plan is None:
            return False
        shape, strides = plan
        compute = np.float32 if dtype == "float16" else np.dtype(dtype)
        views = [np.lib.stride_tricks.as_strided(a, shape, tuple(s * a.itemsize for s in st_))
                 for a, st_ in zip([out, *inputs], strides)]
        with np.errstate(all="ignore"):
            views[0][...] = self.table[op](*(v.astype(compute) for v in views[1:]))
        self.launches += 1
        return True


def _special():
    import scipy.special

    return scipy.special


class SimRuntime(DeviceArrays, Runtime):
    """Host memory posing as two CUDA devices: runs the cuda kernels' code with xp = NumPy."""

    def __init__(self):
        self.special = _special()
        self.raw = HostRaw()
        self.current = 0

    def device_count(self):
        return 2

    def current_device(self):
        return self.current

    def set_device(self, index):
        self.current = index

    def errstate(self, **kwargs):
        return np.errstate(**kwargs)

    def scope(self, dev):
        return contextlib.nullcontext()

    def _view(self, flat, shape, np_dtype, offset, strides):
        return np.ndarray(shape, np_dtype, flat, offset, strides)

    def allocate(self, nbytes, dev):
        return np.empty(nbytes, np.uint8)

    def from_host(self, array, dev):
        return np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()

    def to_host(self, tensor):
        return self.host_array(tensor, self.array(tensor).copy())


@pytest.fixture(scope="module")
def cudasim():
    """Register the cudasim backend for this module; restore the operator table and manager afterwards."""
    from core.dispatch import OPERATORS, invalidate_caches
    from core.ops import creation
    from core.plugins import manager as plugin_manager

    manager = plugin_manager.get_manager()
    for device_type in ("cpu", "meta"):  # loaded before the snapshot: the restore must not unregister them
        manager.backend_for(device_type)
    saved = {name: (dict(op.kernels), dict(op.owners)) for name, op in OPERATORS.items()}
    plugin = types.ModuleType("cudasim_plugin")
    plugin.register_backends = hookimpl(lambda register: register(
        name="cudasim", device_type="cudasim", runtime=SimRuntime, install_hint="tests/test_cuda.py"))
    plugin.register_kernels = hookimpl(
        lambda register, backend: register_all(register, all_kernels(backend)))
    manager.register_plugin(plugin, name="cudasim")
    try:
        yield manager.runtime_for("cudasim")
    finally:
        manager.pm.unregister(name="cudasim")
        manager.backends.pop("cudasim", None)
        manager.reset_selection()
        creation._NORMALIZED.clear()
        for name, op in OPERATORS.items():
            op.kernels, op.owners = saved.get(name, ({}, {}))
        invalidate_caches()


def test_cuda_kernels_are_the_kits_reference_tables():
    """cuda writes no kernel table of its own: each op is the kit's reference kernel, or the rendered path first."""
    for op, fn in all_kernels(SimRuntime()).items():
        fn = getattr(fn, "__wrapped__", fn)  # the per-call device switch of a multi-device runtime
        assert fn.__module__.startswith(("core.backends.kit.reference.", "core_cuda.kernels._rendered")), op


@pytest.mark.filterwarnings("ignore:.*running on the CPU with copies:RuntimeWarning")
def test_cudasim_passes_op_conformance(cudasim):
    """Every OP_DB entry on cudasim (the cuda kernels over NumPy); ops the backend lacks use the CPU fallback."""
    report = core.testing.check_backend("cudasim", fallback=True, grad_ops=DEFAULT_GRAD_OPS)
    assert report.ok, report.summary()
    assert cudasim.raw.launches > 0  # the rendered-kernel path (plan + strides) ran, not only the ufuncs


@pytest.mark.filterwarnings("ignore:.*running on the CPU with copies:RuntimeWarning")
def test_cudasim_holds_float8_as_bits(cudasim):
    """float8 (CuPy has no arrays of it, PyTorch no arithmetic): held as bits, same-dtype copies on the device, casts
    declined to the counted CPU fallback with the CPU's results."""
    from core.dispatch.operator import fallback_counts

    host = core.tensor([[0.5, -1.5, 2.0], [3.0, 0.25, -4.0]]).to(core.float8_e5m2)
    x = host.to("cudasim")
    assert x.dtype is core.float8_e5m2 and core.equal(x.cpu(), host)
    before = dict(fallback_counts)
    y = x.T.contiguous()  # copy_ of one dtype: the bits, on the device
    assert fallback_counts == before and core.equal(y.cpu(), host.T)
    core.testing.assert_close(x.float().cpu(), host.float())  # a cast: declined
    assert fallback_counts[("copy_", "cudasim")] == before.get(("copy_", "cudasim"), 0) + 1


@pytest.fixture
def no_fallback():
    core.config.set("fallback", False)  # a declined call raises instead of running on the CPU
    yield
    core.config.reset("fallback")


def _bf16_pair(shape, seed, scale=4.0):
    """The same bfloat16 values on the CPU and on cudasim."""
    rng = np.random.default_rng(seed)
    host = core.tensor((rng.standard_normal(shape) * scale).astype(np.float32)).to(core.bfloat16)
    return host, host.to("cudasim")


def _same_bits(got, want):
    assert got.dtype is want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.cpu().view(core.int16).numpy(), want.view(core.int16).numpy())


def test_cudasim_computes_bfloat16_in_float32_bit_for_bit(cudasim, no_fallback):
    """bfloat16 math on the device with no CPU fallback: widened to float32, one rounding per result, the CPU's bits
    (which compute bfloat16 in float32 as well); strided and broadcast operands, Python scalars, comparisons and
    casts both ways."""
    a, da = _bf16_pair((6, 5), 0)
    b, db = _bf16_pair((5,), 1)
    for fn in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x / y, lambda x, y: core.maximum(x, y),
               lambda x, y: x.T[::2] - y[::2, None], lambda x, y: x * 0.1 + 3, lambda x, y: core.exp(x / 4),
               lambda x, y: core.tanh(x), lambda x, y: core.relu(x), lambda x, y: core.where(x > y, x, y),
               lambda x, y: core.sigmoid(x).T.contiguous(), lambda x, y: core.cat([x, y[None]]),
               lambda x, y: x.float() * 2, lambda x, y: x.double(), lambda x, y: (x.float() / 3).bfloat16(),
               lambda x, y: x.to(core.int32), lambda x, y: core.clamp(x, -1, 1)):
        _same_bits(fn(da, db), fn(a, b))
    assert (da > db).cpu().tolist() == (a > b).tolist()
    assert da.argmax(1).cpu().tolist() == a.argmax(1).tolist()


def test_cudasim_bfloat16_reductions_products_and_indexing(cudasim, no_fallback):
    a, da = _bf16_pair((16, 24), 2)
    w, dw = _bf16_pair((24, 8), 3)
    for fn in (lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.amax(1), lambda x: x.mean(1),
               lambda x: x.softmax(-1), lambda x: x.cumsum(0)):
        core.testing.assert_close(fn(da).cpu(), fn(a), rtol=1e-2, atol=1e-2)  # float32 sums in another order
    core.testing.assert_close((da @ dw).cpu(), a @ w, rtol=1e-2, atol=1e-2)
    index = core.tensor([3, 0, 7])
    _same_bits(da[index.to("cudasim")], a[index])
    _same_bits(core.gather(da, 1, core.zeros(16, 2, dtype=core.int64, device="cudasim")),
               core.gather(a, 1, core.zeros(16, 2, dtype=core.int64)))
    z = core.zeros(3, 4, dtype=core.bfloat16, device="cudasim")
    _same_bits(z, core.zeros(3, 4, dtype=core.bfloat16))
    _same_bits(core.full((2, 3), 1.00390625 + 2**-20, dtype=core.bfloat16, device="cudasim"),
               core.full((2, 3), 1.00390625 + 2**-20, dtype=core.bfloat16))  # ml_dtypes' rounding, as the CPU's
    copied = core.empty(16, 24, dtype=core.bfloat16, device="cudasim")
    copied.copy_(da.float())
    _same_bits(copied, a)


def test_cudasim_rounds_bfloat16_to_nearest_even_with_special_values(cudasim, no_fallback):
    values = np.array([1.0 + 2**-8, 1.0 + 3 * 2**-8, 3.3895314e38, -3.3895314e38, np.inf, -np.inf, np.nan, 0.0,
                       -0.0, 1e-40, -1e-40, 2**-133], np.float32)
    got = core.tensor(values, device="cudasim").bfloat16()
    want = core.tensor(values).bfloat16()
    host = got.cpu().float().numpy()
    np.testing.assert_array_equal(np.isnan(host), np.isnan(values))
    keep = ~np.isnan(values)
    np.testing.assert_array_equal(got.cpu().view(core.int16).numpy()[keep], want.view(core.int16).numpy()[keep])


def test_cudasim_casts_into_bfloat16_through_float32_as_pytorch(cudasim, no_fallback):
    """PyTorch (and ml_dtypes) convert to bfloat16 from float32: 1 + 2^-8 + 2^-30 in float64 lands on the tie
    1 + 2^-8 in float32 and rounds to even, 1.0, where one rounding would give 1 + 2^-7. int64 goes the same way."""
    x = core.tensor([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30)], dtype=core.float64)
    assert x.to("cudasim").bfloat16().cpu().tolist() == x.bfloat16().tolist() == [1.0, -1.0]
    into = core.empty(2, dtype=core.bfloat16, device="cudasim")
    assert into.copy_(x.to("cudasim")).cpu().tolist() == [1.0, -1.0]
    n = core.tensor([2**24 + 2**16 + 1, 257], dtype=core.int64)
    _same_bits(n.to("cudasim").bfloat16(), n.bfloat16())


def test_cudasim_in_place_bfloat16_ops_run_their_decomposition_on_the_device(cudasim, no_fallback):
    a, da = _bf16_pair((4, 3), 4)
    da.add_(1.5)  # add, then copy_ into the bfloat16 memory
    _same_bits(da, a.add_(1.5))
    da[1:3].mul_(da[:2])
    a[1:3].mul_(a[:2])
    _same_bits(da, a)


@pytest.mark.filterwarnings("ignore:.*running on the CPU with copies:RuntimeWarning")
def test_cudasim_trains_an_mlp_under_bfloat16_autocast_as_the_cpu(cudasim):
    """autocast(dtype=bfloat16) on the device: the forward, the loss and every gradient as the CPU's autocast gives
    them, and no op more on the CPU fallback than in float32 (cudasim has no scatter_ kernel at all)."""
    from core.dispatch.operator import fallback_counts

    results, declined = {}, {}
    for device in ("cpu", "cudasim", "cudasim float32"):
        before = dict(fallback_counts)
        core.manual_seed(5)
        model = core.nn.Sequential(core.nn.Linear(12, 16), core.nn.ReLU(), core.nn.Linear(16, 3)).to(device.split()[0])
        x = core.randn(8, 12).to(device.split()[0])
        y = core.tensor([0, 1, 2, 0, 1, 2, 0, 1]).to(device.split()[0])
        with core.autocast(device.split()[0], dtype=core.bfloat16, enabled="float32" not in device):
            out = model(x)
            loss = core.nn.functional.cross_entropy(out, y)
        loss.backward()
        assert out.dtype is (core.float32 if "float32" in device else core.bfloat16)
        results[device] = [out.float(), loss] + [p.grad for p in model.parameters()]
        declined[device] = {op for (op, dev), n in fallback_counts.items() if n != before.get((op, dev), 0)}
    assert declined["cudasim"] == declined["cudasim float32"]
    for got, want in zip(results["cudasim"], results["cpu"]):
        core.testing.assert_close(got.cpu(), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [core.float16, core.float32, core.float64])
def test_cudasim_rendered_path_over_broadcast_and_transposed(cudasim, dtype):
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((4, 3, 5)).astype(dtype.numpy)
    b_np = rng.standard_normal((2, 1)).astype(dtype.numpy)
    a = core.tensor(a_np, device="cudasim").transpose(0, 2)[:, ::2]
    b = core.tensor(b_np, device="cudasim")
    before = cudasim.raw.launches
    for op, ref in (("mul", np.multiply), ("maximum", np.maximum), ("lt", np.less)):
        got = getattr(core, op)(a, b)
        expected = ref(a_np.transpose(2, 1, 0)[:, ::2].astype(np.float32), b_np.astype(np.float32))
        core.testing.assert_close(got.cpu(), expected.astype(got.dtype.numpy))
    core.testing.assert_close(core.relu(core.tensor([np.nan, -1.0, 2.0], dtype=dtype, device="cudasim")).cpu(),
                              np.array([np.nan, 0, 2], dtype.numpy))
    assert cudasim.raw.launches >= before + 3


def test_cudasim_tensors_carry_device_index_and_refuse_mixing(cudasim):
    a = core.ones(3, device="cudasim:0")
    b = core.ones(3, device="cudasim:1")
    assert a.device == core.device("cudasim", 0) and b.device.index == 1
    assert (b + b).device.index == 1 and core.matmul(b[None], b[:, None]).device.index == 1
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b
    with pytest.raises(RuntimeError, match="is not a valid device"):
        core.ones(1, device="cudasim:2")
    core.testing.assert_close(b.to("cudasim:0").cpu(), np.ones(3, np.float32))


# -- on a GPU ---------------------------------------------------------------------------------------------

@needs_gpu
@pytest.mark.gpu
def test_cuda_op_conformance():
    report = core.testing.check_backend("cuda", fallback=True)
    assert report.ok, report.summary()


@needs_gpu
@pytest.mark.gpu
def test_cuda_memory_pool_and_devices():
    core.cuda.empty_cache()
    base = core.cuda.memory_allocated()
    x = core.empty(1 << 20, device="cuda")
    assert core.cuda.memory_allocated() >= base + (4 << 20)
    assert core.cuda.max_memory_allocated() >= core.cuda.memory_allocated()
    assert core.cuda.memory_reserved() >= core.cuda.memory_allocated()
    del x
    core.cuda.empty_cache()
    assert "CuPy pool" in core.cuda.memory_summary()
    assert core.cuda.device_count() >= 1 and core.cuda.get_device_name()
    core.cuda.set_device(0)
    assert core.cuda.current_device() == 0
    core.cuda.synchronize()


@needs_gpu
@pytest.mark.gpu
def test_cuda_copies_and_rendered_kernels():
    host = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = core.tensor(host, device="cuda")
    core.testing.assert_close(x.transpose(0, 2)[1:].cpu(), host.transpose(2, 1, 0)[1:])
    y = core.tensor(host).to("cuda", non_blocking=True)
    core.testing.assert_close((x.transpose(1, 2) * y.transpose(1, 2)).cpu(), (host * host).transpose(0, 2, 1))
    for dtype in (core.float16, core.float64):
        core.testing.assert_close(core.exp(x.to(dtype)).cpu(), np.exp(host.astype(np.float32)).astype(dtype.numpy),
                                  rtol=1e-3)


@pytest.mark.filterwarnings("ignore:.*running on the CPU with copies:RuntimeWarning")
def test_cudasim_runs_decompositions_and_spectral_natively(cudasim):
    """linalg and fft primitives are the kit's reference over the runtime's array module (cupy.linalg/cupy.fft on a
    GPU): on cudasim they run as cuda's own kernels, eig (which CuPy lacks) declines to the counted CPU fallback."""
    from core.dispatch import OPERATORS

    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    spd = a @ np.swapaxes(a, -1, -2)
    x, s = core.tensor(a, device="cudasim"), core.tensor(spd, device="cudasim")
    for name in ("linalg_inv_ex", "linalg_det", "linalg_qr", "linalg_svd", "linalg_cholesky_ex", "linalg_eigh",
                 "linalg_lu_factor_ex", "fft_c2c", "fft_r2c", "fft_c2r"):
        assert OPERATORS[name].has_kernel_for(core.dispatch.backend_key("cudasim")), name
    np.testing.assert_allclose(core.linalg.inv(x).cpu().numpy(), np.linalg.inv(a), rtol=1e-10)
    np.testing.assert_allclose(core.linalg.det(x).cpu().numpy(), np.linalg.det(a), rtol=1e-10)
    np.testing.assert_allclose(core.linalg.svdvals(x).cpu().numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(core.linalg.cholesky(s).cpu().numpy(), np.linalg.cholesky(spd), rtol=1e-10)
    np.testing.assert_allclose(core.linalg.solve(x, x[..., :1]).cpu().numpy(), np.linalg.solve(a, a[..., :1]),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(core.fft.rfft(x).cpu().numpy(), np.fft.rfft(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(core.fft.irfft(core.fft.rfft(x), n=4).cpu().numpy(), a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(core.fft.fft2(x).cpu().numpy(), np.fft.fft2(a), rtol=1e-10, atol=1e-12)
    w = core.linalg.eigvals(x)  # NumPy has eig, so the host runtime runs it; CuPy would decline
    np.testing.assert_allclose(np.sort_complex(w.cpu().numpy()), np.sort_complex(np.linalg.eigvals(a)), rtol=1e-9)


def test_cudasim_runs_sparse_mm_natively(cudasim):
    """sparse @ dense is the kit's reference over the runtime's sparse library (cupyx.scipy.sparse on a GPU, SciPy on
    the host runtime): cuda's own kernel, forward and backward, equal to scipy.sparse."""
    import scipy.sparse as sp
    from core.dispatch import OPERATORS

    m = sp.random(6, 5, density=0.4, format="csr", random_state=np.random.default_rng(0))
    b = np.random.default_rng(1).standard_normal((5, 3))
    s = core.sparse_csr_tensor(m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data, m.shape,
                               device="cudasim", requires_grad=True)
    d = core.tensor(b, device="cudasim", requires_grad=True)
    out = core.sparse.mm(s, d)
    out.sum().backward()
    assert core.dispatch.backend_key("cudasim").bit in OPERATORS["sparse_mm"].kernels  # registered on first use
    np.testing.assert_allclose(out.detach().cpu().numpy(), m @ b, rtol=1e-12)
    np.testing.assert_allclose(d.grad.cpu().numpy(), m.T @ np.ones((6, 3)), rtol=1e-12)
