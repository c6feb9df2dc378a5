"""The CPU fallback: run an op a device lacks on the CPU reference, with copies in and out."""

from __future__ import annotations

import contextlib

from .. import config
from .keys import Profiler, backend_key, tls
from .operator import fallback_counts, warn_once

__all__ = ["resolve"]


def _implementers(op) -> list[str]:
    """The loaded backends with a kernel of ``op``, as ``name (device type)``."""
    from ..plugins.manager import get_manager

    return sorted(f"{b.name} ({b.device_type})" for b in get_manager().backends.values()
                  if b.instance is not None and b.instance.key.bit in op.kernels)


def resolve(op, key, declined: bool = False):
    """The kernel for ``op`` on backend ``key`` when the backend has none of its own (or ``declined`` the call)."""
    cpu = backend_key("cpu")
    if key is not cpu:
        from ..plugins.manager import runtime_for

        runtime_for("cpu")  # the CPU backend loads on first use, and its kernels are the fallback's
    has_cpu = cpu.bit in op.kernels
    lacks = "declined this call" if declined else "has no kernel for this op"
    if key is cpu or not has_cpu or not config.get("fallback"):
        who = ", ".join(_implementers(op)) or "none"
        why = "" if key is cpu or not has_cpu else " and the CPU fallback is disabled (config 'fallback')"
        message = (f"{op.name}(): the backend of device type '{_device_type(key)}' {lacks}{why}; "
                   f"backends with a kernel: {who}")

        def missing(*args, **kwargs):
            raise NotImplementedError(message)

        return missing

    def run_on_cpu(*args, **kwargs):
        device = next(_tensors(args)).device
        dtypes = f" (dtypes {', '.join(sorted({t.dtype.name for t in _tensors(args)}))})" if declined else ""
        warn_once(f"{op.name}/{key.name}",
                  f"{op.name}(): the backend of device '{device}' {lacks}{dtypes}; running on the CPU with copies "
                  f"(this warning is shown once)")
        fallback_counts[(op.name, device.type)] += 1
        with _unprofiled():  # the copies are how this op runs, not ops of the program: core.profiler shows the op
            cpu_args = [_to_cpu(a) for a in args]
            out = op.redispatch(cpu.mask, *cpu_args, **kwargs)
            if op.inplace:
                args[0].copy_(cpu_args[0])
                return args[0]
            return _to_device(out, device)

    return run_on_cpu


@contextlib.contextmanager
def _unprofiled():
    """Calls inside are not recorded by ``core.profiler`` (the Profiler key excluded on this thread)."""
    saved = tls.exclude & Profiler.mask
    tls.exclude |= Profiler.mask
    try:
        yield
    finally:
        tls.exclude = (tls.exclude & ~Profiler.mask) | saved


def _device_type(key) -> str:
    from ..plugins.manager import get_manager

    types = {b.device_type for b in get_manager().backends.values() if b.instance is not None and b.instance.key is key}
    return types.pop() if types else key.name.lower()


def _tensors(args):
    for a in args:
        if hasattr(a, "_storage"):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (b for b in a if hasattr(b, "_storage"))


def _to_cpu(a):
    if hasattr(a, "_storage"):
        return a.detach().to("cpu")
    if isinstance(a, (list, tuple)):
        return type(a)(_to_cpu(b) for b in a)
    return a


def _to_device(out, device):
    if hasattr(out, "_storage"):
        return out.to(device)
    if isinstance(out, (list, tuple)):
        return type(out)(_to_device(o, device) for o in out)
    return out
