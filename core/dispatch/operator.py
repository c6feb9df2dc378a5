"""The operator table: one :class:`Operator` per op name, kernels per dispatch key.

Calling an operator computes the key set of its tensor arguments (their
backend key, plus Autograd when one requires grad), adds the thread-local
included keys, removes the excluded ones, and runs the kernel resolved for
that key set. Resolution is cached per key set, so the hot path is one dict
look-up.

Per op on a backend key the order is: the backend's kernel; the op's
device-agnostic kernel (views); the op's decomposition into other ops; the
CPU fallback (copies in and out, one warning, a counter) when enabled; else a
NotImplementedError naming the op, the device and who implements it.
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Callable

from ..tensor import Tensor
from .keys import CPU, Autograd, Meta, _BY_BIT, tls

__all__ = ["Operator", "OPERATORS", "get_operator", "fallback_counts", "invalidate_caches"]

OPERATORS: dict[str, "Operator"] = {}
fallback_counts: Counter = Counter()
_fallback_warned: set = set()
_DEBUG = [False]


class Operator:
    """A declared op: its meta function, derivative, decomposition and per-key kernels."""

    __slots__ = ("name", "meta", "decomposition", "default", "primitive", "inplace", "kernels",
                 "owners", "derivative", "doc", "_cache", "__weakref__", "__dict__")

    def __init__(self, name: str, meta=None, decomposition=None, default=None, primitive=False,
                 inplace=False, doc: str = ""):
        self.name = name
        self.meta = meta
        self.decomposition = decomposition
        self.default = default
        self.primitive = primitive
        self.inplace = inplace
        self.kernels: dict[int, Callable] = {}
        self.owners: dict[int, str] = {}
        self.derivative = None
        self.doc = doc
        self._cache: dict[int, Callable] = {}

    def __repr__(self) -> str:
        kind = "primitive" if self.primitive else "composite"
        return f"<Operator {self.name} ({kind})>"

    # -- registration -------------------------------------------------------
    def register_kernel(self, key, fn: Callable, owner: str = "user", override: bool = False) -> None:
        """Register ``fn`` for dispatch key ``key``; a second registration needs ``override=True``."""
        if key.bit in self.kernels and not override:
            raise RuntimeError(
                f"{owner}: a kernel for op '{self.name}' and dispatch key {key.name} is already "
                f"registered by {self.owners[key.bit]}; pass override=True to replace it")
        self.kernels[key.bit] = fn
        self.owners[key.bit] = owner
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
        return kernel(*args, **kwargs)

    def redispatch(self, mask: int, *args, **kwargs):
        """Run the kernel for ``mask`` (a functionality kernel passes the keys below itself)."""
        kernel = self._cache.get(mask)
        if kernel is None:
            kernel = self._resolve(mask)
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
            return _with_meta(self, fn) if self.meta is not None else fn
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
    def run(*args, **kwargs):
        return fn(op, below, *args, **kwargs)

    return run


def _with_meta(op: Operator, fn: Callable) -> Callable:
    meta = op.meta
    if _DEBUG[0]:  # chosen at resolution time; set_debug() clears the caches
        from .spec import check_outputs

        def checked(*args, **kwargs):
            spec = meta(*args, **kwargs)
            out = fn(spec, *args, **kwargs)
            check_outputs(op, spec, out, args)
            return out

        return checked

    def run(*args, **kwargs):
        return fn(meta(*args, **kwargs), *args, **kwargs)

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


def warn_once(key: str, message: str) -> None:
    """Warn once per process per ``key``."""
    if key not in _fallback_warned:
        _fallback_warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=4)
