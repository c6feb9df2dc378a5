"""What a meta function returns: the shape and dtype (and device) a kernel must produce."""

from __future__ import annotations

from .keys import BACKEND_KEYS_MASK

__all__ = ["TensorSpec", "empty_from_spec", "check_outputs"]


class TensorSpec:
    """Shape, dtype and device of one output; ops may attach extra fields (e.g. ``compute_dtype``)."""

    __slots__ = ("shape", "dtype", "device", "compute_dtype", "extra")

    def __init__(self, shape: tuple, dtype, device, compute_dtype=None, extra=None):
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.compute_dtype = compute_dtype or dtype
        self.extra = extra

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype}, device={self.device})"


def empty_from_spec(spec, device):
    """Uninitialised tensor(s) shaped like ``spec`` (a spec or a tuple of specs) on ``device``.

    A kernel's outputs: allocated without dispatching the ``empty`` op (the dispatcher already saw the call).
    """
    from ..ops.creation import allocate_raw, resolve_device

    if isinstance(spec, tuple):
        return tuple(empty_from_spec(s, device) for s in spec)
    if spec.shape is None or None in spec.shape:
        raise NotImplementedError(f"the output shape depends on the data ({spec}); it cannot be computed on the "
                                  f"{device} device")
    return allocate_raw(tuple(spec.shape), spec.dtype, resolve_device(device))


def check_outputs(op, spec, out, args) -> None:
    """Debug mode: the kernel's outputs must match its meta function's spec."""
    specs = spec if isinstance(spec, tuple) else (spec,)
    outs = out if isinstance(out, tuple) else (out,)
    owner = ""
    for a in args:
        if hasattr(a, "_storage"):
            owner = op.owners.get((a._storage.key & BACKEND_KEYS_MASK).bit_length() - 1, "")
            break
    if len(specs) != len(outs):
        raise RuntimeError(f"{owner}: kernel for '{op.name}' returned {len(outs)} outputs, expected {len(specs)}")
    for s, o in zip(specs, outs):
        if not hasattr(o, "_shape"):
            raise RuntimeError(f"{owner}: kernel for '{op.name}' returned {type(o).__name__}, expected a Tensor")
        shape_ok = s.shape is None or (len(o._shape) == len(s.shape) and all(  # None: data-dependent size
            want is None or got == want for got, want in zip(o._shape, s.shape)))
        if not shape_ok or o.dtype is not s.dtype or o.device != s.device:
            raise RuntimeError(
                f"{owner}: kernel for '{op.name}' returned Tensor[{_dims(o._shape)}] {o.dtype.name} on "
                f"{o.device}, expected Tensor[{_dims(s.shape)}] {s.dtype.name} on {s.device}")


def _dims(shape) -> str:
    return "?" if shape is None else ", ".join("?" if d is None else str(d) for d in shape)
