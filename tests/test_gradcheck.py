"""Gradient checks for every differentiable op of the conformance table (``OP_DB``): analytical gradients against
float64 finite differences on contiguous, transposed, strided and broadcast (expanded) inputs, and second
derivatives (``gradgradcheck``) for the smooth ones.

The leaves are contiguous; the layout is made inside the checked function with core view ops (transpose, select,
expand), so gradients flow through the views back to the leaves, as PyTorch's OpInfo-based gradcheck tests do.
"""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.autograd import gradcheck, gradgradcheck
from core.testing.conformance import LAYOUTS, OP_DB, _values

_DEFAULT_SHAPES = {1: ((2, 3), ()), 2: (((2, 3), (2, 3)), ((2, 1), (1, 3)), ((2, 3), ()))}
_MAX_NUMEL = 24  # finite differences cost two forwards per input element: keep inputs small


def _is_differentiable(info) -> bool:
    """Entries with a float64 variant whose output is floating (comparisons and argmax/argmin are not)."""
    if "float64" not in info.dtypes or info.out == "bool":
        return False
    return not callable(info.out) or info.out("float64") in ("float32", "float64")


def _distance_to_integer(a: np.ndarray) -> np.ndarray:
    return np.abs(a - np.round(a))


def _smallest_gap(a: np.ndarray) -> float:
    flat = np.sort(a.ravel())
    return float(np.diff(flat).min()) if flat.size > 1 else np.inf


# Where each op is not differentiable, as a distance from its inputs (broadcast against each other) to the
# nearest such point; inputs are redrawn until every distance exceeds _MARGIN.
_KINKS = {
    "abs": lambda a: np.abs(a),
    "sign": lambda a: np.abs(a),
    "floor": _distance_to_integer,
    "ceil": _distance_to_integer,
    "trunc": _distance_to_integer,
    "frac": _distance_to_integer,
    "round": lambda a: _distance_to_integer(a - 0.5),
    "clamp": lambda a: np.minimum(np.abs(a + 1), np.abs(a - 2)),
    "maximum": lambda a, b: np.abs(a - b),
    "minimum": lambda a, b: np.abs(a - b),
    "floor_divide": lambda a, b: _distance_to_integer(a / b),
    "remainder": lambda a, b: _distance_to_integer(a / b),
    "fmod": lambda a, b: _distance_to_integer(a / b),
    "where": lambda c, a, b: np.abs(c),
    "getitem[mask]": lambda a: np.abs(a),
    "cumprod": lambda a: np.abs(a),  # the formula divides by the input
    **{f"{name}[{form}]": _smallest_gap for name in ("amax", "amin") for form in ("all", "dim-1-keepdim", "dims01")},
}
_MARGIN = 1e-2


def _shapes(info) -> list:
    """Up to three small, non-empty sample shapes (as a tuple of input shapes) of ``info``."""
    candidates = info.shapes or _DEFAULT_SHAPES[info.arity]
    picked = []
    for shape in candidates:
        shapes = tuple(shape) if info.arity > 1 else (shape,)
        if all(0 < int(np.prod(s)) <= _MAX_NUMEL for s in shapes):
            picked.append(shapes)
    return picked[:3]


def _draw(info, shapes: tuple, rng: np.random.Generator) -> list:
    """Float64 inputs inside the op's domain and away from its non-differentiable points."""
    kink = _KINKS.get(info.name)
    for _ in range(200):
        arrays = [_values(rng, s, "float64", info.domain) for s in shapes]
        if kink is None or np.all(kink(*np.broadcast_arrays(*arrays)) > _MARGIN):
            return arrays
    raise AssertionError(f"could not draw inputs for {info.name} away from its non-differentiable points")


def _leaf_and_layout(values: np.ndarray, layout: str):
    """A contiguous leaf and the core view op that turns it into ``values`` laid out as ``layout``.

    Mirrors core.testing.conformance.make_input, but keeps the view in the checked function so the leaf gets
    the gradient.
    """
    if layout == "transposed" and values.ndim >= 2:
        leaf = np.ascontiguousarray(np.swapaxes(values, -1, -2))
        return leaf, lambda t: t.transpose(-1, -2)
    if layout == "strided" and values.ndim >= 1:
        leaf = np.stack([values, np.zeros_like(values)], axis=-1)  # every other element along the last dim
        return leaf, lambda t: t.select(-1, 0)
    if layout == "expanded" and values.ndim >= 1:
        return np.ascontiguousarray(values[:1]), lambda t: t.expand(values.shape)
    return values, lambda t: t


def _prepare(info, layout: str, device: str, shapes: tuple, seed: int):
    rng = np.random.default_rng(seed)
    leaves, views = [], []
    for values in _draw(info, shapes, rng):
        leaf, to_layout = _leaf_and_layout(values, layout)
        leaves.append(core.tensor(leaf, dtype=core.float64, device=device).requires_grad_())
        views.append(to_layout)

    def func(*xs):
        return info.op(*(view(x) for view, x in zip(views, xs)), **info.kwargs)

    return func, tuple(leaves)


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
