"""Define new ops and register kernels from Python (the ``torch.library`` idea).

    import core
    from core import library

    op = library.define("mylib::scale", meta=lambda x, k: core.dispatch.TensorSpec(x.shape, x.dtype, x.device))
    @library.impl("mylib::scale", "cpu")
    def scale_cpu(spec, x, k):
        return x * k
    op(core.ones(3), 2.0)             # or library.ops.mylib.scale(...)

A kernel of an op that has a meta function receives the meta's spec first;
``"CompositeImplicitAutograd"`` registers a decomposition used on every
device. Registering the same (op, key) twice is an error unless
``override=True``.
"""

from __future__ import annotations

from typing import Callable

from .dispatch import define as _define, get_operator
from .dispatch.keys import backend_key, key_named
from .dispatch.operator import OPERATORS, Operator, invalidate_caches

__all__ = ["define", "impl", "Library", "ops"]

_COMPOSITE = "CompositeImplicitAutograd"


def _check_name(name: str) -> None:
    namespace, sep, op = name.partition("::")
    if not sep or not namespace.isidentifier() or not op.replace(".", "_").isidentifier():
        raise ValueError(f"library op names look like 'namespace::name', got {name!r}")


def define(name: str, meta: Callable | None = None, decomposition: Callable | None = None,
           doc: str = "") -> Operator:
    """Declare op ``namespace::name`` with an optional meta function and decomposition."""
    _check_name(name)
    return _define(name, meta=meta, decomposition=decomposition, primitive=meta is not None and
                   decomposition is None, doc=doc)


def _key(dispatch_key: str):
    key = key_named(dispatch_key)
    if key is not None:
        return key
    return backend_key(dispatch_key)  # a device type: "cpu", "opencl", "mydevice"


def impl(name: str, dispatch_key: str, fn: Callable | None = None, *, override: bool = False):
    """Register ``fn`` for op ``name`` under a device type (``"cpu"``), a key name, or a decomposition.

    Usable directly (``impl(name, "cpu", fn)``) or as a decorator.
    """

    def register(kernel: Callable) -> Callable:
        op = get_operator(name)
        if dispatch_key == _COMPOSITE:
            if op.decomposition is not None and not override:
                raise RuntimeError(f"op '{name}' already has a decomposition; pass override=True to replace it")
            op.decomposition = kernel
            invalidate_caches()
        else:
            op.register_kernel(_key(dispatch_key), kernel, owner="core.library", override=override)
        return kernel

    return register if fn is None else register(fn)


class Library:
    """A namespace of ops: ``Library("mylib", "DEF")`` defines, ``"IMPL"`` only registers kernels."""

    def __init__(self, namespace: str, kind: str = "DEF"):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Library kind must be DEF, IMPL or FRAGMENT, got {kind!r}")
        if kind == "DEF" and any(n.startswith(namespace + "::") for n in OPERATORS):
            raise RuntimeError(f"a library for namespace '{namespace}' with kind DEF already exists; "
                               f"use kind='FRAGMENT' to add ops to it")
        self.namespace = namespace
        self.kind = kind

    def define(self, name: str, meta: Callable | None = None, decomposition: Callable | None = None,
               doc: str = "") -> Operator:
        """Declare ``namespace::name``."""
        if self.kind == "IMPL":
            raise RuntimeError(f"Library('{self.namespace}', 'IMPL') cannot define ops")
        return define(f"{self.namespace}::{name}", meta=meta, decomposition=decomposition, doc=doc)

    def impl(self, name: str, fn: Callable, dispatch_key: str = "cpu", *, override: bool = False) -> Callable:
        """Register ``fn`` for ``namespace::name`` under ``dispatch_key``."""
        return impl(f"{self.namespace}::{name}", dispatch_key, fn, override=override)


class _Namespace:
    def __init__(self, namespace: str):
        self._namespace = namespace

    def __getattr__(self, name: str) -> Operator:
        return get_operator(f"{self._namespace}::{name}")


class _Ops:
    """``library.ops.mylib.scale`` finds op ``mylib::scale``."""

    def __getattr__(self, namespace: str) -> _Namespace:
        return _Namespace(namespace)


ops = _Ops()
