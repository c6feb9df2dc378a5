"""Program build cache: each program is built once per device per process; PyOpenCL and PoCL cache on disk.

A program is keyed by what its source depends on (family, dtypes, rank). Related kernels share one
program (e.g. every unary float32 op of one rank) so that one build serves many ops; PoCL still
compiles each kernel on its first launch, which is why launches use one fixed local size.
"""

from __future__ import annotations

import os
import warnings

__all__ = ["get_kernel", "build_count", "check_dtypes"]

# PoCL's kernel cache (compiled work-group functions) and PyOpenCL's binary cache: make both explicit so that
# a second process starts warm. setdefault: a user's own choice wins.
os.environ.setdefault("POCL_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "pocl"))
os.environ.setdefault("PYOPENCL_NO_CACHE", "0")

build_count = [0]


def check_dtypes(slot, dtypes) -> None:  # dtypes: names, or any text that holds them
    """TypeError naming device and dtype when a kernel needs float64 on a device without ``cl_khr_fp64``."""
    if "float64" in dtypes and not slot.fp64:
        raise TypeError(f"opencl device '{slot.name}' does not support dtype float64 (the device does not report "
                        f"cl_khr_fp64); use float32")


def get_kernel(slot, key: tuple, member: str, render):
    """The calling thread's kernel ``member`` of program ``key`` on ``slot``; ``render()`` gives the program's
    kernels as ``{member: (kernel name, source)}`` the first time the program is needed.

    A cl.Kernel holds the arguments set on it until it is enqueued, so a kernel object shared by two threads
    could launch with the other thread's arguments: each thread gets its own kernel objects (cheap to create from
    the shared program; PoCL compiles a kernel once per program, not per kernel object).
    """
    kernels = slot.kernels
    kernel = kernels.get((key, member))
    if kernel is not None:
        return kernel
    import pyopencl as cl

    entry = slot.programs.get(key)
    if entry is None:
        with slot.build_lock:
            entry = slot.programs.get(key)
            if entry is None:
                entry = slot.programs[key] = _build(slot, key, render)
    program, names = entry
    # cl.Kernel rather than getattr(program, name): PyOpenCL warns when a program hands out a kernel twice
    kernel = kernels[(key, member)] = cl.Kernel(program, names[member])
    return kernel


def _build(slot, key: tuple, render) -> tuple:
    """(built cl.Program, {member: kernel name}) of program ``key``."""
    import pyopencl as cl

    from .renderer import OpenCLRenderer

    check_dtypes(slot, repr(key))
    kernels = render()
    text = OpenCLRenderer().header(slot.fp64) + "\n".join(src for _, src in kernels.values())
    with warnings.catch_warnings():  # PoCL's harmless notes would surface as CompilerWarning on every build
        warnings.simplefilter("ignore", cl.CompilerWarning)
        program = cl.Program(slot.context, text).build()
    build_count[0] += 1
    return program, {m: n for m, (n, _) in kernels.items()}
