"""The operator table: one :class:`Operator` per op name, kernels per dispatch key.

Calling an operator computes the key set of its tensor arguments (their
backend key, plus Autograd when one requires grad), adds the thread-local
included keys, removes the excluded ones, and runs the kernel resolved for
that key set. Resolution is cached per key set, so the hot path is one dict
look-up.

Per op on a backend key the order is: the backend's kernel; the op's
device-agnostic kernel (views); the op's decomposition into other ops; the
CPU fallback (copies in and out, one warning, a counter) when enabled; else a
NotImplementedError naming the op, the device and who implements it. A backend
kernel may also decline one call by returning ``NotImplemented`` (a dtype or
layout it does not cover): that call then goes on down the same order.

A backend kernel may be registered with ``min_numel=N`` over a kernel already
registered for the same key (a backend that extends another): calls whose
output has fewer than N elements then run the kernel it replaced. The choice is
made in the dispatcher's own call frame, so a small call costs what it costs
on the base backend plus one size check.
"""

from __future__ import annotations

import inspect
import math
import sys
from functools import partial
import warnings
from collections import Counter
from typing import Callable

from .. import config
from ..global_state import is_warn_always_enabled
from ..tensor import Tensor
from .keys import CPU, Autograd, Meta, _BY_BIT, tls

__all__ = ["Operator", "OPERATORS", "get_operator", "fallback_counts", "invalidate_caches"]

OPERATORS: dict[str, "Operator"] = {}
fallback_counts: Counter = Counter()
_fallback_warned: set = set()
_DEBUG = [False]


class Operator:
    """A declared op: its meta function, derivative, decomposition and per-key kernels."""

    __slots__ = ("name", "meta", "decomposition", "default", "primitive", "inplace", "writes", "kernels",
                 "owners", "tiers", "derivative", "doc", "_cache", "__weakref__", "__dict__")

    # Per-op autograd facts, set on the ops they concern: whether outputs get a grad_fn, whether the derivative
    # reads the inputs (an in-place op that does not may write into inference tensors' saved copies).
    differentiable = True
    saves_inputs = True
    # A composite with a derivative may record some calls as its parts instead: ``records_parts(*args, **kwargs)``
    # true runs its decomposition under autograd (a fused op whose derivative would need what it does not save).
    records_parts = None

    def __init__(self, name: str, meta=None, decomposition=None, default=None, primitive=False,
                 inplace=False, doc: str = ""):
        self.name = name
        self.meta = meta
        self.decomposition = decomposition
        self.default = default
        self.primitive = primitive
        self.inplace = inplace
        self.writes: tuple = (0,) if inplace else ()  # positions of the tensor arguments the op may write
        self.kernels: dict[int, Callable] = {}
        self.owners: dict[int, str] = {}
        self.tiers: dict[int, list] = {}  # key bit -> [min_numel, the kernel that runs below it]
        self.derivative = None
        self.doc = doc
        self._cache: dict[int, Callable] = {}

    def __repr__(self) -> str:
        kind = "primitive" if self.primitive else "composite"
        return f"<Operator {self.name} ({kind})>"

    # -- registration -------------------------------------------------------
    def register_kernel(self, key, fn: Callable, owner: str = "user", override: bool = False,
                        min_numel: int | None = None) -> None:
        """Register ``fn`` for dispatch key ``key``; a second registration needs ``override=True``.

        With ``min_numel=N`` ``fn`` replaces the kernel already registered for ``key`` only for calls whose
        output (as the meta function computes it; for an op without one, its first argument) has at least N
        elements; smaller calls run the replaced kernel. :meth:`set_min_numel` moves the threshold later.
        """
        previous = self.kernels.get(key.bit)
        if previous is not None and not override:
            raise RuntimeError(
                f"{owner}: a kernel for op '{self.name}' and dispatch key {key.name} is already "
                f"registered by {self.owners[key.bit]}; pass override=True to replace it")
        if min_numel is not None:
            if not isinstance(min_numel, int) or min_numel < 0:
                raise ValueError(f"{owner}: min_numel for op '{self.name}' must be a non-negative int, "
                                 f"got {min_numel!r}")
            if previous is None:
                raise ValueError(f"{owner}: min_numel={min_numel} for op '{self.name}' needs a kernel to run below "
                                 f"it, but none is registered for dispatch key {key.name}")
        self.kernels[key.bit] = fn
        self.owners[key.bit] = owner
        if min_numel is not None:
            self.tiers[key.bit] = [min_numel, previous]
        else:
            self.tiers.pop(key.bit, None)
        self._cache.clear()

    def set_min_numel(self, key, min_numel: int) -> None:
        """Move the size threshold of the kernel registered with ``min_numel`` for ``key`` (0: always run it)."""
        tier = self.tiers.get(key.bit)
        if tier is None:
            raise RuntimeError(f"op '{self.name}': the kernel for dispatch key {key.name} was not registered with "
                               f"min_numel")
        if not isinstance(min_numel, int) or min_numel < 0:
            raise ValueError(f"op '{self.name}': min_numel must be a non-negative int, got {min_numel!r}")
        tier[0] = min_numel
        self._cache.clear()

    def has_kernel_for(self, key) -> bool:
        """Whether a kernel of this op runs on ``key`` without the CPU fallback."""
        return key.bit in self.kernels or self.default is not None or self.decomposition is not None \
            or (key is Meta and self.meta is not None)

    # -- calling ------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        mask = 0
        for a in args:
            if isinstance(a, Tensor):
                mask |= a._storage.key
                if a.requires_grad:
                    mask |= _AUTOGRAD_MASK
            elif a.__class__ is list or a.__class__ is tuple:
                for b in a:
                    if isinstance(b, Tensor):
                        mask |= b._storage.key
                        if b.requires_grad:
                            mask |= _AUTOGRAD_MASK
        mask = (mask | tls.include) & ~tls.exclude
        kernel = self._cache.get(mask)
        if kernel is None:
            kernel = self._resolve(mask)
        out = kernel(*args, **kwargs)
        if out is NotImplemented:
            return self._declined(mask, args, kwargs)
        return out

    def redispatch(self, mask: int, *args, **kwargs):
        """Run the kernel for ``mask`` (a functionality kernel passes the keys below itself)."""
        kernel = self._cache.get(mask)
        if kernel is None:
            kernel = self._resolve(mask)
        out = kernel(*args, **kwargs)
        if out is NotImplemented:
            return self._declined(mask, args, kwargs)
        return out

    def _declined(self, mask: int, args: tuple, kwargs: dict):
        """Run a call the backend kernel declined (returned ``NotImplemented``) as if it had no kernel."""
        from . import fallback

        key = next(_BY_BIT[bit] for bit in reversed(range(mask.bit_length()))
                   if mask >> bit & 1 and _BY_BIT[bit].is_backend)
        kernel = self.default or self.decomposition or fallback.resolve(self, key, declined=True)
        if key is not CPU and mask & CPU.mask:
            kernel = _moving_cpu_scalars(kernel)
        return kernel(*args, **kwargs)

    def _resolve(self, mask: int) -> Callable:
        remaining = mask
        kernel = None
        while remaining:
            bit = remaining.bit_length() - 1
            key = _BY_BIT[bit]
            below = remaining & ((1 << bit) - 1)
            if not key.is_backend:
                fn = self.kernels.get(bit) or _FUNCTIONALITY_FALLBACKS.get(bit)
                if fn is not None:
                    kernel = _bind_functionality(self, fn, below)
                    break
                remaining = below  # fallthrough
                continue
            kernel = self._backend_kernel(key)
            if key is not CPU and remaining & CPU.mask:
                kernel = _moving_cpu_scalars(kernel)
            break
        if kernel is None:
            raise RuntimeError(f"{self.name}(): no tensor arguments to dispatch on and no default device kernel")
        self._cache[mask] = kernel
        return kernel

    def _backend_kernel(self, key) -> Callable:
        fn = self.kernels.get(key.bit)
        if fn is not None:
            tier = self.tiers.get(key.bit)
            if tier is not None and tier[0]:
                return _shortcut(_sized(self, fn, *tier), tier[1], tier[0])
            return _shortcut(_with_meta(self, fn), fn, sys.maxsize) if self.meta is not None else fn
        if self.default is not None:
            return self.default
        if self.decomposition is not None:
            return self.decomposition
        if key is Meta and self.meta is not None:
            return _with_meta(self, _meta_kernel)
        from . import fallback

        return fallback.resolve(self, key)


_AUTOGRAD_MASK = Autograd.mask
_FUNCTIONALITY_FALLBACKS: dict[int, Callable] = {}


def functionality_fallback(key) -> Callable | None:
    """The kernel every op uses for a functionality key (e.g. Autograd), or None if none is installed."""
    return _FUNCTIONALITY_FALLBACKS.get(key.bit)


def set_functionality_fallback(key, fn: Callable | None) -> None:
    """Install (or remove) the kernel every op uses for a functionality key (e.g. Autograd)."""
    if fn is None:
        _FUNCTIONALITY_FALLBACKS.pop(key.bit, None)
    else:
        _FUNCTIONALITY_FALLBACKS[key.bit] = fn
    invalidate_caches()


def _moving_cpu_scalars(kernel: Callable) -> Callable:
    """Run ``kernel`` after moving 0-d CPU tensors to the device of the other operands."""

    def run(*args, **kwargs):
        device = next(a.device for a in _flat_tensors(args) if a.device.type != "cpu")
        args = [_moved(a, device) for a in args]
        return kernel(*args, **kwargs)

    return run


def _flat_tensors(args):
    for a in args:
        if hasattr(a, "_storage"):
            yield a
        elif a.__class__ is list or a.__class__ is tuple:
            yield from (b for b in a if hasattr(b, "_storage"))


def _moved(a, device):
    if hasattr(a, "_storage"):
        return a.to(device) if a._storage.device.type == "cpu" and not a._shape else a
    if a.__class__ is list or a.__class__ is tuple:
        return type(a)(_moved(b, device) for b in a)
    return a


def _bind_functionality(op: Operator, fn: Callable, below: int) -> Callable:
    """``fn(op, below, *args, **kwargs)`` as a kernel: a ``functools.partial``, which adds no Python frame."""
    return partial(fn, op, below)


def _sized(op: Operator, fn: Callable, min_numel: int, small: Callable) -> Callable:
    """Run ``small`` for calls with fewer than ``min_numel`` output elements, else ``fn``."""
    prod = math.prod
    meta = op.meta
    if meta is None and _one_positional(small) and _one_positional(fn):  # relu(x): no argument packing
        def by_tensor(x):
            if prod(x._shape) < min_numel:
                return small(x)
            return fn(x)

        return by_tensor
    if meta is None:  # a composite's optional kernel: sized by its first argument
        def by_input(*args, **kwargs):
            if prod(args[0]._shape) < min_numel:
                return small(*args, **kwargs)
            return fn(*args, **kwargs)

        return by_input
    if _DEBUG[0]:
        def pick(spec, *args, **kwargs):
            first = spec[0] if spec.__class__ is tuple else spec
            return (small if prod(first.shape) < min_numel else fn)(spec, *args, **kwargs)

        return _with_meta(op, pick)

    def by_output(*args, **kwargs):
        spec = meta(*args, **kwargs)
        try:
            if prod(spec.shape) < min_numel:
                return small(spec, *args, **kwargs)
        except AttributeError:  # several outputs: a tuple of specs, sized by the first
            if prod(spec[0].shape) < min_numel:
                return small(spec, *args, **kwargs)
        return fn(spec, *args, **kwargs)

    by_output.split = (meta, lambda spec: small if prod((spec[0] if spec.__class__ is tuple else spec).shape)
                       < min_numel else fn)
    return by_output


def _shortcut(kernel: Callable, fn: Callable, below: int) -> Callable:
    """``kernel`` (``meta`` then ``fn``), or the shortcut ``fn`` offers for it: ``fn.shortcut(kernel, below)``
    runs the calls it recognises as common (operands of one dtype and shape, fewer than ``below`` elements) without
    the meta function, as ``fn`` would, and hands every other call to ``kernel`` (see the kit's reference
    elementwise kernels). Debug mode checks every output against its spec, so it takes no shortcut."""
    make = getattr(fn, "shortcut", None)
    if make is None or _DEBUG[0]:
        return kernel
    fast = make(kernel, below)
    fast.split = getattr(kernel, "split", None)  # a capture keeps the spec, as on the full path
    return fast


def _one_positional(fn: Callable) -> bool:
    """Whether ``fn`` takes exactly one argument, a required positional one."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read (some builtins)
        return False
    return len(params) == 1 and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD \
        and params[0].default is inspect.Parameter.empty


def _with_meta(op: Operator, fn: Callable) -> Callable:
    meta = op.meta
    if _DEBUG[0]:  # chosen at resolution time; set_debug() clears the caches
        from .spec import check_outputs

        def checked(*args, **kwargs):
            spec = meta(*args, **kwargs)
            out = fn(spec, *args, **kwargs)
            if out is not NotImplemented:  # a declined call: the dispatcher falls back
                check_outputs(op, spec, out, args)
            return out

        return checked

    def run(*args, **kwargs):
        return fn(meta(*args, **kwargs), *args, **kwargs)

    run.split = (meta, lambda spec: fn)  # (the meta function, the kernel for a spec): a capture keeps the spec
    return run


def _meta_kernel(spec, *args, **kwargs):
    from .spec import empty_from_spec

    return empty_from_spec(spec, "meta")


def get_operator(name: str) -> Operator:
    """The declared operator called ``name``; KeyError naming close matches otherwise."""
    try:
        return OPERATORS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, OPERATORS, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"no op named '{name}' is declared{hint}") from None


def invalidate_caches() -> None:
    """Forget every cached resolution (after a config change that alters fallback rules)."""
    for op in OPERATORS.values():
        op._cache.clear()


def set_debug(enabled: bool) -> None:
    """Check every kernel's outputs against its op's meta function (slow; for plugin authors)."""
    _DEBUG[0] = bool(enabled)
    invalidate_caches()


@config.subscribe
def _config_changed() -> None:
    """A config change may alter fallback rules or 'debug': forget resolutions, then apply 'debug'."""
    invalidate_caches()  # before reading: a bad value raising below must not leave stale resolutions behind
    set_debug(config.get("debug"))


def warn_once(key: str, message: str) -> None:
    """Warn once per process per ``key`` (every time under ``core.set_warn_always(True)``)."""
    if key not in _fallback_warned or is_warn_always_enabled():
        _fallback_warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=4)
