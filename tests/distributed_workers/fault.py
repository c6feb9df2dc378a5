"""Rank 1 fails (``exit``: os._exit, ``raise``: an uncaught exception) while rank 0 waits in an all_reduce."""

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
dist.all_reduce(core.ones(4))
print("rank 0 was not stopped", flush=True)
