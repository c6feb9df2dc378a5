"""The torch namespace's smaller functions against NumPy on every device: aliases, ``*_copy`` and ``*_scatter``
forms of the views, splits, memory constructors and integer/float math; PyTorch's errors and gradients in float64."""

from __future__ import annotations


import numpy as np
import pytest

import core
from core.autograd import gradcheck


def _rng():
    return np.random.default_rng(0)


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


# -- aliases and small ones ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,ref", [("arccos_", np.arccos), ("arcsin_", np.arcsin), ("arctan_", np.arctan),
                                      ("arcsinh_", np.arcsinh), ("arctanh_", np.arctanh), ("fix_", np.trunc),
                                      ("negative_", np.negative)])
def test_inplace_aliases(device, name, ref):
    a = _rng().uniform(-0.9, 0.9, (3, 4))
    x = _t(a, device)
    assert getattr(core, name)(x) is x
    np.testing.assert_allclose(_np(x), ref(a), rtol=1e-5, atol=1e-6)
    y = _t(a, device)
    assert getattr(y, name)() is y
    np.testing.assert_allclose(_np(y), ref(a), rtol=1e-5, atol=1e-6)


def test_arctan2_inplace(device):
    a, b = _rng().standard_normal(5), _rng().standard_normal(5) + 0.1
    x = _t(a, device)
    assert x.arctan2_(_t(b, device)) is x
    np.testing.assert_allclose(_np(x), np.arctan2(a, b), rtol=1e-6)
    assert not hasattr(core, "arctan2_")


def test_view_as_real_copy():
    z = np.array([1 + 2j, -3 + 0.5j])
    x = core.tensor(z)
    y = core.view_as_real_copy(x)
    np.testing.assert_array_equal(_np(y), np.stack([z.real, z.imag], -1))
    assert y._storage is not x._storage


def test_hyperbolic_aliases(device):
    a = _rng().uniform(1.1, 3.0, (5,))
    np.testing.assert_allclose(_np(core.arccosh(_t(a, device))), np.arccosh(a), rtol=1e-5)
    np.testing.assert_allclose(_np(_t(a, device).arcsinh()), np.arcsinh(a), rtol=1e-5)
    np.testing.assert_allclose(_np(core.arctanh(_t(a / 4, device))), np.arctanh(a / 4), rtol=1e-5)
    x = _t(a, device)
    x.arccosh_()
    np.testing.assert_allclose(_np(x), np.arccosh(a), rtol=1e-5)


def test_detach_same_size_signed_device(device):
    x = _t([1.0, 2.0], device, requires_grad=True)
    d = core.detach(x)
    assert not d.requires_grad and d.grad_fn is None and _np(d).tolist() == [1.0, 2.0]
    y = x * 2
    assert core.detach_(y) is y and not y.requires_grad
    assert core.is_same_size(x, _t([3.0, 4.0], device)) and not x.is_same_size(_t([[1.0, 2.0]], device))
    assert core.is_signed(x) and _t([1], device).is_signed()
    assert not core.is_signed(core.tensor([1], dtype=core.uint8, device=device))
    assert not core.is_signed(core.tensor([True], device=device))
    assert core.get_device(x) == (-1 if x.device.type == "cpu" else (x.device.index or 0))
    assert core.tensor([1.0]).get_device() == -1
    with pytest.raises(TypeError, match="is_same_size"):
        core.is_same_size(x, [1.0, 2.0])


def test_fill(device):
    x = _t([[1.0, 2.0], [3.0, 4.0]], device)
    y = core.fill(x, 7)
    assert y.dtype == x.dtype and _np(y).tolist() == [[7.0, 7.0], [7.0, 7.0]] and _np(x)[0, 0] == 1.0
    z = core.fill(core.tensor([1, 2], device=device), _t(2.7, device))
    assert z.dtype == core.int64 and _np(z).tolist() == [2, 2]
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        core.fill(x, _t([1.0, 2.0], device))


def test_adjoint(device):
    a = _rng().standard_normal((2, 3, 4))
    np.testing.assert_allclose(_np(core.adjoint(_t(a, device))), np.swapaxes(a, -1, -2))
    c = a + 1j * _rng().standard_normal((2, 3, 4))
    np.testing.assert_allclose(_np(core.tensor(c).adjoint()), np.conj(np.swapaxes(c, -1, -2)))
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        core.adjoint(_t([1.0], device))


def test_nonzero_static(device):
    x = _t([[0, 1, 0], [2, 0, 3]], device)
    ref = np.argwhere(np.array([[0, 1, 0], [2, 0, 3]]))
    assert _np(core.nonzero_static(x, size=3)).tolist() == ref.tolist()
    assert _np(core.nonzero_static(x, size=2)).tolist() == ref[:2].tolist()
    padded = x.nonzero_static(size=5, fill_value=-7)
    assert padded.dtype == core.int64 and _np(padded).tolist() == ref.tolist() + [[-7, -7], [-7, -7]]
    with pytest.raises(RuntimeError, match="non-negative"):
        core.nonzero_static(x, size=-1)


def test_empty_permuted(device):
    x = core.empty_permuted((2, 3, 4), (0, 2, 1), device=device)
    assert x.shape == (2, 3, 4) and x.stride() == (12, 1, 3)
    y = core.empty_permuted((2, 3), (1, 0), dtype=core.float64)
    assert y.dtype == core.float64 and y.stride() == (1, 2)
    with pytest.raises(RuntimeError, match="physical_layout"):
        core.empty_permuted((2, 3), (0, 0))


def test_frombuffer_shares_memory():
    buf = bytearray(np.arange(6, dtype=np.float32).tobytes())
    x = core.frombuffer(buf, dtype=core.float32)
    assert x.shape == (6,) and _np(x).tolist() == list(range(6))
    x[0] = 42.0
    assert np.frombuffer(buf, np.float32)[0] == 42.0
    part = core.frombuffer(buf, dtype=core.float32, count=2, offset=8)
    assert _np(part).tolist() == [2.0, 3.0]
    with pytest.warns(UserWarning, match="not writable"):
        assert _np(core.frombuffer(b"\x01\x02", dtype=core.uint8)).tolist() == [1, 2]
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        core.frombuffer(bytearray(7), dtype=core.float32)
    with pytest.raises(ValueError, match="must not be 0"):
        core.frombuffer(bytearray(0), dtype=core.float32)
    with pytest.raises(ValueError, match="must not be greater than actual buffer length"):
        core.frombuffer(bytearray(8), dtype=core.float32, count=3)


def test_from_file(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(5, dtype=np.float64).tofile(path)
    x = core.from_file(str(path), size=5, dtype=core.float64)
    assert _np(x).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    shared = core.from_file(str(path), shared=True, size=3, dtype=core.float64)
    shared[1] = 9.0
    del shared
    assert np.fromfile(path, np.float64)[1] == 9.0 and _np(x)[1] == 1.0  # the private copy kept its value
    with pytest.raises(RuntimeError, match="bytes"):
        core.from_file(str(path), size=6, dtype=core.float64)
    with pytest.raises(RuntimeError, match="No such file"):
        core.from_file(str(tmp_path / "missing.bin"), size=1)


# -- copies of views -----------------------------------------------------------------------------------

COPIES = [
    ("alias_copy", (), lambda a: a),
    ("as_strided_copy", ((2, 2), (1, 2), 1), lambda a: np.lib.stride_tricks.as_strided(
        a.reshape(-1)[1:], (2, 2), (a.itemsize, 2 * a.itemsize))),
    ("detach_copy", (), lambda a: a),
    ("diagonal_copy", (1,), lambda a: np.diagonal(a, 1)),
    ("expand_copy", ((2, 3, 4),), lambda a: np.broadcast_to(a, (2, 3, 4))),
    ("narrow_copy", (1, 1, 2), lambda a: a[:, 1:3]),
    ("permute_copy", ((1, 0),), lambda a: a.T),
    ("select_copy", (0, 2), lambda a: a[2]),
    ("slice_copy", (1, 0, 4, 2), lambda a: a[:, 0:4:2]),
    ("squeeze_copy", (), lambda a: a),
    ("t_copy", (), lambda a: a.T),
    ("transpose_copy", (0, 1), lambda a: a.T),
    ("unfold_copy", (1, 2, 2), lambda a: np.stack([a[:, 0:2], a[:, 2:4]], 1)),
    ("unsqueeze_copy", (1,), lambda a: a[:, None]),
    ("view_copy", ((4, 3),), lambda a: a.reshape(4, 3)),
]


@pytest.mark.parametrize("name,args,ref", COPIES, ids=[c[0] for c in COPIES])
def test_copies_are_fresh(device, name, args, ref):
    a = _rng().standard_normal((3, 4))
    x = _t(a, device)
    y = getattr(core, name)(x, *args)
    np.testing.assert_allclose(_np(y), ref(a), rtol=1e-6)
    assert y.is_contiguous() and y._storage is not x._storage


@pytest.mark.parametrize("name,args", [("split_copy", (2, 1)), ("split_with_sizes_copy", ([1, 3], 1)),
                                       ("unbind_copy", (1,))])
def test_tuple_copies(device, name, args):
    a = _rng().standard_normal((3, 4))
    x = _t(a, device)
    pieces = getattr(core, name)(x, *args)
    view_name = {"split_copy": "split", "split_with_sizes_copy": "split_with_sizes", "unbind_copy": "unbind"}[name]
    views = getattr(core, view_name)(x, *args)
    assert len(pieces) == len(views)
    for p, v in zip(pieces, views):
        assert p._storage is not x._storage and v._storage is x._storage
        np.testing.assert_array_equal(_np(p), _np(v))


def test_copy_gradients():
    x = core.tensor(_rng().standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda t: core.permute_copy(t, (1, 0)) * 2, (x,))
    assert gradcheck(lambda t: core.slice_copy(t, 1, 1, 4, 2), (x,))
    assert gradcheck(lambda t: core.diagonal_copy(t, -1), (x,))
    assert not core.detach_copy(x).requires_grad


def test_splits(device):
    a = np.arange(24.0).reshape(2, 3, 4)
    x = _t(a, device)
    for ours, ref, arg in ((core.hsplit, np.hsplit, 3), (core.vsplit, np.vsplit, 2), (core.dsplit, np.dsplit, [1, 3]),
                           (core.hsplit, np.hsplit, [1])):
        got = ours(x, arg)
        want = ref(a, arg)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(_np(g), w)
    assert [p.shape for p in x.dsplit(2)] == [(2, 3, 2), (2, 3, 2)]
    assert [_np(p).tolist() for p in core.hsplit(_t([1.0, 2.0, 3.0, 4.0], device), 2)] == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(RuntimeError, match="not divisible by the split_size 2"):
        core.hsplit(x, 2)
    with pytest.raises(RuntimeError, match="at least 3 dimension"):
        core.dsplit(x[0], 2)
    with pytest.raises(RuntimeError, match="at least 2 dimension"):
        x[0, 0].vsplit(2)


def test_split_with_sizes_and_unsafe(device):
    x = _t(np.arange(10.0), device)
    assert [p.shape[0] for p in core.split_with_sizes(x, [3, 7])] == [3, 7]
    assert [p.shape[0] for p in x.split_with_sizes([5, 5])] == [5, 5]
    assert [_np(p).tolist() for p in core.unsafe_split(x, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.shape[0] for p in x.unsafe_chunk(3)] == [4, 4, 2]
    assert [p.shape[0] for p in core.unsafe_split_with_sizes(x, [1, 9])] == [1, 9]
    with pytest.raises(RuntimeError, match="sum exactly to 10"):
        core.split_with_sizes(x, [3, 3])


# -- scatters into views -------------------------------------------------------------------------------

def test_scatters(device):
    rng = _rng()
    a = rng.standard_normal((4, 5))
    x = _t(a, device)

    want = a.copy()

    want[:, 2] = 1.0
    np.testing.assert_allclose(_np(core.select_scatter(x, _t(np.ones(4), device), 1, 2)), want)
    want = a.copy()
    want[1:4:2] = 2.0
    np.testing.assert_allclose(_np(x.slice_scatter(_t(np.full((2, 5), 2.0), device), 0, 1, 4, 2)), want)
    want = a.copy()
    want[np.arange(4), np.arange(4) + 1] = 3.0
    np.testing.assert_allclose(_np(core.diagonal_scatter(x, _t(np.full(4, 3.0), device), 1)), want)
    want = a.copy().reshape(-1)
    want[1:5] = [5.0, 6.0, 7.0, 8.0]
    got = x.as_strided_scatter(_t([[5.0, 6.0], [7.0, 8.0]], device), (2, 2), (2, 1), 1)
    np.testing.assert_allclose(_np(got), want.reshape(4, 5))
    np.testing.assert_allclose(_np(x), a)  # input untouched
    with pytest.raises(RuntimeError, match="src size"):
        core.select_scatter(x, _t(np.ones(3), device), 1, 2)


def test_scatter_gradients():
    rng = _rng()
    x = core.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(lambda a, s: core.select_scatter(a, s, 0, 1), (x, core.tensor(rng.standard_normal(5),
                                                                                    requires_grad=True)))
    assert gradcheck(lambda a, s: core.slice_scatter(a, s, 1, 0, 5, 2),
                     (x, core.tensor(rng.standard_normal((4, 3)), requires_grad=True)))
    assert gradcheck(lambda a, s: core.diagonal_scatter(a, s, -1),
                     (x, core.tensor(rng.standard_normal(3), requires_grad=True)))
    assert gradcheck(lambda a, s: core.as_strided_scatter(a, s, (2, 2), (5, 1), 3),
                     (x, core.tensor(rng.standard_normal((2, 2)), requires_grad=True)))


def test_slice_inverse(device):
    base = _t(np.arange(10.0), device)
    part = base[2:7]
    whole = core.slice_inverse(part, base, 0, 2, 7)
    assert whole.shape == (10,) and _np(whole).tolist() == list(range(10))
    whole[0] = -1.0
    assert _np(base)[0] == -1.0  # a view of the same memory


# -- integer and float math ----------------------------------------------------------------------------

def test_gcd_lcm(device):
    rng = _rng()
    a, b = rng.integers(-60, 60, (4, 5)), rng.integers(-60, 60, (5,))
    a[0, 0], b[0] = 0, 0
    x, y = _t(a, device), _t(b, device)
    assert _np(core.gcd(x, y)).tolist() == np.gcd(a, b).tolist()
    assert _np(x.lcm(y)).tolist() == np.lcm(a, b).tolist()
    small = core.tensor(a.astype(np.int32), device=device)
    assert core.gcd(small, small).dtype == core.int32
    z = _t(a, device)
    assert z.gcd_(y) is z and _np(z).tolist() == np.gcd(a, b).tolist()
    z = _t(a, device)
    assert core.lcm_(z, y) is z and _np(z).tolist() == np.lcm(a, b).tolist()
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        core.gcd(_t([1.0], device), _t([2.0], device))


def test_ldexp(device):
    a, e = _rng().standard_normal(6), np.array([-3, -1, 0, 1, 5, 10])
    got = core.ldexp(_t(a, device), _t(e, device))
    np.testing.assert_allclose(_np(got), np.ldexp(a, e))
    assert core.ldexp(_t([1, 2], device), _t([1, 2], device)).dtype == core.float32
    x = _t(a, device)
    assert x.ldexp_(_t(e, device)) is x
    np.testing.assert_allclose(_np(x), np.ldexp(a, e))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_frexp(device, dtype):
    a = np.concatenate([_rng().standard_normal(20) * 10.0 ** _rng().integers(-30, 30, 20),
                        [0.0, -0.0, 1.0, 0.5, -2.0, 1024.0, np.inf, -np.inf, np.nan, 1e-40]]).astype(dtype)
    if device.startswith("cuda") and dtype == "float32":
        a = a[:-1]  # cuda flushes float32 subnormals to zero (docs/backends/cuda.md, "On a GPU")
    mantissa, exponent = core.frexp(core.tensor(a, device=device))
    want_m, want_e = np.frexp(a)
    np.testing.assert_array_equal(_np(mantissa), want_m)
    np.testing.assert_array_equal(_np(exponent), want_e)
    result = core.tensor(a, device=device).frexp()
    assert result.exponent.dtype == core.int32 and result.mantissa.dtype == getattr(core, dtype)
    with pytest.raises(RuntimeError, match="only supports floating-point"):
        core.frexp(_t([1, 2], device))


def test_logcumsumexp(device):
    a = _rng().standard_normal((3, 7)) * 5
    for dim in (0, 1, -1):
        np.testing.assert_allclose(_np(core.logcumsumexp(_t(a, device), dim)), np.logaddexp.accumulate(a, dim),
                                   rtol=1e-5)
    np.testing.assert_allclose(_np(_t([-1000.0, 0.0, -1000.0], device).logcumsumexp(0)), [-1000.0, 0.0, 0.0])
    z = a[:2] + 1j * _rng().standard_normal((2, 7))
    got = _np(core.logcumsumexp(core.tensor(z, device=device), 1))  # the imaginary part is defined modulo 2 pi
    np.testing.assert_allclose(np.exp(got), np.cumsum(np.exp(z), 1), rtol=1e-5)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        core.logcumsumexp(_t([1, 2], device), 0)
    x = core.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: core.logcumsumexp(t, 1), (x,))


def _renorm_ref(a, p, dim, maxnorm):
    moved = np.moveaxis(a, dim, 0)
    norms = np.linalg.norm(moved.reshape(moved.shape[0], -1), ord=p, axis=1)
    factor = np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return np.moveaxis(moved * factor.reshape((-1,) + (1,) * (a.ndim - 1)), 0, dim)


def test_renorm(device):
    a = _rng().standard_normal((3, 4, 2)) * 2
    for p, dim, maxnorm in ((2, 0, 2.0), (1, 1, 1.5), (3, -1, 3.0)):
        np.testing.assert_allclose(_np(core.renorm(_t(a, device), p, dim, maxnorm)), _renorm_ref(a, p, dim, maxnorm),
                                   rtol=1e-5)
    x = _t(a, device)
    assert x.renorm_(2, 0, 1.0) is x
    np.testing.assert_allclose(_np(x), _renorm_ref(a, 2, 0, 1.0), rtol=1e-5)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        core.renorm(_t([1.0], device), 2, 0, 1.0)
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        core.renorm(_t(a, device), 0, 0, 1.0)
    t = core.tensor(a, requires_grad=True)
    assert gradcheck(lambda v: core.renorm(v, 2, 1, 1.0), (t,))


def test_dist(device):
    a, b = _rng().standard_normal((3, 4)), _rng().standard_normal(4)
    for p, ord_ in ((2, 2), (1, 1), (float("inf"), np.inf), (3, 3)):
        got = core.dist(_t(a, device), _t(b, device), p)
        assert got.shape == ()
        np.testing.assert_allclose(_np(got), np.linalg.norm((a - b).ravel(), ord_), rtol=1e-5)
    x, y = core.tensor(a, requires_grad=True), core.tensor(b, requires_grad=True)
    assert gradcheck(lambda u, v: u.dist(v, 3), (x, y))


def test_addr(device):
    rng = _rng()
    m, u, v = rng.standard_normal((3, 4)), rng.standard_normal(3), rng.standard_normal(4)
    got = core.addr(_t(m, device), _t(u, device), _t(v, device), beta=0.5, alpha=2)
    np.testing.assert_allclose(_np(got), 0.5 * m + 2 * np.outer(u, v), rtol=1e-6)
    nan_input = _t(np.full((3, 4), np.nan), device)
    np.testing.assert_allclose(_np(core.addr(nan_input, _t(u, device), _t(v, device), beta=0)), np.outer(u, v))
    x = _t(m, device)
    assert x.addr_(_t(u, device), _t(v, device)) is x
    np.testing.assert_allclose(_np(x), m + np.outer(u, v), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Expected 1-D argument vec1"):
        core.addr(_t(m, device), _t(m, device), _t(v, device))
    args = tuple(core.tensor(a, requires_grad=True) for a in (m, u, v))
    assert gradcheck(lambda a, b, c: core.addr(a, b, c, beta=0.3, alpha=-2), args)


def test_addmv_inplace_and_chain_matmul(device):
    rng = _rng()
    y, mat, vec = rng.standard_normal(3), rng.standard_normal((3, 4)), rng.standard_normal(4)
    x = _t(y, device)
    assert core.addmv_(x, _t(mat, device), _t(vec, device), beta=2, alpha=0.5) is x
    np.testing.assert_allclose(_np(x), 2 * y + 0.5 * mat @ vec, rtol=1e-5)
    mats = [rng.standard_normal(s) for s in ((2, 3), (3, 4), (4, 5), (5, 1))]
    got = core.chain_matmul(*[_t(m, device) for m in mats])
    np.testing.assert_allclose(_np(got), np.linalg.multi_dot(mats), rtol=1e-5)
    np.testing.assert_allclose(_np(core.chain_matmul(_t(mats[0], device))), mats[0])
    with pytest.raises(RuntimeError, match="expected 2 instead"):
        core.chain_matmul(_t(vec, device), _t(mat, device))


def test_trapezoid(device):
    rng = _rng()
    y, x = rng.standard_normal((3, 6)), np.sort(rng.standard_normal(6))
    np.testing.assert_allclose(_np(core.trapezoid(_t(y, device))), np.trapezoid(y, axis=-1), rtol=1e-6)
    np.testing.assert_allclose(_np(core.trapezoid(_t(y, device), dx=0.5, dim=0)), np.trapezoid(y, dx=0.5, axis=0),
                               rtol=1e-6)
    np.testing.assert_allclose(_np(core.trapz(_t(y, device), _t(x, device))), np.trapezoid(y, x), rtol=1e-6)
    xs = np.sort(rng.standard_normal((3, 6)), axis=1)
    np.testing.assert_allclose(_np(core.trapezoid(_t(y, device), _t(xs, device))), np.trapezoid(y, xs), rtol=1e-6)
    cumulative = np.cumsum((y[:, 1:] + y[:, :-1]) / 2 * np.diff(x), axis=1)
    np.testing.assert_allclose(_np(core.cumulative_trapezoid(_t(y, device), _t(x, device))), cumulative, rtol=1e-6)
    assert core.trapezoid(_t([1, 2, 3], device)).dtype == core.float32
    assert _np(core.trapezoid(_t(np.zeros((2, 0)), device))).tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="one `x` value for each sample point"):
        core.trapezoid(_t(y, device), _t(x[:5], device))
    args = (core.tensor(y, requires_grad=True), core.tensor(x, requires_grad=True))
    assert gradcheck(lambda a, b: core.trapezoid(a, b), args)
    assert gradcheck(lambda a, b: core.cumulative_trapezoid(a, b), args)


def test_vander(device):
    a = np.array([1.5, -2.0, 3.0, 0.5])
    for n, increasing in ((None, False), (3, True), (6, False), (1, False), (0, True)):
        got = core.vander(_t(a, device), n, increasing)
        np.testing.assert_allclose(_np(got), np.vander(a, n, increasing), rtol=1e-6)
    ints = core.vander(core.tensor([1, 2, 3], dtype=core.int32, device=device), 3)
    assert ints.dtype == core.int64 and _np(ints).tolist() == np.vander([1, 2, 3], 3).tolist()
    with pytest.raises(RuntimeError, match="one-dimensional"):
        core.vander(_t([[1.0]], device))
    x = core.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: core.vander(t, 4), (x,))


def test_unravel_index(device):
    flat = np.array([[1234, 5678], [0, 9999]])
    got = core.unravel_index(_t(flat, device), (10, 10, 10, 10))
    for g, w in zip(got, np.unravel_index(flat, (10, 10, 10, 10))):
        assert g.dtype == core.int64 and _np(g).tolist() == w.tolist()
    assert [_np(c).tolist() for c in core.unravel_index(_t(4, device), (3, 2))] == [2, 0]
    assert [_np(c).tolist() for c in core.unravel_index(_t([-1], device), (3, 2))] == [[2], [1]]
    with pytest.raises(TypeError, match="integer dtype"):
        core.unravel_index(_t([1.0], device), (3,))
    with pytest.raises(ValueError, match="cannot have negative values"):
        core.unravel_index(_t([1], device), (3, -1))


def test_igamma(device):
    special = pytest.importorskip("scipy.special")
    a, x = _rng().uniform(0.5, 5, 8), _rng().uniform(0.1, 6, 8)
    np.testing.assert_allclose(_np(core.igamma(_t(a, device), _t(x, device))), special.gammainc(a, x), rtol=1e-5)
    np.testing.assert_allclose(_np(_t(a, device).igammac(_t(x, device))), special.gammaincc(a, x), rtol=1e-5)
    y = _t(a, device)
    assert y.igamma_(_t(x, device)) is y
    np.testing.assert_allclose(_np(y), special.gammainc(a, x), rtol=1e-5)
    y = _t(a, device)
    y.igammac_(_t(x, device))
    np.testing.assert_allclose(_np(y), special.gammaincc(a, x), rtol=1e-5)


# -- reductions into indices and segments --------------------------------------------------------------

_NP_REDUCE = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}


def _index_reduce_ref(a, dim, index, source, reduce, include_self):
    out = np.moveaxis(a.copy(), dim, 0)
    src = np.moveaxis(source, dim, 0)
    for target in set(index.tolist()):
        picked = src[index == target]
        values = np.concatenate([out[target][None], picked]) if include_self else picked
        out[target] = _NP_REDUCE[reduce](values, axis=0)
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(device, reduce, include_self):
    rng = _rng()
    a, source = rng.standard_normal((3, 4)), rng.standard_normal((3, 5))
    source[1, 1] = source[1, 3]  # a tie
    index = np.array([0, 2, 0, 2, 2])
    got = core.index_reduce(_t(a, device), 1, _t(index, device), _t(source, device), reduce,
                            include_self=include_self)
    np.testing.assert_allclose(_np(got), _index_reduce_ref(a, 1, index, source, reduce, include_self), rtol=1e-6)
    x = _t(a, device)
    assert x.index_reduce_(1, _t(index, device), _t(source, device), reduce, include_self=include_self) is x
    np.testing.assert_allclose(_np(x), _np(got))


def test_index_reduce_errors_and_gradients():
    a, s, i = core.ones(3, 2), core.ones(2, 2), core.tensor([0, 2])
    with pytest.raises(RuntimeError, match="one of prod, mean, amax or amin"):
        core.index_reduce(a, 0, i, s, "sum")
    with pytest.raises(IndexError, match="Number of indices"):
        core.index_reduce(a, 0, core.tensor([0]), s, "amax")
    with pytest.raises(RuntimeError, match="int32/int64"):
        core.index_reduce(a, 0, core.tensor([0.0, 1.0]), s, "amax")
    rng = _rng()
    x = core.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    src = core.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    index = core.tensor([0, 2, 0, 0])
    for reduce in ("mean", "amax", "amin", "prod"):
        for include_self in (True, False):
            def fn(u, v, r=reduce, k=include_self):
                return core.index_reduce(u, 0, index, v, r, include_self=k)

            assert gradcheck(fn, (x, src))
    # prod's gradient with zeros among the factors: one zero gets the product of the others, the rest get 0
    zeros = core.tensor([[0.0, 2.0], [3.0, 0.0]], requires_grad=True)
    source = core.tensor([[4.0, 0.0], [5.0, 6.0]], requires_grad=True)
    core.index_reduce(zeros, 0, core.tensor([0, 0]), source, "prod").sum().backward()
    assert zeros.grad.tolist() == [[20.0, 0.0], [1.0, 1.0]] and source.grad.tolist() == [[0.0, 12.0], [0.0, 0.0]]


def _segment_ref(a, reduce, lengths, initial=None):
    funcs = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}
    empty = {"sum": 0.0, "mean": np.nan, "max": -np.inf, "min": np.inf, "prod": 1.0}
    out, start = [], 0
    for n in lengths:
        piece = a[start:start + n]
        start += n
        if initial is not None and reduce != "mean":
            piece = np.concatenate([np.full((1,) + a.shape[1:], initial), piece])
        if len(piece) == 0:
            out.append(np.full(a.shape[1:], empty[reduce] if initial is None else initial))
        elif reduce == "mean" and initial is not None:
            out.append((piece.sum(0) + initial) / n)
        else:
            out.append(funcs[reduce](piece, axis=0))
    return np.stack(out)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce(device, reduce):
    a = _rng().standard_normal((7, 3))
    lengths = np.array([2, 0, 4, 1])
    got = core.segment_reduce(_t(a, device), reduce, lengths=_t(lengths, device))
    np.testing.assert_allclose(_np(got), _segment_ref(a, reduce, lengths), rtol=1e-6)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    got = core.segment_reduce(_t(a, device), reduce, offsets=_t(offsets, device), initial=0.5)
    np.testing.assert_allclose(_np(got), _segment_ref(a, reduce, lengths, 0.5), rtol=1e-6)
    batched = core.segment_reduce(_t(a.T, device), reduce, lengths=_t(np.tile(lengths, (3, 1)), device), axis=1)
    np.testing.assert_allclose(_np(batched), np.stack([_segment_ref(row, reduce, lengths) for row in a.T]),
                               rtol=1e-6)


def test_segment_reduce_errors_and_gradients():
    data = core.tensor(_rng().standard_normal((5, 2)), requires_grad=True)
    with pytest.raises(RuntimeError, match="sum to"):
        core.segment_reduce(data, "sum", lengths=core.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="Either lengths or offsets"):
        core.segment_reduce(data, "sum")
    with pytest.raises(RuntimeError, match="unsupported reduction"):
        core.segment_reduce(data, "median", lengths=core.tensor([5]))
    lengths = core.tensor([1, 3, 1])
    for reduce in ("sum", "mean", "max", "min", "prod"):
        assert gradcheck(lambda d, r=reduce: core.segment_reduce(d, r, lengths=lengths), (data,))


# -- histogramdd ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("density", [False, True])
def test_histogramdd(device, density):
    rng = _rng()
    a, w = rng.standard_normal((50, 3)), rng.uniform(0, 2, 50)
    hist, edges = core.histogramdd(_t(a, device), [3, 4, 2], density=density)
    ref_hist, ref_edges = np.histogramdd(a, [3, 4, 2], density=density)
    np.testing.assert_allclose(_np(hist), ref_hist, rtol=1e-6)
    for e, r in zip(edges, ref_edges):
        np.testing.assert_allclose(_np(e), r, rtol=1e-6)
    result = core.histogramdd(_t(a[:, :2], device), 4, range=[-1.0, 1.0, -2.0, 0.5], weight=_t(w, device),
                              density=density)
    ref = np.histogramdd(a[:, :2], 4, range=[(-1, 1), (-2, 0.5)], weights=w, density=density)
    np.testing.assert_allclose(_np(result.hist), ref[0], rtol=1e-6)
    given = [_t([-3.0, 0.0, 3.0], device), _t([-1.0, -0.5, 0.5, 1.0], device)]
    hist, edges = core.histogramdd(_t(a[:, :2], device), given)
    np.testing.assert_allclose(_np(hist), np.histogramdd(a[:, :2], [_np(g) for g in given])[0])
    with pytest.raises(RuntimeError, match="expected 2 sequences of bin edges"):
        core.histogramdd(_t(a[:, :2], device), [3])
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        core.histogramdd(_t([[1, 2]], device), 2)


# -- sampling ------------------------------------------------------------------------------------------

def _frequencies(samples, top):
    return np.bincount(samples.astype(np.int64).ravel(), minlength=top + 1)[:top + 1] / samples.size


def test_poisson(device):
    stats = pytest.importorskip("scipy.stats")
    rates = _t(np.full((20000,), 3.0), device)
    draws = _np(core.poisson(rates))
    assert draws.dtype == np.float64 and (draws == np.round(draws)).all()
    np.testing.assert_allclose(_frequencies(draws, 8), stats.poisson.pmf(np.arange(9), 3.0), atol=0.01)
    large = _np(core.poisson(core.tensor(np.full((4000,), 400.0), dtype=core.float32, device=device)))
    assert abs(large.mean() - 400) < 4 * np.sqrt(400 / 4000) and abs(large.var() / 400 - 1) < 0.1
    assert _np(core.poisson(_t([0.0, 0.0], device))).tolist() == [0.0, 0.0]
    first = core.poisson(rates[:50], generator=core.Generator(device=rates.device.type).manual_seed(7))
    again = core.poisson(rates[:50], generator=core.Generator(device=rates.device.type).manual_seed(7))
    assert _np(first).tolist() == _np(again).tolist()
    with pytest.raises(RuntimeError, match="non-negative"):
        core.poisson(_t([-1.0], device))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        core.poisson(_t([1], device))


def test_binomial(device):
    stats = pytest.importorskip("scipy.stats")
    count = _t(np.full((20000,), 10.0), device)
    prob = _t(np.full((20000,), 0.3), device)
    draws = _np(core.binomial(count, prob))
    np.testing.assert_allclose(_frequencies(draws, 10), stats.binom.pmf(np.arange(11), 10, 0.3), atol=0.01)
    edge = _np(core.binomial(_t([0.0, 5.0, 5.0], device), _t([0.5, 0.0, 1.0], device)))
    assert edge.tolist() == [0.0, 0.0, 5.0]
    first = core.binomial(count[:50], prob[:50], generator=core.Generator(device=count.device.type).manual_seed(3))
    again = core.binomial(count[:50], prob[:50], generator=core.Generator(device=count.device.type).manual_seed(3))
    assert _np(first).tolist() == _np(again).tolist()
    with pytest.raises(RuntimeError, match="0 <= prob <= 1"):
        core.binomial(_t([2.0], device), _t([1.5], device))


# -- torch.gradient ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(device, edge_order):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 6, 4))
    coords = np.cumsum(rng.uniform(0.5, 1.5, 5))
    t = core.tensor(a, device=device)
    got = core.gradient(t, edge_order=edge_order)
    for g, r in zip(got, np.gradient(a, edge_order=edge_order)):
        np.testing.assert_allclose(g.cpu().numpy(), r, rtol=1e-12, atol=1e-12)
    got = core.gradient(t, spacing=[core.tensor(coords, device=device), 2.0], dim=[0, 2], edge_order=edge_order)
    for g, r in zip(got, np.gradient(a, coords, 2.0, axis=(0, 2), edge_order=edge_order)):
        np.testing.assert_allclose(g.cpu().numpy(), r, rtol=1e-12, atol=1e-12)
    (g,) = core.gradient(t, spacing=3.0, dim=-2, edge_order=edge_order)
    np.testing.assert_allclose(g.cpu().numpy(), np.gradient(a, 3.0, axis=1, edge_order=edge_order), rtol=1e-12)


def test_gradient_pytorch_doc_examples_and_errors(device):
    t = core.tensor([1, 2, 4, 7, 11, 16], device=device)  # integers give the default float dtype
    (g,) = core.gradient(t)
    assert g.dtype == core.float32
    np.testing.assert_allclose(g.cpu().numpy(), [1.0, 1.5, 2.5, 3.5, 4.5, 5.0])
    coords = core.tensor([0.0, 1.0, 1.5, 3.5, 4.0, 6.0], device=device)
    (g,) = core.gradient(t.float(), spacing=(coords,))
    np.testing.assert_allclose(g.cpu().numpy(), [1.0, 3.0, 3.5, 6.7, 6.9, 2.5], rtol=1e-6)
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        core.gradient(core.ones(2, device=device), edge_order=2)
    with pytest.raises(RuntimeError, match="same length"):
        core.gradient(core.ones(3, 3, device=device), spacing=[1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="edge_order=1 and edge_order=2"):
        core.gradient(core.ones(4, device=device), edge_order=3)


def test_gradient_is_differentiable(device):
    rng = np.random.default_rng(1)
    x = core.tensor(rng.standard_normal((4, 5)), device=device, requires_grad=True)
    coords = core.tensor(np.cumsum(rng.uniform(0.5, 1.5, 4)), device=device, requires_grad=True)
    assert gradcheck(lambda a, c: core.gradient(a, spacing=[c, 0.5], edge_order=2), (x, coords))


def test_function_forms_of_tensor_methods(device):
    t = core.arange(6.0, device=device)
    assert core.as_strided_(t, (2, 2), (1, 2), 1) is t and t.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    u = core.zeros(5, device=device)
    assert core.resize_as_(u, core.ones(2, 2)) is u and u.shape == (2, 2)
    assert core.is_inference(t) is False and core.is_distributed(t) is False
    with core.inference_mode():
        assert core.is_inference(core.ones(1, device=device))
    with pytest.raises(TypeError, match="is_inference"):
        core.is_inference([1.0])
