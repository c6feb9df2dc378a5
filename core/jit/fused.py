"""``jit::fused``: one node running a fused elementwise chain as a single compiled kernel of its backend.

The fusion pass (:mod:`core.jit.passes.fusion`) puts in each node's attrs the
subgraph it replaces (``graph``), the :class:`~core.codegen.FusedKernel` that
computes it (``kernel``) and the names of the fused ops (``ops``, for printing).

Running the node launches the kernel the backend compiled for it
(:meth:`core.backends.api.Runtime.compile_fused`; compiled on first use and
cached). When grad mode is on and an input requires grad, autograd records
the node as one function whose backward is a generated kernel
(:mod:`core.jit.fused_backward`: the forward saves the group's inputs, the
backward recomputes the chain in registers and differentiates it); a group
with an op that has no derivative rule there runs its ops one by one through
the dispatcher instead, as does everything while tracing. A kernel that
fails to compile, or a layout its backend declines, also runs the subgraph
(compile failures warn once).
"""

from __future__ import annotations

import dataclasses
import warnings

from ..autograd.function import Function
from ..autograd.functional import grad as core_grad
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from .interpreter import Program
from .ir import _fmt_arg
from .ops import JitOp, register
from ..dispatch.capture import launch as capture_launch
from .tracer import is_tracing

__all__ = ["FusedOp", "FusedCall", "STATS"]

_MAX_LAUNCHERS = 16  # launchers kept per fused node (one per device and shape)


def _broadcast(shapes: tuple) -> tuple:
    """The broadcast shape of ``shapes`` (they broadcast: the graph was traced with them or ran its ops)."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, n in enumerate(s, rank - len(s)):
            if n != 1:
                out[i] = n
    return tuple(out)


# How fused nodes ran in this process: "kernel" launches and "unfused" subgraph runs (tests and benchmarks read it).
STATS = {"kernel": 0, "unfused": 0}


class FusedCall:
    """The callable of one ``jit::fused`` node: the compiled kernel (with a generated backward kernel when autograd
    records), or the subgraph op by op."""

    def __init__(self, kernel, graph, single: bool):
        self.kernel = kernel
        self.graph = graph
        self.single = single
        self._program = None
        self._launchers: dict = {}  # (kernel name, device, shape) -> launch function, or None when compiling failed
        # wanted-input flags -> fused_backward.training_kernels(...): (forward, backward, inputs it differentiates,
        # number of saved values), or None when the group has an op without a derivative rule
        self._backwards: dict = {}
        self._shapes = tuple(v.shape for v in graph.inputs)  # the inputs' shapes when traced
        # a graph with dynamic shapes (core.compile) runs the node at other sizes: the kernel's shape is then
        # its inputs' broadcast shape, when it was so when traced
        self._resizable = kernel.shape == _broadcast(self._shapes)

    def __call__(self, *inputs):
        if is_tracing():
            return self.run_unfused(inputs)
        if is_grad_enabled() and any(t.requires_grad for t in inputs):
            return self._train(inputs)
        outs = self.launch(self.kernel, inputs)
        if outs is None:
            return self.run_unfused(inputs)
        return outs[0] if self.single else tuple(outs)

    def shape_of(self, inputs) -> tuple | None:
        """The kernel's shape for ``inputs`` (None: they are not the traced shapes and it cannot be resized)."""
        if all(t._shape == s for t, s in zip(inputs, self._shapes)):
            return self.kernel.shape
        return _broadcast(tuple(t._shape for t in inputs)) if self._resizable else None

    def launch(self, kernel, inputs, shape: tuple | None = None):
        """``kernel``'s outputs on ``inputs`` over ``shape`` (default: the forward's), or None when it cannot run."""
        shape = shape if shape is not None else self.shape_of(inputs)
        if shape is None:
            return None
        dev = inputs[0].device
        key = (kernel.name, dev, shape)
        launch = self._launchers.get(key, False)
        if launch is False:
            if len(self._launchers) >= _MAX_LAUNCHERS:
                self._launchers.clear()
            launch = self._launchers[key] = self._compile(kernel, dev, shape)
        outs = capture_launch(kernel.name, launch, inputs) if launch is not None else None
        if outs is not None:
            STATS["kernel"] += 1
        return outs

    def _train(self, inputs):
        """Autograd records the node: one kernel forward and a generated backward kernel, when the group's ops
        all have derivatives (:mod:`.fused_backward`); else the original ops one by one."""
        wanted = tuple(t.requires_grad for t in inputs)
        entry = self._backwards.get(wanted, False)
        if entry is False:
            from .fused_backward import training_kernels

            entry = self._backwards[wanted] = training_kernels(self.kernel, wanted)
        outs = self.launch(entry[0], inputs) if entry is not None else None
        if outs is None:
            return self.run_unfused(inputs)
        n, n_saved = len(self.kernel.outputs), entry[3]  # elementwise outputs, saved values, the sum's output
        saved = outs[n:n + n_saved]
        return _FusedFunction.apply(self, entry, outs[:n] + outs[n + n_saved:], saved, *inputs)

    def run_unfused(self, inputs):
        """The node's outputs computed by the original ops, through the dispatcher."""
        if self._program is None:
            self._program = Program(self.graph)
        STATS["unfused"] += 1
        outs = self._program.run(list(inputs), {})
        return outs[0] if self.single else outs

    def _compile(self, kernel, dev, shape: tuple):
        from ..plugins.manager import runtime_for

        kernel = kernel if shape == kernel.shape else dataclasses.replace(kernel, shape=shape)
        try:
            return runtime_for(dev.type).compile_fused(kernel, dev)
        except Exception as exc:  # a compiler missing or failing must not break the program: run the ops
            warnings.warn(f"jit::fused: could not compile {kernel.name} for {dev} ({type(exc).__name__}: "
                          f"{exc}); running its {len(kernel.steps)} ops unfused", RuntimeWarning, stacklevel=3)
            return None


class _FusedFunction(Function):
    """A fused group under autograd: it saves the group's inputs and the transcendental values the training forward
    kernel wrote out; backward runs the generated kernel (those, and the output gradients, in; input gradients out)
    and sums each gradient over the dimensions its input was broadcast along. With ``create_graph`` the backward
    runs the original ops, so it is differentiable."""

    @staticmethod
    def forward(ctx, call, entry, outs, saved, *inputs):
        ctx.call, ctx.entry = call, entry  # outs and saved: from the training forward kernel FusedCall launched
        ctx.save_for_backward(*inputs, *saved)
        return outs[0] if call.single else tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        call, (_, kernel, written, n_saved) = ctx.call, ctx.entry
        tensors = ctx.saved_tensors
        inputs, saved = tensors[:len(tensors) - n_saved], list(tensors[len(tensors) - n_saved:])
        shape = call.shape_of(inputs)
        red = call.kernel.reduction
        if red is not None and not red.keepdim and grads[-1] is not None:  # the sum's, its summed dims back
            grads = list(grads[:-1]) + [grads[-1].reshape(shape[:len(shape) - red.dims] + (1,) * red.dims)]
        dtypes = kernel.inputs[len(inputs) + n_saved:]
        grads = [g if g is not None else _zeros(d, inputs[0].device) for g, d in zip(grads, dtypes)]
        create = is_grad_enabled()
        outs = None if create else call.launch(kernel, list(inputs) + saved + [g.contiguous() for g in grads], shape)
        result = [None] * len(inputs)
        if outs is None:  # create_graph=True (or a layout the backend declines): differentiate the original ops
            with enable_grad():
                forward = call.run_unfused(inputs)
                forward = [forward] if call.single else list(forward)
                outs = core_grad(forward, [inputs[i] for i in written], grads, create_graph=create,
                                 allow_unused=True)
        for i, g in zip(written, outs):
            result[i] = _sum_to(g, inputs[i]._shape) if g is not None else None
        return (None, None, None, None, *result)


def _zeros(dtype_name: str, device):
    """A zero that broadcasts to any shape: the gradient of an output that autograd did not reach."""
    from .. import dtypes
    from ..ops.creation import zeros

    return zeros((), dtype=getattr(dtypes, dtype_name), device=device)


def _sum_to(g, shape: tuple):
    """``g`` summed over the dimensions along which a tensor of ``shape`` was broadcast to ``g``'s shape."""
    if g._shape == shape:
        return g
    lead = len(g._shape) - len(shape)
    dims = list(range(lead)) + [lead + d for d, n in enumerate(shape) if n == 1 and g._shape[lead + d] != 1]
    return g.sum(dims, keepdim=True).reshape(shape) if dims else g.reshape(shape)


class FusedOp(JitOp):
    """The ``jit::fused`` op: pure; printed as ``jit::fused[op, op, ...](inputs)``."""

    def __init__(self):
        super().__init__("jit::fused", None, pure=True)

    def callable_for(self, node):
        return FusedCall(node.attrs["kernel"], node.attrs["graph"], len(node.outputs) == 1)

    def profile_name(self, node) -> str:
        """``jit::fused[op, op, ...]``: a launched kernel bypasses the dispatcher, so the interpreter records it."""
        return f"jit::fused[{', '.join(node.attrs['ops'])}]"

    def describe(self, node) -> str:
        return f"jit::fused[{', '.join(node.attrs['ops'])}]({', '.join(_fmt_arg(a) for a in node.args)})"


FUSED = register(FusedOp())
