"""``core.save`` / ``core.load``: any picklable object saves; the default load runs no code (PyTorch 2.6+).

A checkpoint is a zip archive (entries stored, not compressed) holding
``core_checkpoint/header.json`` — the saved object described as JSON with an
explicit type tag on every node, plus a format name and version — and one raw
little-endian byte blob per tensor or NumPy array (``core_checkpoint/data/<i>``).
Tensors, arrays, containers and primitives are JSON and bytes, so loading them
parses and copies; every field is validated, and the zip's CRC-32 catches flipped
bytes. Any other object (a whole module, a user class) becomes an ``object`` node
holding its pickle, whose tensors and arrays still live in the blobs; the default
``weights_only`` load unpickles it only through an allow-list (see
:mod:`core.weights_only`). Files ``torch.save`` writes load too.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import struct
import sys
import zipfile
import zlib
from collections import OrderedDict

import numpy as np

from . import dtypes as dt
from .device import device as _device, parse as parse_device
from .ops.creation import empty, from_numpy, resolve_device
from .layouts import sparse_coo
from .ops.sparse import sparse_compressed_tensor, sparse_coo_tensor
from .sparse_tensor import SPARSE_LAYOUTS, SparseTensor
from .tensor import Size, Tensor
from .utils.atomic import atomic_write, is_path
from .weights_only import (WeightsOnlyUnpicklingError, add_safe_globals, clear_safe_globals, get_safe_globals,
                           restricted_loads, safe_globals, unpickle)

__all__ = ["save", "load", "CheckpointError", "WeightsOnlyUnpicklingError", "add_safe_globals",
           "clear_safe_globals", "get_safe_globals", "safe_globals"]

FORMAT_NAME = "core.checkpoint"
FORMAT_VERSION = 1
_PREFIX = "core_checkpoint/"
_HEADER = _PREFIX + "header.json"
_ZIP_MAGIC = b"PK\x03\x04"
# Errors the standard library raises on malformed zip data or truncated streams.
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, struct.error, zlib.error, ValueError,
               NotImplementedError, OverflowError, UnicodeDecodeError, KeyError)


class CheckpointError(RuntimeError, ValueError):
    """A file core.load cannot read: not a core checkpoint, corrupt, truncated or of an unknown version.

    It is a RuntimeError (what PyTorch raises for unreadable checkpoints) and a ValueError (the file is bad).
    """


# -- save ---------------------------------------------------------------------------------------------------------
def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Write ``obj`` to ``f`` (a path or a binary file object), like ``torch.save``.

    Dicts (int, str, tuple... keys), OrderedDicts, lists, tuples, None, bools, ints, floats (inf/nan too),
    complex numbers, strings, bytes, tensors of any dtype and device, Parameters, NumPy arrays of numbers,
    ``core.Size``, ``core.dtype`` and ``core.device`` are stored as tagged JSON and raw bytes, and load with
    the default ``weights_only=True``. Any other picklable object (a whole module, a user class) is pickled,
    its tensors and arrays still stored as raw bytes; loading it needs ``weights_only=False`` or an allowed
    global (:func:`add_safe_globals`). Tensors are saved as their values (views as compact copies); the same
    tensor object reached twice is saved once. A path is written atomically: a temporary file beside it is
    fsynced and renamed over it, so a crash mid-save keeps the previous file. The pickle arguments are accepted
    for PyTorch compatibility and ignored (objects are pickled with the default protocol).
    """
    encoder = _Encoder()
    header = encoder.header(obj)  # before opening the file: an unsupported object leaves no half-written file
    if is_path(f):
        with atomic_write(f) as handle:  # a crash mid-save keeps the previous checkpoint whole
            _write_archive(handle, header, encoder.tensors)
    else:
        if not hasattr(f, "write"):
            raise TypeError(f"save(): f must be a path or a binary file object with write(), "
                            f"not {type(f).__name__}")
        _write_archive(f, header, encoder.tensors)


class _Encoder:
    """Turns an object tree into JSON nodes and a table of the tensors it reaches."""

    def __init__(self, pickle_protocol: int = pickle.DEFAULT_PROTOCOL):
        from .nn.parameter import Parameter  # nn is built on the tensor layer this module sits beside

        self.parameter_class = Parameter
        self.pickle_protocol = pickle_protocol
        self.tensors: list = []
        self.tensor_index: dict = {}  # id(tensor) -> position in self.tensors (which keeps it alive)
        self.active: set = set()  # ids of the containers on the current path, to refuse cycles

    def header(self, obj) -> dict:
        root = self.encode(obj, ())
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "byteorder": "little",
                "tensors": [self.describe_tensor(t, i) for i, t in enumerate(self.tensors)], "root": root}

    def describe_tensor(self, t, index: int) -> dict:
        if isinstance(t, np.ndarray):
            return {"kind": "ndarray", "dtype": t.dtype.newbyteorder("<").str, "shape": list(t.shape),
                    "data": f"data/{index}"}
        meta = t.device.type == "meta"  # meta tensors have no data: shape and dtype only, as in PyTorch
        return {"kind": "parameter" if isinstance(t, self.parameter_class) else "tensor", "dtype": t.dtype.name,
                "shape": list(t.shape), "device": str(t.device), "requires_grad": bool(t.requires_grad),
                "data": None if meta else f"data/{index}"}

    def encode(self, obj, path: tuple) -> dict:
        """The JSON node of ``obj``; ``path`` (the keys leading to it) only serves error messages."""
        if obj is None:
            return {"type": "none"}
        if isinstance(obj, (bool, np.bool_)):
            return {"type": "bool", "value": bool(obj)}
        if isinstance(obj, (int, np.integer)):
            return {"type": "int", "value": int(obj)}
        if isinstance(obj, (float, np.floating)):
            return {"type": "float", "value": repr(float(obj))}  # repr round-trips exactly, inf and nan included
        if isinstance(obj, (complex, np.complexfloating)):
            return {"type": "complex", "real": repr(float(obj.real)), "imag": repr(float(obj.imag))}
        if isinstance(obj, str):
            return {"type": "str", "value": str(obj)}
        if isinstance(obj, (bytes, bytearray)):
            return {"type": "bytes", "value": base64.b64encode(bytes(obj)).decode("ascii")}
        if isinstance(obj, SparseTensor):  # its dense components are tensor blobs
            parts = (obj._indices, obj._compressed, obj._plain, obj._values)
            return {"type": "sparse", "layout": obj.layout.name, "size": [int(s) for s in obj.shape],
                    "coalesced": bool(obj._coalesced), "parts": [self.encode(p, path) for p in parts]}
        if isinstance(obj, Tensor):
            return {"type": "tensor", "index": self.blob_index(obj)}
        if isinstance(obj, np.ndarray) and obj.dtype.kind in _ARRAY_KINDS:
            return {"type": "ndarray", "index": self.blob_index(obj)}
        if isinstance(obj, dt.dtype):
            return {"type": "dtype", "value": obj.name}
        if isinstance(obj, _device):
            return {"type": "device", "value": str(obj)}
        if isinstance(obj, Size):
            return {"type": "size", "value": [int(s) for s in obj]}
        if isinstance(obj, (dict, list, tuple)):
            return self.encode_container(obj, path)
        return self.encode_object(obj, path)

    def blob_index(self, obj) -> int:
        index = self.tensor_index.get(id(obj))
        if index is None:
            index = self.tensor_index[id(obj)] = len(self.tensors)
            self.tensors.append(obj)
        return index

    def encode_object(self, obj, path: tuple) -> dict:
        """An ``object`` node: the pickle of ``obj``, whose tensors and arrays are blobs named by persistent id."""
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=self.pickle_protocol)
        pickler.persistent_id = lambda value: self.persistent_id(value, obj, path)
        try:
            pickler.dump(obj)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
            raise TypeError(f"save(): cannot save {_path_text(path)} of type {kind}: it cannot be pickled "
                            f"({exc})") from exc
        return {"type": "object", "pickle": base64.b64encode(buffer.getvalue()).decode("ascii")}

    def persistent_id(self, value, root, path: tuple):
        if value is root:
            return None
        if isinstance(value, (Tensor, dt.dtype, _device, Size)) or (
                isinstance(value, np.ndarray) and value.dtype.kind in _ARRAY_KINDS):
            return self.encode(value, path)
        return None

    def encode_container(self, obj, path: tuple) -> dict:
        if id(obj) in self.active:
            raise ValueError(f"save(): {_path_text(path)} contains itself (a reference cycle), which cannot be saved")
        self.active.add(id(obj))
        try:
            if isinstance(obj, dict):
                items = [[self.encode(k, path + (_KEY,)), self.encode(v, path + (k,))] for k, v in obj.items()]
                node = {"type": "ordered_dict" if isinstance(obj, OrderedDict) else "dict", "items": items}
                metadata = getattr(obj, "_metadata", None)  # PyTorch's state_dict version record
                if isinstance(obj, OrderedDict) and metadata is not None:
                    node["metadata"] = self.encode(metadata, path + (_METADATA,))
                return node
            return {"type": "list" if isinstance(obj, list) else "tuple",
                    "items": [self.encode(v, path + (i,)) for i, v in enumerate(obj)]}
        finally:
            self.active.discard(id(obj))


_ARRAY_KINDS = frozenset("biufc")  # NumPy arrays of these kinds are raw bytes; others (object, str) are pickled
_KEY, _METADATA = object(), object()  # path steps: "a key of" a dict, its _metadata attribute


def _path_text(path: tuple) -> str:
    """``obj['layer'][0]`` for the path of keys leading to an object, for error messages."""
    text = "obj"
    for step in path:
        text = f"a key of {text}" if step is _KEY else f"{text}._metadata" if step is _METADATA else \
            f"{text}[{_short(step)}]"
    return text


def _host_bytes(t) -> np.ndarray:
    """The values of a tensor or array as a flat little-endian uint8 array (a view when already contiguous)."""
    if isinstance(t, np.ndarray):
        array = np.ascontiguousarray(t.astype(t.dtype.newbyteorder("<"), copy=False))
    else:
        array = np.ascontiguousarray(t.detach().cpu().numpy())
        if sys.byteorder == "big":
            array = array.byteswap()
    return array.reshape(-1).view(np.uint8)


def _zip_info(name: str, size: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(_PREFIX + name)  # fixed 1980 timestamp: saving the same object twice gives equal bytes
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    info.file_size = size  # lets zipfile pick zip64 for blobs over 2 GiB
    return info


def _write_archive(handle, header: dict, tensors: list) -> None:
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        with archive.open(_zip_info("header.json", len(text)), "w") as out:
            out.write(text)
        for entry, t in zip(header["tensors"], tensors):
            if entry["data"] is None:
                continue
            blob = _host_bytes(t)  # one tensor's host copy at a time
            with archive.open(_zip_info(entry["data"], blob.nbytes), "w") as out:
                out.write(memoryview(blob))


# -- load ---------------------------------------------------------------------------------------------------------
def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Read an object written by :func:`save` or by ``torch.save`` (``torch.load``'s signature and defaults).

    ``map_location``: None (each tensor on the device it was saved from), a device (string, ``core.device``
    or index), a dict mapping saved locations to new ones (``{"cuda:0": "cpu"}``), or a callable
    ``(cpu_tensor, location) -> Tensor or None`` as in PyTorch. ``weights_only`` (default True, as in
    PyTorch 2.6+): tensors, NumPy arrays, containers and primitives load, and a pickled object loads only if
    every global it needs is allowed (:func:`add_safe_globals`, :func:`safe_globals`); otherwise
    :class:`WeightsOnlyUnpicklingError` names them and nothing runs. ``weights_only=False`` unpickles anything:
    only for files from a source you trust. Bare pickle files (PyTorch's legacy format) are always refused.
    ``mmap`` and the pickle arguments are accepted and ignored (tensor data is read into memory).
    """
    weights_only = True if weights_only is None else bool(weights_only)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            return _load_from(handle, map_location, repr(os.fspath(f)), weights_only)
    if not hasattr(f, "read"):
        raise TypeError(f"load(): f must be a path or a binary file object with read(), not {type(f).__name__}")
    seekable = getattr(f, "seekable", None)
    if seekable is None or not seekable():
        f = io.BytesIO(f.read())  # the zip directory sits at the end: reading it needs seeks
    return _load_from(f, map_location, "the file object", weights_only)


def _corrupt(source: str, problem: str) -> CheckpointError:
    return CheckpointError(f"load(): {source} is not a valid core checkpoint: {problem}")


def _sniff(handle, source: str) -> None:
    """Refuse, with a clear reason, anything that does not start like a zip archive."""
    start = handle.tell()
    head = handle.read(16)
    handle.seek(start)
    if isinstance(head, str):
        raise TypeError("load(): f must be opened in binary mode ('rb'), not text mode")
    if head.startswith(_ZIP_MAGIC):
        return
    if not head:
        raise _corrupt(source, "the file is empty")
    if head[:1] == b"\x80" or head[:1] in (b"(", b"c", b"]", b"}"):
        raise CheckpointError(
            f"load(): {source} is not a core checkpoint: it looks like a pickle file (e.g. from pickle.dump or "
            "an old torch.save); core.load is refusing to unpickle it because unpickling can run arbitrary code. "
            "Convert it where you trust it, e.g. torch.load then core.utils.safetensors.save_file.")
    if len(head) >= 9 and head[8:9] == b"{":
        raise CheckpointError(f"load(): {source} is not a core checkpoint: it looks like a safetensors file; "
                              "read it with core.utils.safetensors.load_file")
    raise _corrupt(source, f"it does not start with a zip signature (first bytes {head[:8]!r})")


def _load_from(handle, map_location, source: str, weights_only: bool = True):
    _sniff(handle, source)
    try:
        archive = zipfile.ZipFile(handle, "r")
    except _ZIP_ERRORS as exc:
        raise _corrupt(source, f"the zip archive is unreadable (truncated or corrupt?): {exc}") from exc
    with archive:
        length = handle.seek(0, io.SEEK_END)
        names = set(archive.namelist())
        if _HEADER not in names:
            if any(n.endswith("/data.pkl") for n in names):
                from .torch_format import load_torch_archive

                return load_torch_archive(archive, map_location, source, weights_only)
            raise _corrupt(source, f"the zip archive has no {_HEADER}")
        header = _read_header(archive, source, length)
        reader = _Decoder(archive, header, map_location, source, length, weights_only)
        return reader.decode(header["root"])


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def _read_entry(archive: zipfile.ZipFile, name: str, size: int, source: str, length: int) -> bytearray:
    """The bytes of one entry, CRC-checked, into a fresh writable buffer of exactly ``size`` bytes."""
    info = archive.getinfo(name)
    # Entries are stored uncompressed, so none can claim more bytes than the file has: no memory bombs.
    if info.compress_type != zipfile.ZIP_STORED or info.compress_size != size or size > length:
        raise _corrupt(source, f"entry {name} is compressed or claims more bytes ({size}) than the file holds")
    buffer = bytearray(size)
    view = memoryview(buffer)
    try:
        with archive.open(name) as entry:
            filled = 0
            while filled < size:
                n = entry.readinto(view[filled:])
                if not n:
                    break
                filled += n
            if filled != size or entry.read(1):
                raise _corrupt(source, f"entry {name} does not hold the {size} bytes its directory records")
    except _ZIP_ERRORS as exc:
        raise _corrupt(source, f"entry {name} is unreadable (truncated or corrupt?): {exc}") from exc
    return buffer


def _read_header(archive: zipfile.ZipFile, source: str, length: int) -> dict:
    size = archive.getinfo(_HEADER).file_size
    raw = _read_entry(archive, _HEADER, size, source, length)
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise _corrupt(source, f"{_HEADER} is not valid JSON: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise _corrupt(source, f"{_HEADER} does not name the format {FORMAT_NAME!r}")
    version = header.get("version")
    if type(version) is not int:
        raise _corrupt(source, f"the format version {version!r} is not an integer")
    if version != FORMAT_VERSION:
        raise CheckpointError(f"load(): {source} uses core checkpoint format version {version}, but this core "
                              f"reads version {FORMAT_VERSION} only; "
                              + ("upgrade core to load it" if version > FORMAT_VERSION else "it is unsupported"))
    if header.get("byteorder") != "little":
        raise _corrupt(source, f"byteorder {header.get('byteorder')!r} is not 'little'")
    if not isinstance(header.get("tensors"), list) or "root" not in header:
        raise _corrupt(source, f"{_HEADER} lacks the 'tensors' list or the 'root' object")
    return header


class _Decoder:
    """Rebuilds the object tree from validated JSON nodes, reading each tensor's blob once."""

    def __init__(self, archive: zipfile.ZipFile, header: dict, map_location, source: str, length: int,
                 weights_only: bool = True):
        self.archive, self.entries, self.map_location, self.source = archive, header["tensors"], map_location, source
        self.weights_only = weights_only
        self.length = length  # of the whole file: no entry can be longer
        self.loaded: dict = {}  # tensor index -> Tensor: the same saved tensor comes back as one object
        self.targets: dict = {}  # saved location -> resolved device
        self.handlers = {"none": lambda n: None, "bool": self.scalar(bool, "value"),
                         "int": self.scalar(int, "value"), "str": self.scalar(str, "value"),
                         "float": self.float_node, "complex": self.complex_node, "bytes": self.bytes_node,
                         "list": lambda n: [self.decode(v) for v in self.items(n)],
                         "tuple": lambda n: tuple(self.decode(v) for v in self.items(n)),
                         "dict": self.dict_node, "ordered_dict": self.dict_node, "size": self.size_node,
                         "dtype": self.dtype_node, "device": self.device_node, "tensor": self.tensor_node,
                         "ndarray": self.ndarray_node, "object": self.object_node, "sparse": self.sparse_node}

    def fail(self, problem: str) -> CheckpointError:
        return _corrupt(self.source, problem)

    def decode(self, node):
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            raise self.fail(f"expected a tagged object node, found {_short(node)}")
        handler = self.handlers.get(node["type"])
        if handler is None:
            raise self.fail(f"unknown type tag {node['type']!r}")
        try:
            return handler(node)
        except RecursionError as exc:
            raise self.fail("the object is nested too deeply") from exc

    def field(self, node: dict, key: str, kind: type):
        value = node.get(key)
        if type(value) is not kind:
            raise self.fail(f"field {key!r} of a {node['type']!r} node should be {kind.__name__}, found "
                            f"{_short(value)}")
        return value

    def scalar(self, kind: type, key: str):
        return lambda node: self.field(node, key, kind)

    def number(self, node: dict, key: str) -> float:
        text = self.field(node, key, str)
        try:
            return float(text)
        except ValueError:
            raise self.fail(f"{text!r} is not a float") from None

    def float_node(self, node: dict) -> float:
        return self.number(node, "value")

    def complex_node(self, node: dict) -> complex:
        return complex(self.number(node, "real"), self.number(node, "imag"))

    def bytes_node(self, node: dict) -> bytes:
        try:
            return base64.b64decode(self.field(node, "value", str), validate=True)
        except ValueError as exc:
            raise self.fail(f"bad base64 in a bytes node: {exc}") from None

    def items(self, node: dict) -> list:
        return self.field(node, "items", list)

    def dict_node(self, node: dict) -> dict:
        result = OrderedDict() if node["type"] == "ordered_dict" else {}
        for pair in self.items(node):
            if not isinstance(pair, list) or len(pair) != 2:
                raise self.fail(f"a dict item should be a [key, value] pair, found {_short(pair)}")
            key = self.decode(pair[0])
            try:
                hash(key)
            except TypeError:
                raise self.fail(f"a dict key of type {type(key).__name__} is unhashable") from None
            result[key] = self.decode(pair[1])
        if "metadata" in node and node["type"] == "ordered_dict":
            result._metadata = self.decode(node["metadata"])
        return result

    def sparse_node(self, node: dict) -> SparseTensor:
        layouts = {lay.name: lay for lay in SPARSE_LAYOUTS}
        layout = layouts.get(self.field(node, "layout", str))
        parts = [self.decode(p) for p in self.field(node, "parts", list)]
        if layout is None or len(parts) != 4 or not all(p is None or isinstance(p, Tensor) for p in parts) \
                or parts[3] is None:
            raise self.fail(f"a sparse node needs a sparse layout and four components, found {_short(node)}")
        indices, compressed, plain, values = parts
        size = self.shape(self.field(node, "size", list))
        try:  # through the checking constructors: a damaged file fails here, not in a later op
            if layout is sparse_coo:
                return sparse_coo_tensor(indices, values, size, is_coalesced=self.field(node, "coalesced", bool))
            return sparse_compressed_tensor(compressed, plain, values, size, layout=layout)
        except (RuntimeError, TypeError, AttributeError) as exc:
            raise self.fail(f"bad sparse tensor: {exc}") from None

    def size_node(self, node: dict) -> Size:
        return Size(self.shape(self.field(node, "value", list)))

    def shape(self, values: list) -> tuple:
        if not all(type(s) is int and s >= 0 for s in values):
            raise self.fail(f"a shape should be a list of non-negative ints, found {_short(values)}")
        return tuple(values)

    def dtype_node(self, node: dict) -> dt.dtype:
        return self.dtype(self.field(node, "value", str))

    def dtype(self, name: str) -> dt.dtype:
        if name not in dt._BY_NAME:
            raise self.fail(f"unknown dtype {name!r}")
        return dt._BY_NAME[name]

    def device_node(self, node: dict) -> _device:
        return self.device(self.field(node, "value", str))

    def device(self, text: str) -> _device:
        try:
            return _device(text)
        except (RuntimeError, TypeError) as exc:
            raise self.fail(f"bad device {text!r}: {exc}") from None

    def device_type(self, text: str) -> str:
        """The type of a tensor's saved location, its syntax checked: whether a backend has it matters only if the
        tensor is to be restored there (``map_location`` may send it elsewhere)."""
        try:
            return parse_device(text)[0]
        except (RuntimeError, TypeError) as exc:
            raise self.fail(f"bad device {text!r}: {exc}") from None

    def tensor_node(self, node: dict) -> Tensor:
        index = self.field(node, "index", int)
        if not 0 <= index < len(self.entries):
            raise self.fail(f"tensor index {index} is out of range (the checkpoint lists {len(self.entries)})")
        t = self.loaded.get(index)
        if t is None:
            t = self.loaded[index] = self.tensor(index, self.entries[index])
        return t

    def ndarray_node(self, node: dict) -> np.ndarray:
        index = self.field(node, "index", int)
        if not 0 <= index < len(self.entries) or not isinstance(self.entries[index], dict) or \
                self.entries[index].get("kind") != "ndarray":
            raise self.fail(f"ndarray index {index} does not name an ndarray entry")
        array = self.loaded.get(index)
        if array is None:
            entry = dict(self.entries[index], type="ndarray entry")
            text = self.field(entry, "dtype", str)
            try:
                d = np.dtype(text)
            except TypeError:
                raise self.fail(f"bad NumPy dtype {text!r}") from None
            if d.kind not in _ARRAY_KINDS or d.fields is not None or d.subdtype is not None:
                raise self.fail(f"NumPy dtype {text!r} is not a plain number type")
            shape = self.shape(self.field(entry, "shape", list))
            array = self.loaded[index] = self.blob(index, entry, d, shape)
        return array

    def object_node(self, node: dict):
        try:
            data = base64.b64decode(self.field(node, "pickle", str), validate=True)
        except ValueError as exc:
            raise self.fail(f"bad base64 in an object node: {exc}") from None
        if self.weights_only:
            return restricted_loads(data, self.persistent_load)
        return unpickle(data, self.persistent_load)

    def persistent_load(self, pid):
        """The tensors, arrays, dtypes, devices and sizes a pickled object refers to, decoded as JSON nodes."""
        if not isinstance(pid, dict) or pid.get("type") not in ("tensor", "ndarray", "dtype", "device", "size"):
            raise self.fail(f"an object node refers to {_short(pid)}, not a tensor, array, dtype, device or size")
        return self.decode(pid)

    def tensor(self, index: int, entry) -> Tensor:
        if not isinstance(entry, dict):
            raise self.fail(f"tensor entry {index} is {_short(entry)}, not an object")
        entry = dict(entry, type="tensor entry")  # so field() messages name what they read
        d = self.dtype(self.field(entry, "dtype", str))
        shape = self.shape(self.field(entry, "shape", list))
        location = self.field(entry, "device", str)
        saved_type = self.device_type(location)
        requires_grad = self.field(entry, "requires_grad", bool)
        kind = entry.get("kind")
        if kind not in ("tensor", "parameter"):
            raise self.fail(f"tensor entry {index} has unknown kind {kind!r}")
        if requires_grad and not (d.is_floating_point or d.is_complex):
            raise self.fail(f"tensor entry {index} of dtype {d.name} cannot require grad")
        if saved_type == "meta":
            t = empty(shape, dtype=d, device="meta")  # no data was saved; PyTorch keeps these on meta too
        else:
            t = self.place(from_numpy(self.array(index, entry, d, shape)), location, saved_type)
        if kind == "parameter":
            from .nn.parameter import Parameter

            return Parameter(t, requires_grad=requires_grad)
        return t.requires_grad_(True) if requires_grad else t

    def array(self, index: int, entry: dict, d: dt.dtype, shape: tuple) -> np.ndarray:
        if d is dt.bool:
            array = self.blob(index, entry, np.dtype("<u1"), shape)
            if array.size and array.max() > 1:
                raise self.fail(f"tensor {index} is bool but holds bytes other than 0 and 1")
            return array.view(np.bool_)
        return self.blob(index, entry, np.dtype(d.numpy).newbyteorder("<"), shape)

    def blob(self, index: int, entry: dict, d: np.dtype, shape: tuple) -> np.ndarray:
        """The little-endian bytes of entry ``index`` as a native-order array of dtype ``d`` and ``shape``."""
        name = self.field(entry, "data", str)
        member = _PREFIX + name
        try:
            info = self.archive.getinfo(member)
        except KeyError:
            raise self.fail(f"the data of tensor {index} ({member}) is missing from the archive") from None
        expected = d.itemsize * Size(shape).numel()
        if info.file_size != expected:
            raise self.fail(f"blob size mismatch: tensor {index} ({entry['dtype']}, shape {list(shape)}) needs "
                            f"{expected} bytes but {member} holds {info.file_size}")
        buffer = _read_entry(self.archive, member, expected, self.source, self.length)
        return np.frombuffer(buffer, dtype=d).reshape(shape).astype(d.newbyteorder("="), copy=False)

    def place(self, t: Tensor, location: str, saved_type: str) -> Tensor:
        """Move a freshly read CPU tensor where ``map_location`` says (PyTorch's rules)."""
        mapping = self.map_location
        if callable(mapping):
            result = mapping(t, location)
            if result is not None:
                if not isinstance(result, Tensor):
                    raise TypeError(f"load(): map_location returned {type(result).__name__}; it must return a "
                                    "Tensor or None")
                return result
            mapping = None
        if isinstance(mapping, dict):
            target = mapping.get(location, mapping.get(saved_type, location))
        else:
            target = location if mapping is None else mapping
        dev = self.resolve(target, location, explicit=mapping is not None)
        return t if dev.type == "cpu" else t.to(dev)

    def resolve(self, target, location: str, explicit: bool) -> _device:
        key = (str(target) if isinstance(target, (str, _device)) else repr(target), location)
        dev = self.targets.get(key)
        if dev is None:
            try:
                dev = self.targets[key] = resolve_device(target)
            except RuntimeError as exc:
                hint = "" if explicit else "; pass map_location='cpu' (or another device) to load it elsewhere"
                raise RuntimeError(f"load(): the checkpoint holds tensors saved on {location!r}, which cannot be "
                                   f"restored on {str(target)!r} here: {str(exc).splitlines()[0]}{hint}") from exc
        return dev


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
