"""DistributedDataParallel against one process on the concatenated batch; prints 'rank R ddp ok'."""

import copy
import os
from datetime import timedelta

import numpy as np

import core
import core.distributed as dist
import core.nn as nn
from core.nn.parallel import DistributedDataParallel as DDP
from nccl_ddp import Net, loss_of

dist.init_process_group("mpi", timeout=timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
batches = [core.from_numpy(rng.standard_normal((4 * world, 5))) for _ in range(3)]
targets = [core.from_numpy(rng.standard_normal((4 * world, 3))) for _ in range(3)]


def mine(t):
    return t[4 * rank:4 * (rank + 1)]


def close(a, b, what):
    assert a is not None and b is not None, what
    if not np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12):
        raise AssertionError(f"rank {rank}: {what}: {a} != {b}")


core.manual_seed(rank)  # different weights on every rank: DDP's construction broadcasts rank 0's
model = Net(rank).double()  # the nccl worker's model (this directory is the script's)
ddp = DDP(model, bucket_cap_mb=0.0002)  # ~200 bytes: several buckets
assert len(ddp._buckets) > 2, len(ddp._buckets)
assert ddp.module is model and all(k.startswith("module.") for k in ddp.state_dict())
gathered = []
dist.all_gather_object(gathered, [p.sum().item() for p in model.parameters()] + model.scale.tolist())
assert all(g == gathered[0] for g in gathered), "parameters and buffers differ after construction"
reference = copy.deepcopy(model)

# 1. averaged gradients equal the single-process gradients on the concatenated batch
loss_of(ddp, mine(batches[0]), mine(targets[0])).backward()
loss_of(reference, batches[0], targets[0]).backward()
for (name, p), q in zip(model.named_parameters(), reference.parameters()):
    close(p.grad, q.grad, f"gradient of {name}")

# 2. optimizer steps keep the replicas equal and equal to the reference
optimizer = core.optim.SGD(model.parameters(), lr=0.1)
reference_optimizer = core.optim.SGD(reference.parameters(), lr=0.1)
for x, y in zip(batches[1:], targets[1:]):
    for opt, module, inputs in ((optimizer, ddp, (mine(x), mine(y))), (reference_optimizer, reference, (x, y))):
        opt.step()
        opt.zero_grad()
        loss_of(module, *inputs).backward()
for (name, p), q in zip(model.named_parameters(), reference.parameters()):
    close(p, q, f"parameter {name} after steps")
    close(p.grad, q.grad, f"gradient of {name} after steps")

# 3. no_sync: local accumulation, then one averaged reduction of the sum
optimizer.zero_grad()
reference_optimizer.zero_grad()
with ddp.no_sync():
    loss_of(ddp, mine(batches[0]), mine(targets[0])).backward()
local = model.first.weight.grad.clone()
loss_of(ddp, mine(batches[1]), mine(targets[1])).backward()
for x, y in zip(batches[:2], targets[:2]):
    loss_of(reference, x, y).backward()
for (name, p), q in zip(model.named_parameters(), reference.parameters()):
    close(p.grad, q.grad, f"no_sync accumulated gradient of {name}")
everyone = []
dist.all_gather_object(everyone, local.sum().item())
assert len(set(everyone)) == world, "no_sync's gradients were reduced"

# 4. unused parameters: an error without find_unused_parameters, a None gradient (unused everywhere) with it
optimizer.zero_grad(set_to_none=True)
try:
    loss_of(ddp, mine(batches[0]), mine(targets[0]), use_spare=False).backward()
except RuntimeError as error:
    assert "find_unused_parameters=True" in str(error) and "spare.weight" in str(error), error
else:
    raise AssertionError("an unused parameter went unnoticed")
finder = DDP(model, find_unused_parameters=True, gradient_as_bucket_view=True)
optimizer.zero_grad(set_to_none=True)
reference_optimizer.zero_grad(set_to_none=True)
loss_of(finder, mine(batches[2]), mine(targets[2]), use_spare=False).backward()
loss_of(reference, batches[2], targets[2], use_spare=False).backward()
for (name, p), q in zip(model.named_parameters(), reference.parameters()):
    if name.startswith("spare"):
        assert p.grad is None, name
    else:
        close(p.grad, q.grad, f"gradient of {name} with find_unused_parameters")

# 5. uneven batches (rank r has 3 + r rows): the average of every rank's own mean-loss gradient, as in PyTorch
reference = copy.deepcopy(model)
optimizer.zero_grad(set_to_none=True)
x, y = batches[0], targets[0]
start = sum(3 + r for r in range(rank))
loss_of(ddp, x[start:start + 3 + rank], y[start:start + 3 + rank]).backward()
per_rank = []
for r in range(world):
    reference.zero_grad(set_to_none=True)
    first = sum(3 + q for q in range(r))
    loss_of(reference, x[first:first + 3 + r], y[first:first + 3 + r]).backward()
    per_rank.append([q.grad.clone() for q in reference.parameters()])
for i, (name, p) in enumerate(model.named_parameters()):
    close(p.grad, sum(grads[i] for grads in per_rank) / world, f"uneven-batch gradient of {name}")

# 6. DistributedSampler takes its replica count and rank from the default group
sampler = core.utils.data.DistributedSampler(range(10), shuffle=False)
assert (sampler.num_replicas, sampler.rank) == (world, rank) and list(sampler)[0] == rank

# 6b. communication hooks: one that looks at the buckets, then averaging in float16
from core.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402

seen = []


def watching(state, bucket):
    grads, params = bucket.gradients(), bucket.parameters()
    assert [g.shape for g in grads] == [p.shape for p in params] and state == "mine"
    seen.append((bucket.index(), bucket.is_last()))
    return default_hooks.allreduce_hook(None, bucket)


for hook, state, tolerance in ((watching, "mine", 1e-10), (default_hooks.fp16_compress_hook, None, 2e-3),
                               (default_hooks.bf16_compress_hook, None, 2e-2)):
    hooked = DDP(model, bucket_cap_mb=0.0002, find_unused_parameters=True)
    hooked.register_comm_hook(state, hook)
    reference = copy.deepcopy(model)
    model.zero_grad(set_to_none=True)
    loss_of(hooked, mine(batches[0]), mine(targets[0])).backward()
    loss_of(reference, batches[0], targets[0]).backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        if not np.allclose(p.grad.numpy(), q.grad.numpy(), rtol=tolerance, atol=tolerance):
            raise AssertionError(f"rank {rank}: {hook.__name__}: gradient of {name}")
assert sorted(seen) == [(i, i == len(seen) - 1) for i in range(len(seen))] and len(seen) > 2, seen
try:
    hooked.register_comm_hook(None, default_hooks.allreduce_hook)
except RuntimeError as error:
    assert "can only be called once" in str(error)
else:
    raise AssertionError("a second comm hook was accepted")

# 6c. SyncBatchNorm: statistics, gradients and running estimates of one BatchNorm over the whole batch
core.manual_seed(0)
plain = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 3)).double()
synced = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(plain)))
for x, y in zip(batches[:2], targets[:2]):
    plain.zero_grad()
    synced.zero_grad()
    out = synced(mine(x))
    nn.functional.mse_loss(out, mine(y)).backward()
    expected = plain(x)
    nn.functional.mse_loss(expected, y).backward()
    close(out, expected[4 * rank:4 * (rank + 1)], "SyncBatchNorm output")
    for (name, p), q in zip(synced.module.named_parameters(), plain.parameters()):
        close(p.grad, q.grad, f"SyncBatchNorm model gradient of {name}")
    close(synced.module[1].running_mean, plain[1].running_mean, "SyncBatchNorm running_mean")
    close(synced.module[1].running_var, plain[1].running_var, "SyncBatchNorm running_var")

# 7. ZeroRedundancyOptimizer: Adam sharded over the ranks gives the same parameters and state as plain Adam
from core.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402

reference = copy.deepcopy(model)
zero = ZeroRedundancyOptimizer(model.parameters(), core.optim.Adam, lr=0.01)
reference_adam = core.optim.Adam(reference.parameters(), lr=0.01)
owned = [zero._owner[id(p)] for p in model.parameters()]
assert len(set(owned)) == min(world, len(owned)), owned  # every rank holds a share
plain = DDP(model, find_unused_parameters=True)
for x, y in zip(batches, targets):
    zero.zero_grad()
    reference_adam.zero_grad()
    loss_of(plain, mine(x), mine(y)).backward()
    loss_of(reference, x, y).backward()
    zero.step()
    reference_adam.step()
for (name, p), q in zip(model.named_parameters(), reference.parameters()):
    close(p, q, f"parameter {name} after ZeroRedundancyOptimizer steps")
zero.consolidate_state_dict(to=0)
if rank == 0:
    full, want = zero.state_dict(), reference_adam.state_dict()
    assert sorted(full["state"]) == sorted(want["state"])
    for i in want["state"]:
        close(full["state"][i]["exp_avg_sq"], want["state"][i]["exp_avg_sq"], f"consolidated state {i}")
else:
    try:
        zero.state_dict()
    except RuntimeError as error:
        assert "consolidate_state_dict(to=0)" in str(error)
    else:
        raise AssertionError("state_dict() without consolidation")
saved = [zero.state_dict() if rank == 0 else None]
dist.broadcast_object_list(saved, src=0)
restored = ZeroRedundancyOptimizer(model.parameters(), core.optim.Adam, lr=0.5)
restored.load_state_dict(saved[0])
assert restored.param_groups[0]["lr"] == 0.01 and restored.optim.param_groups[0]["lr"] == 0.01
for p in restored._local_params:
    close(restored.optim.state[p]["exp_avg"], zero.optim.state[p]["exp_avg"], "restored ZeRO state")
dist.destroy_process_group()
os.write(1, f"rank {rank} ddp ok\n".encode())  # one write: the ranks share the pipe
