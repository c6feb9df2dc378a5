"""The discrete Fourier transforms: complex-to-complex, real-to-complex and complex-to-real (``torch.fft``).

Three primitives, as PyTorch's ``_fft_c2c``/``_fft_r2c``/``_fft_c2r``, over any set of dims at once;
``normalization`` is PyTorch's mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n (n the product of the transformed sizes).
The reference kernels call the array module's ``fft`` (pocketfft through NumPy, cuFFT through CuPy). Padding and
trimming to ``n``/``s``, the Hermitian transforms, the 2-D and n-D forms, the shifts and the frequencies are
composites in :mod:`core.fft`.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..dispatch import TensorSpec, define
from ..tensor import Tensor

__all__: list = []
METHODS: dict = {}


def _check(op: str, input, dims, normalization, want_complex: bool) -> tuple:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if want_complex and not input.dtype.is_complex:
        raise RuntimeError(f"{op}: expected a complex input tensor, but got {dt.legacy_name(input.dtype)}")
    if not want_complex and input.dtype.name not in ("float32", "float64"):
        raise RuntimeError(f"{op}: expected a float or double input tensor, but got {dt.legacy_name(input.dtype)}")
    dims = tuple(dims)
    if not dims or len(set(dims)) != len(dims) or any(not 0 <= d < input.ndim for d in dims):
        raise RuntimeError(f"{op}: dims must be distinct and in [0, {input.ndim}), got {list(dims)}")
    if normalization not in (0, 1, 2):
        raise RuntimeError(f"{op}: normalization must be 0, 1 or 2, got {normalization!r}")
    return dims


def _c2c_meta(input, dims, normalization, forward):
    _check("_fft_c2c", input, dims, normalization, True)
    return TensorSpec(input._shape, input.dtype, input.device)


fft_c2c = define(
    "fft_c2c", meta=_c2c_meta, primitive=True,
    doc="the DFT (forward) or its inverse of a complex tensor over dims (distinct), scaled by normalization "
        "(0 none, 1 1/sqrt(n), 2 1/n); PyTorch's _fft_c2c")


def _r2c_meta(input, dims, normalization, onesided):
    dims = _check("_fft_r2c", input, dims, normalization, False)
    shape = list(input._shape)
    if onesided:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return TensorSpec(tuple(shape), input.dtype.to_complex(), input.device)


fft_r2c = define(
    "fft_r2c", meta=_r2c_meta, primitive=True,
    doc="the forward DFT of a real tensor over dims, scaled by normalization; onesided keeps the n // 2 + 1 "
        "non-redundant values of the last dim; PyTorch's _fft_r2c")


def _c2r_meta(input, dims, normalization, last_dim_size):
    dims = _check("_fft_c2r", input, dims, normalization, True)
    if last_dim_size < 1:
        raise RuntimeError(f"Invalid number of data points ({last_dim_size}) specified")
    shape = list(input._shape)
    shape[dims[-1]] = last_dim_size
    return TensorSpec(tuple(shape), input.dtype.to_real(), input.device)


fft_c2r = define(
    "fft_c2r", meta=_c2r_meta, primitive=True,
    doc="the inverse DFT of a Hermitian-symmetric signal given by its onesided half (last of dims) to a real tensor "
        "whose last dim has last_dim_size values, scaled by normalization; PyTorch's _fft_c2r")
