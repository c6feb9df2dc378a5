"""``core.compile`` backends: what turns a captured graph into the callable that runs it.

A backend is a callable ``(graph_module, example_inputs) -> callable``, as PyTorch documents for custom
backends. The built-in names:

* ``"inductor"`` (the default): ``core.jit``'s optimised graph, every pass including fusion into generated
  kernels (with generated backward kernels when autograd records: :mod:`core.jit.fused_backward`);
* ``"aot_eager"``: the functionalized graph (allocations and copies made pure), run op by op;
* ``"eager"``: the graph as captured, run op by op through the dispatcher (for debugging a capture).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # core.jit loads on the first capture, not with ``import core``
    from ..jit.ir import Graph, Value

__all__ = ["GraphModule", "BACKENDS", "lookup_backend", "list_backends", "python_code"]


def _identifier(v: Value) -> str:
    name = v.name if v.name and v.name.isidentifier() else f"v{v.id}"
    return f"self.params[{v.name!r}]" if v.kind == "param" else name


def _render(obj) -> str:
    from ..jit.ir import Value

    if isinstance(obj, Value):
        return _identifier(obj)
    if isinstance(obj, tuple):
        return "(" + ", ".join(_render(x) for x in obj) + ("," if len(obj) == 1 else "") + ")"
    if isinstance(obj, list):
        return "[" + ", ".join(_render(x) for x in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {_render(v)}" for k, v in obj.items()) + "}"
    name = getattr(obj, "name", None)
    return f"core.{name}" if type(obj).__name__ == "dtype" else repr(obj)


def python_code(graph: Graph) -> str:
    """The graph as the text of a Python ``forward`` (``torch.fx.GraphModule.code``), one op call per line."""
    lines = [f"def forward(self, {', '.join(_identifier(v) for v in graph.inputs)}):"]
    for v, _ in graph.constants.values():
        lines.append(f"    {_identifier(v)} = self.constants[{v.name!r}]")
    for node in graph.nodes:
        outs = ", ".join(_identifier(v) for v in node.outputs) or "_"
        parts = [_render(a) for a in node.args] + [f"{k}={_render(v)}" for k, v in node.kwargs.items()]
        lines.append(f"    {outs} = ops.{node.op.replace('::', '_')}({', '.join(parts)})")
    lines.append(f"    return {_render(graph.output)}")
    return "\n".join(lines) + "\n"


class GraphModule:
    """A captured graph as a module-like object (``torch.fx.GraphModule``): ``forward(*inputs)`` runs it op by
    op, ``graph`` prints it, ``code`` is its Python-like text. Parameters are bound by name at every call."""

    def __init__(self, graph: Graph, params, name: str = "GraphModule"):
        self.graph = graph
        self._params = params  # () -> {qualified name: tensor}
        self._program = None
        self._name = name

    @property
    def params(self) -> dict:
        """The parameters and buffers the graph reads, by qualified name, as bound now."""
        return self._params()

    @property
    def constants(self) -> dict:
        """The tensors captured by value, by name."""
        return {name: t for name, (_, t) in self.graph.constants.items()}

    @property
    def code(self) -> str:
        """The graph as Python-like source of ``forward``."""
        return python_code(self.graph)

    def print_readable(self, print_output: bool = True) -> str:
        """Print (and return) :attr:`code` (``torch.fx.GraphModule.print_readable``)."""
        if print_output:
            print(self.code)
        return self.code

    def forward(self, *inputs):
        """Run the graph on ``inputs`` (tensors, in the order of ``graph.inputs``)."""
        if self._program is None:
            from ..jit.interpreter import Program

            self._program = Program(self.graph)
        return self._program.run(inputs, self._params())

    __call__ = forward

    def __repr__(self) -> str:
        return f"{self._name}(\n{self.code})"


def _optimized(passes):
    def backend(gm: GraphModule, example_inputs: list):
        from ..jit.passes import optimize

        return GraphModule(optimize(gm.graph, passes), gm._params, gm._name).forward

    return backend


def _eager(gm: GraphModule, example_inputs: list):
    """Run the captured graph op by op."""
    return gm.forward


# name -> (backend, tags); torch tags eager and aot_eager "debug", which list_backends() leaves out by default
BACKENDS: dict = {
    "inductor": (_optimized(None), ()),
    "aot_eager": (_optimized(("functionalize",)), ("debug",)),
    "eager": (_eager, ("debug",)),
}


def lookup_backend(backend):
    """The backend callable for a name or a callable (``InvalidBackend`` for an unknown name)."""
    from .._dynamo.exc import InvalidBackend

    if callable(backend):
        return backend
    if isinstance(backend, str) and backend in BACKENDS:
        return BACKENDS[backend][0]
    raise InvalidBackend(str(backend))


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """Sorted names of the backends that carry none of ``exclude_tags`` (``torch.compiler.list_backends``)."""
    exclude = set(exclude_tags or ())
    return sorted(name for name, (_, tags) in BACKENDS.items() if not exclude & set(tags))


