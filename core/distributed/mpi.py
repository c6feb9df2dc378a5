"""The built-in ``mpi`` process-group backend, on mpi4py: host tensors go to MPI without copies.

Registered through the same ``register_process_group_backends`` hook a third-party backend uses. Every
operation is one of MPI's nonblocking calls (``Iallreduce``, ``Ibcast``, ...) whose requests a
:class:`~core.distributed.backends.Work` polls against the group's timeout. A contiguous CPU tensor of a dtype
MPI knows is handed to MPI as its own NumPy view; other tensors (strided, float16/bfloat16, other devices such
as opencl) are staged through a host copy written back when the operation completes.
"""

from __future__ import annotations

import importlib.util
import os
import socket

import numpy as np

from ..plugins.hookspecs import hookimpl
from .backends import ProcessGroup, ReduceOp, Work, peers_gone

__all__ = ["ProcessGroupMPI"]

# dtypes MPI reduces natively; float16/bfloat16 are staged as float32
_NATIVE = {"float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool", "complex64", "complex128"}


def _probe() -> tuple:
    if importlib.util.find_spec("mpi4py") is None:
        return False, "mpi4py is not installed"
    return True, ""


@hookimpl
def register_process_group_backends(register):
    """core.distributed's ``mpi`` backend: host (cpu) tensors, and others staged through the host."""
    register(name="mpi", runtime="core.distributed.mpi:ProcessGroupMPI", devices=("cpu", "opencl"), probe=_probe,
             version="builtin",
             install_hint="install the core[mpi] extra (pip install mpi4py mpich) and launch with mpiexec or "
                          "python -m core.distributed.run")


_LOADED: dict = {}  # "MPI": the mpi4py.MPI module, "ops": ReduceOp -> MPI.Op (imported on first use)


def _mpi():
    if not _LOADED:
        from mpi4py import MPI

        _LOADED["MPI"] = MPI
        _LOADED["ops"] = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
                          ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
                          ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}
    return _LOADED["MPI"]


class ProcessGroupMPI(ProcessGroup):
    """A group of MPI processes: COMM_WORLD for the default group, a sub-communicator for ``new_group``."""

    name = "mpi"

    def __init__(self, comm=None, timeout: float = 1800.0, peers=None):
        MPI = _mpi()
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank, self.size, self.timeout = self.comm.Get_rank(), self.comm.Get_size(), timeout
        world = MPI.COMM_WORLD.Get_group()
        self.ranks = list(MPI.Group.Translate_ranks(self.comm.Get_group(), list(range(self.size)), world))
        # (host, pid) of every rank, so that a timeout can name the local ranks that are gone
        self.peers = peers if peers is not None else self.comm.allgather((socket.gethostname(), os.getpid()))
        # looked up once: every operation's Python overhead counts for small messages
        self._ops, self._in_place, self._where = _LOADED["ops"], MPI.IN_PLACE, f" on rank {self.ranks[self.rank]}"

    @classmethod
    def world(cls, timeout: float, rendezvous=None):
        """The default group: every process mpiexec started (MPI does its own rendezvous)."""
        return cls(None, timeout)

    # -- buffers ------------------------------------------------------------------------------------------
    def buffer(self, tensor, *, read_only: bool = False):
        """The tensor's own NumPy view where it is contiguous host memory of a dtype MPI knows, else a staged
        host copy and the callable that writes it back."""
        array = tensor._np  # the cpu backends' cached NumPy view of the tensor's own memory (cuda's: a CuPy one)
        if array is None and tensor.device.type == "cpu":
            array = tensor.numpy(force=True)  # a CPU tensor's own memory (force: also one that requires grad)
        if array.__class__ is np.ndarray and array.flags.c_contiguous and tensor.dtype.name in _NATIVE:
            return array, None
        import core

        dtype = tensor.dtype if tensor.dtype.name in _NATIVE else core.float32
        array = np.ascontiguousarray(tensor.detach().to("cpu", dtype).numpy())
        if read_only:
            return array, None

        def write_back():
            with core.no_grad():
                tensor.copy_(core.from_numpy(array))

        return array, write_back

    # -- operations: each returns a Work over MPI requests -----------------------------------------------
    def _work(self, what: str, request, finish=(), poll=None) -> Work:
        """A Work over one MPI ``request`` (done when it is; ``poll`` replaces that test), then ``finish``."""
        return Work(what + self._where, poll or request.Test, finish, self.timeout, self.diagnose)

    def allreduce(self, array, op: ReduceOp, finish=()) -> Work:
        # _work inlined: DDP's buckets and small tensors make this the hottest call
        return Work("all_reduce" + self._where, self.comm.Iallreduce(self._in_place, array, self._ops[op]).Test,
                    finish, self.timeout, self.diagnose)

    def broadcast(self, array, root: int, finish=()) -> Work:
        return self._work("broadcast", self.comm.Ibcast(array, root), finish)

    def reduce(self, array, op: ReduceOp, root: int, finish=()) -> Work:
        args = (self._in_place, array) if self.rank == root else (array, None)
        return self._work("reduce", self.comm.Ireduce(*args, self._ops[op], root), finish)

    def allgather(self, send, recv, finish=()) -> Work:
        return self._work("all_gather", self.comm.Iallgather(send, recv), finish)

    def reduce_scatter(self, send, recv, op: ReduceOp, finish=()) -> Work:
        return self._work("reduce_scatter", self.comm.Ireduce_scatter_block(send, recv, self._ops[op]), finish)

    def gather(self, send, recv, root: int, finish=()) -> Work:
        return self._work("gather", self.comm.Igather(send, recv if self.rank == root else None, root), finish)

    def scatter(self, send, recv, root: int, finish=()) -> Work:
        return self._work("scatter", self.comm.Iscatter(send if self.rank == root else None, recv, root), finish)

    def alltoallv(self, send, send_counts, recv, recv_counts, finish=()) -> Work:
        def spec(array, counts):
            return [array, (list(counts), list(np.cumsum([0, *counts[:-1]])))]

        return self._work("all_to_all", self.comm.Ialltoallv(spec(send, send_counts), spec(recv, recv_counts)),
                          finish)

    def send(self, array, dst: int, tag: int) -> Work:
        return self._work(f"send to rank {self.ranks[dst]}", self.comm.Isend(array, dst, tag))

    def recv(self, array, src: int | None, tag: int, finish=()) -> Work:
        MPI = _mpi()
        status = MPI.Status()
        request = self.comm.Irecv(array, MPI.ANY_SOURCE if src is None else src, tag)

        def record_sender():
            work._result = self.ranks[status.Get_source()]

        work = self._work("recv" + (f" from rank {self.ranks[src]}" if src is not None else ""), request,
                          [*finish, record_sender], poll=lambda: request.Test(status))
        return work

    def barrier(self) -> Work:
        return self._work("barrier", self.comm.Ibarrier())

    # -- groups and faults --------------------------------------------------------------------------------
    def new_group(self, ranks: list, timeout: float):
        MPI = _mpi()
        mine = [self.ranks.index(r) for r in ranks]
        comm = self.comm.Create(self.comm.Get_group().Incl(mine))
        if comm == MPI.COMM_NULL:
            return None
        return ProcessGroupMPI(comm, timeout, [self.peers[r] for r in mine])

    def diagnose(self) -> str:
        """Which ranks of this group are gone: those on this host whose process has exited."""
        return peers_gone(self.ranks, self.peers)

    def abort(self) -> None:
        self.comm.Abort(1)

    def close(self) -> None:
        MPI = _mpi()
        if self.comm not in (MPI.COMM_WORLD, MPI.COMM_NULL):
            self.comm.Free()
