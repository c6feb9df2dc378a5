"""Complex tensors end to end on every device, against NumPy: real/imag and view_as_real/view_as_complex as views
of one storage (writes go through), the conj family, polar and complex, and gradients in PyTorch's conjugate
Wirtinger convention checked by the complex-aware gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.autograd import gradcheck, gradgradcheck
from core.testing import assert_close

# complex tensors live on opencl's storage, but its kernels decline complex dtypes: they run on the CPU fallback
pytestmark = pytest.mark.filterwarnings("ignore:.*running on the CPU with copies:RuntimeWarning")


def _rng():
    return np.random.default_rng(0)


def _complex(shape, rng=None):
    rng = rng or _rng()
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _np(t):
    return t.detach().cpu().numpy()


# -- views ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,real", [(core.complex64, core.float32), (core.complex128, core.float64)])
def test_real_and_imag_are_views_with_doubled_strides(device, dtype, real):
    values = _complex((3, 4))
    z = core.tensor(values, device=device).to(dtype)
    for part, offset, expected in ((z.real, 0, values.real), (z.imag, 1, values.imag)):
        assert part.dtype is real and part.shape == (3, 4)
        assert part.stride() == (8, 2) and part.storage_offset() == offset
        assert part.untyped_storage().data_ptr() == z.untyped_storage().data_ptr()
        assert_close(part, expected.astype(real.numpy), rtol=0, atol=0)
    sliced = z[1:, 1:].imag  # offsets and strides of a view of a view
    assert sliced.storage_offset() == 2 * (4 + 1) + 1 and sliced.stride() == (8, 2)
    assert_close(sliced, values[1:, 1:].imag.astype(real.numpy), rtol=0, atol=0)


def test_writes_through_real_and_imag_views_and_setters(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device)
    z.real.mul_(2)
    z.imag[0] = 7.0
    expected = values * 1
    expected.real *= 2
    expected.imag[0] = 7.0
    assert_close(z, expected, rtol=0, atol=0)
    z.imag = core.zeros(3, dtype=core.float64)  # broadcast over the rows
    z.real = 1.5
    assert_close(z, np.full((2, 3), 1.5 + 0j), rtol=0, atol=0)


def test_real_of_a_real_tensor_is_itself_and_imag_raises(device):
    x = core.tensor([1.0, -2.0], device=device)
    assert core.real(x) is x and x.real is x
    with pytest.raises(RuntimeError, match="^imag is not implemented for tensors with non-complex dtypes.$"):
        _ = x.imag


def test_view_as_real_and_view_as_complex_share_storage(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device)
    r = core.view_as_real(z)
    assert r.shape == (2, 3, 2) and r.stride() == (6, 2, 1) and r.dtype is core.float64
    assert_close(r, np.stack([values.real, values.imag], -1), rtol=0, atol=0)
    back = core.view_as_complex(r)
    assert back.shape == (2, 3) and back.stride() == (3, 1) and back.dtype is core.complex128
    r[..., 1].neg_()
    assert_close(back, values.conj(), rtol=0, atol=0)
    assert_close(z, values.conj(), rtol=0, atol=0)
    f = core.tensor(np.arange(12.0).reshape(3, 2, 2), device=device, dtype=core.float32)
    c = core.view_as_complex(f[1:])  # an even storage offset
    assert c.dtype is core.complex64 and c.storage_offset() == 2
    assert_close(c, (np.arange(12.0).reshape(3, 2, 2)[1:] @ [1, 1j]).astype(np.complex64), rtol=0, atol=0)


def test_view_dtype_reinterprets_complex_bytes_like_numpy(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device)
    assert_close(z.view(core.float64), values.view(np.float64), rtol=0, atol=0)
    assert_close(z.view(core.float64).view(core.complex128), values, rtol=0, atol=0)
    assert_close(z.to(core.complex64).view(core.int64), values.astype(np.complex64).view(np.int64), rtol=0, atol=0)


def test_view_as_copies_own_their_storage(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device)
    r = core.view_as_real_copy(z)
    assert r.is_contiguous() and r.shape == (2, 3, 2)
    r.zero_()
    assert_close(z, values, rtol=0, atol=0)
    pairs = core.tensor(np.stack([values.real, values.imag], -1), device=device)
    c = core.view_as_complex_copy(pairs)
    pairs.zero_()
    assert_close(c, values, rtol=0, atol=0)


def test_view_as_errors_follow_pytorch(device):
    with pytest.raises(RuntimeError, match="^view_as_real is only supported for complex tensors$"):
        core.view_as_real(core.zeros(2, device=device))
    with pytest.raises(RuntimeError, match="scalar type: Long$"):
        core.view_as_complex(core.zeros(3, 2, dtype=core.int64, device=device))
    with pytest.raises(RuntimeError, match="^Tensor must have a last dimension of size 2$"):
        core.view_as_complex(core.zeros(3, 3, device=device))
    with pytest.raises(RuntimeError, match="^Tensor must have a last dimension with stride 1$"):
        core.view_as_complex(core.zeros(2, 3, device=device).t())
    with pytest.raises(RuntimeError, match="^Tensor must have a storage_offset divisible by 2$"):
        core.view_as_complex(core.zeros(5, device=device)[1:].view(2, 2))
    with pytest.raises(RuntimeError, match="^Input tensor must have one or more dimensions$"):
        core.view_as_complex(core.zeros((), device=device))


def test_gradients_flow_through_the_views(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device, requires_grad=True)
    (3 * z.real + 5 * z.imag).sum().backward()
    assert_close(z.grad, np.full((2, 3), 3 + 5j), rtol=0, atol=0)  # dL/dre + i dL/dim
    pairs = core.tensor(np.stack([values.real, values.imag], -1), device=device, requires_grad=True)
    (core.view_as_complex(pairs) * (2 - 1j)).real.sum().backward()
    assert_close(pairs.grad, np.broadcast_to([2.0, 1.0], (2, 3, 2)), rtol=0, atol=0)


def test_cfloat_and_cdouble_cast(device):
    x = core.tensor([1.0, -2.0], device=device)
    assert x.cfloat().dtype is core.complex64 and x.cdouble().dtype is core.complex128
    assert_close(x.cdouble(), np.array([1.0, -2.0], np.complex128), rtol=0, atol=0)


# -- the conj family ------------------------------------------------------------------------------------

def test_conj_is_eager_and_the_lazy_bits_are_never_set(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device)
    for result in (core.conj(z), z.conj(), core.conj_physical(z), z.conj_physical(), z.resolve_conj().conj()):
        assert result.dtype is core.complex128
        assert_close(result, values.conj(), rtol=0, atol=0)
    c = z.conj()
    assert c.untyped_storage().data_ptr() != z.untyped_storage().data_ptr()  # eager: new memory
    assert not core.is_conj(c) and not c.is_conj() and not core.is_neg(-z) and not z.is_neg()
    assert core.resolve_conj(c) is c and core.resolve_neg(c) is c and c.resolve_neg() is c
    assert z.conj_physical_() is z
    assert_close(z, values.conj(), rtol=0, atol=0)
    x = core.tensor([1.0, -2.0], device=device)
    assert core.conj(x) is x and core.conj_physical(x) is x and x.conj_physical_() is x
    out = core.empty(3, dtype=core.complex128, device=device)
    assert core.conj_physical(z[0], out=out) is out
    assert_close(out, values[0], rtol=0, atol=0)


def test_H_mH_and_adjoint_conjugate(device):
    values = _complex((4, 2, 3))
    z = core.tensor(values, device=device)
    assert_close(z[0].H, values[0].conj().T, rtol=0, atol=0)
    for result in (z.mH, z.adjoint(), core.adjoint(z)):
        assert_close(result, values.conj().swapaxes(-1, -2), rtol=0, atol=0)
    x = core.tensor(values.real, device=device)
    assert core.adjoint(x).untyped_storage().data_ptr() == x.untyped_storage().data_ptr()  # a view
    with pytest.raises(RuntimeError, match="^tensor.adjoint\\(\\) is only supported on matrices or batches of "
                                           "matrices. Got 1-D tensor.$"):
        core.adjoint(x[0, 0])


# -- complex tensors from parts -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,complex_dtype", [(core.float32, core.complex64), (core.float64, core.complex128)])
def test_complex_and_polar_match_numpy(device, dtype, complex_dtype):
    rng = _rng()
    re, im = rng.standard_normal((2, 3)), rng.standard_normal(3)  # broadcast
    r, i = (core.tensor(v, device=device).to(dtype) for v in (re, im))
    result = core.complex(r, i)
    assert result.dtype is complex_dtype and result.shape == (2, 3)
    assert_close(result, (re + 1j * im).astype(complex_dtype.numpy))
    magnitude, phase = np.abs(re), im
    result = core.polar(core.tensor(magnitude, device=device).to(dtype), i)
    assert result.dtype is complex_dtype
    assert_close(result, (magnitude * np.exp(1j * phase)).astype(complex_dtype.numpy), rtol=1e-5, atol=1e-6)
    out = core.empty(0, dtype=complex_dtype, device=device)
    assert core.complex(r, i, out=out) is out and out.shape == (2, 3)


def test_complex_keeps_infinite_parts_exact(device):
    inf = float("inf")
    result = core.complex(core.tensor([inf, 0.0], device=device), core.tensor([0.0, -inf], device=device))
    assert_close(result, np.array([complex(inf, 0), complex(0, -inf)], np.complex64), rtol=0, atol=0)


def test_complex_and_polar_errors(device):
    f32 = core.zeros(2, device=device)
    with pytest.raises(RuntimeError,
                       match="^Expected both inputs to be Float or Double tensors but got Long and Float$"):
        core.complex(core.zeros(2, dtype=core.int64, device=device), f32)
    with pytest.raises(RuntimeError, match="^Expected object of scalar type Float but got scalar type Double"):
        core.polar(f32, f32.double())
    with pytest.raises(TypeError, match="^complex\\(\\): argument 'real' and 'imag' must be Tensors"):
        core.complex(f32, 1.0)


def test_abs_angle_and_sgn_return_what_pytorch_does(device):
    values = _complex((4,))
    values[0] = 0
    z = core.tensor(values, device=device).to(core.complex64)
    assert core.abs(z).dtype is core.float32 and core.angle(z).dtype is core.float32
    assert_close(core.abs(z), np.abs(values).astype(np.float32))
    assert_close(core.angle(z), np.angle(values).astype(np.float32))
    expected = np.where(values == 0, 0, values / np.where(values == 0, 1, np.abs(values)))
    assert_close(core.sgn(z), expected.astype(np.complex64))


# -- gradients: the complex-aware gradcheck ---------------------------------------------------------------

def _leaf(values, device):
    return core.tensor(values, device=device, requires_grad=True)


_UNARY_GRADIENTS = {
    "abs": core.abs, "angle": core.angle, "sgn": core.sgn, "conj": core.conj, "conj_physical": core.conj_physical,
    "real": lambda z: z.real, "imag": lambda z: z.imag, "view_as_real": core.view_as_real,
    "exp": core.exp, "log": core.log, "sqrt": core.sqrt, "sin": core.sin, "tanh": core.tanh,
    "reciprocal": core.reciprocal, "square": core.square, "pow_scalar": lambda z: z ** 3,
    "sum": lambda z: z.sum(1), "adjoint": core.adjoint, "mean": lambda z: z.mean(), "fft": core.fft.fft,
    "ifft2": core.fft.ifft2,
    "prod": lambda z: z.prod(1), "cumprod": lambda z: z.cumprod(1), "cumsum": lambda z: z.cumsum(0),
    "rpow": lambda z: (1 + 1j) ** z, "var": lambda z: z.var(), "vector_norm": core.linalg.vector_norm,
    "real_part_of_product": lambda z: (z * z.conj()).real, "abs_squared_loss": lambda z: (z.abs() ** 2).sum(),
}


@pytest.mark.parametrize("name", sorted(_UNARY_GRADIENTS))
def test_gradcheck_complex_unary(device, name):
    z = _leaf(_complex((2, 3)) + 0.5, device)
    assert gradcheck(_UNARY_GRADIENTS[name], (z,))


_BINARY_GRADIENTS = {
    "mul": core.mul, "div": core.div, "add": core.add, "sub": lambda a, b: a - 2j * b, "pow": core.pow,
    "matmul": lambda a, b: a @ b.mT, "vdot": lambda a, b: core.vdot(a[0], b[0]),
    "einsum": lambda a, b: core.einsum("ij,kj->ik", a, b), "outer": lambda a, b: core.outer(a[0], b[1]),
}


_MATRIX_GRADIENTS = {  # for the SVD, only losses invariant to the singular vectors' phases have a gradient
    "det": core.linalg.det, "inv": core.linalg.inv, "solve": lambda a: core.linalg.solve(a, a.mH),
    "pinv": core.linalg.pinv, "svd_U_Vh": lambda a: (lambda u, s, vh: u @ vh)(*core.linalg.svd(a)),
    "svdvals": core.linalg.svdvals, "lstsq": lambda a: core.linalg.lstsq(a, a.mH.exp())[0],
    "matrix_exp": core.linalg.matrix_exp,
    "cholesky": lambda a: core.linalg.cholesky(a @ a.mH + 3 * core.eye(3, device=a.device)),
}


@pytest.mark.parametrize("name", sorted(_MATRIX_GRADIENTS))
def test_gradcheck_complex_linalg(device, name):
    a = _leaf(_complex((3, 3)), device)
    assert gradcheck(_MATRIX_GRADIENTS[name], (a,))


@pytest.mark.parametrize("name", sorted(_BINARY_GRADIENTS))
def test_gradcheck_complex_binary(device, name):
    rng = _rng()
    a, b = _leaf(_complex((2, 3), rng) + 1, device), _leaf(_complex((2, 3), rng) + 1, device)
    assert gradcheck(_BINARY_GRADIENTS[name], (a, b))


def test_gradcheck_real_to_complex_and_back(device):
    rng = _rng()
    r, i = _leaf(rng.standard_normal(3) + 2, device), _leaf(rng.standard_normal(3), device)
    assert gradcheck(core.complex, (r, i))
    assert gradcheck(core.polar, (r, i))
    assert gradcheck(core.view_as_complex, (_leaf(rng.standard_normal((3, 2)), device),))
    assert gradcheck(lambda x: core.fft.rfft(x), (_leaf(rng.standard_normal(6), device),))
    mixed = _leaf(_complex(3, rng), device)
    assert gradcheck(lambda z, x: z * x, (mixed, r))  # a real input's gradient is the real part


@pytest.mark.parametrize("name", ["mul", "exp", "abs", "polar"])
def test_gradgradcheck_complex(device, name):
    rng = _rng()
    z, w = _leaf(_complex(3, rng) + 1, device), _leaf(_complex(3, rng), device)
    r, i = _leaf(rng.standard_normal(3) + 2, device), _leaf(rng.standard_normal(3), device)
    func, inputs = {"mul": (core.mul, (z, w)), "exp": (core.exp, (z,)), "abs": (core.abs, (z,)),
                    "polar": (core.polar, (r, i))}[name]
    assert gradgradcheck(func, inputs)


def test_gradcheck_catches_a_wrong_complex_derivative(device):
    """A derivative that forgets PyTorch's conjugate (g * f'(z) for exp instead of g * conj(f'(z))) must fail."""

    class WrongExp(core.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            out = core.exp(z)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    z = _leaf(_complex(3), device)
    assert gradcheck(core.exp, (z,))
    assert not gradcheck(WrongExp.apply, (z,), raise_exception=False)
    with pytest.raises(core.autograd.GradcheckError, match="Jacobian mismatch"):
        gradcheck(WrongExp.apply, (z,))


def test_in_place_writes_through_real_and_imag_views_are_differentiable(device):
    def scale_parts(z):
        y = z * 1
        y.real.mul_(2)  # the base's gradient flows through writes into its real-dtype views
        y.imag.add_(y.real)
        return y.exp()

    values = _complex(3)
    z = _leaf(values, device)
    expected = values.real * 2 + 1j * (values.imag + 2 * values.real)
    assert_close(scale_parts(z), np.exp(expected))
    assert gradcheck(scale_parts, (z,))


def test_complex_randn_and_sigmoid(device):
    """randn of a complex dtype draws the complex normal distribution (each part of variance 1/2, as PyTorch);
    sigmoid of a complex tensor is 1 / (1 + exp(-z))."""
    core.manual_seed(0)
    z = core.randn(20000, dtype=core.complex64, device=device)
    assert z.dtype == core.complex64
    a = z.cpu().numpy()
    assert abs(a.real.var() - 0.5) < 0.03 and abs(a.imag.var() - 0.5) < 0.03 and abs(a.mean()) < 0.03
    shifted = core.empty(20000, dtype=core.complex128, device=device).normal_(2.0, 2.0).cpu().numpy()
    assert abs(shifted.mean() - 2.0) < 0.05 and abs(shifted.real.var() - 2.0) < 0.1
    w = np.array([1 + 2j, -0.5j, 3 - 1j])
    np.testing.assert_allclose(core.sigmoid(core.tensor(w, device=device)).cpu().numpy(), 1 / (1 + np.exp(-w)),
                               rtol=1e-12)
