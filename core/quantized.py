"""QuantizedTensor: a Tensor of a quantized dtype, held as its integer representation and quantization parameters.

A quantized tensor stores ``int_repr`` (an int8/uint8/int32 tensor; quint4x2 and quint2x4 keep one 4-/2-bit
value per uint8 element, unpacked) with either a per-tensor ``scale``/``zero_point`` or per-channel ``scales``,
``zero_points`` and ``axis``; its value is ``(int_repr - zero_point) * scale``. Its Storage carries the
``Quantized`` dispatch key, which has no kernels: every op given a quantized operand raises, naming the op and
the ``QuantizedCPU``-style backend (as PyTorch does for the ops it has no quantized kernel for), rather than
computing on the integers. The functions of ``core/ops/quantization.py`` work on the components.
"""

from __future__ import annotations

from . import dtypes as dt
from .dispatch.keys import Quantized
from .named import NamedConstant
from .storage import Storage
from .tensor import Tensor

__all__ = ["qscheme", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric", "per_channel_symmetric",
           "per_channel_affine_float_qparams", "QuantizedTensor", "make_quantized"]


class qscheme(NamedConstant):
    """A quantization scheme, named like ``torch.qscheme`` objects (``core.per_tensor_affine``)."""

    __slots__ = ()


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")


def make_quantized(int_repr: Tensor, dtype, scheme: qscheme, scale, zero_point, axis: int | None = None
                   ) -> "QuantizedTensor":
    """A quantized tensor of ``dtype`` over ``int_repr`` (no checks: the quantize functions check).

    Per tensor, ``scale`` is a float and ``zero_point`` an int; per channel they are 1-D tensors (float64 scales,
    int64 or, for ``per_channel_affine_float_qparams``, floating zero points) along ``axis``.
    """
    t = object.__new__(QuantizedTensor)
    t._shape = int_repr._shape
    t._stride = int_repr._stride
    t._offset = 0
    t._np = None
    t.requires_grad = False
    t.dtype = dtype
    t._int_repr = int_repr
    t._qscheme = scheme
    t._scale = scale
    t._zero_point = zero_point
    t._axis = axis
    t._storage = Storage(None, 0, int_repr.device, int_repr._storage.backend,
                         Quantized.mask | int_repr._storage.key)
    return t


class QuantizedTensor(Tensor):
    """A tensor of a quantized dtype (``qint8``, ``quint8``, ``qint32``, ``quint4x2``, ``quint2x4``)."""

    is_quantized = property(lambda self: True, doc="Whether the dtype is quantized: always, for this class.")

    @property
    def dispatch_name(self) -> str:
        """PyTorch's name of the backend this tensor dispatches to (``'QuantizedCPU'``), for error messages."""
        device = self._storage.device.type
        return "Quantized" + (device.upper() if device in ("cpu", "cuda") else device.capitalize())

    def _with_int_repr(self, int_repr: Tensor) -> "QuantizedTensor":
        return make_quantized(int_repr, self.dtype, self._qscheme, self._scale, self._zero_point, self._axis)

    def clone(self, *, memory_format=None) -> "QuantizedTensor":
        """A copy with its own integer representation (``torch.Tensor.clone``)."""
        return self._with_int_repr(self._int_repr.clone())

    def detach(self) -> "QuantizedTensor":
        """The tensor itself: quantized tensors hold no autograd history (``torch.Tensor.detach``)."""
        return self

    @property
    def data(self) -> "QuantizedTensor":
        return self

    def numpy(self, *, force: bool = False):
        """Quantized tensors have no NumPy form (PyTorch raises the same TypeError); use ``int_repr()``."""
        raise TypeError(f"Got unsupported ScalarType {dt.legacy_name(self.dtype)}: convert a quantized tensor with "
                        f".dequantize() or .int_repr() first")

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def tolist(self):
        """The dequantized values as nested lists (PyTorch's ``tolist`` of a quantized tensor)."""
        return self.dequantize().tolist()

    def item(self):
        """The dequantized value of a one-element quantized tensor."""
        return self.dequantize().item()

    def __reduce_ex__(self, protocol):
        return (make_quantized, (self._int_repr, self.dtype, self._qscheme, self._scale, self._zero_point,
                                 self._axis))

    def __deepcopy__(self, memo):
        result = self.clone()
        memo[id(self)] = result
        return result
