"""The safetensors format for core tensors: ``safetensors.torch``'s four functions, built on ``safetensors``.

Writing goes through ``safetensors.numpy`` (bfloat16 arrays come from ml_dtypes, whose dtype name safetensors
knows); files are read with ``safetensors.safe_open``, bytes with ``safetensors.deserialize`` and our own table
of dtype codes, because ``safetensors.numpy.load`` lacks BF16.
"""

from __future__ import annotations

import os

import numpy as np
import safetensors
import safetensors.numpy

from .. import dtypes as dt
from ..ops.creation import from_numpy, resolve_device
from ..tensor import Tensor
from .atomic import atomic_write

__all__ = ["save", "save_file", "load", "load_file"]

# safetensors dtype codes of the dtypes core has (the format also has unsigned ints and float8, which core lacks)
_DTYPES = {"F16": dt.float16, "BF16": dt.bfloat16, "F32": dt.float32, "F64": dt.float64, "I8": dt.int8,
           "U8": dt.uint8, "I16": dt.int16, "I32": dt.int32, "I64": dt.int64, "BOOL": dt.bool, "C64": dt.complex64}
_SUPPORTED = {d.name for d in _DTYPES.values()}


def _to_arrays(op: str, tensors) -> dict:
    """Host, contiguous NumPy copies (or views) of the tensors, checked: str keys, supported dtypes."""
    if not isinstance(tensors, dict):
        raise TypeError(f"{op}(): tensors must be a dict of str -> Tensor, not {type(tensors).__name__}")
    arrays = {}
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"{op}(): keys must be str, found {type(name).__name__} {name!r}")
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): the value of {name!r} must be a Tensor, not {type(t).__name__}")
        if t.dtype.name not in _SUPPORTED:
            raise TypeError(f"{op}(): the safetensors format cannot store {name!r} of dtype {t.dtype.name} "
                            f"(supported: {', '.join(sorted(_SUPPORTED))})")
        if t.device.type == "meta":
            raise ValueError(f"{op}(): {name!r} is a meta tensor, which has no data to save")
        array = t.detach().cpu().numpy()
        # views are saved as their values (ascontiguousarray would turn 0-d arrays into 1-d ones)
        arrays[name] = array if array.flags.c_contiguous else array.copy(order="C")
    return arrays


def _check_metadata(op: str, metadata) -> None:
    if metadata is not None and not (isinstance(metadata, dict) and
                                     all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError(f"{op}(): metadata must be a dict of str -> str")


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors bytes of ``tensors`` (``safetensors.torch.save``)."""
    _check_metadata("save", metadata)
    return safetensors.numpy.save(_to_arrays("save", tensors), metadata=metadata)


def save_file(tensors: dict[str, Tensor], filename: str | os.PathLike, metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` to a safetensors file (``safetensors.torch.save_file``)."""
    _check_metadata("save_file", metadata)
    data = safetensors.numpy.save(_to_arrays("save_file", tensors), metadata=metadata)
    with atomic_write(filename) as handle:  # a crash mid-write keeps the previous file whole
        handle.write(data)


def _check_dtype(op: str, name: str, code: str) -> dt.dtype:
    d = _DTYPES.get(code)
    if d is None:
        raise TypeError(f"{op}(): {name!r} has safetensors dtype {code}, which core has no dtype for "
                        f"(supported: {', '.join(_DTYPES)})")
    return d


def _place(array: np.ndarray, dev) -> Tensor:
    t = from_numpy(array)
    return t if dev.type == "cpu" else t.to(dev)


def _read_error(op: str, exc: Exception) -> ValueError:
    return ValueError(f"{op}(): not a valid safetensors file: {exc}")


def _name(entry) -> str:
    return entry[0]  # by name, the order in which safe_open lists keys


def load(data: bytes, device="cpu") -> dict[str, Tensor]:
    """Tensors from safetensors bytes (``safetensors.torch.load``), on ``device``."""
    dev = resolve_device(device)
    try:
        entries = safetensors.deserialize(bytes(data))  # each entry's data is a fresh bytearray: writable tensors
    except safetensors.SafetensorError as exc:
        raise _read_error("load", exc) from exc
    return {name: _place(np.frombuffer(info["data"], dtype=_check_dtype("load", name, info["dtype"]).numpy)
                         .reshape(info["shape"]), dev) for name, info in sorted(entries, key=_name)}


def load_file(filename: str | os.PathLike, device="cpu") -> dict[str, Tensor]:
    """Tensors from a safetensors file (``safetensors.torch.load_file``), on ``device``."""
    dev = resolve_device(device)
    try:
        handle = safetensors.safe_open(os.fspath(filename), framework="np")
    except safetensors.SafetensorError as exc:
        raise _read_error("load_file", exc) from exc
    with handle:
        for name in handle.keys():  # refuse unknown dtypes before reading any data
            _check_dtype("load_file", name, handle.get_slice(name).get_dtype())
        # get_tensor hands back a fresh copy of the mapped bytes (bfloat16 through ml_dtypes' dtype name)
        return {name: _place(handle.get_tensor(name), dev) for name in handle.keys()}
