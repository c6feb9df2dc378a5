"""DistributedDataParallel on cuda with the nccl backend against one process on the concatenated batch; run by
``python -m core.distributed.run --nproc-per-node N`` (one GPU per rank); prints 'rank R nccl ddp ok'."""

import copy
import os
from datetime import timedelta

import numpy as np

import core
import core.distributed as dist
import core.nn as nn
from core.distributed.algorithms.ddp_comm_hooks import default_hooks
from core.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.first, self.last = nn.Linear(5, 8), nn.Linear(8, 3)
        self.spare = nn.Linear(3, 3)  # used only when asked: unused-parameter detection
        self.register_buffer("scale", core.full((8,), float(rank + 1)))  # rank 0's value is broadcast

    def forward(self, x, use_spare=True):
        y = self.last(core.tanh(self.first(x)) * self.scale)
        return self.spare(y) if use_spare else y


def loss_of(module, x, y, **kwargs):
    return nn.functional.mse_loss(module(x, **kwargs), y)


def check_ddp(group, device) -> None:
    """DDP over ``group`` on ``device``: gradients and steps against one process on the concatenated batch,
    find_unused_parameters, and the fp16 compression hook."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    rng = np.random.default_rng(0)
    batches = [core.from_numpy(rng.standard_normal((4 * world, 5))).to(device) for _ in range(3)]
    targets = [core.from_numpy(rng.standard_normal((4 * world, 3))).to(device) for _ in range(3)]

    def mine(t):
        return t[4 * rank:4 * (rank + 1)]

    def close(a, b, what, tolerance=1e-10):
        assert a is not None and b is not None, what
        a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
        if not np.allclose(a, b, rtol=tolerance, atol=tolerance):
            raise AssertionError(f"rank {rank}: {what}: {a} != {b}")

    model = Net(rank).double().to(device)  # different weights on every rank: DDP's construction broadcasts rank 0's
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.0002)  # ~200 bytes: several buckets
    assert len(ddp._buckets) > 2, len(ddp._buckets)
    close(model.scale, core.ones(8), "buffer broadcast from rank 0")
    reference = copy.deepcopy(model)

    # averaged gradients equal the single-process gradients on the concatenated batch, and stay so over steps
    optimizer = core.optim.SGD(model.parameters(), lr=0.1)
    reference_optimizer = core.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in zip(batches, targets):
        for opt, module, inputs in ((optimizer, ddp, (mine(x), mine(y))), (reference_optimizer, reference, (x, y))):
            opt.zero_grad()
            loss_of(module, *inputs).backward()
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            close(p.grad, q.grad, f"gradient of {name}")
        optimizer.step()
        reference_optimizer.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        close(p, q, f"parameter {name} after steps")

    # unused parameters: a None gradient (unused on every rank) with find_unused_parameters (its flags go by nccl)
    finder = DDP(model, process_group=group, find_unused_parameters=True, gradient_as_bucket_view=True)
    optimizer.zero_grad(set_to_none=True)
    reference_optimizer.zero_grad(set_to_none=True)
    loss_of(finder, mine(batches[2]), mine(targets[2]), use_spare=False).backward()
    loss_of(reference, batches[2], targets[2], use_spare=False).backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        if name.startswith("spare"):
            assert p.grad is None, name
        else:
            close(p.grad, q.grad, f"gradient of {name} with find_unused_parameters")

    # the fp16 compression hook: buckets travel as float16 (a comm hook's future over nccl's Work)
    compressed = DDP(copy.deepcopy(reference).float(), process_group=group, bucket_cap_mb=0.0002)
    compressed.register_comm_hook(group, default_hooks.fp16_compress_hook)
    single = copy.deepcopy(reference).float()
    loss_of(compressed, mine(batches[0]).float(), mine(targets[0]).float()).backward()
    loss_of(single, batches[0].float(), targets[0].float()).backward()
    for (name, p), q in zip(compressed.module.named_parameters(), single.parameters()):
        close(p.grad, q.grad, f"fp16-compressed gradient of {name}", tolerance=2e-3)  # float16's precision


def main() -> None:
    local = int(os.environ.get("LOCAL_RANK", "0"))
    core.cuda.set_device(local)
    dist.init_process_group("nccl", timeout=timedelta(seconds=60))
    core.manual_seed(dist.get_rank())
    check_ddp(None, f"cuda:{local}")
    rank = dist.get_rank()
    dist.destroy_process_group()
    os.write(1, f"rank {rank} nccl ddp ok\n".encode())


if __name__ == "__main__":
    main()
