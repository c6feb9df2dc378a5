"""Parametrisations for :func:`core.nn.utils.parametrize.register_parametrization`
(``torch.nn.utils.parametrizations``)."""

from __future__ import annotations

from ... import ops
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm"]


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
