"""The forward-pre-hook reparametrisations of PyTorch's ``torch.nn.utils.weight_norm`` and ``spectral_norm``: the
parameter is replaced by its parts, and the hook recomputes it from them before every forward."""

from __future__ import annotations

from ... import ops
from ...autograd import no_grad
from .. import functional as F
from ..parameter import Parameter

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


def _find_hook(module, kind: type, name: str):
    """The id and hook of ``kind`` that reparametrises ``module.name``, or (None, None)."""
    for key, (hook, _) in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return key, hook
    return None, None


class WeightNorm:
    """Recomputes ``name`` = g * v / ||v|| (norm over every dim but ``dim``) from ``name_g`` and ``name_v``."""

    def __init__(self, name: str, dim: int):
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        v = getattr(module, self.name + "_v")
        return v * (getattr(module, self.name + "_g") / ops.norm_except_dim(v, 2, self.dim))

    @staticmethod
    def apply(module, name: str, dim: int) -> "WeightNorm":
        if _find_hook(module, WeightNorm, name)[1] is not None:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(ops.norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        weight = self.compute_weight(module).detach()
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Reparametrise ``module.name`` as magnitude ``name_g`` times direction ``name_v`` / ||``name_v``||
    (``torch.nn.utils.weight_norm``); ``dim=None`` normalises over the whole tensor. Returns ``module``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undo :func:`weight_norm`: ``name`` becomes a plain Parameter again (``torch.nn.utils.remove_weight_norm``)."""
    key, hook = _find_hook(module, WeightNorm, name)
    if hook is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    hook.remove(module)
    del module._forward_pre_hooks[key]
    return module


class SpectralNorm:
    """Recomputes ``name`` = ``name_orig`` / sigma, sigma the largest singular value estimated by power iteration on
    the buffers ``name_u`` and ``name_v`` (one step per training forward)."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def reshape_weight_to_matrix(self, weight):
        """``weight`` as a matrix with ``dim`` as its rows."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(ops.mv(matrix.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ops.mv(matrix, v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = ops.dot(u, ops.mv(matrix, v))
        return weight / sigma

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        if _find_hook(module, SpectralNorm, name)[1] is not None:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            rows, cols = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(ops.randn(rows, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            v = F.normalize(ops.randn(cols, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None):
    """Divide ``module.name`` by its spectral norm, estimated by power iteration before each forward
    (``torch.nn.utils.spectral_norm``); ``dim`` defaults to 1 for ConvTranspose layers, else 0. Returns
    ``module``."""
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undo :func:`spectral_norm`: ``name`` becomes a plain Parameter holding the normalised weight
    (``torch.nn.utils.remove_spectral_norm``)."""
    key, hook = _find_hook(module, SpectralNorm, name)
    if hook is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    hook.remove(module)
    del module._forward_pre_hooks[key]
    return module
