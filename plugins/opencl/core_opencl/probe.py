"""The compiler probe: can a platform's OpenCL C compiler build a kernel for these devices?

A platform can list devices and still fail every build: pip's PoCL 3.0 (LLVM 14) answers
``error: unknown target CPU 'generic'`` on CPUs newer than its LLVM (AMD Zen 5). Discovery builds one
trivial program per (platform, devices) once per process, so such a platform is skipped or reported
instead of failing on the first kernel; PoCL and PyOpenCL cache the build, so a warm probe is cheap.
"""

from __future__ import annotations

import re
import warnings

__all__ = ["compiler_error", "first_error_line", "describe", "fix_hint"]

_SOURCE = "__kernel void core_probe(__global float *x) { x[get_global_id(0)] += 1.0f; }"
_RESULTS: dict = {}  # (platform pointer, device pointers) -> "" or the compiler's first error line
_ERROR_LINE = re.compile(r"(^|: )(fatal )?error\b", re.IGNORECASE)


def compiler_error(platform, devices) -> str:
    """``""`` when a program builds for ``devices`` (of ``platform``), else the first error line; once per process."""
    key = (platform.int_ptr, tuple(d.int_ptr for d in devices))
    if key not in _RESULTS:
        _RESULTS[key] = _build(devices)
    return _RESULTS[key]


def _build(devices) -> str:
    import pyopencl as cl

    try:
        with warnings.catch_warnings():  # PoCL's harmless notes would surface as CompilerWarning
            warnings.simplefilter("ignore", cl.CompilerWarning)
            cl.Program(cl.Context(list(devices)), _SOURCE).build()
    except Exception as exc:  # noqa: BLE001 - whatever a driver raises, the device cannot run our kernels
        return first_error_line(f"{type(exc).__name__}: {exc}")
    return ""


def first_error_line(message: str) -> str:
    """The first ``error: ...`` line of a build failure (the compiler's own words), else the first line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return next((line for line in lines if _ERROR_LINE.search(line)), lines[0] if lines else "unknown error")


def describe(index: int, platform, devices, error: str) -> str:
    """``platform 1 'NAME' (VERSION), device(s) 'A', 'B': ERROR`` -- one failed probe, for a message."""
    names = ", ".join(f"'{d.name.strip()}'" for d in devices)
    return (f"platform {index} '{platform.name.strip()}' ({' '.join(platform.version.split())}), "
            f"device{'s' if len(devices) > 1 else ''} {names}: {error}")


def fix_hint(platform, error: str) -> str:
    """What to do about a platform whose compiler fails."""
    version = " ".join(platform.version.split())
    if "pocl" in version.lower() and "unknown target cpu" in error.lower():
        pocl, llvm = (re.search(pattern, version, re.IGNORECASE) for pattern in (r"PoCL \S+", r"LLVM [\d.]+"))
        pocl = (pocl.group(0) if pocl else "this PoCL") + (f" ({llvm.group(0)})" if llvm else "")
        return (f"{pocl} cannot compile for this CPU, which is newer than its LLVM (pip's pocl-binary-distribution "
                f"3.0 is PoCL 3.0 with LLVM 14): install a newer PoCL such as Debian's pocl-opencl-icd "
                f"(`apt install pocl-opencl-icd`), which PyOpenCL finds beside pip's")
    return "update this platform's OpenCL driver (ICD), or choose another platform with CORE_OPENCL_DEVICES"
