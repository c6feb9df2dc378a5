"""The third-party author's path, end to end: docs/writing-a-backend.md is examples/toy_backend, and that package,
pip-installed into a fresh virtual environment beside another third-party backend, works as the tutorial says.

The venv sees the active environment's packages (core included) and gets its plugins from that env's pip,
offline, as tests/test_plugins.py does; every check runs in a subprocess of the venv's Python.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from venv_support import make_venv

from core.backends.api import PLUGIN_API_VERSION, get_operator

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "toy_backend"
TUTORIAL = ROOT / "docs" / "writing-a-backend.md"
_BUILD_ARTEFACTS = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", ".pytest_cache")


# -- the tutorial is the example ------------------------------------------------------------------------

def _tutorial_files() -> dict:
    """``{path: text}`` from the tutorial's code blocks marked ``file=PATH``, blocks of one file joined in order."""
    blocks: dict = {}
    for path, body in re.findall(r"^```\w+ file=(\S+)\n(.*?)^```$", TUTORIAL.read_text(), re.S | re.M):
        blocks.setdefault(path, []).append(body)
    return {path: "\n\n".join(bodies) for path, bodies in blocks.items()}


def _example_files() -> dict:
    """``{path: text}`` of examples/toy_backend's sources (build and cache folders left out)."""
    return {p.relative_to(EXAMPLE).as_posix(): p.read_text() for p in sorted(EXAMPLE.rglob("*"))
            if p.is_file() and not any(_is_artefact(part) for part in p.relative_to(EXAMPLE).parts)}


def _is_artefact(name: str) -> bool:
    return name.endswith(".egg-info") or name in ("__pycache__", "build", ".pytest_cache")


def test_tutorial_code_blocks_are_exactly_the_example_files():
    tutorial, example = _tutorial_files(), _example_files()
    assert sorted(tutorial) == sorted(example), "the tutorial and examples/toy_backend list different files"
    for path, text in example.items():
        assert tutorial[path] == text, f"docs/writing-a-backend.md's blocks of {path} differ from the file"


def test_the_example_has_the_one_backend_shape():
    """docs/writing-a-backend.md teaches the shape every backend has (plugin.py, runtime.py, kernels/<family>.py)."""
    project = (EXAMPLE / "pyproject.toml").read_text()
    assert 'toy = "toy_backend.plugin"' in project
    plugin = (EXAMPLE / "toy_backend" / "plugin.py").read_text()
    assert f"CORE_PLUGIN_API = {PLUGIN_API_VERSION}" in plugin
    assert "@hookimpl" not in (EXAMPLE / "toy_backend" / "__init__.py").read_text()
    for path in (EXAMPLE / "toy_backend" / "kernels").glob("*.py"):
        assert path.name == "__init__.py" or "\ndef kernels(ctx):" in path.read_text(), path


def test_tutorial_links_the_contracts_and_the_example_imports_only_the_plugin_api():
    text = TUTORIAL.read_text()
    assert "(ops.md)" in text and "(hooks.md)" in text
    ops = (ROOT / "docs" / "ops.md").read_text()
    for name, family in _toy_kernel_families().items():  # documented primitives (and _to_copy's kernel, an op
        # every device can run that a backend may serve itself), each in its core/ops family
        assert f"| `{name}` | primitive |" in ops or f"| `{name}` | device-agnostic |" in ops, name
        assert get_operator(name).declared_in == f"core.ops.{family}", (name, family)
    for path, source in _example_files().items():
        if path.startswith("toy_backend/"):
            imports = set(re.findall(r"^\s*(?:from|import) (core[\w.]*)", source, re.M))
            assert imports <= {"core.backends.api"}, f"{path} imports {imports}"


@functools.cache
def _toy_kernel_families() -> dict:
    """``{op name: family}`` of the toy's kernel tables, built in a fresh interpreter in the project folder."""
    code = ("import json; from toy_backend.kernels import FAMILIES; from toy_backend.runtime import ToyRuntime; "
            "print(json.dumps({op: f.__name__.rsplit('.', 1)[1] for f in FAMILIES for op in f.kernels(ToyRuntime())}))")
    result = subprocess.run([sys.executable, "-c", code], cwd=EXAMPLE, capture_output=True, text=True, timeout=120,
                            check=False, env=_env(EXAMPLE))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _toy_kernel_names() -> list:
    return sorted(_toy_kernel_families())


# -- pip-installed into a fresh venv, next to core_testdev ------------------------------------------------

def _env(root: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORE_")}
    env.update(XDG_CONFIG_HOME=str(root / "xdg"), PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1",
               **extra)
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """(python, project folder): a venv with the toy backend installed editable, core_testdev and core_broken."""
    root = tmp_path_factory.mktemp("toy_venv")
    project = root / "toy_backend"
    shutil.copytree(EXAMPLE, project, ignore=_BUILD_ARTEFACTS)  # pip -e writes toy_backend.egg-info here
    for fixture in ("core_testdev", "core_broken"):  # another device type, and a plugin that fails to import
        shutil.copytree(ROOT / "tests" / "fixtures" / fixture, root / fixture, ignore=_BUILD_ARTEFACTS)
    python = make_venv(root / "venv")
    # the tutorial's `pip install -e .`, with the active env's pip and setuptools, offline
    install = subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                              "-e", str(project), str(root / "core_testdev"), str(root / "core_broken")],
                             capture_output=True, text=True, timeout=300, env=_env(root), check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    return python, project


def _run(venv, *args, check: bool = True, **env) -> subprocess.CompletedProcess:
    """Run the venv's Python in the project folder (as the tutorial does); assert success when ``check``."""
    python, project = venv
    result = subprocess.run([python, *args], cwd=project, env=_env(project.parent, **env), capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0 or not check, result.stdout + result.stderr
    return result


def test_info_lists_the_toy_backend_with_its_op_coverage(venv):
    lines = _run(venv, "-m", "core", "info").stdout.splitlines()
    row = next(line for line in lines if line.split()[:3] == ["toy", "toy", "toy"])  # name, device, plugin
    assert "0.1.0" in row and "loaded" in row
    assert any(line.split()[:2] == ["toy", "1"] and "Toy device (host memory)" in line for line in lines)
    coverage = next(line for line in lines if line.split()[:1] == ["toy"] and "primitives" in line).split()
    implemented, total = map(int, coverage[1].split("/"))
    assert implemented == len([name for name in _toy_kernel_names() if get_operator(name).primitive])
    lacks = next(line for line in lines if line.strip().startswith("toy lacks"))
    assert f"toy lacks {total - implemented} primitive(s)" in lacks
    # several third-party device types at once, and a broken plugin beside them
    assert any(line.split()[:3] == ["testdev", "testdev", "testdev"] and "loaded" in line for line in lines)
    assert any("broken" in line and "core_broken_missing_sdk" in line for line in lines)
    assert any(line.startswith("CPU fallbacks:") for line in lines)


def _losses(result) -> list:
    line = next(line for line in result.stdout.splitlines() if line.startswith("losses:"))
    return [float(v) for v in line.split()[1:]]


def test_the_mlp_trains_on_toy_with_the_losses_of_cpu(venv):
    toy = _run(venv, "train_mlp.py", "toy")
    cpu = _run(venv, "train_mlp.py", "cpu")
    assert len(_losses(toy)) == 5 and _losses(toy)[-1] < _losses(toy)[0]
    assert _losses(toy) == pytest.approx(_losses(cpu), rel=1e-5)
    fallbacks = ast.literal_eval(toy.stdout.split("CPU fallbacks:", 1)[1].strip())  # printed as a dict
    # counted per call: every op the 5 steps send to the CPU ran a whole number of times per step
    assert fallbacks and all(device == "toy" and count > 0 and count % 5 == 0
                             for (op, device), count in fallbacks.items())
    assert not set(op for op, _ in fallbacks) & set(_toy_kernel_names())
    for op in fallbacks:  # one warning per op, naming it
        assert toy.stderr.count(f"{op[0]}(): the backend of device 'toy:0' has no kernel for this op") == 1
    assert "CPU fallbacks: {}" in cpu.stdout


def test_without_the_fallback_a_missing_kernel_is_an_error_naming_op_device_and_implementers(venv):
    result = _run(venv, "train_mlp.py", "toy", check=False, CORE_FALLBACK="0")
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert re.match(r"NotImplementedError: \w+\(\): the backend of device type 'toy' has no kernel for this op and "
                    r"the CPU fallback is disabled .*backends with a kernel: .*\(cpu\)", last), last


def test_conformance_suite_runs_on_toy_through_the_pytest_option(venv):
    result = _run(venv, "-m", "pytest", "--core-backend", "toy", "tests/", "-v", "-p", "no:cacheprovider")
    assert "test_backend_conforms[toy] PASSED" in result.stdout
    assert "1 passed" in result.stdout and "[cpu]" not in result.stdout


def test_several_third_party_device_types_in_one_process(venv):
    code = """if True:
        import core
        from core.plugins.manager import get_manager
        from core.testing import available_devices
        a = core.arange(6, dtype=core.float32).view(2, 3).to("toy")
        b = a.to("testdev:1") * 2
        c = (b.to("toy") + a).sum(1)
        assert (a.device.type, b.device.type, c.device.type) == ("toy", "testdev", "toy")
        assert c.cpu().tolist() == [9.0, 36.0], c
        assert {"cpu", "toy", "testdev"} <= set(available_devices())
        assert "broken" in get_manager().failed_plugins
        import warnings
        from core import info
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert core.sin(a).device.type == "toy"  # toy has no sin: the CPU fallback, counted
        lines = info.render(info.collect()).splitlines()
        assert lines[lines.index("CPU fallbacks:") + 1].split() == ["sin", "toy", "1", "call(s)"], lines
        print("ok")
    """
    assert _run(venv, "-c", code).stdout.strip() == "ok"
