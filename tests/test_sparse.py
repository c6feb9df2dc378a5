"""Sparse tensors (COO, CSR, CSC, BSR, BSC) against scipy.sparse and NumPy on every device: construction, components,
coalescing, densifying, conversions, printing, the layout key's errors, products and their gradients (float64
gradcheck in the values and the dense operand), torch.sparse's reductions and softmax, and a GCN that trains."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import core
from core.autograd import gradcheck
from core.testing import assert_close


def _rng():
    return np.random.default_rng(0)


def _close(actual, expected):
    """Values equal within the dtype's tolerance (NumPy references are float64 where core computed float32)."""
    assert_close(actual, expected, check_dtype=False)


def _np(t):
    return t.detach().cpu().numpy()


def _random_sparse(rng, shape=(5, 4), density=0.4):
    """A dense NumPy matrix with about ``density`` of its entries nonzero."""
    values = rng.standard_normal(shape)
    return values * (rng.random(shape) < density)


def _coo(dense, device, dtype=core.float64, requires_grad=False):
    """A COO tensor of a dense NumPy matrix, built from scipy's COO components (row-major: coalesced)."""
    m = sp.coo_matrix(dense)
    return core.sparse_coo_tensor(np.stack([m.row, m.col]).astype(np.int64).tolist(), m.data.tolist(), dense.shape,
                                  dtype=dtype, device=device, requires_grad=requires_grad, is_coalesced=True)


# -- layouts -------------------------------------------------------------------------------------------

def test_layout_objects():
    assert repr(core.sparse_coo) == "core.sparse_coo" and repr(core.strided) == "core.strided"
    assert isinstance(core.sparse_csr, core.layout)
    assert core.ones(2).layout is core.strided
    assert not core.ones(2).is_sparse and not core.ones(2).is_sparse_csr
    assert pickle.loads(pickle.dumps(core.sparse_bsc)) is core.sparse_bsc


# -- construction and components -----------------------------------------------------------------------

def test_coo_construction_matches_scipy(device):
    dense = _random_sparse(_rng())
    s = _coo(dense, device)
    assert s.layout is core.sparse_coo and s.is_sparse and not s.is_sparse_csr
    assert s.shape == (5, 4) and s.dtype is core.float64 and s.device.type == device
    assert s.sparse_dim() == 2 and s.dense_dim() == 0 and s._nnz() == np.count_nonzero(dense)
    _close(_np(s.to_dense()), dense)


def test_coo_inferred_size_and_hybrid(device):
    s = core.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], device=device)
    assert s.shape == (3, 2) and s.sparse_dim() == 1 and s.dense_dim() == 1
    _close(_np(s.to_dense()), np.array([[1.0, 2.0], [0, 0], [3.0, 4.0]]))


def test_coo_uncoalesced_sums_duplicates(device):
    s = core.sparse_coo_tensor([[1, 0, 1], [2, 1, 2]], [1.0, 2.0, 3.0], (2, 3), device=device)
    assert not s.is_coalesced()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 2 and c.coalesce() is c
    assert _np(c.indices()).tolist() == [[0, 1], [1, 2]]
    assert _np(c.values()).tolist() == [2.0, 4.0]
    expected = sp.coo_matrix(([1.0, 2.0, 3.0], ([1, 0, 1], [2, 1, 2])), shape=(2, 3)).toarray()
    _close(_np(s.to_dense()), expected)


def test_empty_and_zero_dim(device):
    e = core.sparse_coo_tensor([[], []], [], (2, 3), device=device)
    assert e._nnz() == 0 and e.shape == (2, 3)
    _close(e.to_dense(), np.zeros((2, 3)))
    assert repr(core.sparse_coo_tensor([[], []], [], (2, 3))) == (
        "tensor(indices=tensor([], size=(2, 0)),\n"
        "       values=tensor([], size=(0,)),\n"
        "       size=(2, 3), nnz=0, layout=core.sparse_coo)")
    _close(core.zeros(2, 3, device=device).to_sparse().to_dense(), np.zeros((2, 3)))
    assert core.tensor(2.5, device=device).to_sparse().to_dense().item() == 2.5
    with pytest.raises(RuntimeError, match="sparse_dim argument must be in \\[1, 2\\]"):
        core.ones(2, 2).to_sparse(0)


@pytest.mark.parametrize("bad, message", [
    (dict(indices=[0, 1], values=[1.0, 2.0]), "sparse_dim x nnz"),
    (dict(indices=[[0, 1]], values=[1.0]), "same nnz"),
    (dict(indices=[[0, 3]], values=[1.0, 2.0], size=(3,)), "size is 3 but found index 3"),
    (dict(indices=[[0, -1]], values=[1.0, 2.0], size=(3,)), "negative index"),
    (dict(indices=[[0, 1]], values=[1.0, 2.0], size=(3, 3)), "sparse_dim \\(1\\) \\+ dense_dim \\(0\\)"),
])
def test_coo_construction_errors(bad, message):
    with pytest.raises(RuntimeError, match=message):
        core.sparse_coo_tensor(**bad)


def test_csr_csc_construction_match_scipy(device):
    dense = _random_sparse(_rng())
    csr, csc = sp.csr_matrix(dense), sp.csc_matrix(dense)
    a = core.sparse_csr_tensor(csr.indptr.tolist(), csr.indices.tolist(), csr.data.tolist(), dense.shape,
                               dtype=core.float64, device=device)
    b = core.sparse_csc_tensor(csc.indptr.tolist(), csc.indices.tolist(), csc.data.tolist(), dense.shape,
                               dtype=core.float64, device=device)
    assert a.layout is core.sparse_csr and a.is_sparse_csr and b.layout is core.sparse_csc
    _close(_np(a.to_dense()), dense)
    _close(_np(b.to_dense()), dense)
    assert _np(a.crow_indices()).tolist() == csr.indptr.tolist() and _np(a.col_indices()).tolist() == \
        csr.indices.tolist()
    assert _np(b.ccol_indices()).tolist() == csc.indptr.tolist() and _np(b.row_indices()).tolist() == \
        csc.indices.tolist()
    c = core.sparse_compressed_tensor(csr.indptr.tolist(), csr.indices.tolist(), csr.data.tolist(), dense.shape,
                                      layout=core.sparse_csr, dtype=core.float64, device=device)
    _close(_np(c.to_dense()), dense)


def test_bsr_bsc_construction_match_scipy(device):
    rng = _rng()
    dense = np.kron(_random_sparse(rng, (3, 2), 0.5), np.ones((2, 3))) * rng.standard_normal((6, 6))
    bsr = sp.bsr_matrix(dense, blocksize=(2, 3))
    a = core.sparse_bsr_tensor(bsr.indptr.tolist(), bsr.indices.tolist(), bsr.data.tolist(), dense.shape,
                               dtype=core.float64, device=device)
    assert a.layout is core.sparse_bsr
    _close(_np(a.to_dense()), dense)
    b = core.tensor(dense, device=device).to_sparse_bsc((2, 3))
    assert b.layout is core.sparse_bsc and b._nnz() == bsr.nnz // 6
    _close(_np(b.to_dense()), dense)
    _close(_np(core.tensor(dense, device=device).to_sparse_bsr((2, 3)).values()), bsr.data)


def test_compressed_construction_errors():
    with pytest.raises(RuntimeError, match="crow_indices must have length 3"):
        core.sparse_csr_tensor([0, 1], [0], [1.0], (2, 2))
    with pytest.raises(RuntimeError, match="start with 0 and end with nnz"):
        core.sparse_csr_tensor([0, 1, 3], [0, 1], [1.0, 2.0], (2, 2))
    with pytest.raises(RuntimeError, match="non-decreasing"):
        core.sparse_csr_tensor([0, 2, 1, 2], [0, 1], [1.0, 2.0], (3, 2))
    with pytest.raises(RuntimeError, match="expected one of sparse_csr"):
        core.sparse_compressed_tensor([0, 1], [0], [1.0], (1, 1), layout=core.sparse_coo)


def test_component_accessors_check_layout(device):
    s = _coo(_random_sparse(_rng()), device)
    with pytest.raises(RuntimeError, match="crow_indices\\(\\): expected a tensor with layout"):
        s.crow_indices()
    with pytest.raises(RuntimeError, match="indices\\(\\): expected a tensor with layout core.sparse_coo"):
        core.ones(2, device=device).indices()
    assert core.ones(2, 3).sparse_dim() == 0 and core.ones(2, 3).dense_dim() == 2


def test_copy_functions(device):
    s = _coo(_random_sparse(_rng()), device).coalesce()
    _close(_np(core.indices_copy(s)), _np(s.indices()))
    _close(_np(core.values_copy(s)), _np(s.values()))
    out = core.empty(0, dtype=core.int64, device=device)
    assert core.indices_copy(s, out=out) is out and core.equal(out, s.indices())
    assert core.values_copy(s).data_ptr() != s.values().data_ptr()
    c = s.to_sparse_csr()
    _close(_np(core.crow_indices_copy(c)), _np(c.crow_indices()))
    _close(_np(core.col_indices_copy(c)), _np(c.col_indices()))
    d = s.to_sparse_csc()
    _close(_np(core.ccol_indices_copy(d)), _np(d.ccol_indices()))
    _close(_np(core.row_indices_copy(d)), _np(d.row_indices()))


# -- conversions ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
def test_dense_to_sparse_matches_scipy(device, layout):
    dense = _random_sparse(_rng())
    t = core.tensor(dense, device=device)
    s = getattr(t, f"to_sparse_{layout}")()
    ref = {"coo": sp.coo_matrix, "csr": sp.csr_matrix, "csc": sp.csc_matrix}[layout](dense)
    assert s.layout is getattr(core, f"sparse_{layout}") and s._nnz() == ref.nnz
    _close(_np(s.values()), ref.data if layout != "coo" else dense[dense != 0])
    _close(_np(s.to_dense()), dense)
    assert t.to_sparse(layout=s.layout).layout is s.layout


def test_to_sparse_hybrid_and_between_layouts(device):
    dense = _random_sparse(_rng(), (4, 3))
    dense[1] = 0
    t = core.tensor(dense, device=device)
    h = t.to_sparse(1)
    assert h.sparse_dim() == 1 and h.dense_dim() == 1 and h._nnz() == np.count_nonzero(dense.any(1))
    _close(_np(h.to_dense()), dense)
    _close(_np(t.to_sparse_csr().to_sparse_coo().to_dense()), dense)
    _close(_np(t.to_sparse_csc().to_sparse_csr().to_dense()), dense)


def test_sparse_mask(device):
    rng = _rng()
    dense, pattern = rng.standard_normal((4, 5)), _random_sparse(rng, (4, 5))
    mask = _coo(pattern, device)
    masked = core.tensor(dense, device=device).sparse_mask(mask)
    assert masked.layout is core.sparse_coo
    _close(_np(masked.to_dense()), dense * (pattern != 0))


def test_to_device_dtype_and_clone(device):
    s = _coo(_random_sparse(_rng()), device)
    f = s.to(core.float32)
    assert f.layout is core.sparse_coo and f.dtype is core.float32
    _close(_np(f.to_dense()), _np(s.to_dense()).astype(np.float32))
    c = s.clone()
    assert c is not s and c._values is not s._values
    _close(_np(c.to_dense()), _np(s.to_dense()))
    assert s.to("cpu").device.type == "cpu"


def test_transpose(device):
    rng = _rng()
    a = _random_sparse(rng, (4, 6))
    s = _coo(a, device)
    for result in (s.t(), s.transpose(0, 1), s.T):
        assert result.layout is core.sparse_coo and result.shape == (6, 4)
        _close(result.to_dense(), a.T)
    assert s.t().coalesce().is_coalesced()
    csr = core.tensor(a, device=device).to_sparse_csr()
    assert csr.t().layout is core.sparse_csc
    _close(csr.t().to_dense(), a.T)
    bsr = core.tensor(a, device=device).to_sparse_bsr((2, 3))
    assert bsr.t().layout is core.sparse_bsc
    _close(bsr.t().to_dense(), a.T)
    d = rng.standard_normal((4, 2))
    _close(core.mm(s.t(), core.tensor(d, device=device)), a.T @ d)
    cube = rng.standard_normal((2, 3, 4)) * (rng.random((2, 3, 4)) < 0.5)
    hybrid = core.tensor(cube, device=device).to_sparse(2)
    _close(hybrid.permute(1, 0, 2).to_dense(), cube.transpose(1, 0, 2))
    with pytest.raises(RuntimeError, match="a sparse dimension with a dense one"):
        hybrid.transpose(1, 2)
    with pytest.raises(RuntimeError, match="cannot be exchanged"):
        hybrid.permute(2, 1, 0)


def test_resize(device):
    s = _coo(_random_sparse(_rng()), device)
    s.sparse_resize_((6, 5), 2, 0)
    assert s.shape == (6, 5)
    with pytest.raises(RuntimeError, match="shrinking"):
        s.sparse_resize_((2, 2), 2, 0)
    s.sparse_resize_and_clear_((3, 2, 2), 1, 2)
    assert s.shape == (3, 2, 2) and s._nnz() == 0 and s.sparse_dim() == 1
    _close(_np(s.to_dense()), np.zeros((3, 2, 2)))
    t = _coo(_random_sparse(_rng(), (7, 9)), device)
    core.resize_as_sparse_(t.sparse_resize_and_clear_((1, 1), 2, 0), _coo(np.eye(8, 9), device))
    assert t.shape == (8, 9)


# -- printing, pickling, errors --------------------------------------------------------------------------

def test_repr_like_pytorch():
    s = core.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    assert repr(s) == ("tensor(indices=tensor([[0, 1, 1],\n"
                       "                       [2, 0, 2]]),\n"
                       "       values=tensor([3., 4., 5.]),\n"
                       "       size=(2, 3), nnz=3, layout=core.sparse_coo)")
    c = core.sparse_csr_tensor([0, 2, 4], [0, 1, 0, 1], [1, 2, 3, 4])
    assert repr(c) == ("tensor(crow_indices=tensor([0, 2, 4]),\n"
                       "       col_indices=tensor([0, 1, 0, 1]),\n"
                       "       values=tensor([1, 2, 3, 4]), size=(2, 2), nnz=4, layout=core.sparse_csr)")
    # 'torch.sparse_csr' is one character longer: PyTorch's line of 81 characters wraps; this one of 80 does not
    g = core.sparse_coo_tensor([[0]], [1.0], (2,), dtype=core.float64, requires_grad=True)
    assert repr(g).endswith("size=(2,), nnz=1, dtype=core.float64, layout=core.sparse_coo,\n       requires_grad=True)")


def test_pickle_and_deepcopy(device):
    import copy

    s = _coo(_random_sparse(_rng()), device)
    for back in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s.to_sparse_csr())):
        assert back.layout in (core.sparse_coo, core.sparse_csr) and back.device.type == device
        _close(_np(back.to_dense()), _np(s.to_dense()))


@pytest.mark.parametrize("layout", ["coo", "csr", "bsc"])
def test_save_and_load(device, layout, tmp_path):
    s = _in_layout(_random_sparse(_rng(), (4, 6)), layout, device)
    path = tmp_path / "sparse.pt"
    core.save({"adjacency": s, "dense": core.ones(2)}, path)
    loaded = core.load(path)["adjacency"]
    assert loaded.layout is s.layout and loaded.shape == s.shape and loaded.device.type == device
    _close(loaded.to_dense(), _np(s.to_dense()))


def test_load_rejects_a_damaged_sparse_tensor(tmp_path):
    import zipfile

    path = tmp_path / "sparse.pt"
    core.save(core.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,)), path)
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    header = next(name for name in entries if name.endswith(".json"))
    entries[header] = entries[header].replace(b'"size":[3]', b'"size":[2]')
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    with pytest.raises(core.serialization.CheckpointError, match="bad sparse tensor: .*size is 2 but found index 2"):
        core.load(path)


def test_dense_ops_reject_sparse_operands(device):
    s = _coo(_random_sparse(_rng()), device)
    with pytest.raises(NotImplementedError, match="exp\\(\\): could not run with arguments from the 'Sparse"):
        core.exp(s)
    with pytest.raises(NotImplementedError, match="layout core.sparse_csr"):
        core.prod(s.to_sparse_csr(), 0)
    for call in (lambda: s.reshape(-1), lambda: s.view(-1), lambda: core.cat([s, s]), lambda: s[0],
                 lambda: core.relu(s), lambda: s.add_(1), lambda: core.clone(s)):
        with pytest.raises(NotImplementedError, match="could not run with arguments from the 'Sparse"):
            call()
    with pytest.raises(RuntimeError, match="do not have strides"):
        s.stride()
    with pytest.raises(TypeError, match="can't convert sparse_coo layout tensor to numpy"):
        s.numpy()
    with pytest.raises(TypeError, match="to_dense"):
        s.tolist()
    assert core.sparse_coo_tensor([[0]], [2.5], (1,), device=device).item() == 2.5


# -- products and their gradients ------------------------------------------------------------------------

def _in_layout(dense, layout, device):
    t = core.tensor(dense, device=device)
    convert = getattr(t, f"to_sparse_{layout}")
    return convert((2, 2)) if layout in ("bsr", "bsc") else convert()


@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr"])
def test_products_match_scipy(device, layout):
    rng = _rng()
    a, b = _random_sparse(rng, (6, 4)), rng.standard_normal((4, 3))
    s, d = _in_layout(a, layout, device), core.tensor(b, device=device)
    expected = sp.csr_matrix(a) @ b
    for result in (core.mm(s, d), core.matmul(s, d), s @ d, core.spmm(s, d), core.dsmm(s, d),
                   core.sparse.mm(s, d)):
        assert result.layout is core.strided
        _close(result, expected)
    c = rng.standard_normal((6, 3))
    _close(core.addmm(core.tensor(c, device=device), s, d, beta=0.5, alpha=2.0), 0.5 * c + 2.0 * expected)
    _close(core.sparse.addmm(core.tensor(c, device=device), s, d, beta=0.5, alpha=2.0), 0.5 * c + 2.0 * expected)
    v = rng.standard_normal(4)
    _close(core.mv(s, core.tensor(v, device=device)), a @ v)
    e = rng.standard_normal((3, 6))
    _close(core.tensor(e, device=device) @ s, e @ a)


def test_sparse_results_of_products(device):
    rng = _rng()
    a, b = _random_sparse(rng, (6, 4)), rng.standard_normal((4, 3))
    a[2] = 0
    s, d = _coo(a, device), core.tensor(b, device=device)
    h = core.hspmm(s, d)
    assert h.layout is core.sparse_coo and h.sparse_dim() == 1 and h.dense_dim() == 1
    assert _np(h.indices()).tolist() == [sorted(set(np.nonzero(a)[0]))]
    _close(h.to_dense(), a @ b)
    _close(core.hsmm(s, d).to_dense(), a @ b)
    for result in (core.smm(s, d), s.smm(d)):
        assert result.layout is core.sparse_coo
        _close(result.to_dense(), a @ b)
    base = _random_sparse(rng, (6, 3))
    for result in (core.sspaddmm(_coo(base, device), s, d, beta=0.5, alpha=2.0),
                   _coo(base, device).sspaddmm(s, d, beta=0.5, alpha=2.0),
                   core.saddmm(_coo(base, device), s, d, beta=0.5, alpha=2.0)):
        assert result.layout is core.sparse_coo and result.is_coalesced()
        _close(result.to_dense(), 0.5 * base + 2.0 * (a @ b))



@pytest.mark.parametrize("layouts", [("coo", "coo"), ("csr", "csr"), ("coo", "csc"), ("csr", "bsr")])
def test_sparse_times_sparse_matches_scipy(device, layouts):
    rng = _rng()
    a, b = _random_sparse(rng, (6, 4)), _random_sparse(rng, (4, 8))
    s, t = _in_layout(a, layouts[0], device), _in_layout(b, layouts[1], device)
    expected = (sp.csr_matrix(a) @ sp.csr_matrix(b)).toarray()
    for product in (core.sparse.mm(s, t), core.mm(s, t), s @ t):
        assert product.layout is (core.sparse_csr if layouts[0] == "csr" else core.sparse_coo)
        _close(product.to_dense(), expected)
    empty = core.sparse_coo_tensor([[], []], [], (4, 8), dtype=core.float64, device=device)
    _close(core.sparse.mm(s, empty).to_dense(), np.zeros((6, 8)))


def test_gradcheck_sparse_sparse_product(device):
    rng = _rng()
    s, t = _coo(_random_sparse(rng, (5, 4)), device), _coo(_random_sparse(rng, (4, 3)), device)
    u = core.tensor(_np(s.values()), device=device, requires_grad=True)
    w = core.tensor(_np(t.values()), device=device, requires_grad=True)
    assert gradcheck(lambda x, y: core.sparse.mm(s.with_values(x), t.with_values(y)).to_dense(), (u, w))


@pytest.mark.parametrize("seed", range(6))
def test_random_shapes_round_trip_and_multiply(device, seed):
    """Random shapes and densities (empty rows and columns, all-zero and full matrices) in every layout."""
    rng = np.random.default_rng(seed)
    n, k, m = (int(v) for v in rng.integers(1, 7, 3) * 2)
    a = _random_sparse(rng, (n, k), float(rng.choice([0.0, 0.2, 0.6, 1.0])))
    b = rng.standard_normal((k, m))
    for layout in ("coo", "csr", "csc", "bsr", "bsc"):
        s = _in_layout(a, layout, device)
        _close(s.to_dense(), a)
        _close(s.to_sparse_coo().to_dense(), a)
        _close(core.mm(s, core.tensor(b, device=device)), a @ b)
        _close(core.sparse.mm(s, _coo(b @ b.T, device)).to_dense(), a @ (b @ b.T))


def test_product_errors(device):
    s = _coo(_random_sparse(_rng()), device)
    with pytest.raises(RuntimeError, match="cannot be multiplied \\(5x4 and 3x2\\)"):
        core.spmm(s, core.ones(3, 2, dtype=core.float64, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        core.spmm(s, core.ones(4, 2, device=device))
    with pytest.raises(RuntimeError, match="spmm\\(\\): expected a tensor with layout"):
        core.spmm(core.ones(2, 2), core.ones(2, 2))


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_gradcheck_sparse_dense_product(device, layout):
    rng = _rng()
    a = _random_sparse(rng, (5, 4))
    pattern = _in_layout(a, layout, device).to(core.float64)
    values = core.tensor(_np(pattern.values()), dtype=core.float64, device=device, requires_grad=True)
    dense = core.tensor(rng.standard_normal((4, 3)), device=device, requires_grad=True)

    def product(v, d):
        return core.sparse.mm(pattern.detach().with_values(v), d)

    assert gradcheck(product, (values, dense))
    assert gradcheck(lambda v: pattern.detach().with_values(v).to_dense(), (values,))


def test_gradcheck_through_the_constructor_and_sparse_sum(device):
    rng = _rng()
    index = [[0, 2, 2, 1], [1, 0, 3, 3]]
    values = core.tensor(rng.standard_normal(4), device=device, requires_grad=True)
    assert gradcheck(lambda v: core.sparse_coo_tensor(index, v, (3, 4)).to_dense(), (values,))
    assert gradcheck(lambda v: core.sparse_csr_tensor([0, 1, 2, 4], [1, 3, 0, 3], v, (3, 4)).to_dense(), (values,))
    assert gradcheck(lambda v: core.sparse.sum(core.sparse_coo_tensor(index, v, (3, 4)), 1).to_dense(), (values,))
    assert gradcheck(lambda v: core.sparse_coo_tensor(index, v, (3, 4)).coalesce().values(), (values,))


def test_sparse_leaf_gets_a_sparse_gradient(device):
    rng = _rng()
    a, b = _random_sparse(rng, (5, 4)), rng.standard_normal((4, 3))
    s = _coo(a, device, requires_grad=True)
    assert s.requires_grad and s.is_leaf and s.grad is None
    d = core.tensor(b, device=device, requires_grad=True)
    weights = rng.standard_normal((5, 3))
    (core.mm(s, d) * core.tensor(weights, device=device)).sum().backward()
    assert s.grad.layout is core.sparse_coo
    rows, cols = np.nonzero(a)
    _close(s.grad.values(), (weights @ b.T)[rows, cols])
    _close(d.grad, a.T @ weights)


def test_autograd_grad_and_backward_inputs_with_a_sparse_input(device):
    rng = _rng()
    a, b = _random_sparse(rng, (5, 4)), rng.standard_normal((4, 3))
    s = _coo(a, device, requires_grad=True)
    d = core.tensor(b, device=device, requires_grad=True)
    grad_s, grad_d = core.autograd.grad(core.mm(s, d).sum(), [s, d])
    assert grad_s.layout is core.sparse_coo
    _close(grad_s.to_dense(), (np.ones((5, 3)) @ b.T) * (a != 0))
    _close(grad_d, a.T @ np.ones((5, 3)))
    core.mm(s, d).sum().backward(inputs=[s])
    assert d.grad is None
    _close(s.grad.to_dense(), (np.ones((5, 3)) @ b.T) * (a != 0))


def test_csr_leaf_gets_a_csr_gradient(device):
    rng = _rng()
    a, b = _random_sparse(rng, (5, 4)), rng.standard_normal((4, 3))
    csr = sp.csr_matrix(a)
    s = core.sparse_csr_tensor(csr.indptr.tolist(), csr.indices.tolist(), csr.data.tolist(), a.shape,
                               dtype=core.float64, device=device, requires_grad=True)
    core.sparse.mm(s, core.tensor(b, device=device)).sum().backward()
    assert s.grad.layout is core.sparse_csr
    _close(s.grad.to_dense(), (np.ones((5, 3)) @ b.T) * (a != 0))


def test_to_sparse_of_a_graph_tensor_is_differentiable(device):
    x = core.tensor(_random_sparse(_rng()), device=device, requires_grad=True)
    x.to_sparse().values().sum().backward()
    _close(x.grad, (_np(x) != 0).astype(np.float64))


def test_sampled_addmm(device):
    rng = _rng()
    a, m1, m2 = _random_sparse(rng, (5, 6)), rng.standard_normal((5, 3)), rng.standard_normal((3, 6))
    s = core.tensor(a, device=device).to_sparse_csr()
    out = core.sparse.sampled_addmm(s, core.tensor(m1, device=device), core.tensor(m2, device=device), beta=0.5,
                                    alpha=2.0)
    assert out.layout is core.sparse_csr
    _close(out.to_dense(), (0.5 * a + 2.0 * (m1 @ m2)) * (a != 0))


# -- reductions, softmax, arithmetic ---------------------------------------------------------------------

def test_sparse_sum(device):
    rng = _rng()
    a = _random_sparse(rng, (4, 5))
    s = _coo(a, device)
    _close(core.sparse.sum(s), a.sum())
    for dim in (0, 1, (0, 1), -1):
        result = core.sparse.sum(s, dim)
        expected = a.sum(dim)
        _close(result.to_dense() if result.layout is core.sparse_coo else result, expected)
    hybrid = core.tensor(np.stack([a, a + 1]), device=device).to_sparse(1)
    result = core.sparse.sum(hybrid, 2)
    assert result.layout is core.sparse_coo
    _close(result.to_dense(), np.stack([a, a + 1]).sum(2))
    _close(core.sparse.sum(s.to_sparse_csr(), 1).to_dense(), a.sum(1))
    _close(s.sum(), a.sum())
    _close(core.sum(s, 0).to_dense(), a.sum(0))


def _masked_softmax(a, dim, log=False):
    """NumPy softmax over the nonzero entries along ``dim`` (zeros stay zero: absent entries are -inf)."""
    present = a != 0
    shifted = np.where(present, a, -np.inf)
    e = np.exp(shifted - shifted.max(dim, keepdims=True, initial=-1e300))
    p = np.where(present, e / np.where(present, e, 0).sum(dim, keepdims=True).clip(1e-300), 0)
    return np.where(present, np.log(np.where(present, p, 1)), 0) if log else p


@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax_and_log_softmax(device, dim):
    a = _random_sparse(_rng(), (5, 6), 0.5)
    s = _coo(a, device)
    _close(core.sparse.softmax(s, dim).to_dense(), _masked_softmax(a, dim))
    _close(core.sparse.log_softmax(s, dim).to_dense(), _masked_softmax(a, dim, log=True))
    csr = core.sparse.softmax(s.to_sparse_csr(), dim)
    assert csr.layout is core.sparse_csr
    _close(csr.to_dense(), _masked_softmax(a, dim))
    values = core.tensor(_np(s.coalesce().values()), device=device, requires_grad=True)
    pattern = s.coalesce().detach()
    assert gradcheck(lambda v: core.sparse.softmax(pattern.with_values(v), dim).values(), (values,))


def test_sparse_arithmetic(device):
    rng = _rng()
    a, b = _random_sparse(rng), _random_sparse(rng)
    s, t = _coo(a, device), _coo(b, device)
    _close((s + t).to_dense(), a + b)
    _close(core.add(s, t, alpha=2).to_dense(), a + 2 * b)
    total = s.to_sparse_csr() + t.to_sparse_csr()
    assert total.layout is core.sparse_csr
    _close(total.to_dense(), a + b)
    with pytest.raises(NotImplementedError, match="add\\(\\): could not run"):
        s + t.to_sparse_csr()
    _close((s * 3).to_dense(), 3 * a)
    _close((2 * s).to_dense(), 2 * a)
    _close((s / 4).to_dense(), a / 4)
    _close((-s).to_dense(), -a)
    _close(s + core.tensor(b, device=device), a + b)
    weights = core.tensor(rng.standard_normal(a.shape), device=device, requires_grad=True)
    for product in (s * weights, weights * s, s.to_sparse_csr() * weights):
        assert product.layout is s.layout or product.layout is core.sparse_csr
        _close(product.to_dense(), a * _np(weights))
    (s * weights).to_dense().sum().backward()
    _close(weights.grad, a)
    with pytest.raises(NotImplementedError, match="mul\\(\\): could not run"):
        s * s


# -- a graph network written for PyTorch -------------------------------------------------------------------

def test_gcn_trains(device):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "gcn.py"
    spec = importlib.util.spec_from_file_location("gcn_example", path)
    gcn = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gcn)
    losses = gcn.train(device=device, epochs=30)
    assert losses[-1] < 0.5 * losses[0]
