"""Every collective against a NumPy reference, run by each rank of ``mpiexec -n N``; prints 'rank R ok N'.

Every rank draws every rank's inputs from one seeded generator, so each can compute the expected result itself.
"""

import os
import sys
from datetime import timedelta

import numpy as np

import core
import core.distributed as dist

dist.init_process_group("mpi", timeout=timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
checks = 0


def check(got, want, what):
    global checks
    got = got.detach().numpy() if isinstance(got, core.Tensor) else np.asarray(got)
    if not np.allclose(got, want, rtol=1e-6, atol=1e-6) or got.shape != np.shape(want):
        raise AssertionError(f"rank {rank}: {what}: got {got}, want {want}")
    checks += 1


def inputs(shape, dtype, salt=0):
    """One array per rank, the same on every rank."""
    rng = np.random.default_rng(salt)
    if np.dtype(dtype).kind == "f":
        return [rng.standard_normal(shape).astype(dtype) for _ in range(world)]
    return [rng.integers(-5, 6, shape).astype(dtype) for _ in range(world)]


def t(a):
    return core.from_numpy(np.array(a))


for dtype in ("float32", "float64", "int64"):
    for shape in ((6,), (2, 3 * world)):
        xs = inputs(shape, dtype)
        mine = xs[rank]
        what = f"{dtype}{shape}"
        for op, ref in ((dist.ReduceOp.SUM, np.sum), (dist.ReduceOp.PRODUCT, np.prod), (dist.ReduceOp.MIN, np.min),
                        (dist.ReduceOp.MAX, np.max)):
            out = t(mine)
            dist.all_reduce(out, op=op)
            check(out, ref(np.stack(xs), axis=0), f"all_reduce {op} {what}")
        out = t(mine)
        dist.all_reduce(out, op=dist.ReduceOp.AVG)
        total = np.stack(xs).sum(0)
        check(out, total / world if dtype != "int64" else np.trunc(total / world), f"all_reduce AVG {what}")
        out = t(mine)
        work = dist.all_reduce(out, async_op=True)
        assert work.wait() and work.is_completed()
        check(out, np.sum(np.stack(xs), 0), f"async all_reduce {what}")
        # strided (staged) tensor: the result is written back into the view
        base = core.zeros((*shape, 2), dtype=out.dtype)
        view = base[..., 0]
        view.copy_(t(mine))
        dist.all_reduce(view)
        check(base[..., 0], np.sum(np.stack(xs), 0), f"strided all_reduce {what}")
        for src in range(world):
            out = t(mine)
            dist.broadcast(out, src=src)
            check(out, xs[src], f"broadcast from {src} {what}")
        out = t(mine)
        dist.reduce(out, dst=world - 1, op=dist.ReduceOp.MAX)
        if rank == world - 1:
            check(out, np.max(np.stack(xs), 0), f"reduce {what}")
        outs = [core.zeros(shape, dtype=out.dtype) for _ in range(world)]
        dist.all_gather(outs, t(mine))
        for o, x in zip(outs, xs):
            check(o, x, f"all_gather {what}")
        cat = core.zeros((world * shape[0], *shape[1:]), dtype=out.dtype)
        dist.all_gather_into_tensor(cat, t(mine), async_op=True).wait()
        check(cat, np.concatenate(xs), f"all_gather_into_tensor {what}")
        lists = [inputs(shape, dtype, salt=1 + r) for r in range(world)]  # lists[r][i]: rank r's i-th input
        out = core.zeros(shape, dtype=out.dtype)
        dist.reduce_scatter(out, [t(a) for a in lists[rank]])
        check(out, sum(lists[r][rank] for r in range(world)), f"reduce_scatter {what}")
        out = core.zeros((shape[0] // world if shape[0] % world == 0 else shape[0], *shape[1:]), dtype=out.dtype)
        if shape[0] % world == 0:
            dist.reduce_scatter_tensor(out, t(mine))
            total = np.sum(np.stack(xs), 0)
            check(out, np.split(total, world)[rank], f"reduce_scatter_tensor {what}")
        gathered = [core.zeros(shape, dtype=out.dtype) for _ in range(world)] if rank == 0 else None
        dist.gather(t(mine), gathered, dst=0)
        if rank == 0:
            for o, x in zip(gathered, xs):
                check(o, x, f"gather {what}")
        out = core.zeros(shape, dtype=out.dtype)
        dist.scatter(out, [t(a) for a in lists[0]] if rank == 0 else None, src=0)
        check(out, lists[0][rank], f"scatter {what}")
        # all_to_all with uneven pieces: rank r sends r + i + 1 rows to rank i
        pieces = [[np.full((r + i + 1, 2), 10 * r + i, dtype) for i in range(world)] for r in range(world)]
        outs = [core.zeros((r + rank + 1, 2), dtype=out.dtype) for r in range(world)]
        dist.all_to_all(outs, [t(p) for p in pieces[rank]])
        for r, o in enumerate(outs):
            check(o, pieces[r][rank], f"all_to_all {what}")
        rows = np.concatenate(pieces[rank])
        splits_in = [rank + i + 1 for i in range(world)]
        splits_out = [r + rank + 1 for r in range(world)]
        out = core.zeros((sum(splits_out), 2), dtype=out.dtype)
        dist.all_to_all_single(out, t(rows), splits_out, splits_in)
        check(out, np.concatenate([pieces[r][rank] for r in range(world)]), f"all_to_all_single {what}")

# Work.get_future: the value is the reduced tensor; futures chained with then() drive the work too
out = core.ones(2)
doubled = dist.all_reduce(out, async_op=True).get_future().then(lambda fut: fut.value()[0] * 2)
check(doubled.wait(), np.full(2, 2.0 * world), "get_future().then()")
future = dist.broadcast(out, src=0, async_op=True).get_future()
assert future.wait()[0] is out and future.done()

# 16-bit floats are staged through float32; contiguous host tensors go to MPI as their own memory
for dtype in (core.float16, core.bfloat16):
    out = core.full((4,), rank + 0.5, dtype=dtype)
    dist.all_reduce(out)
    check(out.float(), np.full(4, sum(r + 0.5 for r in range(world))), f"all_reduce {dtype}")
out = core.tensor([1 + 2j * rank, 3j], dtype=core.complex64)
dist.all_reduce(out)
check(out, [world + 1j * world * (world - 1), 3j * world], "all_reduce complex64")
array, write_back = dist.GroupMember.WORLD.buffer(out := core.ones(3))
assert np.shares_memory(array, out.numpy()) and write_back is None
array, write_back = dist.GroupMember.WORLD.buffer(core.ones(3, 2)[:, 0])
assert write_back is not None and array.flags.c_contiguous

# point to point: a ring
x = core.full((3,), float(rank))
got = core.zeros(3)
right, left = (rank + 1) % world, (rank - 1) % world
send_work = dist.isend(x, dst=right, tag=7)
assert dist.recv(got, src=left, tag=7) == left
send_work.wait()
check(got, np.full(3, float(left)), "ring isend/recv")
if rank == 0:
    dist.send(core.ones(2) * 5, dst=1)
elif rank == 1:
    work = dist.irecv(got[:2])  # any source, into a view
    assert work.result() == 0
    check(got, [5, 5, left], "irecv into a view")
# batched point to point: the ring the other way round
got = core.zeros(3)
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, core.full((3,), 10.0 + rank), left, tag=3),
                                dist.P2POp(dist.irecv, got, right, tag=3)])
assert all(w.wait() for w in works)
check(got, np.full(3, 10.0 + right), "batch_isend_irecv")
if rank == 0:
    dist.send_object_list([{"to": 1}, "two"], dst=1)
elif rank == 1:
    received = [None, None]
    assert dist.recv_object_list(received, src=0) == 0 and received == [{"to": 1}, "two"], received
dist.monitored_barrier(timeout=timedelta(seconds=10))
assert dist.get_node_local_rank(fallback_rank=rank) == int(os.environ.get("LOCAL_RANK", rank))
assert dist.get_pg_count() == 1 and not dist.is_gloo_available()
assert dist.is_mpi_available() and dist.is_backend_available("mpi")
# subgroups: every rank alone, then rank 0 against the rest
alone, subgroups = dist.new_subgroups(group_size=1)
assert len(subgroups) == world and dist.get_process_group_ranks(alone) == [rank]
out = core.tensor([rank + 1.0])
dist.all_reduce(out, group=alone)
check(out, [rank + 1.0], "all_reduce in a one-rank subgroup")
rest, subgroups = dist.new_subgroups_by_enumeration([[0], list(range(1, world))])
assert dist.get_process_group_ranks(rest) == ([0] if rank == 0 else list(range(1, world)))
out = core.ones(2)
dist.all_reduce(out, group=rest)
check(out, np.full(2, 1.0 if rank == 0 else world - 1.0), "all_reduce in a subgroup of the rest")
try:
    dist.all_reduce(core.tensor([1j]), op=dist.ReduceOp.MAX)
except ValueError as error:
    assert "all_reduce does not support" in str(error) and "complex" in str(error)
else:
    raise AssertionError("MAX of complex tensors was accepted")
# object collectives
objects = [{"rank": rank, "name": "r" * rank}]
dist.broadcast_object_list(objects, src=world - 1)
check(objects[0]["rank"], world - 1, "broadcast_object_list")
gathered = []
dist.all_gather_object(gathered, ("x", rank, list(range(rank))))
assert gathered == [("x", r, list(range(r))) for r in range(world)], gathered
out = [None] * world if rank == 0 else None
dist.gather_object({"r": rank}, out, dst=0)
assert rank != 0 or out == [{"r": r} for r in range(world)], out
mine = [None]
dist.scatter_object_list(mine, [f"to {r}" * (r + 1) for r in range(world)] if rank == 0 else None, src=0)
assert mine == [f"to {rank}" * (rank + 1)], mine
# subgroup of ranks {0, world-1}
sub = dist.new_group([0, world - 1])
if rank in (0, world - 1):
    out = core.tensor([rank + 1.0])
    dist.all_reduce(out, group=sub)
    check(out, [world + 1.0], "subgroup all_reduce")
    assert dist.get_process_group_ranks(sub) == [0, world - 1]
else:
    assert sub is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1
dist.barrier()
dist.destroy_process_group()
os.write(1, f"rank {rank} ok {checks}\n".encode())  # one write: the ranks share the pipe
sys.exit(0)
