# Sourced by train.sh and test.sh: choose the project's Python environment, make it if needed, put it first on PATH,
# then install what the job needs (scripts/setup_env.py; only what changed since the last run).
#
#   an active virtual environment ($VIRTUAL_ENV) or conda environment ($CONDA_PREFIX) is used as it is;
#   otherwise the checkout's own .venv is made (once) from python3 and reused;
#   CORE_PYTHON=/path/to/python picks an interpreter explicitly (CORE_PYTHON=python3: the system interpreter).
#
# Usage: source scripts/env.sh JOB   (JOB: train or test; see scripts/setup_env.py)

core_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -n "${CORE_PYTHON:-}" ]; then
    core_python="$(command -v "$CORE_PYTHON")" || { echo "setup: CORE_PYTHON=$CORE_PYTHON is not a program" >&2; exit 1; }
elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
    core_python="$VIRTUAL_ENV/bin/python"
elif [ -n "${CONDA_PREFIX:-}" ] && [ -x "$CONDA_PREFIX/bin/python" ]; then
    core_python="$CONDA_PREFIX/bin/python"
else
    if ! "$core_root/.venv/bin/python" -c "" 2>/dev/null; then  # missing, or its base interpreter has gone
        echo "setup: making the project environment $core_root/.venv"
        rm -rf "$core_root/.venv"
        python3 -m venv "$core_root/.venv" || { echo "setup: python3 -m venv failed (Debian: apt install python3-venv)" >&2; exit 1; }
    fi
    core_python="$core_root/.venv/bin/python"
fi
if ! "$core_python" -m pip --version >/dev/null 2>&1; then  # e.g. a venv made with --without-pip
    "$core_python" -m ensurepip --upgrade >/dev/null || { echo "setup: $core_python has no pip" >&2; exit 1; }
fi
# the environment's scripts (and python3) come first for everything these jobs start
PATH="$(dirname "$core_python"):$PATH"
export PATH PIP_DISABLE_PIP_VERSION_CHECK=1
"$core_python" "$core_root/scripts/setup_env.py" "$1" || exit 1
