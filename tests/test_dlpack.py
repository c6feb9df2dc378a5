"""DLPack (``torch.utils.dlpack``): zero-copy exchange with NumPy both ways, strided views, capsules, errors."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import core
import core.utils.dlpack as dlpack


def test_numpy_sees_a_tensor_and_writes_through():
    t = core.arange(12.0).reshape(3, 4)
    a = np.from_dlpack(t)
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4))
    a[1, 2] = -5.0
    assert t[1, 2].item() == -5.0
    t[0, 0] = 42.0
    assert a[0, 0] == 42.0


def test_strided_view_exports_its_strides():
    t = core.arange(20, dtype=core.int32).reshape(4, 5)
    v = t.t()[1:, ::2]
    a = np.from_dlpack(v)
    np.testing.assert_array_equal(a, np.arange(20, dtype=np.int32).reshape(4, 5).T[1:, ::2])
    assert a.strides == tuple(s * 4 for s in v.stride())
    a[0, 1] = 99
    assert t[2, 1].item() == 99


def test_core_imports_numpy_without_copying():
    n = np.arange(12.0).reshape(3, 4)[:, 1::2]
    x = core.from_dlpack(n)
    assert x.shape == (3, 2) and x.stride() == (4, 2) and x.dtype is core.float64
    x[2, 1] = -1.0
    assert n[2, 1] == -1.0
    n[0, 0] = 8.0
    assert x[0, 0].item() == 8.0


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64",
                                   "complex64", "complex128", "bool"])
def test_round_trip_keeps_dtype_and_values(dtype):
    values = np.random.default_rng(0).normal(size=(2, 3)) * 10
    t = core.tensor(values.astype(dtype))
    back = core.from_dlpack(np.from_dlpack(t))
    assert back.dtype is t.dtype
    np.testing.assert_array_equal(back.numpy(), values.astype(dtype))


def test_capsules_both_ways():
    t = core.arange(6.0).reshape(2, 3)
    capsule = core.to_dlpack(t)
    shared = dlpack.from_dlpack(capsule)
    shared[1, 2] = 50.0
    assert t[1, 2].item() == 50.0
    with pytest.raises(RuntimeError, match="capsule"):
        core.from_dlpack(capsule)  # a capsule is consumed once
    versioned = np.arange(4.0).__dlpack__(max_version=(1, 0))
    np.testing.assert_array_equal(core.from_dlpack(versioned).numpy(), np.arange(4.0))


def test_exported_capsule_keeps_the_memory_alive():
    t = core.arange(8.0)
    capsule = dlpack.to_dlpack(t[2:])
    del t
    gc.collect()
    np.testing.assert_array_equal(core.from_dlpack(capsule).numpy(), np.arange(2.0, 8.0))


def test_dlpack_device_and_protocol(device):
    t = core.ones(3, device=device)
    assert t.__dlpack_device__() == ({"cpu": 1, "cuda": 2, "opencl": 4, "webgpu": 15}[device], 0)  # kDLWebGPU
    if device == "cpu":
        assert core.from_dlpack(t).data_ptr() == t.data_ptr()
    elif device in ("opencl", "webgpu"):
        with pytest.raises(RuntimeError, match=f"{device} cannot be exported with DLPack"):
            t.__dlpack__()
    else:
        back = core.from_dlpack(t.__dlpack__())
        assert back.device == t.device and back.data_ptr() == t.data_ptr()


def test_errors():
    with pytest.raises(RuntimeError, match="require gradient"):
        core.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(RuntimeError, match="bfloat16"):
        core.zeros(2, dtype=core.bfloat16).__dlpack__()
    with pytest.raises(TypeError, match="__dlpack__"):
        core.from_dlpack([1, 2])
    with pytest.raises(TypeError, match="must be Tensor"):
        core.to_dlpack(np.zeros(2))
