"""Tensor: a Storage seen through shape, strides (in elements), a storage offset and a dtype.

Views share the Storage and copy nothing; only kernels touch data. Every op
method here forwards to a function in ``core.ops`` (bound at import time), so
an op is defined in exactly one place.
"""

from __future__ import annotations

import builtins
import numbers
import warnings
import weakref

import numpy as np

from ._hot import is_function
from . import dtypes as _dtype
from .device import device as _device
from .memory_formats import is_contiguous_as, preserve_format

__all__ = ["Tensor", "Size", "contiguous_strides", "RemovableHandle"]

_F = None  # core.ops, bound by core/__init__ once the op modules are imported
# The operators behind ``+ - * /``, called directly (what ``core.add(a, b)`` etc. call when given no alpha,
# rounding_mode or out): one Python frame less on the hottest path.
_ADD = _SUB = _MUL = _DIV = None
_AUTOGRAD: list = []  # [core.autograd.backward] once Tensor.backward first ran
_tls = None  # core.dispatch.keys.tls, bound with the ops


def bind_ops(module) -> None:
    """Give Tensor's methods the op module they forward to (called once by ``core.ops``, which imports Tensor)."""
    global _F, _ADD, _SUB, _MUL, _DIV, _tls
    from .dispatch import get_operator, tls

    _tls = tls
    _F = module
    _ADD, _SUB, _MUL, _DIV = (get_operator(name) for name in ("add", "sub", "mul", "div"))


class RemovableHandle:
    """What ``register_hook`` returns (here and on autograd nodes): ``handle.remove()`` unregisters the hook."""

    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        """Unregister the hook (a no-op if it is already gone)."""
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class Size(tuple):
    """A tensor's shape: a tuple of ints (``torch.Size``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"core.Size([{', '.join(map(str, self))}])"

    def numel(self) -> int:
        """Number of elements a tensor of this shape holds."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        result = tuple.__getitem__(self, item)
        return Size(result) if isinstance(item, slice) else result

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))


class _ContiguousStrides(dict):
    """shape -> its row-major strides (in elements), as PyTorch computes them; up to 4096 shapes remembered."""

    def __missing__(self, shape: tuple) -> tuple:
        acc, out = 1, []
        for s in reversed(shape):
            out.append(acc)
            acc *= s if s > 1 else 1
        strides = tuple(reversed(out))
        if len(self) < 4096:
            self[shape] = strides
        return strides


# ``contiguous_strides(shape)``: row-major strides (in elements) of the tuple ``shape``, as PyTorch computes them.
# A dict look-up (the bound ``__getitem__`` of the table above), so that every fresh tensor pays no Python call
# for a shape seen before.
contiguous_strides = _ContiguousStrides().__getitem__


def _inference_mode_enabled() -> builtins.bool:
    from .dispatch.keys import tls  # here: the dispatch package imports this module

    return tls.inference


class Tensor:
    """A multi-dimensional array on a device, with autograd fields (``torch.Tensor``)."""

    __slots__ = {"_storage": None, "_shape": None, "_stride": None, "_offset": None,
                 "dtype": "The tensor's data type, a ``core.dtype`` (``torch.Tensor.dtype``).", "_np": None,
                 "requires_grad": "Whether autograd records the ops that use this tensor "
                                  "(``torch.Tensor.requires_grad``).",
                 "__dict__": None, "__weakref__": None}

    # Autograd fields live in __dict__ with class defaults: most tensors never set them.
    grad = None
    grad_fn = None
    _base = None
    _retains_grad = False
    _backward_hooks = None
    _is_param = False
    __array_priority__ = 1000  # make numpy defer to our reflected operators

    def __new__(cls, *args, **kwargs):
        """``Tensor(data)`` / ``Tensor(*sizes)``: the legacy constructor, float32 by default."""
        if cls is Tensor and not args and not kwargs:
            return _F.empty(0)
        if cls is Tensor:
            if len(args) == 1 and not isinstance(args[0], numbers.Integral):
                return _F.tensor(args[0], dtype=_dtype.get_default_dtype(), **kwargs)
            return _F.empty(*args, **kwargs)
        return object.__new__(cls)

    @staticmethod
    def _make(storage, shape: tuple, stride: tuple, offset: int, dtype, array=None) -> "Tensor":
        t = object.__new__(Tensor)
        t._storage = storage
        t._shape = shape
        t._stride = stride
        t._offset = offset
        t.dtype = dtype
        t._np = array
        t.requires_grad = False
        return t

    def _alias(self, shape: tuple, stride: tuple, offset: int) -> "Tensor":
        """A view of the same storage with new geometry (no kernel, no copy)."""
        t = object.__new__(Tensor)
        t._storage = self._storage
        t._shape = shape
        t._stride = stride
        t._offset = offset
        t.dtype = self.dtype
        t._np = None
        t.requires_grad = False
        return t

    # -- metadata -------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The tensor's size, a ``core.Size`` (``torch.Tensor.shape``)."""
        return Size(self._shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dimension."""
        if dim is None:
            return Size(self._shape)
        return self._shape[_F.wrap_dim(dim, len(self._shape), "size")]

    def stride(self, dim: int | None = None):
        """Strides in elements, or the stride of one dimension."""
        if dim is None:
            return self._stride
        return self._stride[_F.wrap_dim(dim, len(self._shape), "stride")]

    def storage_offset(self) -> int:
        """Offset of the first element in the storage, in elements."""
        return self._offset

    def untyped_storage(self):
        """The Storage shared by this tensor and all its views."""
        return self._storage

    def storage(self):
        """The storage seen as elements of this tensor's dtype (``torch.Tensor.storage``, a TypedStorage, with
        PyTorch's once-per-process deprecation warning)."""
        from .storage import TypedStorage, warn_typed_storage_removal

        warn_typed_storage_removal()
        return TypedStorage(self._storage, self.dtype)

    def data_ptr(self) -> int:
        """Address of the first element."""
        return self._storage.data_ptr() + self._offset * self.dtype.itemsize

    const_data_ptr = data_ptr  # torch.Tensor.const_data_ptr: the same address, for read-only use

    def is_shared(self) -> builtins.bool:
        """Whether the storage is in shared memory (``torch.Tensor.is_shared``): never, storages are per process."""
        return False

    def share_memory_(self) -> "Tensor":
        """``torch.Tensor.share_memory_``: returns self; core's storages are not moved to shared memory (a gap)."""
        return self

    def is_pinned(self, device=None) -> builtins.bool:
        """Whether the memory is page-locked (``torch.Tensor.is_pinned``): never, core allocates no pinned memory."""
        return False

    def pin_memory(self, device=None) -> "Tensor":
        """``torch.Tensor.pin_memory``: self, as core has no page-locked host memory; only CPU tensors qualify."""
        if self._storage.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
        return self

    def record_stream(self, stream) -> None:
        """``torch.Tensor.record_stream``: nothing to do, as core's backends run one queue per device and free memory
        only after its queued work; the stream must be on this tensor's device type."""
        device = getattr(stream, "device", None)
        if device is None or _device(device).type != self._storage.device.type:
            raise TypeError(f"record_stream(): expected a stream on a {self._storage.device.type} device, got "
                            f"{stream!r}")

    def is_distributed(self) -> builtins.bool:
        """Whether the tensor is distributed (``torch.Tensor.is_distributed``): never, in core."""
        return False

    def is_inference(self) -> builtins.bool:
        """Whether this is an inference tensor: its storage was allocated inside ``core.inference_mode``
        (``torch.Tensor.is_inference``)."""
        return self._storage.inference

    @property
    def device(self) -> _device:
        """The device the tensor's storage is on (``torch.Tensor.device``)."""
        return self._storage.device

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor is on a CUDA device (``torch.Tensor.is_cuda``)."""
        return self._storage.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor is on the CPU (``torch.Tensor.is_cpu``)."""
        return self._storage.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        """Whether the tensor is on the meta device: a shape and dtype without data (``torch.Tensor.is_meta``)."""
        return self._storage.device.type == "meta"

    # device types PyTorch has predicates for and core has no backend of its own for: a plugin may provide them
    is_xpu = property(lambda self: self._storage.device.type == "xpu", doc="Whether the tensor is on an XPU.")
    is_mps = property(lambda self: self._storage.device.type == "mps", doc="Whether the tensor is on MPS.")
    is_ipu = property(lambda self: self._storage.device.type == "ipu", doc="Whether the tensor is on an IPU.")
    is_vulkan = property(lambda self: self._storage.device.type == "vulkan", doc="Whether it is on Vulkan.")
    is_xla = property(lambda self: self._storage.device.type == "xla", doc="Whether the tensor is on XLA.")
    is_maia = property(lambda self: self._storage.device.type == "maia", doc="Whether the tensor is on MAIA.")
    is_mtia = property(lambda self: self._storage.device.type == "mtia", doc="Whether the tensor is on MTIA.")
    # layouts and kinds core does not have: every core tensor is a dense, strided one (quantized ones are a subclass)
    is_mkldnn = property(lambda self: False, doc="Whether the layout is MKL-DNN's (never in core).")
    is_nested = property(lambda self: False, doc="Whether this is a nested tensor (never in core).")
    is_quantized = property(lambda self: False, doc="Whether the dtype is quantized (core.quantized.QuantizedTensor).")

    @property
    def ndim(self) -> int:
        """Number of dimensions (``torch.Tensor.ndim``)."""
        return len(self._shape)

    def dim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    ndimension = dim

    def numel(self) -> int:
        """Number of elements."""
        n = 1
        for s in self._shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element (``torch.Tensor.itemsize``)."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes the elements take: ``numel() * itemsize`` (``torch.Tensor.nbytes``)."""
        return self.numel() * self.dtype.itemsize

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating type."""
        return self.dtype.category == 2

    def is_complex(self) -> bool:
        """Whether the dtype is complex."""
        return self.dtype.category == 3

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements are laid out row-major with no gaps (size-1 dims ignored), or densely in
        ``memory_format`` (``core.channels_last``...)."""
        if memory_format is not None:
            return is_contiguous_as(self._shape, self._stride, memory_format)
        if self._stride == contiguous_strides(self._shape):  # the common case, one look-up
            return True
        expected = 1
        for size, stride in zip(reversed(self._shape), reversed(self._stride)):
            if size == 1:
                continue
            if size == 0:
                return True
            if stride != expected:
                return False
            expected *= size
        return True

    @property
    def _version(self) -> int:
        """How many in-place writes the storage has seen (``torch.Tensor._version``); inference tensors have none."""
        if self._storage.inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._storage.version

    def requires_grad_(self, requires_grad: builtins.bool = True) -> "Tensor":
        """Set ``requires_grad`` in place; only floating and complex tensors can require gradients."""
        if requires_grad and self.dtype.category < 2:
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if requires_grad and self._storage.inference and not _inference_mode_enabled():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        self.requires_grad = requires_grad
        return self

    def detach(self) -> "Tensor":
        """A view of the same data that is cut from the autograd graph."""
        return self._alias(self._shape, self._stride, self._offset)

    def detach_(self) -> "Tensor":
        """Cut this tensor from the autograd graph in place."""
        self.grad_fn = None
        self.requires_grad = False
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph: builtins.bool = False, inputs=None) -> None:
        """Accumulate this tensor's gradient into the graph's leaves (``torch.Tensor.backward``)."""
        if not _AUTOGRAD:  # core.autograd.backward, imported once (core.autograd imports this module)
            from .autograd import backward

            _AUTOGRAD.append(backward)
        _AUTOGRAD[0](self, gradient, retain_graph, create_graph, inputs)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            hooks = self.__dict__.setdefault("_leaf_hooks", [])
        else:
            per_output = self.grad_fn.metadata.setdefault("tensor_hooks", {})
            hooks = per_output.setdefault(self.__dict__.get("_output_nr", 0), [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        ref = weakref.ref(self)

        def keep(grad):
            t = ref()
            if t is not None:
                t.grad = grad.detach().clone() if t.grad is None else t.grad + grad.detach()

        self.register_hook(keep)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(self)`` after backward accumulates into this leaf's ``.grad``
        (``torch.Tensor.register_post_accumulate_grad_hook``)."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        hooks = self.__dict__.setdefault("_post_accumulate_grad_hooks", [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    @property
    def grad_dtype(self):
        """The dtype backward gives this leaf's ``.grad`` (``torch.Tensor.grad_dtype``): its own dtype unless set; a
        set dtype casts incoming gradients to it, None accepts them as they come. Only leaves can set it."""
        return self.__dict__.get("_grad_dtype", self.dtype)

    @grad_dtype.setter
    def grad_dtype(self, value) -> None:
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, _dtype.dtype):
            raise TypeError(f"grad_dtype must be a dtype or None, not {type(value).__name__}")
        if value is not None and self.grad is not None and self.grad.dtype is not value:
            raise RuntimeError(f"Cannot set grad_dtype to '{value}' because there is already a gradient with dtype "
                               f"'{self.grad.dtype}'. Please clear the gradient (.grad = None) before changing "
                               f"grad_dtype, or ensure the new grad_dtype matches the existing gradient's dtype.")
        self.__dict__["_grad_dtype"] = value

    @property
    def retains_grad(self) -> builtins.bool:
        """Whether this non-leaf keeps its ``.grad`` (``retain_grad()`` was called)."""
        return self._retains_grad and self.grad_fn is not None

    @property
    def output_nr(self) -> builtins.int:
        """Which output of its ``grad_fn`` this tensor is (0 for leaves)."""
        return self.__dict__.get("_output_nr", 0)

    @property
    def name(self):
        """The tensor's name (``torch.Tensor.name``): None, as core has no named tensors."""
        return None

    @property
    def volatile(self) -> builtins.bool:
        """Removed in PyTorch (always False, with a warning); use ``core.no_grad()``."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value) -> None:
        warnings.warn("volatile was removed and now has no effect. Use `with core.no_grad():` instead.",
                      UserWarning, stacklevel=2)

    @property
    def is_leaf(self) -> bool:
        """Whether the tensor is a leaf of the autograd graph: made by the user, not by a recorded op
        (``torch.Tensor.is_leaf``)."""
        return self.grad_fn is None

    @property
    def data(self) -> "Tensor":
        """The tensor detached from autograd, sharing its storage; assigning it swaps the contents
        (``torch.Tensor.data``)."""
        return self.detach()

    @data.setter
    def data(self, other: "Tensor") -> None:
        self._storage, self._shape, self._stride = other._storage, other._shape, other._stride
        self._offset, self.dtype, self._np = other._offset, other.dtype, other._np

    @property
    def layout(self):
        """How the elements are stored: ``core.strided`` for a dense tensor (``torch.Tensor.layout``)."""
        from .layouts import strided

        return strided

    @property
    def is_sparse(self) -> builtins.bool:
        """Whether the layout is sparse COO (``torch.Tensor.is_sparse``); False for a dense tensor."""
        return False

    @property
    def is_sparse_csr(self) -> builtins.bool:
        """Whether the layout is sparse CSR (``torch.Tensor.is_sparse_csr``); False for a dense tensor."""
        return False

    @property
    def T(self) -> "Tensor":
        """The dims reversed, a view (``torch.Tensor.T``)."""
        return _F.permute(self, tuple(range(len(self._shape) - 1, -1, -1)))

    @property
    def mT(self) -> "Tensor":
        """The last two dims transposed, a view (``torch.Tensor.mT``)."""
        return _F.transpose(self, -2, -1)

    @property
    def H(self) -> "Tensor":
        """The conjugate transpose of a matrix (``torch.Tensor.H``)."""
        return _F.conj(self.T) if self.is_complex() else self.T

    @property
    def mH(self) -> "Tensor":
        """The conjugate transpose of the last two dims (``torch.Tensor.mH``)."""
        return _F.conj(self.mT) if self.is_complex() else self.mT

    @property
    def real(self) -> "Tensor":
        """The real part, a view of a complex tensor's storage (``torch.Tensor.real``)."""
        return _F.real(self)

    @real.setter
    def real(self, value) -> None:
        _F.real(self).copy_(value if isinstance(value, Tensor) else _F.tensor(value))

    @property
    def imag(self) -> "Tensor":
        """The imaginary part, a view of a complex tensor's storage (``torch.Tensor.imag``)."""
        return _F.imag(self)

    @imag.setter
    def imag(self, value) -> None:
        _F.imag(self).copy_(value if isinstance(value, Tensor) else _F.tensor(value))

    # -- conversion -----------------------------------------------------------
    def to(self, *args, non_blocking: bool = False, copy: bool = False, **kwargs) -> "Tensor":
        """``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``: a converted tensor (self if nothing changes)."""
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        memory_format = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, (str, _device, int)) and not isinstance(a, builtins.bool):
                device = a
            elif isinstance(a, builtins.bool):
                non_blocking = a
            else:
                raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
        result = _F.to_copy(self, device=device, dtype=dtype, non_blocking=non_blocking, copy=copy)
        if memory_format is None or memory_format is preserve_format:
            return result
        return result.contiguous(memory_format)

    def cpu(self) -> "Tensor":
        """A copy on the CPU (self if already there)."""
        return self.to("cpu")

    def cuda(self, device=None, non_blocking: bool = False) -> "Tensor":
        """A copy on a CUDA device."""
        return self._to_device_type("cuda", device, non_blocking)

    def xpu(self, device=None, non_blocking: bool = False) -> "Tensor":
        """A copy on an XPU device (needs a plugin for device type 'xpu')."""
        return self._to_device_type("xpu", device, non_blocking)

    def mtia(self, device=None, non_blocking: bool = False) -> "Tensor":
        """A copy on an MTIA device (needs a plugin for device type 'mtia')."""
        return self._to_device_type("mtia", device, non_blocking)

    def ipu(self, device=None, non_blocking: bool = False) -> "Tensor":
        """A copy on an IPU device (needs a plugin for device type 'ipu')."""
        return self._to_device_type("ipu", device, non_blocking)

    def _to_device_type(self, kind: str, device, non_blocking: bool) -> "Tensor":
        return self.to(_device(kind) if device is None else _device(kind, device)
                       if isinstance(device, builtins.int) else device, non_blocking=non_blocking)

    def type(self, dtype=None, non_blocking: builtins.bool = False):
        """The legacy type name (``'core.FloatTensor'``), or this tensor cast to a dtype, a typed constructor
        (``core.DoubleTensor``) or a type name (``'torch.DoubleTensor'``), self if it is that already
        (``torch.Tensor.type``)."""
        from .legacy_tensors import parse_type, type_name

        if dtype is None:
            return type_name(self)
        if isinstance(dtype, _dtype.dtype):
            return self.to(dtype, non_blocking=non_blocking)
        dtype, device_type = parse_type(dtype)
        device = self.device if self.device.type == device_type else device_type
        return self.to(device, dtype, non_blocking=non_blocking)

    def float(self) -> "Tensor":
        """Cast to float32 (``torch.Tensor.float``)."""
        return self.to(_dtype.float32)

    def double(self) -> "Tensor":
        """Cast to float64 (``torch.Tensor.double``)."""
        return self.to(_dtype.float64)

    def half(self) -> "Tensor":
        """Cast to float16 (``torch.Tensor.half``)."""
        return self.to(_dtype.float16)

    def bfloat16(self) -> "Tensor":
        """Cast to bfloat16 (``torch.Tensor.bfloat16``)."""
        return self.to(_dtype.bfloat16)

    def int(self) -> "Tensor":
        """Cast to int32 (``torch.Tensor.int``)."""
        return self.to(_dtype.int32)

    def long(self) -> "Tensor":
        """Cast to int64 (``torch.Tensor.long``)."""
        return self.to(_dtype.int64)

    def short(self) -> "Tensor":
        """Cast to int16 (``torch.Tensor.short``)."""
        return self.to(_dtype.int16)

    def char(self) -> "Tensor":
        """Cast to int8 (``torch.Tensor.char``)."""
        return self.to(_dtype.int8)

    def byte(self) -> "Tensor":
        """Cast to uint8 (``torch.Tensor.byte``)."""
        return self.to(_dtype.uint8)

    def bool(self) -> "Tensor":
        """Cast to bool (``torch.Tensor.bool``)."""
        return self.to(_dtype.bool)

    def cfloat(self) -> "Tensor":
        """Cast to complex64 (``torch.Tensor.cfloat``)."""
        return self.to(_dtype.complex64)

    def cdouble(self) -> "Tensor":
        """Cast to complex128 (``torch.Tensor.cdouble``)."""
        return self.to(_dtype.complex128)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this tensor's memory (``torch.Tensor.__dlpack__``)."""
        from .utils.dlpack import export

        return export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple:
        """``(DLDeviceType, index)`` of this tensor's device (``torch.Tensor.__dlpack_device__``)."""
        from .utils.dlpack import dlpack_device

        return dlpack_device(self)

    def numpy(self, *, force: bool = False):
        """A NumPy array; shares memory with a CPU tensor (``torch.Tensor.numpy``)."""
        return _F.to_numpy(self, force=force)

    def __array__(self, dtype=None, copy=None):
        array = _F.to_numpy(self, force=True)
        return array.astype(dtype) if dtype is not None else array

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        recording = _tls.recording
        if recording is None:
            return _F.to_numpy(self, force=True).reshape(()).item()
        recording.depth += 1  # this read is item()'s own: the capture tags the number instead
        try:
            value = _F.to_numpy(self, force=True).reshape(()).item()
        finally:
            recording.depth -= 1
        from .dispatch.capture import read_item

        return read_item(self, value)

    def tolist(self):
        """The elements as (nested) Python lists of numbers."""
        array = _F.to_numpy(self, force=True)
        if self.dtype is _dtype.bfloat16 or self.dtype is _dtype.float16:
            array = array.astype("float32")
        return array.tolist()

    def __bool__(self) -> builtins.bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self.item())

    def __int__(self) -> builtins.int:
        return builtins.int(self.item())

    def __float__(self) -> builtins.float:
        return builtins.float(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> builtins.int:
        if self.dtype.category > 1 or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __len__(self) -> builtins.int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_F.unbind(self, 0))

    def __contains__(self, element) -> builtins.bool:
        return builtins.bool(_F.any(_F.eq(self, element)))

    def __hash__(self) -> builtins.int:
        return id(self)

    def __repr__(self) -> str:
        return _F.format_tensor(self)

    def __format__(self, spec: str) -> str:
        if self.dim() == 0 and spec:
            return format(self.item(), spec)
        return repr(self)

    def __reduce_ex__(self, protocol):
        return (_F._rebuild_tensor, (self.detach().cpu().numpy().copy(), str(self.device), self.requires_grad))

    def __deepcopy__(self, memo):
        result = _F.clone(self.detach())
        result.requires_grad = self.requires_grad
        if self.grad is not None:
            result.grad = _F.clone(self.grad)
        memo[id(self)] = result
        return result

    # -- indexing -------------------------------------------------------------
    def __getitem__(self, index) -> "Tensor":
        return _F.getitem(self, index)

    def __setitem__(self, index, value) -> None:
        _F.setitem(self, index, value)

    # -- operators ------------------------------------------------------------
    def __add__(self, other):
        return _ADD(self, other)

    def __radd__(self, other):
        return _ADD(other, self)

    def __iadd__(self, other):
        return _F.add_(self, other)

    def __sub__(self, other):
        return _SUB(self, other)

    def __rsub__(self, other):
        return _SUB(other, self)

    def __isub__(self, other):
        return _F.sub_(self, other)

    def __mul__(self, other):
        return _MUL(self, other)

    def __rmul__(self, other):
        return _MUL(other, self)

    def __imul__(self, other):
        return _F.mul_(self, other)

    def __truediv__(self, other):
        return _DIV(self, other)

    def __rtruediv__(self, other):
        return _DIV(other, self)

    def __itruediv__(self, other):
        return _F.div_(self, other)

    def __floordiv__(self, other):
        return _F.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return _F.floor_divide(other, self)

    def __ifloordiv__(self, other):
        return _F.floor_divide_(self, other)

    def __mod__(self, other):
        return _F.remainder(self, other)

    def __rmod__(self, other):
        return _F.remainder(other, self)

    def __imod__(self, other):
        return _F.remainder_(self, other)

    def __pow__(self, other):
        return _F.pow(self, other)

    def __rpow__(self, other):
        return _F.pow(other, self)

    def __ipow__(self, other):
        return _F.pow_(self, other)

    def __matmul__(self, other):
        return _F.matmul(self, other)

    def __rmatmul__(self, other):
        return _F.matmul(other, self)

    def __and__(self, other):
        return _F.bitwise_and(self, other)

    def __rand__(self, other):
        return _F.bitwise_and(other, self)

    def __iand__(self, other):
        return _F.bitwise_and_(self, other)

    def __or__(self, other):
        return _F.bitwise_or(self, other)

    def __ror__(self, other):
        return _F.bitwise_or(other, self)

    def __ior__(self, other):
        return _F.bitwise_or_(self, other)

    def __xor__(self, other):
        return _F.bitwise_xor(self, other)

    def __rxor__(self, other):
        return _F.bitwise_xor(other, self)

    def __ixor__(self, other):
        return _F.bitwise_xor_(self, other)

    def __lshift__(self, other):
        return _F.bitwise_left_shift(self, other)

    def __rlshift__(self, other):
        return _F.bitwise_left_shift(other, self)

    def __rshift__(self, other):
        return _F.bitwise_right_shift(self, other)

    def __rrshift__(self, other):
        return _F.bitwise_right_shift(other, self)

    def __invert__(self):
        return _F.bitwise_not(self)

    def __neg__(self):
        return _F.neg(self)

    def __pos__(self):
        return _F.positive(self)

    def __abs__(self):
        return _F.abs(self)

    def __eq__(self, other):
        if not isinstance(other, (Tensor, numbers.Number, np.generic)):
            return NotImplemented  # `t == None` is False, as in PyTorch
        return _F.eq(self, other)

    def __ne__(self, other):
        if not isinstance(other, (Tensor, numbers.Number, np.generic)):
            return NotImplemented
        return _F.ne(self, other)

    def __lt__(self, other):
        return _F.lt(self, other)

    def __le__(self, other):
        return _F.le(self, other)

    def __gt__(self, other):
        return _F.gt(self, other)

    def __ge__(self, other):
        return _F.ge(self, other)


def attach_methods(names_to_functions: dict) -> None:
    """Make op functions Tensor methods (``x.exp()`` calls ``core.exp(x)``)."""
    for name, fn in names_to_functions.items():
        if name in Tensor.__dict__:
            continue
        if not is_function(fn):  # an Operator object does not bind self by itself
            fn = _method_of(fn)
        setattr(Tensor, name, fn)


# The classes whose in-place and out= arithmetic may take the ops that write in place (add_, add_out, addcmul_out...):
# Tensor, and the nn wrappers that add no behaviour of their own to it (core/nn/parameter.py adds Parameter and
# Buffer). Other subclasses (UninitializedParameter, user subclasses) compute, then copy.
PLAIN_CLASSES: set = {Tensor}


def _method_of(op):
    def method(self, *args, **kwargs):
        return op(self, *args, **kwargs)

    method.__name__ = getattr(op, "name", getattr(op, "__name__", "method"))
    method.__doc__ = getattr(op, "doc", None) or getattr(op, "__doc__", None)
    return method
