"""``DistributedSampler``: each of ``num_replicas`` processes loads its own equal share of a dataset."""

from __future__ import annotations

import math

from ...ops.random import Generator, randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _check_index(value, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"DistributedSampler: {what} must be an int, but got {type(value).__name__}")
    return value


class DistributedSampler(Sampler):
    """This replica's share of the dataset's indices (``torch.utils.data.distributed.DistributedSampler``).

    The (optionally shuffled, from ``seed + epoch``) index list is padded by repeating its start
    (or, with ``drop_last``, cut) to a multiple of ``num_replicas``; replica ``rank`` takes every
    ``num_replicas``-th index starting at ``rank``. Call ``set_epoch`` each epoch for a new order.
    ``num_replicas`` and ``rank`` default to the default process group's world size and rank
    (``core.distributed``; ValueError before ``init_process_group``).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist

            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        num_replicas, rank = _check_index(num_replicas, "num_replicas"), _check_index(rank, "rank")
        if num_replicas <= 0:
            raise ValueError(f"num_replicas should be a positive integer value, but got num_replicas={num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = randperm(n, generator=Generator().manual_seed(self.seed + self.epoch)).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding] if padding else []
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch, which (added to ``seed``) seeds the shuffle: every replica must use the same."""
        self.epoch = epoch
