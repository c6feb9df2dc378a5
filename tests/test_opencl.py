"""The opencl backend (plugins/opencl): discovery, memory, transfers, kernels against NumPy, training on PoCL."""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest

import core
from core.testing import assert_close

core_opencl = pytest.importorskip("core_opencl", reason="the core-opencl plugin is not installed")
from core_opencl import plugin as ocl_plugin  # noqa: E402
from core_opencl import probe as ocl_probe  # noqa: E402
from core_opencl import runtime as ocl_runtime  # noqa: E402

needs_device = pytest.mark.skipif(not core.opencl.is_available(),
                                  reason=f"no OpenCL device: {core.opencl.unavailable_reason()}")
DEV = "opencl"


def _rng():
    return np.random.default_rng(0)


# -- discovery ---------------------------------------------------------------------------------------------

def test_no_platform_is_reported_unavailable_not_raised(monkeypatch):
    cl = pytest.importorskip("pyopencl")

    def no_platform():
        raise cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setattr(cl, "get_platforms", no_platform)
    ok, reason = ocl_runtime.OpenCLRuntime().is_available()
    assert not ok and "no OpenCL platform" in reason and "PLATFORM_NOT_FOUND_KHR" in reason
    assert "pocl" in ocl_plugin.INSTALL_HINT


@needs_device
def test_discovery_and_device_helpers():
    assert core.opencl.is_available()
    assert core.opencl.device_count() >= 1
    assert isinstance(core.opencl.get_device_name(), str) and core.opencl.get_device_name()
    assert core.zeros(2, device=DEV).device == core.device("opencl:0")
    with pytest.raises(RuntimeError, match="not a valid device"):
        core.zeros(2, device=f"opencl:{core.opencl.device_count()}")


@needs_device
def test_device_selection_from_env_and_config(monkeypatch):
    import pyopencl as cl

    # the platform the default selection took: on a machine with a broken platform it need not be platform 0
    index = cl.get_platforms().index(ocl_runtime.RUNTIME.slot(0).platform)
    monkeypatch.setenv(ocl_runtime.ENV_DEVICES, f"{index}:0")
    rt = ocl_runtime.OpenCLRuntime()
    assert rt.device_count() == 1
    monkeypatch.setenv(ocl_runtime.ENV_DEVICES, f"{index}:99")
    with pytest.raises(RuntimeError, match="has no device 99"):
        ocl_runtime.OpenCLRuntime().device_count()
    monkeypatch.delenv(ocl_runtime.ENV_DEVICES)
    rt = ocl_runtime.OpenCLRuntime()
    rt.configure({"platform": "no such platform"})
    with pytest.raises(RuntimeError, match="no platform named like"):
        rt.device_count()
    rt.configure({"devices": [f"{index}:0"]})
    assert rt.device_count() == 1
    with pytest.raises(ValueError, match="unknown key"):
        rt.configure({"device": "0"})


# -- the compiler probe: a platform can list devices it cannot compile for ------------------------------------

PIP_POCL = "OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6, SLEEF, DISTRO, POCL_DEBUG"
DEBIAN_POCL = "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG"
UNKNOWN_CPU = "error: unknown target CPU 'generic'"
POCL = "Portable Computing Language"


@dataclass(frozen=True)
class _FakeDevice:  # hashable, as pyopencl's devices are
    name: str


def _fake_platforms(monkeypatch, *platforms) -> list:
    """Stand-in platforms ``(name, version, compiler error or "")`` with one device each; returns the probed ones."""
    cl = pytest.importorskip("pyopencl")
    fakes, errors, probed = [], {}, []
    for i, (name, version, error) in enumerate(platforms):
        dev = _FakeDevice(f"cpu-{i}")
        fakes.append(SimpleNamespace(name=name, version=version, get_devices=lambda dev=dev: [dev]))
        errors[id(fakes[-1])] = error

    def compiler_error(platform, devices):
        probed.append(fakes.index(platform))
        return errors[id(platform)]

    monkeypatch.setattr(cl, "get_platforms", lambda: fakes)
    monkeypatch.setattr(ocl_probe, "compiler_error", compiler_error)
    monkeypatch.setattr(ocl_runtime, "DeviceSlot", lambda p, d: SimpleNamespace(name=f"{d.name} ({p.name})"))
    monkeypatch.delenv(ocl_runtime.ENV_DEVICES, raising=False)
    return probed


def test_default_selection_skips_a_platform_whose_compiler_fails(monkeypatch):
    probed = _fake_platforms(monkeypatch, (POCL, PIP_POCL, UNKNOWN_CPU), (POCL, DEBIAN_POCL, ""))
    rt = ocl_runtime.OpenCLRuntime()
    assert rt.is_available() == (True, "")
    assert rt.device_count() == 1 and rt.device_name(0) == f"cpu-1 ({POCL})"
    probed = _fake_platforms(monkeypatch, (POCL, DEBIAN_POCL, ""), (POCL, PIP_POCL, UNKNOWN_CPU))
    assert ocl_runtime.OpenCLRuntime().is_available() == (True, "")
    assert probed == [0]  # a working first platform is the only build


def test_no_platform_that_compiles_is_unavailable_with_the_reason(monkeypatch):
    _fake_platforms(monkeypatch, (POCL, PIP_POCL, UNKNOWN_CPU), ("Vendor GPU", "OpenCL 1.2 vendor 9", "error: no"))
    rt = ocl_runtime.OpenCLRuntime()
    ok, reason = rt.is_available()
    assert not ok and reason.startswith("no OpenCL platform can compile a kernel: ")
    assert f"platform 0 '{POCL}' (OpenCL 3.0 PoCL 3.0-rc2 Linux, Release, RELOC, LLVM 14.0.6," in reason
    assert f"device 'cpu-0': {UNKNOWN_CPU}" in reason and "platform 1 'Vendor GPU'" in reason
    assert "PoCL 3.0-rc2 (LLVM 14.0.6) cannot compile for this CPU" in reason and "pocl-opencl-icd" in reason
    assert "update this platform's OpenCL driver" in reason
    with pytest.raises(RuntimeError, match="no OpenCL platform can compile a kernel"):
        rt.device_count()


def test_choosing_a_device_whose_compiler_fails_is_a_clear_error(monkeypatch):
    _fake_platforms(monkeypatch, (POCL, DEBIAN_POCL, ""), (POCL + " (pip)", PIP_POCL, UNKNOWN_CPU))
    monkeypatch.setenv(ocl_runtime.ENV_DEVICES, "1:0")
    with pytest.raises(RuntimeError, match=rf"CORE_OPENCL_DEVICES: the OpenCL compiler fails on platform 1 .*"
                                           rf"device 'cpu-1': {UNKNOWN_CPU}; PoCL 3.0-rc2 \(LLVM 14.0.6\)"):
        ocl_runtime.OpenCLRuntime().device_count()
    monkeypatch.delenv(ocl_runtime.ENV_DEVICES)
    rt = ocl_runtime.OpenCLRuntime()
    rt.configure({"devices": ["0", "1:0"]})
    with pytest.raises(RuntimeError, match=r"devices: the OpenCL compiler fails on platform 1"):
        rt.device_count()
    rt.configure({"platform": "(pip)"})
    with pytest.raises(RuntimeError, match=r"platform: no OpenCL platform named like '\(pip\)' can compile"):
        rt.device_count()
    rt.configure({"platform": "portable"})
    assert rt.device_name(0) == f"cpu-0 ({POCL})"


def test_probe_keeps_the_compiler_error_line_and_never_raises(monkeypatch):
    cl = pytest.importorskip("pyopencl")
    message = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
               f"Build on <pyopencl.Device 'pthread-AMD EPYC'>:\n\n{UNKNOWN_CPU}\nDevice pthread-AMD EPYC failed to "
               "build the program\n\n(options: -I /site-packages/pyopencl/cl)")
    builds = []

    def failing_program(context, source):
        builds.append(source)
        raise cl.RuntimeError(message)

    monkeypatch.setattr(ocl_probe, "_RESULTS", {})
    monkeypatch.setattr(cl, "Context", lambda devices: None)
    monkeypatch.setattr(cl, "Program", failing_program)
    platform, dev = SimpleNamespace(int_ptr=1), SimpleNamespace(int_ptr=2)
    assert ocl_probe.compiler_error(platform, [dev]) == UNKNOWN_CPU
    assert ocl_probe.compiler_error(platform, [dev]) == UNKNOWN_CPU and len(builds) == 1  # once per process
    monkeypatch.setattr(cl, "Context", lambda devices: (_ for _ in ()).throw(cl.LogicError("DEVICE_NOT_AVAILABLE")))
    assert ocl_probe.compiler_error(platform, [SimpleNamespace(int_ptr=3)]) == "LogicError: DEVICE_NOT_AVAILABLE"


def test_a_platform_whose_device_query_fails_is_passed_over(monkeypatch):
    cl = pytest.importorskip("pyopencl")
    _fake_platforms(monkeypatch, (POCL, DEBIAN_POCL, ""))
    broken = SimpleNamespace(name="Broken", version="OpenCL 3.0",
                             get_devices=lambda: (_ for _ in ()).throw(cl.RuntimeError("DEVICE_NOT_FOUND")))
    fakes = [broken, *cl.get_platforms()]
    monkeypatch.setattr(cl, "get_platforms", lambda: fakes)
    assert ocl_runtime.OpenCLRuntime().is_available() == (True, "")


@needs_device
def test_the_selected_device_passed_the_real_probe():
    slot = ocl_runtime.RUNTIME.slot(0)
    devices = slot.platform.get_devices()
    assert ocl_probe.compiler_error(slot.platform, devices) == ""
    assert (slot.platform.int_ptr, tuple(d.int_ptr for d in devices)) in ocl_probe._RESULTS


# -- memory ------------------------------------------------------------------------------------------------

@needs_device
def test_memory_allocated_reserved_and_empty_cache():
    core.opencl.synchronize()
    before = core.opencl.memory_allocated()
    t = core.empty(1 << 20, device=DEV)
    assert core.opencl.memory_allocated() >= before + (4 << 20)
    assert core.opencl.memory_reserved() >= core.opencl.memory_allocated()
    del t
    assert core.opencl.memory_allocated() == before
    held = core.opencl.memory_reserved()
    core.opencl.empty_cache()
    assert core.opencl.memory_reserved() < held


# -- transfers ---------------------------------------------------------------------------------------------

@needs_device
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16", "uint8"])
def test_round_trip_and_strided_to_host(dtype):
    a = (_rng().standard_normal((4, 6, 5)) * 3).astype(dtype)
    t = core.tensor(a, device=DEV)
    assert_close(t.cpu(), a)
    assert_close(t.transpose(0, 2).cpu(), a.transpose(2, 1, 0))
    assert_close(t[1:, ::2, 3].cpu(), a[1:, ::2, 3])
    assert_close(t[2].contiguous().cpu(), a[2])
    assert_close(t[:, 1:4].clone().cpu(), a[:, 1:4])


@needs_device
@pytest.mark.parametrize("dtype", [core.float32, core.int32, core.float16])
def test_copy_and_fill_into_strided_views(dtype):
    base = core.zeros(4, 6, dtype=dtype, device=DEV)
    src = core.arange(12, dtype=dtype).reshape(4, 3)  # on the CPU: copy_ across devices
    base[:, ::2].copy_(src)
    base[1:3, 1::2].fill_(7)
    expected = np.zeros((4, 6), dtype.numpy)
    expected[:, ::2] = np.arange(12).reshape(4, 3)
    expected[1:3, 1::2] = 7
    assert_close(base.cpu(), expected)


@needs_device
def test_casts_through_copy():
    a = np.array([[-1.7, 0.0, 0.5], [2.5, np.nan, -0.0]], np.float32)
    t = core.tensor(a, device=DEV)
    assert_close(t[0].to(core.int32).cpu(), a[0].astype(np.int32))  # NaN -> int is undefined: not compared
    assert_close(t.to(core.bool).cpu(), a.astype(bool))
    assert_close(t.to(core.bool).to(core.float32).cpu(), a.astype(bool).astype(np.float32))
    assert_close(t.T.to(core.float64).cpu(), a.T.astype(np.float64))


@needs_device
def test_copies_between_opencl_devices():
    a = _rng().standard_normal((3, 4)).astype(np.float32)
    last = f"opencl:{core.opencl.device_count() - 1}"
    t = core.tensor(a, device="opencl:0").T.to(last)
    assert t.device == core.device(last)
    assert_close(t.cpu(), a.T)


# -- kernels against NumPy ---------------------------------------------------------------------------------

@needs_device
def test_elementwise_kernels_over_broadcast_and_strided_inputs():
    rng = _rng()
    a = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)
    x, y = core.tensor(a, device=DEV).T, core.tensor(b, device=DEV)[:, None]  # (3, 5) transposed, (3, 1)
    assert_close(core.exp(x), np.exp(a.T))
    assert_close(x * y + 2.0, a.T * b[:, None] + 2)
    assert_close(core.add(x, y, alpha=3), a.T + 3 * b[:, None])
    assert_close(core.maximum(x, y), np.maximum(a.T, b[:, None]))
    assert_close(x < y, a.T < b[:, None])
    assert_close(core.where(x > 0, x, -1.0), np.where(a.T > 0, a.T, -1))
    assert_close(core.clamp(x, -0.5, 0.5), np.clip(a.T, -0.5, 0.5))
    assert_close(core.relu(x), np.maximum(a.T, 0))
    assert_close(core.tensor([1, -2, 3], device=DEV) * 4, np.array([4, -8, 12]))


@needs_device
def test_reductions_over_dims_of_a_non_contiguous_input():
    a = _rng().standard_normal((4, 5, 6)).astype(np.float32)
    a[1, 2, 3] = np.nan
    x = core.tensor(a, device=DEV).permute(2, 0, 1)  # (6, 4, 5)
    ref = a.transpose(2, 0, 1)
    assert_close(x.sum(dim=(0, 2)), ref.sum(axis=(0, 2)), rtol=1e-5, atol=1e-5)
    assert_close(x.amax(dim=1, keepdim=True), np.amax(ref, axis=1, keepdims=True))
    assert_close(x.argmax(dim=-1), np.argmax(ref, axis=-1))
    assert_close(x.isnan().any(dim=0), np.isnan(ref).any(axis=0))
    assert_close(core.tensor(np.ones((2, 3), bool), device=DEV).sum(), np.int64(6))
    assert_close(core.zeros(0, 3, device=DEV).sum(0), np.zeros(3, np.float32))


@needs_device
@pytest.mark.parametrize("shapes", [((37, 45), (45, 29)), ((3, 1, 7, 16), (5, 16, 9)), ((2, 4, 0), (2, 0, 3))])
def test_tiled_gemm_matches_numpy(shapes):
    rng = _rng()
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    assert_close(core.tensor(a, device=DEV) @ core.tensor(b, device=DEV), a @ b, rtol=1e-4, atol=1e-4)
    assert_close(core.tensor(b, device=DEV).mT @ core.tensor(a, device=DEV).mT,  # transposed operands
                 np.swapaxes(b, -1, -2) @ np.swapaxes(a, -1, -2), rtol=1e-4, atol=1e-4)


@needs_device
def test_dtypes_without_kernels_fall_back_to_the_cpu_with_a_warning(monkeypatch):
    """``unique`` has no half variant (float16/bfloat16 run on the device in the elementwise, reduction, scan,
    matmul, copy, indexing and sort kernels, tests/test_opencl_half.py): unique of float16 runs on the CPU, warned,
    counted."""
    from core.dispatch import operator as dispatch_operator

    monkeypatch.setattr(dispatch_operator, "_fallback_warned", set())
    before = dispatch_operator.fallback_counts[("unique", "opencl")]
    a = np.array([0.5, -1.0, 2.0, 0.5], np.float16)
    t = core.tensor(a, device=DEV)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = core.unique(t)
    assert result.device.type == "opencl"
    assert_close(result, np.unique(a))
    assert any("unique()" in str(w.message) and "float16" in str(w.message) for w in caught)
    assert dispatch_operator.fallback_counts[("unique", "opencl")] == before + 1  # the dispatcher's fallback: counted
    assert core.unique(core.tensor(a.astype(np.float32), device=DEV)).dtype is core.float32  # a kernel
    assert core.sort(t).values.dtype is core.float16  # float16 sort: a kernel, not counted
    assert dispatch_operator.fallback_counts[("unique", "opencl")] == before + 1


@needs_device
def test_declined_dtypes_raise_when_the_fallback_is_disabled():
    t = core.tensor(np.ones(3, np.float16), device=DEV)
    core.config.set("fallback", False)
    try:
        with pytest.raises(NotImplementedError, match=r"unique\(\).*'opencl' declined this call.*fallback is disabled"):
            core.unique(t)
        with pytest.raises(NotImplementedError, match=r"searchsorted\(\).*'opencl'.*fallback is disabled"):
            core.searchsorted(t, t)
    finally:
        core.config.reset("fallback")


@needs_device
def test_float64_needs_cl_khr_fp64(monkeypatch):
    from core_opencl.programs import check_dtypes

    slot = ocl_runtime.RUNTIME.slot(0)
    monkeypatch.setattr(slot, "fp64", False)
    with pytest.raises(TypeError, match=r"does not support dtype float64.*cl_khr_fp64"):
        check_dtypes(slot, ("float64",))
    with pytest.raises(TypeError, match=r"opencl:0.*float64"):
        core.zeros(3, dtype=core.float64, device=DEV)


@needs_device
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_functions_match_scipy_at_many_points_and_edges(dtype):
    special = pytest.importorskip("scipy.special")
    rng = _rng()
    tolerance = dict(rtol=1.3e-6, atol=1e-5) if dtype == "float32" else dict(rtol=1e-7, atol=1e-7)
    points = {
        "erfinv": np.concatenate([rng.uniform(-1, 1, 20000), 1 - np.logspace(-15, -1, 200), np.logspace(-30, 0, 200),
                                  [1, -1, 1.5, -2, np.nan, 0, -0.0, np.inf, -np.inf]]),
        "digamma": np.concatenate([rng.uniform(-20, 20, 20000), np.logspace(-20, 20, 400), -np.logspace(-5, 5, 400),
                                   -np.arange(30.0), [-0.0, np.inf, -np.inf, np.nan],
                                   1.4616321 + np.arange(-5, 6) * 1e-6]),  # about the positive root
        "i0": np.concatenate([rng.uniform(-100, 100, 20000), [0, -0.0, 8, -8, 89, 91, 700, np.inf, -np.inf, np.nan]]),
    }
    for name, x in points.items():
        with np.errstate(all="ignore"):
            x = x.astype(dtype)
            expected = getattr(special, name)(x.astype(np.float64)).astype(dtype)
        result = getattr(core, name)(core.tensor(x, device=DEV))
        assert_close(result, expected, **tolerance, equal_nan=True, msg=f"{name} {dtype}")


@needs_device
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "bool"])
def test_complex_parts_of_real_tensors_match_the_cpu(dtype):
    values = np.array([1.0, -2.0, np.nan, 0.0, -0.0, 3.5]) if dtype == "float32" else np.array([1, 0, 3, 2])
    x = core.tensor(values).to(getattr(core, dtype))
    for op in ("conj", "real", "isreal", "angle"):  # real of a real tensor is itself; imag raises (PyTorch)
        expected = getattr(core, op)(x)
        result = getattr(core, op)(x.to(DEV))
        assert result.dtype is expected.dtype and result.device.type == DEV
        assert_close(result.cpu(), expected, rtol=0, atol=0, equal_nan=True, msg=op)


@needs_device
def test_searchsorted_unique_and_logspace_run_natively():
    rng = _rng()
    seq = np.sort(rng.integers(-5, 5, (3, 20)).astype(np.float32), axis=-1)
    seq[:, -2:] = np.nan
    values = rng.integers(-6, 6, (3, 7)).astype(np.float32)
    values[0, 0] = np.nan
    data = rng.integers(-3, 3, (4, 6)).astype(np.float64)
    data[0, ::2] = np.nan
    core.config.set("fallback", False)  # a fallback would raise
    try:
        for right in (False, True):
            side = "right" if right else "left"
            result = core.searchsorted(core.tensor(seq, device=DEV), core.tensor(values, device=DEV), right=right)
            assert_close(result, np.stack([np.searchsorted(s, v, side) for s, v in zip(seq, values)]))
            result = core.searchsorted(core.tensor(seq[1], device=DEV), core.tensor(values.T, device=DEV), right=right)
            assert_close(result, np.searchsorted(seq[1], values.T, side))
        order = np.argsort(values[:, ::-1], axis=-1)
        result = core.searchsorted(core.tensor(values[:, ::-1].copy(), device=DEV), core.tensor(values, device=DEV),
                                   sorter=core.tensor(order, device=DEV), out_int32=True)
        assert result.dtype is core.int32
        assert_close(result, core.searchsorted(core.tensor(values[:, ::-1].copy()), core.tensor(values),
                                               sorter=core.tensor(order), out_int32=True))
        x = core.tensor(data, device=DEV).T  # strided
        for op in (core.unique, core.unique_consecutive):
            got = op(x, return_inverse=True, return_counts=True)
            want = op(core.tensor(data).T, return_inverse=True, return_counts=True)
            assert_close(got[0], want[0], equal_nan=True)
            assert_close(got[2], want[2])
            assert_close(got[0].cpu()[got[1].cpu()], data.T, equal_nan=True)  # values[inverse] is the input
        assert_close(core.logspace(-2, 2, 9, base=2.0, device=DEV), np.logspace(-2, 2, 9, base=2.0).astype(np.float32))
        assert_close(core.logspace(0, 3, 4, dtype=core.int64, device=DEV), np.array([1, 10, 100, 1000]))
    finally:
        core.config.reset("fallback")


@needs_device
def test_randperm_is_a_uniform_permutation_and_reproducible():
    for dtype in (core.int64, core.int32, core.float32, core.uint8):
        for n in (0, 1, 7, 200):
            perm = core.randperm(n, dtype=dtype, device=DEV)
            assert perm.dtype is dtype and sorted(perm.cpu().numpy().tolist()) == list(range(n))
    core.manual_seed(5)
    first = core.randperm(50, device=DEV).cpu().numpy()
    core.manual_seed(5)
    assert np.array_equal(core.randperm(50, device=DEV).cpu().numpy(), first)
    counts = np.zeros((4, 4))
    for _ in range(4000):  # every value lands on every position about equally often
        counts[np.arange(4), core.randperm(4, device=DEV).cpu().numpy()] += 1
    assert np.abs(counts / 4000 - 0.25).max() < 0.04


@needs_device
@pytest.mark.parametrize("dtype", [core.float32, core.float64])
def test_multinomial_follows_the_row_probabilities(dtype):
    core.manual_seed(1)
    probs = np.array([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]])
    p = core.tensor(probs, dtype=dtype, device=DEV)
    expected = probs / probs.sum(1, keepdims=True)
    draws = core.multinomial(p, 20000, replacement=True).cpu().numpy()
    frequencies = np.stack([np.bincount(row, minlength=4) / 20000 for row in draws])
    assert np.abs(frequencies - expected).max() < 0.02 and frequencies[0, 1] == 0 and frequencies[1, 2] == 0
    samples = core.multinomial(p, 3).cpu().numpy()  # without replacement: distinct, never a zero category
    assert all(len(set(row)) == 3 for row in samples) and 1 not in samples[0] and 2 not in samples[1]
    firsts = np.zeros((2, 4))
    for _ in range(2000):  # the first draw without replacement follows p too
        firsts[np.arange(2), core.multinomial(p, 1).cpu().numpy()[:, 0]] += 1
    assert np.abs(firsts / 2000 - expected).max() < 0.04
    assert core.multinomial(p[0], 4).shape == (4,)
    with pytest.raises(RuntimeError, match="inf.*nan.*element < 0"):
        core.multinomial(core.tensor([0.5, -1.0], device=DEV), 1)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        core.multinomial(core.zeros(2, 3, device=DEV), 1)


# -- training ----------------------------------------------------------------------------------------------

def _train(model, device, steps=5):
    import core.nn.functional as F

    rng = np.random.default_rng(1)
    opt = core.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        x = core.tensor(rng.standard_normal((16, 20)).astype(np.float32), device=device)
        y = core.tensor(rng.integers(0, 5, 16), device=device)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@needs_device
def test_mlp_training_gives_the_cpu_losses():
    nn = core.nn
    core.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))
    on_device = copy.deepcopy(model).to(DEV)
    assert next(on_device.parameters()).device.type == "opencl"
    cpu_losses = _train(model, "cpu")
    device_losses = _train(on_device, DEV)
    np.testing.assert_allclose(device_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    assert device_losses[-1] < device_losses[0]


def _train_without_fallback(model, x, y, optimizer, steps=4):
    """Losses of ``steps`` training steps on opencl with the CPU fallback off; the fallback counts stay untouched."""
    import core.nn.functional as F
    from core.dispatch.operator import fallback_counts

    before = {k: v for k, v in fallback_counts.items() if k[1] == "opencl"}
    core.config.set("fallback", False)
    try:
        losses = []
        for _ in range(steps):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    finally:
        core.config.reset("fallback")
    after = {k: v for k, v in fallback_counts.items() if k[1] == "opencl"}
    assert after == before, f"ops that fell back to the CPU: {sorted(set(after.items()) - set(before.items()))}"
    return losses


@needs_device
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_mlp_trains_on_opencl_with_no_cpu_fallback(optimizer):
    nn = core.nn
    core.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5)).to(DEV)  # made on cpu, moved
    rng = np.random.default_rng(2)
    x = core.tensor(rng.standard_normal((16, 20)).astype(np.float32)).to(DEV)
    y = core.tensor(rng.integers(0, 5, 16)).to(DEV)
    opt = (core.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if optimizer == "sgd"
           else core.optim.Adam(model.parameters(), lr=1e-2))
    losses = _train_without_fallback(model, x, y, opt)
    assert losses[-1] < losses[0]


@needs_device
def test_cnn_trains_on_opencl_with_no_cpu_fallback():
    nn = core.nn
    core.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.1),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 3)).to(DEV)
    rng = np.random.default_rng(3)
    x = core.tensor(rng.standard_normal((8, 1, 8, 8)).astype(np.float32)).to(DEV)
    y = core.tensor(rng.integers(0, 3, 8)).to(DEV)
    losses = _train_without_fallback(model, x, y, core.optim.Adam(model.parameters(), lr=1e-2))
    assert losses[-1] < losses[0]
