"""``gradcheck`` / ``gradgradcheck``: analytical gradients against central finite differences."""

from __future__ import annotations

import itertools

import numpy as np

from .functional import grad
from .grad_mode import no_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree."""


def _outputs(func, inputs) -> tuple:
    out = func(*inputs)
    return out if isinstance(out, tuple) else (out,)


def _differentiable(outs) -> list:
    return [o for o in outs if hasattr(o, "_storage") and o.dtype.category >= 2]


def _numerical(func, inputs, wrt: int, out_index: int, eps: float) -> np.ndarray:
    """Jacobian d out[out_index] / d inputs[wrt] by central differences, shape (numel_in, numel_out)."""
    x = inputs[wrt].detach()
    flat_positions = list(itertools.product(*(range(s) for s in x._shape)))
    columns = []

    def evaluate_at(value):
        with no_grad():
            x[pos] = value
        # func may itself differentiate (gradgradcheck), so it runs with grad mode as the caller has it
        return _differentiable(_outputs(func, inputs))[out_index].detach().cpu().numpy().astype(np.float64).ravel()

    for pos in flat_positions:
        original = x[pos].item()
        plus, minus = evaluate_at(original + eps), evaluate_at(original - eps)
        with no_grad():
            x[pos] = original
        columns.append((plus - minus) / (2 * eps))
    return np.array(columns).reshape(len(flat_positions), -1)


def _analytical(func, inputs, wrt: int, out_index: int) -> np.ndarray:
    """Jacobian rows from one backward per output element."""
    from ..memory_formats import contiguous_format
    from ..ops.creation import zeros_like

    out = _differentiable(_outputs(func, inputs))[out_index]
    rows = []
    for j in range(out.numel()):
        seed = zeros_like(out, memory_format=contiguous_format)  # so a flat view addresses element j
        seed.view(-1)[j] = 1.0
        (g,) = grad(out, inputs[wrt], seed, retain_graph=True, allow_unused=True)
        rows.append(np.zeros(inputs[wrt].numel()) if g is None else g.detach().cpu().numpy().astype(np.float64).ravel())
    return np.array(rows).T.reshape(inputs[wrt].numel(), out.numel())


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **_ignored) -> bool:
    """Check ``func``'s gradients for every input that requires grad (``torch.autograd.gradcheck``)."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    outs = _differentiable(_outputs(func, inputs))
    for wrt, x in enumerate(inputs):
        if not (hasattr(x, "_storage") and x.requires_grad):
            continue
        if x.dtype.name != "float64":
            import warnings

            warnings.warn(f"gradcheck: input {wrt} is {x.dtype.name}, not float64; the check may fail on precision",
                          stacklevel=2)
        for k in range(len(outs)):
            numerical = _numerical(func, inputs, wrt, k, eps)
            analytical = _analytical(func, inputs, wrt, k)
            if not np.allclose(analytical, numerical, rtol=rtol, atol=atol):
                message = (f"Jacobian mismatch for output {k} with respect to input {wrt},\n"
                           f"numerical:{numerical}\nanalytical:{analytical}\n")
                if raise_exception:
                    raise GradcheckError(message)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, **_ignored) -> bool:
    """Check second derivatives: gradcheck of the (create_graph) first derivative (``torch.autograd.gradgradcheck``)."""
    from ..ops.random import randn

    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    outs = _differentiable(_outputs(func, inputs))
    if grad_outputs is None:
        grad_outputs = tuple(randn(o._shape, dtype=o.dtype, device=o.device).requires_grad_() for o in outs)
    wrt = [i for i, x in enumerate(inputs) if hasattr(x, "_storage") and x.requires_grad]
    n = len(inputs)

    def first_derivative(*all_inputs):
        xs, gos = all_inputs[:n], all_inputs[n:]
        result = grad(_differentiable(_outputs(func, xs)), [xs[i] for i in wrt], gos, create_graph=True,
                      allow_unused=True)
        return tuple(r for r in result if r is not None)

    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
