"""Host staging of strided tensors for devices whose buffers are copied whole ranges at a time (opencl, webgpu).

A tensor's elements lie in one *covering span* of its storage (from its first element to its farthest one);
a device runtime copies that span between the device and a host buffer, and NumPy walks the tensor's strides over
the host copy. Writing a strided tensor reads the span first, so the storage's elements between the tensor's own
keep their values (read-modify-write); a contiguous tensor's span is exactly its elements.
"""

from __future__ import annotations

import numpy as np

__all__ = ["covering_span", "host_view", "read_strided", "write_strided"]


def covering_span(tensor) -> tuple:
    """``(byte offset, byte count)`` of the storage range holding a tensor's elements (strides >= 0, non-empty)."""
    size = tensor.dtype.numpy.itemsize
    return tensor._offset * size, size * (1 + sum((n - 1) * s for n, s in zip(tensor._shape, tensor._stride)))


def host_view(host, tensor) -> np.ndarray:
    """The tensor's elements in ``host``, a buffer holding the bytes of its :func:`covering_span`."""
    d = tensor.dtype.numpy  # np.ndarray, not as_strided: that rejects extension dtypes (float8's)
    return np.ndarray(tensor._shape, d, host, 0, tuple(s * d.itemsize for s in tensor._stride))


def read_strided(tensor, read) -> np.ndarray:
    """A contiguous host copy of ``tensor``; ``read(byte offset, byte count)`` copies a storage range to a host
    buffer."""
    if 0 in tensor._shape:
        return np.empty(tensor._shape, tensor.dtype.numpy)
    view = host_view(read(*covering_span(tensor)), tensor)
    return view if view.flags.writeable and tensor.is_contiguous() else np.array(view)


def write_strided(tensor, values, read, write) -> None:
    """Write host ``values`` (broadcast to the tensor's shape) into ``tensor`` through its strides;
    ``read(byte offset, byte count)`` copies a storage range to a host buffer, ``write(byte offset, host)`` back."""
    if 0 in tensor._shape:
        return
    start, nbytes = covering_span(tensor)
    host = bytearray(nbytes) if tensor.is_contiguous() else bytearray(read(start, nbytes))
    host_view(host, tensor)[...] = np.broadcast_to(np.asarray(values).astype(tensor.dtype.numpy), tensor._shape)
    write(start, host)
