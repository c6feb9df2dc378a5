"""Rank 1 fails (``exit``: os._exit, ``raise``: an uncaught exception) while rank 0 waits in an all_reduce.

An optional third argument is a path prefix: rank r also writes what it says on stderr to ``<prefix>.rank<r>``.
mpiexec forwards the ranks' stderr, and once one rank is gone (or aborts the job) it may close that forwarding
before a rank's last words arrive."""

import os
import sys
from datetime import timedelta

import core
import core.distributed as dist


class _Tee:
    """sys.stderr that also writes to a file (flushed on each write: the job may be killed right after)."""

    def __init__(self, stream, path: str):
        self.stream, self.file = stream, open(path, "w")

    def write(self, text: str) -> int:
        self.file.write(text)
        self.file.flush()
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


dist.init_process_group("mpi", timeout=timedelta(seconds=float(sys.argv[2])))
if len(sys.argv) > 3:
    sys.stderr = _Tee(sys.stderr, f"{sys.argv[3]}.rank{dist.get_rank()}")
dist.barrier()
if dist.get_rank() == 1:
    if sys.argv[1] == "exit":
        os._exit(3)
    raise ValueError("rank 1 fails on purpose")
dist.all_reduce(core.ones(4))
print("rank 0 was not stopped", flush=True)
