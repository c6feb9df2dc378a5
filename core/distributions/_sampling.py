"""Draws shared by the families: standard normal/uniform noise of a shape, and the standard gamma with its
implicit reparameterization gradient."""

from __future__ import annotations

import math

import core


def standard_normal(shape, like):
    """Standard normal draws of ``shape`` in ``like``'s dtype and device (core's default generator)."""
    return core.empty(tuple(shape), dtype=like.dtype, device=like.device).normal_()


def standard_uniform(shape, like, low: float = 0.0):
    """Uniform draws from ``[low, 1)`` of ``shape`` in ``like``'s dtype and device."""
    return core.empty(tuple(shape), dtype=like.dtype, device=like.device).uniform_(low, 1.0)


def _marsaglia_tsang(alpha):
    """Standard gamma draws of float64 shape ``alpha`` (Marsaglia and Tsang's rejection method; a shape below 1
    is boosted by one and scaled by ``u ** (1 / alpha)``)."""
    boost = alpha < 1
    a = core.where(boost, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / core.sqrt(9.0 * d)
    result = core.zeros_like(a)
    pending = core.ones_like(a, dtype=core.bool)
    while bool(pending.any()):
        x = standard_normal(a.shape, a)
        u = standard_uniform(a.shape, a, low=1e-300)
        v = (1 + c * x) ** 3
        ok = (v > 0) & (core.log(u) < 0.5 * x * x + d - d * v + d * core.log(core.where(v > 0, v, 1.0)))
        result = core.where(pending & ok, d * v, result)
        pending = pending & ~ok
    u = standard_uniform(a.shape, a, low=1e-300)
    return core.where(boost, result * u ** (1.0 / alpha), result)


def _gamma_density(alpha, x):
    return core.exp(core.xlogy(alpha - 1, x) - x - core.lgamma(alpha))


class _StandardGamma(core.autograd.Function):
    """A standard gamma draw of shape ``alpha`` whose gradient is the implicit reparameterization
    ``dx/dalpha = -(dP(alpha, x)/dalpha) / p(x; alpha)``, ``P`` the regularized lower incomplete gamma function
    (its ``alpha``-derivative taken by a float64 central difference)."""

    @staticmethod
    def forward(ctx, alpha):
        a64 = alpha.detach().to(core.float64)
        x = _marsaglia_tsang(a64).clamp(min=core.finfo(alpha.dtype).tiny)
        ctx.save_for_backward(a64, x)
        return x.to(alpha.dtype)

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        h = 1e-5 * alpha.clamp(min=1.0)
        dcdf = (core.special.gammainc(alpha + h, x) - core.special.gammainc(alpha - h, x)) / (2 * h)
        dx = -dcdf / _gamma_density(alpha, x).clamp(min=1e-300)
        return grad * dx.to(grad.dtype)


def standard_gamma(alpha):
    """Standard gamma draws of shape ``alpha`` (``torch._standard_gamma``), differentiable in ``alpha``."""
    return _StandardGamma.apply(alpha)


EULER_GAMMA = 0.57721566490153286060
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
