"""Products against NumPy: every matmul dim case, batched broadcasting, strides, dtypes, einsum, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.testing import assert_close

RNG = np.random.default_rng(0)
TOL = {"float16": {"rtol": 2e-3, "atol": 2e-3}, "float32": {"rtol": 1e-5, "atol": 1e-5}, "float64": {}, "int64": {}}


def _array(shape, dtype="float32"):
    if dtype == "int64":
        return RNG.integers(-5, 6, size=shape).astype(np.int64)
    return RNG.standard_normal(shape).astype(dtype)


def _expected(a, b, dtype):
    """NumPy's product, accumulated like the op (float16 in float32)."""
    if dtype == "float16":
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    return np.matmul(a, b)


MATMUL_CASES = [
    ((3,), (3,)),  # dot
    ((2, 3), (3,)),  # matrix @ vector
    ((3,), (3, 4)),  # vector @ matrix: prepended dim removed
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),  # batch folded into rows
    ((5, 2, 3), (3,)),
    ((3,), (5, 3, 4)),
    ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((5, 1, 2, 3), (4, 3, 2)),  # batch dims broadcast
    ((1, 2, 3), (6, 3, 4)),
    ((0, 2, 3), (3, 4)),  # empty batch
    ((2, 0), (0, 4)),  # k == 0 gives zeros
    ((2, 3), (3, 0)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "float16"])
@pytest.mark.parametrize("shapes", MATMUL_CASES, ids=lambda s: f"{s[0]}@{s[1]}")
def test_matmul_matches_numpy(device, shapes, dtype):
    a, b = _array(shapes[0], dtype), _array(shapes[1], dtype)
    result = core.matmul(core.tensor(a, device=device), core.tensor(b, device=device))
    assert_close(result, _expected(a, b, dtype), **TOL[dtype])
    assert_close(core.tensor(a, device=device) @ core.tensor(b, device=device), _expected(a, b, dtype), **TOL[dtype])


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), k=st.integers(0, 4), m=st.integers(1, 4),
       batch_a=st.lists(st.integers(1, 3), max_size=2), batch_b=st.lists(st.integers(1, 3), max_size=2))
def test_matmul_batched_broadcasting(n, k, m, batch_a, batch_b):
    batch_b = [1 if i % 2 else s for i, s in enumerate(batch_b)]
    try:
        np.broadcast_shapes(tuple(batch_a), tuple(batch_b))
    except ValueError:
        return
    a, b = _array((*batch_a, n, k), "float64"), _array((*batch_b, k, m), "float64")
    assert_close(core.matmul(core.tensor(a), core.tensor(b)), np.matmul(a, b))


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_non_contiguous_operands(device, dtype):
    a, b = _array((4, 3), dtype), _array((5, 4), dtype)
    ta, tb = core.tensor(a, device=device), core.tensor(b, device=device)
    assert_close(core.mm(ta.t(), tb.t()), _expected(a.T, b.T, dtype), **TOL[dtype])
    batched = _array((3, 4, 2), dtype)
    tbat = core.tensor(batched, device=device)
    assert_close(core.matmul(tbat.transpose(1, 2), ta), _expected(batched.transpose(0, 2, 1), a, dtype), **TOL[dtype])
    assert_close(core.bmm(tbat.transpose(1, 2), tbat), _expected(batched.transpose(0, 2, 1), batched, dtype),
                 **TOL[dtype])
    stepped = _array((8, 6), dtype)
    ts = core.tensor(stepped, device=device)[::2, ::2]
    assert_close(core.matmul(ts, ts.t()), _expected(stepped[::2, ::2], stepped[::2, ::2].T, dtype), **TOL[dtype])
    row = _array((3,), dtype)
    expanded = core.tensor(row, device=device).expand(4, 3)  # stride 0
    assert_close(core.matmul(expanded, ta.t()), _expected(np.broadcast_to(row, (4, 3)), a.T, dtype), **TOL[dtype])


def test_integer_and_low_precision_dtypes(device):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    result = core.matmul(core.tensor(a, device=device), core.tensor(a.T.copy(), device=device))
    assert result.dtype is core.int32
    assert_close(result, a @ a.T)
    big = np.full((2, 2), 100, np.uint8)  # wraps like an integer GEMM in uint8
    assert_close(core.mm(core.tensor(big, device=device), core.tensor(big, device=device)),
                 (big.astype(np.int64) @ big.astype(np.int64)).astype(np.uint8))
    half = core.ones(2, 3, dtype=core.bfloat16, device=device)
    assert (half @ half.t()).dtype is core.bfloat16
    assert (half @ half.t()).tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_matmul_errors(device):
    def ones(*shape, dtype=core.float32):
        return core.ones(*shape, dtype=dtype, device=device)

    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        ones(2, 3) @ ones(4, 5)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"):
        ones(3) @ ones(4, 5)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x2x3 and 2x4x5\)"):
        ones(2, 2, 3) @ ones(2, 4, 5)
    with pytest.raises(RuntimeError, match="size mismatch, got input \\(2\\), mat \\(2x3\\), vec \\(4\\)"):
        ones(2, 3) @ ones(4)
    with pytest.raises(RuntimeError, match="inconsistent tensor size, expected tensor \\[3\\] and src \\[4\\]"):
        ones(3) @ ones(4)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        ones(2, 2, 3) @ ones(3, 3, 4)
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D, but they are 0D and 1D"):
        ones() @ ones(3)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        ones(2, 3) @ ones(3, 4, dtype=core.float64)
    with pytest.raises(RuntimeError, match="long int != int"):
        core.mm(ones(2, 3, dtype=core.int64), ones(3, 4, dtype=core.int32))
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        ones(2, 3, dtype=core.bool) @ ones(3, 4, dtype=core.bool)
    with pytest.raises(TypeError, match="must be Tensor"):
        core.matmul(ones(2, 2), [[1.0, 0.0], [0.0, 1.0]])


def test_mm_bmm_mv_dot_argument_checks(device):
    ones = lambda *s, dtype=core.float32: core.ones(*s, dtype=dtype, device=device)
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        core.mm(ones(2, 3), ones(3))
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        core.mm(ones(3), ones(3, 2))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        core.bmm(ones(2, 3), ones(2, 3, 4))
    with pytest.raises(RuntimeError, match="Expected size for first two dimensions of batch2 tensor to be: "
                                           "\\[2, 3\\] but got: \\[2, 4\\]"):
        core.bmm(ones(2, 2, 3), ones(2, 4, 4))
    with pytest.raises(RuntimeError, match="same number of batches, got 2 and 3"):
        core.bmm(ones(2, 2, 3), ones(3, 3, 4))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        core.dot(ones(2, 2), ones(2))
    with pytest.raises(RuntimeError, match="expected both vectors to have same dtype, but found Float and Double"):
        core.dot(ones(2), ones(2, dtype=core.float64))
    with pytest.raises(NotImplementedError, match="'Bool'"):
        core.dot(ones(2, dtype=core.bool), ones(2, dtype=core.bool))
    with pytest.raises(RuntimeError, match="expected a matrix and a vector"):
        core.mv(ones(2, 3), ones(3, 1))


def test_vector_products(device):
    a, b = _array((4,), "float64"), _array((4,), "float64")
    ta, tb = core.tensor(a, device=device), core.tensor(b, device=device)
    assert_close(core.dot(ta, tb), np.dot(a, b))
    assert_close(ta.vdot(tb), np.vdot(a, b))
    assert_close(core.outer(ta, tb[:3]), np.outer(a, b[:3]))
    assert_close(core.ger(ta, tb), np.outer(a, b))
    ints = core.tensor([1, 2], dtype=core.int32, device=device)
    assert core.outer(ints, core.ones(3, device=device)).dtype is core.float32  # promotes like mul
    with pytest.raises(RuntimeError, match="Expected 1-D argument self, but got 2-D"):
        core.outer(core.ones(2, 2, device=device), tb)
    c = core.tensor([1 + 2j, 3 - 1j], device=device)
    assert_close(core.vdot(c, c), np.vdot(c.cpu().numpy(), c.cpu().numpy()).astype(np.complex64))
    m = _array((3, 4), "float64")
    assert_close(core.tensor(m, device=device).mv(ta), m @ a)
    assert_close(core.dot(core.tensor([2, 3], device=device), core.tensor([4, 5], device=device)), np.int64(23))


def test_inner_tensordot_kron(device):
    a, b = _array((2, 3, 4), "float64"), _array((5, 4), "float64")
    ta, tb = core.tensor(a, device=device), core.tensor(b, device=device)
    assert_close(core.inner(ta, tb), np.inner(a, b))
    assert_close(core.inner(core.tensor(2.0, dtype=core.float64, device=device), tb), 2 * b)
    with pytest.raises(RuntimeError, match="the last dimension must match"):
        core.inner(ta, core.ones(4, 3, dtype=core.float64, device=device))
    c = _array((4, 3, 5), "float64")
    tc = core.tensor(c, device=device)
    assert_close(core.tensordot(ta, tc, dims=([1, 2], [1, 0])), np.tensordot(a, c, axes=([1, 2], [1, 0])))
    assert_close(core.tensordot(ta, tb.t(), dims=1), np.tensordot(a, b.T, axes=1))
    assert_close(core.tensordot(ta, tb, dims=0), np.tensordot(a, b, axes=0))
    assert_close(core.tensordot(ta, tb.t(), dims=core.tensor(1)), np.tensordot(a, b.T, axes=1))
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        core.tensordot(ta, tb, dims=1)
    with pytest.raises(RuntimeError, match="dims >= 0"):
        core.tensordot(ta, tb, dims=-1)
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        core.tensordot(ta, tb, dims=([1, 2], [1]))
    x, y = np.arange(6).reshape(2, 3), np.arange(4).reshape(2, 1, 2)
    assert_close(core.kron(core.tensor(x, device=device), core.tensor(y, device=device)), np.kron(x, y))
    assert_close(core.kron(core.tensor(x, device=device), core.tensor(3, device=device)), np.kron(x, 3))


def test_add_products(device):
    inp, m1, m2 = _array((4,), "float64"), _array((2, 3), "float64"), _array((3, 4), "float64")
    t = lambda x: core.tensor(x, device=device)
    assert_close(core.addmm(t(inp), t(m1), t(m2), beta=0.5, alpha=2), 0.5 * inp + 2 * (m1 @ m2))
    nan = core.full((2, 4), float("nan"), dtype=core.float64, device=device)
    assert_close(core.addmm(nan, t(m1), t(m2), beta=0), m1 @ m2)  # beta=0 ignores input, NaNs included
    vec = _array((3,), "float64")
    assert_close(core.addmv(t(inp[:2]), t(m1), t(vec), alpha=-1), inp[:2] - m1 @ vec)
    b1, b2 = _array((5, 2, 3), "float64"), _array((5, 3, 4), "float64")
    assert_close(core.addbmm(t(inp), t(b1), t(b2)), inp + np.matmul(b1, b2).sum(0))
    assert_close(core.baddbmm(t(inp), t(b1), t(b2), beta=2), 2 * inp + np.matmul(b1, b2))
    acc = core.zeros(2, 4, dtype=core.float64, device=device)
    assert acc.addmm_(t(m1), t(m2)) is acc
    assert_close(acc, m1 @ m2)
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got Float and Double"):
        core.addmm(core.ones(4, device=device), t(m1), t(m2))
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        core.addmm(core.ones(5, dtype=core.float64, device=device), t(m1), t(m2))
    with pytest.raises(RuntimeError, match="cannot be broadcast to the product's shape"):
        core.addmm(core.ones(3, 1, 4, dtype=core.float64, device=device), t(m1), t(m2))
    ints = core.ones(2, 2, dtype=core.int64, device=device)
    assert core.addmm(ints, ints, ints, alpha=3).tolist() == [[7, 7], [7, 7]]


def test_trace_cross_cdist(device):
    m = np.arange(12).reshape(3, 4)
    result = core.trace(core.tensor(m, dtype=core.int32, device=device))
    assert result.dtype is core.int64 and result.item() == np.trace(m)
    assert_close(core.trace(core.tensor(m, dtype=core.float64, device=device)), np.trace(m).astype(np.float64))
    with pytest.raises(RuntimeError, match="expected a matrix, but got tensor with dim 3"):
        core.trace(core.ones(2, 2, 2, device=device))
    a, b = _array((4, 3), "float64"), _array((1, 3), "float64")
    assert_close(core.cross(core.tensor(a, device=device), core.tensor(b, device=device), dim=1), np.cross(a, b))
    assert_close(core.tensor(a.T.copy(), device=device).cross(core.tensor(b.T.copy(), device=device)),
                 np.cross(a, b).T)
    with pytest.raises(RuntimeError, match="must have length 3"):
        core.cross(core.ones(2, 3, device=device), core.ones(2, 3, device=device), dim=0)
    x1, x2 = _array((2, 5, 3), "float64"), _array((4, 3), "float64")
    diff = x1[:, :, None, :] - x2[None, None, :, :]
    t1, t2 = core.tensor(x1, device=device), core.tensor(x2, device=device)
    assert_close(core.cdist(t1, t2), np.sqrt((diff ** 2).sum(-1)))
    assert_close(core.cdist(t1, t2, p=1), np.abs(diff).sum(-1))
    assert_close(core.cdist(t1, t2, p=3), (np.abs(diff) ** 3).sum(-1) ** (1 / 3))
    assert_close(core.cdist(t1, t2, p=float("inf")), np.abs(diff).max(-1))
    assert_close(core.cdist(t1, t2, p=0), (diff != 0).sum(-1).astype(np.float64))
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns"):
        core.cdist(t1, core.ones(4, 2, dtype=core.float64, device=device))


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk->kj", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]),
    ("...ij,...jk", [(2, 2, 3), (2, 3, 2)]),
    ("i...->...", [(3, 2, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,cd->", [(2, 3), (4, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("iij->j", [(3, 3, 2)]),
    ("BA,Ab->b", [(2, 3), (3, 4)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    (",i->i", [(), (3,)]),
]


@pytest.mark.parametrize("dtype", ["float64", "int64"])
@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_numpy(device, equation, shapes, dtype):
    arrays = [_array(s, dtype) for s in shapes]
    result = core.einsum(equation, *[core.tensor(a, device=device) for a in arrays])
    assert_close(result, np.asarray(np.einsum(equation, *arrays)), check_dtype=False)
    assert result.dtype.name == dtype


def test_einsum_forms_and_broadcasting(device):
    a, b = _array((2, 3), "float64"), _array((3, 4), "float64")
    ta, tb = core.tensor(a, device=device), core.tensor(b, device=device)
    assert_close(core.einsum("ij,jk->ik", [ta, tb]), a @ b)
    assert_close(core.einsum(ta, [0, 1], tb, [1, 2], [0, 2]), a @ b)
    assert_close(core.einsum(ta, [0, Ellipsis], [Ellipsis, 0]), a.T)
    ones = core.ones(1, dtype=core.float64, device=device)
    assert core.einsum("i,i->i", core.tensor(a[0, :2], device=device), ones).shape == (2,)
    transposed = core.einsum("ij->ji", ta)
    assert transposed.untyped_storage() is ta.untyped_storage()  # a pure permutation stays a view
    assert core.einsum("ij->", core.ones(2, 3, dtype=core.int8, device=device)).dtype is core.int64  # sums like sum()
    assert core.einsum("ij,jk", core.ones(2, 3, dtype=core.int32, device=device),
                       core.ones(3, 2, dtype=core.int32, device=device)).dtype is core.int32


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij", [(2, 2), (2, 2)], "more operands were provided than specified in the equation"),
    ("ij,jk->ik", [(2, 2)], "fewer operands were provided than specified in the equation"),
    ("ii", [(2, 3)], "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("ij,jk", [(2, 3), (4, 4)], ("subscript j has size 4 for operand 1 which does not broadcast with previously "
                                "seen size 3")),
    ("ij->k", [(2, 3)], "output subscript k does not appear in the equation for any input operand"),
    ("ij->ii", [(2, 3)], "output subscript i appears more than once in the output"),
    ("ijk", [(2, 3)], ("the number of subscripts in the equation \\(3\\) does not match the number of dimensions "
                      "\\(2\\) for operand 0 and no ellipsis was given")),
    ("...ij", [(2,)], "is more than the number of dimensions \\(1\\) for operand 0"),
    ("i.j", [(2, 2)], "found '.' for operand 0 that is not part of any ellipsis"),
    ("i...j...", [(2, 2)], "for which an ellipsis was already found"),
    ("i1", [(2, 2)], "invalid subscript given at index 1 in the equation string, subscripts must be in \\[a-zA-Z\\]"),
    ("ij->i->j", [(2, 2)], "invalid subscript given at index 5"),
])
def test_einsum_errors(device, equation, shapes, message):
    with pytest.raises(RuntimeError, match=message):
        core.einsum(equation, *[core.ones(*s, device=device) for s in shapes])


def test_einsum_argument_errors(device):
    with pytest.raises(ValueError, match="must specify the equation string and at least one operand"):
        core.einsum("ij,jk->ik")
    with pytest.raises(RuntimeError, match="same dtype"):
        core.einsum("i,i", core.ones(2, device=device), core.ones(2, dtype=core.float64, device=device))


def test_matches_torch_on_mixed_cases():
    torch = pytest.importorskip("torch")
    a, b = _array((3, 1, 2, 4), "float32"), _array((5, 4, 3), "float32")
    assert_close(core.tensor(a) @ core.tensor(b), (torch.from_numpy(a) @ torch.from_numpy(b)).cpu().numpy())
    for eq, shapes in EINSUM_CASES:
        arrays = [_array(s, "float32") for s in shapes]
        expected = torch.einsum(eq, *[torch.from_numpy(x) for x in arrays]).cpu().numpy()
        assert_close(core.einsum(eq, *[core.tensor(x) for x in arrays]), expected, rtol=1e-5, atol=1e-5)


def test_meta_device_shapes():
    a, b = core.empty(5, 1, 2, 3, device="meta"), core.empty(4, 3, 6, device="meta")
    result = a @ b
    assert result.device.type == "meta" and result.shape == (5, 4, 2, 6)
