"""Complex numbers: the conjugate family, complex tensors built from parts (``complex``, ``polar``).

Conjugation is eager: ``conj`` of a complex tensor runs the ``conj`` kernel and returns a new tensor, so no tensor
ever carries PyTorch's lazy conjugate (or negative) bit; ``is_conj``/``is_neg`` are always False and
``resolve_conj``/``resolve_neg`` return their input. The real and imaginary parts are views (``core/ops/view.py``).
All are composites, so they run on every device and get autograd from the ops they are built of.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..tensor import Tensor
from ._util import exporter, finish_out
from .elementwise import _conj, cos, mul, sin
from .shape import broadcast_tensors, stack
from .view import view_as_complex

__all__: list = []
METHODS: dict = {}


_export = exporter(__all__, METHODS)


@_export
def conj_physical(input: Tensor, *, out=None) -> Tensor:
    """The complex conjugate in new memory; a real ``input`` itself (``torch.conj_physical``)."""
    result = _conj(input) if input.is_complex() else input
    return finish_out("conj_physical", result, out) if out is not None else result


@_export
def conj_physical_(input: Tensor) -> Tensor:
    """Conjugate in place; a real ``input`` is left as it is (``torch.conj_physical_``)."""
    return input.copy_(_conj(input)) if input.is_complex() else input


@_export
def conj(input: Tensor) -> Tensor:
    """The complex conjugate, computed eagerly (core has no lazy conjugate bit); a real ``input`` itself
    (``torch.conj``)."""
    return _conj(input) if input.is_complex() else input


@_export
def is_conj(input: Tensor) -> bool:
    """Whether ``input`` carries a lazy conjugate bit: always False, conjugation is eager (``torch.is_conj``)."""
    return False


@_export
def resolve_conj(input: Tensor) -> Tensor:
    """``input`` with its conjugate bit materialized: ``input`` itself, there is no lazy bit
    (``torch.resolve_conj``)."""
    return input


@_export
def is_neg(input: Tensor) -> bool:
    """Whether ``input`` carries a lazy negative bit: always False, negation is eager (``torch.is_neg``)."""
    return False


@_export
def resolve_neg(input: Tensor) -> Tensor:
    """``input`` with its negative bit materialized: ``input`` itself, there is no lazy bit (``torch.resolve_neg``)."""
    return input


def _check_parts(op: str, a: Tensor, b: Tensor, first: str, second: str) -> None:
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        raise TypeError(f"{op}(): argument '{first}' and '{second}' must be Tensors, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    if a.dtype not in (dt.float32, dt.float64) or b.dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"Expected both inputs to be Float or Double tensors but got "
                           f"{dt.legacy_name(a.dtype)} and {dt.legacy_name(b.dtype)}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"Expected object of scalar type {dt.legacy_name(a.dtype)} but got scalar type "
                           f"{dt.legacy_name(b.dtype)} for second argument")


def _from_parts(real: Tensor, imag: Tensor) -> Tensor:
    """The complex tensor real + i imag (broadcast), built as a (real, imag) pair viewed as complex: exact even for
    infinite parts, and differentiable through stack and view_as_complex."""
    return view_as_complex(stack(broadcast_tensors(real, imag), -1))


@_export
def complex(real: Tensor, imag: Tensor, *, out=None) -> Tensor:  # noqa: A001 - PyTorch's name
    """A complex tensor from its real and imaginary parts, float32 -> complex64, float64 -> complex128
    (``torch.complex``)."""
    _check_parts("complex", real, imag, "real", "imag")
    result = _from_parts(real, imag)
    return finish_out("complex", result, out) if out is not None else result


@_export
def polar(abs: Tensor, angle: Tensor, *, out=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """The complex tensor abs * (cos(angle) + i sin(angle)) (``torch.polar``)."""
    _check_parts("polar", abs, angle, "abs", "angle")
    result = _from_parts(mul(abs, cos(angle)), mul(abs, sin(angle)))
    return finish_out("polar", result, out) if out is not None else result


for _name in ("complex", "polar"):  # torch functions, not Tensor methods
    del METHODS[_name]
