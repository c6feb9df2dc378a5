"""One helper for op errors, so every message names the op and its operands the same way."""

from __future__ import annotations

__all__ = ["describe", "op_error", "check"]


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
