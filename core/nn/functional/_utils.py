"""Argument helpers shared by the convolution and pooling functionals: n-tuples and the optional batch dim."""

from __future__ import annotations


def assert_int_or_pair(arg, arg_name: str, message: str) -> None:
    """Assert that ``arg`` is an int or a pair, else AssertionError(``message.format(arg_name)``)
    (``torch.nn.functional.assert_int_or_pair``, which ``fold``/``unfold`` use)."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


def ntuple(value, n: int):
    """``value`` as an n-tuple of ints (an int or a 1-sequence repeats), or None when its length is wrong."""
    if isinstance(value, int):
        return (value,) * n
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * n
    return values if len(values) == n else None


def batch(input, nd: int, message):
    """``input`` with a batch dim (added when it has nd + 1 dims) and whether it had one; ``message()`` otherwise."""
    if input.dim() == nd + 2:
        return input, True
    if input.dim() == nd + 1:
        return input.unsqueeze(0), False
    raise RuntimeError(message())


def unbatch(out, batched: bool):
    """``out`` without the batch dim that :func:`batch` added."""
    return out if batched else out.squeeze(0)
