"""Every collective of the nccl backend on cuda tensors against NumPy, run by each rank of
``python -m core.distributed.run --nproc-per-node N`` (one GPU per rank); prints 'rank R nccl ok N'.

Every rank draws every rank's inputs from one seeded generator, so each can compute the expected result itself.
The inputs are small integers, so that float16/bfloat16 sums, products and halves are exact.
"""

import os
import sys
from datetime import timedelta

import ml_dtypes
import numpy as np

import core
import core.distributed as dist

local = int(os.environ.get("LOCAL_RANK", "0"))
core.cuda.set_device(local)
DEV = f"cuda:{local}"
dist.init_process_group("nccl", timeout=timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
assert dist.get_backend() == "nccl" and dist.is_nccl_available()
checks = 0

NUMPY = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
         "int8": np.int8, "uint8": np.uint8, "int32": np.int32, "int64": np.int64, "bool": np.bool_}


def host(x):
    return x.detach().cpu().numpy().astype(np.float64)


def check(got, want, what):
    global checks
    got = host(got) if isinstance(got, core.Tensor) else np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"rank {rank}: {what}: got {got}, want {want}")
    checks += 1


def inputs(shape, dtype, salt=0):
    """One array per rank, the same on every rank."""
    rng = np.random.default_rng(salt)
    low, high = {"bool": (0, 2), "uint8": (0, 4)}.get(dtype, (-3, 4))
    return [rng.integers(low, high, shape).astype(NUMPY[dtype]) for _ in range(world)]


def t(a):
    return core.from_numpy(np.ascontiguousarray(a)).to(DEV)


REFERENCE = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.PRODUCT: np.prod, dist.ReduceOp.MIN: np.min,
             dist.ReduceOp.MAX: np.max}

for dtype in NUMPY:
    for shape in ((6,), (2, 3 * world)):
        xs = inputs(shape, dtype)
        wide = np.stack(xs).astype(np.float64)
        what = f"{dtype}{shape}"
        for op, ref in REFERENCE.items():
            out = t(xs[rank])
            dist.all_reduce(out, op=op)
            want = ref(wide, axis=0)
            check(out, want != 0 if dtype == "bool" else want, f"all_reduce {op} {what}")  # bool: SUM is OR
        out = t(xs[rank])
        if dtype == "bool":
            try:
                dist.all_reduce(out, op=dist.ReduceOp.AVG)
            except TypeError as error:
                assert "Cannot use ReduceOp.AVG with boolean inputs" in str(error), error
            else:
                raise AssertionError("AVG of bool tensors was accepted")
        else:
            dist.all_reduce(out, op=dist.ReduceOp.AVG)
            total = wide.sum(0)
            check(out, total / world if "float" in dtype else np.trunc(total / world), f"all_reduce AVG {what}")
        out = t(xs[rank])
        work = dist.all_reduce(out, async_op=True)
        assert work.wait() and work.is_completed() and work.is_success()
        check(out, wide.max(0) if dtype == "bool" else wide.sum(0), f"async all_reduce {what}")
        # a strided tensor is staged through a contiguous copy and written back into the view
        base = core.zeros((*shape, 2), dtype=out.dtype, device=DEV)
        view = base[..., 1]
        view.copy_(t(xs[rank]))
        dist.all_reduce(view, op=dist.ReduceOp.MAX)
        check(base[..., 1], wide.max(0), f"strided all_reduce {what}")
        check(base[..., 0], np.zeros(shape), f"strided all_reduce leaves the rest {what}")
        for src in range(world):
            out = t(xs[rank])
            dist.broadcast(out, src=src)
            check(out, wide[src], f"broadcast from {src} {what}")
        out = t(xs[rank])
        dist.reduce(out, dst=world - 1, op=dist.ReduceOp.MIN)
        check(out, wide.min(0) if rank == world - 1 else wide[rank], f"reduce {what}")
        outs = [core.zeros(shape, dtype=out.dtype, device=DEV) for _ in range(world)]
        dist.all_gather(outs, t(xs[rank]))
        for o, x in zip(outs, wide):
            check(o, x, f"all_gather {what}")
        cat = core.zeros((world * shape[0], *shape[1:]), dtype=out.dtype, device=DEV)
        dist.all_gather_into_tensor(cat, t(xs[rank]), async_op=True).wait()
        check(cat, np.concatenate(wide), f"all_gather_into_tensor {what}")
        if dtype == "bool":
            continue  # the rest reduce with SUM, which on bool is OR: covered above
        lists = [inputs(shape, dtype, salt=1 + r) for r in range(world)]  # lists[r][i]: rank r's i-th input
        out = core.zeros(shape, dtype=out.dtype, device=DEV)
        dist.reduce_scatter(out, [t(a) for a in lists[rank]])
        check(out, sum(lists[r][rank].astype(np.float64) for r in range(world)), f"reduce_scatter {what}")
        if shape[0] % world == 0:
            out = core.zeros((shape[0] // world, *shape[1:]), dtype=out.dtype, device=DEV)
            dist.reduce_scatter_tensor(out, t(xs[rank]))
            check(out, np.split(wide.sum(0), world)[rank], f"reduce_scatter_tensor {what}")
        gathered = [core.zeros(shape, dtype=out.dtype, device=DEV) for _ in range(world)] if rank == 0 else None
        dist.gather(t(xs[rank]), gathered, dst=0)
        if rank == 0:
            for o, x in zip(gathered, wide):
                check(o, x, f"gather {what}")
        out = core.zeros(shape, dtype=out.dtype, device=DEV)
        dist.scatter(out, [t(a) for a in lists[0]] if rank == 0 else None, src=0)
        check(out, lists[0][rank].astype(np.float64), f"scatter {what}")
        # all_to_all with uneven pieces: rank r sends r + i + 1 rows to rank i
        pieces = [[np.full((r + i + 1, 2), 10 * r + i).astype(NUMPY[dtype]) for i in range(world)]
                  for r in range(world)]
        outs = [core.zeros((r + rank + 1, 2), dtype=out.dtype, device=DEV) for r in range(world)]
        dist.all_to_all(outs, [t(p) for p in pieces[rank]])
        for r, o in enumerate(outs):
            check(o, pieces[r][rank].astype(np.float64), f"all_to_all {what}")
        splits_out = [r + rank + 1 for r in range(world)]
        out = core.zeros((sum(splits_out), 2), dtype=out.dtype, device=DEV)
        dist.all_to_all_single(out, t(np.concatenate(pieces[rank])), splits_out, [rank + i + 1 for i in range(world)])
        check(out, np.concatenate([pieces[r][rank] for r in range(world)]).astype(np.float64),
              f"all_to_all_single {what}")

# contiguous cuda tensors are handed to NCCL as their own memory; strided ones are staged
pg = dist.GroupMember.WORLD
x = core.ones(3, device=DEV)
array, write_back = pg.buffer(x)
assert write_back is None and array.data.ptr == x.data_ptr()
array, write_back = pg.buffer(core.ones(3, 2, device=DEV)[:, 0])
assert write_back is not None and array.flags.c_contiguous
# refusals, with PyTorch's errors
for call, error, text in ((lambda: dist.all_reduce(core.ones(2)), RuntimeError,
                           "No backend type associated with device type cpu"),
                          (lambda: dist.all_reduce(core.ones(2, device=DEV), op=dist.ReduceOp.BAND), ValueError,
                           "Cannot use ReduceOp.BAND with NCCL"),
                          (lambda: dist.all_reduce(core.ones(2, dtype=core.int16, device=DEV)), RuntimeError,
                           "Unsupported data type for NCCL process group"),
                          (lambda: dist.recv(core.ones(2, device=DEV)), RuntimeError, "recv from any source")):
    try:
        call()
    except error as caught:
        assert text in str(caught), caught
    else:
        raise AssertionError(f"accepted: {text}")
# complex tensors travel as pairs of reals
out = core.tensor([1 + 2j * rank, 3j], dtype=core.complex64, device=DEV)
dist.all_reduce(out)
got = out.cpu().numpy()
assert np.array_equal(got, [world + 1j * world * (world - 1), 3j * world]), got
# a future chained with then() drives the work
out = core.ones(2, device=DEV)
doubled = dist.all_reduce(out, async_op=True).get_future().then(lambda fut: fut.value()[0] * 2)
check(doubled.wait(), np.full(2, 2.0 * world), "get_future().then()")

# point to point (world >= 2): a ring, once as isend/recv, once batched both ways at once
if world > 1:
    right, left = (rank + 1) % world, (rank - 1) % world
    got = core.zeros(3, device=DEV)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, core.full((3,), 10.0 + rank, device=DEV), right),
                                    dist.P2POp(dist.irecv, got, left)])
    assert all(w.wait() for w in works)
    check(got, np.full(3, 10.0 + left), "batch_isend_irecv")
    if rank == 0:
        dist.send(core.full((2,), 5.0, device=DEV), dst=1)
    elif rank == 1:
        got = core.zeros(2, 2, device=DEV)
        assert dist.recv(got[:, 1], src=0) == 0  # into a view
        check(got, [[0, 5], [0, 5]], "recv into a view")
# object collectives travel through the current cuda device
objects = [{"rank": rank, "name": "r" * rank}]
dist.broadcast_object_list(objects, src=world - 1)
assert objects[0]["rank"] == world - 1, objects
gathered = []
dist.all_gather_object(gathered, ("x", rank))
assert gathered == [("x", r) for r in range(world)], gathered
# a subgroup of ranks {0, world-1}: its own communicator
sub = dist.new_group([0, world - 1])
if rank in (0, world - 1):
    out = core.tensor([rank + 1.0], device=DEV)
    dist.all_reduce(out, group=sub)
    check(out, [1.0 if world == 1 else world + 1.0], "subgroup all_reduce")
dist.barrier()
dist.monitored_barrier(timeout=timedelta(seconds=30))
dist.destroy_process_group()
os.write(1, f"rank {rank} nccl ok {checks}\n".encode())  # one write: the ranks share the pipe
sys.exit(0)
