"""Process groups and collectives with ``torch.distributed``'s API, over a process-group backend plugin.

Each collective checks its arguments, asks the group's backend for buffers of the tensors (their own memory
where the backend can use it, staged copies otherwise) and starts one nonblocking operation; ``async_op=True``
returns its :class:`Work`, otherwise the call waits for it (raising DistBackendError after the group's timeout).
Ranks in arguments are global ranks (``src``/``dst``) or group ranks (``group_src``/``group_dst``), as in PyTorch.
"""

from __future__ import annotations

import contextlib
import pickle
import sys
from datetime import timedelta

import numpy as np

from ..tensor import Tensor
from .backends import ProcessGroup, ReduceOp, Work, default_pg_timeout, process_group_backend
from .rendezvous import Rendezvous

__all__ = ["is_available", "is_initialized", "is_mpi_available", "is_backend_available", "init_process_group",
           "destroy_process_group", "new_group", "get_rank", "get_world_size", "get_backend", "group",
           "GroupMember", "get_process_group_ranks", "get_group_rank", "get_global_rank", "barrier", "all_reduce",
           "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
           "gather", "scatter", "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv",
           "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
           "is_nccl_available", "is_gloo_available", "get_pg_count", "get_node_local_rank", "monitored_barrier",
           "P2POp", "batch_isend_irecv", "send_object_list", "recv_object_list", "Backend", "is_ucc_available",
           "is_xccl_available", "is_torchelastic_launched", "supports_complex", "get_default_backend_for_device",
           "new_subgroups", "new_subgroups_by_enumeration"]


class GroupMember:
    """The default group and the marker ``new_group`` returns to ranks outside the group
    (``torch.distributed.GroupMember``)."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


group = GroupMember  # torch.distributed.group.WORLD
_STATE = {"backend": None, "groups": [], "excepthook": None}


# -- set-up ----------------------------------------------------------------------------------------------------
def is_available() -> bool:
    """Whether the distributed package is available (``torch.distributed.is_available``): always, in core."""
    return True


def is_backend_available(backend: str) -> bool:
    """Whether process-group backend ``backend`` is installed and usable
    (``torch.distributed.is_backend_available``)."""
    try:
        process_group_backend(backend.lower())
    except (RuntimeError, ImportError):
        return False
    return True


def is_mpi_available() -> bool:
    """Whether the MPI backend is usable: mpi4py and an MPI are installed (``torch.distributed.is_mpi_available``)."""
    return is_backend_available("mpi")


def is_initialized() -> bool:
    """Whether the default process group is initialized (``torch.distributed.is_initialized``)."""
    return GroupMember.WORLD is not None


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None) -> None:
    """Start the default process group (``torch.distributed.init_process_group``).

    The processes come from the launcher (``mpiexec`` or ``python -m core.distributed.run``): MPI gives each its
    rank and the world size (``nccl`` also takes them from ``store``/``tcp://``/``file://``, see
    ``core.distributed.rendezvous``). ``init_method="env://"`` (the default) reads ``RANK``/``WORLD_SIZE`` where
    set, and explicit ``rank``/``world_size`` must agree with MPI's. On a job of several ranks, an uncaught exception in
    any rank prints its traceback and aborts every rank (a ``sys.excepthook``), so none waits forever.
    """
    import os

    if is_initialized():
        raise ValueError("trying to initialize the default process group twice!")
    name = (backend or "mpi").lower()
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"init_process_group(): timeout must be a datetime.timedelta, got {type(timeout).__name__}")
    if init_method not in (None, "env://") and not str(init_method).startswith(("tcp://", "file://")):
        raise ValueError(f"init_process_group(): unsupported init_method {init_method!r} "
                         "(expected 'env://', 'tcp://HOST:PORT' or 'file://PATH')")
    seconds = (timeout or default_pg_timeout).total_seconds()
    world = process_group_backend(name).world(seconds, Rendezvous(init_method, rank, world_size, store))
    env = {"rank": os.environ.get("RANK"), "world_size": os.environ.get("WORLD_SIZE")}
    for what, given, actual in (("world_size", world_size, world.size), ("rank", rank, world.rank)):
        if given not in (-1, None) and int(given) != actual or init_method in (None, "env://") and \
                env[what] is not None and int(env[what]) != actual:
            raise RuntimeError(f"init_process_group(): {what} {given if given not in (-1, None) else env[what]} "
                               f"does not match the launcher's ({actual}); start the processes with mpiexec -n N "
                               "or python -m core.distributed.run --nproc-per-node N")
    GroupMember.WORLD, _STATE["backend"] = world, name
    _STATE["groups"] = [world]
    if world.size > 1:
        _STATE["excepthook"] = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def _abort_on_uncaught(exc_type, exc, tb) -> None:
    """Print the exception, then end every rank: the others would otherwise wait for this one until the timeout."""
    (_STATE["excepthook"] or sys.__excepthook__)(exc_type, exc, tb)
    world = GroupMember.WORLD
    if world is not None:
        sys.stderr.write(f"core.distributed: rank {world.rank} raised an uncaught {exc_type.__name__}; aborting "
                         "every rank of the job\n")
        sys.stderr.flush()
        world.abort()


def destroy_process_group(group=None) -> None:
    """Destroy ``group``, or every group and the default one (``torch.distributed.destroy_process_group``)."""
    if group is None or group is GroupMember.WORLD:
        for pg in reversed(_STATE["groups"]):
            pg.close()
        _STATE["groups"], GroupMember.WORLD, _STATE["backend"] = [], None, None
        if _STATE["excepthook"] is not None:
            sys.excepthook, _STATE["excepthook"] = _STATE["excepthook"], None
    elif group is not GroupMember.NON_GROUP_MEMBER:
        group.close()
        _STATE["groups"].remove(group)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """A process group of the global ``ranks`` (``torch.distributed.new_group``); every rank must call it. Ranks
    outside it get ``GroupMember.NON_GROUP_MEMBER``."""
    world = _group(None)
    ranks = sorted(range(world.size) if ranks is None else {int(r) for r in ranks})
    if any(r < 0 or r >= world.size for r in ranks):
        raise ValueError(f"new_group(): ranks {ranks} must lie in [0, {world.size})")
    seconds = timeout.total_seconds() if timeout is not None else world.timeout
    pg = world.new_group(ranks, seconds)
    if pg is None:
        return GroupMember.NON_GROUP_MEMBER
    _STATE["groups"].append(pg)
    return pg


def _group(group) -> ProcessGroup:
    """``group``, or the default group; ValueError before ``init_process_group``."""
    world = GroupMember.WORLD
    if world is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return world if group is None else group


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (``torch.distributed.get_rank``); -1 outside it."""
    pg = _group(group)
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.rank


def get_world_size(group=None) -> int:
    """The number of processes in ``group`` (``torch.distributed.get_world_size``); -1 outside it."""
    pg = _group(group)
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.size


def get_backend(group=None) -> str:
    """The name of ``group``'s backend, e.g. ``"mpi"`` (``torch.distributed.get_backend``)."""
    pg = _group(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return pg.name


def get_process_group_ranks(group) -> list:
    """The global ranks of ``group``'s members, in group-rank order (``torch.distributed.get_process_group_ranks``)."""
    return list(_group(group).ranks)


def get_group_rank(group, global_rank: int) -> int:
    """The rank in ``group`` of global rank ``global_rank`` (``torch.distributed.get_group_rank``)."""
    pg = _group(group)
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.ranks}")
    return pg.ranks.index(global_rank)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of ``group``'s rank ``group_rank`` (``torch.distributed.get_global_rank``)."""
    pg = _group(group)
    if not 0 <= group_rank < pg.size:
        raise ValueError(f"Group rank {group_rank} is not part of group {pg.ranks}")
    return pg.ranks[group_rank]


# -- helpers -----------------------------------------------------------------------------------------------------
def _tensor(value, name: str, op: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): expected parameter `{name}` of type Tensor but got {type(value).__name__} instead")
    return value


def _tensors(values, name: str, op: str, count: int | None = None) -> list:
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{op}(): expected parameter `{name}` to be a list of Tensors, got {type(values).__name__}")
    values = [_tensor(v, name, op) for v in values]
    if count is not None and len(values) != count:
        raise ValueError(f"{op}(): `{name}` must hold one tensor per rank of the group ({count}), got {len(values)}")
    return values


def _root(pg, rank, group_rank, op: str, default=None) -> int:
    """The group rank of a collective's root, from a global ``rank`` or a ``group_rank`` (exactly one)."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{op}(): can not specify both the global rank and the group rank")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size:
            raise ValueError(f"{op}(): group rank {group_rank} is not part of the group of size {pg.size}")
        return group_rank
    rank = default if rank is None else rank
    if rank is None:
        raise ValueError(f"{op}(): either the global rank or the group rank must be given")
    return get_group_rank(pg, rank)


def _same_shape(tensors: list, like: Tensor, op: str) -> None:
    for t in tensors:
        if t.shape != like.shape or t.dtype != like.dtype:
            raise ValueError(f"{op}(): every tensor must have shape {tuple(like.shape)} and dtype {like.dtype.name}, "
                             f"got {tuple(t.shape)} and {t.dtype.name}")


def _run(work: Work, async_op: bool, outputs=None):
    """The Work for ``async_op`` (``outputs``, the tensors written, become its result), else wait for it."""
    if not async_op:
        work.wait()
        return None
    if outputs is not None:
        work._result = outputs
    return work


def _member(pg) -> bool:
    return pg is not GroupMember.NON_GROUP_MEMBER


_REAL_ONLY = frozenset({ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR})


def _reduce_op(op, name: str, tensor=None) -> ReduceOp:
    if op.__class__ is not ReduceOp:
        raise TypeError(f"{name}(): op must be a ReduceOp, got {op!r}")
    if op in _REAL_ONLY and tensor is not None and tensor.is_complex():
        raise ValueError(f"{name} does not support {op} on complex tensors")
    return op


# -- collectives ---------------------------------------------------------------------------------------------------
def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of ``group`` reaches this call (``torch.distributed.barrier``)."""
    pg = _group(group)
    return _run(pg.barrier(), async_op) if _member(pg) else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over every rank, in place on every rank (``torch.distributed.all_reduce``).

    The common call (a contiguous host tensor, SUM, synchronous) is one buffer look-up and one backend operation
    waited for: a small message's time is mostly this function's own Python, so it checks only what can be wrong
    (SUM needs no check against the dtype) and leaves the rest to the checks that raise the errors."""
    pg = GroupMember.WORLD if group is None else group
    if pg is None or op is not ReduceOp.SUM or not isinstance(tensor, Tensor):
        pg, tensor = _group(group), _tensor(tensor, "tensor", "all_reduce")
        op = _reduce_op(op, "all_reduce", tensor)
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    array, write_back = pg.buffer(tensor)
    if op is ReduceOp.AVG:
        finish = (pg.average(array), write_back)
    else:
        finish = (write_back,) if write_back is not None else ()
    return _run(pg.allreduce(array, op, finish), async_op, [tensor])


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank ``src``'s ``tensor`` into every rank's (``torch.distributed.broadcast``)."""
    pg, tensor = _group(group), _tensor(tensor, "tensor", "broadcast")
    if not _member(pg):
        return None
    root = _root(pg, src, group_src, "broadcast")
    array, write_back = pg.buffer(tensor, read_only=pg.rank == root)
    return _run(pg.broadcast(array, root, [write_back]), async_op, [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` over every rank into rank ``dst``'s (``torch.distributed.reduce``)."""
    pg, tensor = _group(group), _tensor(tensor, "tensor", "reduce")
    op = _reduce_op(op, "reduce", tensor)
    if not _member(pg):
        return None
    root = _root(pg, dst, group_dst, "reduce")
    array, write_back = pg.buffer(tensor, read_only=pg.rank != root)
    average = pg.average(array) if op is ReduceOp.AVG and pg.rank == root else None
    return _run(pg.reduce(array, op, root, [average, write_back]), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's ``tensor`` into ``tensor_list`` on every rank (``torch.distributed.all_gather``)."""
    pg, tensor = _group(group), _tensor(tensor, "tensor", "all_gather")
    if not _member(pg):
        return None
    outputs = _tensors(tensor_list, "tensor_list", "all_gather", pg.size)
    _same_shape(outputs, tensor, "all_gather")
    send, _ = pg.buffer(tensor, read_only=True)
    recv = pg.xp.empty((pg.size, *send.shape), send.dtype)
    return _run(pg.allgather(send, recv, [lambda: [pg.write(t, a) for t, a in zip(outputs, recv)]]), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` concatenated (or stacked) into ``output_tensor``
    (``torch.distributed.all_gather_into_tensor``)."""
    pg = _group(group)
    output = _tensor(output_tensor, "output_tensor", "all_gather_into_tensor")
    tensor = _tensor(input_tensor, "input_tensor", "all_gather_into_tensor")
    if not _member(pg):
        return None
    if output.numel() != tensor.numel() * pg.size or output.dtype != tensor.dtype:
        raise ValueError(f"all_gather_into_tensor(): output_tensor must hold world_size ({pg.size}) times the "
                         f"input's {tensor.numel()} elements of dtype {tensor.dtype.name}, got {output.numel()} of "
                         f"{output.dtype.name}")
    send, _ = pg.buffer(tensor, read_only=True)
    recv, write_back = pg.buffer(output)
    return _run(pg.allgather(send, recv, [write_back]), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list`` over every rank; rank i keeps the i-th result in ``output``
    (``torch.distributed.reduce_scatter``)."""
    pg, output = _group(group), _tensor(output, "output", "reduce_scatter")
    op = _reduce_op(op, "reduce_scatter")
    if not _member(pg):
        return None
    inputs = _tensors(input_list, "input_list", "reduce_scatter", pg.size)
    _same_shape(inputs, output, "reduce_scatter")
    send = pg.xp.stack([pg.buffer(t, read_only=True)[0] for t in inputs])
    recv, write_back = pg.buffer(output)
    average = pg.average(recv) if op is ReduceOp.AVG else None
    return _run(pg.reduce_scatter(send, recv, op, [average, write_back]), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` over every rank; rank i keeps the i-th of world_size equal chunks in ``output``
    (``torch.distributed.reduce_scatter_tensor``)."""
    pg, output = _group(group), _tensor(output, "output", "reduce_scatter_tensor")
    tensor, op = _tensor(input, "input", "reduce_scatter_tensor"), _reduce_op(op, "reduce_scatter_tensor")
    if not _member(pg):
        return None
    if tensor.numel() != output.numel() * pg.size or output.dtype != tensor.dtype:
        raise ValueError(f"reduce_scatter_tensor(): input must hold world_size ({pg.size}) times the output's "
                         f"{output.numel()} elements of dtype {output.dtype.name}, got {tensor.numel()} of "
                         f"{tensor.dtype.name}")
    send, _ = pg.buffer(tensor, read_only=True)
    recv, write_back = pg.buffer(output)
    average = pg.average(recv) if op is ReduceOp.AVG else None
    return _run(pg.reduce_scatter(send, recv, op, [average, write_back]), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (``torch.distributed.gather``)."""
    pg, tensor = _group(group), _tensor(tensor, "tensor", "gather")
    if not _member(pg):
        return None
    root = _root(pg, dst, group_dst, "gather", default=0)
    send, _ = pg.buffer(tensor, read_only=True)
    recv, finish = None, []
    if pg.rank == root:
        outputs = _tensors(gather_list, "gather_list", "gather", pg.size)
        _same_shape(outputs, tensor, "gather")
        recv = pg.xp.empty((pg.size, *send.shape), send.dtype)
        finish = [lambda: [pg.write(t, a) for t, a in zip(outputs, recv)]]
    elif gather_list:
        raise ValueError("gather(): Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    return _run(pg.gather(send, recv, root, finish), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src``'s ``scatter_list[i]`` into rank i's ``tensor`` (``torch.distributed.scatter``)."""
    pg, tensor = _group(group), _tensor(tensor, "tensor", "scatter")
    if not _member(pg):
        return None
    root = _root(pg, src, group_src, "scatter", default=0)
    send = None
    if pg.rank == root:
        inputs = _tensors(scatter_list, "scatter_list", "scatter", pg.size)
        _same_shape(inputs, tensor, "scatter")
        send = pg.xp.stack([pg.buffer(t, read_only=True)[0] for t in inputs])
    elif scatter_list:
        raise ValueError("scatter(): Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    recv, write_back = pg.buffer(tensor)
    return _run(pg.scatter(send, recv, root, [write_back]), async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank j's ``input_tensor_list[i]`` into rank i's ``output_tensor_list[j]`` (``torch.distributed.all_to_all``);
    the tensors may differ in size."""
    pg = _group(group)
    if not _member(pg):
        return None
    outputs = _tensors(output_tensor_list, "output_tensor_list", "all_to_all", pg.size)
    inputs = _tensors(input_tensor_list, "input_tensor_list", "all_to_all", pg.size)
    _same_dtype(outputs + inputs, "all_to_all")
    send = pg.xp.concatenate([pg.buffer(t, read_only=True)[0].reshape(-1) for t in inputs])
    recv = pg.xp.empty(sum(t.numel() for t in outputs), send.dtype)
    counts = [t.numel() for t in outputs]
    offsets = np.cumsum([0, *counts])

    def finish():
        for t, start, stop in zip(outputs, offsets[:-1], offsets[1:]):
            pg.write(t, recv[start:stop])

    return _run(pg.alltoallv(send, [t.numel() for t in inputs], recv, counts, [finish]), async_op)


def _same_dtype(tensors: list, op: str) -> None:
    if len({t.dtype for t in tensors}) > 1:
        raise ValueError(f"{op}(): every tensor must have the same dtype, got "
                         f"{sorted({t.dtype.name for t in tensors})}")


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """Split ``input`` along dim 0 and send the i-th piece to rank i; rank j's pieces land in ``output`` in rank
    order (``torch.distributed.all_to_all_single``); equal pieces unless split sizes are given."""
    pg = _group(group)
    output = _tensor(output, "output", "all_to_all_single")
    tensor = _tensor(input, "input", "all_to_all_single")
    if not _member(pg):
        return None
    _same_dtype([output, tensor], "all_to_all_single")

    def counts(t, splits, name):
        rows = t.shape[0] if t.dim() else 1
        row = t.numel() // rows if rows else 0
        if splits is None:
            if rows % pg.size:
                raise ValueError(f"all_to_all_single(): dim 0 of {name} ({rows}) must divide by the world size "
                                 f"({pg.size}) when no split sizes are given")
            splits = [rows // pg.size] * pg.size
        splits = [int(s) for s in splits]
        if len(splits) != pg.size or sum(splits) != rows:
            raise ValueError(f"all_to_all_single(): {name} split sizes {splits} must be {pg.size} numbers summing "
                             f"to dim 0 ({rows})")
        return [s * row for s in splits]

    send_counts = counts(tensor, input_split_sizes, "input")
    recv_counts = counts(output, output_split_sizes, "output")
    send, _ = pg.buffer(tensor, read_only=True)
    recv, write_back = pg.buffer(output)
    return _run(pg.alltoallv(send.reshape(-1), send_counts, recv.reshape(-1), recv_counts, [write_back]), async_op)


# -- point to point ------------------------------------------------------------------------------------------------
def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; returns a Work (``torch.distributed.isend``)."""
    pg, tensor = _group(group), _tensor(tensor, "tensor", "isend")
    if not _member(pg):
        return None
    peer = _root(pg, dst, group_dst, "isend")
    send, _ = pg.buffer(tensor, read_only=True)
    return pg.send(send, peer, tag)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None); returns a Work whose ``result()``
    is the sender's rank (``torch.distributed.irecv``)."""
    pg, tensor = _group(group), _tensor(tensor, "tensor", "irecv")
    if not _member(pg):
        return None
    peer = None if src is None and group_src is None else _root(pg, src, group_src, "irecv")
    recv, write_back = pg.buffer(tensor)
    return pg.recv(recv, peer, tag, [write_back])


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` (``torch.distributed.send``)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank
    (``torch.distributed.recv``)."""
    work = irecv(tensor, src, group, tag, group_src)
    return -1 if work is None else work.result()


# -- objects (pickled, sent as uint8 tensors through the collectives above) ---------------------------------------
def _pickled(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def _object_device(pg, device):
    """Where object collectives' byte tensors live: ``device`` when given, else the group's ``object_device``
    (the host for mpi, the current cuda device for nccl, as PyTorch)."""
    return device if device is not None else getattr(pg, "object_device", "cpu")


def _sizes(pg, size: int, dev) -> list:
    """Every rank's ``size`` (an all_gather of one int64)."""
    import core

    sizes = core.zeros(pg.size, dtype=core.int64, device=dev)
    all_gather_into_tensor(sizes, core.tensor([size], dtype=core.int64, device=dev), pg)
    return sizes.tolist()


def _padded(data: np.ndarray, length: int, dev):
    import core

    out = np.zeros(length, np.uint8)
    out[: len(data)] = data
    return core.from_numpy(out).to(dev)


def _host(tensor) -> np.ndarray:
    return tensor.cpu().numpy()


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None) -> None:
    """Rank ``src``'s picklable objects into every rank's ``object_list``, in place
    (``torch.distributed.broadcast_object_list``)."""
    import core

    pg = _group(group)
    if not _member(pg):
        return
    root, dev = _root(pg, src, group_src, "broadcast_object_list", default=0), _object_device(pg, device)
    data = _pickled(list(object_list)) if pg.rank == root else np.empty(0, np.uint8)
    length = core.tensor([len(data)], dtype=core.int64, device=dev)
    broadcast(length, group=pg, group_src=root)
    payload = _padded(data, int(length.item()), dev)
    broadcast(payload, group=pg, group_src=root)
    object_list[:] = pickle.loads(_host(payload).tobytes())


def all_gather_object(object_list, obj, group=None) -> None:
    """Every rank's picklable ``obj`` into ``object_list`` on every rank (``torch.distributed.all_gather_object``)."""
    import core

    pg = _group(group)
    if not _member(pg):
        return
    data, dev = _pickled(obj), _object_device(pg, None)
    sizes = _sizes(pg, len(data), dev)
    gathered = core.zeros(pg.size * max(sizes), dtype=core.uint8, device=dev)
    all_gather_into_tensor(gathered, _padded(data, max(sizes), dev), pg)
    rows = _host(gathered).reshape(pg.size, max(sizes))
    object_list[: pg.size] = [pickle.loads(row[:n].tobytes()) for row, n in zip(rows, sizes)]


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """Every rank's picklable ``obj`` into ``object_gather_list`` on rank ``dst``
    (``torch.distributed.gather_object``)."""
    import core

    pg = _group(group)
    if not _member(pg):
        return
    root = _root(pg, dst, group_dst, "gather_object", default=0)
    data, dev = _pickled(obj), _object_device(pg, None)
    sizes = _sizes(pg, len(data), dev)
    rows = [core.zeros(max(sizes), dtype=core.uint8, device=dev) for _ in range(pg.size)] if pg.rank == root \
        else None
    gather(_padded(data, max(sizes), dev), rows, group=pg, group_dst=root)
    if pg.rank == root:
        if object_gather_list is None:
            raise ValueError("gather_object(): object_gather_list must be a list on the destination rank")
        object_gather_list[: pg.size] = [pickle.loads(_host(row)[:n].tobytes()) for row, n in zip(rows, sizes)]


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None) -> None:
    """Rank ``src``'s i-th picklable object into rank i's ``scatter_object_output_list[0]``
    (``torch.distributed.scatter_object_list``)."""
    import core

    pg = _group(group)
    if not _member(pg):
        return
    root = _root(pg, src, group_src, "scatter_object_list", default=0)
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("scatter_object_list(): Expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    pieces = [_pickled(o) for o in scatter_object_input_list] if pg.rank == root else []
    if pg.rank == root and len(pieces) != pg.size:
        raise ValueError(f"scatter_object_list(): scatter_object_input_list must hold {pg.size} objects")
    dev = _object_device(pg, None)
    longest = core.tensor([max((len(p) for p in pieces), default=0)], dtype=core.int64, device=dev)
    broadcast(longest, group=pg, group_src=root)
    n = int(longest.item())
    size, row = core.zeros(1, dtype=core.int64, device=dev), core.zeros(n, dtype=core.uint8, device=dev)
    scatter(size, [core.tensor([len(p)], dtype=core.int64, device=dev) for p in pieces] or None, group=pg,
            group_src=root)
    scatter(row, [_padded(p, n, dev) for p in pieces] or None, group=pg, group_src=root)
    scatter_object_output_list[0] = pickle.loads(_host(row)[: int(size.item())].tobytes())




# -- more of torch.distributed's surface ---------------------------------------------------------------------------
def is_nccl_available() -> bool:
    """Whether an ``nccl`` process-group backend is installed and usable (``torch.distributed.is_nccl_available``)."""
    return is_backend_available("nccl")


def is_gloo_available() -> bool:
    """Whether a ``gloo`` process-group backend is installed and usable (``torch.distributed.is_gloo_available``)."""
    return is_backend_available("gloo")


def get_pg_count() -> int:
    """How many process groups exist, the default one included (``torch.distributed.get_pg_count``)."""
    return len(_STATE["groups"])


def get_node_local_rank(fallback_rank=None) -> int:
    """This process's rank on its machine, from ``LOCAL_RANK`` (set by ``core.distributed.run``), else
    ``fallback_rank`` (``torch.distributed.get_node_local_rank``)."""
    import os

    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
                       "and want the code to run locally instead.")


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False) -> None:
    """A barrier that raises, naming the ranks that are gone, when not every rank arrives within ``timeout``
    (default: the group's) (``torch.distributed.monitored_barrier``)."""
    pg = _group(group)
    if _member(pg):
        pg.barrier().wait(timeout)


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`: ``op`` is :func:`isend` or :func:`irecv`
    (``torch.distributed.P2POp``)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        if (peer is None) == (group_peer is None):
            raise ValueError("P2POp: exactly one of peer and group_peer must be given")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, \
            group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every operation of ``p2p_op_list`` (P2POps) and return their Works
    (``torch.distributed.batch_isend_irecv``)."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("batch_isend_irecv(): expected a non-empty list of P2POp")
    works, pg = [], _group(p2p_op_list[0].group)
    with pg.coalescing() if _member(pg) else contextlib.nullcontext():  # NCCL starts a batch's p2p together
        for p in p2p_op_list:
            if p.op is isend:
                works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
            else:
                works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None) -> None:
    """Send the picklable objects of ``object_list`` to rank ``dst`` (``torch.distributed.send_object_list``)."""
    import core

    data, dev = _pickled(list(object_list)), _object_device(_group(group), device)
    send(core.tensor([len(data)], dtype=core.int64, device=dev), dst, group, group_dst=group_dst)
    send(_padded(data, len(data), dev), dst, group, group_dst=group_dst)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None) -> int:
    """Receive objects sent by :func:`send_object_list` into ``object_list`` (in place); returns the sender's rank
    (``torch.distributed.recv_object_list``)."""
    import core

    dev = _object_device(_group(group), device)
    length = core.zeros(1, dtype=core.int64, device=dev)
    sender = recv(length, src, group, group_src=group_src)
    payload = core.zeros(int(length.item()), dtype=core.uint8, device=dev)
    recv(payload, sender, group)
    received = pickle.loads(_host(payload).tobytes())
    object_list[: len(received)] = received
    return sender


class Backend(str):
    """A process-group backend's name, lower-cased (``torch.distributed.Backend``): ``Backend("MPI") == "mpi"``;
    the constants name PyTorch's backends (only those installed, e.g. ``mpi``, can be used)."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got {type(name).__name__}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        return str.__new__(cls, name.lower() if value == Backend.UNDEFINED else value)


def is_ucc_available() -> bool:
    """Whether a ``ucc`` process-group backend is installed and usable (``torch.distributed.is_ucc_available``)."""
    return is_backend_available("ucc")


def is_xccl_available() -> bool:
    """Whether an ``xccl`` process-group backend is installed and usable (``torch.distributed.is_xccl_available``)."""
    return is_backend_available("xccl")


def is_torchelastic_launched() -> bool:
    """Whether torchelastic (torchrun) started this process: ``TORCHELASTIC_RUN_ID`` is set
    (``torch.distributed.is_torchelastic_launched``); core's own launcher does not set it."""
    import os

    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def supports_complex(reduceOp: ReduceOp) -> bool:
    """Whether ``reduceOp`` is defined on complex tensors (``torch.distributed.supports_complex``): not the
    ordering or bitwise ones."""
    return reduceOp not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND, ReduceOp.BOR,
                            ReduceOp.BXOR)


def get_default_backend_for_device(device) -> str:
    """The process-group backend used for tensors of ``device`` (a device or its type): the first installed
    backend that serves it (``torch.distributed.get_default_backend_for_device``)."""
    from ..plugins import get_manager

    device_type = getattr(device, "type", str(device)).partition(":")[0]
    manager = get_manager()
    manager.scan()
    for name, info in manager.process_group_backends.items():
        if device_type in info.devices:
            return name
    raise ValueError(f"Default backend not registered for device : {device_type}")


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None, pg_options=None,
                                 group_desc=None) -> tuple:
    """One new group per list of global ranks (disjoint); returns ``(this rank's subgroup or None, all
    subgroups)`` (``torch.distributed.new_subgroups_by_enumeration``); every rank calls it."""
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    seen: set = set()
    for ranks in ranks_per_subgroup_list:
        if seen & set(ranks):
            raise ValueError(f"Rank {sorted(seen & set(ranks))[0]} has appeared in both subgroup "
                             "lists: subgroups must be disjoint")
        seen |= set(ranks)
    mine, subgroups = None, []
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks, timeout=timeout)
        subgroups.append(subgroup)
        if subgroup is not GroupMember.NON_GROUP_MEMBER:
            mine = subgroup
    return mine, subgroups


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None) -> tuple:
    """Split the world into consecutive subgroups of ``group_size`` ranks; returns ``(this rank's subgroup, all
    subgroups)`` (``torch.distributed.new_subgroups``); every rank calls it."""
    world = get_world_size()
    if group_size is None:
        raise ValueError("new_subgroups(): group_size must be given (core has no per-machine device count)")
    if group_size <= 0 or world % group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive and divide the world size "
                         f"({world})")
    return new_subgroups_by_enumeration([list(range(i, i + group_size)) for i in range(0, world, group_size)],
                                        timeout=timeout)
