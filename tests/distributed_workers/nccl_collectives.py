"""Every collective of the nccl backend on cuda tensors against NumPy, run by each rank of
``python -m core.distributed.run --nproc-per-node N`` (one GPU per rank); prints 'rank R nccl ok N'.

Every rank draws every rank's inputs from one seeded generator, so each can compute the expected result itself.
The inputs are small integers, so that float16/bfloat16 sums and products are exact.
:func:`check_collectives` is also run by tests/test_nccl.py on the host (NCCL's semantics simulated there).
"""

import os
import sys
from datetime import timedelta

import ml_dtypes
import numpy as np

import core
import core.distributed as dist

NUMPY = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
         "int8": np.int8, "uint8": np.uint8, "int32": np.int32, "int64": np.int64, "bool": np.bool_}
REFERENCE = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.PRODUCT: np.prod, dist.ReduceOp.MIN: np.min,
             dist.ReduceOp.MAX: np.max}


def host(x):
    return x.detach().cpu().numpy().astype(np.float64)


def check_collectives(group, device, dtypes=tuple(NUMPY)) -> int:
    """Every collective of ``group`` on tensors of ``device`` against NumPy; returns how many checks passed."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    checks = 0

    def check(got, want, what):
        nonlocal checks
        if isinstance(got, core.Tensor) and got.dtype == core.bool:  # True must be the byte 1 (SUM is OR, not +)
            raw = got.detach().cpu().numpy().view(np.uint8)
            assert raw.max(initial=0) <= 1, f"rank {rank}: {what}: bool bytes {raw}"
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
        return core.from_numpy(np.array(a)).to(device)  # a copy: on the host, from_numpy would share ``a``

    def zeros(shape, like):
        return core.zeros(shape, dtype=like.dtype, device=device)

    for dtype in dtypes:
        for shape in ((6,), (2, 3 * world)):
            xs = inputs(shape, dtype)
            wide = np.stack(xs).astype(np.float64)
            what = f"{dtype}{shape}"
            for op, ref in REFERENCE.items():
                out = t(xs[rank])
                dist.all_reduce(out, op=op, group=group)
                want = ref(wide, axis=0)
                check(out, want != 0 if dtype == "bool" else want, f"all_reduce {op} {what}")  # bool: SUM is OR
            out = t(xs[rank])
            if dtype == "bool":
                try:
                    dist.all_reduce(out, op=dist.ReduceOp.AVG, group=group)
                except TypeError as error:
                    assert "Cannot use ReduceOp.AVG with boolean inputs" in str(error), error
                else:
                    raise AssertionError("AVG of bool tensors was accepted")
            else:
                dist.all_reduce(out, op=dist.ReduceOp.AVG, group=group)
                total = wide.sum(0)  # the sum is exact; the division rounds as the dtype's own does
                check(out, (total.astype(NUMPY[dtype]) / world).astype(np.float64) if "float" in dtype
                      else np.trunc(total / world), f"all_reduce AVG {what}")
            out = t(xs[rank])
            work = dist.all_reduce(out, async_op=True, group=group)
            assert work.wait() and work.is_completed() and work.is_success()
            check(out, wide.max(0) if dtype == "bool" else wide.sum(0), f"async all_reduce {what}")
            # a strided tensor is staged through a contiguous copy and written back into the view
            base = zeros((*shape, 2), out)
            view = base[..., 1]
            view.copy_(t(xs[rank]))
            dist.all_reduce(view, op=dist.ReduceOp.MAX, group=group)
            check(base[..., 1], wide.max(0), f"strided all_reduce {what}")
            check(base[..., 0], np.zeros(shape), f"strided all_reduce leaves the rest {what}")
            for src in range(world):
                out = t(xs[rank])
                dist.broadcast(out, group_src=src, group=group)
                check(out, wide[src], f"broadcast from {src} {what}")
            out = t(xs[rank])
            dist.reduce(out, group_dst=world - 1, op=dist.ReduceOp.MIN, group=group)
            check(out, wide.min(0) if rank == world - 1 else wide[rank], f"reduce {what}")
            outs = [zeros(shape, out) for _ in range(world)]
            dist.all_gather(outs, t(xs[rank]), group=group)
            for o, x in zip(outs, wide):
                check(o, x, f"all_gather {what}")
            cat = zeros((world * shape[0], *shape[1:]), out)
            dist.all_gather_into_tensor(cat, t(xs[rank]), async_op=True, group=group).wait()
            check(cat, np.concatenate(wide), f"all_gather_into_tensor {what}")
            if dtype == "bool":
                continue  # the rest reduce with SUM, which on bool is OR: covered above
            lists = [inputs(shape, dtype, salt=1 + r) for r in range(world)]  # lists[r][i]: rank r's i-th input
            out = zeros(shape, out)
            dist.reduce_scatter(out, [t(a) for a in lists[rank]], group=group)
            check(out, sum(lists[r][rank].astype(np.float64) for r in range(world)), f"reduce_scatter {what}")
            if shape[0] % world == 0:
                out = zeros((shape[0] // world, *shape[1:]), out)
                dist.reduce_scatter_tensor(out, t(xs[rank]), group=group)
                check(out, np.split(wide.sum(0), world)[rank], f"reduce_scatter_tensor {what}")
            gathered = [zeros(shape, out) for _ in range(world)] if rank == 0 else None
            dist.gather(t(xs[rank]), gathered, group_dst=0, group=group)
            if rank == 0:
                for o, x in zip(gathered, wide):
                    check(o, x, f"gather {what}")
            out = zeros(shape, out)
            dist.scatter(out, [t(a) for a in lists[0]] if rank == 0 else None, group_src=0, group=group)
            check(out, lists[0][rank].astype(np.float64), f"scatter {what}")
            # all_to_all with uneven pieces: rank r sends r + i + 1 rows to rank i
            pieces = [[np.full((r + i + 1, 2), 10 * r + i).astype(NUMPY[dtype]) for i in range(world)]
                      for r in range(world)]
            outs = [zeros((r + rank + 1, 2), out) for r in range(world)]
            dist.all_to_all(outs, [t(p) for p in pieces[rank]], group=group)
            for r, o in enumerate(outs):
                check(o, pieces[r][rank].astype(np.float64), f"all_to_all {what}")
            splits_out = [r + rank + 1 for r in range(world)]
            out = zeros((sum(splits_out), 2), out)
            dist.all_to_all_single(out, t(np.concatenate(pieces[rank])), splits_out,
                                   [rank + i + 1 for i in range(world)], group=group)
            check(out, np.concatenate([pieces[r][rank] for r in range(world)]).astype(np.float64),
                  f"all_to_all_single {what}")

    # refusals, with PyTorch's errors
    for call, error, text in ((lambda: dist.all_reduce(core.ones(2, device=device), op=dist.ReduceOp.BAND,
                                                       group=group), ValueError, "Cannot use ReduceOp.BAND with NCCL"),
                              (lambda: dist.all_reduce(core.ones(2, dtype=core.int16, device=device), group=group),
                               RuntimeError, "Unsupported data type for NCCL process group"),
                              (lambda: dist.recv(core.ones(2, device=device), group=group), RuntimeError,
                               "recv from any source")):
        try:
            call()
        except error as caught:
            assert text in str(caught), caught
        else:
            raise AssertionError(f"accepted: {text}")
    # complex tensors travel as pairs of reals
    out = core.tensor([1 + 2j * rank, 3j], dtype=core.complex64, device=device)
    dist.all_reduce(out, group=group)
    got = out.cpu().numpy()
    assert np.array_equal(got, [world + 1j * world * (world - 1), 3j * world]), got
    # a future chained with then() drives the work
    out = core.ones(2, device=device)
    doubled = dist.all_reduce(out, async_op=True, group=group).get_future().then(lambda fut: fut.value()[0] * 2)
    check(doubled.wait(), np.full(2, 2.0 * world), "get_future().then()")
    # point to point (world >= 2): a ring, batched both ways at once; then a send into a view
    if world > 1:
        ranks = dist.get_process_group_ranks(group)
        right, left = (rank + 1) % world, (rank - 1) % world
        got = core.zeros(3, device=device)
        works = dist.batch_isend_irecv([
            dist.P2POp(dist.isend, core.full((3,), 10.0 + rank, device=device), group_peer=right, group=group),
            dist.P2POp(dist.irecv, got, group_peer=left, group=group)])
        assert all(w.wait() for w in works)
        check(got, np.full(3, 10.0 + left), "batch_isend_irecv")
        if rank == 0:
            dist.send(core.full((2,), 5.0, device=device), group_dst=1, group=group)
        elif rank == 1:
            got = core.zeros(2, 2, device=device)
            assert dist.recv(got[:, 1], group_src=0, group=group) == ranks[0]  # into a view
            check(got, [[0, 5], [0, 5]], "recv into a view")
    # object collectives travel through the group's object device
    objects = [{"rank": rank, "name": "r" * rank}]
    dist.broadcast_object_list(objects, group_src=world - 1, group=group)
    assert objects[0]["rank"] == world - 1, objects
    gathered = []
    dist.all_gather_object(gathered, ("x", rank), group=group)
    assert gathered == [("x", r) for r in range(world)], gathered
    dist.barrier(group=group)
    return checks


def main() -> None:
    local = int(os.environ.get("LOCAL_RANK", "0"))
    core.cuda.set_device(local)
    device = f"cuda:{local}"
    dist.init_process_group("nccl", timeout=timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == "nccl" and dist.is_nccl_available()
    checks = check_collectives(None, device)
    # contiguous cuda tensors are handed to NCCL as their own memory; strided ones are staged
    pg = dist.GroupMember.WORLD
    x = core.ones(3, device=device)
    array, write_back = pg.buffer(x)
    assert write_back is None and array.data.ptr == x.data_ptr()
    array, write_back = pg.buffer(core.ones(3, 2, device=device)[:, 0])
    assert write_back is not None and array.flags.c_contiguous
    try:
        dist.all_reduce(core.ones(2))
    except RuntimeError as error:
        assert "No backend type associated with device type cpu" in str(error), error
    else:
        raise AssertionError("a CPU tensor was accepted")
    # a subgroup of ranks {0, world-1}: its own communicator
    sub = dist.new_group([0, world - 1])
    if rank in (0, world - 1):
        out = core.tensor([rank + 1.0], device=device)
        dist.all_reduce(out, group=sub)
        assert host(out).tolist() == [1.0 if world == 1 else world + 1.0], out
    dist.monitored_barrier(timeout=timedelta(seconds=30))
    dist.destroy_process_group()
    os.write(1, f"rank {rank} nccl ok {checks}\n".encode())  # one write: the ranks share the pipe


if __name__ == "__main__":
    main()
    sys.exit(0)
