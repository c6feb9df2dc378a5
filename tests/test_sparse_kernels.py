"""The sparse @ dense library path: the ``sparse_mm`` op (SciPy's kernel on cpu, cuSPARSE through cupyx on cuda, the
index_add composite elsewhere) against scipy.sparse on every device, its derivative formula (gradcheck in float64 for
the values and the dense operand, COO, CSR and CSC, both directions), and that cpu runs the native kernel."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import core
from core.autograd import gradcheck, gradgradcheck
from core.dispatch import OPERATORS, backend_key, invalidate_caches
from core.dispatch.operator import fallback_counts
from core.testing import assert_close


def _matrix(rng, shape=(7, 5), density=0.35):
    """A scipy COO matrix with about ``density`` of its entries stored, some rows and columns empty."""
    return sp.random(*shape, density=density, format="coo", random_state=rng, dtype=np.float64)


def _sparse(m, layout, device, dtype=core.float64):
    """The core tensor of scipy matrix ``m`` in ``layout`` (COO keeps scipy's entry order: uncoalesced)."""
    if layout == "coo":
        return core.sparse_coo_tensor(np.stack([m.row, m.col]).astype(np.int64), m.data, m.shape, dtype=dtype,
                                      device=device)
    c = m.tocsr() if layout == "csr" else m.tocsc()
    make = core.sparse_csr_tensor if layout == "csr" else core.sparse_csc_tensor
    return make(c.indptr.astype(np.int64), c.indices.astype(np.int64), c.data, m.shape, dtype=dtype, device=device)


def _values(s):
    return s._values


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
@pytest.mark.parametrize("dtype", [core.float32, core.float64])
def test_products_equal_scipy(device, layout, dtype):
    rng = np.random.default_rng(0)
    m = _matrix(rng)
    s = _sparse(m, layout, device, dtype)
    b, c, left = rng.standard_normal((5, 3)), rng.standard_normal((7, 3)), rng.standard_normal((4, 7))
    d, bias = core.tensor(b, dtype=dtype, device=device), core.tensor(c, dtype=dtype, device=device)
    expected = m @ b
    for result in (core.sparse.mm(s, d), core.mm(s, d), core.matmul(s, d), s @ d, core.spmm(s, d)):
        assert result.layout is core.strided and result.dtype is dtype
        assert_close(result, expected, check_dtype=False)
    assert_close(core.addmm(bias, s, d, beta=0.5, alpha=2.0), 0.5 * c + 2.0 * expected, check_dtype=False)
    assert_close(core.sparse.addmm(bias, s, d, beta=0.5, alpha=2.0), 0.5 * c + 2.0 * expected, check_dtype=False)
    dense_left = core.tensor(left, dtype=dtype, device=device)
    assert_close(core.mm(dense_left, s), left @ m, check_dtype=False)  # dense @ sparse: the transposed product


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("transpose", [False, True])
def test_sparse_mm_op_equals_scipy(device, compressed, transpose):
    """The op itself over the components, plain and transposed; duplicates (COO) add up, empty rows stay zero."""
    rng = np.random.default_rng(1)
    m = _matrix(rng, (6, 9))
    if not compressed:  # a duplicate entry: scipy's COO sums it, so must the op
        m = sp.coo_matrix((np.r_[m.data, 2.5], (np.r_[m.row, 0], np.r_[m.col, 0])), shape=m.shape)
    csr = m.tocsr()
    rows, cols = (csr.indptr, csr.indices) if compressed else (m.row, m.col)
    data = csr.data if compressed else m.data
    dense = rng.standard_normal((6 if transpose else 9, 4))
    args = [core.tensor(a.astype(np.int64), device=device) for a in (rows, cols)]
    out = OPERATORS["sparse_mm"](*args, core.tensor(data, device=device), core.tensor(dense, device=device), m.shape,
                                 compressed, transpose)
    assert_close(out, (m.T if transpose else m) @ dense)


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
def test_gradcheck_values_and_dense(device, layout):
    rng = np.random.default_rng(2)
    pattern = _sparse(_matrix(rng), layout, device)
    values = _values(pattern).detach().requires_grad_()
    right = core.tensor(rng.standard_normal((5, 3)), device=device, requires_grad=True)
    left = core.tensor(rng.standard_normal((2, 7)), device=device, requires_grad=True)
    assert gradcheck(lambda v, d: core.sparse.mm(pattern.with_values(v), d), (values, right))
    assert gradcheck(lambda v, d: core.mm(d, pattern.with_values(v)), (values, left))  # the transposed product


def test_gradgradcheck(device):
    """The derivative formula is itself made of differentiable ops (sparse_mm, index_select, mul, sum)."""
    rng = np.random.default_rng(3)
    pattern = _sparse(_matrix(rng, (4, 3), 0.5), "csr", device)
    values = _values(pattern).detach().requires_grad_()
    dense = core.tensor(rng.standard_normal((3, 2)), device=device, requires_grad=True)
    assert gradgradcheck(lambda v, d: core.sparse.mm(pattern.with_values(v), d), (values, dense))


def test_gradients_equal_hand_computed(device):
    """d(sum(S @ D))/dv_e = sum(D[col_e]) and d/dD = S.T @ ones, by hand from the scipy matrix."""
    rng = np.random.default_rng(4)
    m = _matrix(rng)
    s = _sparse(m, "coo", device).requires_grad_()
    b = rng.standard_normal((5, 3))
    d = core.tensor(b, device=device, requires_grad=True)
    core.sparse.mm(s, d).sum().backward()
    assert_close(s.grad._values, b[m.col].sum(1))
    assert_close(d.grad, m.T @ np.ones((7, 3)))


def test_cpu_runs_the_library_kernel(monkeypatch):
    """On cpu the op has a native kernel (scipy.sparse): no CPU fallback and no composite, forward and backward."""
    op = OPERATORS["sparse_mm"]
    assert backend_key("cpu").bit in op.kernels
    assert op.kernels[backend_key("cpu").bit] is not op.decomposition

    def composite_must_not_run(*args, **kwargs):
        raise AssertionError("sparse_mm ran its composite on cpu")

    monkeypatch.setattr(op, "decomposition", composite_must_not_run)
    invalidate_caches()
    try:
        rng = np.random.default_rng(5)
        m = _matrix(rng)
        before = sum(fallback_counts.values())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for layout in ("coo", "csr", "csc"):
                s = _sparse(m, layout, "cpu").requires_grad_()
                d = core.tensor(rng.standard_normal((5, 3)), requires_grad=True)
                out = core.sparse.mm(s, d)
                out.sum().backward()
                assert_close(out, m @ d.detach().numpy())
        assert sum(fallback_counts.values()) == before
    finally:
        monkeypatch.undo()
        invalidate_caches()


def test_integer_product_declines_to_the_composite(device):
    """scipy/cuSPARSE take float and complex; integer products run the composite on the same device."""
    m = sp.coo_matrix(np.array([[1, 0, 2], [0, 0, 3]], dtype=np.int64))
    s = _sparse(m, "coo", device, core.int64)
    b = np.arange(6, dtype=np.int64).reshape(3, 2)
    out = core.sparse.mm(s, core.tensor(b, device=device))
    assert out.dtype is core.int64
    np.testing.assert_array_equal(out.cpu().numpy(), m @ b)


def test_sparse_mm_errors():
    op = OPERATORS["sparse_mm"]
    rows, cols = core.tensor([0, 1]), core.tensor([1, 0])
    values, dense = core.tensor([1.0, 2.0]), core.ones(2, 3)
    with pytest.raises(RuntimeError, match="sparse_mm\\(\\): the sparse matrix \\(2x4\\)"):
        op(rows, cols, values, dense, (2, 4), False, False)
    with pytest.raises(RuntimeError, match="sparse_mm\\(\\): expected values and dense to have the same dtype"):
        op(rows, cols, values, dense.double(), (2, 2), False, False)
    with pytest.raises(RuntimeError, match="sparse_mm\\(\\): rows and cols must be int64"):
        op(rows.int(), cols, values, dense, (2, 2), False, False)
    with pytest.raises(RuntimeError, match="rows of length m \\+ 1"):
        op(rows, cols, values, dense, (2, 2), True, False)
    with pytest.raises(TypeError, match="sparse_mm\\(\\): argument 'dense' must be a dense Tensor"):
        op(rows, cols, values, [[1.0]], (2, 2), False, False)


@pytest.mark.parametrize("dtype", [core.float16, core.bfloat16, core.complex64])
def test_half_and_complex_products(dtype):
    """Half types compute in float32 and round once (as PyTorch's opmath); complex multiplies as complex."""
    rng = np.random.default_rng(6)
    m = _matrix(rng)
    b = rng.standard_normal((5, 3)) + (0.5j * rng.standard_normal((5, 3)) if dtype.is_complex else 0)
    data = m.data + (1j * m.data[::-1] if dtype.is_complex else 0)
    m = sp.coo_matrix((data, (m.row, m.col)), shape=m.shape)
    out = core.sparse.mm(_sparse(m, "coo", "cpu", dtype), core.tensor(b, dtype=dtype))
    assert out.dtype is dtype
    assert_close(out, m @ b, check_dtype=False)


def test_gradcheck_complex():
    """Complex values and dense operand: the formula conjugates (PyTorch's convention for complex gradients)."""
    rng = np.random.default_rng(7)
    m = _matrix(rng)
    pattern = _sparse(m, "csr", "cpu", core.complex128)
    values = (_values(pattern) * (1 + 0.5j)).detach().requires_grad_()
    dense = core.tensor(rng.standard_normal((5, 2)) + 1j * rng.standard_normal((5, 2)), requires_grad=True)
    assert gradcheck(lambda v, d: core.sparse.mm(pattern.with_values(v), d), (values, dense))
