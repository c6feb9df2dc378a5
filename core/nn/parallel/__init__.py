"""``core.nn.parallel``: data parallelism over devices (``DataParallel``) and processes
(``DistributedDataParallel``), as ``torch.nn.parallel``."""

from ..modules.parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
