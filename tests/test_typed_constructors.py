"""The legacy typed constructors (``torch.FloatTensor`` ...), ``Tensor.type()`` and isinstance checks."""

from __future__ import annotations

import numpy as np
import pytest

import core

TYPES = {"FloatTensor": core.float32, "DoubleTensor": core.float64, "HalfTensor": core.float16,
         "BFloat16Tensor": core.bfloat16, "ByteTensor": core.uint8, "CharTensor": core.int8,
         "ShortTensor": core.int16, "IntTensor": core.int32, "LongTensor": core.int64, "BoolTensor": core.bool}


@pytest.mark.parametrize("name", TYPES)
def test_sizes_data_and_isinstance(name):
    cls, dtype = getattr(core, name), TYPES[name]
    assert cls.dtype is dtype and not cls.is_cuda and repr(cls) == f"<class 'core.{name}'>"
    empty = cls(2, 3)
    assert empty.shape == (2, 3) and empty.dtype is dtype and empty.device.type == "cpu"
    assert cls(core.Size([4])).shape == (4,)
    assert cls().shape == (0,)
    data = cls([1, 0, 3])
    np.testing.assert_array_equal(data.numpy().astype(np.float64), np.array([1, 0, 3], dtype=dtype.numpy))
    assert isinstance(data, cls) and data.type() == f"core.{name}"
    others = [getattr(core, n) for n in TYPES if n != name]
    assert not any(isinstance(data, o) for o in others)
    assert not isinstance(np.zeros(3), cls)


def test_tensor_argument_is_an_alias_of_the_same_type():
    t = core.arange(3.0)
    alias = core.FloatTensor(t)
    alias[0] = 9.0
    assert t[0].item() == 9.0
    with pytest.raises(TypeError, match=r"expected Double \(got Float\)"):
        core.DoubleTensor(t)


def test_isinstance_needs_cpu(device):
    t = core.zeros(2, device=device)
    assert isinstance(t, core.FloatTensor) == (device == "cpu")
    assert t.type() == ("core.FloatTensor" if device == "cpu" else f"core.{device}.FloatTensor")


def test_type_casts():
    t = core.tensor([1.5, -2.5])
    for spec in ("torch.DoubleTensor", "core.DoubleTensor", core.DoubleTensor, core.float64):
        d = t.type(spec)
        assert d.dtype is core.float64 and d.device.type == "cpu"
        np.testing.assert_array_equal(d.numpy(), [1.5, -2.5])
    assert t.type(core.IntTensor).tolist() == [1, -2]
    assert t.type("torch.FloatTensor") is t
    with pytest.raises(ValueError, match="invalid type: 'torch.NopeTensor'"):
        t.type("torch.NopeTensor")
    with pytest.raises(TypeError, match="type\\(\\)"):
        t.type(3)


def test_bad_arguments():
    with pytest.raises(TypeError, match="FloatTensor"):
        core.FloatTensor(2, "x")
    with pytest.raises(RuntimeError, match="expects device type: cpu"):
        core.FloatTensor(2, device="meta")


def test_type_names_of_every_dtype():
    names = {core.uint16: "UInt16Tensor", core.uint64: "UInt64Tensor", core.float8_e4m3fn: "Float8_e4m3fnTensor",
             core.complex64: "ComplexFloatTensor", core.int8: "CharTensor", core.bfloat16: "BFloat16Tensor"}
    for dtype, name in names.items():
        t = core.zeros(2, dtype=dtype)
        assert t.type() == f"core.{name}" and core.typename(t) == f"core.{name}"
        assert core.zeros(2).type(f"torch.{name}").dtype is dtype
