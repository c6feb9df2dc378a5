"""cffi API-mode build of core_cpu_c._onednn (csrc/onednn.c over oneDNN's C API), made only where dnnl.h is found.

oneDNN comes from the wheels ``onednn-devel-cpu-gomp`` (headers; a build requirement) and ``onednn-cpu-gomp``
(``libdnnl.so.3``, loaded at run time by :func:`core_cpu_c.lib.load_onednn`), both installing into the environment's
prefix. CORE_CPU_C_ONEDNN=0 skips the module (cpu_c then runs its own convolution); CORE_ONEDNN_PREFIX=/path names a
prefix holding include/dnnl.h (and lib/libdnnl.so.3) to use instead.
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

from cffi import FFI

CSRC = Path(__file__).parent / "csrc"


def _dist_prefix(dist: str, member: str):
    """The prefix holding ``member`` (e.g. include/dnnl.h) according to distribution ``dist``'s file list."""
    try:
        files = metadata.distribution(dist).files or ()
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).endswith(member):
            path = Path(f.locate()).resolve()
            return path.parents[len(Path(member).parts) - 1]
    return None


def onednn_prefix():
    """The prefix whose include/dnnl.h the module is built against, or None (no oneDNN, or CORE_CPU_C_ONEDNN=0)."""
    if os.environ.get("CORE_CPU_C_ONEDNN", "1") == "0":
        return None
    candidates = [os.environ.get("CORE_ONEDNN_PREFIX"), _dist_prefix("onednn-devel-cpu-gomp", "include/dnnl.h"),
                  sys.prefix]
    for prefix in candidates:
        if prefix and (Path(prefix) / "include" / "dnnl.h").is_file():
            return Path(prefix)
    return None


ffibuilder = FFI()
ffibuilder.cdef((CSRC / "onednn.h").read_text())
_prefix = onednn_prefix()
ffibuilder.set_source(
    "core_cpu_c._onednn",
    '#include "onednn.h"\n',
    sources=[str(Path("core_cpu_c") / "csrc" / "onednn.c")],
    include_dirs=[str(CSRC)] + ([str(_prefix / "include")] if _prefix else []),
    # libdnnl.so.3 is not linked: lib.load_onednn loads it (RTLD_GLOBAL) from the run-time environment first
    extra_compile_args=["-O2", "-std=c99", "-D_POSIX_C_SOURCE=200809L"],
    libraries=["pthread", "gomp"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
