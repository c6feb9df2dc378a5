"""Flatten parameters into one vector and back (``torch.nn.utils.convert_parameters``)."""

from __future__ import annotations

from ... import ops
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param: Tensor, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return param.device


def parameters_to_vector(parameters) -> Tensor:
    """One 1-D tensor holding every parameter, flattened, in order."""
    device = None
    flat = []
    for param in parameters:
        device = _check_same_device(param, device)
        flat.append(param.reshape(-1))
    return ops.cat(flat)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Make each parameter's data the next slice of ``vec`` (views of ``vec``, as in PyTorch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected core.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        count = param.numel()
        param.data = vec[pointer:pointer + count].view_as(param).data
        pointer += count
