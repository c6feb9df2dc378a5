"""``python -m core.profiler script.py [args...]``: the script runs as ``__main__`` with its argv and directory,
its exit status is kept, and the op table of the whole run (and a chrome trace) comes out at the end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import core

ROOT = Path(core.__file__).resolve().parents[1]

SCRIPT = """\
import sys

import core
import helper  # next to the script: its directory is first on sys.path

print("argv", sys.argv[1:], __name__, flush=True)
x = core.ones(3, 4)
for _ in range(helper.STEPS):
    y = (x @ x.T).relu()
sys.exit(int(sys.argv[1]))
"""


def _run(args, cwd, timeout=120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "core.profiler", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _rows(table: str) -> dict:
    """name -> cells of each row of a printed table."""
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Name")) + 2
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("---"))
    return {re.split(r"\s{2,}", line)[0]: re.split(r"\s{2,}", line) for line in lines[start:end]}


def _script(tmp_path, source: str = SCRIPT) -> Path:
    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "helper.py").write_text("STEPS = 3\n")
    script = folder / "train.py"
    script.write_text(source)
    return script


def test_runs_the_script_with_its_args_and_keeps_its_exit_status(tmp_path):
    script = _script(tmp_path)
    trace = tmp_path / "run.json"
    done = _run(["--sort-by", "count", "--row-limit", "3", "--chrome-trace", str(trace), str(script), "7",
                 "--row-limit", "1"], cwd=tmp_path)  # options after the script are the script's
    assert done.returncode == 7, done.stderr
    assert "argv ['7', '--row-limit', '1'] __main__" in done.stdout
    table = done.stdout[done.stdout.index("core.profiler: "):]
    rows = _rows(table)
    assert len(rows) == 3  # --row-limit 3
    counts = [int(cells[-1]) for cells in rows.values()]
    assert counts == sorted(counts, reverse=True)  # --sort-by count
    assert rows["aten::batched_matmul"][-1] == "3" and rows["aten::relu"][-1] == "3"
    assert re.search(r"Self CPU time total: \d", table)
    spans = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    assert sum(e["name"] == "aten::relu" for e in spans) == 3


def test_shapes_and_memory_options(tmp_path):
    script = _script(tmp_path)
    done = _run(["--group-by-input-shape", "--profile-memory", "--row-limit", "0", str(script), "0"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if line.startswith("Name"))
    assert "Input Shapes" in header and "CPU Mem" in header  # --group-by-input-shape implies --record-shapes
    row = _rows(done.stdout)["aten::batched_matmul"]
    assert row[-1] == "[[3, 4], [4, 3]]" and "108 b" in row, row  # 3 calls, each making a 3x3 float32 result


def test_an_exception_still_prints_the_table_and_fails(tmp_path):
    script = _script(tmp_path, SCRIPT.replace("sys.exit(int(sys.argv[1]))", "raise ValueError('boom')"))
    done = _run([str(script)], cwd=tmp_path)
    assert done.returncode == 1
    assert "ValueError: boom" in done.stderr and "aten::relu" in done.stdout


def test_module_mode_and_missing_targets(tmp_path):
    (tmp_path / "mod_main.py").write_text("import core\ncore.ones(2).exp()\nprint('ran', __name__)\n")
    done = _run(["-m", "mod_main"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ran __main__" in done.stdout and "aten::exp" in done.stdout
    missing = _run(["no_such_script.py"], cwd=tmp_path)
    assert missing.returncode == 2 and "cannot run 'no_such_script.py': no such file" in missing.stderr
    missing = _run(["-m", "no_such_module_xyz"], cwd=tmp_path)
    assert missing.returncode == 2 and "no module of that name" in missing.stderr
    bad = _run(["--sort-by", "speed", "x.py"], cwd=tmp_path)
    assert bad.returncode == 2 and "invalid choice: 'speed'" in bad.stderr
    assert textwrap.dedent(_run(["--help"], cwd=tmp_path).stdout).startswith("usage: python -m core.profiler")
