"""core: a small deep-learning framework in the shape of PyTorch, with hardware as plugins.

``import core`` imports no plugin: backends are discovered through the
``core.backends`` entry points on first use of a device.
"""

from __future__ import annotations

import importlib as _importlib
import math as _math

from . import _hot  # first: importing it guards the compiled hot modules (a stale one imports from source)

from . import autograd, config, dtypes, library
from .autograd import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, \
    set_grad_enabled
from .device import device, get_default_device, set_default_device
from .device_module import get_device_module, max_memory_allocated, memory_allocated, memory_stats, \
    reset_peak_memory_stats
from .dtypes import (bfloat16, bool, can_cast, cdouble, cfloat, complex64, complex128, double, finfo, float, float16,
                    float32, float64, get_default_dtype, half, iinfo, int, int8, int16, int32, int64, long,
                    promote_types, result_type, set_default_dtype, short, uint8)
from .dtypes import dtype
from .layouts import jagged, layout, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from .dtypes import (bits1x8, bits2x4, bits4x2, bits8, bits16, float4_e2m1fn_x2, float8_e4m3fn, float8_e4m3fnuz,
                     float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, int1, int2, int3, int4, int5, int6, int7, uint1,
                     uint2, uint3, uint4, uint5, uint6, uint7, uint16, uint32, uint64)
from .dtypes import qint8, qint32, quint2x4, quint4x2, quint8
from .quantized import (per_channel_affine, per_channel_affine_float_qparams, per_channel_symmetric,
                        per_tensor_affine, per_tensor_symmetric, qscheme)
from .errors import OutOfMemoryError
from .memory_formats import *  # noqa: F401,F403 - memory_format, channels_last, ...
from .legacy_tensors import *  # noqa: F401,F403 - FloatTensor, LongTensor, ...
from .global_state import *  # noqa: F401,F403 - determinism, threads, warnings, default tensor type
from .sym import *  # noqa: F401,F403
from . import futures
from .futures import Future, fork, wait
from .ops import *  # noqa: F401,F403
from .ops import broadcast_shapes
from .ops.reduction import return_types
from .storage import Storage
from .tensor import Size, Tensor

# helpers the star import brings along that are core.ops' own, not PyTorch's names
for _helper in ("attach_methods", "format_tensor", "resolve_device", "to_copy", "to_numpy", "wrap_dim"):
    del globals()[_helper]

from . import nn, optim, utils  # noqa: E402 - nn and optim are built on the ops above
# the star import above bound ``linalg`` to the products family core.ops.linalg; ``core.linalg`` is torch.linalg's
linalg = _importlib.import_module(f"{__name__}.linalg")
from . import fft, special  # noqa: E402 - torch.fft's and torch.special's names, over the ops above
# as with linalg: the star import bound ``sparse`` to the family core.ops.sparse; ``core.sparse`` is torch.sparse's
sparse = _importlib.import_module(f"{__name__}.sparse")
from .serialization import load, save  # noqa: E402
from .utils.dlpack import from_dlpack, to_dlpack  # noqa: E402
from .ops._util import add_numpy_names as _add_numpy_names  # noqa: E402
# mixed precision (torch.amp): core.autocast is core.amp.autocast; the autocast state functions are torch's
from . import amp  # noqa: E402
# core.compile (torch.compile) and its packages; cheap: core.jit loads on the first capture
from . import _dynamo, compiler  # noqa: E402
from .compiler import compile  # noqa: E402,A001 - torch.compile's name shadows the builtin, as in torch
from .amp import GradScaler, autocast  # noqa: E402
from .amp.state import *  # noqa: E402,F401,F403 - is_autocast_enabled, set_autocast_dtype, ...

# NumPy's axis=/keepdims= wherever a function or method has dim/keepdim, as PyTorch's argument parser allows
for _space in (globals(), vars(linalg), vars(fft), vars(special), vars(sparse), Tensor):
    _add_numpy_names(_space)

__version__ = "0.1.0"

# torch's numeric constants (``torch.pi``...) and ``newaxis`` (``None``, for indexing)
pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan
newaxis = None

_DEVICE_MODULES: dict = {}


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs (``torch.vmap``, which is ``torch.func.vmap``: see there)."""
    from .func import vmap as func_vmap  # core.func loads on first use

    return func_vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)

# Public subpackages not imported by ``import core`` (kept fast), loaded on first attribute access as in
# PyTorch (``import torch; torch.jit.trace``). autograd, fft, library, nn, optim, special and utils are
# imported above.
_LAZY_SUBMODULES = frozenset({"accelerator", "backends", "codegen", "distributions", "func", "info", "jit", "onnx",
                              "testing"})


def __getattr__(name: str):
    """``core.jit``, ``core.onnx``, ...: subpackages imported on first use; ``core.cuda``, ``core.opencl``,
    ``core.webgpu``, ...: device helpers for any device type a backend may provide."""
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")  # also sets the attribute: asked only once
    if name.startswith("_") or not name.isidentifier():
        raise AttributeError(f"module 'core' has no attribute '{name}'")
    from .plugins.manager import SHIPPED_DEVICE_TYPES, get_manager

    known = {b.device_type for b in get_manager().backends.values()} | set(SHIPPED_DEVICE_TYPES)
    if name not in known:
        raise AttributeError(f"module 'core' has no attribute '{name}'")
    from .device_module import DeviceModule

    return _DEVICE_MODULES.setdefault(name, DeviceModule(name))


def __dir__() -> list:
    """The module's names and the lazily imported subpackages (and the device types core always knows)."""
    from .plugins.manager import SHIPPED_DEVICE_TYPES

    return sorted(set(globals()) | _LAZY_SUBMODULES | set(SHIPPED_DEVICE_TYPES))
