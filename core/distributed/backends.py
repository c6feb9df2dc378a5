"""What every process-group backend shares: reduce ops, work handles, errors, and the plugin registry.

A process-group backend (``mpi`` built in, others from the ``core.distributed_backends`` entry-point group)
is a :class:`ProcessGroup` subclass working on *buffers*: arrays it gets from tensors with :meth:`buffer`
(host NumPy views for MPI, CuPy arrays for NCCL) and hands to its library. Each collective returns a
:class:`Work` that polls the library's nonblocking requests until done or until the group's timeout.
"""

from __future__ import annotations

import contextlib
import enum
import importlib
import os
import socket
import time
from datetime import timedelta

import numpy as np

from ..dispatch.keys import tls
from ..futures import Future

__all__ = ["ReduceOp", "Work", "ProcessGroup", "DistError", "DistBackendError", "default_pg_timeout",
           "process_group_backend", "peers_gone"]

_SPIN_SECONDS = 0.005  # how long Work.wait polls without yielding the CPU
_YIELD_SECONDS = 1.0  # how long it polls yielding the CPU between polls, before it sleeps between them
_yield_cpu = getattr(os, "sched_yield", lambda: time.sleep(0))
_QUICK_POLLS = range(200)  # polls before Work.wait looks at the clock (a few µs: far below any timeout)

#: The default collective timeout (``torch.distributed.default_pg_timeout``).
default_pg_timeout = timedelta(minutes=30)


class DistError(RuntimeError):
    """A distributed operation failed (``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """The process-group backend failed, e.g. a peer died or a collective timed out
    (``torch.distributed.DistBackendError``)."""


class ReduceOp(enum.Enum):
    """How reducing collectives combine tensors (``torch.distributed.ReduceOp``); AVG is a SUM divided by the
    group's size (integers: truncated, as NCCL's average)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    # members are singletons compared by identity: hash them so too (Enum's own __hash__ is Python code that
    # hashes the name, a cost on every collective's op look-up)
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<ReduceOp.{self.name}>"


class Work:
    """A pending collective or point-to-point operation (``torch.distributed.Work``).

    ``poll()`` says whether the backend's requests are done; ``finish`` callbacks (writing staged buffers back,
    averaging) run once, when it is; ``diagnose()`` explains a timeout (which peers are gone).
    """

    __slots__ = ("what", "_poll", "_finish", "_timeout", "_diagnose", "_result", "_done")

    def __init__(self, what: str, poll, finish=(), timeout: float = 1800.0, diagnose=None, result=None):
        if tls.recording is not None:  # a whole-step capture cannot replay communication (not a kernel call)
            from ..dispatch.capture import note_uncapturable

            note_uncapturable(f"a core.distributed operation ({what}) ran")
        self.what, self._poll, self._finish = what, poll, [f for f in finish if f is not None] if finish else []
        self._timeout, self._diagnose, self._result = timeout, diagnose, result
        self._done = False

    def is_completed(self) -> bool:
        """Whether the operation has finished (``Work.is_completed``); never blocks. A backend error while polling
        (MPI reporting a peer's closed connection) is a DistBackendError naming the ranks that are gone."""
        if not self._done:
            try:
                done = self._poll()
            except Exception as exc:
                raise self._failed(exc) from exc
            if done:
                self._complete()
        return self._done

    def _failed(self, exc: Exception) -> DistBackendError:
        return DistBackendError(f"core.distributed: {self.what} failed ({type(exc).__name__}: {str(exc).strip()})"
                                + self._why())

    def _why(self, settle: float = 1.0) -> str:
        """``": <which peers are gone>"`` from the backend, given ``settle`` seconds for a dying peer's process to
        be reaped (a failure can be seen before its process has gone), or "" when the backend cannot tell."""
        if self._diagnose is None:
            return ""
        deadline = time.monotonic() + settle
        why = self._diagnose()
        while "has exited" not in why and time.monotonic() < deadline:
            time.sleep(0.05)
            why = self._diagnose()
        return f": {why}" if why else ""

    def is_success(self) -> bool:
        """Whether the operation finished without error (``Work.is_success``)."""
        return self.is_completed()

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until the operation finishes (``Work.wait``); DistBackendError, naming the ranks that are gone
        where the backend can tell, after ``timeout`` (default: the process group's)."""
        if self._done:
            return True
        poll = self._poll  # is_completed() inlined: a small message's whole wait is these few polls
        try:
            if not poll():
                for _ in _QUICK_POLLS:  # a small message completes within microseconds: poll without the clock
                    if poll():
                        break
                else:
                    self._wait_timed(poll, timeout.total_seconds() if timeout is not None else self._timeout)
        except _Timeout as late:
            raise DistBackendError(f"core.distributed: {self.what} did not complete within {late.args[0]:g} s"
                                   + self._why()) from None
        except Exception as exc:
            raise self._failed(exc) from exc
        self._complete()
        return True

    @staticmethod
    def _wait_timed(poll, limit: float) -> None:
        """Poll until done; _Timeout after ``limit`` seconds.

        As MPICH's own Wait: spin, then poll yielding the CPU to other runnable processes between polls. Sleeping
        instead is not an option while data moves: MPI progresses an operation only while the ranks poll, and
        once a loaded machine had delayed one rank past the spin, both ended up sleeping between polls (1 KB
        all_reduces took milliseconds each). Only a rank waiting for long (a peer busy elsewhere) backs off to
        sleeps of up to 1 ms, so that it leaves the CPU."""
        start = time.monotonic()
        deadline, spin_end, yield_end, pause = start + limit, start + _SPIN_SECONDS, start + _YIELD_SECONDS, 1e-5
        while not poll():
            now = time.monotonic()
            if now > deadline:
                raise _Timeout(limit)
            if now > yield_end:
                time.sleep(pause)
                pause = min(1e-3, 2 * pause)
            elif now > spin_end:
                _yield_cpu()

    def result(self):
        """The operation's output: the tensors it wrote, or the sender's rank for a receive (``Work.result``)."""
        self.wait()
        return self._result

    def get_future(self):
        """A ``core.Future`` whose value is ``result()`` (``Work.get_future``); waiting on it, or on a future
        chained from it with ``then``, waits for this operation."""
        future = _DrivenFuture(self.wait)
        self._finish.append(lambda: future.set_result(self._result))
        if self._done:
            future.set_result(self._result)
        return future

    def _complete(self) -> None:
        self._done = True
        for finish in self._finish:
            finish()


class _Timeout(Exception):
    """Work.wait's deadline passed (turned into a DistBackendError outside the polling loop)."""


class _DrivenFuture(Future):
    """A Future completed by polling: ``wait`` first runs ``drive`` (a Work's wait), which sets it; futures
    chained with ``then`` drive their parent the same way (no progress thread is needed)."""

    def __init__(self, drive):
        super().__init__()
        self._drive = drive

    def wait(self):
        self._drive()
        return super().wait()

    def then(self, callback) -> Future:
        chained = _DrivenFuture(self.wait)
        plain = super().then(callback)
        plain.add_done_callback(lambda done: _copy_outcome(done, chained))
        return chained


def _copy_outcome(source: Future, target: Future) -> None:
    try:
        value = source.wait()  # done already: returns at once
    except Exception as error:  # noqa: BLE001 - the chained future carries it, as in PyTorch
        target.set_exception(error)
    else:
        target.set_result(value)


class ProcessGroup:
    """A backend's group of processes: the contract a process-group plugin implements.

    ``rank``/``size`` are this process's rank and the group size; ``ranks`` the group's global ranks. Every
    collective takes buffers from :meth:`buffer` and returns a :class:`Work`; ranks passed in (roots, peers)
    are group ranks.
    """

    name = "?"
    rank: int
    size: int
    ranks: list
    timeout: float
    xp = np  # the array module of the buffers (NumPy; CuPy for nccl): outputs are allocated with it
    object_device = "cpu"  # where the object collectives' pickled bytes travel (nccl: the current cuda device)

    @classmethod
    def world(cls, timeout: float, rendezvous=None):
        """The default group of every process of the job; ``rendezvous`` is init_process_group's
        :class:`~core.distributed.rendezvous.Rendezvous` (backends with their own, as MPI, ignore it)."""
        raise NotImplementedError

    def buffer(self, tensor, *, read_only: bool = False):
        """``(array, write_back)`` for ``tensor``: the array the library reads/writes, and a callable copying it
        back into the tensor (None when the array is the tensor's own memory, or ``read_only``)."""
        raise NotImplementedError

    def average(self, array):
        """ReduceOp.AVG's last step on a summed buffer, as a callable run when the operation completes: floats
        divide by the group size, integers truncate (NCCL's average)."""
        size = self.size

        def finish():
            if array.dtype.kind == "f":
                array[...] /= size
            else:
                array[...] = (array / size).astype(array.dtype)
        return finish

    def write(self, tensor, array) -> None:
        """Copy ``array`` (a buffer of this group's array module, e.g. one row of a gathered buffer) into
        ``tensor``, outside autograd."""
        import core

        with core.no_grad():
            tensor.copy_(core.from_numpy(np.ascontiguousarray(array)).reshape(tensor.shape))

    def coalescing(self):
        """A context in which the point-to-point operations started form one batch (``batch_isend_irecv``):
        NCCL must start a batch's sends and receives together; MPI's need nothing."""
        return contextlib.nullcontext()

    def new_group(self, ranks: list, timeout: float):
        """The subgroup of ``ranks`` (global ranks; every rank calls this): a ProcessGroup, or None here where
        this rank is not a member."""
        raise NotImplementedError

    def abort(self) -> None:
        """End every process of the job now (an uncaught exception in one rank)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the group's resources (``destroy_process_group``)."""


def peers_gone(ranks: list, peers: list) -> str:
    """Which of ``ranks`` are gone, from their ``(host, pid)`` ``peers``: those on this host whose process has
    exited (a timeout's diagnosis)."""
    here = socket.gethostname()
    gone = []
    for rank, (host, pid) in zip(ranks, peers):
        if host == here:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                gone.append(f"rank {rank} (pid {pid}) has exited")
            except PermissionError:
                pass
    return "; ".join(gone) or "no rank on this host has exited; a peer may be slow, hung or on another host"


def process_group_backend(name: str):
    """The ProcessGroup class of backend ``name``, from the plugins' ``register_process_group_backends`` hook;
    RuntimeError naming the registered backends, or why ``name``'s is unavailable."""
    from ..plugins import get_manager

    manager = get_manager()
    manager.scan()
    info = manager.process_group_backends.get(name)
    if info is None:
        known = ", ".join(sorted(manager.process_group_backends)) or "none"
        raise RuntimeError(f"core.distributed: no process-group backend '{name}' is installed "
                           f"(process-group backends: {known})")
    if info.probe is not None:
        ok, reason = info.probe()
        if not ok:
            raise RuntimeError(f"core.distributed: process-group backend '{name}' is unavailable: {reason}"
                               + (f"; {info.install_hint}" if info.install_hint else ""))
    runtime = info.runtime
    if isinstance(runtime, str):
        module_name, _, attr = runtime.partition(":")
        runtime = getattr(importlib.import_module(module_name), attr)
    return runtime
