"""One helper for op errors, so every message names the op and its operands the same way; the allocation failure."""

from __future__ import annotations

__all__ = ["describe", "op_error", "check", "OutOfMemoryError", "LinAlgError", "allocate_buffer",
           "format_bytes"]


def describe(value) -> str:
    """A short description of an operand: ``Tensor[2, 3] float32 on cpu`` or the scalar's repr."""
    shape = getattr(value, "_shape", None)
    if shape is not None:
        return f"Tensor[{', '.join(map(str, shape))}] {value.dtype.name} on {value.device}"
    if isinstance(value, (list, tuple)) and value and all(hasattr(v, "_shape") for v in value):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    return repr(value)


def op_error(exc_type: type, op: str, message: str, *operands) -> Exception:
    """Build ``exc_type`` with ``"op(): message (operands: ...)"``."""
    text = f"{op}(): {message}"
    if operands:
        text += " (got " + ", ".join(describe(o) for o in operands) + ")"
    return exc_type(text)


def check(condition, exc_type: type, op: str, message: str, *operands) -> None:
    """Raise :func:`op_error` when ``condition`` is false."""
    if not condition:
        raise op_error(exc_type, op, message, *operands)


class OutOfMemoryError(RuntimeError):
    """A backend could not allocate a buffer (``torch.OutOfMemoryError``, also ``core.cuda.OutOfMemoryError``)."""


# what backends raise for a request beyond the device's memory or its largest buffer, besides the builtin types:
# PyOpenCL's MemoryError and LogicError (INVALID_BUFFER_SIZE), CuPy's OutOfMemoryError, CUDA's codes
_MEMORY_MARKERS = ("MemoryError", "OutOfMemory", "INVALID_BUFFER_SIZE", "MEM_OBJECT_ALLOCATION_FAILURE",
                   "OUT_OF_RESOURCES", "OUT_OF_HOST_MEMORY", "out of memory", "too big")


def _is_allocation_failure(exc: Exception) -> bool:
    # allocate's only argument is a byte count, so a ValueError/TypeError/OverflowError is a size out of range
    if isinstance(exc, (MemoryError, OverflowError, ValueError, TypeError)):
        return True
    text = f"{type(exc).__name__}: {exc}"
    return any(marker in text for marker in _MEMORY_MARKERS)


def format_bytes(n: int) -> str:
    """``n`` bytes as PyTorch's memory messages show them: ``2.00 GiB``, ``512 bytes``."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


def _pool_state(runtime, device) -> str:
    index = device.index or 0
    parts = []
    for name in ("memory_allocated", "memory_reserved"):
        query = getattr(runtime, name, None)
        try:
            parts.append(f"{name.split('_')[1]} {format_bytes(query(index))}" if query is not None else "")
        except Exception:  # noqa: BLE001 - a pool that cannot answer must not hide the allocation failure
            parts.append("")
    state = ", ".join(p for p in parts if p)
    return f"; pool: {state}" if state else ""


def allocate_buffer(runtime, nbytes: int, device, op: str = "empty"):
    """``runtime.allocate(nbytes, device)``: where core allocates storage, so every backend's allocation failure
    becomes one :class:`OutOfMemoryError` naming the op, device, bytes requested and the pool's state (chained to
    the backend's own error), as ``torch.OutOfMemoryError`` does."""
    try:
        return runtime.allocate(nbytes, device)
    except Exception as exc:
        if not _is_allocation_failure(exc):
            raise
        raise OutOfMemoryError(f"{op}(): out of memory: tried to allocate {nbytes} bytes ({format_bytes(nbytes)}) "
                               f"on device {device} (backend {runtime.name}){_pool_state(runtime, device)} "
                               f"[{type(exc).__name__}: {exc}]") from exc


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input: a singular or non-positive-definite matrix
    (``torch.linalg.LinAlgError``, ``torch._C._LinAlgError``)."""
