"""Tensor methods with no torch-level function, against NumPy on every device: in-place aliases, in-place view ops
(and their autograd rules), element-wise callables, legacy constructors and resizes, storage and autograd queries,
device predicates; PyTorch's errors (type and message)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import core
from core.autograd import gradcheck
from core.storage import TypedStorage
from core.testing import assert_close


def _rng():
    return np.random.default_rng(0)


def _t(a, device, requires_grad=False):
    return core.tensor(a, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


# -- in-place aliases --------------------------------------------------------------------------------

@pytest.mark.parametrize("alias, reference", [
    ("greater_", np.greater), ("greater_equal_", np.greater_equal), ("less_", np.less),
    ("less_equal_", np.less_equal), ("not_equal_", np.not_equal), ("arctan2_", np.arctan2)])
def test_binary_inplace_aliases(device, alias, reference):
    a, b = _rng().integers(-3, 3, (2, 4)).astype(np.float32), _rng().integers(-3, 3, (4,)).astype(np.float32)
    x = _t(a, device)
    version = x._version
    assert getattr(x, alias)(_t(b, device)) is x
    assert x.dtype is core.float32 and x._version > version
    assert_close(_np(x), reference(a, b).astype(np.float32))


def test_absolute_(device):
    a = _rng().standard_normal((3, 2)).astype(np.float32)
    x = _t(a, device)
    assert x.absolute_() is x
    assert_close(_np(x), np.abs(a))


@pytest.mark.parametrize("name, reference", [("cumsum_", np.cumsum), ("cumprod_", np.cumprod)])
def test_scan_inplace(device, name, reference):
    a = _rng().standard_normal((3, 4)).astype(np.float32)
    for dim in (0, 1, -1):
        x = _t(a, device)
        assert getattr(x, name)(dim) is x
        assert_close(_np(x), reference(a, axis=dim), rtol=1e-5, atol=1e-5)
    ints = _t(np.array([1, 2, 3], dtype=np.int32), device)
    getattr(ints, name)(0, dtype=core.int64)
    assert ints.dtype is core.int32 and ints.tolist() == reference([1, 2, 3]).tolist()


def test_scan_inplace_grad():
    a = core.tensor(_rng().standard_normal((3, 4)), dtype=core.float64, requires_grad=True)
    assert gradcheck(lambda x: (x * 1).cumsum_(1), (a,))
    assert gradcheck(lambda x: (x * 1).cumprod_(0), (a,))


def test_float_power_(device):
    a = np.abs(_rng().standard_normal(5)) + 0.5
    x = _t(a, device)
    assert x.dtype is core.float64 and x.float_power_(1.5) is x
    assert_close(_np(x), a ** 1.5)
    x.float_power_(_t(np.array([2.0]), device))
    assert_close(_np(x), a ** 3)
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float but the operation's "
                                           "result requires dtype Double"):
        _t(a.astype(np.float32), device).float_power_(2)


# -- in-place view ops -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, args, reference", [
    ("t_", (), lambda a: a.T), ("transpose_", (0, 2), lambda a: np.swapaxes(a, 0, 2)),
    ("swapaxes_", (1, -1), lambda a: np.swapaxes(a, 1, -1)), ("swapdims_", (0, 1), lambda a: np.swapaxes(a, 0, 1)),
    ("squeeze_", (), np.squeeze), ("squeeze_", (1,), lambda a: np.squeeze(a, 1)),
    ("unsqueeze_", (-1,), lambda a: a[..., None]),
    ("as_strided_", ((2, 2), (1, 2), 1), lambda a: np.lib.stride_tricks.as_strided(a.reshape(-1)[1:], (2, 2), (4, 8)))])
def test_inplace_view_ops(device, name, args, reference):
    shape = (3, 4) if name == "t_" else (2, 1, 3)
    a = _rng().standard_normal(shape).astype(np.float32)
    x = _t(a, device)
    storage, version = x.untyped_storage(), x._version
    out_of_place = getattr(x, name[:-1])(*args)
    assert getattr(x, name)(*args) is x
    expected = reference(a)
    assert x.shape == expected.shape
    assert x.stride() == out_of_place.stride() and x.storage_offset() == out_of_place.storage_offset()
    assert x.untyped_storage() is storage and x._version == version + 1
    assert_close(_np(x), expected)


def test_inplace_view_ops_errors():
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        core.ones(1, 2, 3).t_()
    with pytest.raises(IndexError, match="Dimension out of range"):
        core.ones(2, 3).transpose_(0, 2)
    leaf = core.ones(2, 3, requires_grad=True)
    for call in (lambda: leaf.t_(), lambda: leaf.unsqueeze_(0), lambda: leaf[0].squeeze_()):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in an in-place"):
            call()
    assert leaf.shape == (2, 3)
    with core.no_grad():  # PyTorch allows it outside recording
        leaf.t_()
    assert leaf.shape == (3, 2) and leaf.is_leaf


def test_inplace_view_ops_grad():
    a = core.tensor(_rng().standard_normal((2, 3)), dtype=core.float64, requires_grad=True)

    def f(x):
        y = x * 2
        y.t_()
        y.unsqueeze_(0)
        y.swapdims_(0, 2)
        y.as_strided_((2, 3, 1), (1, 2, 1), y.storage_offset())  # element [i, j] at i + 2 j
        return y.squeeze_(-1) * core.arange(6, dtype=core.float64).reshape(2, 3)

    assert gradcheck(f, (a,))
    y = a * 2
    assert y.t_().grad_fn is not None and y.shape == (3, 2)
    w = a * 1
    z = w * w  # saves w: changing w in place afterwards must fail the backward
    w.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_view_ops_trace():
    def f(x):
        y = x * 2
        y.t_()
        y.unsqueeze_(0)
        return y + core.arange(6.0).reshape(3, 2)

    traced = core.jit.trace(f, (core.zeros(2, 3),))
    a = _rng().standard_normal((2, 3)).astype(np.float32)
    assert_close(_np(traced(core.tensor(a))), (a * 2).T[None] + np.arange(6.0, dtype=np.float32).reshape(3, 2))


# -- element-wise Python callables --------------------------------------------------------------------

def test_apply_map_map2():
    a, b, c = (_rng().integers(-5, 5, shape).astype(np.float32) for shape in ((2, 3), (3,), (2, 1)))
    x = core.tensor(a)
    assert x.apply_(lambda v: v * v + 1) is x
    assert_close(_np(x), a * a + 1)
    x = core.tensor(a)
    x.map_(core.tensor(b), lambda u, v: max(u, v))
    assert_close(_np(x), np.maximum(a, b))
    x = core.tensor(a)
    x.map2_(core.tensor(b), core.tensor(c), lambda s, u, v: s * u - v)
    assert_close(_np(x), a * b - c)
    ints = core.tensor([1, 2, 3])
    ints.apply_(lambda v: v * 7 // 2)
    assert ints.dtype is core.int64 and ints.tolist() == [3, 7, 10]
    with pytest.raises(RuntimeError, match="broadcast"):
        core.ones(3).map_(core.ones(2, 3), lambda u, v: u)
    with pytest.raises(TypeError, match="expected a callable"):
        core.ones(3).apply_(3)


def test_apply_is_cpu_only(device):
    if device == "cpu":
        pytest.skip("the CPU case is test_apply_map_map2")
    x = core.ones(3, device=device)
    for call in (lambda: x.apply_(abs), lambda: x.map_(x, max), lambda: x.map2_(x, x, max)):
        with pytest.raises(TypeError, match="is only implemented on CPU tensors"):
            call()


# -- fill_diagonal_ -----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, wrap", [((4, 4), False), ((7, 3), False), ((7, 3), True), ((3, 5), True),
                                         ((3, 3, 3), False), ((4, 4), True)])
def test_fill_diagonal_(device, shape, wrap):
    a = _rng().standard_normal(shape).astype(np.float32)
    x = _t(a, device)
    assert x.fill_diagonal_(-2.5, wrap=wrap) is x
    expected = a.copy()
    np.fill_diagonal(expected, -2.5, wrap=wrap)  # NumPy's wrap is PyTorch's: restart after a blank row
    assert_close(_np(x), expected)


def test_fill_diagonal_errors_and_grad():
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        core.ones(3).fill_diagonal_(0)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        core.ones(2, 2, 3).fill_diagonal_(0)
    a = core.tensor(_rng().standard_normal((4, 3)), dtype=core.float64, requires_grad=True)
    assert gradcheck(lambda x: (x * 1).fill_diagonal_(0.5), (a,))
    y = a * 1
    y.fill_diagonal_(0)
    y.sum().backward()
    assert_close(_np(a.grad), 1 - np.eye(4, 3))


# -- conversions, legacy constructors, resizes --------------------------------------------------------

def test_type_as(device):
    x = _t(np.array([1.5, -2.5]), device)
    other = _t(np.array([1], dtype=np.int32), device)
    assert x.type_as(other).dtype is core.int32 and x.type_as(other).tolist() == [1, -2]
    assert x.type_as(x) is x
    assert core.tensor([1, 2]).type_as(x).device.type == device


def test_sum_to_size(device):
    a = _rng().standard_normal((2, 3, 4)).astype(np.float32)
    x = _t(a, device)
    for size, axes in (((3, 4), (0,)), ((1, 3, 1), (0, 2)), ((2, 1, 4), (1,)), ((1,), (0, 1, 2))):
        assert_close(_np(x.sum_to_size(size)), a.sum(axis=axes, keepdims=True).reshape(size), rtol=1e-5, atol=1e-5)
    assert_close(_np(x.sum_to_size(1, 3, 4)), a.sum(0, keepdims=True), rtol=1e-5, atol=1e-5)
    assert x.sum_to_size(2, 3, 4) is x
    with pytest.raises(RuntimeError, match=r"size \{\[3, 3\]\} is not expandable to size \{\[2, 3, 4\]\}"):
        x.sum_to_size(3, 3)
    g = core.tensor(_rng().standard_normal((2, 3)), dtype=core.float64, requires_grad=True)
    assert gradcheck(lambda t: t.sum_to_size(1, 3), (g,))


def test_new(device):
    x = _t(np.array([1.0, 2.0], dtype=np.float64), device)
    empty = x.new()
    assert empty.shape == (0,) and empty.dtype is core.float64 and empty.device.type == device
    sized = x.new(2, 3)
    assert sized.shape == (2, 3) and sized.dtype is core.float64
    assert x.new(core.Size([4])).shape == (4,)
    data = x.new([[1, 2], [3, 4]])
    assert data.dtype is core.float64 and data.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x.new((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data; only a Size is a shape
    alias = x.new(x)
    assert alias.data_ptr() == x.data_ptr() and not alias.requires_grad
    with pytest.raises(TypeError, match=r"expected DoubleTensor \(got FloatTensor\)|expected Double"):
        x.new(core.ones(2, device=device))
    over = x.new(x.untyped_storage())
    assert over.is_set_to(x)


def test_new_empty_strided(device):
    x = _t(np.zeros(2, dtype=np.float64), device)
    y = x.new_empty_strided((2, 3), (1, 2))
    assert y.shape == (2, 3) and y.stride() == (1, 2) and y.dtype is core.float64 and y.device.type == device
    z = x.new_empty_strided((4,), (1,), dtype=core.int32)
    assert z.dtype is core.int32


def test_resize_and_resize_as(device):
    a = _rng().standard_normal((2, 6)).astype(np.float32)
    x = _t(a, device)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(3, 4)
    assert_close(_np(y), a.reshape(3, 4))
    assert y.data_ptr() == x.data_ptr() and x.shape == (2, 6)
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        z = x.t().resize_as(core.empty(4, 3))
    assert_close(_np(z), a.T.reshape(4, 3))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=r"requested resize to 5 \(5 elements in total\)"):
        x.resize(5)
    w = _t(a, device)
    assert w.resize_as_(core.empty(3, 2)) is w and w.shape == (3, 2)
    assert_close(_np(w), a.reshape(-1)[:6].reshape(3, 2))
    g = core.tensor(_rng().standard_normal((2, 3)), dtype=core.float64, requires_grad=True)
    with pytest.warns(UserWarning):
        assert gradcheck(lambda t: t.resize(3, 2) * core.arange(6.0, dtype=core.float64).reshape(3, 2), (g,))


# -- storage identity ---------------------------------------------------------------------------------

def test_set_(device):
    source = _t(np.arange(6, dtype=np.float32).reshape(2, 3), device)
    x = core.zeros(1, device=device)
    version = source._version
    assert x.set_(source.t()) is x
    assert x.shape == (3, 2) and x.stride() == (1, 3) and x.is_set_to(source.t()) and not x.is_set_to(source)
    x[0, 1] = 10.0  # shares the memory
    assert source[1, 0].item() == 10.0 and source._version > version
    y = core.zeros(1, device=device).set_(source.untyped_storage(), 1, (2, 2), (1, 2))
    flat = _np(source).reshape(-1)
    assert_close(_np(y), np.array([[flat[1], flat[3]], [flat[2], flat[4]]]))  # element [i, j] at 1 + i + 2 j
    whole = core.zeros(1, device=device).set_(TypedStorage(source.untyped_storage(), core.float32))
    assert whole.shape == (6,) and whole.tolist() == _np(source).reshape(-1).tolist()
    assert core.ones(3, device=device).set_().shape == (0,)
    base = core.zeros(4, device=device) * 1
    view = base[1:3]
    view.set_(core.ones(2, device=device))
    view.add_(1)  # writes only its new storage: no longer a view of base
    assert base.tolist() == [0.0] * 4 and view.tolist() == [2.0, 2.0]


def test_set_errors():
    with pytest.raises(RuntimeError, match="Could not set tensor of type Double to a tensor of type Float"):
        core.zeros(2).set_(core.zeros(2, dtype=core.float64))
    with pytest.raises(RuntimeError, match="the storage holds 8 bytes"):
        core.zeros(1).set_(core.zeros(2).untyped_storage(), 0, (3,))
    with pytest.raises(RuntimeError, match="Expected a Storage of type Float but got type Double"):
        core.zeros(1).set_(TypedStorage(core.zeros(2).untyped_storage(), core.float64))
    with pytest.raises(TypeError, match="expected a Tensor or a Storage"):
        core.zeros(1).set_([1, 2])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        core.zeros(2, requires_grad=True).set_(core.ones(3))


def test_storage(device, monkeypatch):
    from core import storage

    monkeypatch.setattr(storage, "_TYPED_STORAGE_WARNED", [False])
    x = _t(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32), device)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = x[1].storage()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process
        x.storage()
    assert s.dtype is core.float32 and s.size() == len(s) == 4 and s.element_size() == 4 and s.nbytes() == 16
    assert s.tolist() == [1.0, 2.0, 3.0, 4.0] and s[2] == 3.0 and list(s) == s.tolist()
    assert s.untyped() is x.untyped_storage() and s.device == x.device
    assert s.data_ptr() == x.data_ptr() == x.const_data_ptr()
    assert x[1].data_ptr() == x.data_ptr() + 8


def test_memory_queries(device):
    x = core.ones(2, device=device)
    assert x.share_memory_() is x and not x.is_shared() and not x.is_pinned() and not x.is_distributed()
    if device == "cpu":
        assert x.pin_memory() is x
    else:
        with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
            x.pin_memory()

    class Stream:
        def __init__(self, device_type):
            self.device = core.device(device_type)

    assert x.record_stream(Stream(device)) is None
    with pytest.raises(TypeError, match="expected a stream on a"):
        x.record_stream(object())
    with pytest.raises(TypeError, match="expected a stream on a"):
        x.record_stream(Stream("meta"))


# -- queries ------------------------------------------------------------------------------------------

def test_is_nonzero(device):
    assert _t([0.5], device).is_nonzero() and not _t([[0]], device).is_nonzero() and _t(True, device).is_nonzero()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        core.ones(0).is_nonzero()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        core.ones(2).is_nonzero()


def test_dim_order():
    x = core.empty(2, 3, 4, 5)
    assert x.dim_order() == (0, 1, 2, 3)
    assert x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2).dim_order() == (0, 2, 3, 1)  # channels last
    assert x.transpose(0, 3).dim_order() == (3, 1, 2, 0)
    assert core.empty(()).dim_order() == ()
    rng = _rng()
    for _ in range(5):
        perm = tuple(int(i) for i in rng.permutation(4))
        y = core.empty(2, 3, 4, 5).permute(*perm)
        expected = tuple(np.argsort([-s for s in y.stride()], kind="stable"))
        assert y.dim_order() == expected
    assert core.empty(2, 3, 5, 7).transpose(1, 2).dim_order() == (0, 2, 1, 3)  # PyTorch's documented examples
    assert core.empty(1, 2, 3, 4).dim_order() == (0, 1, 2, 3)
    for ambiguous in (core.empty(1, 2, 3, 4), core.empty(4).as_strided((2, 2), (1, 1))):
        with pytest.raises(RuntimeError, match="The tensor does not have unique dim order"):
            ambiguous.dim_order(ambiguity_check=True)
        with pytest.raises(RuntimeError, match="The tensor does not have unique dim order"):
            ambiguous.dim_order(ambiguity_check=[])
    assert core.empty(2, 3).dim_order(ambiguity_check=True) == (0, 1)
    with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
        core.empty(2, 3).dim_order(ambiguity_check="yes")


def test_module_load():
    param, loaded = core.zeros(3, requires_grad=True), core.arange(3.0)
    assigned = param.module_load(loaded, assign=True)
    assert assigned.data_ptr() == loaded.data_ptr() and not assigned.requires_grad
    with core.no_grad():
        copied = param.module_load(loaded)
    assert copied.data_ptr() == param.data_ptr() and param.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="must be Tensor"):
        param.module_load([1.0, 2.0, 3.0])


def test_device_predicates(device):
    x = core.ones(1, device=device)
    for kind in ("xpu", "mps", "ipu", "vulkan", "xla", "maia", "mtia"):
        assert getattr(x, "is_" + kind) is False
    assert (x.is_mkldnn, x.is_nested, x.is_quantized) == (False, False, False)
    for move in ("xpu", "mtia", "ipu"):
        with pytest.raises(RuntimeError, match=f"no backend for device type '{move}'"):
            getattr(x, move)()


# -- autograd queries ---------------------------------------------------------------------------------

def test_retains_grad_and_output_nr():
    a = core.ones(2, 3, requires_grad=True)
    b = a * 2
    assert not a.retains_grad and not b.retains_grad
    b.retain_grad()
    a.retain_grad()  # a no-op on leaves, as in PyTorch
    assert b.retains_grad and not a.retains_grad
    eigenvalues, eigenvectors = core.linalg.eigh(core.eye(3, dtype=core.float64, requires_grad=True) * 1)
    assert eigenvalues.grad_fn is eigenvectors.grad_fn
    assert (a.output_nr, b.output_nr, eigenvalues.output_nr, eigenvectors.output_nr) == (0, 0, 0, 1)


def test_post_accumulate_grad_hook():
    a = core.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = a.register_post_accumulate_grad_hook(lambda t: seen.append((t is a, t.grad.tolist())))
    (a * 3).sum().backward()
    (a * a).sum().backward()
    assert seen == [(True, [3.0, 3.0]), (True, [5.0, 7.0])]
    handle.remove()
    (a * 1).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (a * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        core.ones(2).register_post_accumulate_grad_hook(print)


def test_is_inference(device):
    normal = core.ones(3, device=device)
    with core.inference_mode():
        made = normal * 2
        view = normal[1:]
        normal.add_(1)
    assert made.is_inference() and made[0].is_inference() and made.detach().is_inference()
    assert not view.is_inference() and not normal.is_inference() and not (made * 1).is_inference()
    with core.inference_mode(False):
        assert not core.ones(1, device=device).is_inference()


def test_name_and_volatile():
    x = core.ones(2)
    assert x.name is None
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert x.volatile is False
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        x.volatile = True
    with pytest.warns(UserWarning):
        assert x.volatile is False


def test_grad_dtype():
    x = core.ones(3, dtype=core.float16, requires_grad=True)
    assert x.grad_dtype is core.float16
    (x * core.tensor([1.0, 2.0, 3.0], dtype=core.float16)).sum().backward()
    assert x.grad.dtype is core.float16
    x.grad = None
    x.grad_dtype = core.float32
    assert x.grad_dtype is core.float32
    (x * core.tensor([1.0, 2.0, 3.0], dtype=core.float16)).sum().backward()
    assert x.grad.dtype is core.float32 and x.grad.tolist() == [1.0, 2.0, 3.0]

    class Precise(core.autograd.Function):  # a gradient finer than the input's dtype
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, g):
            return g.to(core.float64) / 3

    y = core.ones(2, requires_grad=True)
    y.grad_dtype = None  # accepted as it comes
    Precise.apply(y).sum().backward()
    assert y.grad.dtype is core.float64 and y.grad.tolist() == [1 / 3, 1 / 3]
    z = core.ones(2, requires_grad=True)
    z.grad_dtype = core.float16
    Precise.apply(z).sum().backward()
    assert z.grad.dtype is core.float16 and z.grad.tolist() == [float(np.float16(1 / 3))] * 2
    with pytest.raises(RuntimeError, match="grad_dtype can only be set on leaf tensors"):
        (z * 2).grad_dtype = core.float64
    with pytest.raises(RuntimeError, match="there is already a gradient with dtype"):
        z.grad_dtype = core.float64
    with pytest.raises(TypeError, match="grad_dtype must be a dtype or None"):
        z.grad_dtype = "float64"
    assert (z * 2).grad_dtype is core.float32
