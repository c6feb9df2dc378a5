"""The vectorised core.func.vmap against the per-sample loop (``func._vmap_loop``) and NumPy, on every device, in
float64: batching rules per op family, the loop fallback, nesting, per-sample gradients, randomness, chunking."""

from __future__ import annotations

import numpy as np
import pytest

import core
import core.nn.functional as F
from core import func
from core.autograd import gradcheck
from core.func import _batched


def _t(a, device, requires_grad=False):
    return core.tensor(np.asarray(a, dtype=np.float64), device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def _rng():
    return np.random.default_rng(0)


@pytest.fixture
def loops(monkeypatch):
    """The op names that fell back to the per-sample loop during a test."""
    seen = []
    original = _batched._loop

    def counting(op, level, args, kwargs):
        seen.append(op.name)
        return original(op, level, args, kwargs)

    monkeypatch.setattr(_batched, "_loop", counting)
    return seen


W = _rng().normal(size=(4, 3))
# (name, function of one sample, in_dims): every sample of x has shape (4,), of m (3, 4), of img (2, 5, 5)
CASES = [
    ("unary", lambda x, m: x.exp().sin() + x.abs().sqrt(), 0),
    ("binary broadcast", lambda x, m: m * x - x / (m.abs() + 1), 0),
    ("unbatched operand", lambda x, m: x + core.ones(3, 4, dtype=x.dtype, device=x.device), (0, None)),
    ("0-d sample", lambda x, m: x[0] * m, 0),
    ("where clamp", lambda x, m: core.where(x > 0, x, -x).clamp(-0.5, 0.7) + m.clamp(max=x), 0),
    ("reductions", lambda x, m: (m.sum(1), m.mean(0), m.amax(-1), x.prod(), m.sum(), m.std(1)), 0),
    ("arg reductions", lambda x, m: (m.argmax(1), m.argmin(0, keepdim=True)), 0),
    ("scans and sort", lambda x, m: (m.cumsum(1), m.cumprod(0), core.sort(m, 1, descending=True)[0],
                                     core.cummax(x, 0)[1]), 0),
    ("views", lambda x, m: (m.t(), m.transpose(0, 1).reshape(2, 6), m.permute(1, 0)[1:3], m.unsqueeze(1).squeeze(),
                            m.view(-1), x.expand(2, 4), m[:, 1], m[1], m.narrow(1, 1, 2), m.diagonal(),
                            m.flatten(), x.unfold(0, 2, 1), m.flip(0)), 0),
    ("softmax", lambda x, m: (core.softmax(m, 1), core.log_softmax(m, 0), F.gelu(m), F.relu(m)), 0),
    ("cat stack", lambda x, m: (core.cat([m, m * 2], 1), core.stack([x, x + 1]),
                                core.cat([m, core.zeros(1, 4, dtype=m.dtype, device=m.device)])), 0),
    ("matmul", lambda x, m: (m @ x, x @ m.t(), m @ m.t(), core.matmul(m.unsqueeze(0), x), m @ _const(W, m)), 0),
    ("both batched matmul", lambda x, m: core.matmul(m.t(), m), 0),
    ("linear layer_norm", lambda x, m: F.layer_norm(F.linear(m, _const(W.T, m), x[:3]), (3,)), 0),
    ("gather", lambda x, m: core.gather(m, 1, core.tensor([[0, 3], [1, 1], [2, 0]], device=m.device)), 0),
    ("advanced indexing", lambda x, m: (m[_idx(m, [2, 0])], m[:, _idx(m, [3, 1, 1])], m[_idx(m, [[0], [2]]),
                                                                                         _idx(m, [1, 3])]), 0),
    ("batched indices", lambda x, m: (m.t()[x.argsort()[:3]], m[:, x.argsort()], m.t()[x.argsort(), 1:]), 0),
    ("unbatched input, batched indices", lambda x, m: _const(W, m)[x.argsort()], 0),
    ("made inside, written with the batch", lambda x, m: (m.clone().mul_(2), F.pad(m, (1, 2)), _set_rows(m),
                                                          core.zeros_like(m).scatter_add(1, _idx(m, [[0, 0]] * 3), m)),
     0),
    ("0-d operand of another dtype", lambda x, m: (x.argmax() * m, m.sum().to(core.float32) + m, x[0] > x.long()), 0),
    ("fallback: index with a tensor", lambda x, m: m[core.tensor([2, 0], device=m.device)] + x[x > 0].sum(), 0),
]


def _idx(like, values):
    return core.tensor(values, device=like.device)


def _set_rows(m):
    out = m.clone()
    out[0] = 1.0
    out[:, 1] = m[:, 2]
    return out


def _const(a, like):
    return core.tensor(a, dtype=like.dtype, device=like.device)


@pytest.mark.parametrize("name,fn,in_dims", CASES, ids=[c[0] for c in CASES])
def test_vmap_equals_the_loop(device, name, fn, in_dims):
    rng = _rng()
    x, m = _t(rng.normal(size=(5, 4)), device), _t(rng.normal(size=(5, 3, 4)), device)
    if in_dims == (0, None):
        m = m[0]
    got = func.vmap(fn, in_dims=in_dims)(x, m)
    want = func._vmap_loop(fn, in_dims=in_dims)(x, m)
    for g, w in zip(*(func._flatten(r)[0] for r in (got, want))):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(_np(g), _np(w), rtol=1e-12, atol=1e-12)


def test_the_function_runs_once_and_covered_ops_never_loop(device, loops):
    calls = []

    def f(x, m):
        calls.append(1)
        return (m @ x).relu().sum() + core.softmax(x, 0).amax()

    rng = _rng()
    x, m = _t(rng.normal(size=(7, 4)), device), _t(rng.normal(size=(7, 3, 4)), device)
    out = func.vmap(f)(x, m)
    assert calls == [1] and loops == []
    want = [np.maximum(m_ @ x_, 0).sum() + (np.exp(x_) / np.exp(x_).sum()).max() for x_, m_ in zip(_np(x), _np(m))]
    np.testing.assert_allclose(_np(out), want, rtol=1e-12)


def test_uncovered_ops_fall_back_to_the_loop(device, loops):
    x = _t(_rng().normal(size=(4, 6)), device)
    edges = _t([-1.0, 0.0, 0.5], device)
    out = func.vmap(lambda t: core.searchsorted(edges, t) * 2)(x)  # no rule for searchsorted: it loops
    np.testing.assert_array_equal(_np(out), np.searchsorted(_np(edges), _np(x)) * 2)
    assert loops == ["searchsorted"]


def test_python_control_flow_and_ragged_shapes_run_sample_by_sample(device):
    x = _t(_rng().normal(size=(4, 6)), device)
    ragged = func.vmap(lambda t: t[t > 0].sum())(x)  # a data-dependent shape inside, a scalar out
    np.testing.assert_allclose(_np(ragged), [r[r > 0].sum() for r in _np(x)], rtol=1e-12)
    branch = func.vmap(lambda t: t * 2 if t.sum().item() > 0 else -t)(x)
    np.testing.assert_allclose(_np(branch), [r * 2 if r.sum() > 0 else -r for r in _np(x)], rtol=1e-12)


def _mlp(device):
    core.manual_seed(0)
    return core.nn.Sequential(core.nn.Linear(5, 8), core.nn.Tanh(), core.nn.Linear(8, 3)).double().to(device)


@pytest.mark.parametrize("reduction,weighted", [("mean", False), ("mean", True), ("sum", False)])
def test_per_sample_gradients_of_an_mlp_equal_a_python_loop(device, loops, reduction, weighted):
    model = _mlp(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    weight = _t([1.0, 2.0, 0.5], device) if weighted else None
    rng = _rng()
    x = _t(rng.normal(size=(6, 2, 5)), device)
    y = core.tensor(rng.integers(0, 3, size=(6, 2)), device=device)

    def loss(p, xs, ys):
        return F.cross_entropy(func.functional_call(model, p, (xs,)), ys, weight=weight, reduction=reduction)

    grads = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    assert loops == []
    for i in range(6):
        model.zero_grad()
        F.cross_entropy(model(x[i]), y[i], weight=weight, reduction=reduction).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(_np(grads[k][i]), _np(p.grad), rtol=1e-10, atol=1e-12)


def test_per_sample_conv_net_gradients(device):
    core.manual_seed(0)
    model = core.nn.Sequential(core.nn.Conv2d(2, 3, 3, padding=1), core.nn.ReLU(), core.nn.MaxPool2d(2),
                               core.nn.Flatten(), core.nn.Linear(12, 2)).double().to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = _t(_rng().normal(size=(4, 2, 4, 4)), device)
    y = core.tensor([0, 1, 1, 0], device=device)

    def loss(p, xs, ys):
        return F.cross_entropy(func.functional_call(model, p, (xs.unsqueeze(0),)), ys.unsqueeze(0))

    got = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    want = func._vmap_loop(func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for k in params:
        np.testing.assert_allclose(_np(got[k]), _np(want[k]), rtol=1e-10, atol=1e-12)


def test_an_ensemble_of_convolutions_with_batched_weights(device, loops):
    rng = _rng()
    x = _t(rng.normal(size=(2, 3, 6, 6)), device)
    weights = _t(rng.normal(size=(4, 5, 3, 3, 3)), device)
    got = func.vmap(lambda w: F.conv2d(x, w, padding=1))(weights)
    want = func._vmap_loop(lambda w: F.conv2d(x, w, padding=1))(weights)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    assert loops == []  # the convolution's decomposition runs batched


def test_transforms_inside_vmap_and_nesting(device):
    rng = _rng()
    x = _t(rng.normal(size=(3, 4)), device)
    w = _t(rng.normal(size=(4, 2)), device)

    def f(t):
        return (t.sin() * t).sum()

    def h(wt, t):
        return ((t @ wt).tanh() ** 2).sum()

    xs = _np(x)
    np.testing.assert_allclose(_np(func.vmap(func.grad(f))(x)), np.cos(xs) * xs + np.sin(xs), rtol=1e-12)
    np.testing.assert_allclose(_np(func.vmap(func.grad(func.grad(lambda t: (t ** 3).sum().sin())))(x[:, 0])),
                               _np(func._vmap_loop(func.grad(func.grad(lambda t: (t ** 3).sum().sin())))(x[:, 0])),
                               rtol=1e-10)
    for transform in (func.hessian(f), func.jacrev(core.sin), func.jacfwd(core.tanh)):
        np.testing.assert_allclose(_np(func.vmap(transform)(x)), _np(func._vmap_loop(transform)(x)), rtol=1e-12)
    jv = func.vmap(lambda t, v: func.jvp(core.sin, (t,), (v,))[1])(x, x * 2)
    np.testing.assert_allclose(_np(jv), np.cos(xs) * xs * 2, rtol=1e-12)
    vj = func.vmap(lambda t: func.vjp(core.sin, t)[1](core.ones_like(t))[0])(x)
    np.testing.assert_allclose(_np(vj), np.cos(xs), rtol=1e-12)
    big = _t(rng.normal(size=(2, 3, 4)), device)
    nested = func.vmap(func.vmap(func.grad(h), in_dims=(None, 0)), in_dims=(None, 0))(w, big)
    looped = func._vmap_loop(func._vmap_loop(func.grad(h), in_dims=(None, 0)), in_dims=(None, 0))(w, big)
    assert nested.shape == (2, 3, 4, 2)
    np.testing.assert_allclose(_np(nested), _np(looped), rtol=1e-10)
    inner_outer = func.vmap(func.vmap(lambda a, b: a * b + a.sum(), in_dims=(0, None)), in_dims=(0, 0))(big, x[:2])
    np.testing.assert_allclose(_np(inner_outer),
                               _np(big) * _np(x)[:2, None, :] + _np(big).sum(-1, keepdims=True), rtol=1e-12)


def test_gradients_flow_through_vmap_and_gradcheck(device):
    rng = _rng()
    w = _t(rng.normal(size=(4, 2)), device, requires_grad=True)
    x = _t(rng.normal(size=(5, 4)), device, requires_grad=True)

    def f(wt, t):
        return core.softmax(t @ wt, 0).log().sum() + (t * t).mean()

    assert gradcheck(lambda wt, t: func.vmap(f, in_dims=(None, 0))(wt, t), (w, x))
    func.vmap(f, in_dims=(None, 0))(w, x).sum().backward()
    gw, gx = _np(w.grad), _np(x.grad)
    w.grad = x.grad = None
    func._vmap_loop(f, in_dims=(None, 0))(w, x).sum().backward()
    np.testing.assert_allclose(gw, _np(w.grad), rtol=1e-12)
    np.testing.assert_allclose(gx, _np(x.grad), rtol=1e-12)


def test_gradients_through_tensors_made_inside_the_function(device):
    x = _t(_rng().normal(size=(4, 3, 5)), device)
    columns = core.tensor([[0, 1, 2, 3, 4]] * 3, device=device)

    def f(t):
        out = t.clone()
        out[0] = out[1] * 3
        return (F.pad(out, (1, 2)) ** 2).sum() + core.zeros_like(t).scatter_add(1, columns, t).sin().sum()

    np.testing.assert_allclose(_np(func.vmap(func.grad(f))(x)), _np(func._vmap_loop(func.grad(f))(x)), rtol=1e-12)
    grads = []
    for transform in (func.vmap, func._vmap_loop):
        xr = x.clone().requires_grad_(True)
        transform(f)(xr).sum().backward()
        grads.append(_np(xr.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_in_out_dims_chunks_and_unbatched_outputs(device):
    rng = _rng()
    x = _t(rng.normal(size=(4, 7)), device)

    def f(t):
        return t.cumsum(0), t.sum(), core.ones(2, dtype=t.dtype, device=t.device)

    got = func.vmap(f, in_dims=1, out_dims=(1, 0, 0), chunk_size=3)(x)
    want = func._vmap_loop(f, in_dims=1, out_dims=(1, 0, 0))(x)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(_np(g), _np(w), rtol=1e-12)
    neg = func.vmap(lambda t: t * 2, in_dims=-1, out_dims=-1)(x)
    np.testing.assert_allclose(_np(neg), _np(x) * 2)
    with pytest.raises(ValueError, match="out_dims"):
        func.vmap(lambda t: t * 2, out_dims=None)(x)
    with pytest.raises(ValueError, match="chunk_size"):
        func.vmap(core.sin, chunk_size=0)


def test_randomness_modes(device):
    x = _t(np.zeros((6, 50)), device)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda t: t + core.randn(50, dtype=t.dtype, device=t.device))(x)
    core.manual_seed(0)
    different = _np(func.vmap(lambda t: t + core.randn(50, dtype=t.dtype, device=t.device),
                              randomness="different")(x))
    same = _np(func.vmap(lambda t: t + core.rand_like(t), randomness="same")(x))
    assert different.shape == same.shape == (6, 50)
    assert all(not np.allclose(different[0], row) for row in different[1:])
    assert all(np.array_equal(same[0], row) for row in same[1:]) and 0 <= same.min() and same.max() < 1
    dropped = _np(func.vmap(lambda t: F.dropout(t + 1, 0.5), randomness="different")(x))
    assert set(np.unique(dropped)) <= {0.0, 2.0} and not all(np.array_equal(dropped[0], r) for r in dropped[1:])


def _written(fn):
    def f(t, i, j):
        out = t.clone()
        fn(out, t, i, j)
        return out

    return f


WRITES = [
    ("unbatched index, batched values", lambda o, t, i, j: o.__setitem__(_idx(t, [2, 0]), t[:2] * 2), []),
    ("unbatched index in dim 1", lambda o, t, i, j: o.__setitem__((slice(None), _idx(t, [1, 4])), t[:, :2] + 1), []),
    ("batched index", lambda o, t, i, j: o.__setitem__(i, t[:2]), []),
    ("two batched indices", lambda o, t, i, j: o.__setitem__((i, j), t[0, 0]), []),
    ("batched index in dim 1 loops", lambda o, t, i, j: o.__setitem__((slice(None), j), t[:, :2]), ["index_put_"]),
    ("accumulate", lambda o, t, i, j: o.index_put_((i,), t[:2], accumulate=True), []),
    ("scatter_", lambda o, t, i, j: o.scatter_(1, j.unsqueeze(0).expand(3, 2), t[:, :2]), []),
    ("scatter_add_", lambda o, t, i, j: o.scatter_add_(0, i.unsqueeze(1).expand(2, 5), t[:2]), []),
]


@pytest.mark.parametrize("name,write,looped", WRITES, ids=[w[0] for w in WRITES])
def test_indexed_writes_equal_the_loop(device, loops, name, write, looped):
    rng = _rng()
    x = _t(rng.normal(size=(4, 3, 5)), device)
    i = core.tensor(rng.permuted(np.tile(np.arange(3), (4, 1)), axis=1)[:, :2], device=device)  # no duplicates
    j = core.tensor(rng.permuted(np.tile(np.arange(5), (4, 1)), axis=1)[:, :2], device=device)
    got = func.vmap(_written(write))(x, i, j)
    want = func._vmap_loop(_written(write))(x, i, j)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    assert loops == looped


def test_embedding_of_batched_tokens(device):
    weight = _t(_rng().normal(size=(10, 3)), device)
    tokens = core.tensor(_rng().integers(0, 10, size=(4, 5)), device=device)
    got = func.vmap(lambda t: F.embedding(t, weight).sum(0))(tokens)
    np.testing.assert_allclose(_np(got), _np(weight)[tokens.cpu().numpy()].sum(1), rtol=1e-12)


def test_different_randomness_refuses_an_inplace_fill_of_an_outside_tensor(device):
    outside = _t(np.zeros(3), device)
    with pytest.raises(RuntimeError, match="different inplace randomness"):
        func.vmap(lambda t: t + outside.normal_(), randomness="different")(_t(np.zeros((2, 3)), device))
    with pytest.raises(RuntimeError, match="randomness='same'"):
        func.vmap(lambda p: core.multinomial(p, 1), randomness="same")(_t(np.full((2, 3), 1 / 3), device))


def test_errors(device):
    x = _t(_rng().normal(size=(3, 2)), device)
    with pytest.raises(ValueError, match="must only return Tensors"):
        func.vmap(lambda t: t.sum().item())(x)
    shared = _t(np.zeros(2), device)
    with pytest.raises(RuntimeError, match="out-of-place"):
        func.vmap(lambda t: shared.add_(t))(x)
    inplace = func.vmap(lambda t: t.mul_(2))(x.clone())
    np.testing.assert_allclose(_np(inplace), _np(x) * 2)
