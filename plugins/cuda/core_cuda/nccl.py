"""The ``nccl`` process-group backend: cuda tensors through CuPy's NCCL bindings (``cupy.cuda.nccl``).

Registered by this plugin's ``register_process_group_backends`` hook, found by ``core.distributed`` like ``mpi``.
The ranks meet through init_process_group's rendezvous (``core.distributed.rendezvous``: MPI under an MPI
launcher, else a store); rank 0's NCCL unique id is shared through it, and each rank builds one
``NcclCommunicator`` per cuda device it communicates on, on first use, with a stream of its own. Every operation
waits (on the GPU) for the work already queued on the current stream, runs inside ``groupStart``/``groupEnd``
on the communicator's stream, and returns a :class:`~core.distributed.Work` that polls a CUDA event recorded
after it (and NCCL's asynchronous errors) against the group's timeout.

Buffers are the tensors' own CuPy views when contiguous; strided tensors are staged through contiguous copies
written back when the operation completes. bfloat16 travels as NCCL's bfloat16 (its CuPy view holds the bits as
uint16: core's own uint16 is refused here, as by PyTorch, so a uint16 buffer is always bfloat16), bool as uint8
(SUM as MAX and PRODUCT as MIN, PyTorch's mapping), complex as pairs of reals (SUM and AVG only).
"""

from __future__ import annotations

import contextlib
import os
import socket
import warnings

from core.distributed.backends import ProcessGroup, ReduceOp, Work, peers_gone
from core.distributed.rendezvous import Rendezvous, bootstrap

from .bfloat16 import narrow, widen
from .runtime import probe as device_probe

__all__ = ["ProcessGroupNCCL", "probe", "INSTALL_HINT"]

INSTALL_HINT = ("needs NVIDIA GPUs (one per rank), CuPy and NCCL: pip install -e 'plugins/cuda[nccl]' (NCCL's "
                "nvidia-nccl-cu13 wheel; nvidia-nccl-cu12 with cupy-cuda12x), see docs/distributed.md")

# core dtype -> (NCCL data type, NCCL elements per element); float8s and the 16-bit integers NCCL lacks are refused
_TYPES = {"float16": ("NCCL_FLOAT16", 1), "bfloat16": ("NCCL_BFLOAT16", 1), "float32": ("NCCL_FLOAT32", 1),
          "float64": ("NCCL_FLOAT64", 1), "int8": ("NCCL_INT8", 1), "uint8": ("NCCL_UINT8", 1),
          "int32": ("NCCL_INT32", 1), "int64": ("NCCL_INT64", 1), "bool": ("NCCL_UINT8", 1),
          "complex64": ("NCCL_FLOAT32", 2), "complex128": ("NCCL_FLOAT64", 2)}
# the CuPy buffer's dtype char -> core dtype (a bfloat16 tensor's CuPy view is uint16 bits)
_BUFFER_DTYPES = {"e": "float16", "H": "bfloat16", "f": "float32", "d": "float64", "b": "int8", "B": "uint8",
                  "i": "int32", "l": "int64", "q": "int64", "?": "bool", "F": "complex64", "D": "complex128"}
_NCCL_BFLOAT16 = 9  # ncclBfloat16 (NCCL >= 2.10), for CuPy builds that do not name it
_OPS = {ReduceOp.SUM: "NCCL_SUM", ReduceOp.AVG: "NCCL_SUM", ReduceOp.PRODUCT: "NCCL_PROD",
        ReduceOp.MIN: "NCCL_MIN", ReduceOp.MAX: "NCCL_MAX"}
_BOOL_OPS = {ReduceOp.SUM: ReduceOp.MAX, ReduceOp.PRODUCT: ReduceOp.MIN}  # uint8 0/1: OR and AND


def _nccl_module():
    """``cupy.cuda.nccl`` (its failed-load warning silenced: the probe reports the reason)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from cupy.cuda import nccl
    return nccl


def probe() -> tuple:
    """``(True, "")`` when CuPy sees a CUDA device and loads NCCL, else ``(False, every reason)``; never raises."""
    ok, reason = device_probe()
    if "CuPy not installed" in reason:
        return False, reason
    reasons = [] if ok else [reason]
    try:
        nccl = _nccl_module()
        if not nccl.available:
            try:  # cupy.cuda.nccl swallowed the error: ask for it again
                import cupy_backends.cuda.libs.nccl  # noqa: F401
                detail = "unknown error"
            except Exception as exc:  # noqa: BLE001 - reported, never raised
                detail = f"{type(exc).__name__}: {exc}"
            reasons.append(f"CuPy's NCCL bindings cannot load NCCL ({detail})")
    except Exception as exc:  # noqa: BLE001 - a broken CuPy build
        reasons.append(f"cupy.cuda.nccl does not import ({type(exc).__name__}: {exc})")
    return (not reasons), "; ".join(reasons)


class _Launch:
    """One operation for a communicator: ``call(comm, stream_ptr)`` issues its NCCL calls; ``done()`` polls the
    event recorded after them (None until started: a batch starts at the end of ``coalescing``). Holds the
    arrays, so that the memory NCCL reads and writes outlives the operation."""

    __slots__ = ("device", "comm", "stream", "call", "arrays", "event")

    def __init__(self, device, comm, stream, call, arrays):
        self.device, self.comm, self.stream, self.call, self.arrays = device, comm, stream, call, arrays
        self.event = None

    def done(self) -> bool:
        if self.event is not None and self.event.done:
            return True
        self.comm.check_async_error()  # a peer's failure, as NcclError (Work turns it into DistBackendError)
        return False


class ProcessGroupNCCL(ProcessGroup):
    """A group of processes communicating cuda tensors through NCCL (``torch.distributed``'s ``nccl``)."""

    name = "nccl"
    device_type = "cuda"  # the tensors it communicates

    def __init__(self, boot, timeout: float, ranks: list, peers: list):
        self.xp, self._nccl = self._modules()
        self.boot, self.timeout, self.ranks, self.peers = boot, timeout, ranks, peers
        self.rank, self.size = boot.rank, boot.size
        self._comms: dict = {}  # device index -> (NcclCommunicator, its Stream)
        self._batch: list | None = None  # launches deferred by coalescing()
        self._groups_made = 0
        self._where = f" on rank {ranks[self.rank]}"

    @staticmethod
    def _modules() -> tuple:
        """``(array module, NCCL bindings)``: CuPy and ``cupy.cuda.nccl``."""
        import cupy

        return cupy, _nccl_module()

    @classmethod
    def world(cls, timeout: float, rendezvous=None):
        """The default group: every rank of the job, met through ``rendezvous``."""
        boot = bootstrap(rendezvous or Rendezvous(), timeout)
        peers = [tuple(p) for p in boot.allgather("nccl/peers", [socket.gethostname(), os.getpid()])]
        return cls(boot, timeout, list(range(boot.size)), peers)

    @property
    def object_device(self) -> str:
        """The object collectives' tensors go through the current cuda device, as PyTorch's."""
        return f"cuda:{self.xp.cuda.runtime.getDevice()}"

    # -- buffers -----------------------------------------------------------------------------------------
    def buffer(self, tensor, *, read_only: bool = False):
        """The tensor's own CuPy view where contiguous, else a contiguous copy and the callable writing it back;
        RuntimeError for tensors of other devices (PyTorch's message) and dtypes NCCL has no type for."""
        array = self._view(tensor)
        if array.flags.c_contiguous:
            return array, None
        with array.device:
            staged = self.xp.ascontiguousarray(array)
        if read_only:
            return staged, None

        def write_back():
            with array.device:
                array[...] = staged

        return staged, write_back

    def _view(self, tensor):
        if tensor.device.type != self.device_type:
            raise RuntimeError(f"No backend type associated with device type {tensor.device.type}")
        if tensor.dtype.name not in _TYPES:
            raise RuntimeError(f"Unsupported data type for NCCL process group: {tensor.dtype.name}")
        return self._array(tensor)

    @staticmethod
    def _array(tensor):
        """The CuPy view of a cuda tensor's memory (the runtime's; bfloat16 as uint16 bits)."""
        return tensor._storage.backend.array(tensor)

    def write(self, tensor, array) -> None:
        target = self._view(tensor)
        with target.device:
            target[...] = array.reshape(target.shape)

    def average(self, array):
        if array.dtype.char != "H":
            return super().average(array)
        xp, size = self.xp, self.size

        def finish():  # bfloat16 bits: widen to float32, divide, round to nearest even
            array[...] = narrow(xp, widen(xp, array) / size)
        return finish

    # -- launching ---------------------------------------------------------------------------------------
    def _type(self, array) -> tuple:
        """``(NCCL data type, NCCL elements per array element)`` of a buffer."""
        name, per = _TYPES[_BUFFER_DTYPES[array.dtype.char]]
        return getattr(self._nccl, name, _NCCL_BFLOAT16 if name == "NCCL_BFLOAT16" else None), per

    def _op(self, op: ReduceOp, array) -> int:
        if op not in _OPS:
            raise ValueError(f"Cannot use ReduceOp.{op.name} with NCCL")
        if array.dtype.char == "?":
            if op is ReduceOp.AVG:
                raise TypeError("Cannot use ReduceOp.AVG with boolean inputs")
            op = _BOOL_OPS.get(op, op)
        return getattr(self._nccl, _OPS[op])

    def _communicator(self, device: int) -> tuple:
        """This group's communicator and stream on cuda device ``device``, made on first use (every rank of the
        group makes its n-th communicator together: rank 0's unique id goes through the bootstrap)."""
        found = self._comms.get(device)
        if found is None:
            key = f"nccl/comm{len(self._comms)}"
            uid = self.boot.broadcast(key, list(self._nccl.get_unique_id()) if self.rank == 0 else None)
            with self.xp.cuda.Device(device):
                comm = self._nccl.NcclCommunicator(self.size, tuple(uid), self.rank)
                found = self._comms[device] = (comm, self.xp.cuda.Stream(non_blocking=True))
        return found

    def _work(self, what: str, arrays: list, call, finish=(), result=None) -> Work:
        """Start ``call(comm, stream_ptr)`` (its NCCL calls) on the arrays' device, or defer it to the end of
        :meth:`coalescing`; a Work polling it, then ``finish``."""
        device = arrays[0].device.id
        launch = _Launch(device, *self._communicator(device), call, arrays)
        if self._batch is not None:
            self._batch.append(launch)
        else:
            self._start([launch])
        return Work(what + self._where, launch.done, finish, self.timeout, self.diagnose, result)

    def _start(self, launches: list) -> None:
        """Issue ``launches`` as one NCCL group, each device's stream first waiting for its current stream."""
        cuda = self.xp.cuda
        devices = {launch.device: launch.stream for launch in launches}
        for device, stream in devices.items():
            with cuda.Device(device):
                stream.wait_event(cuda.get_current_stream().record())
        self._nccl.groupStart()
        try:
            for launch in launches:
                with cuda.Device(launch.device):
                    launch.call(launch.comm, launch.stream.ptr)
        finally:
            self._nccl.groupEnd()
        events = {}
        for device, stream in devices.items():
            with cuda.Device(device):
                events[device] = stream.record()
        for launch in launches:
            launch.event = events[launch.device]

    @contextlib.contextmanager
    def coalescing(self):
        """Start the operations begun inside as one NCCL group (``batch_isend_irecv``: a batch's sends and
        receives must be issued together, or two ranks sending to each other first would wait forever)."""
        if self._batch is not None:
            yield
            return
        self._batch = []
        try:
            yield
        finally:
            batch, self._batch = self._batch, None
            if batch:
                self._start(batch)

    # -- operations --------------------------------------------------------------------------------------
    def allreduce(self, array, op: ReduceOp, finish=()) -> Work:
        nccl_op, (dtype, per) = self._op(op, array), self._type(array)
        ptr, count = array.data.ptr, array.size * per
        return self._work("all_reduce", [array], lambda c, s: c.allReduce(ptr, ptr, count, dtype, nccl_op, s),
                          finish)

    def broadcast(self, array, root: int, finish=()) -> Work:
        (dtype, per), ptr = self._type(array), array.data.ptr
        return self._work("broadcast", [array],
                          lambda c, s: c.broadcast(ptr, ptr, array.size * per, dtype, root, s), finish)

    def reduce(self, array, op: ReduceOp, root: int, finish=()) -> Work:
        nccl_op, (dtype, per), ptr = self._op(op, array), self._type(array), array.data.ptr
        return self._work("reduce", [array],
                          lambda c, s: c.reduce(ptr, ptr, array.size * per, dtype, nccl_op, root, s), finish)

    def allgather(self, send, recv, finish=()) -> Work:
        dtype, per = self._type(send)
        return self._work("all_gather", [send, recv],
                          lambda c, s: c.allGather(send.data.ptr, recv.data.ptr, send.size * per, dtype, s), finish)

    def reduce_scatter(self, send, recv, op: ReduceOp, finish=()) -> Work:
        nccl_op, (dtype, per) = self._op(op, send), self._type(send)
        return self._work("reduce_scatter", [send, recv], lambda c, s: c.reduceScatter(
            send.data.ptr, recv.data.ptr, recv.size * per, dtype, nccl_op, s), finish)

    def _exchange(self, what: str, send, send_counts, recv, recv_counts, finish=()) -> Work:
        """Grouped sends of ``send``'s consecutive pieces (``send_counts[r]`` elements to rank r) and receives
        into ``recv``'s (from rank r): all_to_all, gather and scatter (NCCL has no gather or scatter)."""
        like = send if send is not None else recv
        dtype, per = self._type(like)

        def pieces(array, counts):
            offset = 0
            for peer, count in enumerate(counts):
                if count:
                    yield peer, array.data.ptr + offset * array.itemsize, count * per
                offset += count

        def call(c, s):
            for peer, ptr, count in pieces(send, send_counts) if send is not None else ():
                c.send(ptr, count, dtype, peer, s)
            for peer, ptr, count in pieces(recv, recv_counts) if recv is not None else ():
                c.recv(ptr, count, dtype, peer, s)

        return self._work(what, [a for a in (send, recv) if a is not None], call, finish)

    def alltoallv(self, send, send_counts, recv, recv_counts, finish=()) -> Work:
        return self._exchange("all_to_all", send, send_counts, recv, recv_counts, finish)

    def gather(self, send, recv, root: int, finish=()) -> Work:
        counts = [send.size if r == root else 0 for r in range(self.size)]
        return self._exchange("gather", send, counts, recv, [send.size] * self.size if self.rank == root else
                              None, finish)

    def scatter(self, send, recv, root: int, finish=()) -> Work:
        counts = [recv.size if r == root else 0 for r in range(self.size)]
        return self._exchange("scatter", send, [recv.size] * self.size if self.rank == root else None, recv,
                              counts, finish)

    def send(self, array, dst: int, tag: int) -> Work:
        dtype, per = self._type(array)
        return self._work(f"send to rank {self.ranks[dst]}", [array],
                          lambda c, s: c.send(array.data.ptr, array.size * per, dtype, dst, s))

    def recv(self, array, src: int | None, tag: int, finish=()) -> Work:
        if src is None:
            raise RuntimeError("ProcessGroupNCCL does not support recv from any source: give src")
        dtype, per = self._type(array)
        return self._work(f"recv from rank {self.ranks[src]}", [array],
                          lambda c, s: c.recv(array.data.ptr, array.size * per, dtype, src, s), finish,
                          result=self.ranks[src])

    def barrier(self) -> Work:
        """An all_reduce of one element on the device this group last set up (else the current device)."""
        device = next(reversed(self._comms), None)
        with self.xp.cuda.Device(device if device is not None else self.xp.cuda.runtime.getDevice()):
            one = self.xp.zeros(1, self.xp.float32)
        return self.allreduce(one, ReduceOp.SUM)

    # -- groups and faults -------------------------------------------------------------------------------
    def new_group(self, ranks: list, timeout: float):
        self._groups_made += 1
        mine = [self.ranks.index(r) for r in ranks]
        boot = self.boot.split(mine, f"group{self._groups_made}")
        if boot is None:
            return None
        return type(self)(boot, timeout, [self.ranks[i] for i in mine], [self.peers[i] for i in mine])

    def diagnose(self) -> str:
        """Which ranks of this group are gone: those on this host whose process has exited."""
        return peers_gone(self.ranks, self.peers)

    def abort(self) -> None:
        """MPI_Abort where the job met through MPI; otherwise abort the communicators and end this process (the
        others' operations then time out naming it)."""
        if not self.boot.abort():
            for comm, _ in self._comms.values():
                comm.abort()
            os._exit(1)

    def close(self) -> None:
        for comm, stream in self._comms.values():
            stream.synchronize()
            comm.destroy()
        self._comms.clear()
