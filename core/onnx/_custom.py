"""User converters for ``core.onnx.export``: ``register_custom_op_symbolic`` as in ``torch.onnx``.

A symbolic function is called as ``symbolic_fn(g, *args, **kwargs)`` with the node's arguments, tensors given as
the ONNX names of their values, and returns the name of its output (or a tuple, one per output of the op). ``g``
is a :class:`SymbolicGraph`: ``g.op("OpType", *inputs, outputs=1, **attributes)`` appends an ONNX node, with
PyTorch's attribute suffixes (``axis_i``, ``alpha_f``, ``mode_s``, ``value_t``) or plain names.
"""

from __future__ import annotations

import re

import numpy as np

from ..jit.ir import Value
from ..tensor import Tensor

__all__ = ["register_custom_op_symbolic", "unregister_custom_op_symbolic", "SymbolicGraph", "CUSTOM_SYMBOLICS"]

CUSTOM_SYMBOLICS: dict = {}  # op name -> {first opset: symbolic function}
_NAME = re.compile(r"^[A-Za-z_][\w.]*::([A-Za-z_]\w*)$")
_SUFFIX = re.compile(r"^(.+)_(i|f|s|t|is|fs|ss|ts)$")


def _op_name(symbolic_name) -> str:
    match = _NAME.match(symbolic_name) if isinstance(symbolic_name, str) else None
    if match is None:
        raise ValueError(f"core.onnx: symbolic_name must be '<domain>::<op>' (e.g. 'aten::cumprod'), got "
                         f"{symbolic_name!r}")
    return match.group(1)


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn, opset_version: int) -> None:
    """Export op ``<domain>::<op>`` with ``symbolic_fn`` from opset ``opset_version`` on
    (``torch.onnx.register_custom_op_symbolic``); it takes precedence over a built-in converter."""
    op = _op_name(symbolic_name)
    if not callable(symbolic_fn):
        raise TypeError(f"core.onnx.register_custom_op_symbolic(): symbolic_fn must be callable, got "
                        f"{type(symbolic_fn).__name__}")
    if not isinstance(opset_version, int) or isinstance(opset_version, bool) or opset_version < 1:
        raise ValueError(f"core.onnx.register_custom_op_symbolic(): opset_version must be a positive int, got "
                         f"{opset_version!r}")
    CUSTOM_SYMBOLICS.setdefault(op, {})[opset_version] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int) -> None:
    """Remove what :func:`register_custom_op_symbolic` registered for ``symbolic_name`` at ``opset_version``
    (``torch.onnx.unregister_custom_op_symbolic``); nothing registered there is not an error."""
    op = _op_name(symbolic_name)
    CUSTOM_SYMBOLICS.get(op, {}).pop(opset_version, None)
    if not CUSTOM_SYMBOLICS.get(op, True):
        del CUSTOM_SYMBOLICS[op]


def custom_symbolic(op: str, opset: int):
    """The symbolic function registered for ``op`` at the highest opset not above ``opset``, or None."""
    versions = [v for v in CUSTOM_SYMBOLICS.get(op, {}) if v <= opset]
    return CUSTOM_SYMBOLICS[op][max(versions)] if versions else None


class SymbolicGraph:
    """What a symbolic function builds with: ``op`` appends ONNX nodes to the model being exported."""

    def __init__(self, builder):
        self._b = builder

    @property
    def opset(self) -> int:
        return self._b.opset

    def op(self, op_type: str, *inputs, outputs: int = 1, **attributes):
        """Append ONNX node ``op_type`` reading ``inputs`` (value names, or core tensors / arrays as constants);
        its output's name, or a list of ``outputs`` names."""
        names = [self._input(x) for x in inputs]
        attrs = dict(self._attribute(key, value) for key, value in attributes.items())
        result = self._b.emit_n(op_type, names, outputs, **attrs)
        return result[0] if outputs == 1 else result

    def _input(self, x) -> str:
        if isinstance(x, str):
            return x
        if isinstance(x, Tensor):
            return self._b.array(x.detach().cpu().numpy())
        if isinstance(x, np.ndarray):
            return self._b.array(x)
        raise TypeError(f"core.onnx: g.op() inputs are value names, tensors or arrays, got {type(x).__name__}")

    def _attribute(self, key: str, value) -> tuple:
        match = _SUFFIX.match(key)
        if match is None:
            return key, value
        name, kind = match.groups()
        if kind in ("f", "fs"):
            value = [float(v) for v in value] if kind == "fs" else float(value)
        elif kind == "t":
            value = self._b.onnx.numpy_helper.from_array(np.asarray(
                value.detach().cpu().numpy() if isinstance(value, Tensor) else value), name)
        return name, value


def run_symbolic(builder, fn, node):
    """Call ``fn`` for ``node`` with its tensor arguments as ONNX names; the names of its outputs."""
    def name_of(x):
        if isinstance(x, Value):
            return builder.names[x]
        if isinstance(x, (list, tuple)):
            return type(x)(name_of(v) for v in x)
        return x

    args = [name_of(a) for a in node.args]
    kwargs = {k: name_of(v) for k, v in node.kwargs.items()}
    return fn(SymbolicGraph(builder), *args, **kwargs)
