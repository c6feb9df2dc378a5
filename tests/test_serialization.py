"""core.save / core.load (a zip of JSON + raw blobs; other objects pickled, loaded weights-only by default),
atomic writes, and core.utils.safetensors."""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import core
from core.serialization import CheckpointError, WeightsOnlyUnpicklingError, load, save
from core.utils.atomic import atomic_write
from core.testing import assert_close, sample_array
from core.utils import safetensors as st

DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool",
          "complex64", "complex128"]
SHAPES = [(), (0,), (3,), (2, 3), (2, 0, 4), (2, 3, 4)]


def _round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer, **load_kwargs)


def _checkpoint_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    save(obj, buffer)
    return buffer.getvalue()


def _rewrite(data: bytes, edit_header=None, edit_entries=None) -> bytes:
    """A checkpoint with its header (and, optionally, its entries) changed, written as a fresh zip."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    header = json.loads(entries["core_checkpoint/header.json"])
    if edit_header:
        edit_header(header)
    entries["core_checkpoint/header.json"] = json.dumps(header).encode()
    if edit_entries:
        edit_entries(entries)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, blob in entries.items():
            archive.writestr(name, blob)
    return out.getvalue()


def _assert_same_tensor(actual, expected):
    assert isinstance(actual, core.Tensor)
    assert actual.shape == expected.shape and actual.dtype is expected.dtype
    assert actual.device == expected.device
    assert_close(actual, expected, rtol=0, atol=0)


# -- tensors of every dtype, shape and layout ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_round_trip_every_dtype_and_shape(device, dtype):
    tensors = [core.tensor(sample_array(shape, dtype, seed=i), device=device) for i, shape in enumerate(SHAPES)]
    loaded = _round_trip(tensors)
    assert isinstance(loaded, list) and len(loaded) == len(tensors)
    for actual, expected in zip(loaded, tensors):
        _assert_same_tensor(actual, expected)
        assert actual.is_contiguous() and not actual.requires_grad


def test_float_specials_survive_bit_exactly(device):
    values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -1.5], dtype=np.float32)
    t = core.tensor(values, device=device)
    loaded = _round_trip(t)
    assert loaded.cpu().numpy().tobytes() == values.tobytes()


@pytest.mark.parametrize("layout", ["transposed", "stepped", "expanded", "offset", "diagonal"])
def test_non_contiguous_views_are_saved_as_their_values(device, layout):
    base = core.arange(24, dtype=core.float32, device=device).reshape(4, 6)
    view = {"transposed": lambda b: b.t(), "stepped": lambda b: b[::2, 1::3],
            "expanded": lambda b: b[0].unsqueeze(0).expand(5, 6), "offset": lambda b: b[2:, 3:],
            "diagonal": lambda b: b.diagonal()}[layout](base)
    loaded = _round_trip(view)
    _assert_same_tensor(loaded, view)
    assert loaded.is_contiguous() and loaded.storage_offset() == 0
    assert loaded.untyped_storage().nbytes == view.numel() * 4, "only the view's values are written"


def test_round_trip_to_a_path_str_and_pathlike(tmp_path, device):
    t = core.tensor(sample_array((3, 4), "float64"), device=device)
    for target in (tmp_path / "a.pt", str(tmp_path / "b.pt")):
        save(t, target)
        _assert_same_tensor(load(target), t)


def test_loaded_tensors_own_writable_memory():
    t = core.arange(4.0)
    loaded = _round_trip(t)
    loaded[0] = 10.0
    assert t[0].item() == 0.0 and loaded[0].item() == 10.0


def test_requires_grad_and_parameters(device):
    leaf = core.ones(2, 3, device=device, requires_grad=True)
    non_leaf = leaf * 2
    parameter = core.nn.Parameter(core.randn(3, device=device))
    frozen = core.nn.Parameter(core.randn(3, device=device), requires_grad=False)
    loaded = _round_trip({"leaf": leaf, "non_leaf": non_leaf, "p": parameter, "frozen": frozen,
                          "plain": leaf.detach()})
    assert loaded["leaf"].requires_grad and loaded["leaf"].is_leaf
    assert loaded["non_leaf"].requires_grad and loaded["non_leaf"].is_leaf  # as torch.load gives it back
    assert type(loaded["p"]) is core.nn.Parameter and loaded["p"].requires_grad
    assert type(loaded["frozen"]) is core.nn.Parameter and not loaded["frozen"].requires_grad
    assert type(loaded["plain"]) is core.Tensor and not loaded["plain"].requires_grad
    _assert_same_tensor(loaded["p"].detach(), parameter.detach())
    _assert_same_tensor(loaded["non_leaf"].detach(), non_leaf.detach())


def test_same_tensor_object_comes_back_as_one_object_and_views_as_separate_values():
    t = core.arange(6.0).reshape(2, 3)
    view = t[1]
    loaded = _round_trip({"a": t, "b": [t, (t, view)], "view": view})
    assert loaded["a"] is loaded["b"][0] is loaded["b"][1][0]
    assert loaded["view"] is loaded["b"][1][1] and loaded["view"] is not loaded["a"]
    assert_close(loaded["view"], np.array([3.0, 4.0, 5.0], dtype=np.float32))
    with zipfile.ZipFile(io.BytesIO(_checkpoint_bytes({"a": t, "b": t}))) as archive:
        assert len([n for n in archive.namelist() if "/data/" in n]) == 1, "a tensor reached twice is written once"


def test_meta_tensors_keep_shape_and_dtype_without_data():
    t = core.empty(2, 3, dtype=core.float16, device="meta")
    for loaded in (_round_trip(t), _round_trip(t, map_location="cpu")):  # PyTorch keeps meta tensors on meta too
        assert loaded.device.type == "meta" and loaded.shape == (2, 3) and loaded.dtype is core.float16


# -- Python objects and state dicts ----------------------------------------------------------------------------
def test_nested_python_objects_round_trip_exactly():
    obj = {
        "none": None, "bools": [True, False], "ints": [0, -3, 2**80], "floats": [1.5, -0.0, float("inf"),
                                                                                 float("-inf"), 1e-300],
        "complex": 1 - 2.5j, "str": "héllo \u2603 \"quoted\"", "bytes": b"\x00\xffdata", "tuple": (1, ("a", None)),
        "empty": [{}, [], (), ""], 3: "int key", (1, "x"): "tuple key", 2.5: "float key", None: "none key",
        "size": core.Size([2, 0, 3]), "dtypes": [core.bfloat16, core.int64, core.bool], "device": core.device("cpu"),
        "cuda_device": core.device("cuda", 1),
    }
    loaded = _round_trip(obj)
    assert loaded == obj
    assert type(loaded["tuple"]) is tuple and type(loaded["tuple"][1]) is tuple
    assert type(loaded["size"]) is core.Size and loaded["size"] == core.Size([2, 0, 3])
    assert loaded["dtypes"][0] is core.bfloat16 and loaded["device"] == core.device("cpu")
    assert str(loaded["cuda_device"]) == "cuda:1"
    assert math.isnan(_round_trip(float("nan"))) and math.copysign(1, _round_trip(-0.0)) == -1


def test_numpy_scalars_come_back_as_python_numbers():
    loaded = _round_trip([np.int64(3), np.float32(0.5), np.bool_(True), np.complex64(1 - 2j)])
    assert loaded == [3, 0.5, True, 1 - 2j] and [type(v) for v in loaded] == [int, float, bool, complex]


def test_ordered_dict_keeps_type_order_and_metadata():
    sd = OrderedDict([("z.weight", core.ones(2)), ("a.bias", core.zeros(1))])
    sd._metadata = OrderedDict([("", {"version": 1}), ("z", {"version": 2})])
    loaded = _round_trip(sd)
    assert type(loaded) is OrderedDict and list(loaded) == ["z.weight", "a.bias"]
    assert loaded._metadata == sd._metadata
    assert type(_round_trip({"b": 1, "a": 2})) is dict and list(_round_trip({"b": 1, "a": 2})) == ["b", "a"]


def test_optimizer_style_state_dict_round_trips():
    state = {"state": {0: {"step": core.tensor(3.0), "exp_avg": core.randn(2, 3), "momentum_buffer": None},
                       1: {"step": 7, "exp_avg_sq": core.rand(4, dtype=core.float64)}},
             "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0,
                               "amsgrad": False, "foreach": None, "max_norm": float("inf"), "params": [0, 1]}]}
    loaded = _round_trip(state)
    assert set(loaded["state"]) == {0, 1} and loaded["param_groups"][0]["betas"] == (0.9, 0.999)
    assert loaded["param_groups"][0]["max_norm"] == float("inf") and loaded["param_groups"][0]["params"] == [0, 1]
    assert loaded["state"][0]["momentum_buffer"] is None and loaded["state"][1]["step"] == 7
    _assert_same_tensor(loaded["state"][1]["exp_avg_sq"], state["state"][1]["exp_avg_sq"])


def test_real_optimizer_state_dict_reloads_into_a_fresh_optimizer():
    adam = getattr(core.optim, "Adam", None)
    if adam is None:
        pytest.skip("core.optim.Adam is not available")
    core.manual_seed(0)
    model = core.nn.Linear(3, 2)
    optimizer = adam(model.parameters(), lr=0.1)
    model(core.randn(4, 3)).sum().backward()
    optimizer.step()
    fresh = adam(model.parameters(), lr=0.5)
    fresh.load_state_dict(_round_trip(optimizer.state_dict()))
    assert fresh.param_groups[0]["lr"] == 0.1
    for key in ("exp_avg", "exp_avg_sq"):
        assert_close(fresh.state[model.weight][key], optimizer.state[model.weight][key])


def test_module_state_dict_loads_into_a_fresh_module(tmp_path, device):
    core.manual_seed(0)
    model = core.nn.Sequential(core.nn.Linear(4, 8), core.nn.Linear(8, 3)).to(device)
    save(model.state_dict(), tmp_path / "model.pt")
    core.manual_seed(1)
    fresh = core.nn.Sequential(core.nn.Linear(4, 8), core.nn.Linear(8, 3)).to(device)
    x = core.randn(5, 4, device=device)
    assert not core.allclose(fresh(x), model(x))
    state = load(tmp_path / "model.pt", weights_only=True)
    assert type(state) is OrderedDict and list(state) == list(model.state_dict())
    fresh.load_state_dict(state)
    assert_close(fresh(x), model(x), rtol=0, atol=0)


def test_unpicklable_objects_are_refused_clearly(tmp_path):
    target = tmp_path / "m.pt"
    with pytest.raises(TypeError, match=r"cannot save obj\['fn'\] of type builtins.function: it cannot be pickled"):
        save({"fn": lambda x: x}, target)
    assert not target.exists(), "a refused object leaves no half-written file"
    cycle = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="reference cycle"):
        save(cycle, io.BytesIO())
    with pytest.raises(TypeError, match="path or a binary file object"):
        save(core.ones(1), 42)


def test_saving_is_deterministic_and_the_header_is_tagged_json():
    obj = {"w": core.arange(3.0), "n": 1}
    data = _checkpoint_bytes(obj)
    assert data == _checkpoint_bytes(obj)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        header = json.loads(archive.read("core_checkpoint/header.json"))
        assert archive.read("core_checkpoint/data/0") == np.arange(3, dtype="<f4").tobytes()
    assert header["format"] == "core.checkpoint" and header["version"] == 1 and header["byteorder"] == "little"
    assert header["root"]["type"] == "dict"
    assert header["tensors"] == [{"kind": "tensor", "dtype": "float32", "shape": [3], "device": "cpu",
                                  "requires_grad": False, "data": "data/0"}]


def test_file_objects_at_an_offset_and_non_seekable_streams():
    data = _checkpoint_bytes([core.ones(2)])
    prefixed = io.BytesIO(b"leading bytes" + data)
    prefixed.seek(len(b"leading bytes"))
    assert_close(load(prefixed)[0], np.ones(2, np.float32))

    class ReadOnlyStream:
        def __init__(self, payload):
            self._inner = io.BytesIO(payload)

        def read(self, n=-1):
            return self._inner.read(n)

        def seekable(self):
            return False

    assert_close(load(ReadOnlyStream(data))[0], np.ones(2, np.float32))

    class WriteOnlyStream:
        def __init__(self):
            self.chunks = []

        def write(self, b):
            self.chunks.append(bytes(b))
            return len(b)

        def flush(self):
            pass

    sink = WriteOnlyStream()
    save({"x": core.arange(5)}, sink)
    assert_close(load(io.BytesIO(b"".join(sink.chunks)))["x"], np.arange(5))


# -- safety: nothing is ever unpickled -------------------------------------------------------------------------
class _Exploit:
    def __reduce__(self):
        return (os.system, ("echo pwned > marker",))


@pytest.mark.parametrize("weights_only", [True, False, None])
def test_a_malicious_pickle_is_refused_and_never_run(tmp_path, monkeypatch, weights_only):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps(_Exploit()))
    with pytest.raises(CheckpointError, match="not a core checkpoint.*refusing to unpickle"):
        load(path, weights_only=weights_only)
    with pytest.raises(RuntimeError, match="refusing to unpickle"):
        load(io.BytesIO(pickle.dumps(_Exploit(), protocol=0)))
    assert not (tmp_path / "marker").exists()


def test_a_torch_style_zip_with_a_malicious_data_pkl_is_refused_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(_Exploit()))
        archive.writestr("archive/version", "3\n")
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"(?s)Weights only load failed.*Unsupported global: GLOBAL "
                                                     rf"{os.system.__module__}\.system"):
        load(buffer)
    assert not (tmp_path / "marker").exists()


def test_a_malicious_object_node_is_refused_by_default_and_names_its_global(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    buffer = io.BytesIO()
    save({"weights": core.ones(2), "payload": _Exploit()}, buffer)  # pickling runs nothing; loading would
    for weights_only in (None, True):
        buffer.seek(0)
        with pytest.raises(WeightsOnlyUnpicklingError, match=rf"Unsupported global: GLOBAL {os.system.__module__}"
                                                             r"\.system .*add_safe_globals"):
            load(buffer, weights_only=weights_only)
    assert not (tmp_path / "marker").exists()


# -- validation of damaged or foreign files ---------------------------------------------------------------------
def test_every_truncation_gives_a_clear_error():
    data = _checkpoint_bytes({"w": core.randn(4, 4), "step": 3})
    for cut in range(0, len(data), 7):
        with pytest.raises(CheckpointError, match="not a valid core checkpoint"):
            load(io.BytesIO(data[:cut]))


def test_flipped_bytes_in_the_middle_give_a_clear_error():
    data = bytearray(_checkpoint_bytes({"w": core.randn(64), "b": core.zeros(3)}))
    middle = len(data) // 2
    data[middle:middle + 4] = bytes(b ^ 0xFF for b in data[middle:middle + 4])
    with pytest.raises(CheckpointError, match="corrupt"):
        load(io.BytesIO(bytes(data)))


def test_any_single_flipped_byte_is_caught_or_harmless():
    original = {"w": core.arange(6.0).reshape(2, 3), "b": core.tensor([True, False]), "n": [1, "x"]}
    data = _checkpoint_bytes(original)
    caught = 0
    for position in range(len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 0xFF
        try:
            loaded = load(io.BytesIO(bytes(damaged)))
        except CheckpointError:
            caught += 1
            continue
        # an undetected flip only touched bookkeeping zipfile ignores (timestamps, attributes): data is intact
        assert loaded["n"] == [1, "x"]
        _assert_same_tensor(loaded["w"], original["w"])
        _assert_same_tensor(loaded["b"], original["b"])
    assert caught > len(data) // 2


def test_unknown_version_and_format_are_named():
    data = _checkpoint_bytes(core.ones(2))
    with pytest.raises(CheckpointError, match="format version 2.*reads version 1 only; upgrade core"):
        load(io.BytesIO(_rewrite(data, lambda h: h.update(version=2))))
    with pytest.raises(CheckpointError, match="version '1' is not an integer"):
        load(io.BytesIO(_rewrite(data, lambda h: h.update(version="1"))))
    with pytest.raises(CheckpointError, match="does not name the format"):
        load(io.BytesIO(_rewrite(data, lambda h: h.update(format="other"))))


def _tensor_entry(**changes):
    return lambda h: h["tensors"][0].update(changes)


@pytest.mark.parametrize("edit, message", [
    (_tensor_entry(shape=[3]), r"blob size mismatch: tensor 0 \(float32, shape \[3\]\) needs 12 bytes .* holds 8"),
    (_tensor_entry(dtype="float64"), "blob size mismatch"),
    (_tensor_entry(dtype="float128"), "unknown dtype 'float128'"),
    (_tensor_entry(shape=[-2]), "non-negative ints"),
    (_tensor_entry(shape=[True, 2]), "non-negative ints"),
    (_tensor_entry(data="data/7"), "missing from the archive"),
    (_tensor_entry(device="not a device!"), "bad device"),
    (_tensor_entry(kind="module"), "unknown kind 'module'"),
    (_tensor_entry(requires_grad="yes"), "'requires_grad' of a 'tensor entry' node should be bool"),
    (lambda h: h.update(root={"type": "pickle", "value": "x"}), "unknown type tag 'pickle'"),
    (lambda h: h.update(root={"type": "tensor", "index": 5}), "tensor index 5 is out of range"),
    (lambda h: h.update(root={"type": "int", "value": 1.5}), "'value' of a 'int' node should be int"),
    (lambda h: h.update(root={"type": "float", "value": "one"}), "'one' is not a float"),
    (lambda h: h.update(root={"type": "dict", "items": [[{"type": "list", "items": []}, {"type": "none"}]]}),
     "unhashable"),
    (lambda h: h.update(root=[1, 2]), "expected a tagged object node"),
    (lambda h: h.pop("root"), "lacks the 'tensors' list or the 'root' object"),
    (lambda h: h.update(byteorder="big"), "byteorder 'big'"),
])
def test_malformed_headers_are_named(edit, message):
    data = _checkpoint_bytes(core.ones(2))
    with pytest.raises(CheckpointError, match=message):
        load(io.BytesIO(_rewrite(data, edit)))


@pytest.mark.parametrize("depth", [300, 5000])
def test_deeply_nested_headers_are_refused_or_loaded_never_crash(depth):
    root = '{"type":"list","items":[' * depth + '{"type":"none"}' + "]}" * depth
    header = '{"format":"core.checkpoint","version":1,"byteorder":"little","tensors":[],"root":' + root + "}"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("core_checkpoint/header.json", header)
    buffer.seek(0)
    if depth < 400:
        loaded = load(buffer)
        for _ in range(depth):
            loaded = loaded[0]
        assert loaded is None
    else:
        with pytest.raises(CheckpointError, match="not a valid core checkpoint"):
            load(buffer)


def test_malformed_entries_are_named():
    data = _checkpoint_bytes(core.tensor([True, False]))

    def bad_bool(entries):
        entries["core_checkpoint/data/0"] = b"\x01\x07"

    with pytest.raises(CheckpointError, match="bool but holds bytes other than 0 and 1"):
        load(io.BytesIO(_rewrite(data, edit_entries=bad_bool)))

    def not_json(entries):
        entries["core_checkpoint/header.json"] = b"{not json"

    with pytest.raises(CheckpointError, match="header.json is not valid JSON"):
        load(io.BytesIO(_rewrite(data, edit_entries=not_json)))

    def no_header(entries):
        del entries["core_checkpoint/header.json"]

    with pytest.raises(CheckpointError, match="has no core_checkpoint/header.json"):
        load(io.BytesIO(_rewrite(data, edit_entries=no_header)))

    compressed = io.BytesIO()
    with zipfile.ZipFile(compressed, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("core_checkpoint/header.json", json.dumps({"format": "core.checkpoint", "version": 1,
                                                                    "byteorder": "little", "tensors": [],
                                                                    "root": {"type": "none"}}))
    with pytest.raises(CheckpointError, match="compressed"):
        load(io.BytesIO(compressed.getvalue()))


def test_foreign_and_empty_files_are_named(tmp_path):
    with pytest.raises(CheckpointError, match="the file is empty"):
        load(io.BytesIO(b""))
    with pytest.raises(CheckpointError, match="does not start with a zip signature"):
        load(io.BytesIO(b"GIF89a and so on"))
    st.save_file({"w": core.ones(2)}, tmp_path / "w.safetensors")
    with pytest.raises(CheckpointError, match="safetensors file; read it with core.utils.safetensors.load_file"):
        load(tmp_path / "w.safetensors")
    with pytest.raises(TypeError, match="binary mode"):
        load(io.StringIO("text"))
    with pytest.raises(TypeError, match="path or a binary file object"):
        load(3.5)


# -- map_location -------------------------------------------------------------------------------------------------
def _saved_on(location: str) -> bytes:
    """A checkpoint whose tensor claims to come from ``location`` (a device this machine may lack)."""
    return _rewrite(_checkpoint_bytes({"w": core.arange(3.0)}), _tensor_entry(device=location))


def test_map_location_forms_to_the_cpu(device):
    data = _checkpoint_bytes({"w": core.arange(3.0, device=device)})
    expected = np.arange(3, dtype=np.float32)
    unrelated = ({"cuda:0": "cpu"},) if device == "cpu" else ()  # a map that does not name the saved device
    for location in ("cpu", core.device("cpu"), {device: "cpu"}, *unrelated, lambda s, loc: s.cpu()):
        loaded = load(io.BytesIO(data), map_location=location)["w"]
        assert loaded.device.type == "cpu"
        assert_close(loaded, expected)
    assert load(io.BytesIO(data))["w"].device.type == device.split(":")[0]


def test_map_location_none_names_an_unavailable_device():
    if "fakedev" in core.testing.available_devices():
        pytest.skip("a fakedev backend is installed")
    with pytest.raises(RuntimeError, match="saved on 'fakedev:0'.*map_location='cpu'"):
        load(io.BytesIO(_saved_on("fakedev:0")))


def test_map_location_dict_and_callable_remap_a_foreign_device():
    data = _saved_on("fakedev:1")
    for mapping in ({"fakedev:1": "cpu"}, {"fakedev": "cpu"}, {"fakedev:1": core.device("cpu")}):
        assert load(io.BytesIO(data), map_location=mapping)["w"].device.type == "cpu"
    seen = []

    def record(storage, location):
        seen.append((storage.device.type, location))
        return storage

    assert_close(load(io.BytesIO(data), map_location=record)["w"], np.arange(3, dtype=np.float32))
    assert seen == [("cpu", "fakedev:1")]
    with pytest.raises(RuntimeError, match="fakedev:1"):
        load(io.BytesIO(data), map_location=lambda storage, location: None)  # None: restore where it was saved
    with pytest.raises(TypeError, match="map_location returned int"):
        load(io.BytesIO(data), map_location=lambda storage, location: 3)
    with pytest.raises(RuntimeError, match="fakedev:1"):
        load(io.BytesIO(data), map_location={"cuda:0": "cpu"})  # no entry for it: restore where it was saved


def test_map_location_keeps_requires_grad_and_parameters():
    data = _checkpoint_bytes({"p": core.nn.Parameter(core.ones(2))})
    loaded = load(io.BytesIO(data), map_location=lambda storage, location: storage)["p"]
    assert type(loaded) is core.nn.Parameter and loaded.requires_grad


# -- safetensors --------------------------------------------------------------------------------------------------
ST_DTYPES = [d for d in DTYPES if d != "complex128"]


@pytest.mark.parametrize("dtype", ST_DTYPES)
def test_safetensors_round_trip_every_dtype(tmp_path, device, dtype):
    tensors = {f"t{i}": core.tensor(sample_array(shape, dtype, seed=i), device=device)
               for i, shape in enumerate(SHAPES)}
    tensors["view"] = tensors["t3"].t()  # a non-contiguous view is written as its values
    st.save_file(tensors, tmp_path / "x.safetensors", metadata={"format": "pt"})
    for loaded in (st.load_file(tmp_path / "x.safetensors", device=device), st.load(st.save(tensors), device)):
        assert set(loaded) == set(tensors)
        for name, t in tensors.items():
            _assert_same_tensor(loaded[name], t)


def test_safetensors_interop_with_the_safetensors_package(tmp_path):
    import ml_dtypes
    import safetensors
    import safetensors.numpy

    arrays = {"f": np.arange(6, dtype=np.float32).reshape(2, 3), "bf": np.arange(4).astype(ml_dtypes.bfloat16),
              "i": np.array([-1, 2], np.int64), "b": np.array([True, False]), "h": np.ones((0, 2), np.float16)}
    safetensors.numpy.save_file(arrays, str(tmp_path / "theirs.safetensors"))
    ours = st.load_file(tmp_path / "theirs.safetensors")
    for name, array in arrays.items():
        assert_close(ours[name], array, rtol=0, atol=0)
    st.save_file(ours, tmp_path / "ours.safetensors", metadata={"who": "core"})
    with safetensors.safe_open(str(tmp_path / "ours.safetensors"), framework="np") as handle:
        assert handle.metadata() == {"who": "core"} and handle.get_slice("bf").get_dtype() == "BF16"
        for name, array in arrays.items():
            theirs = handle.get_tensor(name)
            assert theirs.dtype == array.dtype and np.array_equal(theirs, array)
    assert set(safetensors.numpy.load(st.save({"x": core.ones(2)}))) == {"x"}


def test_safetensors_loaded_tensors_are_writable_and_independent(tmp_path):
    st.save_file({"w": core.zeros(3)}, tmp_path / "w.safetensors")
    for loaded in (st.load_file(tmp_path / "w.safetensors")["w"], st.load(st.save({"w": core.zeros(3)}))["w"]):
        loaded.add_(1)
        assert_close(loaded, np.ones(3, np.float32))
    assert_close(st.load_file(tmp_path / "w.safetensors")["w"], np.zeros(3, np.float32))


def test_safetensors_errors(tmp_path):
    import safetensors.numpy

    with pytest.raises(TypeError, match="dtype complex128"):
        st.save({"c": core.zeros(2, dtype=core.complex128)})
    with pytest.raises(TypeError, match="keys must be str"):
        st.save({1: core.zeros(2)})
    with pytest.raises(TypeError, match="must be a Tensor"):
        st.save({"x": [1.0]})
    with pytest.raises(TypeError, match="metadata must be a dict of str -> str"):
        st.save({"x": core.zeros(1)}, metadata={"n": 1})
    with pytest.raises(ValueError, match="meta tensor"):
        st.save({"x": core.empty(2, device="meta")})
    safetensors.numpy.save_file({"u": np.zeros(2, np.uint16)}, str(tmp_path / "u.safetensors"))
    with pytest.raises(TypeError, match="'u' has safetensors dtype U16"):
        st.load_file(tmp_path / "u.safetensors")
    with pytest.raises(TypeError, match="'u' has safetensors dtype U16"):
        st.load((tmp_path / "u.safetensors").read_bytes())
    (tmp_path / "junk.safetensors").write_bytes(b"junk" * 10)
    with pytest.raises(ValueError, match="not a valid safetensors file"):
        st.load_file(tmp_path / "junk.safetensors")
    with pytest.raises(ValueError, match="not a valid safetensors file"):
        st.load(st.save({"x": core.ones(4)})[:-3])


def test_safetensors_interop_with_torch(tmp_path):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    theirs = {"w": torch.randn(3, 4), "bf": torch.randn(5).to(torch.bfloat16), "i": torch.arange(4)}
    safetensors_torch.save_file(theirs, str(tmp_path / "t.safetensors"))
    ours = st.load_file(tmp_path / "t.safetensors")
    for name, t in theirs.items():
        assert_close(ours[name].float(), t.float().numpy(), rtol=0, atol=0)
    st.save_file(ours, tmp_path / "o.safetensors")
    back = safetensors_torch.load_file(str(tmp_path / "o.safetensors"))
    for name, t in theirs.items():
        assert back[name].dtype == t.dtype and torch.equal(back[name], t)


# -- PyTorch 2.6+ semantics: any object saves, the default load is weights-only --------------------------------
class _Config:
    def __init__(self, lr, weights):
        self.lr, self.weights = lr, weights


def test_numpy_arrays_and_plain_data_round_trip_weights_only():
    arrays = {"f": np.arange(6, dtype=np.float32).reshape(2, 3).T, "u": np.arange(4, dtype=np.uint16),
              "b": np.array([True, False]), "c": np.array([1 + 2j]), "empty": np.zeros((0, 3))}
    loaded = _round_trip({"arrays": arrays, "epoch": 3, "names": ["a", "b"]})
    for key, array in arrays.items():
        assert loaded["arrays"][key].dtype == array.dtype and np.array_equal(loaded["arrays"][key], array)
        assert loaded["arrays"][key].flags.writeable
    assert loaded["epoch"] == 3 and loaded["names"] == ["a", "b"]
    assert np.array_equal(_round_trip(np.arange(3.0)), np.arange(3.0))


def test_a_whole_module_saves_and_loads_only_on_opt_in(tmp_path):
    model = core.nn.Sequential(core.nn.Linear(2, 3), core.nn.ReLU())
    save(model, tmp_path / "model.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL core\.nn\.modules\.activation"
                                                     r"\.ReLU, GLOBAL core\.nn\.modules\.container\.Sequential, "
                                                     r"GLOBAL core\.nn\.modules\.linear\.Linear"):
        load(tmp_path / "model.pt")
    x = core.ones(1, 2)
    loaded = load(tmp_path / "model.pt", weights_only=False)
    assert_close(loaded(x), model(x), rtol=0, atol=0)
    assert isinstance(loaded[0].weight, core.nn.Parameter)
    with core.serialization.safe_globals([core.nn.Sequential, core.nn.Linear, core.nn.ReLU]):
        assert_close(load(tmp_path / "model.pt")(x), model(x), rtol=0, atol=0)
    with pytest.raises(pickle.UnpicklingError):
        load(tmp_path / "model.pt")  # the context ended


def test_add_get_and_clear_safe_globals():
    buffer = io.BytesIO()
    save({"config": _Config(0.1, core.ones(2))}, buffer)
    try:
        core.serialization.add_safe_globals([_Config])
        assert _Config in core.serialization.get_safe_globals()
        buffer.seek(0)
        config = load(buffer)["config"]
        assert config.lr == 0.1 and config.weights.tolist() == [1.0, 1.0]
    finally:
        core.serialization.clear_safe_globals()
    assert core.serialization.get_safe_globals() == []
    buffer.seek(0)
    with pytest.raises(WeightsOnlyUnpicklingError, match="test_serialization._Config"):
        load(buffer)


def test_tensors_inside_a_pickled_object_are_shared_with_the_rest():
    weight = core.arange(4.0)
    buffer = io.BytesIO()
    save({"w": weight, "config": _Config(1, weight)}, buffer)
    buffer.seek(0)
    loaded = load(buffer, weights_only=False)
    assert loaded["config"].weights is loaded["w"]


def test_torch_files_load_weights_only_and_state_dicts_round_trip(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(3, 2)
    state = {"model": model.state_dict(), "step": 7, "t": torch.arange(6.0).reshape(2, 3).t(),
             "half": torch.ones(2, dtype=torch.bfloat16), "p": torch.nn.Parameter(torch.zeros(2))}
    torch.save(state, tmp_path / "t.pt")
    loaded = load(tmp_path / "t.pt")
    assert type(loaded["model"]) is OrderedDict and list(loaded["model"]) == ["weight", "bias"]
    assert np.array_equal(loaded["model"]["weight"].numpy(), model.weight.detach().numpy())
    assert loaded["t"].tolist() == state["t"].tolist() and loaded["step"] == 7
    assert loaded["half"].dtype == core.bfloat16 and isinstance(loaded["p"], core.nn.Parameter)


# -- atomic writes ------------------------------------------------------------------------------------------------
def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as handle:
            handle.write(b"half")
            raise RuntimeError("die")
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["f.bin"]
    with atomic_write(str(target)) as handle:
        handle.write(b"new")
    assert target.read_bytes() == b"new" and os.listdir(tmp_path) == ["f.bin"]


_SAVER = """
import sys, core
core.manual_seed(0)
big = core.randn(4_000_000)  # 16 MB: long enough a write that a kill lands inside one
path, flag = sys.argv[1], sys.argv[2]
core.save({"step": 0, "w": big}, path)
open(flag, "w").close()
step = 1
while True:
    core.save({"step": step, "w": big}, path)
    step += 1
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_process_killed_mid_save_leaves_the_previous_checkpoint(tmp_path):
    path, flag = tmp_path / "ckpt.pt", tmp_path / "ready"
    saver = subprocess.Popen([sys.executable, "-c", _SAVER, str(path), str(flag)])
    try:
        while not flag.exists():  # the first checkpoint is complete
            with pytest.raises(subprocess.TimeoutExpired):
                saver.wait(timeout=0.05)
        temporaries: list = []
        while not temporaries:  # a later save is writing its temporary file: kill it there
            temporaries = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        saver.send_signal(signal.SIGKILL)
        assert saver.wait() == -signal.SIGKILL
    finally:
        if saver.poll() is None:
            saver.kill()
            saver.wait()
    loaded = load(path)  # a complete earlier checkpoint, never the half-written one
    core.manual_seed(0)
    assert isinstance(loaded["step"], int) and loaded["w"].tolist() == core.randn(4_000_000).tolist()
