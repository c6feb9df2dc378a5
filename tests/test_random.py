"""Random numbers: reproducibility, Generator state, shapes/dtypes/devices, distribution sanity, errors."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.testing import assert_close

N = 100_000


@pytest.fixture(autouse=True)
def _restore_default_rng():
    state = core.get_rng_state()
    yield
    core.set_rng_state(state)


# -- reproducibility and Generator objects ---------------------------------------------------------

def _draws(device, generator=None):
    return [core.rand(3, device=device, generator=generator), core.randn(2, 2, device=device, generator=generator),
            core.randint(0, 100, (4,), device=device, generator=generator),
            core.randperm(6, device=device, generator=generator),
            core.multinomial(core.ones(5, device=device), 3, generator=generator),
            core.empty(3, device=device).bernoulli_(0.5, generator=generator)]


def test_manual_seed_reproduces(device):
    core.manual_seed(1234)
    first = _draws(device)
    core.manual_seed(1234)
    second = _draws(device)
    for a, b in zip(first, second):
        assert_close(a, b, rtol=0, atol=0)
    core.manual_seed(4321)
    assert not np.array_equal(core.rand(3, device=device).cpu().numpy(), first[0].cpu().numpy())
    assert core.initial_seed() == 4321


def test_generator_objects_are_independent_streams(device):
    g1 = core.Generator(device).manual_seed(7)
    g2 = core.Generator(device=device).manual_seed(7)
    core.manual_seed(0)
    for a, b in zip(_draws(device, g1), _draws(device, g2)):
        assert_close(a, b, rtol=0, atol=0)
    core.manual_seed(0)
    expected = core.rand(5, device=device)
    core.manual_seed(0)
    core.rand(5, device=device, generator=g1)  # drawing from g1 leaves the default stream untouched
    assert_close(core.rand(5, device=device), expected, rtol=0, atol=0)


def test_generator_api():
    g = core.Generator()
    assert g.device == core.device("cpu")
    assert g.initial_seed() == 67280421310721  # PyTorch's seed of a fresh Generator
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    new_seed = g.seed()
    assert g.initial_seed() == new_seed and 0 <= new_seed < 2 ** 64
    assert isinstance(core.default_generator, core.Generator)
    assert core.manual_seed(3) is core.default_generator
    assert isinstance(core.seed(), int)
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        g.manual_seed(1.5)
    with pytest.raises(ValueError, match="Overflow"):
        g.manual_seed(2 ** 64)


def test_get_and_set_state(device):
    g = core.Generator(device).manual_seed(11)
    core.rand(4, device=device, generator=g)
    state = g.get_state()
    assert state.dtype is core.uint8 and state.device.type == "cpu" and state.ndim == 1
    first = core.randn(6, device=device, generator=g)
    g.set_state(state)
    assert_close(core.randn(6, device=device, generator=g), first, rtol=0, atol=0)
    other = core.Generator(device).set_state(bytes(state.cpu().numpy().tobytes()))  # bytes work too
    assert other.initial_seed() == 11
    assert_close(core.randn(6, device=device, generator=other), first, rtol=0, atol=0)
    saved = core.get_rng_state()
    a = core.rand(3)
    core.set_rng_state(saved)
    assert_close(core.rand(3), a, rtol=0, atol=0)
    with pytest.raises(TypeError, match="RNG state must be a uint8 tensor"):
        g.set_state(core.zeros(3))
    with pytest.raises(RuntimeError, match="not a state returned by get_state"):
        g.set_state(core.zeros(3, dtype=core.uint8))


def test_state_for_caches_one_object_per_backend():
    g = core.Generator().manual_seed(9)
    made = []
    first = g.state_for("toy", lambda seed: made.append(seed) or np.random.default_rng(seed))
    assert g.state_for("toy", lambda seed: None) is first and made == [9]
    first.random(3)
    snapshot = g.get_state()
    expected = first.random(2)
    g.set_state(snapshot)
    assert np.array_equal(g.state_for("toy", lambda seed: np.random.default_rng(seed)).random(2), expected)


def test_generator_device_must_match(device):
    with pytest.raises(RuntimeError, match="Expected a '.*' device type for generator but found 'meta'"):
        core.rand(2, device=device, generator=core.Generator("meta"))
    with pytest.raises(TypeError, match="generator"):
        core.rand(2, generator=1)


# -- shapes, dtypes, devices -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [core.float32, core.float64, core.float16, core.bfloat16])
def test_float_factories(device, dtype):
    for fn in (core.rand, core.randn):
        t = fn(2, 3, dtype=dtype, device=device)
        assert t.shape == (2, 3) and t.dtype is dtype and t.device.type == device
        assert fn((4,), dtype=dtype, device=device).shape == (4,)
        assert fn(0, device=device).shape == (0,)
        assert fn((), device=device).shape == ()
    like = core.rand_like(core.zeros(3, 1, dtype=dtype, device=device))
    assert like.shape == (3, 1) and like.dtype is dtype
    assert core.randn_like(like, dtype=core.float64).dtype is core.float64
    assert core.rand(2, requires_grad=True, dtype=dtype, device=device).requires_grad


def test_integer_factories(device):
    t = core.randint(3, 10, (5, 2), device=device)
    assert t.shape == (5, 2) and t.dtype is core.int64 and t.device.type == device
    assert core.randint(10, (3,), dtype=core.float32, device=device).dtype is core.float32
    assert core.randint_like(core.zeros(4, device=device), 5).dtype is core.float32
    assert core.randint_like(core.zeros(4, dtype=core.int32, device=device), 3, 5).dtype is core.int32
    p = core.randperm(7, dtype=core.int32, device=device)
    assert p.dtype is core.int32 and sorted(p.tolist()) == list(range(7))
    assert core.randperm(0, device=device).shape == (0,)


def test_out_arguments(device):
    out = core.empty(0, device=device)
    assert core.rand(3, out=out) is out and out.shape == (3,)
    out = core.empty(0, dtype=core.int64, device=device)
    assert core.randperm(4, out=out) is out and sorted(out.tolist()) == [0, 1, 2, 3]


def test_inplace_fills_write_through_views(device):
    base = core.zeros(4, 6, device=device)
    view = base[:, ::2]
    assert view.uniform_(2, 3) is view
    values = base.cpu().numpy()
    assert np.all((values[:, ::2] >= 2) & (values[:, ::2] < 3)) and np.all(values[:, 1::2] == 0)
    version = base._version
    base.t().normal_()
    assert base._version > version
    assert np.all(base.cpu().numpy() != 0)


# -- distribution sanity ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [core.float32, core.float64, core.float16])
def test_uniform_and_normal_moments(device, dtype):
    u = core.rand(N, dtype=dtype, device=device).double().cpu().numpy()
    assert u.min() >= 0 and u.max() <= 1 and abs(u.mean() - 0.5) < 0.01 and abs(u.std() - 12 ** -0.5) < 0.01
    z = core.randn(N, dtype=dtype, device=device).double().cpu().numpy()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    x = core.empty(N, dtype=dtype, device=device).uniform_(-3, 5).double().cpu().numpy()
    assert x.min() >= -3 and x.max() <= 5 and abs(x.mean() - 1) < 0.05
    y = core.empty(N, dtype=dtype, device=device).normal_(10, 3).double().cpu().numpy()
    assert abs(y.mean() - 10) < 0.1 and abs(y.std() - 3) < 0.1


def test_normal_overloads(device):
    mean = core.full((N,), 5.0, device=device)
    assert abs(core.normal(mean, 2.0).cpu().numpy().mean() - 5) < 0.05
    s = core.normal(0.0, core.full((N,), 3.0, dtype=core.float64, device=device))
    assert s.dtype is core.float64 and abs(s.cpu().numpy().std() - 3) < 0.05
    both = core.normal(core.zeros(2, 1, device=device), core.ones(3, dtype=core.float64, device=device))
    assert both.shape == (2, 3) and both.dtype is core.float64
    sized = core.normal(2, 3, (N,), device=device)
    assert sized.dtype is core.float32 and abs(sized.cpu().numpy().mean() - 2) < 0.05
    assert core.normal(0.0, 1.0, (2,), dtype=core.float64).dtype is core.float64
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        core.normal(core.zeros(2, device=device), core.tensor([1.0, -1.0], device=device))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        core.normal(0.0, -1.0, (2,))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        core.normal(core.zeros(2, dtype=core.int64, device=device), 1.0)
    with pytest.raises(RuntimeError, match="must match the size"):
        core.normal(core.zeros(4, device=device), core.ones(2, 2, device=device))


def test_other_continuous_fills(device):
    e = core.empty(N, dtype=core.float64, device=device).exponential_(2.0).cpu().numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.02
    ln = core.empty(N, dtype=core.float64, device=device).log_normal_(0.0, 0.5).cpu().numpy()
    assert abs(np.log(ln).mean()) < 0.02 and abs(np.log(ln).std() - 0.5) < 0.02
    c = core.empty(N, dtype=core.float64, device=device).cauchy_(1.0, 2.0).cpu().numpy()
    assert abs(np.median(c) - 1) < 0.1
    g = core.empty(N, dtype=core.int64, device=device).geometric_(0.25).cpu().numpy()
    assert g.min() >= 1 and abs(g.mean() - 4) < 0.1


def test_randint_and_random_bounds(device):
    r = core.randint(-3, 4, (N,), device=device).cpu().numpy()
    assert r.min() == -3 and r.max() == 3 and abs(r.mean()) < 0.05
    assert set(core.randint(2, (1000,), dtype=core.bool, device=device).tolist()) == {False, True}
    u8 = core.empty(10_000, dtype=core.uint8, device=device).random_().cpu().numpy()
    assert u8.min() == 0 and u8.max() == 255
    i8 = core.empty(10_000, dtype=core.int8, device=device).random_().cpu().numpy()
    assert i8.min() >= 0 and i8.max() == 127
    f = core.empty(1000, device=device).random_(5).cpu().numpy()
    assert set(np.unique(f)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    assert core.empty(1000, device=device).random_(to=3).cpu().numpy().max() == 2
    big = core.empty(1000, dtype=core.int64, device=device).random_().cpu().numpy()
    assert big.min() >= 0 and big.max() > 2 ** 60
    above = core.empty(1000, dtype=core.int16, device=device).random_(100, None).cpu().numpy()
    assert above.min() >= 100 and above.max() > 30000


def test_randperm_is_a_permutation(device):
    for n, dtype in ((1000, core.int64), (100, core.float32), (256, core.uint8), (1, core.int64)):
        p = core.randperm(n, dtype=dtype, device=device)
        assert sorted(p.cpu().numpy().astype(np.int64).tolist()) == list(range(n))
    assert core.randperm(50, device=device).tolist() != list(range(50))


def test_bernoulli(device):
    assert core.empty(100, device=device).bernoulli_(0.0).cpu().numpy().sum() == 0
    assert core.empty(100, dtype=core.int64, device=device).bernoulli_(1.0).cpu().numpy().sum() == 100
    p = core.tensor([0.0, 1.0, 0.0, 1.0], device=device)
    assert core.bernoulli(p).tolist() == [0.0, 1.0, 0.0, 1.0]
    half = core.bernoulli(core.full((N,), 0.3, dtype=core.float64, device=device))
    assert half.dtype is core.float64 and abs(half.cpu().numpy().mean() - 0.3) < 0.01
    assert abs(core.bernoulli(core.zeros(N, device=device), p=0.7).cpu().numpy().mean() - 0.7) < 0.01
    rows = core.empty(2, 3, dtype=core.bool, device=device).bernoulli_(core.tensor([0.0, 1.0, 1.0], device=device))
    assert rows.tolist() == [[False, True, True], [False, True, True]]
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in \\[0, 1\\], but got p=1.5"):
        core.empty(2, device=device).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="in \\[0, 1\\]"):
        core.bernoulli(core.tensor([0.5, 1.5], device=device))
    with pytest.raises(NotImplementedError, match="'Long'"):
        core.bernoulli(core.tensor([0, 1], device=device))


def test_multinomial(device):
    probs = core.tensor([0.1, 0.2, 0.3, 0.4], dtype=core.float64, device=device)
    draws = core.multinomial(probs, N, replacement=True).cpu().numpy()
    assert np.allclose(np.bincount(draws, minlength=4) / N, [0.1, 0.2, 0.3, 0.4], atol=0.01)
    rows = core.multinomial(core.rand(50, 10, device=device) + 0.01, 10)
    assert rows.shape == (50, 10) and rows.dtype is core.int64
    assert all(sorted(r) == list(range(10)) for r in rows.tolist())  # without replacement: distinct indices
    assert core.multinomial(core.tensor([0.0, 0.0, 5.0], device=device), 5, True).tolist() == [2] * 5
    first = core.multinomial(core.tensor([1.0, 0.0, 1e-3, 100.0], device=device), 2).tolist()
    assert first[0] in (0, 3) and len(set(first)) == 2
    unnormalised = core.multinomial(core.tensor([[0.0, 10.0], [3.0, 0.0]], dtype=core.float16, device=device), 1)
    assert unnormalised.tolist() == [[1], [0]]


@pytest.mark.parametrize("args,exc,message", [
    (([1.0, -1.0], 1), RuntimeError, "probability tensor contains either `inf`, `nan` or element < 0"),
    (([1.0, float("nan")], 1), RuntimeError, "probability tensor contains"),
    (([0.0, 0.0], 1), RuntimeError, "invalid multinomial distribution \\(sum of probabilities <= 0\\)"),
    (([1.0, 1.0], 3), RuntimeError, "cannot sample n_sample > prob_dist.size\\(-1\\) samples without replacement"),
    (([1.0, 1.0], 0), RuntimeError, "cannot sample n_sample <= 0 samples"),
    (([[[1.0]]], 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
])
def test_multinomial_errors(device, args, exc, message):
    with pytest.raises(exc, match=message):
        core.multinomial(core.tensor(args[0], device=device), args[1])


def test_multinomial_rejects_integer_probabilities(device):
    with pytest.raises(RuntimeError, match="multinomial only supports floating-point dtypes for input, got: Long"):
        core.multinomial(core.tensor([1, 1], device=device), 1)


@pytest.mark.parametrize("call,exc,message", [
    (lambda d: core.rand(2, dtype=core.int64, device=d), NotImplementedError, "uniform_\" not implemented for 'Long'"),
    (lambda d: core.randn(2, dtype=core.int64, device=d), NotImplementedError, "not implemented for 'Long'"),
    (lambda d: core.empty(2, device=d).uniform_(2, 1), RuntimeError, "uniform_ expects to return a \\[from, to\\)"),
    (lambda d: core.empty(2, device=d).normal_(0, -1), RuntimeError, "normal expects std >= 0.0"),
    (lambda d: core.empty(2, device=d).exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0"),
    (lambda d: core.empty(2, dtype=core.int64, device=d).exponential_(), NotImplementedError, "'Long'"),
    (lambda d: core.empty(2, device=d).random_(5, 5), RuntimeError, "from=5 >= to=5"),
    (lambda d: core.empty(2, dtype=core.uint8, device=d).random_(-1, 3), RuntimeError, "from is out of bounds"),
    (lambda d: core.empty(2, dtype=core.uint8, device=d).random_(0, 300), RuntimeError, "to - 1 is out of bounds"),
    (lambda d: core.randint(5, 5, (3,), device=d), RuntimeError, "from=5 >= to=5"),
    (lambda d: core.randint(5, 3, device=d), TypeError, "size"),
    (lambda d: core.randperm(-1, device=d), RuntimeError, "negative dimension"),
    (lambda d: core.randperm(3000, dtype=core.float16, device=d), RuntimeError, "n cannot be greater than 2049"),
    (lambda d: core.randperm(5, dtype=core.bool, device=d), NotImplementedError, "'Bool'"),
    (lambda d: core.empty(2, device=d).geometric_(1), RuntimeError, "geometric_ expects p to be in \\(0, 1\\)"),
    (lambda d: core.normal(0.0, 1.0), TypeError, "size"),
])
def test_argument_errors(device, call, exc, message):
    with pytest.raises(exc, match=message):
        call(device)


def test_meta_device_shapes():
    assert core.rand(2, 3, device="meta").shape == (2, 3)
    assert core.multinomial(core.empty(4, 5, device="meta"), 2).shape == (4, 2)
