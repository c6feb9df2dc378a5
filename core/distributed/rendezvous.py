"""How the processes of a job find each other before a backend's own library connects them.

``init_process_group``'s ``init_method``, ``rank``, ``world_size`` and ``store`` become a :class:`Rendezvous`
that a backend's ``ProcessGroup.world`` turns into a :class:`Bootstrap`: this process's rank, the world size,
and a way to share small values (an NCCL unique id, host names and process ids) among the ranks. The ``mpi``
backend needs none of it (MPI does its own rendezvous); ``nccl`` does, as PyTorch's does:

- a ``store`` given to ``init_process_group`` (with ``rank`` and ``world_size``), or one made from
  ``tcp://HOST:PORT`` (rank 0 serves a :class:`~core.distributed.TCPStore`) or ``file://PATH`` (a
  :class:`~core.distributed.FileStore`): values travel as JSON through the store's keys;
- ``env://`` (the default): under an MPI launcher (``mpiexec``, ``python -m core.distributed.run``) with
  mpi4py installed, MPI's COMM_WORLD (its ranks and ``bcast``/``allgather``; no port to pick); otherwise
  ``MASTER_ADDR``/``MASTER_PORT``/``RANK``/``WORLD_SIZE`` and a TCPStore, as torchrun's env://.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlparse

__all__ = ["Rendezvous", "Bootstrap", "StoreBootstrap", "MPIBootstrap", "bootstrap"]

# what MPI launchers export in every rank (MPICH/Hydra, Open MPI)
_MPI_LAUNCHED = ("PMI_RANK", "OMPI_COMM_WORLD_RANK")


@dataclass(frozen=True)
class Rendezvous:
    """``init_process_group``'s rendezvous arguments, as given (``-1``: not given)."""

    init_method: str | None = None
    rank: int = -1
    world_size: int = -1
    store: object = None


class Bootstrap:
    """A group of ranks that can share small JSON-able values: ``rank`` and ``size`` within the group."""

    rank: int
    size: int

    def broadcast(self, key: str, value, root: int = 0):
        """``value`` of group rank ``root``, on every member (the others pass anything); ``key`` names it."""
        raise NotImplementedError

    def allgather(self, key: str, value) -> list:
        """Every member's ``value``, in group-rank order."""
        raise NotImplementedError

    def split(self, ranks: list, tag: str):
        """The bootstrap of the members ``ranks`` (ranks of this group, sorted), or None where this rank is not
        one; every member of this group calls it, in the same order, with a ``tag`` unique to the new group."""
        raise NotImplementedError

    def abort(self) -> bool:
        """End every rank of the job where the bootstrap can (MPI_Abort); False where it cannot."""
        return False


class StoreBootstrap(Bootstrap):
    """A bootstrap over a :class:`~core.distributed.Store`: each value under its own key, as JSON."""

    def __init__(self, store, rank: int, size: int, prefix: str = ""):
        self.store, self.rank, self.size, self.prefix = store, rank, size, prefix

    def broadcast(self, key: str, value, root: int = 0):
        key = f"{self.prefix}{key}"
        if self.rank == root:
            self.store.set(key, json.dumps(value))
            return value
        return json.loads(self.store.get(key))

    def allgather(self, key: str, value) -> list:
        key = f"{self.prefix}{key}"
        self.store.set(f"{key}/{self.rank}", json.dumps(value))
        return [json.loads(self.store.get(f"{key}/{r}")) for r in range(self.size)]

    def split(self, ranks: list, tag: str):
        if self.rank not in ranks:
            return None
        return StoreBootstrap(self.store, ranks.index(self.rank), len(ranks), f"{self.prefix}{tag}/")


class MPIBootstrap(Bootstrap):
    """A bootstrap over an MPI communicator (COMM_WORLD, or one made by :meth:`split`)."""

    def __init__(self, comm=None):
        from mpi4py import MPI

        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()

    def broadcast(self, key: str, value, root: int = 0):
        return self.comm.bcast(value, root)

    def allgather(self, key: str, value) -> list:
        return self.comm.allgather(value)

    def split(self, ranks: list, tag: str):
        from mpi4py import MPI

        comm = self.comm.Create(self.comm.Get_group().Incl(list(ranks)))
        return None if comm == MPI.COMM_NULL else MPIBootstrap(comm)

    def abort(self) -> bool:
        self.comm.Abort(1)
        return True


def _number(given: int, variable: str, what: str) -> int:
    if given not in (-1, None):
        return int(given)
    if variable in os.environ:
        return int(os.environ[variable])
    raise ValueError(f"init_process_group(): {what} is not given and {variable} is not in the environment; pass "
                     f"{what}= or launch with python -m core.distributed.run")


def bootstrap(rendezvous: Rendezvous, timeout: float) -> Bootstrap:
    """The job's bootstrap from ``init_process_group``'s arguments (see the module's docstring for the order)."""
    from .store import FileStore, TCPStore

    method = rendezvous.init_method
    if rendezvous.store is not None:
        return StoreBootstrap(rendezvous.store, _number(rendezvous.rank, "RANK", "rank"),
                              _number(rendezvous.world_size, "WORLD_SIZE", "world_size"))
    if method in (None, "env://") and any(v in os.environ for v in _MPI_LAUNCHED):
        import importlib.util

        if importlib.util.find_spec("mpi4py") is not None:
            return MPIBootstrap()
    rank = _number(rendezvous.rank, "RANK", "rank")
    size = _number(rendezvous.world_size, "WORLD_SIZE", "world_size")
    seconds = timedelta(seconds=timeout)
    if method is not None and method.startswith("file://"):
        return StoreBootstrap(FileStore(method[len("file://"):], size), rank, size)
    if method is not None and method.startswith("tcp://"):
        where = urlparse(method)
        host, port = where.hostname, where.port
    else:
        host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if host is None or port is None:
            raise ValueError("init_process_group(): env:// needs MASTER_ADDR and MASTER_PORT in the environment "
                             "(or an MPI launcher: python -m core.distributed.run)")
    return StoreBootstrap(TCPStore(host, int(port), size, is_master=rank == 0, timeout=seconds), rank, size)
