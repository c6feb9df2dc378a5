"""The docs stay true: the op list is current and every hook is documented."""

from __future__ import annotations

import importlib.util
import inspect
import os
import pathlib
import subprocess
import sys

from core.plugins import hookspecs

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_op_list_is_current():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_op_docs.py"), "--check"], cwd=ROOT)
    assert result.returncode == 0, "docs/ops.md is stale: run python scripts/gen_op_docs.py"


def test_every_hook_is_documented():
    text = (ROOT / "docs" / "hooks.md").read_text()
    hooks = [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
             if hasattr(fn, "core_spec")]
    assert hooks, "no hook specs found"
    for name in hooks:
        assert f"## `{name}(" in text, f"hook {name} is not documented in docs/hooks.md"


def _op_docs():
    """scripts/gen_op_docs.py as a module (it lists the public names docs/ops.md documents)."""
    spec = importlib.util.spec_from_file_location("gen_op_docs", ROOT / "scripts" / "gen_op_docs.py")
    module = importlib.util.module_from_spec(spec)
    before = os.environ.get("CORE_PURE_PYTHON")
    try:
        spec.loader.exec_module(module)
    finally:  # the script asks for the interpreted sources in its own process; not for the rest of this one
        if before is None:
            os.environ.pop("CORE_PURE_PYTHON", None)
        else:
            os.environ["CORE_PURE_PYTHON"] = before
    return module


def test_every_public_name_has_a_summary():
    """docs/ops.md's second part shows each public name's doc string: none of core, core.Tensor, core.linalg,
    core.fft, core.special and core.sparse may be without one."""
    docs = _op_docs()
    missing = {label: [name for name, value in docs.public_names(label).items() if not docs.describe(value)[2]]
               for label in docs.NAMESPACES}
    assert not any(missing.values()), f"public names without a doc string: {missing}"
    assert len(docs.public_names("core")) > 500 and len(docs.public_names("core.Tensor")) > 500


def test_every_public_name_is_named_by_a_test():
    """Each public name of those namespaces appears in the tests or in core.testing's op tables: a name nothing
    exercises is not coverage (a test of it is then missing)."""
    import re

    sources = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "core" / "testing").rglob("*.py")]
    words = set(re.findall(r"[A-Za-z_]\w*", "\n".join(path.read_text() for path in sources)))
    docs = _op_docs()
    unnamed = {label: [name for name in docs.public_names(label) if name not in words] for label in docs.NAMESPACES}
    assert not any(unnamed.values()), f"public names no test names: {unnamed}"
