"""Generated backward kernels of fused elementwise groups: training through ``jit::fused`` nodes.

:func:`training_kernels` derives two kernels from a group's :class:`~core.codegen.FusedKernel`. The training
forward is the group's kernel writing out, besides its outputs, the values of its transcendental steps
(:data:`SAVED_OPS`), as eager autograd saves a ``tanh``'s result. The backward (:func:`backward_kernel`) takes the
group's inputs, those saved values and the gradients of the group's outputs; it recomputes the cheap steps in
registers, then walks the steps in reverse, each step's derivative an expression of its operands, its value and
its adjoint (reverse-mode differentiation inside one loop over the elements; uses of a value add up). An input
broadcast into the group's shape gets its gradient summed over the broadcast dimensions afterwards (a dispatcher
``sum``).

Only the ops of :data:`DERIVATIVES` and a closing ``sum`` are differentiated; comparisons are too (their gradient
is zero), so masks built inside a group are fine. A group with another op (``maximum``, ``pow``, a cast, ``amax``)
gets no kernels and runs its ops one by one when autograd must see them.
"""

from __future__ import annotations

import dataclasses

from ..codegen import FusedKernel, FusedStep

__all__ = ["DERIVATIVES", "SAVED_OPS", "backward_kernel", "training_kernels"]

# op -> one entry per operand position: None (no gradient: a literal, a condition) or ``(template, operands)``,
# where the template's ``a``, ``b``, ``c`` are the listed operands: "g" (the step's adjoint), "y" (its value), or
# an index into the step's own operands.
_ZERO = "{c:0}"  # templates use core.codegen's markers ({c:x} cast, {s:cond;t;f} select): every dialect
DERIVATIVES = {
    "neg": [("-a", ("g",))],
    "positive": [("a", ("g",))],
    "copy": [("a", ("g",))],
    "relu": [(f"{{s:c > 0;a;{_ZERO}}}", ("g", 0, "y"))],  # threshold_backward on the result, as PyTorch
    "exp": [("(a * c)", ("g", 0, "y"))],
    "expm1": [("(a * (c + {c:1}))", ("g", 0, "y"))],
    "tanh": [("(a * ({c:1} - c * c))", ("g", 0, "y"))],
    "sigmoid": [("(a * c * ({c:1} - c))", ("g", 0, "y"))],
    "sin": [("(a * {f:cos}(b))", ("g", 0))],
    "cos": [("(-a * {f:sin}(b))", ("g", 0))],
    "sinh": [("(a * {f:cosh}(b))", ("g", 0))],
    "cosh": [("(a * {f:sinh}(b))", ("g", 0))],
    "log": [("(a / b)", ("g", 0))],
    "log1p": [("(a / ({c:1} + b))", ("g", 0))],
    "sqrt": [("(a / ({c:2} * c))", ("g", 0, "y"))],
    "rsqrt": [("({c:-0.5} * a * c * c * c)", ("g", 0, "y"))],
    "reciprocal": [("(-a * c * c)", ("g", 0, "y"))],
    "square": [("({c:2} * a * b)", ("g", 0))],
    "abs": [("(a * ({c:b > 0} - {c:b < 0}))", ("g", 0))],
    "atan": [("(a / ({c:1} + b * b))", ("g", 0))],
    "add": [("a", ("g",)), ("a", ("g",))],
    "sub": [("a", ("g",)), ("-a", ("g",))],
    "mul": [("(a * b)", ("g", 1)), ("(a * b)", ("g", 0))],
    "div": [("(a / b)", ("g", 1)), ("(-a * b / (c * c))", ("g", 0, 1))],
    "where": [None, (f"{{s:b != 0;a;{_ZERO}}}", ("g", 0)), (f"{{s:b != 0;{_ZERO};a}}", ("g", 0))],
    "clamp_min": [(f"{{s:b >= c;a;{_ZERO}}}", ("g", 0, 1)), None],
    "clamp_max": [(f"{{s:b <= c;a;{_ZERO}}}", ("g", 0, 1)), None],
}
# add and sub with alpha (input ± alpha * other): the other operand's gradient is scaled
_ALPHA = {"add": [("a", ("g",)), ("(a * b)", ("g", 2)), None],
          "sub": [("a", ("g",)), ("(-a * b)", ("g", 2)), None]}
_COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def _rules(step: FusedStep):
    if step.op in _COMPARISONS:
        return [None] * len(step.operands)
    if step.op in _ALPHA and len(step.operands) == 3:
        return _ALPHA[step.op]
    rules = DERIVATIVES.get(step.op)
    if rules is None or len(rules) != len(step.operands):
        return None
    if step.op == "copy" and step.dtype != step.compute:
        return None  # a cast: its gradient is cast back, which this table does not say
    return rules


# Steps whose values the training forward writes out for the backward instead of the backward recomputing them
# (a transcendental costs more than a read); cheap arithmetic is recomputed in registers.
SAVED_OPS = frozenset({"exp", "expm1", "tanh", "sigmoid", "sin", "cos", "sinh", "cosh", "log", "log1p", "sqrt",
                       "rsqrt", "atan"})


def training_kernels(kernel: FusedKernel, wanted: tuple) -> tuple | None:
    """``(forward, backward, written, saved)`` for training through ``kernel``, or None (see :func:`backward_kernel`).

    ``forward`` is ``kernel`` writing, after its own elementwise outputs, the values of its ``saved`` steps (the
    :data:`SAVED_OPS`); ``backward`` reads them (its inputs: the forward inputs, the saved values, the output
    gradients) instead of recomputing them.
    """
    saved = tuple(k for k, step in enumerate(kernel.steps) if step.op in SAVED_OPS)
    made = backward_kernel(kernel, wanted, saved)
    if made is None:
        return None
    forward = dataclasses.replace(kernel, name=f"{kernel.name}_train", outputs=kernel.outputs + saved)
    return forward, made[0], made[1], len(saved)


def backward_kernel(kernel: FusedKernel, wanted: tuple, saved: tuple = ()) -> tuple | None:
    """``(the kernel computing the gradients of the inputs flagged in wanted, those inputs' indices)``.

    ``wanted`` has one bool per kernel input. The kernel's inputs are the forward inputs, the values of the
    ``saved`` steps (which it reads instead of recomputing), then one gradient per forward output (in the forward's
    output order, a sum's last, with its summed dims kept: it broadcasts); its outputs are the gradients of the
    listed inputs (wanted and reached by some derivative; the others' gradients are zero), each of that
    input's dtype and the group's shape. None when the group has an op without a rule, or an amax/amin.
    """
    red = kernel.reduction
    if red is not None and red.op != "sum":
        return None  # amax/amin split their gradient among ties: not generated
    rules = [_rules(s) for s in kernel.steps]
    if any(r is None for r in rules):
        return None
    n_in = len(kernel.inputs)
    steps = list(kernel.steps)
    for j, k in enumerate(saved):  # read, not recomputed
        steps[k] = FusedStep(steps[k].op, "a", (("in", n_in + j),), steps[k].dtype, steps[k].dtype)
    n_in += len(saved)  # the output gradients follow the saved values
    adjoint: dict = {}  # forward step -> operand holding its adjoint so far
    grads: dict = {}  # input index -> operand holding its gradient so far

    def accumulate(table: dict, key, ref, dtype: str) -> None:
        if key in table:
            steps.append(FusedStep("add", "(a + b)", (table[key], ref), dtype, dtype))
            ref = ("v", len(steps) - 1)
        table[key] = ref

    for j, k in enumerate(kernel.outputs):
        accumulate(adjoint, k, ("in", n_in + j), kernel.steps[k].dtype)
    if red is not None:  # a sum's gradient is its output's, broadcast back over the summed dims
        accumulate(adjoint, red.step, ("in", n_in + len(kernel.outputs)), kernel.steps[red.step].dtype)
    for k in range(len(kernel.steps) - 1, -1, -1):
        if k not in adjoint:
            continue
        step = kernel.steps[k]
        for position, rule in enumerate(rules[k]):
            target = step.operands[position]
            if rule is None or target[0] == "lit":
                continue
            template, names = rule
            operands = tuple(adjoint[k] if x == "g" else ("v", k) if x == "y" else step.operands[x] for x in names)
            steps.append(FusedStep(f"d_{step.op}", template, operands, step.compute, step.compute))
            ref = ("v", len(steps) - 1)
            if target[0] == "v":
                accumulate(adjoint, target[1], ref, step.compute)
            else:
                accumulate(grads, target[1], ref, step.compute)
    outputs, written = [], [i for i, w in enumerate(wanted) if w and i in grads]
    for i in written:
        dtype = kernel.inputs[i]
        steps.append(FusedStep("copy", "a", (grads[i],), dtype, dtype))
        outputs.append(len(steps) - 1)
    if not outputs:
        return None
    grad_inputs = tuple(kernel.steps[k].dtype for k in kernel.outputs) + ((red.dtype,) if red is not None else ())
    saved_inputs = tuple(kernel.steps[k].dtype for k in saved)
    return FusedKernel(f"{kernel.name}_backward", kernel.shape, kernel.inputs + saved_inputs + grad_inputs,
                       tuple(steps), tuple(outputs)), written
