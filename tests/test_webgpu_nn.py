"""The webgpu backend's compute kernels (plugins/webgpu/core_webgpu/kernels: linalg, nn, indexing, optim) against
NumPy and the cpu device, on strided inputs, with no CPU fallback counted for the ops they implement."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import core
import core.nn.functional as F
from core.testing import assert_close

pytest.importorskip("core_webgpu", reason="the core-webgpu plugin is not installed")
from core_webgpu.runtime import RUNTIME  # noqa: E402

_OK, _WHY = RUNTIME.is_available()
pytestmark = [pytest.mark.skipif(not _OK, reason=f"no WebGPU adapter: {_WHY}"),
              pytest.mark.filterwarnings("ignore:.*running on the CPU with copies:RuntimeWarning")]
DEV = "webgpu"


def _rng():
    return np.random.default_rng(0)


@contextlib.contextmanager
def native(*ops):
    """Assert that the webgpu kernels of ``ops`` ran inside the block: no CPU fallback counted for them, and no
    composite among them declined to its decomposition on a webgpu tensor."""
    from core.backends.api import get_operator
    from core.dispatch.operator import fallback_counts

    declined = []
    patched = {}
    for name in ops:
        op = get_operator(name)
        if op.decomposition is not None:
            def spy(*args, _name=name, _inner=op.decomposition, **kwargs):
                if any(getattr(a, "device", None) is not None and a.device.type == DEV for a in args):
                    declined.append(_name)
                return _inner(*args, **kwargs)

            patched[op] = op.decomposition
            op.decomposition = spy
            op._cache.clear()
    before = {op: fallback_counts[(op, DEV)] for op in ops}
    try:
        yield
    finally:
        for op, decomposition in patched.items():
            op.decomposition = decomposition
            op._cache.clear()
    after = {op: fallback_counts[(op, DEV)] for op in ops}
    assert after == before, f"CPU fallbacks on webgpu: { {op: after[op] - before[op] for op in ops} }"
    assert not declined, f"declined to the decomposition on webgpu: {declined}"


def _pair(array, transpose=None):
    """(cpu tensor, webgpu tensor) of ``array``; with ``transpose`` the webgpu one is a permuted (strided) view."""
    host = core.tensor(array)
    if transpose is None:
        return host, host.to(DEV)
    inverse = tuple(np.argsort(transpose))
    return host, core.tensor(np.ascontiguousarray(array.transpose(inverse))).to(DEV).permute(*transpose)


# -- linalg --------------------------------------------------------------------------------------------------------

def test_batched_matmul_strided_and_broadcast():
    rng = _rng()
    a = rng.standard_normal((3, 4, 37, 21)).astype(np.float32)
    b = rng.standard_normal((3, 4, 21, 45)).astype(np.float32)
    _, at = _pair(a, (0, 1, 3, 2))  # a transposed view: read through its strides
    bt = core.tensor(b).to(DEV)
    with native("batched_matmul"):
        assert_close((at @ bt).cpu(), core.tensor(a @ b))
        shared = core.tensor(b[0, 0]).to(DEV).expand(3, 4, 21, 45)  # stride-0 batch
        assert_close((core.tensor(a).to(DEV) @ shared).cpu(), core.tensor(a @ b[0, 0]))
        sliced = core.tensor(a).to(DEV)[:, 1:3, ::2, 3:]  # offset and steps
        assert_close((sliced @ bt[:, 1:3, 3:, :]).cpu(), core.tensor(a[:, 1:3, ::2, 3:] @ b[:, 1:3, 3:, :]))
        empty = core.zeros(2, 0, device=DEV) @ core.zeros(0, 3, device=DEV)
        assert_close(empty.cpu(), core.zeros(2, 3))


def test_linear_fuses_bias_over_strided_input():
    rng = _rng()
    x = rng.standard_normal((5, 7, 33)).astype(np.float32)
    w = rng.standard_normal((19, 33)).astype(np.float32)
    b = rng.standard_normal(19).astype(np.float32)
    _, xt = _pair(x, (1, 0, 2))  # rows two strides apart: copied once, then one GEMM
    with native("linear", "batched_matmul"):
        for bias in (core.tensor(b).to(DEV), None):
            got = F.linear(xt, core.tensor(w).to(DEV), bias)
            want = x @ w.T + (0 if bias is None else b)
            assert tuple(got.shape) == (5, 7, 19)
            assert_close(got.cpu(), core.tensor(want), rtol=1e-5, atol=1e-5)
        wt = core.tensor(np.ascontiguousarray(w.T)).to(DEV).T  # a transposed weight view
        assert_close(F.linear(core.tensor(x[0]).to(DEV), wt).cpu(), core.tensor(x[0] @ w.T), rtol=1e-5, atol=1e-5)


# -- nn ------------------------------------------------------------------------------------------------------------

def _grads(fn, *arrays, grad_seed=1):
    """(outputs, gradients) of ``fn`` on cpu and on webgpu (inputs as permuted views there), with one seeded
    upstream gradient."""
    results = []
    for device in ("cpu", DEV):
        leaves = []
        for a in arrays:
            if device == "cpu":
                t = core.tensor(a)
            else:  # a transposed copy read back through a permute: strided, same values
                perm = tuple(reversed(range(a.ndim)))
                t = core.tensor(np.ascontiguousarray(a.transpose(perm))).to(DEV).permute(*perm)
            leaves.append(t.detach().requires_grad_())
        out = fn(*leaves)
        up = core.tensor(np.random.default_rng(grad_seed).standard_normal(tuple(out.shape)).astype(np.float32))
        out.backward(up.to(device))
        results.append((out.detach().cpu(), [t.grad.cpu() for t in leaves]))
    return results


def _assert_same(results, rtol=1e-5, atol=1e-5):
    (out_cpu, grads_cpu), (out_dev, grads_dev) = results
    assert_close(out_dev, out_cpu, rtol=rtol, atol=atol)
    for got, want in zip(grads_dev, grads_cpu):
        assert_close(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_and_log_softmax_along_any_dim(dim):
    x = _rng().standard_normal((4, 70, 5)).astype(np.float32) * 4
    with native("softmax", "log_softmax"):
        _assert_same(_grads(lambda t: core.softmax(t, dim), x))
        _assert_same(_grads(lambda t: core.log_softmax(t, dim), x))


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_and_its_gradient(reduction, weighted):
    rng = _rng()
    x = rng.standard_normal((6, 7, 3)).astype(np.float32)
    target = rng.integers(0, 7, (6, 3))
    target[0, 0] = target[4, 2] = -100  # ignored
    weight = rng.random(7).astype(np.float32) + 0.5 if weighted else None
    with native("cross_entropy_loss", "cross_entropy_loss_backward"):
        _assert_same(_grads(lambda t: F.cross_entropy(
            t, core.tensor(target).to(t.device), None if weight is None else core.tensor(weight).to(t.device),
            reduction=reduction), x))


def test_cross_entropy_rejects_out_of_range_targets():
    x = core.zeros(2, 3, device=DEV)
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(x, core.tensor([0, 5]).to(DEV))


@pytest.mark.parametrize("case", [
    ((2, 4, 9, 8), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),  # groups, stride, padding, dilation
    ((3, 3, 7, 7), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 3, 10), (5, 3, 3), (2,), (1,), (1,), 1),  # 1-d
])
def test_convolution_and_its_gradients(case):
    shape, wshape, stride, padding, dilation, groups = case
    rng = _rng()
    arrays = [rng.standard_normal(s).astype(np.float32) for s in (shape, wshape, wshape[:1])]
    conv = F.conv2d if len(shape) == 4 else F.conv1d
    with native("convolution", "convolution_backward"):
        _assert_same(_grads(lambda x, w, b: conv(x, w, b, stride, padding, dilation, groups), *arrays),
                     rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("pool, kwargs", [
    (F.max_pool2d, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (F.max_pool2d, dict(kernel_size=2, dilation=2)),
    (F.max_pool1d, dict(kernel_size=3, stride=2)),
    (F.avg_pool2d, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    (F.avg_pool2d, dict(kernel_size=3, stride=2, padding=1)),
    (F.avg_pool2d, dict(kernel_size=2, divisor_override=3)),
])
def test_pooling_and_its_gradient(pool, kwargs):
    x = _rng().standard_normal((2, 3, 9, 7) if pool is not F.max_pool1d else (2, 3, 11)).astype(np.float32)
    kind = "max_pool" if "max" in pool.__name__ else "avg_pool"
    with native(kind, kind + "_backward"):
        _assert_same(_grads(lambda t: pool(t, **kwargs), x))


# -- indexing --------------------------------------------------------------------------------------------------------

def _indexing_operands():
    rng = _rng()
    x = rng.standard_normal((5, 6, 7)).astype(np.float32)
    host, strided = _pair(x, (2, 1, 0))
    return rng, x, host, strided


def test_gather_over_a_strided_input():
    rng, _, host, strided = _indexing_operands()
    index = core.tensor(rng.integers(0, 6, (5, 4, 7)))
    with native("gather"):
        for dim in (1, -2):  # the front-end passes negative dims as given
            assert core.equal(core.gather(strided, dim, index.to(DEV)).cpu(), core.gather(host, 1, index))


@pytest.mark.parametrize("reduce", [None, "sum", "prod", "amax", "amin"])
def test_scatter_assigns_and_reduces_duplicates_in_order(reduce):
    rng, _, host, strided = _indexing_operands()
    index = core.tensor(rng.integers(0, 6, (5, 4, 7)))  # duplicates along dim 1
    if reduce is None:  # duplicates: any one wins, so scatter a permutation's prefix
        index = core.tensor(np.argsort(rng.random((5, 6, 7)), axis=1)[:, :4])
    src = core.tensor(rng.standard_normal((5, 4, 7)).astype(np.float32))
    want, got = host.clone(), strided.clone()
    with native("scatter_"):
        if reduce is None:
            want.scatter_(1, index, src)
            got.scatter_(-2, index.to(DEV), src.to(DEV))
        else:
            want.scatter_reduce_(1, index, src, reduce)
            got.scatter_reduce_(1, index.to(DEV), src.to(DEV), reduce)
    assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("key", ["first", "middle", "two_adjacent", "separated"])
def test_index_and_index_put(key):
    rng, _, host, strided = _indexing_operands()
    i0, i2 = core.tensor([4, -1, 0, 2, 3]), core.tensor([[1], [3]])
    index = {"first": (i0,), "middle": (slice(None), i0), "two_adjacent": (slice(None), i2, i0),
             "separated": (i0, slice(None), core.tensor([0, 1, 2, 3, 6]))}[key]
    on_dev = tuple(i.to(DEV) if isinstance(i, core.Tensor) else i for i in index)
    values = core.tensor(rng.standard_normal(tuple(host[index].shape)).astype(np.float32))
    want, got = host.clone(), strided.clone()
    with native("index", "index_put_"):
        assert core.equal(strided[on_dev].cpu(), host[index])
        want[index] = values
        got[on_dev] = values.to(DEV)
    assert core.equal(got.cpu(), want)


def test_index_put_accumulates_duplicates_and_embedding_trains():
    rng, _, host, strided = _indexing_operands()
    index = (core.tensor([1, 3, 1, 1, 0]),)
    values = core.tensor(rng.standard_normal((5, 6, 7)).astype(np.float32))
    want, got = host.clone(), strided.clone()
    with native("index_put_"):
        want.index_put_(index, values, accumulate=True)
        got.index_put_((index[0].to(DEV),), values.to(DEV), accumulate=True)
    assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)
    weight = rng.standard_normal((10, 4)).astype(np.float32)
    ids = np.array([[1, 2, 1], [9, 1, 0]])
    with native("index", "index_put_"):
        _assert_same(_grads(lambda w: F.embedding(core.tensor(ids).to(w.device), w), weight))


# -- optim -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda ps: core.optim.SGD(ps, lr=0.1),
    lambda ps: core.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01, nesterov=False),
    lambda ps: core.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True),
    lambda ps: core.optim.Adam(ps, lr=0.01, weight_decay=0.01),
    lambda ps: core.optim.Adam(ps, lr=0.01, amsgrad=True),
    lambda ps: core.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
])
def test_optimizer_updates_match_cpu(make):
    rng = _rng()
    start = [rng.standard_normal(s).astype(np.float32) for s in ((7, 5), (5,))]
    grads = [[rng.standard_normal(p.shape).astype(np.float32) for p in start] for _ in range(3)]
    finals = []
    for device in ("cpu", DEV):
        params = [core.tensor(p).to(device).requires_grad_() for p in start]
        opt = make(params)
        for step in grads:
            for p, g in zip(params, step):
                p.grad = core.tensor(g).to(device)
            opt.step()
        finals.append([p.detach().cpu() for p in params])
    with native("sgd_update_", "adam_update_"):  # (the loop above ran them; re-run one step under the counter)
        p = core.tensor(start[0]).to(DEV).requires_grad_()
        p.grad = core.tensor(grads[0][0]).to(DEV)
        make([p]).step()
    for got, want in zip(*reversed(finals)):
        assert_close(got, want, rtol=1e-5, atol=1e-6)


# -- models ----------------------------------------------------------------------------------------------------------

_MODEL_OPS = ("linear", "batched_matmul", "convolution", "convolution_backward", "max_pool", "max_pool_backward",
              "avg_pool", "avg_pool_backward", "cross_entropy_loss", "cross_entropy_loss_backward", "log_softmax")


def _mlp():
    return core.nn.Sequential(core.nn.Linear(20, 32), core.nn.ReLU(), core.nn.Linear(32, 10))


def _convnet():
    nn = core.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, groups=2),
                         nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(6 * 2 * 2, 10))


@pytest.mark.parametrize("build, shape", [(_mlp, (16, 20)), (_convnet, (8, 1, 12, 12))])
def test_model_gradients_match_cpu(build, shape):
    rng = _rng()
    core.manual_seed(0)
    model = build()
    x = core.tensor(rng.standard_normal(shape).astype(np.float32))
    y = core.tensor(rng.integers(0, 10, shape[0]))
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    on_dev = __import__("copy").deepcopy(model).to(DEV)
    on_dev.zero_grad()
    with native(*_MODEL_OPS[:-1]):
        dev_loss = F.cross_entropy(on_dev(x.to(DEV)), y.to(DEV))
        dev_loss.backward()
    assert_close(dev_loss.detach().cpu(), loss.detach(), rtol=1e-5, atol=1e-5)
    for (name, p), q in zip(model.named_parameters(), on_dev.parameters()):
        assert_close(q.grad.cpu(), p.grad, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_and_its_gradients(affine):
    rng = _rng()
    arrays = [rng.standard_normal((6, 5, 70)).astype(np.float32) * 3 + 1]
    if affine:
        arrays += [rng.standard_normal((5, 70)).astype(np.float32), rng.standard_normal((5, 70)).astype(np.float32)]
    with native("layer_norm", "layer_norm_backward"):
        _assert_same(_grads(lambda x, *wb: F.layer_norm(x, (5, 70), *wb, eps=1e-5), *arrays), rtol=1e-4, atol=1e-4)


def test_float16_gemm_accumulates_in_float32():
    if not RUNTIME.slot.f16:
        pytest.skip("the adapter has no shader-f16")
    rng = _rng()
    a = rng.standard_normal((2, 33, 300)).astype(np.float16)
    b = rng.standard_normal((2, 300, 17)).astype(np.float16)
    bias = rng.standard_normal(17).astype(np.float16)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)  # one rounding of an f32 sum
    with native("batched_matmul", "linear"):
        got = core.tensor(a).to(DEV) @ core.tensor(b).to(DEV)
        assert got.dtype is core.float16
        assert_close(got.cpu(), core.tensor(want), rtol=2e-3, atol=2e-3)
        lin = F.linear(core.tensor(a[0]).to(DEV), core.tensor(b[0].T.copy()).to(DEV), core.tensor(bias).to(DEV))
        want_lin = (a[0].astype(np.float32) @ b[0].astype(np.float32) + bias).astype(np.float16)
        assert_close(lin.cpu(), core.tensor(want_lin), rtol=2e-3, atol=2e-3)
        c = rng.standard_normal((8, 600)).astype(np.float16)
        split = core.tensor(c).to(DEV) @ core.tensor(c.T.copy()).to(DEV)  # k = 600: split in two, summed in f32
        want_split = (c.astype(np.float32) @ c.T.astype(np.float32)).astype(np.float16)
        assert_close(split.cpu(), core.tensor(want_split), rtol=2e-3, atol=2e-2)
