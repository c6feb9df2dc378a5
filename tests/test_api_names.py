"""The names the op tables do not reach by name: every in-place variant against its out-of-place op (the same values,
written into self, self returned, on every device), the aliases against what they alias, and the small queries and
constructors, each against NumPy or PyTorch's documented values."""

from __future__ import annotations

import numpy as np
import pytest

import core

# in-place unary ops: name -> the domain their inputs are drawn from
UNARY_INPLACE = {
    "abs_": (-2, 2), "acos_": (-0.9, 0.9), "acosh_": (1.1, 3), "asin_": (-0.9, 0.9), "asinh_": (-2, 2),
    "atan_": (-2, 2), "atanh_": (-0.9, 0.9), "ceil_": (-2, 2), "cos_": (-2, 2), "cosh_": (-2, 2),
    "deg2rad_": (-180, 180), "digamma_": (0.5, 3), "erf_": (-2, 2), "erfc_": (-2, 2), "erfinv_": (-0.9, 0.9),
    "exp2_": (-2, 2), "expm1_": (-2, 2), "floor_": (-2, 2), "frac_": (-2, 2), "i0_": (-2, 2), "lgamma_": (0.5, 3),
    "log10_": (0.1, 3), "log1p_": (-0.5, 3), "log2_": (0.1, 3), "log_": (0.1, 3), "nan_to_num_": (-2, 2),
    "rad2deg_": (-3, 3), "reciprocal_": (0.5, 3), "relu_": (-2, 2), "rsqrt_": (0.1, 3), "sgn_": (-2, 2),
    "sigmoid_": (-2, 2), "sign_": (-2, 2), "sinc_": (-2, 2), "sinh_": (-2, 2), "tan_": (-1, 1), "tanh_": (-2, 2),
    "trunc_": (-2, 2),
}

# in-place binary ops: name -> (dtype, domain of self, domain of other)
BINARY_INPLACE = {
    "atan2_": ("float64", (-2, 2), (-2, 2)), "copysign_": ("float64", (-2, 2), (-2, 2)),
    "div_": ("float64", (-2, 2), (0.5, 2)), "divide_": ("float64", (-2, 2), (0.5, 2)),
    "true_divide_": ("float64", (-2, 2), (0.5, 2)), "floor_divide_": ("float64", (-5, 5), (0.5, 2)),
    "fmod_": ("float64", (-5, 5), (0.5, 2)), "remainder_": ("float64", (-5, 5), (0.5, 2)),
    "fmax_": ("float64", (-2, 2), (-2, 2)), "fmin_": ("float64", (-2, 2), (-2, 2)),
    "maximum_": ("float64", (-2, 2), (-2, 2)), "minimum_": ("float64", (-2, 2), (-2, 2)),
    "hypot_": ("float64", (-2, 2), (-2, 2)), "logaddexp_": ("float64", (-2, 2), (-2, 2)),
    "logaddexp2_": ("float64", (-2, 2), (-2, 2)), "multiply_": ("float64", (-2, 2), (-2, 2)),
    "subtract_": ("float64", (-2, 2), (-2, 2)), "nextafter_": ("float64", (-2, 2), (-2, 2)),
    "pow_": ("float64", (0.5, 2), (-2, 2)), "xlogy_": ("float64", (-2, 2), (0.5, 2)),
    "heaviside_": ("float64", (-2, 2), (-2, 2)),
    "eq_": ("float64", (-1, 1), (-1, 1)), "ne_": ("float64", (-1, 1), (-1, 1)), "lt_": ("float64", (-2, 2), (-2, 2)),
    "le_": ("float64", (-2, 2), (-2, 2)), "gt_": ("float64", (-2, 2), (-2, 2)), "ge_": ("float64", (-2, 2), (-2, 2)),
    "logical_and_": ("bool", None, None), "logical_or_": ("bool", None, None), "logical_xor_": ("bool", None, None),
    "bitwise_and_": ("int64", (-9, 9), (-9, 9)), "bitwise_or_": ("int64", (-9, 9), (-9, 9)),
    "bitwise_xor_": ("int64", (-9, 9), (-9, 9)), "bitwise_left_shift_": ("int64", (-9, 9), (0, 4)),
    "bitwise_right_shift_": ("int64", (-99, 99), (0, 4)),
}


def _draw(rng, shape, dtype, domain):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype == "int64":
        return rng.integers(domain[0], domain[1] + 1, size=shape)
    values = rng.uniform(*domain, size=shape)
    return np.round(values) if domain == (-1, 1) else values  # ties for eq_/ne_


def _check_inplace(name: str, args: tuple, device: str, function: bool = True) -> None:
    """``core.<name>(x, *args)`` (where torch has the function) and ``x.<name>(*args)`` write ``core.<op>(x, *args)``
    (cast to x's dtype) into x and return x itself."""
    x = args[0]
    expected = getattr(core, name[:-1])(*args).to(x.dtype).cpu().numpy()
    calls = [lambda t: getattr(t, name)(*args[1:])] + [lambda t: getattr(core, name)(t, *args[1:])] * function
    for call in calls:
        target = x.clone()
        result = call(target)
        assert result is target and result.device.type == core.device(device).type, name
        np.testing.assert_allclose(target.cpu().numpy(), expected, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", sorted(UNARY_INPLACE))
def test_unary_inplace_variants(name, device):
    rng = np.random.default_rng(0)
    _check_inplace(name, (core.tensor(_draw(rng, (3, 4), "float64", UNARY_INPLACE[name]), device=device),), device)


def test_unary_inplace_on_logical_and_bitwise_not(device):
    rng = np.random.default_rng(0)
    _check_inplace("logical_not_", (core.tensor(rng.random((5,)) > 0.5, device=device),), device)
    _check_inplace("bitwise_not_", (core.tensor(rng.integers(-9, 9, (5,)), device=device),), device)


@pytest.mark.parametrize("name", sorted(BINARY_INPLACE))
def test_binary_inplace_variants(name, device):
    rng = np.random.default_rng(0)
    dtype, first, second = BINARY_INPLACE[name]
    x = core.tensor(_draw(rng, (3, 4), dtype, first), device=device)
    y = core.tensor(_draw(rng, (4,), dtype, second), device=device)  # broadcast into self's shape
    _check_inplace(name, (x, y), device)


def test_inplace_variants_with_more_operands(device):
    rng = np.random.default_rng(0)
    x, y, z = (core.tensor(rng.uniform(0.5, 2, (3, 4)), device=device) for _ in range(3))
    _check_inplace("addcdiv_", (x, y, z), device)
    _check_inplace("addcmul_", (x, y, z), device)
    _check_inplace("lerp_", (x, y, 0.25), device)
    _check_inplace("clamp_min_", (x, 1.0), device)
    _check_inplace("clamp_max_", (x, 1.0), device)
    _check_inplace("clip_", (x, 0.8, 1.2), device)
    b1, b2 = (core.tensor(rng.standard_normal((2, 3, 3)), device=device) for _ in range(2))
    _check_inplace("addbmm_", (core.zeros(3, 3, dtype=core.float64, device=device) + 1, b1, b2), device, False)
    _check_inplace("baddbmm_", (core.ones(2, 3, 3, dtype=core.float64, device=device), b1, b2), device, False)


def test_aliases_and_small_ops_against_numpy(device):
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-2, 2, (3, 4)), rng.uniform(0.5, 2, (3, 4))
    x, y = core.tensor(a, device=device), core.tensor(b, device=device)
    np.testing.assert_allclose(core.addcdiv(x, x, y, value=0.5).cpu().numpy(), a + 0.5 * a / b)
    np.testing.assert_allclose(core.heaviside(x, y).cpu().numpy(), np.heaviside(a, b))
    np.testing.assert_allclose(core.float_power(y, 2).cpu().numpy(), b ** 2)
    assert core.float_power(core.tensor([2], device=device), 3).dtype == core.float64
    np.testing.assert_allclose(core.clamp_min(x, 0.5).cpu().numpy(), np.maximum(a, 0.5))
    np.testing.assert_allclose(core.clamp_max(x, 0.5).cpu().numpy(), np.minimum(a, 0.5))
    np.testing.assert_allclose(x.clamp_min(0.5).cpu().numpy(), np.maximum(a, 0.5))
    np.testing.assert_allclose(x.clamp_max(0.5).cpu().numpy(), np.minimum(a, 0.5))
    np.testing.assert_allclose(core.deg2rad(x).cpu().numpy(), np.deg2rad(a))
    np.testing.assert_allclose(x.rad2deg().cpu().numpy(), np.rad2deg(a))
    np.testing.assert_allclose(core.rsub(x, y, alpha=2).cpu().numpy(), b - 2 * a)
    assert core.swapdims(x, 0, 1).shape == (4, 3) and x.swapdims(0, 1).shape == (4, 3)
    assert [p.shape for p in core.tensor_split(x, 3, dim=1)] == [(3, 2), (3, 1), (3, 1)]
    assert [p.shape for p in x.tensor_split([1], dim=0)] == [(1, 4), (2, 4)]
    assert x[:1].expand_as(x).shape == (3, 4)
    assert x.reshape_as(core.empty(4, 3)).shape == (4, 3)
    assert x.ndimension() == 2 and x.nelement() == 12
    assert x.char().dtype == core.int8 and x.float_power(2).dtype == core.float64
    for make, value in ((x.new_zeros, 0.0), (x.new_ones, 1.0)):
        made = make(2, 5)
        assert made.shape == (2, 5) and made.dtype == core.float64 and made.device == x.device
        assert (made.cpu().numpy() == value).all()
    assert x.new_full((2,), 7.0).tolist() == [7.0, 7.0] and x.new_empty(3).shape == (3,)
    z = core.zeros(6, device=device)
    assert z.resize_(2, 3) is z and z.shape == (2, 3)


def test_tensor_queries_and_constructors(device):
    t = core.as_tensor([1.0, 2.0], device=device)
    assert core.is_tensor(t) and not core.is_tensor([1.0])
    s = core.scalar_tensor(3.5, device=device)
    assert s.shape == () and s.item() == 3.5 and s.dtype == core.get_default_dtype()
    assert t.is_cpu == (core.device(device).type == "cpu")
    assert not any((t.is_xpu, t.is_mps, t.is_ipu, t.is_vulkan, t.is_xla, t.is_maia, t.is_mtia))


def test_placeholder_dtypes_and_layout_objects():
    """PyTorch's sub-byte integer dtypes exist as dtype objects only; jagged is a layout, per_tensor_symmetric a
    qscheme."""
    for bits, (signed, unsigned) in enumerate(zip((core.int1, core.int2, core.int3, core.int4, core.int5, core.int6,
                                                   core.int7),
                                                  (core.uint1, core.uint2, core.uint3, core.uint4, core.uint5,
                                                   core.uint6, core.uint7)), start=1):
        assert repr(signed) == f"core.int{bits}" and repr(unsigned) == f"core.uint{bits}"
        assert signed.is_signed and not unsigned.is_signed
        assert not signed.is_floating_point and not unsigned.is_complex
    assert repr(core.jagged) == "core.jagged" and isinstance(core.jagged, core.layout)
    assert repr(core.per_tensor_symmetric) == "core.per_tensor_symmetric"
    assert isinstance(core.per_tensor_symmetric, core.qscheme)


def test_sparse_bsc_tensor_matches_its_dense_form(device):
    # a 4 x 4 matrix of 2 x 2 blocks: block columns 0 and 1 hold one block each, in block rows 1 and 0
    ccol, row = core.tensor([0, 1, 2], device=device), core.tensor([1, 0], device=device)
    blocks = core.arange(8.0, device=device).reshape(2, 2, 2)
    s = core.sparse_bsc_tensor(ccol, row, blocks, (4, 4))
    assert s.layout == core.sparse_bsc
    dense = np.zeros((4, 4))
    dense[2:4, 0:2] = np.arange(4.0).reshape(2, 2)
    dense[0:2, 2:4] = np.arange(4.0, 8.0).reshape(2, 2)
    np.testing.assert_array_equal(s.to_dense().cpu().numpy(), dense)


def test_torch_vmap_is_func_vmap(device):
    x = core.tensor(np.arange(6.0).reshape(3, 2), device=device)
    y = core.tensor([1.0, -1.0], device=device)
    mapped = core.vmap(lambda row, w: (row * w).sum(), in_dims=(0, None))(x, y)
    np.testing.assert_allclose(mapped.cpu().numpy(), [-1.0, -1.0, -1.0])
    np.testing.assert_allclose(mapped.cpu().numpy(), core.func.vmap(lambda row, w: (row * w).sum(),
                                                                     in_dims=(0, None))(x, y).cpu().numpy())


def test_functional_tables_and_argument_helper():
    import core.nn.functional as F

    assert F.Tensor is core.Tensor
    assert F.GRID_SAMPLE_INTERPOLATION_MODES == {"bilinear": 0, "nearest": 1, "bicubic": 2}
    assert F.GRID_SAMPLE_PADDING_MODES == {"zeros": 0, "border": 1, "reflection": 2}
    F.assert_int_or_pair(3, "kernel_size", "{} must be int or 2-tuple")
    F.assert_int_or_pair((3, 2), "kernel_size", "{} must be int or 2-tuple")
    with pytest.raises(AssertionError, match="kernel_size must be int or 2-tuple"):
        F.assert_int_or_pair((1, 2, 3), "kernel_size", "{} must be int or 2-tuple")
