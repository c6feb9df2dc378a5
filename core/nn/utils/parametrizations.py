"""Parametrisations for :func:`core.nn.utils.parametrize.register_parametrization`
(``torch.nn.utils.parametrizations``)."""

from __future__ import annotations

from ... import ops
from ...autograd import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


class _WeightNorm(Module):
    """weight = g * v / ||v||, the norm over every dim but ``dim`` (all dims when ``dim`` is None)."""

    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / ops.norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return ops.norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Reparametrise ``module.name`` as magnitude ``original0`` times direction ``original1`` / ||``original1``||
    under ``module.parametrizations.name`` (``torch.nn.utils.parametrizations.weight_norm``). Returns ``module``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma its largest singular value estimated by power iteration on the buffers ``_u`` and
    ``_v`` (one step per training forward; 15 at creation); a 1-D weight is just normalised."""

    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = self._reshape_weight_to_matrix(weight)
            rows, cols = matrix.shape
            self.register_buffer("_u", F.normalize(ops.randn(rows, dtype=weight.dtype, device=weight.device), dim=0,
                                                   eps=eps))
            self.register_buffer("_v", F.normalize(ops.randn(cols, dtype=weight.dtype, device=weight.device), dim=0,
                                                   eps=eps))
            self._power_method(matrix, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, matrix, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ops.mv(matrix, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ops.mv(matrix.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(matrix, self.n_power_iterations)
        sigma = ops.dot(self._u.clone(), ops.mv(matrix, self._v.clone()))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None):
    """Divide ``module.name`` by its spectral norm, estimated by power iteration, as a parametrisation
    (``torch.nn.utils.parametrizations.spectral_norm``); ``dim`` defaults to 1 for ConvTranspose layers, else 0.
    Returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
