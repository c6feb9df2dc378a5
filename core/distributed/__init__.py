"""``core.distributed``: data-parallel training across processes and machines (``torch.distributed``).

Process groups run on a process-group backend plugin: ``mpi`` (mpi4py) is built in; others come from the
``core.distributed_backends`` entry-point group. Launch with ``mpiexec -n N python train.py`` or
``python -m core.distributed.run --nproc-per-node N train.py``. See docs/distributed.md.
"""

from .backends import DistBackendError, DistError, ProcessGroup, ReduceOp, Work, default_pg_timeout
from .distributed_c10d import *  # noqa: F401,F403
from .grad_bucket import GradBucket
from .store import DistStoreError, FileStore, HashStore, PrefixStore, Store, TCPStore
from .distributed_c10d import __all__ as _c10d_all
from . import algorithms, nn, optim  # noqa: F401  (torch.distributed.algorithms, .nn and .optim)

__all__ = ["DistBackendError", "DistError", "DistStoreError", "FileStore", "GradBucket", "HashStore", "PrefixStore",
           "ProcessGroup", "ReduceOp", "Store", "TCPStore", "Work", "default_pg_timeout", *_c10d_all]
