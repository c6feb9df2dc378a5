"""core.fft against numpy.fft (scipy.fft for the n-D Hermitian transforms): every function on every device in
float32/float64 and complex64/complex128, batched, with n/s padding and trimming, negative and tuple dims and each
norm; the frequencies and shifts; result dtypes; PyTorch's errors (type and message); gradients in float64."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.fft as sfft

import core
from core.autograd import gradcheck, gradgradcheck
from core.testing import assert_close

F = core.fft
NORMS = [None, "backward", "ortho", "forward"]
REAL = ["float32", "float64"]
COMPLEX = ["complex64", "complex128"]
TOL = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10}
COMPLEX_OF = {"float32": "complex64", "float64": "complex128", "complex64": "complex64", "complex128": "complex128"}
REAL_OF = {"complex64": "float32", "complex128": "float64"}


def _data(shape, dtype, *key):
    rng = np.random.default_rng([0, len(shape), *shape, *map(ord, dtype), *map(ord, "".join(map(str, key)))])
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _check(actual, expected, dtype):
    tol = TOL[dtype]
    assert_close(actual, np.asarray(expected).astype(dtype), rtol=tol, atol=tol * 10)


def test_core_fft_is_a_module():
    module = importlib.import_module("core.fft")
    from core import fft

    assert fft is module is core.fft
    assert sorted(module.__all__) == sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(
        module, n)) and getattr(module, n).__module__ == "core.fft")


# -- 1-D transforms ------------------------------------------------------------------------------------------

ONE_D = [  # (core name, reference, input kinds)
    ("fft", np.fft.fft, REAL + COMPLEX),
    ("ifft", np.fft.ifft, REAL + COMPLEX),
    ("rfft", np.fft.rfft, REAL),
    ("irfft", np.fft.irfft, COMPLEX),
    ("hfft", np.fft.hfft, COMPLEX),
    ("ihfft", np.fft.ihfft, REAL),
]


def _result_dtype(name, dtype):
    return REAL_OF[COMPLEX_OF[dtype]] if name in ("irfft", "hfft", "irfftn", "hfftn", "irfft2", "hfft2") \
        else COMPLEX_OF[dtype]


@pytest.mark.parametrize("name,reference,kinds", ONE_D, ids=[c[0] for c in ONE_D])
@pytest.mark.parametrize("norm", NORMS)
def test_1d_against_numpy(device, name, reference, kinds, norm):
    for dtype in kinds:
        a = _data((3, 8), dtype, name)
        result = getattr(F, name)(core.tensor(a, device=device), norm=norm)
        assert result.dtype.name == _result_dtype(name, dtype)
        _check(result, reference(a, norm=norm), _result_dtype(name, dtype))


@pytest.mark.parametrize("name,reference,kinds", ONE_D, ids=[c[0] for c in ONE_D])
@pytest.mark.parametrize("n,dim", [(5, -1), (11, 1), (3, 0), (6, -3), (1, 2)])
def test_1d_n_padding_trimming_and_dim(device, name, reference, kinds, n, dim):
    for dtype in kinds:
        a = _data((4, 6, 5), dtype, name, n)
        result = getattr(F, name)(core.tensor(a, device=device), n=n, dim=dim)
        _check(result, reference(a, n=n, axis=dim), _result_dtype(name, dtype))


def test_odd_and_even_irfft_lengths(device):
    a = _data((2, 5), "complex128")
    for n in (1, 2, 7, 8, 9, 12):
        _check(F.irfft(core.tensor(a, device=device), n), np.fft.irfft(a, n), "float64")
        _check(F.hfft(core.tensor(a, device=device), n, norm="ortho"), np.fft.hfft(a, n, norm="ortho"), "float64")


# -- 2-D and n-D transforms ----------------------------------------------------------------------------------

ND = [
    ("fftn", np.fft.fftn, REAL + COMPLEX),
    ("ifftn", np.fft.ifftn, REAL + COMPLEX),
    ("rfftn", np.fft.rfftn, REAL),
    ("irfftn", np.fft.irfftn, COMPLEX),
    ("hfftn", sfft.hfftn, COMPLEX),
    ("ihfftn", sfft.ihfftn, REAL),
]
ND_ARGS = [  # (s, dim) for an input of shape (3, 4, 6)
    (None, None), ((5, 4), None), (None, (0, 2)), ((2, 7), (-1, 0)), ((-1, 8), (1, 2)), ((4,), (-2,)),
    ((3, 4, 5), None),
]


@pytest.mark.parametrize("name,reference,kinds", ND, ids=[c[0] for c in ND])
@pytest.mark.parametrize("s,dim", ND_ARGS, ids=str)
def test_nd_against_numpy(device, name, reference, kinds, s, dim):
    for dtype in kinds:
        a = _data((3, 4, 6), dtype, name)
        axes = dim if dim is not None else range(3 - len(s), 3) if s is not None else None
        s_np = None if s is None else tuple(a.shape[d] if n == -1 else n for d, n in zip(axes, s))
        result = getattr(F, name)(core.tensor(a, device=device), s=s, dim=dim)
        _check(result, reference(a, s=s_np, axes=None if axes is None else tuple(axes)), _result_dtype(name, dtype))


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"])
@pytest.mark.parametrize("norm", NORMS)
def test_2d_against_numpy(device, name, norm):
    reference = getattr(np.fft, name, None) or getattr(sfft, name)
    for dtype in (COMPLEX if name in ("irfft2", "hfft2") else REAL if name in ("rfft2", "ihfft2") else REAL + COMPLEX):
        a = _data((2, 4, 6), dtype, name)
        _check(getattr(F, name)(core.tensor(a, device=device), norm=norm), reference(a, norm=norm),
               _result_dtype(name, dtype))
        _check(getattr(F, name)(core.tensor(a, device=device), s=(3, 8), dim=(0, 2), norm=norm),
               reference(a, s=(3, 8), axes=(0, 2), norm=norm), _result_dtype(name, dtype))


def test_integer_and_bool_inputs_promote_to_the_default_dtype(device):
    a = np.arange(6, dtype=np.int64)
    result = F.fft(core.tensor(a, device=device))
    assert result.dtype is core.complex64
    _check(result, np.fft.fft(a), "complex64")
    assert F.rfft(core.tensor([True, False, True], device=device)).dtype is core.complex64
    assert F.irfft(core.tensor(a, device=device)).dtype is core.float32
    core.set_default_dtype(core.float64)
    try:
        assert F.fft(core.tensor(a, device=device)).dtype is core.complex128
    finally:
        core.set_default_dtype(core.float32)


def test_out_and_empty_batches(device):
    a = _data((2, 5), "float64")
    out = core.empty(0, dtype=core.complex128, device=device)
    result = F.rfft(core.tensor(a, device=device), out=out)
    assert result is out
    _check(out, np.fft.rfft(a), "complex128")
    empty = F.fft(core.zeros((0, 4), device=device))
    assert empty.shape == (0, 4) and empty.dtype is core.complex64
    assert F.irfft(core.zeros((0, 3), dtype=core.complex64, device=device)).shape == (0, 4)


def test_transforms_invert_each_other(device):
    a = _data((3, 10), "float64")
    x = core.tensor(a, device=device)
    for norm in NORMS:
        _check(F.irfft(F.rfft(x, norm=norm), 10, norm=norm), a, "float64")
        _check(F.ifft(F.fft(x, norm=norm), norm=norm).real, a, "float64")
        _check(F.hfft(F.ihfft(x, norm=norm), 10, norm=norm), a, "float64")
        _check(F.irfftn(F.rfftn(x, norm=norm), x.shape, norm=norm), a, "float64")


# -- frequencies and shifts ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_fftfreq_rfftfreq(device, n, d):
    _check(F.fftfreq(n, d, device=device), np.fft.fftfreq(n, d), "float32")
    _check(F.rfftfreq(n, d, device=device), np.fft.rfftfreq(n, d), "float32")
    result = F.fftfreq(n, d, dtype=core.float64, device=device, requires_grad=True)
    assert result.dtype is core.float64 and result.requires_grad and result.device.type == device
    _check(result.detach(), np.fft.fftfreq(n, d), "float64")
    out = core.empty(0, dtype=core.float64, device=device)
    assert F.rfftfreq(n, d, out=out) is out


@pytest.mark.parametrize("shape,dim", [((5,), None), ((4, 5), None), ((4, 5), 0), ((3, 4, 5), (-1, 0)), ((6,), -1)],
                         ids=str)
def test_fftshift_ifftshift(device, shape, dim):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = core.tensor(a, device=device)
    _check(F.fftshift(x, dim), np.fft.fftshift(a, dim), "float32")
    _check(F.ifftshift(x, dim), np.fft.ifftshift(a, dim), "float32")
    _check(F.ifftshift(F.fftshift(x, dim), dim), a, "float32")
    c = _data(shape, "complex64")
    _check(F.fftshift(core.tensor(c, device=device), dim), np.fft.fftshift(c, dim), "complex64")


# -- errors ----------------------------------------------------------------------------------------------------

def test_errors(device):
    x = core.zeros(4, device=device)
    c = core.zeros(4, dtype=core.complex64, device=device)
    with pytest.raises(RuntimeError, match="^rfft expects a real input tensor, but got ComplexFloat$"):
        F.rfft(c)
    with pytest.raises(RuntimeError, match="^ihfft expects a real input tensor, but got ComplexFloat$"):
        F.ihfft(c)
    with pytest.raises(RuntimeError, match=r"^rfftn expects a real-valued input tensor, but got ComplexFloat$"):
        F.rfft2(core.zeros((2, 2), dtype=core.complex64, device=device))
    with pytest.raises(RuntimeError, match=r"^Invalid number of data points \(0\) specified$"):
        F.fft(x, n=0)
    with pytest.raises(RuntimeError, match=r"^Invalid number of data points \(0\) specified$"):
        F.irfft(core.zeros(1, dtype=core.complex64, device=device))
    with pytest.raises(RuntimeError, match=r"^Invalid number of data points \(-2\) specified$"):
        F.fftn(x, s=(-2,))
    with pytest.raises(RuntimeError, match='^Invalid normalization mode: "sideways"$'):
        F.fft(x, norm="sideways")
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        F.fft(x, dim=1)
    with pytest.raises(RuntimeError, match="^FFT dims must be unique$"):
        F.fftn(core.zeros((2, 2), device=device), dim=(0, -2))
    with pytest.raises(RuntimeError, match="^When given, dim and shape arguments must have the same length$"):
        F.fftn(core.zeros((2, 2), device=device), s=(2,), dim=(0, 1))
    with pytest.raises(RuntimeError, match="^Got shape with 2 values but input tensor only has 1 dimensions.$"):
        F.fftn(x, s=(2, 2))
    with pytest.raises(RuntimeError, match="^Unsupported dtype Half$"):
        F.fft(core.zeros(4, dtype=core.float16, device=device))
    with pytest.raises(TypeError, match=r"^fft_fft\(\): argument 'input' \(position 1\) must be Tensor, not list$"):
        F.fft([1.0, 2.0])


def test_out_kind_and_scalar_errors(device):
    x = core.zeros(3, device=device)
    c = core.zeros(3, dtype=core.complex64, device=device)
    real_out, complex_out = core.empty(0, device=device), core.empty(0, dtype=core.complex64, device=device)
    with pytest.raises(RuntimeError, match="^fft expects a complex output tensor, but got Float$"):
        F.fft(x, out=real_out)
    with pytest.raises(RuntimeError, match="^fftn expects a complex output tensor, but got Float$"):
        F.ifftn(x, out=real_out)  # PyTorch names fftn in both
    with pytest.raises(RuntimeError, match="^irfft expects a floating point output tensor, but got ComplexFloat$"):
        F.irfft(c, out=complex_out)
    with pytest.raises(RuntimeError, match="^hfftn expects a floating point output tensor, but got ComplexFloat$"):
        F.hfft2(core.zeros((2, 2), dtype=core.complex64, device=device), out=complex_out)
    with pytest.raises(IndexError, match="^Dimension specified as -1 but tensor has no dimensions$"):
        F.fft(core.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match="^rfftn must transform at least one axis$"):
        F.rfftn(core.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match="^irfftn must transform at least one axis$"):
        F.irfftn(core.tensor(1.0, dtype=core.complex64, device=device))
    with pytest.raises(RuntimeError, match="^fftfreq requires a floating point or complex dtype$"):
        F.fftfreq(3, dtype=core.int64, device=device)
    with pytest.raises(RuntimeError, match="^rfftfreq requires a floating point or complex dtype$"):
        F.rfftfreq(3, dtype=core.int32, device=device)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        F.fftshift(x, 1)


def test_irfftn_minus_one_in_s_keeps_the_default_last_size(device):
    c = _data((2, 5), "complex128")
    result = F.irfftn(core.tensor(c, device=device), s=(3, -1))
    assert result.shape == (3, 8)
    _check(result, np.fft.irfftn(c, s=(3, 8), axes=(0, 1)), "float64")
    _check(F.hfftn(core.tensor(c, device=device), s=(-1, -1)), sfft.hfftn(c, s=(2, 8)), "float64")


def test_complex_fftfreq_and_meta(device):
    _check(F.fftfreq(4, dtype=core.complex64, device=device), np.fft.fftfreq(4), "complex64")
    x = core.zeros((3, 8), device="meta")
    assert F.rfft(x, n=10).shape == (3, 6) and F.rfft(x).dtype is core.complex64
    assert F.irfftn(F.rfftn(x)).shape == (3, 8) and F.hfft(x).dtype is core.float32
    assert F.fft2(x, s=(4, 4)).shape == (4, 4) and F.fftshift(x).shape == (3, 8)


# -- gradients (float64; gradcheck is real-only: real functions of real inputs) --------------------------------

def _weights(shape):
    return core.tensor(_data(shape, "complex128", "w"))


GRADS = {
    "fft_abs": lambda x: F.fft(x, n=8).abs(),
    "fft_real_ortho": lambda x: F.fft(x, norm="ortho").real,
    "ifft_complex": lambda x: F.ifft(x.to(core.complex128) * _weights((1, 6)), n=5).abs(),
    "rfft_abs": lambda x: F.rfft(x).abs(),
    "irfft_rfft": lambda x: F.irfft(F.rfft(x) * _weights((4,)), norm="forward"),
    "irfft_odd": lambda x: F.irfft(F.rfft(x, n=7) * _weights((4,)), n=7),
    "hfft_ihfft": lambda x: F.hfft(F.ihfft(x) * _weights((4,)), n=6),
    "fftn_abs": lambda x: F.fftn(x, s=(3, 5)).abs(),
    "irfftn_rfftn": lambda x: F.irfftn(F.rfftn(x) / _weights((2, 4)), s=(2, 6), norm="ortho"),
    "hfft2_rfft2": lambda x: F.hfft2(F.rfft2(x) * _weights((2, 4))),
    "ihfftn_abs": lambda x: F.ihfftn(x, dim=(0, 1)).abs(),
    "fftshift": lambda x: F.fftshift(F.ifftshift(x, 1) * 2.0),
}


@pytest.mark.parametrize("name", GRADS)
def test_gradcheck(name):
    x = core.tensor(_data((2, 6), "float64", name), requires_grad=True)
    assert gradcheck(GRADS[name], (x,))


def test_gradgradcheck():
    x = core.tensor(_data((2, 6), "float64"), requires_grad=True)
    assert gradgradcheck(lambda x: F.irfft(F.rfft(x) * F.rfft(x)), (x,))


def test_complex_input_gradient_against_finite_differences():
    """The gradient of a real loss of a complex input is dL/dre + i dL/dim (PyTorch's convention)."""
    c = _data((5,), "complex128", "grad")
    w = _data((5,), "complex128", "weights")

    def loss(z):
        return float((np.abs(np.fft.fft(z) * w) ** 2).sum())

    eps = 1e-6
    expected = np.array([(loss(c + eps * e) - loss(c - eps * e)) / (2 * eps)
                         + 1j * (loss(c + 1j * eps * e) - loss(c - 1j * eps * e)) / (2 * eps) for e in np.eye(5)])
    z = core.tensor(c, requires_grad=True)
    (F.fft(z) * core.tensor(w)).abs().square().sum().backward()
    assert_close(z.grad, expected, rtol=1e-6, atol=1e-6)
