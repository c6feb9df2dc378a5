"""Gradient checks for every differentiable op of the conformance table (``OP_DB``): analytical gradients against
float64 finite differences on contiguous, transposed, strided and broadcast (expanded) inputs, and second
derivatives (``gradgradcheck``) for the smooth ones.

The leaves are contiguous; the layout is made inside the checked function with core view ops (transpose, select,
expand), so gradients flow through the views back to the leaves, as PyTorch's OpInfo-based gradcheck tests do.
"""

from __future__ import annotations

import pytest

import core
from core.autograd import gradcheck, gradgradcheck
from core.testing.conformance import LAYOUTS, OP_DB
from core.testing.gradients import grad_shapes, is_differentiable, prepare

# the gradient-check machinery is core.testing's (plugin authors run it through check_backend)
_is_differentiable = is_differentiable
_shapes = grad_shapes
_prepare = prepare


def _needs_float64(device: str) -> None:
    from core.plugins.manager import runtime_for

    if not getattr(runtime_for(device), "supports_float64", True):
        pytest.skip(f"{device} has no float64")


GRAD_CASES = [pytest.param(info, id=info.name) for info in OP_DB if _is_differentiable(info)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("info", GRAD_CASES)
def test_gradcheck(info, layout, device):
    _needs_float64(device)
    for seed, shapes in enumerate(_shapes(info)):
        func, leaves = _prepare(info, layout, device, shapes, seed)
        assert gradcheck(func, leaves), f"{info.name}, {layout}, shapes {shapes}"
        for leaf in leaves:
            assert leaf.grad is None  # gradcheck uses autograd.grad: .grad stays untouched


_SMOOTH = ("exp", "tanh", "sigmoid", "sin", "cos", "sqrt", "erf", "atan", "mul", "div", "add", "sub", "pow",
           "log", "logaddexp", "hypot", "atan2", "lerp", "matmul", "einsum[bij,bjk->bik]", "cat", "stack", "flip",
           "tril", "gather", "index_select", "getitem[advanced]", "cumsum", "cumprod", "sum[all]",
           "sum[dim-1-keepdim]", "sum[dims01]", "mean[all]", "mean[dim-1-keepdim]", "mean[dims01]",
           "prod[dim-1-keepdim]", "var[dim-1-keepdim]", "std[all]", "logsumexp[dims01]")
GRADGRAD_CASES = [pytest.param(info, id=info.name) for info in OP_DB if info.name in _SMOOTH + ("roll",)]
GRADGRAD_LAYOUTS = LAYOUTS


@pytest.mark.parametrize("layout", GRADGRAD_LAYOUTS)
@pytest.mark.parametrize("info", GRADGRAD_CASES)
def test_gradgradcheck(info, layout, device):
    _needs_float64(device)
    core.manual_seed(0)  # gradgradcheck draws random grad_outputs
    shapes = _shapes(info)[0]
    func, leaves = _prepare(info, layout, device, shapes, seed=0)
    assert gradgradcheck(func, leaves), f"{info.name}, {layout}, shapes {shapes}"


def test_every_smooth_name_is_in_the_table():
    names = {info.name for info in OP_DB}
    assert set(_SMOOTH) <= names, set(_SMOOTH) - names


def test_log_gradgradcheck_on_positive_inputs(device):
    _needs_float64(device)
    x = core.rand(2, 3, dtype=core.float64, device=device).add(0.5).requires_grad_()
    assert gradgradcheck(core.log, (x,))


def test_gradcheck_reports_a_wrong_derivative(device):
    _needs_float64(device)

    class WrongExp(core.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.exp() * 1.5

    x = core.rand(2, 3, dtype=core.float64, device=device).requires_grad_()
    with pytest.raises(core.autograd.GradcheckError, match="Jacobian mismatch"):
        gradcheck(WrongExp.apply, (x,))
    assert gradcheck(WrongExp.apply, (x,), raise_exception=False) is False
