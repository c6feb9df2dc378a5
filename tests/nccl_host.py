"""NCCL's semantics on the host, for tests/test_nccl.py: ranks are threads of one process, buffers NumPy arrays.

``HostNCCL`` is the real ``ProcessGroupNCCL`` (its buffers, staging, dtype and op mapping, grouped sends and
receives, offsets, averaging, coalescing) with two things swapped: CuPy for NumPy arrays that answer CuPy's
``.data.ptr``/``.device``, and ``cupy.cuda.nccl`` for :class:`HostNcclModule`, which carries out each NCCL call
on the raw pointers it is given, as NCCL does: a wrong count, offset, root or peer gives a wrong result or an
error here too. CUDA streams and events are trivial (every call completes at its group's end). CPU tensors
stand in for cuda tensors.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import queue
import threading
import types

import ml_dtypes
import numpy as np
from core_cuda.nccl import ProcessGroupNCCL

# NCCL's enums (nccl.h, as cupy_backends/cuda/libs/nccl.pxd spells them)
_CONSTANTS = {"NCCL_SUM": 0, "NCCL_PROD": 1, "NCCL_MAX": 2, "NCCL_MIN": 3, "NCCL_AVG": 4, "NCCL_INT8": 0,
              "NCCL_UINT8": 1, "NCCL_INT32": 2, "NCCL_UINT32": 3, "NCCL_INT64": 4, "NCCL_UINT64": 5,
              "NCCL_FLOAT16": 6, "NCCL_FLOAT32": 7, "NCCL_FLOAT64": 8, "NCCL_BFLOAT16": 9}
_DTYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64, 6: np.float16,
           7: np.float32, 8: np.float64, 9: ml_dtypes.bfloat16}
_REDUCE = {0: np.sum, 1: np.prod, 2: np.max, 3: np.min}


class HostArray(np.ndarray):
    """A NumPy array with CuPy's ``data.ptr`` and ``device`` (device 0)."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)

    @property
    def device(self):
        return _Device(0)


class _Device(contextlib.nullcontext):
    def __init__(self, index=0):
        super().__init__()
        self.id = index


class _Event:
    done = True


class _Stream:
    ptr = 0

    def __init__(self, non_blocking=False):
        pass

    def wait_event(self, event):
        pass

    def record(self, event=None):
        return _Event()

    def synchronize(self):
        pass


def _host(function):
    def wrapped(*args, **kwargs):
        return np.asarray(function(*args, **kwargs)).view(HostArray)
    return wrapped


# the array module: NumPy, with CuPy's cuda namespace and arrays that answer .data.ptr
xp = types.SimpleNamespace(**{name: getattr(np, name) for name in ("float32", "uint32", "uint16", "isnan")},
                           **{name: _host(getattr(np, name)) for name in ("empty", "zeros", "stack", "concatenate",
                                                                          "ascontiguousarray", "where")},
                           cuda=types.SimpleNamespace(Device=_Device, Stream=_Stream,
                                                      get_current_stream=lambda: _Stream(),
                                                      runtime=types.SimpleNamespace(getDevice=lambda: 0)))


def _memory(ptr: int, count: int, datatype: int) -> np.ndarray:
    """``count`` elements of NCCL type ``datatype`` at address ``ptr``."""
    dtype = np.dtype(_DTYPES[datatype])
    return np.frombuffer((ctypes.c_byte * (count * dtype.itemsize)).from_address(ptr), dtype)


class _Fabric:
    """One communicator's ranks. Collectives: what every rank posts at a group end, read by each once all have
    posted. Sends: copied into a mailbox per (sender, receiver) that the receiver's ``recv`` empties in order
    (buffered, so a batch that NCCL would deadlock on passes here: this checks data, counts and peers)."""

    def __init__(self, size: int):
        self.size, self.posted = size, [None] * size
        self.barrier = threading.Barrier(size, timeout=30)
        self.mail = {(a, b): queue.Queue() for a in range(size) for b in range(size)}

    def run(self, rank: int, calls: list) -> None:
        collectives = [c for c in calls if c[0] not in ("send", "recv")]
        if collectives:
            self.posted[rank] = collectives
            self.barrier.wait()  # everyone has posted: read the inputs (no rank writes before the next barrier)
            results = [r for index, (kind, *args) in enumerate(collectives)
                       for r in self._collective(rank, kind, args, [p[index] for p in self.posted])]
            self.barrier.wait()
            for out, values in results:
                out[...] = values
        for _, ptr, count, datatype, peer in (c for c in calls if c[0] == "send"):
            self.mail[rank, peer].put((count, datatype, _memory(ptr, count, datatype).copy()))
        for _, ptr, count, datatype, peer in (c for c in calls if c[0] == "recv"):
            sent = self.mail[peer, rank].get(timeout=30)
            assert sent[:2] == (count, datatype), f"rank {rank}: recv of {count} from {peer}, {sent[:2]} sent"
            _memory(ptr, count, datatype)[...] = sent[2]

    def _collective(self, rank: int, kind: str, args: tuple, peers: list) -> list:
        assert all(p[0] == kind for p in peers), f"rank {rank}: {kind} meets {[p[0] for p in peers]}"
        if kind == "allReduce":
            send, recv, count, datatype, op = args
            return [(_memory(recv, count, datatype), _reduce([_memory(p[1], count, datatype) for p in peers], op))]
        if kind == "reduce":
            send, recv, count, datatype, op, root = args
            assert all(p[6] == root for p in peers), "reduce: the ranks name different roots"
            if rank != root:
                return []
            return [(_memory(recv, count, datatype), _reduce([_memory(p[1], count, datatype) for p in peers], op))]
        if kind == "broadcast":
            send, recv, count, datatype, root = args
            assert all(p[5] == root and p[3] == count for p in peers), "broadcast: roots or counts differ"
            return [(_memory(recv, count, datatype), _memory(peers[root][1], count, datatype).copy())]
        if kind == "allGather":
            send, recv, count, datatype = args
            assert all(p[3] == count for p in peers), "allGather: counts differ"
            gathered = np.concatenate([_memory(p[1], count, datatype) for p in peers])
            return [(_memory(recv, count * self.size, datatype), gathered)]
        if kind == "reduceScatter":
            send, recv, count, datatype, op = args
            total = _reduce([_memory(p[1], count * self.size, datatype) for p in peers], op)
            return [(_memory(recv, count, datatype), total[rank * count:(rank + 1) * count])]
        raise AssertionError(kind)


def _reduce(arrays: list, op: int) -> np.ndarray:
    dtype = arrays[0].dtype
    wide = np.stack(arrays).astype(np.float64 if dtype.kind == "f" or dtype == ml_dtypes.bfloat16 else np.int64)
    return _REDUCE[op](wide, axis=0).astype(dtype)


class HostNcclModule:
    """``cupy.cuda.nccl`` on the host: communicators meet through their unique id; calls run at ``groupEnd``."""

    available = True
    _fabrics: dict = {}
    _lock = threading.Lock()
    _ids = itertools.count()
    _local = threading.local()

    def __init__(self):
        for name, value in _CONSTANTS.items():
            setattr(self, name, value)
        module = self

        class NcclCommunicator:
            def __init__(self, ndev, uid, rank):
                with module._lock:
                    self.fabric = module._fabrics.setdefault(uid, _Fabric(ndev))
                self.rank = rank

            def _call(self, *call):
                pending = module._local.pending
                assert pending is not None, "an NCCL call outside groupStart/groupEnd"
                pending.append((self, call))

            def allReduce(self, send, recv, count, datatype, op, stream):
                self._call("allReduce", send, recv, count, datatype, op)

            def reduce(self, send, recv, count, datatype, op, root, stream):
                self._call("reduce", send, recv, count, datatype, op, root)

            def broadcast(self, send, recv, count, datatype, root, stream):
                self._call("broadcast", send, recv, count, datatype, root)

            def allGather(self, send, recv, count, datatype, stream):
                self._call("allGather", send, recv, count, datatype)

            def reduceScatter(self, send, recv, count, datatype, op, stream):
                self._call("reduceScatter", send, recv, count, datatype, op)

            def send(self, ptr, count, datatype, peer, stream):
                self._call("send", ptr, count, datatype, peer)

            def recv(self, ptr, count, datatype, peer, stream):
                self._call("recv", ptr, count, datatype, peer)

            def check_async_error(self):
                pass

            def destroy(self):
                pass

            abort = destroy

        self.NcclCommunicator = NcclCommunicator

    def get_unique_id(self) -> tuple:
        return (next(self._ids),) + (0,) * 127

    def groupStart(self) -> None:
        self._local.pending = []

    def groupEnd(self) -> None:
        pending, self._local.pending = self._local.pending, None
        comms = {id(comm): comm for comm, _ in pending}
        for comm in comms.values():
            comm.fabric.run(comm.rank, [call for owner, call in pending if owner is comm])


class HostNCCL(ProcessGroupNCCL):
    """ProcessGroupNCCL over :class:`HostNcclModule`, communicating CPU tensors (viewed as :class:`HostArray`)."""

    device_type = object_device = "cpu"
    _module = HostNcclModule()

    @staticmethod
    def _modules() -> tuple:
        return xp, HostNCCL._module

    @staticmethod
    def _array(tensor):
        array = tensor.numpy(force=True)
        if array.dtype == ml_dtypes.bfloat16:  # as the cuda runtime's view of a storage-only dtype: the bits
            array = array.view(np.uint16)
        return array.view(HostArray)
