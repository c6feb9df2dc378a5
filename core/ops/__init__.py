"""Every op, declared once: its front-end function, meta, derivative and decomposition.

``core`` re-exports the functions; ``Tensor`` gets them as methods from each
family's ``METHODS`` table.
"""

from __future__ import annotations

from ..tensor import attach_methods, bind_ops as _bind_ops  # private here: core re-exports this namespace
from ._util import broadcast_shapes, wrap_dim
from .creation import _rebuild_tensor  # noqa: F401 - used by Tensor.__reduce_ex__
from .format import format_tensor  # noqa: F401 - used by Tensor.__repr__
from .control_flow import *  # noqa: F401,F403
from .complex import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .decompositions import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .format import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .legacy_linalg import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .nn_functions import *  # noqa: F401,F403
from .lowrank import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .quantization import *  # noqa: F401,F403
from .ranges import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .signal import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .spectral import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .tensor_methods import *  # noqa: F401,F403
from .tensor_functions import *  # noqa: F401,F403
from .view import *  # noqa: F401,F403
from . import conv, loss, normalization, optimizers, pooling  # noqa: F401,E402 - nn's ops: declared, not re-exported

import importlib as _importlib

FAMILIES = ("creation", "elementwise", "complex", "view", "reduction", "shape", "indexing", "linalg", "decompositions",
            "random", "sorting", "statistics", "ranges", "format", "conv", "pooling", "normalization", "loss",
            "optimizers", "spectral", "nn_functions", "tensor_methods", "tensor_functions", "legacy_linalg", "signal",
            "control_flow", "lowrank", "sparse", "quantization")

for _family in FAMILIES:  # module names, not the star-imported functions of the same name (view, format)
    attach_methods(_importlib.import_module(f"{__name__}.{_family}").METHODS)

from . import derivatives  # noqa: E402,F401 - attaches derivative formulas to the ops declared above

_bind_ops(__import__(__name__, fromlist=["*"]))
