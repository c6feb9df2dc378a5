"""core.distributed on MPI against raw mpi4py, and DDP's scaling: run as several ranks.

    python -m core.distributed.run --nproc-per-node 2 bench/distributed_bench.py [--quick]

all_reduce (SUM, float32) of 1 KB to 64 MB: core's ``dist.all_reduce`` on a CPU tensor against mpi4py's
``Iallreduce`` + ``Wait`` on the very same NumPy buffer, and against ``Iallreduce`` polled by a Python loop on
``Test`` (what core does inside), alternating, median of several rounds; bus bandwidth as
NCCL's tests define it (2 (n-1)/n * bytes / time). Then a DDP training step (an MLP on 64-sample batches per
rank) against the same step in one process on one rank's batch, one thread per process: scaling efficiency =
(n ranks' samples/s) / (n * one process's samples/s); and, where torch is importable, PyTorch's own
DistributedDataParallel on its ``gloo`` backend with the same ranks, weights and batches. Rank 0 prints the tables,
and the machine's load average (the numbers are only as quiet as the machine).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

import core
import core.distributed as dist
import core.nn as nn
from core.nn.parallel import DistributedDataParallel


def median_seconds(fn, repeats: int, group=None) -> float:
    """Median seconds per call, the ranks of ``group`` timing in step (a barrier before each call)."""
    fn()
    times = []
    for _ in range(repeats):
        dist.barrier(group)
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def all_reduce_table(quick: bool) -> list:
    from mpi4py import MPI

    comm, world = MPI.COMM_WORLD, dist.get_world_size()
    rows = []
    for exponent in range(10, 25 if quick else 27, 2):  # 1 KB .. 16 MB (quick) or 64 MB
        nbytes = 2 ** exponent
        tensor = core.ones(nbytes // 4)
        array = tensor.numpy()
        repeats = max(3, min(50, 2 ** 20 // nbytes))
        def polled(a=array):
            request = comm.Iallreduce(MPI.IN_PLACE, a, MPI.SUM)
            while not request.Test():
                pass

        contenders = {"core": lambda t=tensor: dist.all_reduce(t),
                      "mpi4py": lambda a=array: comm.Iallreduce(MPI.IN_PLACE, a, MPI.SUM).Wait(),
                      "polled": polled}
        times = {name: [] for name in contenders}
        for _ in range(5):  # alternate, so that the shared machine's noise hits all alike
            for name, fn in contenders.items():
                times[name].append(median_seconds(fn, repeats))
        ours, raw, poll = (statistics.median(times[name]) for name in contenders)
        bus = 2 * (world - 1) / world * nbytes
        rows.append((nbytes, bus / ours / 1e9, bus / raw / 1e9, bus / poll / 1e9, raw / ours, poll / ours))
    return rows


def ddp_step(model, batch):
    """One DDP training step (forward + backward + SGD step) of ``model`` on ``batch``, as a function."""
    x, y = batch
    optimizer = core.optim.SGD(model.parameters(), lr=0.01)

    def step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def torch_ddp_step(net, batch):
    """The same step on PyTorch's DDP over its ``gloo`` backend with the same ranks, model weights and batches, and
    the function that ends its process group; None when torch is not importable."""
    try:
        import torch
        import torch.distributed as tdist
    except ImportError:
        return None
    port = [None]
    if dist.get_rank() == 0:
        import socket

        with socket.socket() as s:  # a free port for gloo's rendezvous, chosen by rank 0
            s.bind(("127.0.0.1", 0))
            port[0] = s.getsockname()[1]
    dist.broadcast_object_list(port, src=0)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port[0]}", rank=dist.get_rank(),
                             world_size=dist.get_world_size())
    torch.set_num_threads(1)
    twin = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    twin.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in net.state_dict().items()})
    model = torch.nn.parallel.DistributedDataParallel(twin)
    x, y = (torch.from_numpy(t.numpy().copy()) for t in batch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step, tdist.destroy_process_group


def alternating_rates(steps: dict, samples: int, repeats: int, rounds: int) -> dict:
    """Samples/s of each step function: median over ``rounds`` alternating rounds of each one's median step time
    (``repeats`` steps, the ranks in step)."""
    times = {name: [] for name in steps}
    for _ in range(rounds):
        for name, fn in steps.items():
            times[name].append(median_seconds(fn, repeats))
    return {name: samples / statistics.median(t) for name, t in times.items()}


def main() -> None:
    quick = "--quick" in sys.argv
    dist.init_process_group("mpi")
    core.set_num_threads(1)  # n processes x 1 thread against 1 process x 1 thread: no core is oversubscribed
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = all_reduce_table(quick)
    rng = np.random.default_rng(rank)
    batch = (core.from_numpy(rng.standard_normal((64, 784)).astype("float32")),
             core.from_numpy(rng.integers(0, 10, 64)))
    core.manual_seed(0)
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    repeats, rounds = (10, 3) if quick else (20, 7)
    single = 0.0
    if rank == 0:  # one process alone: the others wait at the barrier below
        solo = dist.new_group([0])
        solo_step = ddp_step(DistributedDataParallel(net, process_group=solo), batch)
        solo_step()
        single = 64 / statistics.median(median_seconds(solo_step, repeats, solo) for _ in range(rounds))
    else:
        dist.new_group([0])
    dist.barrier()
    contenders = {"core": ddp_step(DistributedDataParallel(net), batch)}
    twin = torch_ddp_step(net, batch)
    if twin is not None:
        contenders["torch"] = twin[0]
    rates = alternating_rates(contenders, 64, repeats, rounds)
    if twin is not None:
        twin[1]()
    parallel, gloo = rates["core"] * world, rates.get("torch")
    if rank == 0:
        print(f"all_reduce float32 SUM, {world} ranks (bus bandwidth GB/s; mpi4py: Iallreduce + Wait, polled: "
              "Iallreduce + a Python loop on Test)")
        print(f"{'bytes':>10} {'core':>8} {'mpi4py':>8} {'polled':>8} {'core/mpi4py':>12} {'core/polled':>12}")
        for nbytes, ours, raw, poll, ratio, poll_ratio in rows:
            print(f"{nbytes:>10} {ours:>8.3f} {raw:>8.3f} {poll:>8.3f} {ratio:>12.2f} {poll_ratio:>12.2f}")
        print(f"\nDDP step, MLP 784-256-10, batch 64 per rank, 1 thread per process, median of {rounds} alternating "
              f"rounds: 1 process {single:.0f} "
              f"samples/s, {world} processes {parallel:.0f} samples/s, scaling efficiency "
              f"{parallel / (world * single):.2f}")
        if gloo is not None:
            print(f"PyTorch DDP on gloo, the same step: {gloo * world:.0f} samples/s; core / PyTorch "
                  f"{parallel / (gloo * world):.2f}")
        else:
            print("PyTorch is not importable: no gloo comparison")
        if hasattr(os, "getloadavg"):
            print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
