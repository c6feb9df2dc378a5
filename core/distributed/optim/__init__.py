"""``core.distributed.optim``: optimizers that shard their work across the ranks (``torch.distributed.optim``)."""

from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
