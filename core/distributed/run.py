"""``python -m core.distributed.run --nproc-per-node N train.py ARGS``: start N ranks of a script, like torchrun.

Built on the MPI launcher of the environment (``mpiexec``, from the ``mpich`` wheel or a system MPI): it runs
``mpiexec -n N python -m core.distributed.run --worker train.py ARGS``; each rank sets torchrun's variables
(``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``) from MPI's
and runs the script as ``__main__``. With MPICH's Hydra launcher it passes ``-disable-auto-cleanup`` so that a
rank that dies leaves the others running long enough to report it (within the process group's timeout)
instead of being killed silently. ``--hostfile FILE`` runs across machines. As torchrun, with several ranks
and no ``OMP_NUM_THREADS`` it gives each rank one thread of CPU kernels.
"""

from __future__ import annotations

import argparse
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["find_mpiexec", "mpiexec_command", "main"]

# (rank, size, local rank, local size) as each MPI launcher exports them
_LAUNCHER_VARIABLES = (("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
                       ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "OMPI_COMM_WORLD_LOCAL_SIZE"))


def find_mpiexec() -> str:
    """The ``mpiexec`` next to this Python (a venv with the mpich wheel), else on PATH; RuntimeError if none."""
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("core.distributed.run: no mpiexec found next to the Python interpreter or on PATH; "
                           "install the core[mpi] extra (pip install mpi4py mpich) or a system MPI")
    return found


def mpiexec_command(nproc: int, argv: list, hostfile: str | None = None, mpiexec: str | None = None) -> list:
    """The mpiexec command line that runs ``argv`` (a Python command's arguments) as ``nproc`` ranks."""
    mpiexec = mpiexec or find_mpiexec()
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True).stdout
    hydra = "HYDRA" in version.upper()  # MPICH's launcher; Open MPI's spells its options otherwise
    flags = ["-disable-auto-cleanup"] if hydra else []
    if hostfile:
        flags += ["-f" if hydra else "--hostfile", hostfile]
    return [mpiexec, *flags, "-n", str(nproc), sys.executable, *argv]


_THREADS_WARNING = ("\n*****************************************\n"
                    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
                    "system being overloaded, please further tune the "
                    "variable for optimal performance in your application as needed. \n"
                    "*****************************************")


def _threads_per_rank(nproc: int) -> None:
    """torchrun's default: several ranks per machine and no ``OMP_NUM_THREADS`` give each rank one thread (with
    torchrun's warning), so that N ranks do not run N x cores threads. core's CPU kernels take their thread count
    from ``CORE_NUM_THREADS`` (where not set) = ``OMP_NUM_THREADS``, so the setting reaches them too."""
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        print(_THREADS_WARNING, file=sys.stderr)
        os.environ["OMP_NUM_THREADS"] = "1"
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        os.environ.setdefault("CORE_NUM_THREADS", threads)


def _export_rank_variables() -> None:
    """Set torchrun's environment variables from the MPI launcher's (for scripts that read them)."""
    for names in _LAUNCHER_VARIABLES:
        if names[0] in os.environ:
            values = [os.environ.get(name, default) for name, default in zip(names, ("0", "1", "0", "1"))]
            for key, value in zip(("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"), values):
                os.environ.setdefault(key, value)
            break
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")


def main(args: list | None = None) -> int:
    """Parse the launcher's arguments and run the job (or, with ``--worker``, one rank of it)."""
    parser = argparse.ArgumentParser(prog="python -m core.distributed.run", description=__doc__.split("\n")[0])
    parser.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, help="ranks to start")
    parser.add_argument("--hostfile", help="MPI hostfile, for a job across machines")
    parser.add_argument("--mpiexec", help="the MPI launcher to use (default: found next to python or on PATH)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-m", dest="module", action="store_true", help="run the script argument as a module")
    parser.add_argument("script", help="the training script (or module, with -m)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    options = parser.parse_args(args)
    if options.worker:
        _export_rank_variables()
        sys.argv = [options.script, *options.script_args]
        if options.module:
            runpy.run_module(options.script, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(options.script).resolve().parent))
            runpy.run_path(options.script, run_name="__main__")
        return 0
    if options.nproc_per_node < 1:
        parser.error("--nproc-per-node must be at least 1")
    argv = ["-m", "core.distributed.run", "--worker", *(["-m"] if options.module else []), options.script,
            *options.script_args]
    _threads_per_rank(options.nproc_per_node)
    command = mpiexec_command(options.nproc_per_node, argv, options.hostfile, options.mpiexec)
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main())
