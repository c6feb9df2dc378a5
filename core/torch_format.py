"""Reading the zip files ``torch.save`` writes, so ``core.load`` opens PyTorch checkpoints.

Such a file holds ``<name>/data.pkl`` (a pickle whose tensors are persistent ids naming storages) and one raw
blob per storage (``<name>/data/<key>``). With ``weights_only`` the pickle may reach only the globals PyTorch's
own weights-only unpickler allows for tensors and state dicts (the stand-ins below) plus the user's safe
globals; torch itself is never imported.
"""

from __future__ import annotations

import collections
import io
import pickle
import zipfile

import numpy as np

from . import dtypes as dt
from .ops.creation import from_numpy
from .weights_only import restricted_loads

__all__ = ["load_torch_archive"]

# torch.<Name>Storage -> the NumPy dtype of its elements (PyTorch's legacy typed-storage names).
_STORAGE_DTYPES = {"DoubleStorage": "<f8", "FloatStorage": "<f4", "HalfStorage": "<f2", "LongStorage": "<i8",
                   "IntStorage": "<i4", "ShortStorage": "<i2", "CharStorage": "i1", "ByteStorage": "u1",
                   "BoolStorage": "?", "ComplexFloatStorage": "<c8", "ComplexDoubleStorage": "<c16",
                   "BFloat16Storage": "bfloat16"}


class _StorageType:
    """Stands in for ``torch.FloatStorage`` and the rest: only its element type matters here."""

    def __init__(self, name: str):
        self.name = name


class _Storage:
    """One storage's elements, flat, as read from the archive."""

    def __init__(self, array: np.ndarray, location: str, bfloat16: bool):
        self.array, self.location = array, location
        self.bfloat16 = bfloat16  # read widened to float32 (NumPy has no bfloat16); narrowed once rebuilt


def load_torch_archive(archive: zipfile.ZipFile, map_location, source: str, weights_only: bool):
    """The object a ``torch.save`` zip holds, tensors placed as ``map_location`` says (``torch.load``)."""
    from .serialization import CheckpointError, _Decoder

    pickle_name = next(n for n in archive.namelist() if n.endswith("/data.pkl"))
    prefix = pickle_name[: -len("data.pkl")]
    placer = _Decoder(archive, {"tensors": []}, map_location, source, 0, weights_only)
    storages: dict = {}

    def fail(problem: str) -> CheckpointError:
        return CheckpointError(f"load(): {source} is not a valid PyTorch checkpoint: {problem}")

    def persistent_load(pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str) and isinstance(pid[3], str)):
            raise fail(f"unsupported persistent id {pid!r:.80}")
        _, kind, key, location, numel = pid
        if key not in storages:
            storages[key] = _Storage(read_storage(kind, key, numel), location, kind.name == "BFloat16Storage")
        return storages[key]

    def read_storage(kind: _StorageType, key: str, numel) -> np.ndarray:
        name = f"{prefix}data/{key}"
        try:
            raw = bytearray(archive.read(name))
        except KeyError:
            raise fail(f"the storage {name} is missing") from None
        if kind.name == "BFloat16Storage":
            words = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16  # bfloat16 is float32's top half
            return words.view(np.float32)
        array = np.frombuffer(raw, dtype=np.dtype(_STORAGE_DTYPES[kind.name]))
        if array.size != numel:
            raise fail(f"the storage {name} holds {array.size} elements, the pickle says {numel}")
        return array.astype(array.dtype.newbyteorder("="), copy=False)

    def rebuild_tensor(storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
        if not isinstance(storage, _Storage):
            raise fail("a tensor is rebuilt from something other than a storage")
        array = storage.array
        needed = offset + sum((s - 1) * st for s, st in zip(size, stride)) + 1 if all(size) else 0
        if offset < 0 or needed > array.size or any(st < 0 for st in stride):
            raise fail(f"a tensor of size {tuple(size)} and stride {tuple(stride)} does not fit its storage")
        view = np.lib.stride_tricks.as_strided(array[offset:], tuple(size),
                                               tuple(st * array.itemsize for st in stride))
        t = from_numpy(np.array(view))
        if storage.bfloat16:
            t = t.to(dt.bfloat16)
        t = placer.place(t, storage.location, placer.device(storage.location))
        return t.requires_grad_(True) if requires_grad else t

    def rebuild_parameter(data, requires_grad, backward_hooks, state=None):
        from .nn.parameter import Parameter

        return Parameter(data, requires_grad=requires_grad)

    types = {f"torch.{name}": _StorageType(name) for name in _STORAGE_DTYPES}
    extra = {"torch._utils._rebuild_tensor_v2": rebuild_tensor, "torch._utils._rebuild_parameter": rebuild_parameter,
             "torch._utils._rebuild_parameter_with_state": rebuild_parameter,
             "collections.OrderedDict": collections.OrderedDict, **types,
             **{f"torch.{d.name}": d for d in dt._BY_NAME.values()}}
    data = archive.read(pickle_name)
    if weights_only:
        return restricted_loads(data, persistent_load, extra)
    return _TorchUnpickler.loads(data, persistent_load, extra)


class _TorchUnpickler:
    """``weights_only=False``: anything unpickles, torch's own globals resolved to the stand-ins above."""

    @staticmethod
    def loads(data: bytes, persistent_load, extra: dict):
        class Unpickler(pickle.Unpickler):
            def find_class(self, module, name):
                return extra.get(f"{module}.{name}") or super().find_class(module, name)

        unpickler = Unpickler(io.BytesIO(data))
        unpickler.persistent_load = persistent_load
        return unpickler.load()
