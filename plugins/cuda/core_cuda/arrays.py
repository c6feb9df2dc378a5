"""What the cuda kernels need from a runtime, written once over an array module ``xp`` (CuPy, or NumPy in tests).

A Storage's ``data`` is a flat ``uint8`` array of the array module; a tensor's elements are an
``xp.ndarray`` view of it (shape, strides and offset honoured), cached on the tensor. A runtime built on
:class:`DeviceArrays` is the context of the kit's reference kernels (``core.backends.kit.reference``: ``xp``,
``array``, ``wrap``, ``special``, ``errstate``, ``reduce_sum``/``reduce_prod``, ``native_half_matmul``), so
the very same kernel code runs on the GPU through CuPy and on the host through NumPy (the ``cudasim`` test
device), and is the NumPy reference backend's code too.
"""

from __future__ import annotations

import contextlib

import numpy as np

from core.backends.api import Storage, Tensor, contiguous_strides

__all__ = ["DeviceArrays", "storage_only"]


def storage_only(d) -> bool:
    """Whether tensors of core dtype ``d`` are held but not computed on: NumPy's extension types from ml_dtypes
    (bfloat16, the float8s), which CuPy has no arrays of (CuPy 14's bfloat16 is experimental and partial).
    Their kernels decline, so ops on them run through the counted CPU fallback, as on opencl."""
    return d.numpy.isbuiltin == 2  # a user-defined NumPy type


class DeviceArrays:
    """Tensor <-> array-module glue shared by the CUDA runtime and its host-simulated twin."""

    xp = np  # the array module (cupy on the GPU)
    special = None  # scipy.special or cupyx.scipy.special
    raw = None  # a RawElementwise launcher of rendered CUDA kernels, or None (use xp's ufuncs)
    native_half_matmul = False  # cuBLAS multiplies float16 itself (float32 accumulation); NumPy has no half GEMM

    @property
    def reduce_sum(self):
        return self.xp.sum

    @property
    def reduce_prod(self):
        return self.xp.prod

    def _view(self, flat, shape: tuple, np_dtype, offset: int, strides: tuple):
        """An ``xp.ndarray`` over the flat byte buffer ``flat`` (offset and strides in bytes)."""
        raise NotImplementedError

    def scope(self, dev):
        """A context in which kernels run on ``dev`` (the current device)."""
        return contextlib.nullcontext()

    def _note_peak(self, index) -> None:
        """Record peak memory use (the CUDA runtime samples its pool; nothing to do elsewhere)."""

    def errstate(self, **kwargs):
        """A context silencing floating-point warnings, as ``numpy.errstate(all="ignore")`` (CuPy never warns)."""
        return contextlib.nullcontext()

    def array(self, t: Tensor):
        """The array-module view of a tensor of this backend (shares memory; cached on the tensor).

        A tensor of a storage-only dtype (:func:`storage_only`) is viewed as unsigned integers of its width: only
        copies touch it (kernels decline it), and :meth:`host_array` gives the host copy its dtype back."""
        a = t._np
        if a is None:
            np_dtype = t.dtype.numpy if not storage_only(t.dtype) else np.dtype(f"u{t.dtype.itemsize}")
            if 0 in t._shape:  # zero-element views may sit at offsets past the buffer's end
                a = t._np = self.xp.empty(t._shape, np_dtype)
                return a
            isz = t.dtype.itemsize
            a = t._np = self._view(t._storage.data, t._shape, np_dtype, t._offset * isz,
                                   tuple(s * isz for s in t._stride))
        return a

    def host_array(self, t: Tensor, host) -> np.ndarray:
        """``host``, a host copy of :meth:`array` of ``t``, in ``t``'s dtype (storage-only dtypes travel as bits)."""
        return host.view(t.dtype.numpy) if storage_only(t.dtype) else host

    def wrap(self, a, spec) -> Tensor:
        """A tensor on ``spec.device`` owning the freshly computed array ``a`` (cast to ``spec.dtype`` if needed).

        ``spec`` is a meta function's spec, or a tensor whose dtype and device the result takes (composites)."""
        xp = self.xp
        np_dtype = spec.dtype.numpy
        if not isinstance(a, xp.ndarray):
            a = xp.asarray(a)
        if a.dtype != np_dtype:
            a = a.astype(np_dtype)
        elif not a.flags.c_contiguous:
            a = xp.ascontiguousarray(a)
        shape = tuple(a.shape)
        self._note_peak(spec.device.index or 0)
        storage = Storage(a.reshape(-1).view(np.uint8), a.nbytes, spec.device, self, self.key.mask)
        return Tensor._make(storage, shape, contiguous_strides(shape), 0, spec.dtype, a)
