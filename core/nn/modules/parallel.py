"""``DataParallel``: PyTorch's single-machine data parallelism, which without several CUDA devices (always, here)
runs the wrapped module directly (``torch.nn.DataParallel``)."""

from __future__ import annotations

from .module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Runs ``module`` on its inputs; the batch would be scattered along ``dim`` over ``device_ids`` on several CUDA
    devices, of which core has none, so, as PyTorch does without CUDA, it calls the module unchanged
    (``torch.nn.DataParallel``). Its state_dict keys are the module's under ``module.``."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids: list = []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
