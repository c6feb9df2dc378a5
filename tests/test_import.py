"""``import core`` stays light, and every public subpackage is an attribute right after it, as in PyTorch
(``import torch; torch.jit.trace``): the heavy ones (jit, onnx, ...) are imported on first attribute access.

Each check runs in a fresh interpreter: the test session has long imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# torch's names, then core's own public packages (the backend kit, `python -m core info`, configuration).
PUBLIC_SUBPACKAGES = ("autograd", "backends", "distributions", "func", "jit", "library", "linalg", "nn", "onnx",
                      "optim", "optim.swa_utils", "serialization", "sparse", "special", "testing", "utils",
                      "utils.data", "utils.checkpoint", "utils.hooks", "utils.safetensors", "codegen", "config",
                      "dispatch", "info", "plugins", "backends.api", "profiler", "autograd.profiler", "distributed",
                      "distributed.optim", "nn.parallel", "amp", "compiler", "_dynamo")


def _fresh(code: str):
    """What ``code`` (which ends by printing one JSON value) prints in a new interpreter, after ``import core``."""
    done = subprocess.run([sys.executable, "-c", "import json, sys\nimport core\n" + code], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_import_core_does_not_import_jit_or_onnx():
    loaded = _fresh("print(json.dumps(sorted(m for m in sys.modules if m.startswith('core.'))))")
    assert "core.jit" not in loaded and "core.onnx" not in loaded
    assert not [m for m in loaded if m.startswith(("core.jit.", "core.onnx."))]


def test_jit_onnx_and_data_are_attributes_right_after_import_core():
    found = _fresh("""
before = {m: m in sys.modules for m in ("core.jit", "core.onnx")}
trace, export, loader = core.jit.trace, core.onnx.export, core.utils.data.DataLoader
print(json.dumps({"before": before, "trace": callable(trace), "export": callable(export),
                  "loader": loader.__name__, "jit_is_module": core.jit is sys.modules["core.jit"]}))
""")
    assert found == {"before": {"core.jit": False, "core.onnx": False}, "trace": True, "export": True,
                     "loader": "DataLoader", "jit_is_module": True}


def test_every_public_subpackage_is_an_attribute_and_listed_by_dir():
    found = _fresh(f"""
import importlib
names = {PUBLIC_SUBPACKAGES!r}
listed = set(dir(core))
result = {{}}
for name in names:
    obj = core
    for part in name.split("."):
        obj = getattr(obj, part)
    result[name] = [obj is importlib.import_module("core." + name), name.split(".")[0] in listed]
result["testing.conformance"] = [core.testing.conformance.OP_DB is not None, True]
print(json.dumps(result))
""")
    assert found == {name: [True, True] for name in (*PUBLIC_SUBPACKAGES, "testing.conformance")}


def test_device_modules_and_unknown_names_still_behave():
    found = _fresh("""
try:
    core.no_such_thing
    missing = None
except AttributeError as exc:
    missing = str(exc)
print(json.dumps({"cuda": type(core.cuda).__name__, "opencl": core.opencl.device_type, "missing": missing,
                  "cuda_listed": "cuda" in dir(core)}))
""")
    assert found == {"cuda": "DeviceModule", "opencl": "opencl", "missing": "module 'core' has no attribute "
                     "'no_such_thing'", "cuda_listed": True}


@pytest.mark.parametrize("name", ["jit", "onnx", "testing"])
def test_a_lazy_subpackage_imported_directly_is_the_same_attribute(name):
    import importlib

    import core

    assert getattr(core, name) is importlib.import_module(f"core.{name}")
