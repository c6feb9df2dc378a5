"""``core.onnx.export``: a traced program as an ONNX model built with the ``onnx`` package.

The program is traced (or its raw graph taken, when already traced) in eval mode, cleaned by the passes that
keep dispatcher ops (functionalize, simplify, constant_fold, cse, dce — never fusion), and each node is turned
into ONNX nodes by a converter registered for its op in :data:`CONVERTERS`. Shapes are static: every value
has the shape it was traced with, so reshapes, expands and slices use constant shape initializers.
Parameters, buffers and captured constants become initializers named as in the graph.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import itertools
import math
import numbers

import numpy as np

from .. import __version__
from .. import dtypes as dt
from ..jit.ir import ALLOCATION_OPS, Value
from ..nn.modules.module import Module
from ..utils.atomic import atomic_write, is_path
from ._custom import custom_symbolic, run_symbolic
from ._dynamic import Symbols, as_axes

__all__ = ["export", "CONVERTERS", "OnnxExporterError", "UnsupportedOperatorError", "MIN_OPSET", "EXPORT_PASSES",
           "TrainingMode", "is_in_onnx_export", "producer_name", "producer_version", "select_model_mode_for_export"]

MIN_OPSET = 13  # ReduceSum's axes input and single-axis Softmax
EXPORT_PASSES = ("functionalize", "simplify", "constant_fold", "cse", "dce")
CONVERTERS: dict = {}  # op name -> function(builder, node, *args, **kwargs) -> ONNX name of the node's output
_SIGNATURES: dict = {}


producer_name = "core"  # written into every exported ModelProto (torch.onnx.producer_name)
producer_version = __version__
_EXPORTING = [0]  # how many exports are running


def is_in_onnx_export() -> bool:
    """Whether a :func:`export` is running (``torch.onnx.is_in_onnx_export``): a model can ask while it is traced."""
    return _EXPORTING[0] > 0


class TrainingMode(enum.IntEnum):
    """The mode a Module is exported in (``torch.onnx.TrainingMode``): EVAL (the default), PRESERVE (as it is) or
    TRAINING."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OnnxExporterError(RuntimeError):
    """The program cannot be written as ONNX (bad arguments, a construct ONNX cannot express)."""


class UnsupportedOperatorError(OnnxExporterError):
    """The graph calls an op that has no ONNX converter."""


def _onnx():
    try:
        import onnx
    except ImportError as exc:
        raise ImportError("core.onnx.export() needs the 'onnx' package: the extra core[onnx] "
                          "(from a checkout: pip install -e '.[onnx]')") from exc
    return onnx


# -- the builder ------------------------------------------------------------------------------------------------
class _Builder:
    """Accumulates ONNX nodes and initializers while the graph's nodes are converted in order."""

    def __init__(self, onnx, opset: int):
        self.onnx, self.opset = onnx, opset
        self.names: dict = {}  # Value -> ONNX name
        self.nodes: list = []
        self.initializers: list = []
        self.taken: set = set()
        self.count = itertools.count()
        self.uses: dict = {}  # Value -> how many nodes (and outputs) use it
        self.sym = Symbols(self, OnnxExporterError)  # dynamic axes

    def fresh(self, hint: str) -> str:
        name = f"{hint}_{next(self.count)}"
        while name in self.taken:
            name = f"{hint}_{next(self.count)}"
        self.taken.add(name)
        return name

    def emit(self, op_type: str, inputs: list, output: str | None = None, **attrs) -> str:
        """Append an ONNX node with one output (named ``output``, else a fresh name); that output's name."""
        return self.emit_n(op_type, inputs, 1, [output or self.fresh(op_type)], **attrs)[0]

    def emit_n(self, op_type: str, inputs: list, count: int, outputs: list | None = None, **attrs) -> list:
        """Append an ONNX node with ``count`` outputs (fresh names unless given); the outputs' names."""
        outputs = outputs or [self.fresh(op_type) for _ in range(count)]
        self.nodes.append(self.onnx.helper.make_node(op_type, inputs, outputs, name=self.fresh(f"n_{op_type}"),
                                                     **attrs))
        return outputs

    def need(self, opset: int, what: str) -> None:
        """Raise :class:`OnnxExporterError` unless the export's opset is at least ``opset``."""
        if self.opset < opset:
            raise OnnxExporterError(f"core.onnx.export(): {what} needs opset_version >= {opset}, got {self.opset}")

    def array(self, array: np.ndarray, name: str | None = None) -> str:
        """An initializer holding ``array``."""
        if name is None:
            name = self.fresh("const")
        array = np.asarray(array)  # np.ascontiguousarray would make a 0-d array 1-d
        self.initializers.append(self.onnx.numpy_helper.from_array(array.copy(order="C"), name))
        return name

    def ints(self, values) -> str:
        return self.array(np.asarray(list(values), dtype=np.int64))

    def scalar(self, value, dtype: dt.dtype) -> str:
        return self.array(np.asarray(value, dtype=dtype.numpy))

    def value(self, v: Value, dtype: dt.dtype | None = None) -> str:
        """The ONNX name of ``v``, cast to ``dtype`` when given and different."""
        name = self.names[v]
        return name if dtype is None or dtype is v.dtype else self.cast(name, dtype)

    def cast(self, name: str, dtype: dt.dtype) -> str:
        return self.emit("Cast", [name], to=_onnx_type(dtype))

    def operand(self, x, dtype: dt.dtype, op: str) -> str:
        """A tensor argument (cast to ``dtype``) or a Python number (a typed scalar initializer)."""
        if isinstance(x, Value):
            return self.value(x, dtype)
        if isinstance(x, numbers.Number) and not isinstance(x, complex):
            return self.scalar(x, dtype)
        raise OnnxExporterError(f"core.onnx.export(): op '{op}' has an operand of type {type(x).__name__}; "
                                f"expected a tensor or a real number")

    def reduce(self, op_type: str, x: str, axes, keepdim: bool, axes_input_from: int) -> str:
        """A Reduce* node over ``axes``: axes as an input from ``axes_input_from`` on, an attribute before."""
        if self.opset >= axes_input_from:
            return self.emit(op_type, [x, self.ints(axes)], keepdims=int(keepdim))
        return self.emit(op_type, [x], axes=list(axes), keepdims=int(keepdim))

    def convert(self, index: int, node) -> None:
        custom = custom_symbolic(node.op, self.opset)
        if custom is not None:
            self.sym.propagate(node)
            return self._bind(node, run_symbolic(self, custom, node))
        fn = CONVERTERS[node.op]
        try:
            _SIGNATURES[node.op].bind(self, node, *node.args, **node.kwargs)
        except TypeError as exc:
            raise OnnxExporterError(f"core.onnx.export(): op '{node.op}' (node {index}) was called with arguments "
                                    f"its converter does not take: {exc}") from None
        self.sym.propagate(node)
        self._bind(node, fn(self, node, *node.args, **node.kwargs))

    def _bind(self, node, result) -> None:
        """Name ``node``'s outputs by what its converter returned (a name, or one per output)."""
        result = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(result) < len(node.outputs) or not all(isinstance(r, str) for r in result):
            raise OnnxExporterError(f"core.onnx.export(): the converter of op '{node.op}' returned {result!r}; "
                                    f"expected {len(node.outputs)} ONNX value name(s)")
        for v, name in zip(node.outputs, result):
            self.names[v] = name


_ONNX_TYPES = {"float16": "FLOAT16", "bfloat16": "BFLOAT16", "float32": "FLOAT", "float64": "DOUBLE",
               "int8": "INT8", "uint8": "UINT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
               "bool": "BOOL", "complex64": "COMPLEX64"}


def _onnx_type(dtype: dt.dtype) -> int:
    """The ``onnx.TensorProto`` element type of a core dtype."""
    name = _ONNX_TYPES.get(dtype.name)
    if name is None:
        raise OnnxExporterError(f"core.onnx.export(): dtype {dtype.name} has no ONNX element type")
    return getattr(_onnx().TensorProto, name)


def _check_supported(nodes: list, opset: int) -> None:
    """Raise :class:`UnsupportedOperatorError` naming the first op without a converter (an allocation's writer
    rather than the allocation) and every other one."""
    unsupported = [(i, n) for i, n in enumerate(nodes)
                   if n.op not in CONVERTERS and custom_symbolic(n.op, opset) is None]
    if not unsupported:
        return
    index, node = next(((i, n) for i, n in unsupported if n.op not in ALLOCATION_OPS), unsupported[0])
    missing = sorted({n.op for _, n in unsupported if n.op not in ALLOCATION_OPS} - {node.op})
    raise UnsupportedOperatorError(
        f"core.onnx.export(): op '{node.op}' (node {index}) has no ONNX converter"
        + (f" (nor do: {', '.join(missing)})" if missing else "")
        + ("; in-place and random ops cannot be exported (export in eval mode, without in-place writes to inputs)"
           if not node.is_pure else "")
        + f". Supported ops: {', '.join(sorted(CONVERTERS))}")


# -- converters -------------------------------------------------------------------------------------------------
def converts(*ops: str):
    """Register the decorated function as the converter of ``ops``."""
    def register(fn):
        for op in ops:
            CONVERTERS[op] = fn
            _SIGNATURES[op] = inspect.signature(fn)
        return fn

    return register


def _out(node) -> Value:
    return node.outputs[0]


def _rank(v: Value) -> int:
    return len(v.shape)


def _wrap(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


_UNARY = {"relu": "Relu", "neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "reciprocal": "Reciprocal", "sigmoid": "Sigmoid", "tanh": "Tanh", "sin": "Sin", "cos": "Cos", "tan": "Tan",
          "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "erf": "Erf",
          "floor": "Floor", "ceil": "Ceil", "round": "Round", "sign": "Sign"}


def _unary(op_type: str):
    def convert(b, node, input):
        return b.emit(op_type, [b.value(input, _out(node).dtype)])

    return convert


for _name, _op_type in _UNARY.items():
    converts(_name)(_unary(_op_type))


@converts("rsqrt")
def _rsqrt(b, node, input):
    return b.emit("Reciprocal", [b.emit("Sqrt", [b.value(input, _out(node).dtype)])])


@converts("square")
def _square(b, node, input):
    x = b.value(input, _out(node).dtype)
    return b.emit("Mul", [x, x])


@converts("logical_not")
def _logical_not(b, node, input):
    return b.cast(b.emit("Not", [b.value(input, dt.bool)]), _out(node).dtype)


@converts("isnan")
def _isnan(b, node, input):
    return b.emit("IsNaN", [b.value(input)])


@converts("isinf")
def _isinf(b, node, input):
    if not input.dtype.is_floating_point:  # integers are never infinite
        return b.emit("ConstantOfShape", [b.sym.shape(input)],
                      value=b.onnx.numpy_helper.from_array(np.zeros(1, dtype=np.bool_), "value"))
    return b.emit("IsInf", [b.value(input)])


_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max", "minimum": "Min"}


def _binary(op_type: str):
    def convert(b, node, input, other, alpha=1):
        d = _out(node).dtype
        y = b.operand(other, d, node.op)
        if alpha != 1:
            y = b.emit("Mul", [y, b.scalar(alpha, d)])
        return b.emit(op_type, [b.operand(input, d, node.op), y])

    return convert


for _name, _op_type in _BINARY.items():
    converts(_name)(_binary(_op_type))


def _common_dtype(a, b) -> dt.dtype:
    """PyTorch's promotion of two operands, tensors (Values) or Python scalars, as far as comparisons need it."""
    values = [x for x in (a, b) if isinstance(x, Value)]
    if len(values) == 2:
        return dt.promote_types(a.dtype, b.dtype)
    scalar = b if values[0] is a else a
    tensor_dtype = values[0].dtype
    if isinstance(scalar, float) and not (tensor_dtype.is_floating_point or tensor_dtype.is_complex):
        return dt.get_default_dtype()
    return tensor_dtype


_COMPARE = {"eq": ("Equal", False), "ne": ("Equal", True), "lt": ("Less", False), "le": ("LessOrEqual", False),
            "gt": ("Greater", False), "ge": ("GreaterOrEqual", False)}


def _compare(op_type: str, negate: bool):
    def convert(b, node, input, other):
        d = _common_dtype(input, other)
        result = b.emit(op_type, [b.operand(input, d, node.op), b.operand(other, d, node.op)])
        return b.emit("Not", [result]) if negate else result

    return convert


for _name, (_op_type, _negate) in _COMPARE.items():
    converts(_name)(_compare(_op_type, _negate))


def _logical(op_type: str):
    def convert(b, node, input, other):
        result = b.emit(op_type, [b.operand(input, dt.bool, node.op), b.operand(other, dt.bool, node.op)])
        return b.cast(result, _out(node).dtype) if _out(node).dtype is not dt.bool else result

    return convert


for _name, _op_type in (("logical_and", "And"), ("logical_or", "Or"), ("logical_xor", "Xor")):
    converts(_name)(_logical(_op_type))


@converts("where")
def _where(b, node, condition, input, other):
    d = _out(node).dtype
    return b.emit("Where", [b.value(condition, dt.bool), b.operand(input, d, node.op), b.operand(other, d, node.op)])


@converts("clamp")
def _clamp(b, node, input, min=None, max=None):  # noqa: A002 - the op's argument names
    d = _out(node).dtype
    x = b.value(input, d)
    if min is not None:
        x = b.emit("Max", [x, b.operand(min, d, node.op)])
    if max is not None:
        x = b.emit("Min", [x, b.operand(max, d, node.op)])
    return x


@converts("softmax", "log_softmax")
def _softmax(b, node, input, dim):
    return b.emit("Softmax" if node.op == "softmax" else "LogSoftmax", [b.value(input, _out(node).dtype)], axis=dim)


# reductions: (ONNX op, the first opset taking axes as an input)
_REDUCE = {"sum": ("ReduceSum", 13), "prod": ("ReduceProd", 18), "amax": ("ReduceMax", 18),
           "amin": ("ReduceMin", 18)}


@converts(*_REDUCE)
def _reduce(b, node, input, dims, keepdim=False, dtype=None):
    x = b.value(input, _out(node).dtype)
    if not dims:  # a 0-d input: nothing to reduce
        return b.emit("Identity", [x])
    op_type, axes_input_from = _REDUCE[node.op]
    return b.reduce(op_type, x, dims, keepdim, axes_input_from)


@converts("any", "all")
def _any_all(b, node, input, dims, keepdim=False, dtype=None):
    x = b.cast(b.value(input, dt.bool), dt.int32)  # Reduce* take bool only from opset 20
    if dims:
        x = b.reduce("ReduceMax" if node.op == "any" else "ReduceMin", x, dims, keepdim, 18)
    result = b.cast(x, dt.bool)
    return result if _out(node).dtype is dt.bool else b.cast(result, _out(node).dtype)


@converts("argmax", "argmin")
def _argmax(b, node, input, dim, keepdim=False):
    x = b.value(input)
    if dim is None:  # over the flattened input
        x, dim = b.emit("Reshape", [x, b.ints([-1])]), 0
    result = b.emit("ArgMax" if node.op == "argmax" else "ArgMin", [x], axis=dim, keepdims=int(keepdim),
                    select_last_index=0)
    return b.emit("Reshape", [result, b.sym.shape(_out(node))])


@converts("batched_matmul")
def _matmul(b, node, input, other):
    d = _out(node).dtype
    return b.emit("MatMul", [b.value(input, d), b.value(other, d)])


@converts("view", "squeeze", "unsqueeze")
def _reshape(b, node, input, *_):
    return b.emit("Reshape", [b.value(input), b.sym.shape(_out(node))])


@converts("transpose")
def _transpose(b, node, input, dim0, dim1):
    n = _rank(input)
    perm = list(range(n))
    if n:
        d0, d1 = _wrap(dim0, n), _wrap(dim1, n)
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return b.emit("Transpose", [b.value(input)], perm=perm)


@converts("permute")
def _permute(b, node, input, dims):
    return b.emit("Transpose", [b.value(input)], perm=[_wrap(d, _rank(input)) for d in dims])


@converts("expand")
def _expand(b, node, input, sizes):
    return b.emit("Expand", [b.value(input), b.sym.shape(_out(node))])


def _slice(b, x: str, axes, starts, ends, steps=None) -> str:
    inputs = [x, b.ints(starts), b.ints(ends), b.ints(axes)] + ([b.ints(steps)] if steps is not None else [])
    return b.emit("Slice", inputs)


def _stop(b, input: Value, dim: int, stop: int) -> int:
    """A slice's stop; one at or past the traced end of a dynamic dim is the end at run time."""
    return _END if b.sym.is_dynamic(input, dim) and stop >= input.shape[dim] else stop


_END = 2 ** 63 - 1


@converts("narrow")
def _narrow(b, node, input, dim, start, length):
    dim = _wrap(dim, _rank(input))
    start = start + input.shape[dim] if start < 0 else start
    return _slice(b, b.value(input), [dim], [start], [_stop(b, input, dim, start + length)])


@converts("slice")
def _slice_op(b, node, input, dim, start, stop, step):
    dim = _wrap(dim, _rank(input))
    return _slice(b, b.value(input), [dim], [start], [_stop(b, input, dim, stop)], [step])


@converts("select")
def _select(b, node, input, dim, index):
    dim = _wrap(dim, _rank(input))
    index = index + input.shape[dim] if index < 0 else index
    return b.emit("Gather", [b.value(input), b.array(np.asarray(index, dtype=np.int64))], axis=dim)


@converts("flip")
def _flip(b, node, input, dims):
    k = len(dims)
    if not k:
        return b.emit("Identity", [b.value(input)])
    return _slice(b, b.value(input), [_wrap(d, _rank(input)) for d in dims], [-1] * k, [-2 ** 63] * k, [-1] * k)


@converts("unfold")
def _unfold(b, node, input, dimension, size, step):
    n = _rank(input)
    if not n:
        return b.emit("Reshape", [b.value(input), b.ints(_out(node).shape)])
    dim = _wrap(dimension, n)
    count = _out(node).shape[dim]
    windows = np.arange(count, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)[None, :]
    gathered = b.emit("Gather", [b.value(input), b.array(windows)], axis=dim)  # (..., count, size, ...)
    perm = list(range(dim + 1)) + list(range(dim + 2, n + 1)) + [dim + 1]
    return b.emit("Transpose", [gathered], perm=perm)


@converts("cat")
def _cat(b, node, tensors, dim=0):
    d = _out(node).dtype
    parts = [b.value(t, d) for t in tensors if isinstance(t, Value) and math.prod(t.shape)]
    if not parts:
        return b.emit("Reshape", [b.value(tensors[0], d), b.sym.shape(_out(node))])
    return b.emit("Concat", parts, axis=_wrap(dim, _rank(_out(node))))


@converts("gather")
def _gather(b, node, input, dim, index):
    return b.emit("GatherElements", [b.value(input), b.value(index, dt.int64)], axis=_wrap(dim, _rank(input)))


@converts("jit::copy")
def _copy(b, node, input, dtype):
    x = b.value(input)
    return b.emit("Identity", [x]) if dtype is input.dtype else b.cast(x, dtype)


@converts("jit::full")
def _full(b, node, shape, value, dtype, device):
    fill = b.onnx.numpy_helper.from_array(np.asarray([value], dtype=dtype.numpy), "value")
    return b.emit("ConstantOfShape", [b.sym.shape(_out(node), shape)], value=fill)


@converts("linear")
def _linear(b, node, input, weight, bias=None):
    d = _out(node).dtype
    x, w = b.value(input, d), b.value(weight, d)
    if _rank(input) == 2 and _rank(weight) == 2:
        return b.emit("Gemm", [x, w] + ([b.value(bias, d)] if bias is not None else []), transB=1)
    if _rank(weight) == 2:
        w = b.emit("Transpose", [w], perm=[1, 0])
    y = b.emit("MatMul", [x, w])
    return y if bias is None else b.emit("Add", [y, b.value(bias, d)])


@converts("convolution")
def _convolution(b, node, input, weight, bias, stride, padding, dilation, groups):
    d = _out(node).dtype
    inputs = [b.value(input, d), b.value(weight, d)] + ([b.value(bias, d)] if bias is not None else [])
    return b.emit("Conv", inputs, kernel_shape=list(weight.shape[2:]), strides=list(stride),
                  pads=list(padding) * 2, dilations=list(dilation), group=int(groups))


def _check_ceil_mode(node, input, kernel, stride, padding, dilation) -> None:
    """ONNX's ceil_mode keeps a last window that starts in the right padding, PyTorch drops it: refuse those."""
    for n, k, s, p, dil, o in zip(input.shape[2:], kernel, stride, padding, dilation, _out(node).shape[2:]):
        if -(-(n + 2 * p - dil * (k - 1) - 1) // s) + 1 != o:
            raise OnnxExporterError(f"core.onnx.export(): {node.op} with ceil_mode=True has a last window that "
                                    f"starts in the padding (input {list(input.shape)}, kernel {list(kernel)}, "
                                    f"stride {list(stride)}, padding {list(padding)}), which ONNX keeps and "
                                    f"PyTorch drops")


@converts("max_pool")
def _max_pool(b, node, input, kernel_size, stride, padding, dilation, ceil_mode):
    if ceil_mode:
        _check_ceil_mode(node, input, kernel_size, stride, padding, dilation)
    return b.emit("MaxPool", [b.value(input)], kernel_shape=list(kernel_size), strides=list(stride),
                  pads=list(padding) * 2, dilations=list(dilation), ceil_mode=int(ceil_mode))


@converts("avg_pool")
def _avg_pool(b, node, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if divisor_override is not None:
        raise OnnxExporterError("core.onnx.export(): avg_pool with divisor_override has no ONNX equivalent")
    if ceil_mode:
        _check_ceil_mode(node, input, kernel_size, stride, padding, (1,) * len(kernel_size))
    return b.emit("AveragePool", [b.value(input)], kernel_shape=list(kernel_size), strides=list(stride),
                  pads=list(padding) * 2, ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad))


@converts("batch_norm")
def _batch_norm(b, node, input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                eps=1e-5):
    if training:
        raise OnnxExporterError("core.onnx.export(): batch_norm in training mode (batch statistics, running "
                                "statistics updated) has no ONNX inference equivalent; export it in eval mode")
    d = _out(node).dtype
    channels = input.shape[1]
    scale = b.value(weight, d) if weight is not None else b.array(np.ones(channels, dtype=d.numpy))
    shift = b.value(bias, d) if bias is not None else b.array(np.zeros(channels, dtype=d.numpy))
    inputs = [b.value(input, d), scale, shift, b.value(running_mean, d), b.value(running_var, d)]
    return b.emit("BatchNormalization", inputs, epsilon=float(eps))


@converts("layer_norm")
def _layer_norm(b, node, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    b.need(17, "layer_norm")
    d = _out(node).dtype
    scale = b.value(weight, d) if weight is not None else b.array(np.ones(normalized_shape, dtype=d.numpy))
    inputs = [b.value(input, d), scale] + ([b.value(bias, d)] if bias is not None else [])
    return b.emit("LayerNormalization", inputs, axis=-len(normalized_shape), epsilon=float(eps))


@converts("gelu")
def _gelu(b, node, input, approximate="none"):
    d = _out(node).dtype
    x = b.value(input, d)
    if b.opset >= 20:
        return b.emit("Gelu", [x], approximate=approximate)
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = b.emit("Mul", [b.emit("Mul", [x, x]), x])
        inner = b.emit("Add", [x, b.emit("Mul", [cube, b.scalar(0.044715, d)])])
        phi = b.emit("Tanh", [b.emit("Mul", [inner, b.scalar(math.sqrt(2.0 / math.pi), d)])])
    else:  # 0.5 x (1 + erf(x / sqrt 2))
        phi = b.emit("Erf", [b.emit("Mul", [x, b.scalar(1.0 / math.sqrt(2.0), d)])])
    half_x = b.emit("Mul", [x, b.scalar(0.5, d)])
    return b.emit("Mul", [half_x, b.emit("Add", [phi, b.scalar(1.0, d)])])


@converts("cross_entropy_loss")
def _cross_entropy_loss(b, node, input, target, weight, reduction, ignore_index):
    """SoftmaxCrossEntropyLoss: (N, C, d...) scores, (N, d...) class indices, an optional (C) weight; 'mean' divides
    by the kept weights' sum, as PyTorch does."""
    d = _out(node).dtype
    inputs = [b.value(input, d), b.value(target, dt.int64)] + ([b.value(weight, d)] if weight is not None else [])
    return b.emit("SoftmaxCrossEntropyLoss", inputs, reduction=reduction, ignore_index=int(ignore_index))


# -- indexing, scans, sorting, scatter ----------------------------------------------------------------------------
def _front(b, input: Value, indices) -> tuple:
    """``input`` with its tensor-indexed dims moved to the front, and those index tensors broadcast and stacked on a
    last dim (GatherND/ScatterND's form): (ONNX names of both, the indexed positions, the broadcast shape)."""
    positions = [i for i, t in enumerate(indices) if t is not None]
    rest = [i for i in range(_rank(input)) if i not in positions]
    x = b.value(input)
    if positions != list(range(len(positions))):
        x = b.emit("Transpose", [x], perm=positions + rest)
    shape = np.broadcast_shapes(*(indices[i].shape for i in positions))
    stacked = [b.emit("Unsqueeze", [b.emit("Expand", [b.value(indices[i], dt.int64), b.ints(shape)]), b.ints([-1])])
               for i in positions]
    return x, b.emit("Concat", stacked, axis=-1), positions, shape


def _result_perm(positions: list, k: int, rank_rest: int) -> list | None:
    """The permutation from (broadcast dims, remaining dims) to PyTorch's order of ``input[indices]``: the broadcast
    dims stay first unless the indexed dims are adjacent and not at the front (None: no transpose)."""
    adjacent = positions[-1] - positions[0] + 1 == len(positions)
    if not adjacent or positions[0] == 0:
        return None
    first = positions[0]
    return list(range(k, k + first)) + list(range(k)) + list(range(k + first, k + rank_rest))


@converts("index")
def _index(b, node, input, indices):
    """``input[indices]`` (None or int64 tensors, one per leading dim): Gather for one tensor, else GatherND over the
    indexed dims moved to the front, with the result's dims put where PyTorch (NumPy) puts them."""
    positions = [i for i, t in enumerate(indices) if t is not None]
    if len(positions) == 1:
        return b.emit("Gather", [b.value(input), b.value(indices[positions[0]], dt.int64)], axis=positions[0])
    x, stacked, positions, shape = _front(b, input, indices)
    result = b.emit("GatherND", [x, stacked])
    perm = _result_perm(positions, len(shape), _rank(input) - len(positions))
    return result if perm is None else b.emit("Transpose", [result], perm=perm)


@converts("index_put_")
def _index_put(b, node, input, indices, values, accumulate=False):
    """``input[indices] = values`` (``+=`` when accumulate): ScatterND on the indexed dims moved to the front, with
    negative indices wrapped and ``values`` broadcast to the indexed shape in that order."""
    _check_fresh(node, b.uses)
    if accumulate:
        b.need(16, "index_put_ with accumulate=True")
    x, stacked, positions, shape = _front(b, input, indices)
    sizes = b.ints([input.shape[i] for i in positions])
    stacked = b.emit("Where", [b.emit("Less", [stacked, b.ints([0])]), b.emit("Add", [stacked, sizes]), stacked])
    rest = [i for i in range(_rank(input)) if i not in positions]
    perm = _result_perm(positions, len(shape), len(rest))
    front_shape = list(shape) + [input.shape[i] for i in rest]
    torch_shape = front_shape if perm is None else [front_shape[p] for p in perm]
    update = b.emit("Expand", [b.value(values, _out(node).dtype), b.ints(torch_shape)])
    if perm is not None:
        update = b.emit("Transpose", [update], perm=[perm.index(j) for j in range(len(perm))])
    attrs = {"reduction": "add"} if accumulate else {}
    result = b.emit("ScatterND", [x, stacked, update], **attrs)
    if positions == list(range(len(positions))):
        return result
    order = positions + rest
    return b.emit("Transpose", [result], perm=[order.index(j) for j in range(len(order))])


@converts("cumsum")
def _cumsum(b, node, input, dim, dtype=None):
    axis = _wrap(dim, _rank(input)) if _rank(input) else 0
    x = b.value(input, _out(node).dtype)
    if not _rank(input):
        return b.emit("Identity", [x])
    return b.emit("CumSum", [x, b.array(np.asarray(axis, dtype=np.int64))])


@converts("sort")
def _sort(b, node, input, dim, descending=False):
    """TopK over the whole dim: ties keep the lower index first (stable), as core's sort does."""
    if not _rank(input):
        x = b.value(input)
        return [b.emit("Identity", [x]), b.emit("ConstantOfShape", [b.ints([])], value=b.onnx.numpy_helper.from_array(
            np.zeros(1, dtype=np.int64), "value"))]
    axis = _wrap(dim, _rank(input))
    return b.emit_n("TopK", [b.value(input), b.sym.dim(input, axis)], 2, axis=axis, largest=int(descending),
                    sorted=1)


_VIEW_OPS = frozenset({"view", "squeeze", "unsqueeze", "transpose", "permute", "expand", "narrow", "slice", "select",
                       "unfold", "alias", "as_strided", "diagonal", "unbind", "split", "chunk", "t", "flatten"})
# scatter_'s reduce -> (ONNX reduction, first opset, identity of the reduction for include_self=False)
_SCATTER = {None: ("none", 13, None), "sum": ("add", 16, 0), "prod": ("mul", 16, 1), "amax": ("max", 18, -math.inf),
            "amin": ("min", 18, math.inf)}


def _check_fresh(node, graph_uses) -> None:
    """An in-place write is exported as a new value when nothing else sees the old one: the written tensor was
    made inside the program (not an input, parameter, constant or view) and this write is its only use."""
    target = node.args[0]
    producer = target.node
    if producer is None or producer.op in _VIEW_OPS or graph_uses.get(target, 0) != 1:
        raise OnnxExporterError(f"core.onnx.export(): op '{node.op}' writes in place into a tensor that is an input, "
                                f"parameter, constant or view, or that is used elsewhere; ONNX has no in-place "
                                f"writes (write into a copy, e.g. x.clone().{node.op.rstrip('_')}_(...))")


@converts("scatter_")
def _scatter(b, node, input, dim, index, src, reduce=None, include_self=True):
    """ScatterElements; include_self=False first writes the reduction's identity where index points."""
    _check_fresh(node, b.uses)
    if reduce not in _SCATTER:
        raise OnnxExporterError(f"core.onnx.export(): scatter_ with reduce={reduce!r} has no ONNX equivalent")
    reduction, opset, identity = _SCATTER[reduce]
    b.need(opset, f"scatter_ with reduce={reduce!r}")
    d, axis = _out(node).dtype, _wrap(dim, _rank(input))
    x, idx = b.value(input), b.value(index, dt.int64)
    source = b.operand(src, d, node.op)
    if not isinstance(src, Value):
        source = b.emit("Expand", [source, b.sym.shape(index)])
    if not include_self and identity is not None:
        if not d.is_floating_point and math.isinf(identity):
            info = np.iinfo(d.numpy)
            identity = info.min if identity < 0 else info.max
        fill = b.emit("Expand", [b.scalar(identity, d), b.sym.shape(index)])
        x = b.emit("ScatterElements", [x, idx, fill], axis=axis)
    attrs = {"reduction": reduction} if reduce is not None else {}  # the attribute exists from opset 16
    return b.emit("ScatterElements", [x, idx, source], axis=axis, **attrs)


# -- export ---------------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def select_model_mode_for_export(model: Module, mode: TrainingMode):
    """A context manager: ``model`` in the mode ``mode`` asks for while the block runs, then back in its own
    (``torch.onnx.select_model_mode_for_export``)."""
    if not isinstance(mode, TrainingMode):
        raise TypeError(f"'mode' should be a core.onnx.TrainingMode enum, but got '{type(mode).__name__}'.")
    was = model.training
    if mode is not TrainingMode.PRESERVE:
        model.train(mode is TrainingMode.TRAINING)
    try:
        yield
    finally:
        model.train(was)


@contextlib.contextmanager
def _exporting():
    _EXPORTING[0] += 1
    try:
        yield
    finally:
        _EXPORTING[0] -= 1


def _program(model, example_inputs, training: TrainingMode = TrainingMode.EVAL) -> tuple:
    """(optimised graph, parameter tensors by name, name) of what is to be exported, traced in ``training``'s
    mode."""
    from ..jit import TracedFunction, TracedModule, trace
    from ..jit.passes import optimize

    if isinstance(model, TracedFunction):
        raw, params, name = model.raw_graph, model._params, model.__name__
    elif isinstance(model, Module):
        with select_model_mode_for_export(model, training):
            traced = model if isinstance(model, TracedModule) else trace(model, example_inputs, optimize=False)
            raw = traced.raw_graph
        params = {**dict(traced.named_parameters()), **dict(traced.named_buffers())}
        name = traced.original_name
    elif callable(model):
        traced = trace(model, example_inputs, optimize=False)
        raw, params, name = traced.raw_graph, traced._params, traced.__name__
    else:
        raise TypeError(f"core.onnx.export(): model must be a Module, a function or a traced program, "
                        f"got {type(model).__name__}")
    return optimize(raw, passes=EXPORT_PASSES), params, name


def _names(given, default: list, what: str) -> list:
    if given is None:
        return default
    names = list(given)
    if len(names) != len(default) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"core.onnx.export(): {what} must be {len(default)} non-empty strings, got {given!r}")
    return names


def _flat_outputs(output) -> list:
    if isinstance(output, Value):
        return [output]
    if isinstance(output, (tuple, list)):
        return [v for x in output for v in _flat_outputs(x)]
    if isinstance(output, dict):
        return [v for x in output.values() for v in _flat_outputs(x)]
    raise OnnxExporterError(f"core.onnx.export(): the program returns {output!r}, which is not a tensor; ONNX "
                            f"models return tensors only")


def _dynamic_axes(spec, values: dict) -> dict:
    """``dynamic_axes`` checked against the input and output names: {name: {axis: dim name}}."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise TypeError(f"core.onnx.export(): dynamic_axes must be a dict, got {type(spec).__name__}")
    unknown = sorted(set(spec) - set(values), key=str)
    if unknown:
        raise ValueError(f"core.onnx.export(): dynamic_axes names {unknown}, which are not input or output names "
                         f"({sorted(values)})")
    return {name: as_axes(axes, name, len(values[name].shape), OnnxExporterError) for name, axes in spec.items()}


def _output_shape(sym: Symbols, v: Value, name: str, axes: dict) -> list:
    """The shape in the graph's type of input or output ``v``: dims named in ``dynamic_axes`` by their names."""
    shape = sym.onnx_shape(v)
    for axis, dim_name in axes.items():
        if not sym.is_dynamic(v, axis):
            raise OnnxExporterError(f"core.onnx.export(): dynamic_axes makes axis {axis} of '{name}' dynamic, but "
                                    f"the trace computes it from no dynamic input axis (a constant size); "
                                    f"only sizes that follow from dynamic input axes can be dynamic")
        shape[axis] = dim_name
    return shape


def export(model, example_inputs, f, opset_version: int = 17, input_names=None, output_names=None,
           dynamic_axes=None, training: TrainingMode = TrainingMode.EVAL):
    """Write ``model`` as an ONNX model to ``f`` (a path or a binary file object); returns the ``ModelProto``.

    ``model`` is a :class:`core.nn.Module` (traced in eval mode, as ``torch.onnx.export`` does by default, or as
    ``training`` says: :class:`TrainingMode`; put back in its mode after), a function, or a traced program from
    :func:`core.jit.trace` (whose eval-mode graph is used; ``example_inputs`` may then be None). Inputs keep their
    traced shapes unless named in ``dynamic_axes``. Parameters and buffers become initializers under their qualified
    names; ``input_names``/``output_names`` name the graph's inputs and (flattened) outputs. ``dynamic_axes``
    (``{name: {axis: dim_name}}`` or ``{name: [axis, ...]}`` for input and output names, as in
    ``torch.onnx.export``) makes those axes symbolic: shapes that depend on them are computed at run time (see
    :mod:`core.onnx._dynamic`; trace with a size for each that no other dim has), and an output axis named there
    that the trace made static raises :class:`OnnxExporterError`. ``opset_version`` is any opset from
    :data:`MIN_OPSET` to the installed onnx's newest; a converter that needs a newer one says so. The model passes
    ``onnx.checker.check_model(full_check=True)`` before it is written. Ops without a converter raise
    :class:`UnsupportedOperatorError`, which names every one.
    """
    onnx = _onnx()
    if not isinstance(opset_version, int) or not MIN_OPSET <= opset_version <= onnx.defs.onnx_opset_version():
        raise ValueError(f"core.onnx.export(): opset_version must be an int in [{MIN_OPSET}, "
                         f"{onnx.defs.onnx_opset_version()}], got {opset_version!r}")
    if not isinstance(training, TrainingMode):
        raise TypeError(f"core.onnx.export(): training must be a core.onnx.TrainingMode, got {training!r}")
    with _exporting():
        graph, params, name = _program(model, example_inputs, training)
    _check_supported(graph.nodes, opset_version)
    b = _Builder(onnx, opset_version)
    b.uses = graph.uses()
    outputs = _flat_outputs(graph.output)
    input_names = _names(input_names, [v.name for v in graph.inputs], "input_names")
    output_names = _names(output_names, [f"output{i}" if len(outputs) > 1 else "output" for i in range(len(outputs))],
                          "output_names")
    reserved = input_names + output_names + list(graph.params) + list(graph.constants)
    if len(set(reserved)) != len(reserved):
        raise ValueError(f"core.onnx.export(): input, output, parameter and constant names must be distinct: "
                         f"{reserved}")
    b.taken.update(reserved)
    for v, n in zip(graph.inputs, input_names):
        b.names[v] = n
    dynamic = _dynamic_axes(dynamic_axes, dict(zip(input_names + output_names, graph.inputs + outputs)))
    for v, n in zip(graph.inputs, input_names):
        b.sym.declare(v, n, dynamic.get(n, {}))
    for qualname, v in graph.params.items():
        b.names[v] = b.array(params[qualname].detach().cpu().numpy(), qualname)
    for cname, (v, t) in graph.constants.items():
        array = t.detach().cpu().numpy()
        b.names[v] = b.sym.fill(v, array) or b.array(array, cname)
    for i, node in enumerate(graph.nodes):
        b.convert(i, node)
    for v, n in zip(outputs, output_names):
        b.emit("Identity", [b.names[v]], n)
    helper = onnx.helper
    info = [helper.make_tensor_value_info(n, _onnx_type(v.dtype), _output_shape(b.sym, v, n, dynamic.get(n, {})))
            for v, n in zip(graph.inputs + outputs, input_names + output_names)]
    proto_graph = helper.make_graph(b.nodes, name, info[:len(input_names)], info[len(input_names):], b.initializers)
    opsets = [helper.make_opsetid("", opset_version)]
    proto = helper.make_model(proto_graph, opset_imports=opsets, producer_name=producer_name,
                              producer_version=producer_version,
                              ir_version=helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(proto, full_check=True)
    if is_path(f):
        with atomic_write(f) as handle:  # a crash mid-export keeps the previous model whole
            handle.write(proto.SerializeToString())  # what save_model writes for a model without external data
    else:
        onnx.save_model(proto, f)
    return proto
