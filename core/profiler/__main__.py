"""``python -m core.profiler [options] script.py [args...]``: run a script under ``core.profiler.profile`` and print
the op table of the whole run (as ``python -m cProfile`` runs one; ``-m module`` runs a module).

The script sees ``sys.argv == [script, *args]``, runs as ``__main__`` with its own directory first on
``sys.path``, and its exit status is kept: the table (and the chrome trace, with ``--chrome-trace``) is written
when it ends however it ends (returns, ``sys.exit``, an exception), then the exit or exception goes on. Only the
main thread's ops are recorded (a profile is per thread).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import sys

from ._events import _SORT_KEYS
from .profiler import profile


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m core.profiler",
        description="Run a Python script (or, with -m, a module) under core.profiler and print its op table.")
    parser.add_argument("--sort-by", default="self_cpu_time_total", choices=_SORT_KEYS, metavar="KEY",
                        help="the column the table is sorted by, descending (default: self_cpu_time_total; "
                             f"one of {', '.join(_SORT_KEYS)})")
    parser.add_argument("--row-limit", type=int, default=20,
                        help="the most rows the table shows (default: 20; 0 or less: all)")
    parser.add_argument("--group-by-input-shape", action="store_true",
                        help="one row per op and input shapes (implies --record-shapes)")
    parser.add_argument("--record-shapes", action="store_true", help="record the input shapes of each op")
    parser.add_argument("--profile-memory", action="store_true", help="count the memory each op allocates")
    parser.add_argument("--chrome-trace", metavar="FILE",
                        help="also write the run as a Chrome trace (chrome://tracing, Perfetto); .gz: gzipped")
    parser.add_argument("-m", dest="module", action="store_true", help="run the target as a module (python -m)")
    parser.add_argument("target", metavar="script.py", help="the script (or, with -m, the module) to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    return parser


def _run(options) -> None:
    """Run the target as ``__main__`` with the script's argv and path."""
    if options.module:
        sys.argv[:] = [options.target] + options.args
        runpy.run_module(options.target, run_name="__main__", alter_sys=True)
        return
    sys.argv[:] = [options.target] + options.args  # run_path puts the script's path in argv[0]
    sys.path.insert(0, os.path.dirname(os.path.abspath(options.target)))
    runpy.run_path(options.target, run_name="__main__")


def _report(prof, options) -> None:
    """Print the op table of the run; write the chrome trace when asked."""
    averages = prof.key_averages(group_by_input_shape=options.group_by_input_shape)
    print(averages.table(sort_by=options.sort_by, row_limit=options.row_limit,
                         header=f"core.profiler: {options.target}"), end="", flush=True)
    if options.chrome_trace:
        prof.export_chrome_trace(options.chrome_trace)
        print(f"chrome trace written to {options.chrome_trace}", flush=True)


def main(argv=None) -> None:
    """The command line: parse the options, run the target under a profile, report."""
    parser = _parser()
    options = parser.parse_args(argv)
    if not options.module and not os.path.isfile(options.target):
        parser.error(f"cannot run {options.target!r}: no such file")
    if options.module and importlib.util.find_spec(options.target) is None:
        parser.error(f"cannot run module {options.target!r}: no module of that name")
    prof = profile(record_shapes=options.record_shapes or options.group_by_input_shape,
                   profile_memory=options.profile_memory)
    prof.start()
    try:
        _run(options)
    finally:
        prof.stop()
        _report(prof, options)

if __name__ == "__main__":
    main()
