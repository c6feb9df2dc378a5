"""The docs stay true: the op list is current and every hook is documented."""

from __future__ import annotations

import inspect
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
