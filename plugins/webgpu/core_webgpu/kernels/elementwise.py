"""Elementwise kernels (unary, binary, comparisons, where, clamp, relu, gelu) rendered by the WGSL dialect of core's
C-style renderer over strided, broadcast operands: one pipeline per (op, dtypes, rank bucket)."""

from __future__ import annotations

import numpy as np

from core.backends.api import TensorSpec, broadcast_strides, coalesce, get_operator, padded, rank_bucket
from core.codegen import BINARY_EXPRESSIONS, UNARY_EXPRESSIONS

from ..renderer import PACKED, RENDERER
from ._common import RUNTIME, is_tensor, launch, new_tensor, numel, wgsl_type

__all__ = ["kernels", "run_elementwise", "fresh", "like", "supported", "stored", "compute_name", "UNARY", "BINARY"]

_PI = "{c:3.141592653589793}"
# integer divisions only (a zero divisor raises first): WGSL's truncating / and %, floored where PyTorch floors
_DIVISIONS = {"floor_divide": "{s:b == -1;-a;a / b - {c:a % b != 0 && ((a < 0) != (b < 0))}}",
              "remainder": "{s:a % b != 0 && ((a % b < 0) != (b < 0));a % b + b;a % b}", "fmod": "(a % b)"}
_FINITE = "!(core_isinf(f32(a)) || {nan:a})"
# beyond core.codegen's tables: what WGSL spells with the markers and this dialect's helpers
UNARY = {**UNARY_EXPRESSIONS, "isnan": "{nan:a}", "isinf": "core_isinf(f32(a))", "isfinite": _FINITE,
         "signbit": "(bitcast<u32>(f32(a)) >= 0x80000000u)", "logical_not": "(a == 0)", "bitwise_not": "(~a)",
         "frac": "(a - trunc(a))", "deg2rad": f"(a * ({_PI} / {{c:180}}))", "rad2deg": f"(a * ({{c:180}} / {_PI}))",
         "sgn": UNARY_EXPRESSIONS["sign"], "isposinf": "(core_isinf(f32(a)) && a > 0)",
         "isneginf": "(core_isinf(f32(a)) && a < 0)", "conj": "a"}
BINARY = {**BINARY_EXPRESSIONS, "copysign": "core_copysign(a, b)", "xlogy": "{s:a == 0 && !{nan:b};{c:0};a * log(b)}",
          "fmax": "{s:{nan:a};b;{s:{nan:b};a;max(a, b)}}", "fmin": "{s:{nan:a};b;{s:{nan:b};a;min(a, b)}}",
          "div_trunc": "trunc(a / b)", "hypot": "core_hypot(a, b)", "logaddexp": "core_logaddexp(a, b)",
          **_DIVISIONS}
# integer ops beyond those the shared renderer supports for integers
_INTEGER_OK = {"sgn", "pow", "logical_not", "conj", "bitwise_not", "where", "copy", "clamp_both", "clamp_min",
               "clamp_max"}
_INTEGRAL_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"}
# integer spellings where the float one does not apply (a bool's ~ is logical not)
_INTEGER_TEMPLATES = {"isnan": "false", "isinf": "false", "isfinite": "true", "signbit": "(a < 0)",
                      "isposinf": "false", "isneginf": "false",
                      **dict.fromkeys(("floor", "ceil", "trunc", "round"), "a")}
_TANH = "tanh((x + x * x * x * {c:0.044715}) * {c:0.7978845608028654})"  # PyTorch's tanh approximation, over x
_GELU = {"none": "(a * {c:0.5} * ({c:1} + core_erf(a * {c:0.7071067811865476})))",
         "tanh": "(a * {c:0.5} * ({c:1} + " + _TANH.replace("x", "a") + "))"}
_GELU_BACKWARD = {  # a: grad, b: input
    "none": "(a * (({c:1} + core_erf(b * {c:0.7071067811865476})) * {c:0.5} + b * exp(b * b * {c:-0.5}) * "
            "{c:0.3989422804014327}))",
    "tanh": ("(a * (({c:1} + T) * {c:0.5} + b * {c:0.5} * ({c:1} - T * T) * ({c:0.7978845608028654} * "
             "({c:1} + b * b * {c:0.134145}))))").replace("T", _TANH.replace("x", "b"))}
_LOW = "{s:a < b || {nan:b};b;a}"  # max(a, bound) with a NaN bound propagating, as NumPy's maximum
_CLAMP = {"both": "{s:{nan:a};a;{s:" + _LOW + " > c || {nan:c};c;" + _LOW + "}}", "min": "{s:{nan:a};a;" + _LOW + "}",
          "max": "{s:{nan:a};a;{s:a > b || {nan:b};b;a}}"}


def compute_name(dtype) -> str:
    """The dtype a kernel computes ``dtype`` in (float16 in float32, as PyTorch's half kernels do)."""
    return "float32" if dtype.name == "float16" else dtype.name


def stored(name: str) -> bool:
    """Whether tensors of dtype ``name`` live in this device's buffers in a form the kernels read and write."""
    return name in PACKED or wgsl_type(name) is not None


def supported(*xs) -> bool:
    """Whether every tensor among ``xs`` (numbers pass) has a dtype the kernels handle and a 32-bit element count."""
    return all(stored(x.dtype.name) and x._storage.nbytes < 2**31 for x in xs if is_tensor(x))


def writes_whole_words(out) -> bool:
    """Whether a kernel may write ``out`` (of a PACKED dtype: several elements a word) word by word: contiguous
    from a word boundary, and its last word holds no element of another tensor."""
    n, per = numel(out._shape), PACKED.get(out.dtype.name, 1)
    return (per == 1 or out.is_contiguous() and out._offset % per == 0
            and (n % per == 0 or (out._offset + n) * out.dtype.itemsize >= out._storage.nbytes))


def scalar_buffer(value, dtype: str):
    """A device buffer holding the number ``value`` as one element of ``dtype`` (cached by its bytes)."""
    data = np.array([value]).astype(np.dtype(dtype)).tobytes()
    words = np.frombuffer(data.ljust(-(-len(data) // 4) * 4, b"\0"), np.int32)
    return RUNTIME.slot._param_buffer(tuple(words.tolist()))


def _renders(op: str, compute: str) -> bool:
    if compute == "float32":
        return op not in _INTEGRAL_ONLY and op not in _DIVISIONS
    return op in _INTEGER_OK or RENDERER.supports(op, "int32") or op in _INTEGER_TEMPLATES \
        or op in _DIVISIONS and compute != "bool"


def _template(op: str, template: str, compute: str) -> str:
    if compute != "float32":
        template = _INTEGER_TEMPLATES.get(op, template)
        if op == "bitwise_not" and compute == "bool":
            template = "(a == 0)"
    return template


def run_elementwise(op: str, template: str, out, operands: list, compute: str):
    """``out[...] = template(operands)`` over broadcast, strided operands (tensors on out's device or numbers),
    computed in dtype ``compute``; NotImplemented where out is a byte view not written in whole words."""
    shape = out._shape
    n = numel(shape)
    if n == 0:
        return out
    if not writes_whole_words(out):
        return NotImplemented
    buffers, dtypes, strides, offsets = [], [], [], []
    for x in operands:  # a number: a one-element buffer in the compute dtype, broadcast with stride 0
        tensor = is_tensor(x)
        buffers.append(x if tensor else scalar_buffer(x, compute))
        dtypes.append(x.dtype.name if tensor else compute)
        strides.append(broadcast_strides(x._shape, x._stride, shape) if tensor else (0,) * len(shape))
        offsets.append(x._offset if tensor else 0)
    dims, stride_lists = coalesce(shape, [out._stride] + strides)
    rank = rank_bucket(len(dims))
    in_dtypes, out_dtype = tuple(dtypes), out.dtype.name
    template = _template(op, template, compute)
    params = [n, *padded(dims, rank, 1), *padded(stride_lists[0], rank, 0), out._offset]
    for st, off in zip(stride_lists[1:], offsets):
        params += [*padded(st, rank, 0), off]
    launch(("ew", op, template, in_dtypes, out_dtype, compute, rank),
           lambda: RENDERER.render_elementwise(op, in_dtypes, out_dtype, rank, compute, template).source,
           [out], buffers, params, -(-n // PACKED.get(out_dtype, 1)))
    return out


def fresh(spec, op: str, template: str, operands: list, compute: str | None = None):
    """A fresh ``spec`` tensor holding ``template(operands)``, or NotImplemented where the kernels do not cover it."""
    compute = compute or compute_name(spec.compute_dtype)
    if not (supported(*operands) and stored(spec.dtype.name) and stored(compute) and _renders(op, compute)
            and len(spec.shape) <= 8 and numel(spec.shape) < 2**31):
        return NotImplemented
    return run_elementwise(op, template, new_tensor(spec.shape, spec.dtype, spec.device), operands, compute)


def _kernel(op: str, table: dict):
    template = table[op]

    def kernel(spec, *operands):
        if op in _DIVISIONS and _renders(op, compute_name(spec.compute_dtype)) and any(
                bool((b == 0).any()) if is_tensor(b) else b == 0 for b in operands[1:]):
            raise RuntimeError("ZeroDivisionError")
        return fresh(spec, op, template, list(operands))

    return kernel


def _add_kernel(op: str):
    def kernel(spec, a, b, alpha=1):
        if alpha != 1:  # b * alpha first, in the compute dtype (as the reference does)
            if spec.compute_dtype.name == "bool":
                return NotImplemented
            b = b * alpha if not is_tensor(b) else fresh(TensorSpec(b._shape, spec.compute_dtype, spec.device),
                                                          "mul", BINARY["mul"], [b, alpha])
            if b is NotImplemented:
                return b
        return fresh(spec, op, BINARY[op], [a, b])

    return kernel


def where(spec, condition, input, other):
    return fresh(spec, "where", "{s:a != 0;b;c}", [condition, input, other])


def clamp(spec, input, min=None, max=None):  # noqa: A002 - PyTorch's names
    bounds = [x for x in (min, max) if x is not None]
    which = "both" if len(bounds) == 2 else "min" if min is not None else "max"
    return fresh(spec, f"clamp_{which}", _CLAMP[which], [input, *bounds])


def like(x) -> TensorSpec:
    """The spec of an output like tensor ``x`` (for the spec-less activation kernels)."""
    return TensorSpec(x._shape, x.dtype, x.device)


def relu(input):
    if input.dtype.name == "bool":
        return NotImplemented
    return fresh(like(input), "relu", UNARY["relu"], [input])


def gelu(input, approximate="none"):
    if approximate not in _GELU or not input.dtype.is_floating_point:
        return NotImplemented
    return fresh(like(input), f"gelu_{approximate}", _GELU[approximate], [input])


def gelu_backward(grad, input, approximate="none"):
    if (approximate not in _GELU or not input.dtype.is_floating_point or grad.dtype is not input.dtype
            or grad._shape != input._shape):
        return NotImplemented
    return fresh(like(input), f"gelu_backward_{approximate}", _GELU_BACKWARD[approximate], [grad, input])


def _defined(name: str) -> bool:
    try:
        get_operator(name)
    except KeyError:
        return False
    return True


def kernels(runtime) -> dict:
    """The elementwise family: op name -> kernel."""
    table = {name: _kernel(name, UNARY) for name in UNARY if _defined(name) and name != "relu"}
    table |= {name: _kernel(name, BINARY) for name in BINARY if _defined(name) and name not in (
        "add", "sub", "tanh_backward", "sigmoid_backward")}
    return table | dict(add=_add_kernel("add"), sub=_add_kernel("sub"), where=where, clamp=clamp, relu=relu,
                        gelu=gelu, gelu_backward=gelu_backward)

