"""Tensor = storage + shape + strides + offset: views, in-place writes, conversions, devices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import core
from core.testing import assert_close


def arange_tensor(shape, device="cpu", dtype=core.float32):
    n = int(np.prod(shape))
    return core.tensor(np.arange(n, dtype=np.float64).reshape(shape), dtype=dtype, device=device)


def shares_storage(a, b) -> bool:
    return a.untyped_storage() is b.untyped_storage()


# -- views --------------------------------------------------------------------------------------------

VIEW_CASES = {
    "view": (lambda t: t.view(4, 6), lambda a: a.reshape(4, 6)),
    "view_infer": (lambda t: t.view(-1, 3), lambda a: a.reshape(-1, 3)),
    "reshape": (lambda t: t.reshape(6, 4), lambda a: a.reshape(6, 4)),
    "transpose": (lambda t: t.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    "permute": (lambda t: t.permute(2, 0, 1), lambda a: np.transpose(a, (2, 0, 1))),
    "T": (lambda t: t.T, lambda a: a.T),
    "mT": (lambda t: t.mT, lambda a: np.swapaxes(a, -1, -2)),
    "expand": (lambda t: t.narrow(1, 0, 1).expand(2, 5, 4),
               lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    "select": (lambda t: t.select(1, -1), lambda a: a[:, -1]),
    "narrow": (lambda t: t.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    "squeeze": (lambda t: t.narrow(1, 0, 1).squeeze(), lambda a: a[:, 0]),
    "squeeze_dim": (lambda t: t.narrow(1, 0, 1).squeeze(1), lambda a: a[:, 0]),
    "unsqueeze": (lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    "flatten": (lambda t: t.flatten(1), lambda a: a.reshape(2, 12)),
    "unflatten": (lambda t: t.unflatten(2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
    "unfold": (lambda t: t.unfold(2, 2, 1), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2)),
    "as_strided": (lambda t: t.as_strided((3, 3), (4, 1), 1), lambda a: np.lib.stride_tricks.as_strided(
        a.reshape(-1)[1:], (3, 3), (4 * a.itemsize, a.itemsize))),
    "diagonal": (lambda t: t.diagonal(0, 1, 2), lambda a: np.diagonal(a, 0, 1, 2)),
    "diagonal_offset": (lambda t: t.diagonal(1, 1, 2), lambda a: np.diagonal(a, 1, 1, 2)),
    "movedim": (lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    "chunk": (lambda t: t.chunk(2, 2)[1], lambda a: a[:, :, 2:]),
    "split": (lambda t: t.split([1, 2], 1)[1], lambda a: a[:, 1:]),
    "unbind": (lambda t: t.unbind(1)[2], lambda a: a[:, 2]),
    "detach": (lambda t: t.detach(), lambda a: a),
    "view_as": (lambda t: t.view_as(core.empty(24)), lambda a: a.reshape(24)),
}


@pytest.mark.parametrize("name", list(VIEW_CASES))
def test_views_share_storage_and_match_numpy(name, device):
    make_view, ref = VIEW_CASES[name]
    t = arange_tensor((2, 3, 4), device)
    v = make_view(t)
    expected = ref(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert shares_storage(v, t), "a view must share its base's storage"
    assert_close(v, np.ascontiguousarray(expected))
    if device == "cpu":  # the strides we report are the ones NumPy computes for the same view
        assert v.stride() == tuple(s // 4 for s in expected.strides) or v.numel() <= 1 or 0 in expected.strides


def test_writes_through_views_are_seen_by_the_base(device):
    t = core.zeros(3, 4, device=device)
    t.select(0, 1).fill_(5)
    t.T.narrow(0, 3, 1).add_(1)
    t.diagonal().copy_(core.tensor([7.0, 8.0, 9.0], device=device))
    expected = np.zeros((3, 4), np.float32)
    expected[1] = 5
    expected[:, 3] += 1
    expected[[0, 1, 2], [0, 1, 2]] = [7, 8, 9]
    assert_close(t, expected)


def test_version_counter_is_shared_by_views(device):
    t = core.zeros(4, device=device)
    v = t.view(2, 2)
    before = t._version
    v.mul_(2)
    assert t._version > before and v._version == t._version
    t.zero_()
    assert v._version == t._version


def test_view_errors():
    t = core.zeros(2, 3).T
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(6)
    assert t.reshape(6).is_contiguous() and not shares_storage(t.reshape(6), t)
    with pytest.raises(RuntimeError, match="invalid for input of size 6"):
        core.zeros(2, 3).view(4, 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        core.zeros(2, 3).transpose(0, 2)
    with pytest.raises(RuntimeError, match="expanded size"):
        core.zeros(2, 3).expand(4, 3)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        core.zeros(4).as_strided((3, 3), (3, 1))
    with pytest.raises(IndexError, match="out of range"):
        core.zeros(2, 3).select(1, 3)


def test_contiguity_and_strides():
    t = core.zeros(2, 3, 4)
    assert t.stride() == (12, 4, 1) and t.is_contiguous() and t.storage_offset() == 0
    v = t.transpose(1, 2)
    assert v.stride() == (12, 1, 4) and not v.is_contiguous()
    c = v.contiguous()
    assert c.is_contiguous() and not shares_storage(c, v) and t.contiguous() is t
    s = t.select(2, 1)
    assert s.storage_offset() == 1 and s.stride() == (12, 4)
    assert t.data_ptr() + 4 == s.data_ptr()
    assert core.zeros(3, 1).expand(3, 5).stride() == (1, 0)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_permute_then_reshape_matches_numpy(shape, data):
    perm = data.draw(st.permutations(range(len(shape))))
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = core.from_numpy(a.copy())
    assert_close(t.permute(*perm).reshape(-1), np.transpose(a, perm).reshape(-1))
    assert_close(t.permute(*perm).contiguous(), np.transpose(a, perm))


# -- conversions -------------------------------------------------------------------------------------------

def test_numpy_round_trip_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = core.from_numpy(a)
    a[0, 0] = 42
    assert t.select(0, 0).select(0, 0).item() == 42
    t.fill_(1)
    assert a.sum() == 6
    n = t.numpy()
    n[1, 1] = 7
    assert a[1, 1] == 7
    strided = core.from_numpy(a.T)
    assert strided.stride() == (1, 3) and strided.shape == (3, 2)
    with pytest.raises(ValueError, match="negative"):
        core.from_numpy(a[::-1])


def test_tensor_copies_and_infers_dtype():
    a = np.ones(3, np.float64)
    t = core.tensor(a)
    a[0] = 5
    assert t.dtype is core.float64 and t.tolist() == [1.0, 1.0, 1.0]
    assert core.tensor([1, 2]).dtype is core.int64
    assert core.tensor([1.0, 2]).dtype is core.float32
    assert core.tensor([True, False]).dtype is core.bool
    assert core.tensor(3).shape == () and core.tensor(3).item() == 3
    assert core.tensor([[1, 2], [3, 4]], dtype=core.float16).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert core.tensor([]).shape == (0,)
    with pytest.raises(ValueError):
        core.tensor([[1, 2], [3]])


def test_to_dtype_device_and_copy(device):
    t = core.tensor([1.5, -2.5], device=device)
    assert t.to(core.float32) is t
    assert t.to(core.float32, copy=True) is not t
    i = t.to(core.int64)
    assert i.dtype is core.int64 and i.tolist() == [1, -2]
    assert t.to("cpu").device == core.device("cpu")
    other = core.zeros(1, dtype=core.float64)
    assert t.to(other).dtype is core.float64
    assert t.double().dtype is core.float64 and t.half().dtype is core.float16 and t.bool().tolist() == [True, True]
    assert t.cpu().numpy().tolist() == [1.5, -2.5]
    assert t.to(device=device, dtype=core.bfloat16).dtype is core.bfloat16


def test_item_tolist_and_python_conversions():
    t = core.tensor([[1.5]])
    assert t.item() == 1.5 and float(t) == 1.5 and int(t) == 1 and bool(t)
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        core.ones(2).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(core.ones(2))
    assert [x.item() for x in core.tensor([1, 2, 3])] == [1, 2, 3]
    assert len(core.zeros(4, 2)) == 4
    with pytest.raises(TypeError):
        len(core.tensor(1.0))
    assert np.asarray(core.tensor([1, 2])).tolist() == [1, 2]
    assert [10, 20, 30][core.tensor(1)] == 20


def test_numpy_refuses_grad_tensors():
    t = core.ones(2).requires_grad_()
    with pytest.raises(RuntimeError, match="requires grad"):
        t.numpy()
    assert t.detach().numpy().tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="floating point"):
        core.ones(2, dtype=core.int64).requires_grad_()


def test_metadata_methods():
    t = core.zeros(2, 3, dtype=core.float64)
    assert t.shape == core.Size([2, 3]) and t.size() == (2, 3) and t.size(-1) == 3 and t.dim() == 2
    assert t.ndim == 2 and t.numel() == 6 and t.element_size() == 8 and t.nbytes == 48
    assert repr(t.shape) == "core.Size([2, 3])" and t.shape.numel() == 6
    assert t.is_floating_point() and not t.is_complex() and t.is_leaf and t.device.type == "cpu"
    assert t.type() == "core.DoubleTensor" and t.untyped_storage().nbytes == 48


# -- devices -----------------------------------------------------------------------------------------

def test_device_parsing():
    d = core.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and str(d) == "cuda:1"
    assert repr(d) == "device(type='cuda', index=1)"
    assert core.device("cuda", 1) == d and core.device(d) is d and core.device("cpu") == "cpu"
    assert core.device("opencl").index is None
    for bad in ("cuda:x", ":1", "cuda:-1", ""):
        with pytest.raises(RuntimeError):
            core.device(bad)
    with pytest.raises(RuntimeError, match="must not include an index"):
        core.device("cuda:0", 1)


def test_equal_devices_are_one_object():
    """Kernels compare devices with ``is``: every spelling of one device gives the same object, copies too."""
    import copy
    import pickle

    d = core.device("cuda:0")
    assert core.device("cuda", 0) is d and core.device(0) is d and core.device(core.device("cuda", 0)) is d
    assert pickle.loads(pickle.dumps(d)) is d and copy.deepcopy(d) is d and copy.copy(d) is d
    assert core.device("cuda") is not d and core.device("cuda") != d and d != "cuda" and d == "cuda:0"
    moved = core.empty_like(core.ones(1, device="meta"), device="cpu")
    assert core.ones(2).device is core.device("cpu") is moved.device
    assert {core.device("cuda", 0): 1}[d] == 1 and hash(core.device("cuda", 0)) == hash(d)


def test_threads_making_one_new_device_get_one_object():
    import threading

    barrier, made = threading.Barrier(8), []

    def make(spelling):
        barrier.wait()
        made.append(core.device(*spelling))

    spellings = [("cuda:57",), ("cuda", 57)] * 4  # an index no earlier test made
    threads = [threading.Thread(target=make, args=(s,)) for s in spellings]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 8 and all(d is made[0] for d in made)


def test_device_context_manager_sets_default():
    with core.device("meta"):
        t = core.ones(2, 3)
    assert t.device.type == "meta" and t.shape == (2, 3)
    assert core.ones(1).device.type == "cpu"
    core.set_default_device("meta")
    try:
        assert core.zeros(1).device.type == "meta"
    finally:
        core.set_default_device(None)


def test_unknown_device_type_names_known_ones():
    from core.plugins.manager import BackendUnavailableError

    with pytest.raises(BackendUnavailableError, match="no backend for device type 'nosuchdev'"):
        core.zeros(2, device="nosuchdev")


def test_mixing_devices_is_an_error():
    cpu = core.ones(2)
    meta = core.ones(2, device="meta")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        cpu + meta
    assert (core.tensor(2.0) + meta).device.type == "meta"  # 0-d CPU tensors may join any device
