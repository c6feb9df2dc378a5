"""Convolution weights in a chosen memory format, and modules built without initialising their parameters
(``torch.nn.utils.memory_format``, ``torch.nn.utils.init``)."""

from __future__ import annotations

import inspect

from ...autograd import no_grad

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format", "skip_init"]


def _convert_weights(module, memory_format, kinds: tuple):
    if isinstance(module, kinds):
        with no_grad():
            module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert_weights(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """``module`` with the weight of every Conv2d / ConvTranspose2d in it (itself included) stored in
    ``memory_format``, e.g. ``core.channels_last`` (``torch.nn.utils.convert_conv2d_weight_memory_format``)."""
    from ..modules.conv import Conv2d, ConvTranspose2d
    return _convert_weights(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """``module`` with the weight of every Conv3d / ConvTranspose3d in it (itself included) stored in
    ``memory_format``, e.g. ``core.channels_last_3d`` (``torch.nn.utils.convert_conv3d_weight_memory_format``)."""
    from ..modules.conv import Conv3d, ConvTranspose3d
    return _convert_weights(module, memory_format, (Conv3d, ConvTranspose3d))


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with its parameters and buffers left uninitialised: built on the meta device,
    then given empty storage on ``device`` (default cpu) (``torch.nn.utils.skip_init``)."""
    if not inspect.isclass(module_cls):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
