"""``autocast``: the ``Autocast`` dispatch key's kernel, the region object, and ``custom_fwd``/``custom_bwd``.

While autocast is on for some device type, ``Autocast`` is in the thread's included key set, so every operator
call reaches :func:`_autocast_kernel` (below Tracer and Profiler, above Autograd). For an op on the device type's
lists (core/amp/policy.py) it casts the eligible tensor arguments (floating point, on that device type, not
float64, not already the target dtype) and runs the op below itself with ``Autocast`` excluded, as PyTorch does:
ops a listed composite calls inside are not cast again. An op on no list runs below with ``Autocast`` still on,
so the ops a composite calls are cast one by one. Casts are ordinary ``_to_copy`` calls, which Autograd records:
backward runs in the dtypes the forward used and gradients reach float32 weights as float32.

In-place ops, calls with ``out=`` and calls with an explicit ``dtype=`` are not eligible (PyTorch's rules).
"""

from __future__ import annotations

import functools
import inspect
import warnings

from ..dispatch.keys import Autocast, tls
from ..dispatch.operator import set_functionality_fallback
from ..tensor import Tensor
from . import state as _state
from .policy import FP32, LOWER, policy_for, preferred_dtypes
from .state import STATE

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "autocast_inputs"]

_AUTOCAST_MASK = Autocast.mask
_FLOAT32 = None  # core.float32, bound on first use (dtypes imports nothing from here)
_TO_COPY = []  # the _to_copy operator, looked up on first use (core.ops declares it after this module loads)


def _float32():
    global _FLOAT32
    if _FLOAT32 is None:
        from ..dtypes import float32

        _FLOAT32 = float32
    return _FLOAT32


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used on ``device_type``: ``cpu``, ``cuda`` and any device type a backend
    provides (``torch.amp.is_autocast_available``)."""
    if not isinstance(device_type, str):
        raise TypeError(f"is_autocast_available(): argument 'device_type' must be str, not "
                        f"{type(device_type).__name__}")
    from ..plugins.manager import get_manager

    return device_type in {"cpu", "cuda"} | {b.device_type for b in get_manager().backends.values()}


# -- the kernel ----------------------------------------------------------------------------------------------

def _device_type(args) -> str | None:
    """The device type a call runs on: its tensors', where 0-d CPU tensors joining another device's do not count."""
    found = None
    for a in args:
        for t in (a if a.__class__ is list or a.__class__ is tuple else (a,)):
            if isinstance(t, Tensor):
                found = t._storage.device.type
                if found != "cpu":
                    return found
    return found


def _eligible(t, device_type: str) -> bool:
    return isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype.name != "float64" \
        and t._storage.device.type == device_type


def _cast(t, target, device_type: str, low):
    """``t`` in ``target`` if it is eligible; a weight's cast to the low dtype comes from the region's cache."""
    if t.__class__ is list or t.__class__ is tuple:
        return t.__class__(_cast(x, target, device_type, low) for x in t)
    if not _eligible(t, device_type) or t.dtype is target:
        return t
    if not _TO_COPY:
        from ..dispatch.operator import get_operator

        _TO_COPY.append(get_operator("_to_copy"))
    cacheable = STATE.cache_enabled and target is low and t.dtype is _float32() and t.requires_grad \
        and t.grad_fn is None and t._base is None
    if not cacheable:
        return _TO_COPY[0](t, target)  # the op itself: Tensor.to's argument parsing has nothing to parse here
    hit = STATE.cache.get(id(t))
    if hit is None or hit[0] is not t:
        hit = STATE.cache[id(t)] = (t, _TO_COPY[0](t, target))
    return hit[1]


def _widest(args, device_type: str, low):
    """The dtype a PROMOTE op runs in: float32 if any eligible input is wider than the low dtype, else low."""
    for a in args:
        for t in (a if a.__class__ is list or a.__class__ is tuple else (a,)):
            if _eligible(t, device_type) and t.dtype is not low:
                return _float32()
    return low


@functools.lru_cache(maxsize=None)
def _dtype_position(op) -> int | None:
    """Where an op's ``dtype`` parameter sits among its positional arguments, or None if it has none."""
    fn = op.meta or op.decomposition or op.default
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    return names.index("dtype") if "dtype" in names else None


def _explicit_dtype(op, args, kwargs) -> bool:
    if kwargs.get("dtype") is not None:
        return True
    position = _dtype_position(op)
    return position is not None and len(args) > position and args[position] is not None


def _autocast_kernel(op, below: int, *args, **kwargs):
    device_type = _device_type(args)
    kind = policy_for(device_type).get(op.name) if STATE.enabled.get(device_type) else None
    if kind is None or op.inplace or kwargs.get("out") is not None or _explicit_dtype(op, args, kwargs):
        return op.redispatch(below, *args, **kwargs)
    prev = tls.exclude
    tls.exclude = prev | _AUTOCAST_MASK
    try:
        low = _state.get_autocast_dtype(device_type)
        target = low if kind == LOWER else _float32() if kind == FP32 else _widest(args, device_type, low)
        args = tuple(_cast(a, target, device_type, low) for a in args)
        kwargs = {k: _cast(v, target, device_type, low) for k, v in kwargs.items()} if kwargs else kwargs
        return op.redispatch(below, *args, **kwargs)
    finally:
        tls.exclude = prev


set_functionality_fallback(Autocast, _autocast_kernel)


def autocast_inputs(op_name: str, *tensors):
    """``tensors`` cast as autocast casts the inputs of ``op_name`` (unchanged outside autocast): for Python
    front-ends (``matmul``, ``conv2d``) that compare their operands' dtypes before calling an operator."""
    if not tls.include & _AUTOCAST_MASK or tls.exclude & _AUTOCAST_MASK:
        return tensors
    device_type = _device_type(tensors)
    kind = policy_for(device_type).get(op_name) if STATE.enabled.get(device_type) else None
    if kind is None:
        return tensors
    low = _state.get_autocast_dtype(device_type)
    target = low if kind == LOWER else _float32() if kind == FP32 else _widest(tensors, device_type, low)
    return tuple(_cast(t, target, device_type, low) for t in tensors)


# -- the region ----------------------------------------------------------------------------------------------

class autocast:
    """Context manager and decorator: run the ops of a region in per-op dtypes, lower precision where it is safe
    (``torch.autocast``, also ``torch.amp.autocast``).

    ``dtype`` defaults to :func:`core.get_autocast_dtype` (bfloat16 on cpu, float16 on cuda and other device
    types, unless the backend prefers another). Regions nest; ``enabled=False`` turns autocast off inside.
    ``cache_enabled`` (default: :func:`core.is_autocast_cache_enabled`) caches the low-precision cast of each
    float32 leaf that requires grad (a weight) until the outermost region exits.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = _state.get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = _state.is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        if enabled and device_type == "cuda" and not _device_available("cuda"):
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling", stacklevel=2)
            enabled = False
        supported = preferred_dtypes(device_type)
        if enabled and self.fast_dtype not in supported:
            warnings.warn(f"In {device_type} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{device_type} Autocast only supports dtype of "
                          f"{', '.join(f'core.{d.name}' for d in supported)} currently.", stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = _state.is_autocast_cache_enabled()
        self.prev = _state.is_autocast_enabled(self.device)
        self.prev_fastdtype = STATE.dtype.get(self.device)  # None: the backend's default, followed if it changes
        _state.set_autocast_enabled(self.device, self._enabled)
        _state.set_autocast_dtype(self.device, self.fast_dtype)
        _state.autocast_increment_nesting()
        _state.set_autocast_cache_enabled(self._cache_enabled)

    def __exit__(self, exc_type, exc_val, exc_tb):
        if _state.autocast_decrement_nesting() == 0:  # left the outermost region: drop the weight casts
            _state.clear_autocast_cache()
        _state.set_autocast_enabled(self.device, self.prev)
        if self.prev_fastdtype is None:
            STATE.dtype.pop(self.device, None)
        else:
            _state.set_autocast_dtype(self.device, self.prev_fastdtype)
        _state.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _device_available(device_type: str) -> bool:
    from ..plugins.manager import get_manager

    try:
        get_manager().runtime_for(device_type)
    except Exception:
        return False
    return True


# -- custom autograd Functions -------------------------------------------------------------------------------

def _cast_structure(value, device_type: str, dtype):
    """Tensors in ``value`` (and in its lists, tuples and dicts) cast to ``dtype`` when autocast-eligible."""
    if isinstance(value, Tensor):
        return value.to(dtype) if _eligible(value, device_type) else value
    if isinstance(value, dict):
        return {k: _cast_structure(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_structure(v, device_type, dtype) for v in value)
    return value


def _check_device_type_arg(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for a custom Function's ``forward``: with ``cast_inputs`` set, inside an autocast region cast
    floating-point tensor inputs to it and run ``forward`` with autocast off; else run it in the current autocast
    state, remembered for ``backward`` (``torch.amp.custom_fwd``)."""
    _check_device_type_arg(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = _state.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = _state.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not _state.is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast_structure(args, device_type, cast_inputs),
                       **_cast_structure(kwargs, device_type, cast_inputs))

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for a custom Function's ``backward``: run it in the autocast state its ``forward`` ran in
    (``torch.amp.custom_bwd``)."""
    _check_device_type_arg(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
