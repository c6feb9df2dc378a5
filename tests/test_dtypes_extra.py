"""PyTorch's limited-support dtypes: uint16/32/64 (storage, arithmetic, promotion only with floats), float8
(storage, casts, comparisons, printing; arithmetic raises), and the dtype objects no tensor holds."""

from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest

import core
from core import dtypes as dt

UNSIGNED = ["uint16", "uint32", "uint64"]
FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]
SHELLS = {"bits8": (1, False, False), "bits16": (2, False, False), "bits1x8": (1, False, False),
          "bits2x4": (1, False, False), "bits4x2": (1, False, False), "float4_e2m1fn_x2": (1, True, True),
          **{f"int{n}": (1, False, True) for n in range(1, 8)}, **{f"uint{n}": (1, False, False) for n in range(1, 8)}}
LEGACY = {"uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "float8_e4m3fn": "Float8_e4m3fn",
          "float8_e5m2": "Float8_e5m2", "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz",
          "float8_e8m0fnu": "Float8_e8m0fnu"}


@pytest.mark.parametrize("name", UNSIGNED)
def test_unsigned_storage_and_arithmetic(device, name):
    rng = np.random.default_rng(0)
    info = np.iinfo(name)
    a = rng.integers(0, min(info.max, 2**40), size=(3, 4), dtype=np.uint64).astype(name)
    b = rng.integers(1, 1000, size=(4,), dtype=np.uint64).astype(name)
    ta, tb = core.tensor(a, device=device), core.tensor(b, device=device)
    d = getattr(core, name)
    assert ta.dtype is d and d.itemsize == np.dtype(name).itemsize and not d.is_signed
    with np.errstate(over="ignore"):
        for ours, theirs in [(ta + tb, a + b), (ta * tb, a * b), (ta // tb, a // b), (ta + 7, a + np.array(7, name)),
                             (ta.max(dim=1).values, a.max(axis=1))]:
            assert ours.dtype is d
            np.testing.assert_array_equal(ours.cpu().numpy(), theirs)
    np.testing.assert_array_equal((ta > tb).cpu().numpy(), a > b)
    np.testing.assert_allclose((ta * 0.5).cpu().numpy(), a.astype(np.float32) * 0.5, rtol=1e-6)
    assert (ta * 0.5).dtype is core.float32
    np.testing.assert_array_equal(ta.to(core.int64).cpu().numpy(), a.astype(np.int64))


def test_uint64_holds_values_beyond_int64():
    big = [2**64 - 1, 2**63 + 5, 0]
    t = core.tensor(big, dtype=core.uint64)
    assert t.tolist() == big and core.iinfo(core.uint64).max == 2**64 - 1
    assert t.max().item() == 2**64 - 1
    shared = core.from_numpy(np.arange(4, dtype=np.uint32))
    assert shared.dtype is core.uint32


@pytest.mark.parametrize("name", UNSIGNED)
def test_unsigned_promotion_follows_pytorch(name):
    d = getattr(core, name)
    for other in (core.float16, core.bfloat16, core.float32, core.float64):
        assert core.promote_types(d, other) is other and core.promote_types(other, d) is other
    for other in (core.int8, core.uint8, core.int64, core.bool, core.complex64, *(getattr(core, n) for n in UNSIGNED
                                                                                  if n != name)):
        with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not supported"):
            core.promote_types(d, other)
    with pytest.raises(RuntimeError, match=f"{LEGACY[name]} and Int"):
        core.ones(2, dtype=d) + core.ones(2, dtype=core.int32)
    assert (core.ones(2, dtype=d) + 1).dtype is d  # a Python int does not promote


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_create_cast_compare_print(device, name):
    d = getattr(core, name)
    np_type = getattr(ml_dtypes, name)
    values = np.array([0.5, 1.25, 3.0, 96.0, 0.0625], dtype=np.float32)
    t = core.tensor(values, device=device).to(d)
    assert t.dtype is d and d.itemsize == 1 and d.is_floating_point and d.is_signed == (name != "float8_e8m0fnu")
    expected = values.astype(np_type)
    np.testing.assert_array_equal(t.cpu().numpy().view(np.uint8), expected.view(np.uint8))
    np.testing.assert_array_equal(t.to(core.float32).cpu().numpy(), expected.astype(np.float32))
    direct = core.tensor(values, dtype=d, device=device)
    np.testing.assert_array_equal((direct == t).cpu().numpy(), np.ones(5, bool))
    np.testing.assert_array_equal((t < 2.0).cpu().numpy(), expected.astype(np.float32) < 2.0)
    assert f"dtype=core.{name}" in repr(t)
    assert core.zeros(3, dtype=d, device=device).to(core.float32).tolist() == [0.0] * 3 or name == "float8_e8m0fnu"
    copy = core.empty(5, dtype=d, device=device).copy_(t)
    np.testing.assert_array_equal(copy.cpu().numpy().view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_arithmetic_raises_as_pytorch(name):
    t = core.ones(3, dtype=getattr(core, name))
    legacy = LEGACY[name]
    for call, op in [(lambda: t + 1, "add"), (lambda: t * t, "mul"), (lambda: core.exp(t), "exp"),
                     (lambda: t.sum(), "sum"), (lambda: -t, "neg")]:
        with pytest.raises(RuntimeError, match=f"\"{op}\" not implemented for '{legacy}'"):
            call()
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
        core.promote_types(t.dtype, core.float32)


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_finfo(name):
    info, ref = core.finfo(getattr(core, name)), ml_dtypes.finfo(getattr(ml_dtypes, name))
    assert (info.bits, info.eps, info.max, info.min, info.tiny) == (8, float(ref.eps), float(ref.max),
                                                                     float(ref.min), float(ref.tiny))
    assert info.resolution == 1.0  # 10 ** -digits10: a float8 mantissa holds no full decimal digit
    assert core.finfo(core.float8_e4m3fn).max == 448.0 and core.finfo(core.float8_e5m2).max == 57344.0


@pytest.mark.parametrize("name", sorted(SHELLS))
def test_dtype_objects_without_tensors(name):
    d = getattr(core, name)
    itemsize, floating, signed = SHELLS[name]
    assert repr(d) == f"core.{name}" and d.itemsize == itemsize
    assert d.is_floating_point == floating and d.is_signed == signed and not d.is_complex
    assert pickle.loads(pickle.dumps(d)) is d
    with pytest.raises(RuntimeError, match=f"no tensor can hold dtype core.{name}"):
        core.empty(2, dtype=d)
    with pytest.raises(RuntimeError, match=f"core.{name}"):
        core.tensor([1], dtype=d)
    with pytest.raises(RuntimeError, match="not supported"):
        core.promote_types(d, core.float32)


def test_new_dtypes_pickle_and_names():
    for name in UNSIGNED + FLOAT8:
        d = getattr(core, name)
        assert pickle.loads(pickle.dumps(d)) is d and dt.legacy_name(d) == LEGACY[name]
        t = core.ones(2, dtype=d)
        assert pickle.loads(pickle.dumps(t)).dtype is d


# -- memory formats ---------------------------------------------------------------------------------------------

def _nhwc_strides(shape):
    n, c, h, w = shape
    return (h * w * c, 1, w * c, c)


def test_memory_format_objects():
    names = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format", "legacy_contiguous_format"]
    for name in names:
        fmt = getattr(core, name)
        assert isinstance(fmt, core.memory_format) and repr(fmt) == f"core.{name}"
        assert pickle.loads(pickle.dumps(fmt)) is fmt
    assert len({id(getattr(core, n)) for n in names}) == len(names)


def test_channels_last_contiguous_matches_an_nhwc_array(device):
    values = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)
    x = core.tensor(values, device=device)
    y = x.contiguous(memory_format=core.channels_last)
    assert y.stride() == _nhwc_strides(values.shape) == (60, 1, 15, 3)
    assert y.is_contiguous(memory_format=core.channels_last) and not y.is_contiguous()
    assert x.is_contiguous(memory_format=core.contiguous_format)
    assert not x.is_contiguous(memory_format=core.channels_last)
    np.testing.assert_array_equal(y.cpu().numpy(), values)
    # the storage holds the NHWC array: a flat view of the storage in stride order is values.transpose(0, 2, 3, 1)
    flat = y.as_strided((2, 4, 5, 3), (60, 15, 3, 1))
    np.testing.assert_array_equal(flat.cpu().numpy(), values.transpose(0, 2, 3, 1))
    assert y.contiguous(memory_format=core.channels_last) is y
    back = y.contiguous()
    assert back.stride() == (60, 20, 5, 1) and core.equal(back, x)
    moved = x.to(memory_format=core.channels_last)
    assert moved.stride() == (60, 1, 15, 3) and core.equal(moved, x)
    assert x.to(memory_format=core.preserve_format) is x


def test_factories_take_memory_format(device):
    e = core.empty(2, 3, 4, 5, memory_format=core.channels_last, device=device)
    assert e.stride() == (60, 1, 15, 3)
    nhwc = core.zeros(2, 3, 4, 5, device=device).contiguous(memory_format=core.channels_last)
    for make in (core.empty_like, core.zeros_like, core.ones_like, core.rand_like, core.randn_like):
        assert make(nhwc).stride() == (60, 1, 15, 3)  # preserve_format, the default
        assert make(nhwc, memory_format=core.contiguous_format).stride() == (60, 20, 5, 1)
    assert core.ones_like(nhwc).cpu().numpy().sum() == 120
    assert core.full_like(nhwc, 2.0, memory_format=core.channels_last).stride() == (60, 1, 15, 3)
    transposed = core.zeros(3, 4, device=device).t()
    assert core.empty_like(transposed).stride() == (1, 4)  # a dense input keeps its strides
    sliced = core.zeros(4, 6, device=device)[:, ::2]
    assert core.empty_like(sliced).stride() == (3, 1)  # a non-dense one becomes contiguous
    assert nhwc.clone(memory_format=core.preserve_format).stride() == (60, 1, 15, 3)
    cl3d = core.empty(2, 3, 4, 5, 6, memory_format=core.channels_last_3d, device=device)
    assert cl3d.stride() == (360, 1, 90, 18, 3) and cl3d.is_contiguous(memory_format=core.channels_last_3d)


def test_memory_format_errors():
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        core.empty(2, 3, memory_format=core.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5"):
        core.zeros(2, 3, 4, 5).contiguous(memory_format=core.channels_last_3d)
    with pytest.raises(RuntimeError, match="unsupported memory format option Preserve"):
        core.empty(2, memory_format=core.preserve_format)
    with pytest.raises(TypeError, match="memory_format"):
        core.empty(2, memory_format="channels_last")
    assert not core.zeros(2, 3).is_contiguous(memory_format=core.channels_last)


def test_channels_last_gradients_flow():
    x = core.tensor(np.random.default_rng(0).normal(size=(1, 2, 3, 3)), dtype=core.float64, requires_grad=True)
    assert core.autograd.gradcheck(lambda t: (t.contiguous(memory_format=core.channels_last) * 2).sin(), (x,))


@pytest.mark.parametrize("name, signed", [("bool", False), ("uint8", False), ("uint16", False), ("uint64", False),
                                          ("int8", True), ("int64", True), ("float16", True), ("float32", True),
                                          ("complex64", True), ("float8_e5m2", True), ("float8_e8m0fnu", False)])
def test_is_signed(name, signed):
    t = core.zeros(2, dtype=getattr(core, name))
    assert core.is_signed(t) is signed and t.is_signed() is signed
    assert signed == (name != "bool" and np.dtype(getattr(core, name).numpy).kind != "u" and name != "float8_e8m0fnu")
    with pytest.raises(TypeError, match="is_signed"):
        core.is_signed(np.zeros(2))
