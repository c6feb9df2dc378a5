"""Train the digits CNN of train_digits.py data-parallel, one process per rank, on core.distributed (MPI).

examples:
  python -m core.distributed.run --nproc-per-node 2 examples/train_digits_ddp.py               # 20 epochs
  python -m core.distributed.run --nproc-per-node 2 examples/train_digits_ddp.py --epochs 25 --resume
  mpiexec -n 2 python examples/train_digits_ddp.py --epochs 5

Each rank trains on its DistributedSampler share of every epoch (--batch-size per rank); DDP averages the
gradients, so every rank holds the same model. Rank 0 alone prints, evaluates and writes the checkpoint (model,
optimizer, epoch; replaced atomically); --resume makes every rank load it. Dropout draws from a generator
seeded per (epoch, rank), so a resumed run ends with exactly the parameters of a run that never stopped.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import core
import core.distributed as dist
import core.nn.functional as F
from core.nn.parallel import DistributedDataParallel
from core.utils.atomic import atomic_write
from core.utils.data import DataLoader, DistributedSampler, TensorDataset

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from train_digits import DigitsNet, evaluate, load_digits  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent / "checkpoints" / "digits-ddp.ckpt")
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    parser.add_argument("--train-size", type=int, default=None, help="train on the first N images (a quick run)")
    args = parser.parse_args(argv)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    core.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load_digits("cpu")
    model = DistributedDataParallel(DigitsNet())
    optimizer = core.optim.Adam(model.parameters(), lr=args.lr)
    start = 0
    if args.resume:
        state = core.load(args.checkpoint)
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["epoch"]
    dataset = TensorDataset(x_train[:args.train_size], y_train[:args.train_size])
    sampler = DistributedSampler(dataset, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    for epoch in range(start, args.epochs):
        sampler.set_epoch(epoch)
        core.manual_seed(args.seed + 1000 * epoch + rank)  # dropout: a stream per (epoch, rank)
        total, seen = 0.0, 0
        for images, labels in loader:
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, seen = total + loss.item() * len(labels), seen + len(labels)
        if rank == 0:
            accuracy = evaluate(model.module, x_test, y_test)
            print(f"epoch {epoch + 1:2d}: loss {total / seen:.4f} (rank 0's share)  test acc {accuracy:.4f}",
                  flush=True)
            args.checkpoint.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(args.checkpoint) as f:
                core.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                           "epoch": epoch + 1}, f)
        dist.barrier()  # the checkpoint is complete before any rank can stop or resume
    if rank == 0:
        print(f"done: test accuracy {evaluate(model.module, x_test, y_test):.1%} with {world} processes, "
              f"checkpoint {args.checkpoint}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
