"""core/_hot.py: the hot modules compiled with Cython run only while they match their sources, say so in
``core info``, and give the same results as their sources (the reference-count rule of gradient stealing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import core
from core import _hot
from core.info import collect, render

ROOT = Path(core.__file__).resolve().parent.parent


def _run(code: str, **env) -> str:
    """stdout of ``code`` in a fresh interpreter (the guard acts at ``import core``)."""
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            env={**os.environ, **env}, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_hot_module_reports_how_it_runs():
    states = _hot.status(load=True)
    assert set(_hot.HOT_MODULES) <= set(states)  # and the hot modules of plugins that declare some
    assert set(states.values()) <= {"compiled", "stale", "source"}
    assert collect()["hot_modules"] == states
    line = next(line for line in render(collect()).splitlines() if line.strip().startswith("compiled"))
    assert f"{sum(s == 'compiled' for s in states.values())} of {len(states)} hot modules" in line


def test_hot_modules_load_what_their_state_says():
    files = json.loads(_run("""
        import importlib, json
        import core
        from core import _hot
        print(json.dumps({name: importlib.import_module(name).__file__ for name in _hot.status(load=True)}))
        """))
    for name, state in _hot.status(load=True).items():
        assert files[name].endswith(".py") == (state != "compiled"), (name, state, files[name])


def test_pure_python_imports_every_hot_module_from_source():
    files = json.loads(_run("""
        import importlib, json
        import core
        from core import _hot
        print(json.dumps([importlib.import_module(name).__file__ for name in _hot.status(load=True)]))
        """, CORE_PURE_PYTHON="1"))
    assert all(f.endswith(".py") for f in files)


def test_a_module_changed_since_its_build_runs_from_source(tmp_path):
    if not any(state == "compiled" for state in _hot.CORE.status().values()):
        pytest.skip("no hot module is compiled here (python -m core compile: needs Cython and a C compiler)")
    # the guard of a checkout whose record names other sources: every extension is stale
    record = tmp_path / "record.json"
    record.write_text(json.dumps({key: "0" * 64 for key in json.loads(_hot.CORE.manifest.read_text())}))
    files = json.loads(_run(f"""
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location("hot_probe", {str(ROOT / "core" / "_hot.py")!r})
        hot = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hot)
        hot.CORE.manifest = hot.Path({str(record)!r})
        states = hot.CORE.status()
        hot.CORE.install_guard()
        import core
        print(json.dumps([states, [importlib.import_module(name).__file__ for name in hot.HOT_MODULES]]))
        """))
    states, paths = files
    assert "compiled" not in states.values()
    assert all(p.endswith(".py") for p in paths)


@pytest.mark.parametrize("pure", ["0", "1"])
def test_gradient_stealing_counts_references_alike_compiled_or_not(pure):
    """The engine takes an incoming gradient as ``.grad`` only when nothing else holds it (PyTorch's rule, by
    reference count, which compiled code counts differently: core/autograd/accumulate.py)."""
    out = _run("""
        import core
        from core.autograd import enforce_grad_layout_policy
        p = core.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
        with enforce_grad_layout_policy(False):
            (p * 2).sum().backward()  # a fresh row-major gradient nobody else holds: taken as it is
        stolen = p.grad.stride() == (6, 3, 1)
        q = core.ones(3, requires_grad=True)
        g = core.full((3,), 2.0)
        q.backward(g)  # the caller still holds g: .grad is a copy
        copied = q.grad is not g and q.grad.data_ptr() != g.data_ptr()
        g.add_(1.0)
        print(stolen, copied, q.grad.tolist())
        """, CORE_PURE_PYTHON=pure)
    assert out.split() == ["True", "True", "[2.0,", "2.0,", "2.0]"]


def test_a_build_compiles_only_the_modules_named(tmp_path):
    """``python -m core compile`` rebuilds the modules not running compiled, not their whole set."""
    pytest.importorskip("Cython", reason="the accel extra (Cython) is not installed")
    package = tmp_path / "hot_probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text("def twice(x):\n    return 2 * x\n")
    (package / "two.py").write_text("def thrice(x):\n    return 3 * x\n")
    hot = _hot.HotSet("hot_probe_pkg", tmp_path, ("hot_probe_pkg.one", "hot_probe_pkg.two"))
    try:
        hot.build(jobs=1, names=("hot_probe_pkg.one",))
    except Exception as exc:  # noqa: BLE001 - no C compiler here: the setup would say so and run the sources
        pytest.skip(f"cannot compile here: {exc}")
    assert hot.status() == {"hot_probe_pkg.one": "compiled", "hot_probe_pkg.two": "source"}
    (package / "one.py").write_text("def twice(x):\n    return x + x\n")  # edited since its build
    assert hot.status()["hot_probe_pkg.one"] == "stale"
    hot.build(jobs=1, names=("hot_probe_pkg.two",))  # the other's record stays as it was
    assert hot.status() == {"hot_probe_pkg.one": "stale", "hot_probe_pkg.two": "compiled"}


@pytest.mark.parametrize("pure", ["0", "1"])
def test_cpu_c_buffer_cache_reuses_only_free_buffers_compiled_or_not(pure):
    """cpu_c's large-buffer cache hands a buffer out again only once nothing but the cache refers to it (a reference
    count, measured at import because compiled code counts differently: core_cpu_c/runtime.py)."""
    pytest.importorskip("core_cpu_c", reason="the cpu_c plugin is not installed")
    out = _run("""
        from core_cpu_c import runtime
        first = runtime.aligned_empty(1 << 20)
        address = runtime._address(first)
        held = runtime.aligned_empty(1 << 20)  # first is still in use: another buffer
        fresh = runtime._address(held) != address
        free = runtime.RUNTIME.memory_reserved() - runtime.RUNTIME.memory_allocated()
        del first
        freed = runtime.RUNTIME.memory_reserved() - runtime.RUNTIME.memory_allocated() - free
        again = runtime.aligned_empty(1 << 20)
        print(runtime._FREE > 0, fresh, runtime._address(again) == address, freed >= 1 << 20)
        """, CORE_PURE_PYTHON=pure)
    assert out.split() == ["True", "True", "True", "True"]
