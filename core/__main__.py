"""Command line: ``python -m core info`` prints versions, backends, op coverage and the resolved config."""

from __future__ import annotations

import argparse
import json
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="core: tools for users and plugin authors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = commands.add_parser("info", help="print versions, backends, devices, op coverage and config sources")
    info.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def main(argv: list | None = None) -> int:
    """Run a command; no command prints usage, an unknown one exits with status 2 (argparse's rule)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from . import info

    data = info.collect()
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n" if args.json else info.render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
