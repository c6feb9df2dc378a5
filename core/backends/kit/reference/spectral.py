"""Reference kernels of the spectral family over ``ctx.xp.fft`` (NumPy's pocketfft, CuPy's cuFFT).

PyTorch's normalization modes map onto the array module's ``norm`` words: the forward transform scaled by nothing,
1/sqrt(n) or 1/n is ``"backward"``, ``"ortho"`` or ``"forward"``; the inverse transform the other way round.
"""

from __future__ import annotations

from . import operands

_FORWARD_NORM = ("backward", "ortho", "forward")
_INVERSE_NORM = ("forward", "ortho", "backward")


def kernels(ctx) -> dict:
    """fft_c2c, fft_r2c and fft_c2r over ``ctx``."""
    xp, wrap = ctx.xp, ctx.wrap
    operand = operands(ctx)

    def fft_c2c(spec, input, dims, normalization, forward):
        a = operand(input, input.dtype.numpy)
        if a.size == 0:
            return wrap(xp.zeros(spec.shape, dtype=spec.dtype.numpy), spec)
        transform = xp.fft.fftn if forward else xp.fft.ifftn
        norm = (_FORWARD_NORM if forward else _INVERSE_NORM)[normalization]
        return wrap(transform(a, axes=tuple(dims), norm=norm).astype(spec.dtype.numpy, copy=False), spec)

    def fft_r2c(spec, input, dims, normalization, onesided):
        a = operand(input, input.dtype.numpy)
        if a.size == 0:
            return wrap(xp.zeros(spec.shape, dtype=spec.dtype.numpy), spec)
        transform = xp.fft.rfftn if onesided else xp.fft.fftn
        result = transform(a, axes=tuple(dims), norm=_FORWARD_NORM[normalization])
        return wrap(result.astype(spec.dtype.numpy, copy=False), spec)

    def fft_c2r(spec, input, dims, normalization, last_dim_size):
        a = operand(input, input.dtype.numpy)
        if a.size == 0 or spec.shape and 0 in spec.shape:
            return wrap(xp.zeros(spec.shape, dtype=spec.dtype.numpy), spec)
        sizes = [spec.shape[d] for d in dims]
        result = xp.fft.irfftn(a, s=sizes, axes=tuple(dims), norm=_INVERSE_NORM[normalization])
        return wrap(result.astype(spec.dtype.numpy, copy=False), spec)

    return {"fft_c2c": fft_c2c, "fft_r2c": fft_r2c, "fft_c2r": fft_c2r}
