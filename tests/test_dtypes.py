"""dtypes and PyTorch's type promotion, including Python scalars and 0-d tensors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import core
from core import dtypes as dt

NAMES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool",
         "complex64", "complex128"]


@pytest.mark.parametrize("a,b,expected", [
    ("uint8", "int8", "int16"), ("float16", "bfloat16", "float32"), ("int64", "float16", "float16"),
    ("bool", "uint8", "uint8"), ("int32", "float64", "float64"), ("float64", "complex64", "complex128"),
    ("bool", "bool", "bool"), ("int16", "int32", "int32"),
])
def test_promote_types_table(a, b, expected):
    assert core.promote_types(getattr(core, a), getattr(core, b)) is getattr(core, expected)
    assert core.promote_types(getattr(core, b), getattr(core, a)) is getattr(core, expected)


def test_promote_types_matches_torch_for_every_pair():
    torch = pytest.importorskip("torch")
    for a, b in itertools.product(NAMES, repeat=2):
        expected = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert core.promote_types(getattr(core, a), getattr(core, b)).name == str(expected).split(".")[1], (a, b)


@pytest.mark.parametrize("tensor_dtype,scalar,expected", [
    ("int32", 2.5, "float32"), ("int64", 2, "int64"), ("uint8", 300, "uint8"), ("float16", 2.5, "float16"),
    ("bool", 1, "int64"), ("bool", True, "bool"), ("float32", 1j, "complex64"), ("int8", 1.0, "float32"),
])
def test_result_type_with_python_scalars(tensor_dtype, scalar, expected):
    t = core.ones(2, dtype=getattr(core, tensor_dtype))
    assert core.result_type(t, scalar) is getattr(core, expected)
    assert (t + scalar).dtype is getattr(core, expected) if not isinstance(scalar, complex) else True


def test_zero_dim_tensors_rank_below_dimensioned_ones():
    a = core.ones(3, dtype=core.int32)
    assert (a + core.tensor(5)).dtype is core.int32  # 0-d int64 does not widen int32
    assert (a + core.tensor(5.0)).dtype is core.float32  # but a higher category wins
    assert (core.tensor(1, dtype=core.int8) + core.tensor(1, dtype=core.int16)).dtype is core.int16
    assert (core.ones(2, dtype=core.float16) + core.tensor(1.0, dtype=core.float64)).dtype is core.float16


def test_result_type_matches_torch_on_mixed_operands():
    torch = pytest.importorskip("torch")
    for a, b in itertools.product([n for n in NAMES if not n.startswith("complex")], repeat=2):
        for shape_b in ((), (2,)):
            ours = core.result_type(core.ones(2, dtype=getattr(core, a)), core.ones(shape_b, dtype=getattr(core, b)))
            theirs = torch.result_type(torch.ones(2, dtype=getattr(torch, a)),
                                       torch.ones(shape_b, dtype=getattr(torch, b)))
            assert ours.name == str(theirs).split(".")[1], (a, b, shape_b)
        for scalar in (2, 2.5, True):
            ours = core.result_type(core.ones(2, dtype=getattr(core, a)), scalar)
            theirs = torch.result_type(torch.ones(2, dtype=getattr(torch, a)), scalar)
            assert ours.name == str(theirs).split(".")[1], (a, scalar)


def test_default_dtype_round_trip():
    assert core.get_default_dtype() is core.float32
    core.set_default_dtype(core.float64)
    try:
        assert core.tensor([1.5]).dtype is core.float64
        assert core.ones(2).dtype is core.float64
        assert (core.tensor([1, 2]) / 2).dtype is core.float64
    finally:
        core.set_default_dtype(core.float32)
    with pytest.raises(TypeError, match="floating"):
        core.set_default_dtype(core.int64)


def test_dtype_facts():
    assert core.float32.itemsize == 4 and core.bfloat16.itemsize == 2
    assert core.float16.is_floating_point and not core.int64.is_floating_point
    assert core.complex64.is_complex and not core.uint8.is_signed and core.int8.is_signed
    assert repr(core.float32) == "core.float32"
    assert core.float is core.float32 and core.long is core.int64 and core.half is core.float16
    assert core.finfo(core.float32).eps == float(np.finfo(np.float32).eps)
    assert core.finfo(core.bfloat16).bits == 16
    assert core.iinfo(core.int8).min == -128 and core.iinfo(core.uint8).max == 255


def test_from_numpy_dtype_rejects_unsupported():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        dt.from_numpy_dtype(np.dtype("U3"))


@pytest.mark.parametrize("expression", ["x + x", "x - (-x)", "x * x", "x / 1e-30", "core.add(x, x, alpha=3e38)",
                                        "core.sub(x, x, alpha=-3e38)", "x.clone().add_(x)", "x ** 2"])
def test_arithmetic_that_overflows_is_silent_as_in_pytorch(expression):
    """float32 arithmetic past its range gives inf, as PyTorch's does, without NumPy's RuntimeWarning (the reference
    add and sub let it through)."""
    import warnings

    for n in (1, 5000):  # the NumPy kernels and, where cpu_c serves cpu, its C loops
        x = core.full((n,), 3e38)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = eval(expression, {"core": core, "x": x})
        assert y[0].item() == float("inf")


@pytest.mark.parametrize("how", ["to", "copy_"])
def test_a_complex_to_real_cast_keeps_the_real_part_with_pytorchs_warning(how):
    """PyTorch's copy kernel warns "Casting complex values to real discards the imaginary part" (a UserWarning);
    NumPy's own ComplexWarning, naming its internals, must not reach the user instead; 5000 elements run cpu_c's
    kernels where cpu_c serves cpu."""
    import warnings

    for n in (1, 2500):
        x = core.tensor([1.5 + 2j, -3 - 1j] * n)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if how == "to":
                y = x.to(core.float32)
            else:
                y = core.zeros(2 * n).copy_(x)
        assert y.tolist() == [1.5, -3.0] * n
        assert [(w.category, str(w.message), w.filename) for w in seen] == \
            [(UserWarning, "Casting complex values to real discards the imaginary part", __file__)]  # caller's line


@pytest.mark.parametrize("target", ["float16", "bfloat16", "int32"])
def test_casts_out_of_range_are_silent_as_in_pytorch(target):
    """A float cast that overflows gives inf (3e38 to float16), a NaN or inf cast to an integer gives whatever the
    hardware gives: PyTorch warns about neither, so NumPy's RuntimeWarnings must not reach the user."""
    import warnings

    x = core.tensor([3e38, -3e38, 1.5, float("nan"), float("inf")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = x.to(getattr(core, target))
    assert y.dtype is getattr(core, target)
    if target == "float16":  # beyond float16's 65504: infinities of the value's sign
        assert y[0].item() == float("inf") and y[1].item() == float("-inf")
    if target == "bfloat16":  # bfloat16 has float32's range: rounded, finite
        assert abs(y[0].item() / 3e38 - 1) < 1e-2 and abs(y[1].item() / -3e38 - 1) < 1e-2
    if target != "int32":
        assert y[2].item() == 1.5 and np.isnan(y[3].item()) and y[4].item() == float("inf")
