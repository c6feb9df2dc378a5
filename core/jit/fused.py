"""``jit::fused``: one node running a fused elementwise chain as a single compiled kernel of its backend.

The fusion pass (:mod:`core.jit.passes.fusion`) puts in each node's attrs the
subgraph it replaces (``graph``), the :class:`~core.codegen.FusedKernel` that
computes it (``kernel``) and the names of the fused ops (``ops``, for printing).

Running the node launches the kernel the backend compiled for it
(:meth:`core.backends.api.Runtime.compile_fused`; compiled on first use and
cached) — unless autograd must see the ops: when grad mode is on and an input
requires grad, or while tracing, the subgraph runs op by op through the
dispatcher, so gradients are exactly those of the unfused program. Fused
kernels thus serve inference and ``no_grad`` code; training runs the original
ops. A kernel that fails to compile, or a layout its backend declines, also
runs the subgraph (compile failures warn once).
"""

from __future__ import annotations

import dataclasses
import warnings

from ..autograd.grad_mode import is_grad_enabled
from .interpreter import Program
from .ir import _fmt_arg
from .ops import JitOp, register
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
    """The callable of one ``jit::fused`` node: the compiled kernel, or the subgraph when autograd must record."""

    def __init__(self, kernel, graph, single: bool):
        self.kernel = kernel
        self.graph = graph
        self.single = single
        self._program = None
        self._launchers: dict = {}  # (device, shape) -> launch function, or None when compiling failed
        self._shapes = tuple(v.shape for v in graph.inputs)  # the inputs' shapes when traced
        # a graph with dynamic shapes (core.compile) runs the node at other sizes: the kernel's shape is then
        # its inputs' broadcast shape, when it was so when traced
        self._resizable = kernel.shape == _broadcast(self._shapes)

    def __call__(self, *inputs):
        if is_tracing() or (is_grad_enabled() and any(t.requires_grad for t in inputs)):
            return self.run_unfused(inputs)
        dev = inputs[0].device
        shape = self.kernel.shape
        if any(t._shape != s for t, s in zip(inputs, self._shapes)):
            if not self._resizable:
                return self.run_unfused(inputs)
            shape = _broadcast(tuple(t._shape for t in inputs))
        launch = self._launchers.get((dev, shape), False)
        if launch is False:
            if len(self._launchers) >= _MAX_LAUNCHERS:
                self._launchers.clear()
            launch = self._launchers[(dev, shape)] = self._compile(dev, shape)
        outs = launch(inputs) if launch is not None else None
        if outs is None:
            return self.run_unfused(inputs)
        STATS["kernel"] += 1
        return outs[0] if self.single else tuple(outs)

    def run_unfused(self, inputs):
        """The node's outputs computed by the original ops, through the dispatcher."""
        if self._program is None:
            self._program = Program(self.graph)
        STATS["unfused"] += 1
        outs = self._program.run(list(inputs), {})
        return outs[0] if self.single else outs

    def _compile(self, dev, shape: tuple):
        from ..plugins.manager import runtime_for

        kernel = self.kernel if shape == self.kernel.shape else dataclasses.replace(self.kernel, shape=shape)
        try:
            return runtime_for(dev.type).compile_fused(kernel, dev)
        except Exception as exc:  # a compiler missing or failing must not break the program: run the ops
            warnings.warn(f"jit::fused: could not compile {self.kernel.name} for {dev} ({type(exc).__name__}: "
                          f"{exc}); running its {len(self.kernel.steps)} ops unfused", RuntimeWarning, stacklevel=3)
            return None


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
