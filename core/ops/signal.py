"""Signal processing in the torch namespace: the window functions and the short-time Fourier transform and its
inverse (``torch.hann_window``, ..., ``torch.stft``, ``torch.istft``).

Windows are arange and cosines (the Bessel function for Kaiser's) in the requested dtype on the requested device.
stft frames the signal with ``unfold`` and runs the spectral primitives over the frames; istft inverts them and
overlap-adds the frames with ceil(n_fft / hop) shifted adds; both are composites, so they run on every device and
differentiate.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes as dt
from ..tensor import Tensor
from ._util import exporter
from .creation import _check_dtype, _finish, ones, resolve_device, tensor, zeros
from .elementwise import abs, cos, i0, sqrt
from .indexing import index_select
from .ranges import arange
from .shape import cat, stack
from .spectral import fft_c2c, fft_c2r, fft_r2c

__all__: list = []
METHODS: dict = {}


_export = exporter(__all__, METHODS)


def _function(fn):
    """Export a torch-level name that torch.Tensor has no method for."""
    return _export(fn, method=False)


# -- windows --------------------------------------------------------------------------------------------

def _window(op: str, window_length, periodic, dtype, device, requires_grad, formula):
    """``formula(n, N)`` over n = 0..N-1 with N = window_length (+ 1 when periodic, the last value dropped), after
    PyTorch's checks; lengths 0 and 1 give an empty window and [1]."""
    if not isinstance(window_length, int) or isinstance(window_length, bool):
        raise TypeError(f"{op}(): argument 'window_length' must be int, not {type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{op} requires non-negative window length, got window_length={window_length}")
    d = _check_dtype(op, dtype)
    if not d.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dt.legacy_name(d)}")
    device = resolve_device(device)
    if window_length <= 1:
        return _finish(ones(window_length, dtype=d, device=device), requires_grad)
    length = window_length + 1 if periodic else window_length
    result = formula(arange(length, dtype=d, device=device), length)
    return _finish(result.narrow(0, 0, window_length).contiguous(), requires_grad)


def _cosine(alpha, beta):
    return lambda n, N: alpha - beta * cos(n * (2 * math.pi / (N - 1)))


@_function
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """alpha - beta cos(2 pi n / (N - 1)), periodic by default (``torch.hamming_window``)."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, _cosine(alpha, beta))


@_function
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1)), the raised cosine, periodic by default (``torch.hann_window``)."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, _cosine(0.5, 0.5))


@_function
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1)), periodic by default
    (``torch.blackman_window``)."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 0.42 - 0.5 * cos(n * (2 * math.pi / (N - 1))) + 0.08 * cos(n * (4 * math.pi / (N - 1))))


@_function
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """1 - |2 n / (N - 1) - 1|, the triangle, periodic by default (``torch.bartlett_window``)."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 1 - abs(n * (2 / (N - 1)) - 1))


@_function
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta), periodic by default (``torch.kaiser_window``)."""
    def kaiser(n, N):
        ratio = n * (2 / (N - 1)) - 1
        return i0(sqrt((1 - ratio * ratio).clamp_min(0)) * beta) / float(np.i0(beta))

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, kaiser)


# -- the short-time Fourier transform --------------------------------------------------------------------

_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad_signal(x, pad: int, mode: str):
    """x padded by ``pad`` values at both ends of its last dim, as ``F.pad`` in ``mode``."""
    n = x._shape[-1]
    if mode == "constant":
        edge = zeros(x._shape[:-1] + (pad,), dtype=x.dtype, device=x.device)
        return cat([edge, x, edge], -1)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"stft: unsupported pad_mode '{mode}': expected 'constant', 'reflect', "
                                  f"'replicate' or 'circular'")
    if mode == "reflect" and pad >= n:
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                           f"got: padding ({pad}, {pad}) at dimension {x.ndim - 1} of input {list(x.shape)}")
    source = np.pad(np.arange(n), pad, mode=_PAD_MODES[mode])
    return index_select(x, -1, tensor(source, dtype=dt.int64, device=x.device))


def _full_window(op: str, window, win_length: int, n_fft: int, like):
    """The window (ones when None) zero-padded at both ends to n_fft, after PyTorch's checks."""
    if window is None:
        window = ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    if not isinstance(window, Tensor) or window.ndim != 1 or window._shape[0] != win_length:
        raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape) if isinstance(window, Tensor) else window}")
    left = (n_fft - win_length) // 2
    if win_length != n_fft:
        window = cat([zeros(left, dtype=window.dtype, device=window.device), window,
                      zeros(n_fft - win_length - left, dtype=window.dtype, device=window.device)])
    return window


def _lengths(op: str, n_fft, hop_length, win_length):
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if hop_length <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    return hop_length, win_length


@_export
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """The short-time Fourier transform: (B?, n_freq, n_frames) spectra of the windowed frames every hop_length
    values (``torch.stft``; the signal padded by n_fft // 2 at both ends when ``center``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"stft(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    complex_input = input.is_complex() or (isinstance(window, Tensor) and window.is_complex())
    if return_complex is None:
        if not complex_input:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.", UserWarning,
                      stacklevel=2)
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied, which is known to cause "
                      "spectral leakage. Other windows such as core.hann_window or core.hamming_window are recommended "
                      "to reduce spectral leakage. To suppress this warning and use a rectangular window, explicitly "
                      "set `window=core.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D tensor")
    if not (input.dtype.is_floating_point or input.is_complex()):
        raise RuntimeError(f"stft: expected a tensor of floating point or complex values, got "
                           f"{dt.legacy_name(input.dtype)}")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    if center:
        x = _pad_signal(x, n_fft // 2, pad_mode)
    length = x._shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    hop_length, win_length = _lengths("stft", n_fft, hop_length, win_length)
    onesided = not complex_input if onesided is None else onesided
    if onesided and complex_input:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    frames = x.unfold(-1, n_fft, hop_length) * _full_window("stft", window, win_length, n_fft, x)  # (B, T, n_fft)
    normalization = 1 if normalized else 0
    if frames.is_complex():
        spectra = fft_c2c(frames, (2,), normalization, True)
    else:
        spectra = fft_r2c(frames, (2,), normalization, bool(onesided))
    result = spectra.transpose(1, 2)  # (B, n_freq, n_frames)
    if input.ndim == 1:
        result = result.squeeze(0)
    return result if return_complex else stack([result.real, result.imag], -1)


def _overlap_add(frames, hop: int):
    """Sum frames (..., T, n) placed every ``hop`` values: (..., n + hop (T - 1)), with ceil(n / hop) shifted adds
    of hop-wide blocks (each frame split into r blocks; block j of frame t lands in block t + j of the output)."""
    T, n = frames._shape[-2:]
    r = -(-n // hop)
    lead = frames._shape[:-2]
    if r * hop > n:
        frames = cat([frames, zeros(lead + (T, r * hop - n), dtype=frames.dtype, device=frames.device)], -1)
    blocks = frames.reshape(lead + (T, r, hop))
    total = None
    for j in range(r):
        parts = [blocks[..., j, :]]
        if j:
            parts.insert(0, zeros(lead + (j, hop), dtype=frames.dtype, device=frames.device))
        if r - 1 - j:
            parts.append(zeros(lead + (r - 1 - j, hop), dtype=frames.dtype, device=frames.device))
        shifted = cat(parts, -2) if len(parts) > 1 else parts[0]
        total = shifted if total is None else total + shifted
    return total.reshape(lead + ((T + r - 1) * hop,)).narrow(-1, 0, n + hop * (T - 1))


@_export
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of stft by weighted overlap-add: the signal whose stft is ``input`` (B?, n_freq, n_frames),
    trimmed to ``length`` or zero-padded to it (``torch.istft``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex values, but got "
                           f"{input.ndim}D tensor")
    hop_length, win_length = _lengths("istft", n_fft, hop_length, win_length)
    spectra = input.unsqueeze(0) if input.ndim == 2 else input
    n_freq, n_frames = spectra._shape[-2:]
    onesided = n_freq != n_fft if onesided is None else onesided
    if onesided:
        if n_freq != n_fft // 2 + 1:
            raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                               f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}")
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
    elif n_freq != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {n_freq}")
    window = _full_window("istft", window, win_length, n_fft, spectra.real)
    if not return_complex and window.is_complex():
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    normalization = 1 if normalized else 2
    frames = spectra.transpose(1, 2)  # (B, T, n_freq)
    if return_complex:
        frames = fft_c2c(frames, (2,), normalization, False)
    else:
        frames = fft_c2r(frames.narrow(-1, 0, n_fft // 2 + 1), (2,), normalization, n_fft)
    y = _overlap_add(frames * window, hop_length)
    envelope = _overlap_add((window * window).expand((n_frames, n_fft)), hop_length)  # PyTorch's window.pow(2)
    expected = n_fft + hop_length * (n_frames - 1)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (expected - n_fft // 2 if center else expected)
    y, envelope = y[..., start:end], envelope[start:end]
    if envelope.numel() and float(envelope.abs().min()) < 1e-11:
        raise RuntimeError(f"istft(...): window overlap add min: {float(envelope.abs().min())}")
    y = y / envelope
    if end > expected:
        y = cat([y, zeros(y._shape[:-1] + (end - expected,), dtype=y.dtype, device=y.device)], -1)
    return y.squeeze(0) if input.ndim == 2 else y
