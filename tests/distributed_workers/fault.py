"""Rank 1 fails (``exit``: os._exit, ``raise``: an uncaught exception) while rank 0 waits in an all_reduce.

An optional third argument names a file where rank 0 also writes the error it raises: mpiexec forwards the ranks'
stderr, and once one rank is gone it may close that forwarding before another rank's last words arrive."""

import os
import sys
from datetime import timedelta

import core
import core.distributed as dist

dist.init_process_group("mpi", timeout=timedelta(seconds=float(sys.argv[2])))
dist.barrier()
if dist.get_rank() == 1:
    if sys.argv[1] == "exit":
        os._exit(3)
    raise ValueError("rank 1 fails on purpose")
try:
    dist.all_reduce(core.ones(4))
except Exception as error:
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as report:
            report.write(f"{type(error).__name__}: {error}\n")
    raise
print("rank 0 was not stopped", flush=True)
