"""torch's ``sym_*`` helpers. core has no symbolic shapes, so on Python numbers (and 0-d values) they are the
plain operations, as PyTorch's are on plain numbers."""

from __future__ import annotations

import builtins
import math

__all__ = ["sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum", "sym_ite"]


def sym_int(a) -> int:
    """``a`` as an int, rounding towards zero (``torch.sym_int``)."""
    return builtins.int(math.trunc(a)) if isinstance(a, builtins.float) else builtins.int(a)


def sym_float(a) -> float:
    """``a`` as a float (``torch.sym_float``)."""
    return builtins.float(a)


def sym_max(a, b):
    """The larger of ``a`` and ``b`` (``torch.sym_max``)."""
    return builtins.max(a, b)


def sym_min(a, b):
    """The smaller of ``a`` and ``b`` (``torch.sym_min``)."""
    return builtins.min(a, b)


def sym_not(a) -> bool:
    """Logical not of ``a`` (``torch.sym_not``)."""
    return not a


def sym_sqrt(a) -> float:
    """The square root of ``a`` (``torch.sym_sqrt``)."""
    return math.sqrt(a)


def sym_sum(args):
    """The sum of ``args``, starting from 0 (``torch.sym_sum``)."""
    return builtins.sum(args)


def sym_ite(b, t, f):
    """``t`` if ``b`` else ``f`` (``torch.sym_ite``)."""
    return t if b else f
