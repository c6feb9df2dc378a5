"""``core.nn.init``: gains and fans against PyTorch's formulas, sample statistics of each fill, structure of the
deterministic ones (eye, dirac, orthogonal, sparse), errors, generators, and torch as an optional oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest

import core
import core.nn as nn
from core.nn import init
from core.testing import assert_close, to_numpy

GAINS = {"linear": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0, "conv_transpose1d": 1.0,
         "conv_transpose2d": 1.0, "conv_transpose3d": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3, "relu": math.sqrt(2.0),
         "leaky_relu": math.sqrt(2.0 / (1 + 0.01 ** 2)), "selu": 0.75}


def npy(x):
    """A host NumPy copy of a tensor on any device (detached)."""
    return to_numpy(x.detach())


def big(device, *shape, dtype=core.float64):
    return core.empty(*shape, device=device, dtype=dtype)


@pytest.mark.parametrize("name,gain", list(GAINS.items()))
def test_calculate_gain(name, gain):
    assert init.calculate_gain(name) == pytest.approx(gain)


def test_calculate_gain_leaky_relu_param_and_errors():
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("leaky_relu", 1) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="negative_slope x not a valid number"):
        init.calculate_gain("leaky_relu", "x")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")


def test_simple_fills(device):
    x = big(device, 3, 4)
    assert init.constant_(x, 2.5) is x
    assert_close(x, np.full((3, 4), 2.5))
    assert_close(init.zeros_(x), np.zeros((3, 4)))
    assert_close(init.ones_(x), np.ones((3, 4)))
    assert_close(init.eye_(x), np.eye(3, 4))
    assert_close(init.eye_(big(device, 4, 2)), np.eye(4, 2))


def test_uniform_and_normal_statistics(device):
    x = big(device, 200, 300)
    init.uniform_(x, -2.0, 3.0)
    values = npy(x)
    assert values.min() >= -2.0 and values.max() < 3.0
    assert abs(values.mean() - 0.5) < 0.03 and abs(values.std() - 5 / math.sqrt(12)) < 0.03
    init.normal_(x, 1.0, 0.5)
    assert abs(npy(x).mean() - 1.0) < 0.01 and abs(npy(x).std() - 0.5) < 0.01


@pytest.mark.parametrize("shape,fan_in,fan_out", [((30, 20), 20, 30), ((8, 4, 3, 3), 36, 72), ((6, 5, 7), 35, 42)])
def test_xavier(device, shape, fan_in, fan_out):
    x = big(device, *shape)
    init.xavier_uniform_(x, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / (fan_in + fan_out))
    values = npy(x)
    assert np.abs(values).max() <= bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.15 * bound / math.sqrt(3)
    init.xavier_normal_(x, gain=0.5)
    std = 0.5 * math.sqrt(2.0 / (fan_in + fan_out))
    assert abs(npy(x).std() - std) < 0.15 * std


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("leaky_relu", 0), ("leaky_relu", math.sqrt(5)), ("relu", 0),
                                            ("tanh", 0)])
def test_kaiming(device, mode, nonlinearity, a):
    x = big(device, 64, 16, 3, 3)
    fan = 16 * 9 if mode == "fan_in" else 64 * 9
    gain = init.calculate_gain(nonlinearity, a)
    init.kaiming_uniform_(x, a=a, mode=mode, nonlinearity=nonlinearity)
    bound = gain * math.sqrt(3.0 / fan)
    values = npy(x)
    assert np.abs(values).max() <= bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.05 * bound
    init.kaiming_normal_(x, a=a, mode=mode, nonlinearity=nonlinearity)
    assert abs(npy(x).std() - gain / math.sqrt(fan)) < 0.05 * gain / math.sqrt(fan)


def test_linear_default_init_bounds(device):
    """Linear's default (kaiming_uniform_(a=√5)) gives U(±1/√fan_in) for the weight, as in PyTorch."""
    layer = nn.Linear(50, 400).to(device)
    bound = 1 / math.sqrt(50)
    w = npy(layer.weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(npy(layer.bias)).max() <= bound


def test_trunc_normal(device):
    x = big(device, 200, 250)
    init.trunc_normal_(x, mean=1.0, std=2.0, a=-1.0, b=2.0)
    values = npy(x)
    assert values.min() >= -1.0 and values.max() <= 2.0
    # moments of N(1, 4) truncated to [-1, 2]
    alpha, beta = (-1.0 - 1.0) / 2.0, (2.0 - 1.0) / 2.0
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2  # noqa: E731
    mass = cdf(beta) - cdf(alpha)
    mean = 1.0 + 2.0 * (pdf(alpha) - pdf(beta)) / mass
    var = 4.0 * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / mass - ((pdf(alpha) - pdf(beta)) / mass) ** 2)
    assert abs(values.mean() - mean) < 0.01 and abs(values.std() - math.sqrt(var)) < 0.01


@pytest.mark.parametrize("shape", [(5, 8), (8, 5), (6, 2, 2)])
def test_orthogonal(device, shape):
    x = big(device, *shape)
    init.orthogonal_(x, gain=3.0)
    flat = npy(x).reshape(shape[0], -1) / 3.0
    if flat.shape[0] < flat.shape[1]:
        assert_close(core.tensor(flat @ flat.T), np.eye(flat.shape[0]), atol=1e-10, rtol=0)
    else:
        assert_close(core.tensor(flat.T @ flat), np.eye(flat.shape[1]), atol=1e-10, rtol=0)


def test_dirac(device):
    x = big(device, 4, 3, 3, 3)
    init.dirac_(x)
    expected = np.zeros((4, 3, 3, 3))
    for i in range(3):
        expected[i, i, 1, 1] = 1
    assert_close(x, expected)
    grouped = init.dirac_(big(device, 4, 2, 3), groups=2)
    expected = np.zeros((4, 2, 3))
    for g in range(2):
        for d in range(2):
            expected[g * 2 + d, d, 1] = 1
    assert_close(grouped, expected)


def test_sparse(device):
    x = big(device, 10, 6)
    init.sparse_(x, 0.3, std=0.5)
    zeros_per_column = (npy(x) == 0).sum(0)
    assert np.all(zeros_per_column == math.ceil(0.3 * 10))


def test_fills_are_in_place_and_not_recorded(device):
    layer = nn.Linear(4, 3).to(device)
    for fn in (init.xavier_uniform_, init.kaiming_normal_, init.orthogonal_, init.zeros_, init.trunc_normal_):
        out = fn(layer.weight)
        assert out is layer.weight
        assert layer.weight.is_leaf and layer.weight.grad_fn is None and layer.weight.requires_grad
    assert layer.weight._version > 0


def test_generator_reproducibility(device):
    a, b = big(device, 5, 5), big(device, 5, 5)
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_, init.trunc_normal_):
        fn(a, generator=core.Generator(device=device).manual_seed(7))
        fn(b, generator=core.Generator(device=device).manual_seed(7))
        assert_close(a, npy(b))


def test_errors(device):
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2"):
        init.xavier_uniform_(big(device, 3))
    with pytest.raises(ValueError, match="Mode bad not supported"):
        init.kaiming_normal_(big(device, 3, 3), mode="bad")
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(big(device, 2, 3, 4))
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(big(device, 2, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(big(device, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(big(device, 3), 0.1)


def test_zero_element_tensors(device):
    empty = big(device, 0, 3)
    assert init.kaiming_uniform_(empty) is empty
    assert init.kaiming_normal_(empty) is empty


def test_orthogonal_empty(device):
    empty = big(device, 0, 3)
    assert init.orthogonal_(empty) is empty


def test_dirac_groups_must_divide(device):
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(big(device, 5, 2, 3), groups=2)


def test_kaiming_mode_message_matches_pytorch(device):
    with pytest.raises(ValueError, match=r"Mode bad not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_normal_(big(device, 3, 3), mode="bad")


def test_gains_and_fans_match_torch():
    torch = pytest.importorskip("torch")
    for name in GAINS:
        assert init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert init.calculate_gain("leaky_relu", 0.3) == pytest.approx(torch.nn.init.calculate_gain("leaky_relu", 0.3))
    for shape in [(3, 4), (8, 4, 3, 3), (2, 3, 4, 5, 6)]:
        expected = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
        assert init._fans(core.empty(*shape)) == expected


def test_deterministic_fills_match_torch(device):
    torch = pytest.importorskip("torch")
    for shape, groups in [((4, 2, 3), 2), ((6, 3, 3, 3), 1), ((2, 2, 1, 3, 3), 1)]:
        expected = torch.nn.init.dirac_(torch.empty(shape, dtype=torch.float64), groups=groups).numpy()
        assert_close(init.dirac_(big(device, *shape), groups=groups), expected)
    assert_close(init.eye_(big(device, 3, 5)), torch.nn.init.eye_(torch.empty(3, 5, dtype=torch.float64)).numpy())
