"""Throwaway virtual environments for tests that pip-install packages the way a user would.

A venv made from inside another venv is based on the *base* interpreter: ``--system-site-packages`` would show it
the base's packages, not the active environment's (where core, pip, setuptools and wheel are installed). So the
throwaway venv gets a ``.pth`` file that adds the active environment's site directories with ``site.addsitedir``,
which also runs their own ``.pth`` files (editable installs of core and the plugins live there).
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path


def active_site_dirs() -> list:
    """The running interpreter's site-packages folders, in sys.path order (venv, conda or system alike)."""
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else [sysconfig.get_path("purelib")]
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def make_venv(root: Path) -> str:
    """Create a venv at ``root`` that sees the active environment's packages; return its Python's path."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    own_site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in active_site_dirs())
    (Path(own_site) / "_inherit_active_env.pth").write_text(lines)
    return str(python)
