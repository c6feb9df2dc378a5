"""cffi API-mode build of core_cpu_c._ext: the C sources in csrc/, -O3 and OpenMP.

Environment switches (read at build time):
  CORE_CPU_C_NATIVE=0    a portable build: no -march=native (by default the C is vectorised for the build machine;
                         float16 then converts with csrc/half.h's portable bit path, not F16C)
  CORE_CPU_C_SANITIZE=1  add -fsanitize=address,undefined (see docs/backends/cpu_c.md)
  CORE_CPU_C_OPENMP=0    build without OpenMP (single-threaded kernels; `omp simd` loops still vectorise)
The transcendental loops call glibc's libmvec (SIMD exp, tanh, erf, ...) where it exists: csrc/vecmath.h.
"""

from __future__ import annotations

import os
from pathlib import Path

from cffi import FFI

CSRC = Path(__file__).parent / "csrc"
HEADERS = ("kernels.h", "elementwise_gen.h", "reduce.h", "optim.h", "conv.h", "norm.h", "loss.h", "movement.h")
SOURCES = ("blas.c", "elementwise_gen.c", "reduce.c", "optim.c", "conv.c", "norm.c", "loss.c", "movement.c", "vecpow.c")


def _flags() -> tuple:
    # Python's CFLAGS carry -fwrapv (CPython relies on wrapping signed overflow; these kernels do not): with it,
    # GCC cannot simplify the index arithmetic of the pooling loops, which then run 2-3x slower
    compile_args = ["-O3", "-std=c99", "-fno-math-errno", "-fno-wrapv"]
    link_args = []
    if os.environ.get("CORE_CPU_C_OPENMP", "1") != "0":
        compile_args.append("-fopenmp")
        link_args.append("-fopenmp")
    else:  # the `omp simd` loops and csrc/vecmath.h's SIMD math without threads
        compile_args += ["-fopenmp-simd", "-DCCC_OPENMP_SIMD"]
    if os.environ.get("CORE_CPU_C_NATIVE", "1") != "0":  # pip builds on the machine that runs it
        compile_args.append("-march=native")
    if os.environ.get("CORE_CPU_C_SANITIZE") == "1":
        sanitize = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"]
        compile_args = [a for a in compile_args if a != "-O3"] + ["-O1", "-g"] + sanitize
        link_args += sanitize
    return compile_args, link_args


ffibuilder = FFI()
ffibuilder.cdef("".join((CSRC / h).read_text() for h in HEADERS))
_compile, _link = _flags()
ffibuilder.set_source(
    "core_cpu_c._ext",
    "".join(f'#include "{h}"\n' for h in HEADERS),
    sources=[str(Path("core_cpu_c") / "csrc" / s) for s in SOURCES],
    include_dirs=[str(CSRC)],
    extra_compile_args=_compile,
    extra_link_args=_link,
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
