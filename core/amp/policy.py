"""Which dtype each op runs in under autocast: PyTorch's "Autocast Op Reference", mapped to core's operators.

Three kinds of op, as in PyTorch: ``LOWER`` ops run in the region's lower-precision dtype (matrix products,
convolutions, linear), ``FP32`` ops run in float32 (reductions, exp/log, softmax, losses on CUDA; prod, the
losses, FFTs and linear algebra on CPU), ``PROMOTE`` ops run in the widest floating dtype among their inputs.
Ops on no list run in their inputs' dtypes. ``cpu`` uses PyTorch's CPU lists; every other device type uses its
CUDA lists (PyTorch registers those for XPU, MPS and out-of-tree devices too).

core's names: torch's matrix products (``mm``, ``addmm``, ``einsum``, ...) all run on the
``batched_matmul`` operator, ``conv*d``/``conv_transpose*d`` on ``convolution``, ``cross_entropy`` on
``cross_entropy_loss``, torch.fft's functions on ``fft_c2c``/``fft_r2c``/``fft_c2r``. The front-end names
(``matmul``, ``addmm``, ``conv2d``, ...) are listed too, for front-ends that cast through
``core.amp.autocast_mode.autocast_inputs`` before comparing their operands' dtypes.

A backend may change this per device type through two optional attributes of its runtime object:
``autocast_dtypes`` (the lower-precision dtypes it runs fast, preferred first: the first is the device type's
default autocast dtype, and a region asking for another one is disabled with a warning) and
``autocast_policy`` (a dict op name -> ``"lower_precision_fp"``, ``"fp32"``, ``"promote"`` or None, merged over
the lists below; None takes an op off them).
"""

from __future__ import annotations

from .. import dtypes
from ..plugins.manager import runtime_for

__all__ = ["LOWER", "FP32", "PROMOTE", "policy_for", "preferred_dtypes", "DEFAULT_POLICIES"]

LOWER, FP32, PROMOTE = "lower_precision_fp", "fp32", "promote"
_KINDS = (LOWER, FP32, PROMOTE)

# torch's lower-precision lists: CPU's also holds mv and addmv (torch's leaves them alone) as they run on
# batched_matmul here, whose low-precision product could not meet addmv's float32 addend
_LOWER_OPS = ("batched_matmul", "linear", "convolution", "matmul", "mm", "bmm", "mv", "addmm", "addmv", "addbmm",
              "baddbmm", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
_CUDA_LOWER_OPS = _LOWER_OPS + ("addr",)
_CUDA_FP32_OPS = ("pow", "acos", "asin", "cosh", "sinh", "tan", "cumprod", "cumsum", "erfinv", "exp", "expm1",
                  "layer_norm", "log", "log_softmax", "log10", "log1p", "log2", "prod", "reciprocal", "rsqrt",
                  "softmax", "sum", "cross_entropy_loss")
_CUDA_PROMOTE_OPS = ("atan2",)
_CPU_FP32_OPS = ("prod", "view_as_complex", "cross_entropy_loss", "fft_c2c", "fft_r2c", "fft_c2r",
                 "linalg_cholesky_ex", "linalg_eig", "linalg_eigh", "linalg_inv_ex", "linalg_qr", "linalg_svd",
                 "linalg_svdvals", "linalg_solve_ex")
_CPU_PROMOTE_OPS = ("cat",)


def _table(lower, fp32, promote) -> dict:
    return {**dict.fromkeys(lower, LOWER), **dict.fromkeys(fp32, FP32), **dict.fromkeys(promote, PROMOTE)}


DEFAULT_POLICIES = {"cpu": _table(_LOWER_OPS, _CPU_FP32_OPS, _CPU_PROMOTE_OPS),
                    "cuda": _table(_CUDA_LOWER_OPS, _CUDA_FP32_OPS, _CUDA_PROMOTE_OPS)}

_MERGED: dict = {}  # device type -> (runtime, merged policy)


def _runtime(device_type: str):
    """The runtime serving ``device_type``, or None when no backend serves it (autocast then uses the defaults)."""
    try:
        return runtime_for(device_type)
    except Exception:  # an unavailable device type: nothing to ask
        return None


def preferred_dtypes(device_type: str) -> tuple:
    """The lower-precision dtypes autocast may use on ``device_type``, its default first."""
    fast = getattr(_runtime(device_type), "autocast_dtypes", None) if device_type not in ("ipu", "xla") else None
    if fast:
        return tuple(fast)
    return (dtypes.bfloat16, dtypes.float16) if device_type == "cpu" else (dtypes.float16, dtypes.bfloat16)


def policy_for(device_type: str) -> dict:
    """Op name -> LOWER / FP32 / PROMOTE on ``device_type``: PyTorch's lists with the backend's changes."""
    runtime = _runtime(device_type)
    hit = _MERGED.get(device_type)
    if hit is not None and hit[0] is runtime:
        return hit[1]
    policy = dict(DEFAULT_POLICIES["cpu" if device_type == "cpu" else "cuda"])
    for name, kind in (getattr(runtime, "autocast_policy", None) or {}).items():
        if kind is None:
            policy.pop(name, None)
        elif kind in _KINDS:
            policy[name] = kind
        else:
            raise ValueError(f"autocast_policy of the '{device_type}' backend: op '{name}' has policy {kind!r}; "
                             f"expected one of {', '.join(map(repr, _KINDS))} or None")
    _MERGED[device_type] = (runtime, policy)
    return policy
