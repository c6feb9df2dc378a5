"""DistributedDataParallel communication hooks (``torch.distributed.algorithms.ddp_comm_hooks``)."""

from . import default_hooks  # noqa: F401
