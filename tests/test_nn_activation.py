"""Activation functionals and modules against NumPy formulas (and torch when installed): values over dtypes and
layouts, float64 gradchecks, in-place variants, errors, PReLU's parameter and state dict, module reprs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
import core.nn as nn
import core.nn.functional as F
from core.autograd import gradcheck
from core.testing import assert_close

# values kept away from every kink (0, ±1, ±3, 6, the thresholds below) so finite differences are smooth
SAMPLE = np.array([[-4.1, -2.6, -1.4, -0.7, -0.35, -0.12],
                   [0.15, 0.4, 0.85, 1.6, 2.3, 7.2]])

_erf = np.vectorize(math.erf)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.logaddexp(0, beta * x) / beta)


def _softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name -> (kwargs, NumPy reference)
ELEMENTWISE = {
    "relu": ({}, lambda x: np.maximum(x, 0)),
    "relu6": ({}, lambda x: np.clip(x, 0, 6)),
    "leaky_relu": ({"negative_slope": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": ({"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    "selu": ({}, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x))),
    "celu": ({"alpha": 1.5}, lambda x: np.maximum(x, 0) + np.minimum(0, 1.5 * np.expm1(x / 1.5))),
    "gelu": ({}, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "silu": ({}, lambda x: x * _sigmoid(x)),
    "mish": ({}, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "sigmoid": ({}, _sigmoid),
    "tanh": ({}, np.tanh),
    "hardtanh": ({"min_val": -2.0, "max_val": 1.9}, lambda x: np.clip(x, -2.0, 1.9)),
    "hardswish": ({}, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hardsigmoid": ({}, lambda x: np.clip(x + 3, 0, 6) / 6),
    "softplus": ({"beta": 2.0, "threshold": 5.0}, lambda x: _softplus(x, 2.0, 5.0)),
    "softsign": ({}, lambda x: x / (1 + np.abs(x))),
    "tanhshrink": ({}, lambda x: x - np.tanh(x)),
    "threshold": ({"threshold": 0.5, "value": -3.0}, lambda x: np.where(x > 0.5, x, -3.0)),
    "logsigmoid": ({}, lambda x: -np.logaddexp(0, -x)),
}
GELU_TANH = ({"approximate": "tanh"},
             lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))))
CASES = [(name, *spec) for name, spec in ELEMENTWISE.items()] + [("gelu", *GELU_TANH)]
CASE_IDS = [f"{name}-{'-'.join(map(str, kwargs.values()))}" for name, kwargs, _ in CASES]
INPLACE = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardtanh", "hardswish",
           "hardsigmoid", "threshold"]


def t(a, device, dtype=None, requires_grad=False):
    return core.tensor(a, device=device, dtype=dtype, requires_grad=requires_grad)


# -- values -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs,reference", CASES, ids=CASE_IDS)
def test_elementwise_values_float64_and_float32(device, name, kwargs, reference):
    expected = reference(SAMPLE)
    assert_close(getattr(F, name)(t(SAMPLE, device), **kwargs), expected)
    assert_close(getattr(F, name)(t(SAMPLE, device, core.float32), **kwargs), expected.astype(np.float32),
                 rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,kwargs,reference", CASES, ids=CASE_IDS)
def test_elementwise_layouts_and_edge_shapes(device, name, kwargs, reference):
    function = getattr(F, name)
    base = t(SAMPLE, device)
    assert_close(function(base.T, **kwargs), reference(SAMPLE.T))  # transposed
    assert_close(function(base[:, ::2], **kwargs), reference(SAMPLE[:, ::2]))  # stepped slice
    assert_close(function(base[0].expand(3, 6), **kwargs), reference(np.broadcast_to(SAMPLE[0], (3, 6))))
    assert_close(function(t(np.array(-0.7), device), **kwargs), reference(np.array(-0.7)))  # 0-d
    assert function(core.empty(0, 3, device=device, dtype=core.float64), **kwargs).shape == (0, 3)


@pytest.mark.parametrize("dtype", [core.float16, core.bfloat16])
def test_low_precision_inputs_stay_low_precision(device, dtype):
    for name, kwargs, reference in CASES:
        out = getattr(F, name)(t(SAMPLE, device, dtype), **kwargs)
        assert out.dtype == dtype, name
        tolerance = 3e-2 if dtype == core.bfloat16 else 5e-3
        np.testing.assert_allclose(out.float().cpu().numpy(), reference(SAMPLE), rtol=tolerance, atol=tolerance,
                                   err_msg=name)


def test_extreme_inputs_are_finite_with_finite_gradients(device):
    x = t([-1000.0, -50.0, 50.0, 1000.0], device, requires_grad=True)
    for name in ["elu", "selu", "celu", "silu", "mish", "softplus", "logsigmoid", "gelu", "sigmoid"]:
        x.grad = None
        out = getattr(F, name)(x)
        out.sum().backward()
        assert np.isfinite(out.detach().cpu().numpy()).all(), name
        assert np.isfinite(x.grad.cpu().numpy()).all(), name
    assert_close(F.logsigmoid(t([-1000.0, 1000.0], device)), np.array([-1000.0, 0.0], np.float32))
    assert_close(F.softplus(t([-1000.0, 1000.0], device)), np.array([0.0, 1000.0], np.float32))


def test_relu_keeps_integer_dtype(device):
    out = F.relu(t([1, -2, 3], device))
    assert out.dtype == core.int64 and out.tolist() == [1, 0, 3]


def test_relu_keeps_nan_and_sign_of_nan_is_zero(device):
    """As in PyTorch: relu propagates NaN; sign is (x > 0) - (x < 0), so 0 for NaN (pytorch/pytorch#41245)."""
    x = core.full((40000,), float("nan"), device=device)  # large enough for compiled kernels
    x[1] = -1.0
    assert_close(F.relu(x)[:3], np.array([np.nan, 0.0, np.nan], np.float32), equal_nan=True)
    assert_close(core.sign(x)[:3], np.array([0.0, -1.0, 0.0], np.float32))


# -- softmax family ---------------------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_softmax_family_matches_numpy(shape, data):
    x = np.random.default_rng(len(shape)).standard_normal(shape) * 5
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    expected = _softmax(x, dim)
    assert_close(F.softmax(t(x, "cpu"), dim), expected)
    assert_close(F.log_softmax(t(x, "cpu"), dim), np.log(expected))
    assert_close(F.softmin(t(x, "cpu"), dim), _softmax(-x, dim))


def test_softmax_is_stable_and_takes_dtype(device):
    x = t([[1000.0, 1001.0, float("-inf")], [-1000.0, -1001.0, 0.0]], device)
    out = F.softmax(x, 1)
    assert np.isfinite(out.cpu().numpy()).all()
    assert_close(out.sum(1), np.ones(2, np.float32))
    assert_close(F.log_softmax(x, 1)[0, :2], np.log(_softmax(np.array([0.0, 1.0]), 0)).astype(np.float32))
    assert F.softmax(t([1.0, 2.0], device), 0, dtype=core.float64).dtype == core.float64
    assert F.log_softmax(t([1.0, 2.0], device, core.float16), 0, dtype=core.float32).dtype == core.float32
    assert_close(F.softmax(t([[1.0, 2.0]], device).T, 0), _softmax(np.array([[1.0], [2.0]]), 0).astype(np.float32))


def test_softmax_without_dim_warns_and_picks_pytorchs_legacy_dim(device):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        assert_close(F.softmax(t(x, device)), _softmax(x, 0))
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        assert_close(F.log_softmax(t(x[0], device)), np.log(_softmax(x[0], 1)))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        F.softmin(t(x[0, 0], device))


def test_glu_and_prelu_values(device):
    x = np.random.default_rng(1).standard_normal((2, 4, 3))
    assert_close(F.glu(t(x, device), 1), x[:, :2] * _sigmoid(x[:, 2:]))
    assert_close(F.glu(t(x, device)[..., :2]), x[..., :1] * _sigmoid(x[..., 1:2]))
    weight = np.array([0.1, -0.5, 2.0, 0.25])
    assert_close(F.prelu(t(x, device), t(weight, device)), np.where(x > 0, x, weight[None, :, None] * x))
    assert_close(F.prelu(t(x, device), t([0.3], device)), np.where(x > 0, x, 0.3 * x))
    assert_close(F.prelu(t(x[0, 0], device), t(0.3, device)), np.where(x[0, 0] > 0, x[0, 0], 0.3 * x[0, 0]))


def test_errors_match_pytorch(device):
    x = core.randn(2, 3, device=device)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"):
        F.glu(x)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(core.tensor(1.0, device=device))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.glu(x, 3)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x, approximate="fast")
    with pytest.raises(RuntimeError, match="Found parameter numbers = 2 and channel size = 3"):
        F.prelu(x, core.ones(2, device=device))
    with pytest.raises(RuntimeError, match="Expected `weight` to be a scalar or 1D tensor"):
        F.prelu(x, core.ones(1, 3, device=device))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 1.0, -1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(x, alpha=0.0)
    with pytest.raises(AssertionError, match="must be greater than min_val"):
        nn.Hardtanh(1.0, -1.0)


# -- in-place ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", INPLACE)
def test_inplace_variants_write_into_their_input(device, name):
    kwargs, reference = ELEMENTWISE[name]
    x = t(SAMPLE, device)
    out = getattr(F, name)(x, **kwargs, inplace=True)
    assert out is x
    assert_close(x, reference(SAMPLE))
    if hasattr(F, name + "_"):
        y = t(SAMPLE, device)
        assert getattr(F, name + "_")(y, **kwargs) is y
        assert_close(y, reference(SAMPLE))


def test_inplace_relu_in_a_graph_gets_the_right_gradient(device):
    x = t(SAMPLE, device, requires_grad=True)
    hidden = x * 2
    nn.ReLU(inplace=True)(hidden).sum().backward()
    assert_close(x.grad, np.where(SAMPLE > 0, 2.0, 0.0))


# -- gradients --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs,reference", CASES, ids=CASE_IDS)
def test_elementwise_gradcheck(device, name, kwargs, reference):
    x = t(SAMPLE[:, ::2], device, requires_grad=True)
    assert gradcheck(lambda v: getattr(F, name)(v, **kwargs), (x,))


def test_softmax_glu_prelu_gradcheck(device):
    x = t(np.random.default_rng(2).standard_normal((2, 4)), device, requires_grad=True)
    for dim in (0, 1):
        for function in (F.softmax, F.log_softmax, F.softmin, F.glu):
            assert gradcheck(lambda v, function=function, dim=dim: function(v, dim), (x,)), function.__name__
    weight = t([0.1, -0.5, 2.0, 0.25], device, core.float64, requires_grad=True)
    assert gradcheck(F.prelu, (x, weight))
    assert gradcheck(F.prelu, (x, t([0.3], device, core.float64, requires_grad=True)))


def test_modules_gradcheck_through_parameters(device):
    module = nn.PReLU(3, dtype=core.float64, device=device)
    x = t(np.random.default_rng(3).standard_normal((2, 3, 2)), device, requires_grad=True)
    assert gradcheck(lambda v, w: F.prelu(v, w), (x, module.weight))
    module(x).sum().backward()
    expected = np.where(x.detach().cpu().numpy() > 0, 0.0, x.detach().cpu().numpy()).sum((0, 2))
    assert_close(module.weight.grad, expected)


# -- modules ----------------------------------------------------------------------------------------------------------

MODULES = [
    (nn.ReLU(), "ReLU()", "relu", {}),
    (nn.ReLU(inplace=True), "ReLU(inplace=True)", "relu", {}),
    (nn.ReLU6(), "ReLU6()", "relu6", {}),
    (nn.LeakyReLU(0.2), "LeakyReLU(negative_slope=0.2)", "leaky_relu", {"negative_slope": 0.2}),
    (nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)", "leaky_relu", {"negative_slope": 0.2}),
    (nn.ELU(0.7), "ELU(alpha=0.7)", "elu", {"alpha": 0.7}),
    (nn.SELU(), "SELU()", "selu", {}),
    (nn.CELU(1.5), "CELU(alpha=1.5)", "celu", {"alpha": 1.5}),
    (nn.GELU(), "GELU(approximate='none')", "gelu", {}),
    (nn.GELU("tanh"), "GELU(approximate='tanh')", "gelu", {"approximate": "tanh"}),
    (nn.SiLU(), "SiLU()", "silu", {}),
    (nn.Mish(), "Mish()", "mish", {}),
    (nn.Sigmoid(), "Sigmoid()", "sigmoid", {}),
    (nn.Tanh(), "Tanh()", "tanh", {}),
    (nn.Hardtanh(-2.0, 1.9), "Hardtanh(min_val=-2.0, max_val=1.9)", "hardtanh", {"min_val": -2.0, "max_val": 1.9}),
    (nn.Hardswish(), "Hardswish()", "hardswish", {}),
    (nn.Hardsigmoid(), "Hardsigmoid()", "hardsigmoid", {}),
    (nn.Softplus(2.0, 5.0), "Softplus(beta=2.0, threshold=5.0)", "softplus", {"beta": 2.0, "threshold": 5.0}),
    (nn.Softsign(), "Softsign()", "softsign", {}),
    (nn.Tanhshrink(), "Tanhshrink()", "tanhshrink", {}),
    (nn.Threshold(0.5, -3.0), "Threshold(threshold=0.5, value=-3.0)", "threshold", {"threshold": 0.5, "value": -3.0}),
    (nn.LogSigmoid(), "LogSigmoid()", "logsigmoid", {}),
]


@pytest.mark.parametrize("module,text,name,kwargs", MODULES, ids=[m[1] for m in MODULES])
def test_modules_match_functionals_and_pytorch_reprs(device, module, text, name, kwargs):
    assert repr(module) == text
    assert_close(module(t(SAMPLE, device)), getattr(F, name)(t(SAMPLE, device), **kwargs))
    assert list(module.state_dict()) == []


def test_softmax_modules_glu_and_prelu(device):
    x = np.random.default_rng(4).standard_normal((2, 4))
    for module, text, reference in [(nn.Softmax(1), "Softmax(dim=1)", _softmax(x, 1)),
                                    (nn.Softmin(0), "Softmin(dim=0)", _softmax(-x, 0)),
                                    (nn.LogSoftmax(-1), "LogSoftmax(dim=-1)", np.log(_softmax(x, -1))),
                                    (nn.GLU(), "GLU(dim=-1)", x[:, :2] * _sigmoid(x[:, 2:]))]:
        assert repr(module) == text
        assert_close(module(t(x, device)), reference)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        assert_close(nn.Softmax()(t(x, device)), _softmax(x, 1))
    assert repr(nn.ReLU6(True)) == "ReLU6(inplace=True)"
    assert repr(nn.ELU(inplace=True)) == "ELU(alpha=1.0, inplace=True)"
    assert repr(nn.Threshold(0.1, 20, True)) == "Threshold(threshold=0.1, value=20, inplace=True)"
    assert repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"
    assert repr(nn.Softplus()) == "Softplus(beta=1.0, threshold=20.0)"
    assert repr(nn.Sequential(nn.Linear(2, 2), nn.ReLU())) == ("Sequential(\n  (0): Linear(in_features=2, "
                                                               "out_features=2, bias=True)\n  (1): ReLU()\n)")


def test_hardtanh_deprecated_argument_names():
    with pytest.warns(FutureWarning, match="min_value"):
        module = nn.Hardtanh(min_value=-0.5)
    assert module.min_val == -0.5


def test_prelu_parameter_init_and_state_dict_round_trip(device):
    module = nn.PReLU(3, init=0.1, device=device, dtype=core.float64)
    assert repr(module) == "PReLU(num_parameters=3)"
    assert [name for name, _ in module.named_parameters()] == ["weight"]
    assert module.weight.shape == (3,) and module.weight.dtype == core.float64
    assert_close(module.weight, np.full(3, 0.1))
    assert repr(nn.PReLU()) == "PReLU(num_parameters=1)" and nn.PReLU().weight.tolist() == [0.25]
    with core.no_grad():
        module.weight.copy_(t([0.5, -1.0, 2.0], device))
    copy = nn.PReLU(3, device=device, dtype=core.float64)
    copy.load_state_dict(module.state_dict())
    x = t(np.random.default_rng(5).standard_normal((4, 3)), device)
    assert_close(copy(x), module(x))
    module.reset_parameters()
    assert_close(module.weight, np.full(3, 0.1))


# -- torch as an oracle -----------------------------------------------------------------------------------------------

def test_against_torch_values_gradients_and_reprs():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    for name, kwargs, _ in CASES:
        ours = t(SAMPLE, "cpu", requires_grad=True)
        theirs = torch.tensor(SAMPLE, requires_grad=True)
        ours_out, theirs_out = getattr(F, name)(ours, **kwargs), getattr(tf, name)(theirs, **kwargs)
        assert_close(ours_out, theirs_out.detach().numpy(), msg=name)
        (ours_out * ours_out).sum().backward()
        (theirs_out * theirs_out).sum().backward()
        assert_close(ours.grad, theirs.grad.numpy(), msg=name)
    x = np.random.default_rng(6).standard_normal((3, 4, 2))
    for name in ["softmax", "log_softmax", "softmin", "glu"]:
        assert_close(getattr(F, name)(t(x, "cpu"), 1), getattr(tf, name)(torch.tensor(x), 1).numpy(), msg=name)
    for ours, theirs in [(nn.ReLU(True), torch.nn.ReLU(True)), (nn.ReLU6(), torch.nn.ReLU6()),
                         (nn.LeakyReLU(), torch.nn.LeakyReLU()), (nn.ELU(inplace=True), torch.nn.ELU(inplace=True)),
                         (nn.CELU(), torch.nn.CELU()), (nn.SELU(True), torch.nn.SELU(True)),
                         (nn.GELU(), torch.nn.GELU()), (nn.SiLU(True), torch.nn.SiLU(True)),
                         (nn.Mish(), torch.nn.Mish()),
                         (nn.Hardtanh(), torch.nn.Hardtanh()), (nn.Hardswish(True), torch.nn.Hardswish(True)),
                         (nn.Hardsigmoid(True), torch.nn.Hardsigmoid(True)), (nn.Softplus(), torch.nn.Softplus()),
                         (nn.Threshold(0.1, 20), torch.nn.Threshold(0.1, 20)), (nn.PReLU(4), torch.nn.PReLU(4)),
                         (nn.Softmax(), torch.nn.Softmax()), (nn.LogSoftmax(1), torch.nn.LogSoftmax(1)),
                         (nn.Softmin(0), torch.nn.Softmin(0)), (nn.GLU(1), torch.nn.GLU(1)),
                         (nn.LogSigmoid(), torch.nn.LogSigmoid()), (nn.Tanhshrink(), torch.nn.Tanhshrink())]:
        assert repr(ours) == repr(theirs)
    theirs = torch.nn.PReLU(4)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor([0.1, -0.2, 0.3, 2.0]))
    ours = nn.PReLU(4)
    ours.load_state_dict({k: core.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(7).standard_normal((2, 4, 3)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(ours(core.tensor(x)), theirs(torch.tensor(x)).detach().numpy())
