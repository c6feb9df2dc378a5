"""Regenerate csrc/elementwise_gen.{c,h} from core.codegen (run after changing the renderer or op list).

The generated files are checked in so that building the extension (under pip's
build isolation) needs only a C compiler and cffi, not core itself;
tests/test_cpu_c.py checks they match a fresh render.
"""

from __future__ import annotations

from pathlib import Path

from .renderer import render_all

CSRC = Path(__file__).parent / "csrc"


def main() -> None:
    """Write the generated kernel source and header next to the hand-written C."""
    source, header = render_all()
    (CSRC / "elementwise_gen.c").write_text(source)
    (CSRC / "elementwise_gen.h").write_text(header)


if __name__ == "__main__":
    main()
