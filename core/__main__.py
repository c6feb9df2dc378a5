"""Command line: ``python -m core info`` prints versions, backends, op coverage and the resolved config;
``python -m core compile`` builds the compiled hot modules (core/_hot.py)."""

from __future__ import annotations

import argparse
import json
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="core: tools for users and plugin authors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = commands.add_parser("info", help="print versions, backends, devices, op coverage and config sources")
    info.add_argument("--json", action="store_true", help="print the report as JSON")
    build = commands.add_parser("compile", help="compile core's hot modules with Cython (needs Cython and a C "
                                "compiler); --status and --clean say which run compiled and remove them")
    build.add_argument("--status", action="store_true", help="print each hot module's state; build nothing")
    build.add_argument("--force", action="store_true", help="rebuild every set, not only those not up to date")
    build.add_argument("--clean", action="store_true", help="remove the compiled modules: all run from source")
    return parser


def main(argv: list | None = None) -> int:
    """Run a command; no command prints usage, an unknown one exits with status 2 (argparse's rule)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "compile":
        from . import _hot

        if args.clean:
            _hot.clean()
        elif not args.status:
            _hot.build(force=args.force)
            states = list(_hot.status(load=True).values())
            print(f"hot modules: {states.count('compiled')} of {len(states)} compiled")
            return 0 if states.count("compiled") == len(states) else 1
        for module, state in _hot.status(load=True).items():
            print(f"{module:45s} {state}")
        return 0
    from . import info

    data = info.collect()
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n" if args.json else info.render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
