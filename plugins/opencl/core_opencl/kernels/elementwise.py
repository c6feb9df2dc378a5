"""Elementwise kernels (unary, binary, comparisons, where, clamp) rendered by the OpenCL
dialect of core's C-style renderer; one program per (arity, bool-ness, dtypes, rank) holds a whole op family."""

from __future__ import annotations

import numpy as np

from core.backends.api import broadcast_strides, coalesce
from core.codegen import BINARY_EXPRESSIONS, UNARY_EXPRESSIONS

from .. import special
from ..programs import get_kernel
from ._common import (RENDERER, arithmetic_dtypes_ok, computed_as, is_tensor, launch_1d, new_tensor, numel, padded,
                      rank_bucket, slot_of)

__all__ = ["kernels", "run_elementwise", "UNARY", "BINARY"]

_FLOATS = ("float32", "float64")
_PI = "({T})3.141592653589793"
# expressions beyond core.codegen's tables, and corrections where OpenCL or NumPy semantics need them
UNARY = {**UNARY_EXPRESSIONS,
         "isnan": "isnan(a)", "isinf": "isinf(a)",
         "isfinite": "isfinite(a)", "signbit": "signbit(a)", "logical_not": "(!a)", "bitwise_not": "(~a)",
         "frac": "(a - trunc(a))", "deg2rad": f"(a * ({_PI} / ({{T}})180))", "rad2deg": f"(a * (({{T}})180 / {_PI}))",
         "lgamma": "lgamma(a)", "sinc": f"(a == 0 ? ({{T}})1 : sinpi(a) / ({_PI} * a))",
         "sgn": UNARY_EXPRESSIONS["sign"], "isposinf": "(isinf(a) && a > 0)",
         "isneginf": "(isinf(a) && a < 0)",
         # real dtypes only (opencl declines complex; real/imag are views, not kernels): conj copies, angle is 0 or pi
         "conj": "a", "isreal": "1",
         "angle": f"(a != a ? a : (signbit(a) ? {_PI} : ({{T}})0))",
         **special.FUNCTIONS}
BINARY = {**BINARY_EXPRESSIONS,
          "hypot": "hypot(a, b)", "copysign": "copysign(a, b)", "fmax": "fmax(a, b)", "fmin": "fmin(a, b)",
          "nextafter": "nextafter(a, b)", "fmod": "fmod(a, b)",
          "logaddexp": "(a == b ? a + ({T})0.6931471805599453 : fmax(a, b) + log1p(exp(-fabs(a - b))))",
          "xlogy": "(a == 0 && b == b ? ({T})0 : a * log(b))",
          "logaddexp2": "(a == b ? a + ({T})1 : fmax(a, b) + log1p(exp2(-fabs(a - b))) * ({T})1.4426950408889634)",
          "floor_divide": "core_floor_divide_{T}(a, b)", "div_trunc": "trunc(a / b)",
          "bitwise_left_shift": "((b < 0 || b >= (long)sizeof(a) * 8) ? ({T})0 : ({T})(a << b))",
          "bitwise_right_shift": "((b < 0 || b >= (long)sizeof(a) * 8) ? (a < 0 ? ({T})-1 : ({T})0) : ({T})(a >> b))",
          "remainder": "(fmod(a, b) != 0 && ((fmod(a, b) < 0) != (b < 0)) ? fmod(a, b) + b : fmod(a, b))"}
_INTEGER_OK = {"conj", "isreal", "angle",
               "neg", "abs", "square", "sign", "relu", "positive", "add", "sub", "mul", "maximum", "minimum", "eq",
               "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
               "bitwise_xor", "logical_not", "bitwise_not", "where"}
_BOOL_OUT = {"isreal", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "isnan", "isinf",
             "isfinite", "signbit", "logical_not", "isposinf", "isneginf"}
# integer (not bool) spellings where the float one does not apply; integer division by zero is checked first
_INTEGER_TEMPLATES = {"sgn": UNARY["sign"], "angle": f"(a < 0 ? {_PI} : ({{T}})0)", "isposinf": "0", "isneginf": "0",
                      "floor_divide": "(b == -1 ? -a : a / b - ((a % b != 0) && ((a < 0) != (b < 0))))",
                      "div_trunc": "(b == -1 ? -a : a / b)"}
_DIVISIONS = ("floor_divide", "div_trunc")
_FAMILIES = {1: UNARY, 2: BINARY}


_INTEGRAL_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
                  "bitwise_right_shift"}


def _renders(op: str, compute: str) -> bool:
    if compute in _FLOATS:
        return op not in _INTEGRAL_ONLY
    if compute == "bool":
        return op in _INTEGER_OK or op in ("isposinf", "isneginf", "sgn")
    return op in _INTEGER_OK or op in _INTEGER_TEMPLATES or op in _INTEGRAL_ONLY


def _template(op: str, template: str, compute: str, out_dtype: str) -> str:
    if compute not in _FLOATS and op in _INTEGER_TEMPLATES:
        template = _INTEGER_TEMPLATES[op]
    if op == "bitwise_not" and compute == "bool":
        template = "(!a)"  # ~ on a bool is logical not
    if op == "angle" and compute in ("uint8", "bool"):
        template = "({T})0"  # never negative (and a < 0 would warn at every build)
    return f"(({template}) != 0)" if out_dtype == "bool" else template


def _render(op: str, template: str, in_dtypes: tuple, out_dtype: str, compute: str, rank: int) -> tuple:
    k = RENDERER.render_elementwise(op, in_dtypes, out_dtype, rank, compute_dtype=compute,
                                    expression=_template(op, template, compute, out_dtype))
    if template in special.FUNCTIONS.values():  # the device function it calls, for this program's float type
        return k.name, special.source(op, RENDERER.type_name(compute)) + k.source
    return k.name, k.source


def run_elementwise(op: str, template: str, out, operands: list, compute) -> object:
    """``out[...] = template(operands)`` over broadcast, strided operands (tensors on out's device or numbers)."""
    shape = out._shape
    n = numel(shape)
    if n == 0:
        return out
    slot = slot_of(out)
    buffers, dtypes, strides, offsets = [], [], [], []
    for x in operands:
        if is_tensor(x):
            buffers.append(x._storage.data)
            dtypes.append(x.dtype.name)
            strides.append(broadcast_strides(x._shape, x._stride, shape))
            offsets.append(x._offset)
        else:  # a number: a one-element buffer in the compute dtype, broadcast with stride 0
            buffers.append(slot.scalar_buffer(x, compute.numpy))
            dtypes.append(compute.name)
            strides.append((0,) * len(shape))
            offsets.append(0)
    dims, stride_lists = coalesce(shape, [out._stride] + strides)
    rank = rank_bucket(len(dims))
    in_dtypes, out_dtype, cd = tuple(dtypes), out.dtype.name, compute.name
    family = _FAMILIES.get(len(operands))
    # the whole family of this arity in one program; the special functions (long sources) in programs of their own
    if family is not None and family.get(op) == template and op not in special.FUNCTIONS:
        boolean = op in _BOOL_OUT
        key = ("ew", len(operands), boolean, in_dtypes, out_dtype, cd, rank)

        def render():
            return {name: _render(name, t, in_dtypes, out_dtype, cd, rank) for name, t in family.items()
                    if (name in _BOOL_OUT) == boolean and _renders(name, cd) and name not in special.FUNCTIONS}
    else:
        key = ("ew", op, in_dtypes, out_dtype, cd, rank)

        def render():
            return {op: _render(op, template, in_dtypes, out_dtype, cd, rank)}

    kernel = get_kernel(slot, key, op, render)
    index = slot.index_buffer
    args = [np.int64(n), index(padded(dims, rank, 1)), out._storage.data,
            index(padded(stride_lists[0], rank, 0)), np.int64(out._offset)]
    for buf, st, off in zip(buffers, stride_lists[1:], offsets):
        args += [buf, index(padded(st, rank, 0)), np.int64(off)]
    launch_1d(slot, kernel, n, args)
    return out


def _can_run(op: str, spec, operands) -> bool:
    cd = computed_as(spec.compute_dtype).name
    return (arithmetic_dtypes_ok(*operands) and cd in RENDERER.types and spec.dtype.name in RENDERER.types
            and _renders(op, cd) and len(spec.shape) <= 8)


def _unary_kernel(op: str):
    template = UNARY[op]

    def kernel(spec, input):
        if not _can_run(op, spec, (input,)):
            return NotImplemented
        return run_elementwise(op, template, new_tensor(spec.shape, spec.dtype, spec.device), [input],
                               computed_as(spec.compute_dtype))

    return kernel


def _binary_kernel(op: str):
    template = BINARY[op]

    def kernel(spec, a, b):
        if not _can_run(op, spec, (a, b)):
            return NotImplemented
        if op in _DIVISIONS and spec.compute_dtype.name not in _FLOATS and (
                bool((b == 0).any()) if is_tensor(b) else b == 0):
            raise RuntimeError("ZeroDivisionError")
        return run_elementwise(op, template, new_tensor(spec.shape, spec.dtype, spec.device), [a, b],
                               computed_as(spec.compute_dtype))

    return kernel


def _names(*xs) -> str:
    return ", ".join(x.dtype.name if is_tensor(x) else type(x).__name__ for x in xs)


def _add_kernel(op: str):
    template = BINARY[op]

    def kernel(spec, a, b, alpha=1):
        if not _can_run(op, spec, (a, b)) or (alpha != 1 and spec.compute_dtype.name == "bool"):
            return NotImplemented
        compute = computed_as(spec.compute_dtype)
        if alpha != 1:  # b * alpha first, in the compute dtype (as the reference does)
            b = b * alpha if not is_tensor(b) else run_elementwise(
                "mul", BINARY["mul"], new_tensor(b._shape, compute, spec.device), [b, alpha], compute)
        return run_elementwise(op, template, new_tensor(spec.shape, spec.dtype, spec.device), [a, b], compute)

    return kernel


def where(spec, condition, input, other):
    if not _can_run("where", spec, (condition, input, other)):
        return NotImplemented
    return run_elementwise("where", "(a != 0 ? b : c)", new_tensor(spec.shape, spec.dtype, spec.device),
                           [condition, input, other], computed_as(spec.compute_dtype))


_CLAMP_LOW = "(a < b || b != b ? b : a)"  # a NaN bound propagates, as NumPy's maximum


def clamp(spec, input, min=None, max=None):  # noqa: A002 - PyTorch's names
    if not _can_run("maximum", spec, (input, min, max)):
        return NotImplemented
    out, compute = new_tensor(spec.shape, spec.dtype, spec.device), computed_as(spec.compute_dtype)
    if min is not None and max is not None:
        low = _CLAMP_LOW
        return run_elementwise("clamp", f"(a != a ? a : ({low} > c || c != c ? c : {low}))", out,
                               [input, min, max], compute)
    bound, template = (min, "(a != a ? a : " + _CLAMP_LOW + ")") if min is not None else \
        (max, "(a != a ? a : (a > b || b != b ? b : a))")
    return run_elementwise("clamp_min" if min is not None else "clamp_max", template, out, [input, bound], compute)


def relu(input):
    if input.dtype.name not in RENDERER.types or input.dtype.name == "bool":
        return NotImplemented
    return run_elementwise("relu", UNARY["relu"], new_tensor(input._shape, input.dtype, input.device), [input],
                           computed_as(input.dtype))


def _op_names(table: dict) -> list:
    from core.backends.api import get_operator

    names = []
    for name in table:
        try:
            get_operator(name)
        except KeyError:
            continue
        names.append(name)
    return names


def kernels(runtime) -> dict:
    """The elementwise family: op name -> kernel."""
    table = {name: _unary_kernel(name) for name in _op_names(UNARY) if name != "relu"}
    table.update({name: _binary_kernel(name) for name in _op_names(BINARY)
                  if name not in ("add", "sub", "tanh_backward", "sigmoid_backward")})
    return table | dict(add=_add_kernel("add"), sub=_add_kernel("sub"), where=where, clamp=clamp, relu=relu)
