"""Gradient checks of the conformance table's differentiable entries (``OP_DB``) on any device.

Analytical gradients are compared with float64 central differences (``core.autograd.gradcheck``). The leaves
are contiguous; the layout (transposed, strided, expanded) is made inside the checked function with view ops,
so gradients flow through the views back to the leaves, as PyTorch's OpInfo-based gradcheck tests do. Inputs
are drawn inside each op's domain and away from the points where it is not differentiable.
"""

from __future__ import annotations

import numpy as np

import core

from .conformance import OP_DB, _values

__all__ = ["is_differentiable", "differentiable_ops", "grad_shapes", "draw_inputs", "prepare", "check_gradient"]

_DEFAULT_SHAPES = {1: ((2, 3), ()), 2: (((2, 3), (2, 3)), ((2, 1), (1, 3)), ((2, 3), ()))}
_MAX_NUMEL = 24  # finite differences cost two forwards per input element: keep inputs small
_MARGIN = 1e-2


def _distance_to_integer(a: np.ndarray) -> np.ndarray:
    return np.abs(a - np.round(a))


def _smallest_gap(a: np.ndarray) -> float:
    flat = np.sort(a.ravel())
    return float(np.diff(flat).min()) if flat.size > 1 else np.inf


# Where each op is not differentiable, as a distance from its inputs (broadcast against each other) to the
# nearest such point; inputs are redrawn until every distance exceeds _MARGIN.
KINKS = {
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
    "logit[eps]": lambda a: np.minimum(np.abs(a - 0.2), np.abs(a - 0.8)),
    **{f"{name}[{form}]": _smallest_gap for name in ("amax", "amin") for form in ("all", "dim-1-keepdim", "dims01")},
}


def is_differentiable(info) -> bool:
    """Entries with a float64 variant whose output is floating (comparisons and argmax/argmin are not), unless
    marked not differentiable."""
    if "float64" not in info.dtypes or info.out == "bool" or not getattr(info, "differentiable", True):
        return False
    return not callable(info.out) or info.out("float64") in ("float32", "float64")


def differentiable_ops() -> list:
    """The names of every differentiable ``OP_DB`` entry."""
    return [info.name for info in OP_DB if is_differentiable(info)]


def grad_shapes(info) -> list:
    """Up to three small, non-empty sample shapes (as a tuple of input shapes) of ``info``."""
    candidates = info.shapes or _DEFAULT_SHAPES[info.arity]
    picked = []
    for shape in candidates:
        shapes = tuple(shape) if info.arity > 1 else (shape,)
        if all(0 < int(np.prod(s)) <= _MAX_NUMEL for s in shapes):
            picked.append(shapes)
    return picked[:3]


def draw_inputs(info, shapes: tuple, rng: np.random.Generator) -> list:
    """Float64 inputs inside the op's domain and away from its non-differentiable points."""
    kink = KINKS.get(info.name)
    for _ in range(200):
        arrays = [_values(rng, s, "float64", info.domain) for s in shapes]
        if kink is None or np.all(kink(*np.broadcast_arrays(*arrays)) > _MARGIN):
            return arrays
    raise AssertionError(f"could not draw inputs for {info.name} away from its non-differentiable points")


def _leaf_and_layout(values: np.ndarray, layout: str):
    """A contiguous leaf and the view op that turns it into ``values`` laid out as ``layout`` (as make_input)."""
    if layout == "transposed" and values.ndim >= 2:
        return np.ascontiguousarray(np.swapaxes(values, -1, -2)), lambda t: t.transpose(-1, -2)
    if layout == "strided" and values.ndim >= 1:
        leaf = np.stack([values, np.zeros_like(values)], axis=-1)  # every other element along the last dim
        return leaf, lambda t: t.select(-1, 0)
    if layout == "expanded" and values.ndim >= 1:
        return np.ascontiguousarray(values[:1]), lambda t: t.expand(values.shape)
    return values, lambda t: t


def prepare(info, layout: str, device: str, shapes: tuple, seed: int) -> tuple:
    """``(func, leaves)``: float64 leaves on ``device`` requiring grad and the op applied to their layout views."""
    rng = np.random.default_rng(seed)
    leaves, views = [], []
    for values in draw_inputs(info, shapes, rng):
        leaf, to_layout = _leaf_and_layout(values, layout)
        leaves.append(core.tensor(leaf, dtype=core.float64, device=device).requires_grad_())
        views.append(to_layout)

    def func(*xs):
        return info.op(*(view(x) for view, x in zip(views, xs)), **info.kwargs)

    return func, tuple(leaves)


def check_gradient(info, device: str, layout: str = "contiguous") -> None:
    """gradcheck one differentiable entry on ``device`` over its sample shapes; raises on a mismatch."""
    from ..autograd import gradcheck

    for seed, shapes in enumerate(grad_shapes(info)):
        func, leaves = prepare(info, layout, device, shapes, seed)
        try:
            gradcheck(func, leaves)
        except core.autograd.GradcheckError as exc:
            raise core.autograd.GradcheckError(f"{info.name} on {device}, {layout}, shapes {shapes}: {exc}") from None
