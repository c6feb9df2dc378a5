"""``gradcheck`` / ``gradgradcheck``: analytical gradients against central finite differences.

Complex inputs and outputs are checked as PyTorch's slow mode does: each complex input that requires grad is
replaced by a real ``(..., 2)`` leaf of its (real, imag) parts, seen by ``func`` through ``view_as_complex``, and each
complex output through ``view_as_real``. The real Jacobian of that function checks the Wirtinger derivatives: a
gradient in PyTorch's convention, dL/dre + i dL/dim, is exactly that leaf's gradient read as complex.
"""

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


def _is_complex(x) -> bool:
    return hasattr(x, "_storage") and x.dtype.is_complex


def _as_real_function(func, inputs: tuple):
    """``func`` over real (..., 2) leaves in place of its complex inputs that require grad, with its complex outputs
    viewed as real: a real function whose Jacobian holds the complex derivatives (see the module docstring)."""
    from ..ops.view import view_as_complex, view_as_real

    complex_at = {i for i, x in enumerate(inputs) if _is_complex(x) and x.requires_grad}

    def real_func(*xs):
        args = tuple(view_as_complex(x) if i in complex_at else x for i, x in enumerate(xs))
        return tuple(view_as_real(o) if _is_complex(o) else o for o in _outputs(func, args))

    real_inputs = tuple(view_as_real(x.detach()).clone().requires_grad_() if i in complex_at else x
                        for i, x in enumerate(inputs))
    return real_func, real_inputs


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
    func, inputs = _as_real_function(func, inputs)
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


def _random_like(t):
    """Standard normal values of ``t``'s shape, dtype and device; complex ones from normal (real, imag) pairs."""
    from ..ops.random import randn
    from ..ops.view import view_as_complex

    if t.dtype.is_complex:
        return view_as_complex(randn(t._shape + (2,), dtype=t.dtype.to_real(), device=t.device))
    return randn(t._shape, dtype=t.dtype, device=t.device)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, **_ignored) -> bool:
    """Check second derivatives: gradcheck of the (create_graph) first derivative (``torch.autograd.gradgradcheck``)."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    outs = _differentiable(_outputs(func, inputs))
    if grad_outputs is None:
        grad_outputs = tuple(_random_like(o).requires_grad_() for o in outs)
    wrt = [i for i, x in enumerate(inputs) if hasattr(x, "_storage") and x.requires_grad]
    n = len(inputs)

    def first_derivative(*all_inputs):
        xs, gos = all_inputs[:n], all_inputs[n:]
        result = grad(_differentiable(_outputs(func, xs)), [xs[i] for i in wrt], gos, create_graph=True,
                      allow_unused=True)
        return tuple(r for r in result if r is not None)

    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
