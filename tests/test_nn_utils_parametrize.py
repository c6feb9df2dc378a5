"""core.nn.utils.parametrize and parametrizations on every device: the parametrised tensor, its right inverse,
chained parametrisations, caching, removal, state_dict keys and gradients; weight_norm against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import nn
from core.autograd import gradcheck
from core.nn.utils import parametrize
from core.testing import assert_close


def _np(t):
    return t.detach().cpu().numpy()


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * 2

    def right_inverse(self, y):
        return y / 2


def test_register_and_remove_parametrization(device):
    layer = nn.Linear(3, 3).to(device).double()
    w = _np(layer.weight).copy()
    parametrize.register_parametrization(layer, "weight", Symmetric())
    assert parametrize.is_parametrized(layer) and parametrize.is_parametrized(layer, "weight")
    assert not parametrize.is_parametrized(layer, "bias") and type(layer).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(layer) is nn.Linear and isinstance(layer, nn.Linear)
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    expected = np.triu(w) + np.triu(w, 1).T
    assert_close(_np(layer.weight), expected)
    assert_close(_np(layer.parametrizations.weight.original), np.triu(w))  # right_inverse of the original
    x = core.tensor(np.random.default_rng(1).standard_normal((2, 3)), device=device)
    assert_close(_np(layer(x)), _np(x) @ expected.T + _np(layer.bias))
    layer(x).sum().backward()
    assert layer.parametrizations.weight.original.grad is not None
    target = np.arange(9.0).reshape(3, 3)
    layer.weight = core.tensor(target + target.T, device=device)  # assignment stores right_inverse(value)
    assert_close(_np(layer.weight), target + target.T)
    parametrize.register_parametrization(layer, "weight", Scale())
    assert_close(_np(layer.weight), 2 * (target + target.T))
    parametrize.remove_parametrizations(layer, "weight")
    assert type(layer) is nn.Linear and not hasattr(layer, "parametrizations")
    assert isinstance(layer.weight, nn.Parameter) and sorted(layer.state_dict()) == ["bias", "weight"]
    assert_close(_np(layer.weight), 2 * (target + target.T))
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(layer, "weight")
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        parametrize.register_parametrization(layer, "nothing", Scale())


def test_remove_leaving_the_original_and_cached(device):
    layer = nn.Linear(2, 2).to(device)
    w = _np(layer.weight).copy()
    scale = Scale()
    parametrize.register_parametrization(layer, "weight", scale)
    assert_close(_np(layer.parametrizations.weight.original), w / 2)
    with parametrize.cached():
        first, second = layer.weight, layer.weight
    assert first is second and scale.calls == 1
    assert layer.weight is not first and scale.calls == 2  # no caching outside the context
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
    assert_close(_np(layer.weight), w / 2)


def test_parametrized_gradient(device):
    layer = parametrize.register_parametrization(nn.Linear(3, 3).to(device).double(), "weight", Symmetric())
    layer.weight.sum().backward()  # W = triu(A) + triu(A, 1)ᵀ: dΣW/dA is 1 on the diagonal, 2 above, 0 below
    assert_close(_np(layer.parametrizations.weight.original.grad), np.triu(np.full((3, 3), 2.0)) - np.eye(3))
    from core.nn.utils.parametrizations import _WeightNorm
    rng = np.random.default_rng(2)
    g = core.tensor(rng.random((4, 1)) + 0.5, device=device, requires_grad=True)
    v = core.tensor(rng.standard_normal((4, 3)), device=device, requires_grad=True)
    assert gradcheck(_WeightNorm(0), (g, v))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrizations_weight_norm(device, dim):
    layer = nn.Linear(3, 4).to(device).double()
    w = _np(layer.weight).copy()
    nn.utils.parametrizations.weight_norm(layer, dim=dim)
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original0",
                                        "parametrizations.weight.original1"]
    norm = np.sqrt((w ** 2).sum()) if dim is None else np.linalg.norm(w, axis=1 - dim, keepdims=True)
    assert_close(_np(layer.parametrizations.weight.original0), norm)
    assert_close(_np(layer.weight), w)
    with core.no_grad():
        layer.parametrizations.weight.original0.mul_(3.0)
    x = core.tensor(np.random.default_rng(1).standard_normal((2, 3)), device=device)
    assert_close(_np(layer(x)), _np(x) @ (3 * w).T + _np(layer.bias))
    layer(x).sum().backward()
    assert layer.parametrizations.weight.original0.grad is not None
    parametrize.remove_parametrizations(layer, "weight")
    assert_close(_np(layer.weight), 3 * w)


# -- stateless.functional_call --------------------------------------------------------------------------------------

def test_functional_call(device):
    from core.nn.utils.stateless import functional_call
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.BatchNorm1d(4)).to(device).double().eval()
    before = {k: _np(v).copy() for k, v in model.state_dict().items()}
    rng = np.random.default_rng(3)
    w, mean = rng.standard_normal((4, 3)), rng.standard_normal(4)
    x = rng.standard_normal((5, 3))
    given = {"0.weight": core.tensor(w, device=device, requires_grad=True)}
    out = functional_call(model, (given, {"2.running_mean": core.tensor(mean, device=device)}),
                          core.tensor(x, device=device))
    hidden = np.maximum(x @ w.T + before["0.bias"], 0)
    expected = (hidden - mean) / np.sqrt(before["2.running_var"] + 1e-5) * before["2.weight"] + before["2.bias"]
    assert_close(_np(out), expected)
    assert all(np.array_equal(_np(v), before[k]) for k, v in model.state_dict().items())  # the module is untouched
    out.sum().backward()
    assert given["0.weight"].grad is not None and model[0].weight.grad is None
    weight = core.tensor(w, device=device, requires_grad=True)
    assert gradcheck(lambda t: functional_call(model, {"0.weight": t}, (core.tensor(x, device=device),)), (weight,))
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(model, (given, given), core.tensor(x, device=device))
    with pytest.raises(RuntimeError, match="Missing key\\(s\\)"):
        functional_call(model, given, core.tensor(x, device=device), strict=True)


def test_functional_call_tied_weights(device):
    from core.nn.utils.stateless import functional_call

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.encode, self.decode = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
            self.decode.weight = self.encode.weight

        def forward(self, x):
            return self.decode(self.encode(x))

    model = Tied().to(device).double()
    w = np.array([[1.0, 2.0], [0.5, -1.0]])
    x = core.tensor(np.eye(2), device=device)
    out = functional_call(model, {"encode.weight": core.tensor(w, device=device)}, (x,))
    assert_close(_np(out), (w @ w).T)  # both uses see the new value
    out = functional_call(model, {"encode.weight": core.tensor(w, device=device)}, (x,), tie_weights=False)
    assert_close(_np(out), (w.T @ _np(model.encode.weight).T))


def test_parametrizations_spectral_norm(device):
    layer = nn.utils.parametrizations.spectral_norm(nn.Linear(5, 4).to(device).double())
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original",
                                        "parametrizations.weight.0._u", "parametrizations.weight.0._v"]
    norm = layer.parametrizations.weight[0]
    w, v = _np(layer.parametrizations.weight.original).copy(), _np(norm._v).copy()
    x = core.tensor(np.random.default_rng(1).standard_normal((2, 5)), device=device)
    out = layer(x)  # training: one power-iteration step (u from v, then v from u) before sigma
    u = w @ v
    u /= np.linalg.norm(u)
    v = w.T @ u
    v /= np.linalg.norm(v)
    assert_close(_np(norm._u), u) and assert_close(_np(norm._v), v)
    assert_close(_np(out), _np(x) @ (w / (u @ w @ v)).T + _np(layer.bias))
    out.sum().backward()
    assert layer.parametrizations.weight.original.grad is not None
    for _ in range(30):
        layer(x)
    assert_close(np.linalg.norm(_np(layer.weight), 2), 1.0, rtol=1e-6, atol=1e-8)
    layer.eval()
    before = _np(norm._u).copy()
    layer(x)
    assert np.array_equal(_np(norm._u), before)
    vector = nn.utils.parametrizations.spectral_norm(nn.BatchNorm1d(3).to(device).double())
    assert_close(np.linalg.norm(_np(vector.weight)), 1.0)  # a 1-D weight is normalised
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nothing'"):
        nn.utils.parametrizations.spectral_norm(layer, "nothing")
