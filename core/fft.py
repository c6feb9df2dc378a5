"""``core.fft``: discrete Fourier transforms with PyTorch's names, signatures and errors (``torch.fft``).

The transforms are the three primitives of ``core/ops/spectral.py`` (``fft_c2c``, ``fft_r2c``, ``fft_c2r``);
padding and trimming to ``n``/``s``, the Hermitian transforms (a conjugate around c2r or r2c), the 2-D and n-D
forms, the shifts (``roll``) and the sample frequencies (``arange``) are composites. Real inputs compute in their
dtype (float32 gives complex64, float64 complex128); integer and bool inputs are promoted to the default dtype.
"""

from __future__ import annotations

import numbers

from . import dtypes as _dt
from .ops._util import finish_out as _finish_out, wrap_dim as _wrap_dim
from .ops.creation import zeros as _zeros
from .ops.elementwise import conj as _conj
from .ops.ranges import arange as _arange
from .ops.shape import cat as _cat, roll as _roll
from .ops.spectral import fft_c2c as _c2c, fft_c2r as _c2r, fft_r2c as _r2c
from .tensor import Tensor as _Tensor

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]


def _normalization(norm, forward: bool) -> int:
    """PyTorch's norm_from_string: 0 no scaling, 1 by 1/sqrt(n), 2 by 1/n, for the transform's direction."""
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "forward":
        return 2 if forward else 0
    if norm == "ortho":
        return 1
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(name: str, input, require_complex: bool):
    """The input in the dtype the transform runs in (PyTorch's promote_tensor_fft)."""
    if not isinstance(input, _Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    dtype = input.dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        dtype = _dt.get_default_dtype()
    if dtype.name not in ("float32", "float64", "complex64", "complex128"):
        raise RuntimeError(f"Unsupported dtype {_dt.legacy_name(dtype)}")
    if require_complex and not dtype.is_complex:
        dtype = dtype.to_complex()
    return input if dtype is input.dtype else input.to(dtype)


def _resize(x, dims, sizes):
    """Zero-pad at the end, or trim, each of ``dims`` to its size in ``sizes`` (PyTorch's resize_fft_input)."""
    for d, size in zip(dims, sizes):
        have = x._shape[d]
        if size < have:
            x = x.narrow(d, 0, size)
        elif size > have:
            shape = list(x._shape)
            shape[d] = size - have
            x = _cat([x, _zeros(tuple(shape), dtype=x.dtype, device=x.device)], d)
    return x


def _dim(d, input, name: str) -> int:
    """``d`` wrapped to ``[0, ndim)``; a 0-d input has no dim to transform (PyTorch's wrap_scalar=false)."""
    if input.ndim == 0 and isinstance(d, numbers.Integral):
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return _wrap_dim(d, input.ndim, f"fft_{name}")


def _out(op: str, result, out, complex_result: bool):
    """PyTorch's check of ``out``'s kind (complex, or floating point for c2r) before ``finish_out``."""
    if out is not None and isinstance(out, _Tensor):
        if complex_result and not out.dtype.is_complex:
            raise RuntimeError(f"{op} expects a complex output tensor, but got {_dt.legacy_name(out.dtype)}")
        if not complex_result and not out.dtype.is_floating_point:
            raise RuntimeError(f"{op} expects a floating point output tensor, but got {_dt.legacy_name(out.dtype)}")
    return _finish_out(f"fft_{op}", result, out)


def _check_points(n) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _dim_1d(name: str, input, n, dim):
    d = _dim(dim, input, name)
    n = input._shape[d] if n is None else n
    _check_points(n)
    return d, n


def _shape_and_dims(name: str, input, s, dim):
    """PyTorch's canonicalize_fft_shape_and_dim_args: the dims (in the order given) and the signal size of each."""
    if isinstance(dim, numbers.Integral):
        dim = (dim,)
    if isinstance(s, numbers.Integral):
        s = (s,)
    if dim is not None:
        dims = tuple(_dim(d, input, name) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = tuple(s)
        if dim is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > input.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {input.ndim} dimensions.")
        if dim is None:
            dims = tuple(range(input.ndim - len(s), input.ndim))
        sizes = tuple(input._shape[d] if n == -1 else n for d, n in zip(dims, s))
    else:
        if dim is None:
            dims = tuple(range(input.ndim))
        sizes = tuple(input._shape[d] for d in dims)
    for n in sizes:
        _check_points(n)
    return dims, sizes


# -- the transforms, each n-D at heart ----------------------------------------------------------------------

def _c2c_nd(name, input, dims, sizes, norm, forward, out):
    x = _promote(name, input, False)
    if not dims:
        return _out(name, x.to(x.dtype.to_complex()) if not x.is_complex() else x.clone(), out, True)
    x = _resize(x, dims, sizes)
    mode = _normalization(norm, forward)
    if x.is_complex():
        result = _c2c(x, dims, mode, forward)
    else:  # a real signal, as PyTorch's fft of one: r2c's two-sided spectrum (the inverse is its conjugate)
        result = _r2c(x, dims, mode, False)
        if not forward:
            result = _conj(result)
    return _out(name, result, out, True)


def _r2c_nd(name, input, dims, sizes, norm, forward, out):
    if isinstance(input, _Tensor) and input.is_complex():
        raise RuntimeError(f"{name} expects a real input tensor, but got {_dt.legacy_name(input.dtype)}")
    x = _promote(name, input, False)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = _resize(x, dims, sizes)
    result = _r2c(x, dims, _normalization(norm, forward), True)
    if not forward:  # ihfft: the inverse transform of a real signal is the conjugate of the forward one
        result = _conj(result)
    return _out(name, result, out, True)


def _c2r_nd(name, input, dims, sizes, last_given, norm, forward, out):
    x = _promote(name, input, True)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last_dim_size = sizes[-1] if last_given else 2 * (x._shape[dims[-1]] - 1)
    _check_points(last_dim_size)
    x = _resize(x, dims, sizes[:-1] + (last_dim_size // 2 + 1,))
    if forward:  # hfft: the forward transform of a Hermitian signal is c2r of its conjugate
        x = _conj(x)
    return _out(name, _c2r(x, dims, _normalization(norm, forward), last_dim_size), out, False)


def _last_given(s) -> bool:
    """Whether ``s`` sets the c2r output's last size (absent or -1: 2 * (size - 1))."""
    if s is None:
        return False
    return (s if isinstance(s, numbers.Integral) else tuple(s)[-1]) != -1


def _nd_args(name, input, s, dim):
    _promote(name, input, False)
    return _shape_and_dims(name, input, s, dim)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform (``torch.fft.fft``)."""
    d, n = _dim_1d("fft", _promote("fft", input, False), n, dim)
    return _c2c_nd("fft", input, (d,), (n,), norm, True, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D inverse discrete Fourier transform (``torch.fft.ifft``)."""
    d, n = _dim_1d("ifft", _promote("ifft", input, False), n, dim)
    return _c2c_nd("ifft", input, (d,), (n,), norm, False, out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D FFT of a real signal, the n // 2 + 1 non-negative frequencies (``torch.fft.rfft``)."""
    if isinstance(input, _Tensor) and input.is_complex():
        raise RuntimeError(f"rfft expects a real input tensor, but got {_dt.legacy_name(input.dtype)}")
    d, n = _dim_1d("rfft", _promote("rfft", input, False), n, dim)
    return _r2c_nd("rfft", input, (d,), (n,), norm, True, out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: a real signal of n values (default 2 * (size - 1)) (``torch.fft.irfft``)."""
    d = _dim(dim, _promote("irfft", input, True), "irfft")
    return _c2r_nd("irfft", input, (d,), (n,), n is not None, norm, False, out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The FFT of a Hermitian-symmetric signal given by its one-sided half: a real result (``torch.fft.hfft``)."""
    d = _dim(dim, _promote("hfft", input, True), "hfft")
    return _c2r_nd("hfft", input, (d,), (n,), n is not None, norm, True, out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the n // 2 + 1 values of the inverse FFT of a real signal (``torch.fft.ihfft``)."""
    if isinstance(input, _Tensor) and input.is_complex():
        raise RuntimeError(f"ihfft expects a real input tensor, but got {_dt.legacy_name(input.dtype)}")
    d, n = _dim_1d("ihfft", _promote("ihfft", input, False), n, dim)
    return _r2c_nd("ihfft", input, (d,), (n,), norm, False, out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D discrete Fourier transform (``torch.fft.fftn``)."""
    dims, sizes = _nd_args("fftn", input, s, dim)
    return _c2c_nd("fftn", input, dims, sizes, norm, True, out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D inverse discrete Fourier transform (``torch.fft.ifftn``)."""
    dims, sizes = _nd_args("ifftn", input, s, dim)
    return _c2c_nd("fftn", input, dims, sizes, norm, False, out)  # PyTorch's out check names it fftn too


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D FFT of a real signal, one-sided in the last of dim (``torch.fft.rfftn``)."""
    if isinstance(input, _Tensor) and input.is_complex():
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {_dt.legacy_name(input.dtype)}")
    dims, sizes = _nd_args("rfftn", input, s, dim)
    return _r2c_nd("rfftn", input, dims, sizes, norm, True, out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn (``torch.fft.irfftn``)."""
    dims, sizes = _nd_args("irfftn", input, s, dim)
    return _c2r_nd("irfftn", input, dims, sizes, _last_given(s), norm, False, out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D FFT of a Hermitian-symmetric signal given by its half in the last of dim (``torch.fft.hfftn``)."""
    dims, sizes = _nd_args("hfftn", input, s, dim)
    return _c2r_nd("hfftn", input, dims, sizes, _last_given(s), norm, True, out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn: one-sided in the last of dim (``torch.fft.ihfftn``)."""
    if isinstance(input, _Tensor) and input.is_complex():
        raise RuntimeError(f"ihfftn expects a real-valued input tensor, but got {_dt.legacy_name(input.dtype)}")
    dims, sizes = _nd_args("ihfftn", input, s, dim)
    return _r2c_nd("ihfftn", input, dims, sizes, norm, False, out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D discrete Fourier transform (``torch.fft.fft2``)."""
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D inverse discrete Fourier transform (``torch.fft.ifft2``)."""
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D FFT of a real signal (``torch.fft.rfft2``)."""
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of rfft2 (``torch.fft.irfft2``)."""
    return irfftn(input, s, dim, norm, out=out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D FFT of a Hermitian-symmetric signal (``torch.fft.hfft2``)."""
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of hfft2 (``torch.fft.ihfft2``)."""
    return ihfftn(input, s, dim, norm, out=out)


# -- frequencies and shifts ---------------------------------------------------------------------------------

def _freq_dtype(name: str, dtype, out):
    dtype = out.dtype if out is not None else _dt.get_default_dtype() if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    return dtype


def _freqs(values, dtype, n, d, out, requires_grad):
    result = values * (1.0 / (n * d))
    result = _finish_out("fft_fftfreq", result if result.dtype is dtype else result.to(dtype), out)
    return result.requires_grad_() if requires_grad else result


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point FFT, cycles per unit of the spacing d (``torch.fft.fftfreq``)."""
    dtype = _freq_dtype("fftfreq", dtype, out)
    real = dtype.to_real() if dtype.is_complex else dtype
    values = _cat([_arange((n + 1) // 2, dtype=real, device=device), _arange(-(n // 2), 0, dtype=real, device=device)])
    return _freqs(values, dtype, n, d, out, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The n // 2 + 1 non-negative sample frequencies of rfft (``torch.fft.rfftfreq``)."""
    dtype = _freq_dtype("rfftfreq", dtype, out)
    real = dtype.to_real() if dtype.is_complex else dtype
    return _freqs(_arange(n // 2 + 1, dtype=real, device=device), dtype, n, d, out, requires_grad)


def _shift(input, dim, inverse: bool):
    dims = tuple(range(input.ndim)) if dim is None else \
        tuple(_dim(d, input, "fftshift") for d in ((dim,) if isinstance(dim, numbers.Integral) else dim))
    if not dims:
        return input.clone()
    shifts = [(input._shape[d] + inverse) // 2 for d in dims]
    return _roll(input, shifts, dims)


def fftshift(input, dim=None):
    """The zero frequency moved to the centre: a roll by size // 2 over dim (default all) (``torch.fft.fftshift``)."""
    return _shift(input, dim, False)


def ifftshift(input, dim=None):
    """The inverse of fftshift: a roll by (size + 1) // 2 (``torch.fft.ifftshift``)."""
    return _shift(input, dim, True)
