"""``core.jit.save`` / ``core.jit.load``: traced programs as zip archives of JSON graphs and safetensors.

An archive (entries stored, fixed timestamps, no pickle anywhere) holds

* ``format.json`` — ``{"format": "core.jit", "version": 1, "kind": "module" | "function", ...}``: the name,
  the ``optimize`` flag, the saved mode, the module tree and every parameter and buffer by qualified name;
* ``graphs/<mode>.json`` — one *raw* graph per mode (``training``/``eval`` for modules, ``function`` for
  functions): values with shape, dtype and device; nodes with op, args, kwargs, output structure and attrs;
* ``tensors.safetensors`` — parameters and buffers (``state/<qualname>``) and graph constants
  (``const/<mode>/<name>``).

Loading rebuilds the graphs and optimises them again, so fused, device-specific kernels are never stored.
Literals in node arguments are JSON values; the rest carry a one-key tag: ``{"value": id}`` (a graph value),
``{"list": [...]}`` (JSON arrays are tuples), ``{"dict": [[k, v], ...]}``, ``{"float": "inf"}``,
``{"dtype": name}``, ``{"device": str}``, ``{"size": [...]}``, ``{"slice": [start, stop, step]}``,
``{"ellipsis": null}``, ``{"generator": device type}`` (the default generator of that device type).
"""

from __future__ import annotations

import io
import itertools
import json
import math
import numbers
import os
import zipfile

from .. import dtypes as dt
from ..device import device as _device
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ..ops.creation import resolve_device
from ..ops.random import Generator, default_generator_for, is_default_generator
from ..tensor import Size, Tensor
from ..utils import safetensors
from ..utils.atomic import atomic_write, is_path
from . import ops  # noqa: F401 - registers the jit:: ops a saved raw graph may call
from .ir import JIT_OPS, Graph, GraphError, Node, Value
from .traced import TracedFunction, TracedModule

__all__ = ["save", "load", "SerializationError", "FORMAT_NAME", "FORMAT_VERSION"]

FORMAT_NAME = "core.jit"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)
_FORMAT = "format.json"
_TENSORS = "tensors.safetensors"
_MODES = {True: "training", False: "eval"}


class SerializationError(RuntimeError, ValueError):
    """A file :func:`load` cannot read: not a core.jit archive, corrupt, or of an unsupported version."""


# -- literals -----------------------------------------------------------------------------------------------------
def _encode(obj, op: str):
    """The JSON form of one argument (nested literals and graph values); ``op`` names the node in errors."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        obj = float(obj)
        return obj if math.isfinite(obj) else {"float": repr(obj)}
    if isinstance(obj, Value):
        return {"value": obj.id}
    if isinstance(obj, Size):
        return {"size": list(obj)}
    if isinstance(obj, tuple):
        return [_encode(x, op) for x in obj]
    if isinstance(obj, list):
        return {"list": [_encode(x, op) for x in obj]}
    if isinstance(obj, dict):
        return {"dict": [[_encode(k, op), _encode(v, op)] for k, v in obj.items()]}
    if isinstance(obj, dt.dtype):
        return {"dtype": obj.name}
    if isinstance(obj, _device):
        return {"device": str(obj)}
    if isinstance(obj, slice):
        return {"slice": [_encode(x, op) for x in (obj.start, obj.stop, obj.step)]}
    if obj is Ellipsis:
        return {"ellipsis": None}
    if isinstance(obj, Generator):
        if not is_default_generator(obj):
            raise ValueError(f"core.jit.save(): op '{op}' draws from a user-created core.Generator ({obj!r}); only "
                             f"the default generators of devices can be saved — trace without generator= to save")
        return {"generator": obj.device.type}
    raise TypeError(f"core.jit.save(): op '{op}' has an argument of type {type(obj).__module__}."
                    f"{type(obj).__qualname__}, which the core.jit format cannot store")


class _Decoder:
    """Turns JSON back into literals and graph values; maps devices through ``map_location``."""

    def __init__(self, source: str, map_location):
        self.source = source
        self.map_location = map_location
        self.devices: dict = {}
        self.values: dict = {}  # saved value id -> Value of the graph being read
        self.where = "the graph"  # what is being read, for error messages

    def fail(self, problem: str) -> SerializationError:
        return SerializationError(f"core.jit.load(): {self.source} is not a valid core.jit archive: {problem}")

    def device(self, text) -> _device:
        """The device a value saved on ``text`` lives on after loading."""
        dev = self.devices.get(text)
        if dev is None:
            if not isinstance(text, str):
                raise self.fail(f"a device should be a string, found {text!r}")
            target = self.map_location
            if isinstance(target, dict):
                target = target.get(text, target.get(text.partition(":")[0], text))
            try:
                dev = self.devices[text] = resolve_device(text if target is None else target)
            except (RuntimeError, TypeError) as exc:
                hint = "; pass map_location= (e.g. 'cpu') to load it elsewhere" if target is None else ""
                raise RuntimeError(f"core.jit.load(): {self.source} was saved on {text!r}, which cannot be used "
                                   f"here: {exc}{hint}") from exc
        return dev

    def dtype(self, name) -> dt.dtype:
        d = dt._BY_NAME.get(name) if isinstance(name, str) else None
        if d is None:
            raise self.fail(f"unknown dtype {name!r}")
        return d

    def literal(self, obj):
        """The argument whose JSON form is ``obj``."""
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, list):
            return tuple(self.literal(x) for x in obj)
        if not isinstance(obj, dict) or len(obj) != 1:
            raise self.fail(f"expected a literal or a one-key tag object, found {_short(obj)}")
        (tag, body), = obj.items()
        decode = self._TAGS.get(tag)
        if decode is None:
            raise self.fail(f"unknown tag {tag!r} in {_short(obj)}")
        try:
            return decode(self, body)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, SerializationError):
                raise
            raise self.fail(f"{self.where}: bad {tag!r} object {_short(obj)}: {exc}") from None

    def _value(self, body) -> Value:
        v = self.values.get(body) if type(body) is int else None
        if v is None:
            raise self.fail(f"{self.where} reads value {body!r}, which is not defined before it")
        return v

    def _generator(self, body) -> Generator:
        return default_generator_for(self.device(body).type)

    def _dict(self, body) -> dict:
        return {self.literal(k): self.literal(v) for k, v in body}

    _TAGS = {
        "value": _value, "generator": _generator, "dict": _dict,
        "list": lambda self, body: [self.literal(x) for x in body],
        "float": lambda self, body: float(body),
        "dtype": lambda self, body: self.dtype(body),
        "device": lambda self, body: self.device(body),
        "size": lambda self, body: Size(self.literal(body)),
        "slice": lambda self, body: slice(*(self.literal(x) for x in body)),
        "ellipsis": lambda self, body: Ellipsis,
    }


def _short(obj) -> str:
    text = repr(obj)
    return text if len(text) <= 80 else text[:77] + "..."


# -- graphs -------------------------------------------------------------------------------------------------------
def _value_json(v: Value) -> dict:
    entry = {"id": v.id, "shape": list(v.shape), "dtype": v.dtype.name, "device": str(v.device)}
    if v.name:
        entry["name"] = v.name
    return entry


def _graph_json(graph: Graph) -> dict:
    """The JSON form of a graph (its constant tensors are stored apart, by name)."""
    nodes = []
    for node in graph.nodes:
        nodes.append({"op": node.op, "args": _encode(node.args, node.op),
                      "kwargs": {k: _encode(v, node.op) for k, v in node.kwargs.items()},
                      "outputs": [_value_json(v) for v in node.outputs],
                      "out_structure": _encode(node.out_structure, node.op),
                      "attrs": {k: _encode(v, node.op) for k, v in node.attrs.items()}})
    return {"inputs": [_value_json(v) for v in graph.inputs],
            "params": [_value_json(v) for v in graph.params.values()],
            "buffers": sorted(graph.buffers),
            "constants": [_value_json(v) for v, _ in graph.constants.values()],
            "nodes": nodes, "output": _encode(graph.output, "return")}


def _field(dec: _Decoder, obj: dict, key: str, kind: type, what: str):
    value = obj.get(key) if isinstance(obj, dict) else None
    if type(value) is not kind:
        raise dec.fail(f"{what} should have a {kind.__name__} field {key!r}, found {_short(obj)}")
    return value


def _read_value(dec: _Decoder, entry, kind: str, node=None, index: int = 0) -> Value:
    what = f"a {kind} value"
    vid = _field(dec, entry, "id", int, what)
    shape = _field(dec, entry, "shape", list, what)
    if not all(type(s) is int and s >= 0 for s in shape):
        raise dec.fail(f"value {vid} has a bad shape {_short(shape)}")
    if vid in dec.values:
        raise dec.fail(f"value {vid} is defined twice")
    name = entry.get("name", "")
    if not isinstance(name, str):
        raise dec.fail(f"value {vid} has a name that is not a string: {name!r}")
    v = dec.values[vid] = Value(vid, kind, tuple(shape), dec.dtype(entry.get("dtype")), dec.device(entry.get("device")),
                                name, node, index)
    return v


def _read_graph(dec: _Decoder, doc, constants: dict, mode: str) -> Graph:
    """Rebuild the graph of ``mode`` from its JSON; ``constants`` maps constant names to loaded tensors."""
    if not isinstance(doc, dict):
        raise dec.fail(f"graphs/{mode}.json is not an object")
    dec.values = {}
    graph = Graph()
    graph.inputs = [_read_value(dec, e, "input") for e in _field(dec, doc, "inputs", list, "a graph")]
    for e in _field(dec, doc, "params", list, "a graph"):
        v = _read_value(dec, e, "param")
        graph.params[v.name] = v
    graph.buffers = set(_field(dec, doc, "buffers", list, "a graph"))
    for e in _field(dec, doc, "constants", list, "a graph"):
        v = _read_value(dec, e, "const")
        graph.constants[v.name] = (v, _constant(dec, constants, v, mode))
    for i, n in enumerate(_field(dec, doc, "nodes", list, "a graph")):
        op = _field(dec, n, "op", str, f"node {i}")
        dec.where = f"graphs/{mode}.json: node {i} ({op})"
        if not (op in JIT_OPS or _is_operator(op)):
            raise dec.fail(f"{dec.where} calls an op this core does not define")
        args = dec.literal(_field(dec, n, "args", list, f"node {i} ({op})"))
        kwargs = {k: dec.literal(v) for k, v in _field(dec, n, "kwargs", dict, f"node {i} ({op})").items()}
        attrs = {k: dec.literal(v) for k, v in _field(dec, n, "attrs", dict, f"node {i} ({op})").items()}
        node = Node(op, args, kwargs, [], dec.literal(n.get("out_structure")), attrs)
        node.outputs = [_read_value(dec, e, "node", node, j)
                        for j, e in enumerate(_field(dec, n, "outputs", list, f"node {i} ({op})"))]
        graph.nodes.append(node)
    if "output" not in doc:
        raise dec.fail(f"graphs/{mode}.json has no 'output'")
    dec.where = f"graphs/{mode}.json: the output"
    graph.output = dec.literal(doc["output"])
    graph._ids = itertools.count(max(dec.values, default=-1) + 1)
    try:
        return graph.validate()
    except GraphError as exc:
        raise dec.fail(f"graphs/{mode}.json: {exc}") from None


def _is_operator(op: str) -> bool:
    from ..dispatch.operator import OPERATORS

    return op in OPERATORS


def _constant(dec: _Decoder, constants: dict, v: Value, mode: str) -> Tensor:
    key = f"const/{mode}/{v.name}"
    t = constants.get(key)
    if t is None:
        raise dec.fail(f"{_TENSORS} lacks the constant {key}")
    if t._shape != v.shape or t.dtype is not v.dtype:
        raise dec.fail(f"constant {key} is {t.dtype.name}{list(t._shape)} but the graph declares {v.type_str()}")
    return t if t.device == v.device else t.to(v.device)


# -- save ---------------------------------------------------------------------------------------------------------
def _state_entries(module: Module) -> tuple:
    """(state entries, tensors): every parameter and buffer by qualified name, a tensor shared by two names once."""
    entries, tensors, first = [], {}, {}
    for kind, members in (("parameter", module.named_parameters(remove_duplicate=False)),
                          ("buffer", module.named_buffers(remove_duplicate=False))):
        for name, t in members:
            entry = {"name": name, "kind": kind, "device": str(t.device), "requires_grad": bool(t.requires_grad)}
            if kind == "buffer":
                owner, _, leaf = name.rpartition(".")
                entry["persistent"] = leaf not in module.get_submodule(owner)._non_persistent_buffers_set
            if id(t) in first:
                entry["same_as"] = first[id(t)]
            else:
                first[id(t)] = name
                tensors[f"state/{name}"] = t
            entries.append(entry)
    return entries, tensors


def _parts(traced) -> tuple:
    """(format.json object, {mode: graph}, tensors) of a traced object."""
    if isinstance(traced, TracedModule):
        graphs = {_MODES[mode]: g for mode, g in traced._raw_graphs.items()}
        state, tensors = _state_entries(traced)
        header = {"kind": "module", "name": traced.original_name, "training": traced.training,
                  "modules": [name for name, _ in traced.named_modules(remove_duplicate=False) if name],
                  "state": state}
    elif isinstance(traced, TracedFunction):
        graphs = {"function": traced.raw_graph}
        state = [{"name": name, "kind": "parameter", "device": str(t.device), "requires_grad": bool(t.requires_grad)}
                 for name, t in traced._params.items()]
        tensors = {f"state/{name}": t for name, t in traced._params.items()}
        header = {"kind": "function", "name": traced.__name__, "state": state}
    else:
        raise TypeError(f"core.jit.save(): expected a TracedModule or TracedFunction (from core.jit.trace), "
                        f"got {type(traced).__name__}")
    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, **header, "optimize": traced._optimize,
              "graphs": sorted(graphs)}
    for mode, g in graphs.items():
        tensors.update({f"const/{mode}/{name}": t for name, (_, t) in g.constants.items()})
    return header, graphs, tensors


def _zip_info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)  # the fixed 1980 timestamp: saving the same program twice gives equal bytes
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    return info


def _json_bytes(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode("utf-8")


def save(traced, f) -> None:
    """Write a traced module or function to ``f`` (a path or a binary file object) as a core.jit archive.

    The archive holds the raw graphs of every traced mode as JSON and the parameters, buffers and constants
    as safetensors; nothing is pickled. Ops that draw from a user-created ``core.Generator`` cannot be saved
    (the default generators of devices can), nor arguments of types the format does not know (TypeError).
    """
    header, graphs, tensors = _parts(traced)
    entries = {_FORMAT: _json_bytes(header)}  # everything encoded first: a failure leaves no half-written file
    entries.update({f"graphs/{mode}.json": _json_bytes(_graph_json(g)) for mode, g in graphs.items()})
    entries[_TENSORS] = safetensors.save(tensors)
    if is_path(f):
        with atomic_write(f) as handle:  # a crash mid-save keeps the previous archive whole
            _write_archive(handle, entries)
    else:
        _write_archive(f, entries)


def _write_archive(handle, entries: dict) -> None:
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, data in entries.items():
            archive.writestr(_zip_info(name), data)


# -- load ---------------------------------------------------------------------------------------------------------
class _Archive:
    """Checked reads from an opened archive."""

    def __init__(self, archive: zipfile.ZipFile, dec: _Decoder):
        self.archive, self.dec = archive, dec

    def read(self, name: str) -> bytes:
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            raise self.dec.fail(f"the entry {name} is missing") from None
        if info.compress_type != zipfile.ZIP_STORED:
            raise self.dec.fail(f"the entry {name} is compressed; core.jit archives store entries uncompressed")
        try:
            return self.archive.read(info)
        except (zipfile.BadZipFile, EOFError, OSError) as exc:
            raise self.dec.fail(f"the entry {name} is unreadable (truncated or corrupt?): {exc}") from None

    def json(self, name: str):
        data = self.read(name)
        try:
            return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            raise self.dec.fail(f"{name} is not valid JSON: {exc}") from None


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def _check_header(dec: _Decoder, header) -> dict:
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise dec.fail(f"{_FORMAT} does not name the format {FORMAT_NAME!r}")
    version = header.get("version")
    if version not in SUPPORTED_VERSIONS or type(version) is not int:
        raise SerializationError(
            f"core.jit.load(): {dec.source} uses core.jit format version {version!r}; this core reads version(s) "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))}"
            + (" — upgrade core to load it" if type(version) is int and version > FORMAT_VERSION else ""))
    if header.get("kind") not in ("module", "function"):
        raise dec.fail(f"unknown kind {header.get('kind')!r} (expected 'module' or 'function')")
    graphs = _field(dec, header, "graphs", list, _FORMAT)
    allowed = set(_MODES.values()) if header["kind"] == "module" else {"function"}
    if not graphs or not all(isinstance(g, str) and g in allowed for g in graphs):
        raise dec.fail(f"{_FORMAT} lists graphs {sorted(graphs)}; expected some of {sorted(allowed)}")
    for key, kind in (("name", str), ("optimize", bool), ("state", list)):
        _field(dec, header, key, kind, _FORMAT)
    return header


def _read_state(dec: _Decoder, header: dict, tensors: dict) -> dict:
    """Qualified name -> loaded tensor (Parameters for parameters of modules), aliases resolved."""
    state: dict = {}
    for entry in header["state"]:
        name = _field(dec, entry, "name", str, "a state entry")
        same_as = entry.get("same_as")
        if same_as is not None:
            if same_as not in state:
                raise dec.fail(f"state entry {name!r} aliases {same_as!r}, which is not listed before it")
            state[name] = state[same_as]
            continue
        if entry.get("kind") not in ("parameter", "buffer"):
            raise dec.fail(f"state entry {name!r} has unknown kind {entry.get('kind')!r}")
        t = tensors.get(f"state/{name}")
        if t is None:
            raise dec.fail(f"{_TENSORS} lacks the tensor of {name!r}")
        t = t.to(dec.device(entry.get("device")))
        requires_grad = _field(dec, entry, "requires_grad", bool, f"state entry {name!r}")
        if entry.get("kind") == "parameter" and header["kind"] == "module":
            t = Parameter(t, requires_grad=requires_grad)
        elif requires_grad:
            t.requires_grad_(True)
        state[name] = t
    return state


def _build_module(dec: _Decoder, header: dict, graphs: dict, state: dict) -> TracedModule:
    """A TracedModule owning plain Module containers that mirror the saved qualified names."""
    raw = {mode: graphs[name] for mode, name in _MODES.items() if name in graphs}
    module = TracedModule(raw, None, (), False, header["optimize"], header["name"])
    containers = {"": module}
    try:
        for qualname in _field(dec, header, "modules", list, _FORMAT):
            owner, _, leaf = qualname.rpartition(".")
            child = containers[qualname] = Module()
            containers[owner].add_module(leaf, child)
        for entry in header["state"]:
            owner, _, leaf = entry["name"].rpartition(".")
            t = state[entry["name"]]
            if entry["kind"] == "parameter":
                containers[owner].register_parameter(leaf, t)
            else:
                containers[owner].register_buffer(leaf, t, persistent=entry.get("persistent", True) is not False)
    except (KeyError, TypeError, AttributeError) as exc:
        raise dec.fail(f"the module tree or state names are inconsistent: {exc!r}") from None
    module.train(_field(dec, header, "training", bool, _FORMAT))
    return module


def _read_archive(f, dec: _Decoder) -> tuple:
    """(header, {mode: graph}, state) of the archive ``f``, every part checked."""
    if not isinstance(f, (str, os.PathLike)) and not getattr(f, "seekable", lambda: False)():
        f = io.BytesIO(f.read())  # the zip directory sits at the end: reading it needs seeks
    try:
        archive = zipfile.ZipFile(f, "r")
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise dec.fail(f"it is not a zip archive ({exc})") from None
    with archive:
        if _FORMAT not in archive.namelist():
            hint = "; it is a core.save checkpoint: read it with core.load" if any(
                n.startswith("core_checkpoint/") for n in archive.namelist()) else ""
            raise dec.fail(f"the entry {_FORMAT} is missing{hint}")
        reader = _Archive(archive, dec)
        header = _check_header(dec, reader.json(_FORMAT))
        data = reader.read(_TENSORS)
        try:
            tensors = safetensors.load(data, "cpu")
        except (ValueError, TypeError) as exc:
            raise dec.fail(f"{_TENSORS}: {exc}") from None
        state = _read_state(dec, header, tensors)
        graphs = {mode: _read_graph(dec, reader.json(f"graphs/{mode}.json"), tensors, mode)
                  for mode in header["graphs"]}
    for mode, g in graphs.items():
        missing = [name for name in g.params if name not in state]
        if missing:
            raise dec.fail(f"graph {mode!r} reads parameters {missing} that the archive does not hold")
    return header, graphs, state


def load(f, map_location=None):
    """Read a program written by :func:`save` (a path or a binary file object); never unpickles.

    Returns a :class:`TracedModule` for a saved module — plain ``core.nn.Module`` containers under the saved
    qualified names holding the parameters and buffers, so ``state_dict()`` has the original keys and
    ``train()``/``eval()`` select the saved graph of that mode — or a :class:`TracedFunction` for a function.
    The raw graphs are optimised again on load. ``map_location``: None (the saved devices), a device, or a
    dict mapping saved devices (``"cpu"``, ``"opencl:0"``) or device types to new ones.
    """
    source = repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "the file object"
    dec = _Decoder(source, map_location)
    header, graphs, state = _read_archive(f, dec)
    if header["kind"] == "module":
        return _build_module(dec, header, graphs, state)
    traced = TracedFunction(graphs["function"], state, None, False, header["optimize"])
    traced.__name__ = header["name"]
    return traced
