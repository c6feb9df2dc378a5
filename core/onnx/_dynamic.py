"""Dynamic axes for ``core.onnx.export``: which traced sizes are symbols, and their sizes at run time.

A trace records every shape as numbers. With ``dynamic_axes``, each named input axis becomes a symbol, and
:class:`Symbols` follows it through the graph, node by node, before the node is converted: an output dim
carries symbol ``S`` times a factor ``f`` when its traced size is ``size(S) * f`` and an input of the node
carries ``S`` (the same position from the left, then from the right, then the only dim of that size; reshapes
also let ``S`` land in a merged dim, a multiple of its size; transposes follow their permutation; fills take
a symbol by its exact size). Converters then ask :meth:`Symbols.shape` for a shape tensor: constants for the
static dims, ``Shape``/``Gather``/``Mul`` of the graph input for the symbolic ones.

This matches sizes, so trace with a size for each dynamic axis that no other dim of the program has (e.g. a
batch of 3 when no feature, sequence or head count is 3); an ambiguity that can be seen raises an error.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit.ir import Value

_TRANSPOSES = ("transpose", "permute")
_RESHAPES = ("view", "squeeze", "unsqueeze")


class Symbols:
    """Symbolic dims of the graph's values: ``dims[value] = {axis: (symbol, factor, inner)}``: the dim's size is
    ``size(symbol) * factor``, and ``inner`` of those ``factor`` steps come after each step of the symbol."""

    def __init__(self, builder, error):
        self.b, self.error = builder, error
        self.dims: dict = {}
        self.sizes: dict = {}  # symbol -> traced size
        self.sources: dict = {}  # symbol -> (ONNX input name, axis)
        self.runtime: dict = {}  # symbol -> ONNX name of a 1-element int64 tensor holding its size

    def declare(self, value: Value, onnx_name: str, axes: dict) -> None:
        """Input ``value`` (ONNX name ``onnx_name``) has the symbolic ``axes`` ({axis: symbol name})."""
        for axis, symbol in axes.items():
            size = value.shape[axis]
            if symbol in self.sizes and self.sizes[symbol] != size:
                raise self.error(f"dynamic axis '{symbol}' was traced with sizes {self.sizes[symbol]} and {size}")
            self.sizes[symbol] = size
            self.sources.setdefault(symbol, (onnx_name, axis))
            self.dims.setdefault(value, {})[axis] = (symbol, 1, 1)

    def of(self, value) -> dict:
        return self.dims.get(value, {}) if isinstance(value, Value) else {}

    # -- propagation ---------------------------------------------------------------------------------------------
    def propagate(self, node) -> None:
        """Give ``node``'s outputs the symbols its inputs carry (called before the node is converted)."""
        if not self.sizes:
            return
        if node.op == "jit::full":
            self._fill(node.outputs[0])
            return
        carried = [(v, axis, sym) for v in node.inputs for axis, sym in self.of(v).items()]
        for out in node.outputs:
            if node.op in _TRANSPOSES and len(out.shape) == len(node.args[0].shape):
                self._transpose(node, out)
            elif node.op in _RESHAPES:
                self._reshape(node.args[0], out)
            else:
                self._match(carried, out)

    def _set(self, out: Value, axis: int, sym: tuple) -> None:
        current = self.dims.setdefault(out, {}).get(axis)
        if current is not None and current != sym:
            raise self.error(f"dim {axis} of a value of shape {list(out.shape)} could be dynamic axis "
                             f"'{current[0]}' or '{sym[0]}'; trace with a distinct size for each dynamic axis")
        self.dims[out][axis] = sym

    def _match(self, carried: list, out: Value) -> None:
        shape = out.shape
        for v, axis, (symbol, factor, inner) in carried:
            size = self.sizes[symbol] * factor
            left, right = axis, axis - len(v.shape) + len(shape)
            candidates = [j for j in range(len(shape)) if shape[j] == size]
            if 0 <= left < len(shape) and shape[left] == size:
                self._set(out, left, (symbol, factor, inner))
            elif 0 <= right < len(shape) and shape[right] == size:
                self._set(out, right, (symbol, factor, inner))
            elif len(candidates) == 1:
                self._set(out, candidates[0], (symbol, factor, inner))

    def _transpose(self, node, out: Value) -> None:
        source = node.args[0]
        n = len(source.shape)
        if node.op == "permute":
            perm = [d % n for d in node.args[1]]
        else:
            perm = list(range(n))
            d0, d1 = node.args[1] % n, node.args[2] % n
            perm[d0], perm[d1] = perm[d1], perm[d0]
        for j, axis in enumerate(perm):
            if axis in self.of(source):
                self._set(out, j, self.of(source)[axis])

    def _reshape(self, source: Value, out: Value) -> None:
        """Each symbol lands in the output dim that holds its stride in row-major order (``inner``: how many
        elements of its own dim come after each step of the symbol)."""
        shape = out.shape
        for axis, (symbol, _, inner) in self.of(source).items():
            n = self.sizes[symbol]
            stride = math.prod(source.shape[axis + 1:]) * inner
            for j in range(len(shape)):
                after = math.prod(shape[j + 1:])
                if not after <= stride < after * shape[j] or stride % after:
                    continue
                if shape[j] % (n * (stride // after)) == 0:
                    self._set(out, j, (symbol, shape[j] // n, stride // after))
                break

    def fill(self, value: Value, array: np.ndarray) -> str | None:
        """A constant that is one value repeated (a folded ``zeros(batch, ...)``) over a shape with symbolic
        sizes: ``ConstantOfShape`` of its run-time shape (None when it is not such a constant). Floating-point
        only: integer constants are usually indices, whose length is not a batch."""
        if (not self.sizes or array.dtype.kind != "f" or not array.size or array.ndim == 0
                or not (array == array.flat[0]).all()):
            return None
        self._fill(value)
        if not self.of(value):
            return None
        fill = self.b.onnx.numpy_helper.from_array(array.reshape(-1)[:1].copy(), "value")
        return self.b.emit("ConstantOfShape", [self.shape(value)], value=fill)

    def _fill(self, out: Value) -> None:
        by_size = {}
        for symbol, size in self.sizes.items():
            by_size.setdefault(size, []).append(symbol)
        for j, size in enumerate(out.shape):
            if len(by_size.get(size, ())) == 1:
                self._set(out, j, (by_size[size][0], 1, 1))

    # -- run-time shapes -----------------------------------------------------------------------------------------
    def size(self, symbol: str) -> str:
        """A 1-element int64 tensor holding ``symbol``'s size at run time."""
        if symbol not in self.runtime:
            name, axis = self.sources[symbol]
            shape = self.b.emit("Shape", [name])
            self.runtime[symbol] = self.b.emit("Gather", [shape, self.b.ints([axis])], axis=0)
        return self.runtime[symbol]

    def dim(self, value: Value, axis: int) -> str:
        """A 1-element int64 tensor holding ``value.shape[axis]`` at run time."""
        sym = self.of(value).get(axis)
        if sym is None:
            return self.b.ints([value.shape[axis]])
        size = self.size(sym[0])
        return size if sym[1] == 1 else self.b.emit("Mul", [size, self.b.ints([sym[1]])])

    def shape(self, value: Value, dims=None) -> str:
        """An int64 shape tensor for ``value`` (or for ``dims``, a static list, when the value has no symbols)."""
        if not self.of(value):
            return self.b.ints(value.shape if dims is None else dims)
        return self.b.emit("Concat", [self.dim(value, j) for j in range(len(value.shape))], axis=0)

    def is_dynamic(self, value: Value, axis: int) -> bool:
        return axis in self.of(value)

    def onnx_shape(self, value: Value) -> list:
        """The shape for a graph input's or output's type: symbol names, None for scaled symbols, sizes."""
        dims = self.of(value)
        return [size if j not in dims else dims[j][0] if dims[j][1] == 1 else None
                for j, size in enumerate(value.shape)]


def as_axes(spec, name: str, rank: int, error) -> dict:
    """``dynamic_axes[name]`` ({axis: symbol} or [axis, ...], torch's two forms) as {wrapped axis: symbol}."""
    if isinstance(spec, dict):
        items = list(spec.items())
    elif isinstance(spec, (list, tuple)):
        items = [(axis, f"{name}_dynamic_axes_{i + 1}") for i, axis in enumerate(spec)]
    else:
        raise TypeError(f"core.onnx.export(): dynamic_axes['{name}'] must be a dict or a list of axes, got "
                        f"{type(spec).__name__}")
    axes = {}
    for axis, symbol in items:
        if not isinstance(axis, (int, np.integer)) or not -rank <= axis < rank or not isinstance(symbol, str):
            raise ValueError(f"core.onnx.export(): dynamic_axes['{name}'] has axis {axis!r} -> {symbol!r}; expected "
                             f"an int axis in [{-rank}, {rank}) of a tensor of rank {rank} and a str name")
        axes[int(axis) % rank] = symbol
    return axes
