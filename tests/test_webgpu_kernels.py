"""The webgpu backend's WGSL kernels against NumPy: elementwise, derivatives, reductions, copies, cat and flip over
strided, broadcast and offset operands, byte dtypes and int64, NaN propagation, all with the CPU fallback disabled
(a declined call raises), and the WGSL dialect of core's renderer."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.plugins import manager
from core.testing import assert_close

pytest.importorskip("core_webgpu", reason="the core-webgpu plugin is not installed")
_available, _reason = manager.runtime_for("webgpu").is_available()
pytestmark = pytest.mark.skipif(not _available, reason=f"webgpu unavailable: {_reason}")
DEV = "webgpu"


@pytest.fixture(autouse=True)
def no_fallback():
    """Every call in these tests must run on the device: a declined call raises instead of falling back."""
    core.config.set("fallback", False)
    yield
    core.config.reset("fallback")


def _rng():
    return np.random.default_rng(0)


def _need(*features):
    """Skip where the adapter lacks an optional feature the test's kernels use (wgpu's OpenGL backend has none)."""
    for feature in features:
        why = manager.runtime_for("webgpu").lacks(feature)
        if why:
            pytest.skip(why)


def _dev(a: np.ndarray):
    return core.tensor(a, device=DEV)


def _strided(a: np.ndarray):
    """``a`` on the device as a non-contiguous view with an offset: every other column of a wider tensor, sliced."""
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1] + 1,), a.dtype)
    wide[..., 1::2] = a
    return _dev(wide)[..., 1::2]


# -- elementwise -------------------------------------------------------------------------------------------------

_UNARY = {"neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin,
          "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "floor": np.floor, "round": np.round,
          "expm1": np.expm1, "log1p": np.log1p, "log10": np.log10, "asinh": np.arcsinh, "sign": np.sign,
          "reciprocal": np.reciprocal, "rsqrt": lambda x: 1 / np.sqrt(x), "frac": lambda x: x - np.trunc(x)}


@pytest.mark.parametrize("op", sorted(_UNARY))
def test_unary_float32_over_a_strided_offset_view(op):
    a = _rng().uniform(0.1, 3, (4, 6)).astype(np.float32) * np.where(np.arange(6) % 2, 1, -1).astype(np.float32)
    if op in ("log", "sqrt", "log10", "rsqrt", "log1p"):
        a = np.abs(a)
    assert_close(getattr(core, op)(_strided(a)).cpu().numpy(), _UNARY[op](a).astype(np.float32), rtol=2e-6,
                 atol=1e-6)


def test_erf_and_erfc_match_the_series_to_float32_precision():
    import math

    x = np.concatenate([np.linspace(-4, 4, 161), [1e-4, -3e-3, 0.49, 0.51]]).astype(np.float32)
    erf = np.array([math.erf(v) for v in x.astype(np.float64)])
    erfc = np.array([math.erfc(v) for v in x.astype(np.float64)])
    assert_close(core.erf(_dev(x)).cpu().numpy(), erf.astype(np.float32), rtol=1e-6, atol=1e-7)
    assert_close(core.erfc(_dev(x)).cpu().numpy(), erfc.astype(np.float32), rtol=2e-6, atol=1e-7)


_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
           "minimum": np.minimum, "atan2": np.arctan2, "pow": np.power, "eq": np.equal, "lt": np.less,
           "ge": np.greater_equal, "fmax": np.fmax, "copysign": np.copysign, "hypot": np.hypot,
           "logaddexp": np.logaddexp}


@pytest.mark.parametrize("op", sorted(_BINARY))
def test_binary_float32_broadcast_transposed_and_nan(op):
    rng = _rng()
    a = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal((5, 1)).astype(np.float32)
    a[1, 1], b[3, 0] = np.nan, np.nan
    if op == "pow":
        b = np.round(b * 2)  # integral exponents of negative bases
    ref = _BINARY[op](a.T, b.T)
    assert_close(getattr(core, op)(_dev(a).t(), _dev(b).t()).cpu().numpy(), ref, rtol=2e-6, atol=1e-6,
                 equal_nan=True)


@pytest.mark.parametrize("dtype", ["int32", "int64", "int16", "uint8", "int8", "bool"])
def test_integer_and_byte_dtypes(dtype):
    _need(*["shader-int64"] * (dtype == "int64"))
    rng = _rng()
    a = rng.integers(-100 if dtype not in ("uint8", "bool") else 0, 100 if dtype != "bool" else 2, (7, 5)).astype(dtype)
    b = rng.integers(0, 100 if dtype != "bool" else 2, (5,)).astype(dtype)
    ta, tb = _strided(a), _dev(b)
    np.testing.assert_array_equal((ta == tb).cpu().numpy(), a == b)
    np.testing.assert_array_equal(core.maximum(ta, tb).cpu().numpy(), np.maximum(a, b))
    np.testing.assert_array_equal(core.logical_xor(ta, tb).cpu().numpy(), np.logical_xor(a, b))
    np.testing.assert_array_equal(core.bitwise_xor(ta, tb).cpu().numpy(), a ^ b)
    if dtype != "bool":
        np.testing.assert_array_equal((ta * tb + 3).cpu().numpy(), (a * b + np.array(3, dtype)).astype(dtype))
        np.testing.assert_array_equal((-ta).cpu().numpy(), -a)
        np.testing.assert_array_equal(core.where(ta > 10, ta, tb).cpu().numpy(), np.where(a > 10, a, b))


def test_integer_divisions_floor_and_raise_on_zero():
    a = np.array([7, -7, 7, -7, 0, -2**31 + 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, -1], np.int32)
    for op, ref in [("floor_divide", np.floor_divide), ("remainder", np.remainder), ("fmod", np.fmod)]:
        np.testing.assert_array_equal(getattr(core, op)(_dev(a), _dev(b)).cpu().numpy(), ref(a, b))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        core.floor_divide(_dev(a), 0)


def test_integer_powers_by_squaring():
    _need("shader-int64")
    a, b = np.array([2, -3, 5, 1, -1, 7, 0], np.int64), np.array([10, 3, 0, -2, -3, 2, 0], np.int64)
    want = np.array([1024, -27, 1, 1, -1, 49, 1], np.int64)  # PyTorch: a ** -k is 1 / a ** k truncated
    np.testing.assert_array_equal(core.pow(_dev(a), _dev(b)).cpu().numpy(), want)
    np.testing.assert_array_equal(core.pow(_strided(a.astype(np.int32)), 3).cpu().numpy(), a.astype(np.int32) ** 3)


def test_int64_beyond_32_bits_and_a_large_scalar():
    _need("shader-int64")
    a = np.array([2**40 + 3, -(2**35), 7], np.int64)
    np.testing.assert_array_equal((_dev(a) * 3 + 2**33).cpu().numpy(), a * 3 + 2**33)


def test_odd_lengths_of_byte_outputs_write_whole_words():
    a = _rng().standard_normal(13).astype(np.float32)
    np.testing.assert_array_equal((_dev(a) > 0).cpu().numpy(), a > 0)
    np.testing.assert_array_equal(core.isnan(_dev(np.array([np.nan, 1, np.inf], np.float32))).cpu().numpy(),
                                  [True, False, False])


def test_clamp_where_relu_and_add_with_alpha_propagate_nan():
    a = np.array([-2, np.nan, 0.5, 3, -0.0], np.float32)
    t = _dev(a)
    assert_close(core.clamp(t, -1, 1).cpu().numpy(), np.clip(a, -1, 1), equal_nan=True)
    assert_close(core.clamp(t, min=0.0).cpu().numpy(), np.maximum(a, 0), equal_nan=True)
    assert_close(core.relu(t).cpu().numpy(), np.where(np.isnan(a) | (a > 0), a, 0), equal_nan=True)
    assert_close(core.add(t, t, alpha=2).cpu().numpy(), a + 2 * a, equal_nan=True)
    assert_close(core.sub(t, 1.5, alpha=2).cpu().numpy(), a - 3, equal_nan=True)


def test_float16_computes_in_float32():
    _need("shader-f16")
    a = _rng().standard_normal(9).astype(np.float16)
    assert_close((_dev(a) * 2 + 1).cpu().numpy(), (a * np.float16(2) + np.float16(1)), rtol=1e-3)


def test_gelu_and_its_backward_match_the_composites():
    import core.nn.functional as F

    x = _rng().standard_normal((4, 6)).astype(np.float32)
    for approximate in ("none", "tanh"):
        t = _dev(x).requires_grad_()
        F.gelu(t, approximate=approximate).sum().backward()
        c = core.tensor(x, requires_grad=True)
        F.gelu(c, approximate=approximate).sum().backward()
        assert_close(F.gelu(_dev(x), approximate=approximate).cpu().numpy(),
                     F.gelu(core.tensor(x), approximate=approximate).numpy(), rtol=2e-6, atol=1e-6)
        assert_close(t.grad.cpu().numpy(), c.grad.numpy(), rtol=2e-6, atol=1e-6)


# -- the renderer ---------------------------------------------------------------------------------------------

def test_one_expression_table_renders_c_and_wgsl():
    from core.codegen import CRenderer, expression_for
    from core_webgpu.renderer import RENDERER

    template = expression_for("relu")
    assert CRenderer().expand(template, "float32") == "((a > 0 || ((a) != (a))) ? (a) : (((float)(0))))"
    assert RENDERER.expand(template, "float32") == "select(f32(0), a, a > 0 || core_isnan(f32(a)))"
    assert RENDERER.expand(template, "int32") == "select(i32(0), a, a > 0 || false)"
    source = RENDERER.render_elementwise("erf", ("uint8",), "float32", 2, "float32").source
    assert "fn core_erfc(" in source and "fn core_erf(" in source and "array<u32>" in source


# -- derivatives and reductions -------------------------------------------------------------------------------------

def test_activation_backwards():
    from core.ops import derivatives

    rng = _rng()
    g, y = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    y[0, 0, 0] = np.nan
    for op, ref in [("tanh_backward", g * (1 - y * y)), ("sigmoid_backward", g * y * (1 - y)),
                    ("relu_backward", np.where(y > 0, g, 0))]:
        got = getattr(derivatives, op)(_dev(g), _dev(y))
        assert_close(got.cpu().numpy(), ref.astype(np.float32), rtol=2e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("op,ref", [("sum", np.sum), ("prod", np.prod), ("amax", np.max), ("amin", np.min)])
def test_float_reductions_over_permuted_dims_keepdim_and_nan(op, ref):
    a = _rng().uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    t = _dev(a).permute(2, 0, 1)
    assert_close(getattr(core, op)(t, dim=(0, 2), keepdim=True).cpu().numpy(),
                 ref(a.transpose(2, 0, 1), axis=(0, 2), keepdims=True), rtol=2e-6)
    a[1, 2, 3] = np.nan
    assert_close(getattr(core, op)(_dev(a), dim=1).cpu().numpy(), ref(a, axis=1), rtol=2e-6, equal_nan=True)


def test_long_reductions_run_in_stages_and_keep_float32_sums_accurate():
    _need("shader-int64")  # argmax, an int32 sum: int64 results
    a = _rng().standard_normal(300_007).astype(np.float32)
    a[123_456] = 9.0
    t = _dev(a)
    assert abs(t.sum().item() - a.astype(np.float64).sum()) < 1e-3
    assert t.argmax().item() == 123_456 and t.amax().item() == 9.0
    assert core.ones(200_000, device=DEV, dtype=core.int32).sum().item() == 200_000


def test_arg_reductions_first_of_ties_and_nan_wins():
    _need("shader-int64")
    a = np.array([[1, 3, 3, 0], [2, np.nan, 5, np.nan], [-1, -1, -2, -2]] * 100, np.float32)
    t = _dev(a)
    np.testing.assert_array_equal(t.argmax(dim=1).cpu().numpy(), np.argmax(a, axis=1))
    np.testing.assert_array_equal(t.argmin(dim=1).cpu().numpy(), np.argmin(a, axis=1))
    np.testing.assert_array_equal(t.argmax(dim=0).cpu().numpy(), np.argmax(a, axis=0))
    assert t.argmin().item() == np.argmin(a)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_integer_and_byte_reductions(dtype):
    _need(*["shader-int64"] * (dtype != "bool"))  # integer sums are int64
    a = _rng().integers(0, 2 if dtype == "bool" else 9, (6, 9)).astype(dtype)
    t = _strided(a)
    np.testing.assert_array_equal(core.any(t, dim=1).cpu().numpy(), a.any(1))
    np.testing.assert_array_equal(core.all(t, dim=0).cpu().numpy(), a.all(0))
    np.testing.assert_array_equal(core.amax(t, dim=0).cpu().numpy(), a.max(0))
    if dtype != "bool":
        np.testing.assert_array_equal(core.sum(t, dim=1).cpu().numpy(), a.sum(1, dtype=np.int64))


# -- copies, fill, cat, flip ----------------------------------------------------------------------------------------

def _dispatches() -> int:
    return manager.runtime_for("webgpu").slot.dispatch_count


@pytest.mark.parametrize("src_dtype,dst_dtype", [("float32", "int32"), ("int64", "float32"), ("float32", "bool"),
                                                 ("int8", "int64"), ("uint8", "float16"), ("float32", "float32")])
def test_copy_between_strided_tensors_casts_on_the_device(src_dtype, dst_dtype):
    _need(*{"int64": ["shader-int64"], "float16": ["shader-f16"]}.get(dst_dtype, []),
          *(["shader-int64"] if src_dtype == "int64" else []))
    a = (_rng().standard_normal((4, 6)) * 50).astype(src_dtype)
    byte = dst_dtype in ("bool", "uint8", "int8")  # written four to a word: a fresh, contiguous destination
    dst = core.zeros((4, 6) if byte else (6, 4), dtype=getattr(core, dst_dtype), device=DEV)
    dst = dst if byte else dst.t()  # else a transposed one
    before = _dispatches()
    dst.copy_(_strided(a))
    assert _dispatches() > before  # a kernel, not the host
    np.testing.assert_array_equal(dst.cpu().numpy(), a.astype(dst_dtype))


def test_copy_from_the_host_and_into_a_byte_view_that_shares_words():
    a = np.arange(10, dtype=np.uint8)
    dst = core.zeros(12, dtype=core.uint8, device=DEV)
    dst[1:11].copy_(core.tensor(a))  # cpu -> webgpu: staged through the host
    dst[3:6].copy_(_dev(np.array([7, 8, 9], np.uint8)))  # not whole words: the runtime's strided write
    np.testing.assert_array_equal(dst.cpu().numpy(), [0, 0, 1, 7, 8, 9, 5, 6, 7, 8, 9, 0])


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "int8"])
def test_fill_a_strided_view(dtype):
    t = core.zeros((5, 8), dtype=getattr(core, dtype), device=DEV)
    value = {"float32": -2.5, "int64": 2**40 + 1, "bool": True, "int8": -7}[dtype]
    t[:, ::2].fill_(value) if dtype not in ("bool", "int8") else t.fill_(value)
    ref = np.zeros((5, 8), dtype)
    if dtype in ("bool", "int8"):
        ref[...] = value
    else:
        ref[:, ::2] = value
    np.testing.assert_array_equal(t.cpu().numpy(), ref)


def test_cat_of_strided_inputs_with_promotion_and_flip():
    rng = _rng()
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.integers(0, 9, (3, 2)).astype(np.int32)
    got = core.cat([_strided(a), _dev(b)], dim=1)
    np.testing.assert_array_equal(got.cpu().numpy(), np.concatenate([a, b.astype(np.float32)], 1))
    m = np.array([True, False, True, True, False, False, True])
    np.testing.assert_array_equal(core.cat([_dev(m[:4]), _dev(m[4:])]).cpu().numpy(), m)
    bytes_ = rng.integers(-9, 9, (3, 5)).astype(np.int8)  # slices sharing words: through int32
    np.testing.assert_array_equal(core.cat([_dev(bytes_), _strided(bytes_)], dim=1).cpu().numpy(),
                                  np.concatenate([bytes_, bytes_], 1))
    np.testing.assert_array_equal(core.flip(_strided(a), (0, 1)).cpu().numpy(), a[::-1, ::-1])
    np.testing.assert_array_equal(core.flip(_dev(m), (0,)).cpu().numpy(), m[::-1])
