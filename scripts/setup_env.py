"""Install what a job needs into the running interpreter's environment, and only what changed since the last run.

    python scripts/setup_env.py train     # core, tqdm, and the backends this machine can use
    python scripts/setup_env.py test      # core, the test tools, and every backend and extra the tests can run here

Each component (core with its extras, each plugin in plugins/) is installed editable. A stamp in the environment
records a hash of the files that decide what an install produces (pyproject.toml, the dependency lock, a plugin's
build script and C sources) and the checkout it came from; a component whose hash is unchanged and whose
distribution is still installed is skipped, so a second run costs well under a second. Python sources need no
reinstall: editable installs import them from the checkout.

CORE_EXTRAS=opencl,cuda,webgpu,onnx,mpi,tensorboard (or all) adds optional stacks to any job; by default the train
job adds a stack only when this machine can use it (an NVIDIA driver for cuda, an installed OpenCL driver for opencl,
a GPU's Metal, D3D12 or Vulkan driver for webgpu).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# where Vulkan's loader finds drivers (ICD manifests); lvp_icd.*.json is Mesa's llvmpipe, not a GPU
VULKAN_ICD_DIRS = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d")
LOCK = ROOT / "scripts" / "constraints.txt"
# extra of core -> the plugin folder that provides the device (None: a library stack with no plugin)
STACKS = {"opencl": "opencl", "cuda": "cuda", "webgpu": "webgpu", "onnx": None, "mpi": None, "tensorboard": None}
JOBS = {
    # job -> (core extras, stacks always added)
    "train": (["examples", "accel"], []),
    # cuda: its kernels compile through NVRTC without a GPU; webgpu: Mesa's llvmpipe runs it without one
    "test": (["dev", "examples", "accel"], ["opencl", "cuda", "webgpu", "onnx", "tensorboard", "mpi"]),
}


def machine_can_use(stack: str) -> bool:
    """Whether this machine has the hardware and driver a stack runs on."""
    if stack == "cuda":
        return Path("/dev/nvidia0").exists() or Path("/proc/driver/nvidia").exists()
    if stack == "opencl":  # a GPU's OpenCL driver (PoCL, pip's or the system's, only emulates one on the CPU)
        return any("pocl" not in icd.name.lower() for icd in Path("/etc/OpenCL/vendors").glob("*.icd"))
    if stack == "webgpu":  # macOS has Metal and Windows D3D12 on every machine; Linux needs a GPU and its Vulkan
        # driver (mesa-vulkan-drivers brings Intel's and AMD's drivers along with llvmpipe: a GPU node must exist too)
        gpu = any(Path("/dev/dri").glob("renderD*")) or Path("/dev/nvidia0").exists()
        return sys.platform in ("darwin", "win32") or gpu and any(
            "lvp" not in icd.name.lower() for folder in VULKAN_ICD_DIRS for icd in Path(folder).glob("*.json"))
    return False


def requested_stacks(job: str) -> list:
    """The optional stacks of ``job``: the job's own, those the machine can use (train), and CORE_EXTRAS."""
    wanted = list(JOBS[job][1])
    if job == "train":
        wanted += [s for s in ("cuda", "opencl", "webgpu") if machine_can_use(s)]
    for name in filter(None, (x.strip() for x in os.environ.get("CORE_EXTRAS", "").split(","))):
        names = list(STACKS) if name == "all" else [name]
        for n in names:
            if n not in STACKS:
                sys.exit(f"setup: CORE_EXTRAS names unknown extra {n!r} (known: {', '.join(STACKS)}, all)")
        wanted += names
    return list(dict.fromkeys(wanted))


def has_c_compiler() -> bool:
    return any(shutil.which(cc) for cc in (os.environ.get("CC", ""), "cc", "gcc", "clang") if cc)


def build_inputs(folder: Path) -> list:
    """The files whose content decides what installing ``folder`` produces."""
    files = [folder / "pyproject.toml", folder / "setup.py"]
    files += sorted(folder.rglob("_build.py")) + sorted(p for p in folder.rglob("csrc/*") if p.is_file())
    return [f for f in files if f.is_file()]


def digest(files: list, *extra: str) -> str:
    h = hashlib.sha256()
    for part in (*extra, str(ROOT), sys.version):
        h.update(part.encode() + b"\0")
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


class Component:
    """One editable install: a distribution, its folder, the extras asked for, and the hash of its build inputs."""

    def __init__(self, dist: str, folder: str, files: list, *key: str, extras: tuple = ()):
        self.dist, self.folder, self.extras = dist, folder, set(extras)
        self.hash = digest(files + ([LOCK] if LOCK.is_file() else []), *key)

    def target(self, extras: set) -> str:
        """pip's argument: the folder, with ``extras`` when there are any."""
        return f"{self.folder}[{','.join(sorted(extras))}]" if extras else self.folder


def components(job: str) -> list:
    stacks = requested_stacks(job)
    parts = [Component("core", ".", [ROOT / "pyproject.toml"], extras=(*JOBS[job][0], *stacks))]
    plugins = [s for s in stacks if STACKS[s]]
    if has_c_compiler():
        plugins.insert(0, "cpu_c")
    else:
        print("setup: no C compiler found (cc, gcc or clang): cpu_c is not installed, the cpu device uses NumPy")
    for name in plugins:
        folder = ROOT / "plugins" / name
        if (folder / "pyproject.toml").is_file():  # plugin dist names are core-<folder with - for _>
            build_env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(f"CORE_{name.upper()}_"))
            parts.append(Component(f"core-{name.replace('_', '-')}", f"plugins/{name}", build_inputs(folder),
                                   *build_env))
    return parts


def stamp_dir() -> Path:
    """Stamps live in the environment they describe, so a new or deleted environment starts afresh."""
    prefix = Path(sys.prefix)
    if os.access(prefix, os.W_OK):
        return prefix / ".core-setup"
    # a read-only system interpreter installs into the user site; keep its stamps in the checkout
    return ROOT / "build" / ".core-setup" / hashlib.sha256(sys.executable.encode()).hexdigest()[:16]


def installed(dist: str) -> bool:
    try:
        importlib.metadata.distribution(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def apt_get_usable() -> list | None:
    """The command prefix that runs apt-get here (as root, or through passwordless sudo), or None."""
    if not shutil.which("apt-get") or not hasattr(os, "geteuid"):
        return None
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    return None


def apt_install(package: str) -> None:
    """``apt-get install`` one Debian package quietly, updating the package lists once if that fails first."""
    prefix = apt_get_usable() or []
    install = [*prefix, "apt-get", "install", "-y", "-q", "--no-install-recommends", package]
    quiet = {"stdout": subprocess.DEVNULL, "env": {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}}
    if subprocess.run(install, **quiet).returncode != 0:
        subprocess.run([*prefix, "apt-get", "update", "-q"], **quiet)
        subprocess.run(install, **quiet)


OPENCL_PROBE = """
import pyopencl as cl
def compiles(d):
    try:
        cl.Program(cl.Context([d]), "__kernel void k(__global float* a) { a[0] = 1.0f; }").build()
        return True
    except Exception:
        return False
raise SystemExit(0 if any(compiles(d) for p in cl.get_platforms() for d in p.get_devices()) else 1)
"""


def opencl_device_compiles() -> bool:
    """Whether some OpenCL device compiles a kernel (run apart: a broken ICD can abort the interpreter)."""
    return subprocess.run([sys.executable, "-c", OPENCL_PROBE], capture_output=True).returncode == 0


def ensure_driver(found, package: str, missing: str, unavailable: str, what: str = "") -> None:
    """Make sure ``found()`` holds; where it does not and apt-get is usable (Debian), install ``package`` (``what``
    it is, for the message); else say ``missing``: ``unavailable``."""
    if found():
        return
    if apt_get_usable() is not None:
        print(f"setup: {missing}; installing Debian's {package}{what}")
        apt_install(package)
        if found():
            return
    print(f"setup: {missing}: {unavailable}")


def ensure_opencl_driver() -> None:
    """Make sure some OpenCL device compiles kernels; on Debian as root, add Debian's PoCL where none does.

    pip's PoCL 3.0 (LLVM 14) lists a device on every x86 CPU but cannot compile for CPUs newer than LLVM 14
    ("unknown target CPU 'generic'", seen on AMD Zen 5); Debian's pocl-opencl-icd (LLVM 15) can.
    """
    ensure_driver(opencl_device_compiles, "pocl-opencl-icd", "no OpenCL device here compiles kernels",
                  "the opencl backend reports itself unavailable and its tests are skipped (install a PoCL that "
                  "knows this CPU, e.g. Debian's pocl-opencl-icd)")


WEBGPU_PROBE = """
import wgpu
adapters = wgpu.gpu.enumerate_adapters_sync()
raise SystemExit(0 if any(a.info["backend_type"] != "OpenGL" for a in adapters) else 1)
"""


def webgpu_adapter_found() -> bool:
    """Whether wgpu finds a Metal, Vulkan or D3D12 adapter (run apart: a missing driver can abort the interpreter).

    An OpenGL adapter alone does not count: wgpu's OpenGL backend (Mesa's GL on a machine without Vulkan) has no
    shader-int64 or shader-f16, so int64 indices and float16 would leave the device."""
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR") or "/tmp"}
    return subprocess.run([sys.executable, "-c", WEBGPU_PROBE], capture_output=True, env=env).returncode == 0


def ensure_webgpu_driver() -> None:
    """Make sure wgpu finds an adapter; on Debian with apt-get usable, add Mesa's software Vulkan (llvmpipe)."""
    ensure_driver(webgpu_adapter_found, "mesa-vulkan-drivers", "no Metal, Vulkan or D3D12 WebGPU adapter here",
                  "the webgpu backend reports itself unavailable and its tests are skipped (install a Vulkan driver, "
                  "e.g. Debian's mesa-vulkan-drivers for llvmpipe)", " (llvmpipe, software Vulkan)")


def read_stamp(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def write_stamp(path: Path, record: dict) -> None:
    """Written atomically: a run killed here leaves the old stamp or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)


def main(job: str) -> int:
    if job not in JOBS:
        sys.exit(f"setup: unknown job {job!r} (known: {', '.join(JOBS)})")
    stamps = stamp_dir()
    todo = []  # (component, extras to install)
    for part in components(job):
        recorded = read_stamp(stamps / f"{part.dist}.json")
        had = set(recorded.get("extras", ())) if recorded.get("hash") == part.hash else set()
        if recorded.get("hash") != part.hash or not part.extras <= had or not installed(part.dist):
            todo.append((part, part.extras | had))
    where = f"{sys.prefix} ({sys.executable})"
    if not todo:
        print(f"setup: environment up to date: {where}")
        return ensure_hot() or ensure_drivers(job)
    targets = [part.target(extras) for part, extras in todo]
    print(f"setup: installing {', '.join(targets)} into {where}")
    if any(part.dist == "core-cpu-c" for part, _ in todo):
        print("setup: cpu_c compiles its C kernels (a minute or two the first time, again only when they change)")
    started = time.perf_counter()
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    if LOCK.is_file():
        command += ["--constraint", str(LOCK)]
    for target in targets:
        command += ["--editable", target]
    if subprocess.run(command, cwd=ROOT).returncode != 0:
        print(f"setup: pip failed: {' '.join(command)}", file=sys.stderr)
        return 1
    for part, extras in todo:
        write_stamp(stamps / f"{part.dist}.json", {"hash": part.hash, "extras": sorted(extras)})
    print(f"setup: done in {time.perf_counter() - started:.0f} s")
    return ensure_hot() or ensure_drivers(job)


def ensure_hot() -> int:
    """Compile core's hot modules and its plugins' (core/_hot.py: Cython, in place) that are not up to date with
    their sources; without a C compiler, or when the build fails, they run from source (slower, same results).
    Always 0: nothing here stops the job."""
    if not has_c_compiler():
        print("setup: no C compiler found: core's hot modules run from source (python -m core info says which)")
        return 0
    sys.stdout.flush()
    # its lines ("compiling 17 of core's 17 hot modules with Cython", "hot modules: 17 of 17 compiled") show; the C
    # compiler's warnings about Cython's generated code do not, unless the build fails
    result = subprocess.run([sys.executable, "-m", "core", "compile"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        print(f"setup: the hot modules that did not compile run from source:\n{result.stderr[-2000:]}",
              file=sys.stderr)
    return 0


def ensure_drivers(job: str) -> int:
    """The system drivers a requested stack needs beyond pip (OpenCL's PoCL and WebGPU's llvmpipe we can add)."""
    stacks = requested_stacks(job)
    if "opencl" in stacks:
        ensure_opencl_driver()
    if "webgpu" in stacks:
        ensure_webgpu_driver()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "train"))
