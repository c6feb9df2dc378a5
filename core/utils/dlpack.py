"""DLPack: zero-copy exchange of tensors with NumPy, CuPy and any other library that speaks it (``torch.utils.dlpack``).

A tensor is exported through its backend's array view (a NumPy array on the CPU, a CuPy array on cuda), which
carries shape, strides and offset; an imported array becomes a tensor over the same memory. Backends whose
buffers have no DLPack form (opencl) refuse with an error that says so.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..device import device as _device
from ..tensor import Tensor

__all__ = ["from_dlpack", "to_dlpack"]

# DLPack's DLDeviceType codes of the device types core knows
_DL_DEVICE = {"cpu": 1, "cuda": 2, "opencl": 4, "webgpu": 15}
_DEVICE_TYPE = {1: "cpu", 2: "cuda", 3: "cpu", 4: "opencl"}  # 3 = kDLCUDAHost: pinned host memory


def _exportable(tensor: Tensor):
    """The backend array over ``tensor``'s memory that implements ``__dlpack__``; RuntimeError when none does."""
    if tensor.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    backend = tensor._storage.backend
    if tensor.device.type == "cpu":
        return backend.to_host(tensor)  # the CPU backends' to_host is a view, not a copy
    array = backend.array(tensor) if hasattr(backend, "array") else None
    if not hasattr(array, "__dlpack__"):
        raise RuntimeError(f"to_dlpack(): tensors on {tensor.device.type} cannot be exported with DLPack (backend "
                           f"{backend.name}'s buffers have no DLPack form); copy the tensor to the CPU first")
    return array


def dlpack_device(tensor: Tensor) -> tuple:
    """``(DLDeviceType, device index)`` of a tensor (``torch.Tensor.__dlpack_device__``)."""
    code = _DL_DEVICE.get(tensor.device.type)
    if code is None:
        raise RuntimeError(f"__dlpack_device__(): device type {tensor.device.type} has no DLPack device code")
    return code, tensor.device.index or 0


def export(tensor: Tensor, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule sharing ``tensor``'s memory (``torch.Tensor.__dlpack__``); ``copy=True`` exports a copy."""
    array = _exportable(tensor)
    kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device), ("copy", copy))
              if v is not None}
    if stream is not None:
        kwargs["stream"] = stream
    try:
        return array.__dlpack__(**kwargs)
    except (BufferError, TypeError) as error:  # e.g. bfloat16: NumPy's DLPack knows no ml_dtypes types
        raise RuntimeError(f"to_dlpack(): cannot export a {tensor.dtype.name} tensor on {tensor.device}: "
                           f"{error}") from error


def to_dlpack(tensor: Tensor):
    """A DLPack capsule sharing ``tensor``'s memory (``torch.utils.dlpack.to_dlpack``)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    return export(tensor)


class _Capsule:
    """A bare DLPack capsule dressed as an exporter, so that ``xp.from_dlpack`` takes it."""

    def __init__(self, capsule):
        self.capsule = capsule
        self.device = _capsule_device(capsule)
        self.legacy = _capsule_name(capsule) == b"dltensor"

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return self.device


def _capsule_name(capsule) -> bytes:
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(capsule)


def _capsule_device(capsule) -> tuple:
    """The ``DLDevice`` written in a capsule's ``DLTensor`` (after the versioned header in a versioned capsule)."""
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    name = _capsule_name(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise RuntimeError("from_dlpack(): the capsule is not an unconsumed DLPack tensor (it was used already or "
                           f"is named {name!r})")
    # DLManagedTensor starts with its DLTensor; DLManagedTensorVersioned has version, manager_ctx, deleter, flags
    header = 0 if name == b"dltensor" else 8 + 3 * ctypes.sizeof(ctypes.c_void_p)
    address = get_pointer(capsule, name) + header + ctypes.sizeof(ctypes.c_void_p)  # skip DLTensor.data
    code, index = (ctypes.c_int32 * 2).from_address(address)
    return code, index


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing the memory of ``ext_tensor``: any object with ``__dlpack__`` or a DLPack capsule
    (``torch.from_dlpack``)."""
    from ..ops.creation import runtime_for, share_array

    if isinstance(ext_tensor, Tensor):
        return ext_tensor.detach()
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ != "PyCapsule":
            raise TypeError(f"from_dlpack(): expected an object with __dlpack__ or a DLPack capsule, got "
                            f"{type(ext_tensor).__name__}")
        ext_tensor = _Capsule(ext_tensor)
    code, index = ext_tensor.__dlpack_device__()
    device_type = _DEVICE_TYPE.get(int(code))
    xp = np if device_type == "cpu" else getattr(runtime_for(device_type), "xp", None) if device_type else None
    if xp is None or not hasattr(xp, "from_dlpack"):
        raise RuntimeError(f"from_dlpack(): cannot import from DLPack device type {int(code)}"
                           + (f" ({device_type}): its backend's arrays do not support DLPack" if device_type else ""))
    dev = _device(device_type) if device_type == "cpu" else _device(device_type, int(index))
    array = xp.from_dlpack(ext_tensor)
    if isinstance(array, np.ndarray) and not array.flags.writeable and isinstance(ext_tensor, _Capsule) \
            and ext_tensor.legacy:
        array = _writeable(array)
    return share_array("from_dlpack", array, dev)


def _writeable(array: np.ndarray) -> np.ndarray:
    """A writeable view of the memory of ``array`` (which it keeps alive).

    NumPy marks what it imports from an unversioned capsule read-only, since that format cannot say; PyTorch's
    ``to_dlpack`` makes such capsules for memory that is writeable, and ``torch.from_dlpack`` writes to it."""
    if array.size == 0:
        return np.empty(array.shape, array.dtype)
    extent = 1 + sum((n - 1) * s for n, s in zip(array.shape, array.strides)) // array.itemsize
    buffer = (ctypes.c_char * (extent * array.itemsize)).from_address(array.__array_interface__["data"][0])
    buffer.imported = array  # the views below reach the buffer through their bases: it keeps the memory alive
    flat = np.frombuffer(buffer, array.dtype)
    return np.lib.stride_tricks.as_strided(flat, array.shape, array.strides, writeable=True)
