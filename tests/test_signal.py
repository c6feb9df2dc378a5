"""Window functions against SciPy, stft against a NumPy framing-and-FFT reference, istft(stft(x)) round trips, on
every device; PyTorch's errors; gradients of stft and istft in float64."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

import core
from core.autograd import gradcheck
from core.testing import assert_close

pytestmark = pytest.mark.filterwarnings("ignore:A window was not provided")  # test_stft_warns_without_window


def _rng():
    return np.random.default_rng(0)


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


# -- windows ------------------------------------------------------------------------------------------------

WINDOWS = [("hann_window", "hann", {}), ("hamming_window", "hamming", {}), ("blackman_window", "blackman", {}),
           ("bartlett_window", "bartlett", {}), ("kaiser_window", ("kaiser", 12.0), {}),
           ("kaiser_window", ("kaiser", 4.5), {"beta": 4.5})]


@pytest.mark.parametrize("name, scipy_name, kwargs", WINDOWS)
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("length", [2, 7, 16])
def test_windows_match_scipy(device, name, scipy_name, kwargs, periodic, length):
    window = getattr(core, name)(length, periodic, dtype=core.float64, device=device, **kwargs)
    assert window.device.type == device and window.dtype is core.float64
    assert_close(_np(window), scipy.signal.get_window(scipy_name, length, fftbins=periodic), rtol=1e-10, atol=1e-12)


def test_hamming_alpha_beta_and_defaults(device):
    n = np.arange(9)
    window = core.hamming_window(8, alpha=0.6, beta=0.3, device=device)
    assert window.dtype is core.float32
    assert_close(_np(window), (0.6 - 0.3 * np.cos(2 * np.pi * n / 8))[:8].astype("float32"))
    assert core.hann_window(0, device=device).shape == (0,)
    assert _np(core.blackman_window(1, device=device)).tolist() == [1.0]
    assert core.kaiser_window(5, requires_grad=True).requires_grad


def test_window_errors():
    with pytest.raises(RuntimeError, match="hann_window requires non-negative window length"):
        core.hann_window(-1)
    with pytest.raises(RuntimeError, match="kaiser_window expects floating point dtypes"):
        core.kaiser_window(4, dtype=core.int64)


# -- stft ---------------------------------------------------------------------------------------------------

_NUMPY_PAD = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}


def _stft_reference(x, n_fft, hop, window, center=True, pad_mode="reflect", normalized=False, onesided=True):
    """stft as PyTorch defines it, one frame at a time with NumPy: (..., n_freq, n_frames)."""
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode=_NUMPY_PAD[pad_mode])
    left = (n_fft - len(window)) // 2
    window = np.pad(window, (left, n_fft - len(window) - left))
    frames = np.stack([x[..., t * hop:t * hop + n_fft] * window for t in range(1 + (x.shape[-1] - n_fft) // hop)], -2)
    spectra = np.fft.rfft(frames) if onesided else np.fft.fft(frames)
    spectra = spectra / np.sqrt(n_fft) if normalized else spectra
    return np.swapaxes(spectra, -1, -2)


@pytest.mark.parametrize("n_fft, hop, win_length", [(16, None, None), (16, 5, 12), (15, 3, 15), (8, 8, 8)])
@pytest.mark.parametrize("pad_mode", ["reflect", "constant", "replicate", "circular"])
def test_stft_matches_numpy(device, n_fft, hop, win_length, pad_mode):
    x = _rng().standard_normal((2, 60))
    window = scipy.signal.get_window("hann", win_length or n_fft)
    result = core.stft(_t(x, device), n_fft, hop, win_length, _t(window, device), pad_mode=pad_mode,
                       return_complex=True)
    assert result.dtype is core.complex128
    assert_close(_np(result), _stft_reference(x, n_fft, hop or n_fft // 4, window, pad_mode=pad_mode))


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("onesided", [True, False])
def test_stft_options(device, center, normalized, onesided):
    x = _rng().standard_normal(40).astype("float32")
    result = _t(x, device).stft(10, 4, center=center, normalized=normalized, onesided=onesided, return_complex=True)
    expected = _stft_reference(x, 10, 4, np.ones(10), center, normalized=normalized, onesided=onesided)
    assert result.dtype is core.complex64
    assert_close(_np(result), expected.astype("complex64"), rtol=1e-4, atol=1e-4)


def test_stft_finds_a_tone(device):
    n = np.arange(256)
    x = np.cos(2 * np.pi * 8 * n / 64)  # 8 cycles per 64 samples: bin 8 of a 64-point transform
    spectra = core.stft(_t(x, device), 64, window=core.hann_window(64, dtype=core.float64, device=device),
                        return_complex=True)
    assert (_np(spectra.abs()).argmax(0)[1:-1] == 8).all()  # the end frames see the reflected padding too


def test_stft_real_view_and_complex_input(device):
    x = _rng().standard_normal(32)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        pairs = core.stft(_t(x, device), 8, return_complex=False)
    expected = _stft_reference(x, 8, 2, np.ones(8))
    assert_close(_np(pairs), np.stack([expected.real, expected.imag], -1))
    z = x + 1j * _rng().standard_normal(32)
    assert_close(_np(core.stft(_t(z, device), 8)), _stft_reference(z, 8, 2, np.ones(8), onesided=False))


def test_stft_warns_without_window():
    x = core.tensor(_rng().standard_normal(32))
    with pytest.warns(UserWarning, match="A window was not provided. A rectangular window will be applied"):
        core.stft(x, 8, return_complex=True)


def test_stft_errors():
    x = core.tensor(_rng().standard_normal(32))
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        core.stft(x, 8)
    with pytest.raises(RuntimeError, match="expected a 1D or 2D tensor"):
        core.stft(x.reshape(2, 2, 8), 4, return_complex=True)
    with pytest.raises(RuntimeError, match="expected 0 < n_fft"):
        core.stft(x, 64, center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="expected hop_length > 0"):
        core.stft(x, 8, 0, return_complex=True)
    with pytest.raises(RuntimeError, match="win_length=9"):
        core.stft(x, 8, win_length=9, return_complex=True)
    with pytest.raises(RuntimeError, match="1D window tensor of size equal to win_length=8"):
        core.stft(x, 8, window=core.ones(7, dtype=core.float64), return_complex=True)
    with pytest.raises(RuntimeError, match="onesided"):
        core.stft(x.to(core.complex128), 8, onesided=True, return_complex=True)


# -- istft --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_fft, hop, win_length, center", [(16, 4, 16, True), (16, 5, 12, True), (15, 3, 15, True),
                                                       (8, 4, 8, True), (16, 4, 16, False), (15, 3, 15, False)])
def test_istft_inverts_stft(device, n_fft, hop, win_length, center):
    x = _rng().standard_normal((2, 64))
    window = _t(scipy.signal.get_window("hann", win_length, fftbins=False) + 0.1, device)
    spectra = core.stft(_t(x, device), n_fft, hop, win_length, window, center=center, return_complex=True)
    covered = n_fft + hop * (spectra.shape[-1] - 1) - (2 * (n_fft // 2) if center else 0)
    y = core.istft(spectra, n_fft, hop, win_length, window, center=center)
    assert y.shape == (2, covered)  # the frames' reach, without the centring pad
    assert_close(_np(y), x[:, :covered])
    if win_length == n_fft:  # (a narrower window's zero edges leave the frames' last values unrecoverable)
        signal = np.pad(x, ((0, 0), (n_fft // 2, n_fft // 2)), mode="reflect") if center else x
        start, reach = (n_fft // 2 if center else 0), n_fft + hop * (spectra.shape[-1] - 1)
        length = reach - start + 6
        padded = core.istft(spectra, n_fft, hop, win_length, window, center=center, length=length)
        assert padded.shape == (2, length)
        assert_close(_np(padded), np.pad(signal[:, start:reach], ((0, 0), (0, 6))))  # zeros past the frames


def test_istft_options(device):
    x = _rng().standard_normal(50)
    for normalized in (True, False):
        spectra = core.stft(_t(x, device), 12, 3, normalized=normalized, onesided=False, return_complex=True)
        assert_close(_np(core.istft(spectra, 12, 3, normalized=normalized, length=50)), x)
        assert_close(_np(spectra.istft(12, 3, normalized=normalized, length=50, return_complex=True)),
                     x.astype("complex128"))


def test_istft_errors():
    spectra = core.stft(core.tensor(_rng().standard_normal(32)), 8, return_complex=True)
    with pytest.raises(RuntimeError, match="complex-valued input"):
        core.istft(spectra.real, 8)
    with pytest.raises(RuntimeError, match="match n_fft / 2 \\+ 1"):
        core.istft(spectra, 10, onesided=True)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        core.istft(spectra, 8, 8, window=core.hann_window(8, periodic=False, dtype=core.float64), center=False)


def test_stft_istft_gradients():
    x = _t(_rng().standard_normal(20), "cpu", True)
    window = _t(np.hanning(8) + 0.1, "cpu", True)
    assert gradcheck(lambda x, w: core.stft(x, 8, 3, window=w, return_complex=True).abs(), (x, window))
    spectra = core.stft(x.detach(), 8, 2, return_complex=True).detach()
    real = _t(_np(spectra.real), "cpu", True)
    imag = _t(_np(spectra.imag), "cpu", True)

    def invert(re, im, w):
        return core.istft(re.to(core.complex128) + im.to(core.complex128) * 1j, 8, 2, window=w)

    assert gradcheck(invert, (real, imag, window))
