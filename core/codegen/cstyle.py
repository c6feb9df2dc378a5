"""One kernel language, three dialects: a C-style renderer for elementwise kernels over strided inputs.

C, OpenCL C and CUDA C differ in a handful of spellings — how a kernel is
declared, where the element index comes from, the names of types and a few
math functions. :class:`CStyleRenderer` writes everything else once: the loop
body that turns a flat output index into per-input offsets through shapes and
strides (stride 0 = broadcast), so one compiled kernel serves every shape and
layout of a given (op, dtypes, rank). Dialects subclass it (``CRenderer`` here;
the OpenCL and CUDA ones live in their plugins), as in tinygrad's
``renderer/cstyle.py``. The JIT's fusion pass describes a chain of ops as a
:class:`FusedKernel` (steps over several inputs, several outputs, optionally a
closing reduction), which :meth:`CStyleRenderer.render_fused` renders in any
dialect from the same expression tables.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CStyleRenderer", "CRenderer", "ElementwiseKernel", "UNARY_EXPRESSIONS", "BINARY_EXPRESSIONS",
           "expression_for", "FusedStep", "FusedReduction", "FusedKernel"]

# Expressions of the elementwise primitives, over inputs named a, b, c. relu keeps NaN and sign(NaN) is 0, as in
# PyTorch (`a != a` is false for integers, so the same text serves every dtype). `{f}` marks a math function whose name
# the dialect chooses per dtype (expf vs exp in C); everything else is plain C that all three dialects accept.
UNARY_EXPRESSIONS = {
    "neg": "-a", "abs": "({f:fabs}(a))", "exp": "{f:exp}(a)", "exp2": "{f:exp2}(a)", "expm1": "{f:expm1}(a)",
    "log": "{f:log}(a)", "log2": "{f:log2}(a)", "log10": "{f:log10}(a)", "log1p": "{f:log1p}(a)",
    "sqrt": "{f:sqrt}(a)", "rsqrt": "(({T})1 / {f:sqrt}(a))", "sin": "{f:sin}(a)", "cos": "{f:cos}(a)",
    "tan": "{f:tan}(a)", "asin": "{f:asin}(a)", "acos": "{f:acos}(a)", "atan": "{f:atan}(a)",
    "sinh": "{f:sinh}(a)", "cosh": "{f:cosh}(a)", "tanh": "{f:tanh}(a)", "asinh": "{f:asinh}(a)",
    "acosh": "{f:acosh}(a)", "atanh": "{f:atanh}(a)", "sigmoid": "(({T})1 / (({T})1 + {f:exp}(-a)))",
    "erf": "{f:erf}(a)", "erfc": "{f:erfc}(a)", "reciprocal": "(({T})1 / a)", "floor": "{f:floor}(a)",
    "ceil": "{f:ceil}(a)", "trunc": "{f:trunc}(a)", "round": "{f:rint}(a)", "square": "(a * a)",
    "sign": "(({T})((a > 0) - (a < 0)))", "relu": "((a > 0 || a != a) ? a : ({T})0)", "positive": "a",
}
BINARY_EXPRESSIONS = {
    "add": "(a + b)", "sub": "(a - b)", "mul": "(a * b)", "div": "(a / b)", "maximum": "(a > b || a != a ? a : b)",
    "minimum": "(a < b || a != a ? a : b)", "pow": "{f:pow}(a, b)", "atan2": "{f:atan2}(a, b)",
    "eq": "(a == b)", "ne": "(a != b)", "lt": "(a < b)", "le": "(a <= b)", "gt": "(a > b)", "ge": "(a >= b)",
    "logical_and": "(a && b)", "logical_or": "(a || b)", "logical_xor": "(!a != !b)",
    "bitwise_and": "(a & b)", "bitwise_or": "(a | b)", "bitwise_xor": "(a ^ b)",
    "tanh_backward": "(a * (({T})1 - b * b))", "sigmoid_backward": "(a * b * (({T})1 - b))",
}
_INTEGER_SAFE = {"neg", "abs", "square", "sign", "relu", "positive", "add", "sub", "mul", "maximum", "minimum", "eq",
                 "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                 "bitwise_xor"}


def expression_for(op: str) -> str | None:
    """The C expression template of elementwise op ``op`` (None if it has none)."""
    return UNARY_EXPRESSIONS.get(op) or BINARY_EXPRESSIONS.get(op)


@dataclass(frozen=True)
class ElementwiseKernel:
    """A rendered kernel: its name, source, and the dtypes and rank it was rendered for."""

    name: str
    source: str
    in_dtypes: tuple
    out_dtype: str
    ndim: int


@dataclass(frozen=True)
class FusedStep:
    """One value of a fused kernel: ``template`` (an expression over ``a``, ``b``, ``c``) of ``operands``.

    An operand is ``("in", k)`` (input ``k`` at the current element), ``("v", k)`` (the value of step ``k``) or
    ``("lit", x)`` (the Python number ``x``). Operands are converted to ``compute`` before the expression runs in
    it; the result is kept (and written, when it is an output) as ``dtype``.
    """

    op: str
    template: str
    operands: tuple
    dtype: str
    compute: str


@dataclass(frozen=True)
class FusedReduction:
    """``op`` (``sum``, ``amax`` or ``amin``) of step ``step`` over the last ``dims`` dims of the kernel's shape.

    Sums accumulate in ``acc`` (float64 for every float dtype, as cpu_c's row sums do) and are stored as ``dtype``.
    """

    op: str
    step: int
    dims: int
    keepdim: bool
    dtype: str
    acc: str


@dataclass(frozen=True)
class FusedKernel:
    """A fused elementwise chain over ``shape``: what every dialect renders and every backend launches.

    Tensor inputs (dtype names ``inputs``) broadcast to ``shape``; the steps listed in ``outputs`` are written
    to fresh contiguous tensors of ``shape``; a ``reduction`` adds one last output of :attr:`reduced_shape`.
    Rendered sources depend on neither ``shape`` nor the inputs' layouts, which are kernel arguments.
    """

    name: str
    shape: tuple
    inputs: tuple
    steps: tuple
    outputs: tuple
    reduction: FusedReduction | None = None

    @property
    def reduced_shape(self) -> tuple:
        """The shape of the reduction's output."""
        r = self.reduction
        kept = self.shape[:len(self.shape) - r.dims]
        return kept + (1,) * r.dims if r.keepdim else kept

    def output_types(self) -> list:
        """``(shape, dtype name)`` of every output, in order: the elementwise ones, then the reduction's."""
        types = [(self.shape, self.steps[k].dtype) for k in self.outputs]
        if self.reduction is not None:
            types.append((self.reduced_shape, self.reduction.dtype))
        return types


class CStyleRenderer:
    """Renders elementwise kernels; subclasses set the dialect's spellings."""

    dialect = "c-style"
    types = {"float32": "float", "float64": "double", "int8": "signed char", "uint8": "unsigned char",
             "int16": "short", "int32": "int", "int64": "long long", "bool": "unsigned char"}
    index_type = "long long"
    global_qualifier = ""  # OpenCL: "__global "
    kernel_prefix = ""  # OpenCL: "__kernel ", CUDA: 'extern "C" __global__ '
    float_suffix_functions = False  # C: expf for float, exp for double

    def type_name(self, dtype: str) -> str:
        """The dialect's name for a core dtype name."""
        try:
            return self.types[dtype]
        except KeyError:
            raise TypeError(f"{self.dialect} renderer: dtype {dtype} has no C type") from None

    def function(self, name: str, dtype: str) -> str:
        """The dialect's name of math function ``name`` for ``dtype``."""
        if self.float_suffix_functions and dtype == "float32":
            return name + "f"
        return name

    def supports(self, op: str, dtype: str) -> bool:
        """Whether op ``op`` renders for inputs of ``dtype``."""
        if expression_for(op) is None or dtype not in self.types:
            return False
        return dtype in ("float32", "float64") or op in _INTEGER_SAFE

    def expand(self, template: str, compute_dtype: str) -> str:
        """Fill ``{f:name}`` and ``{T}`` in an expression template."""
        out, i = [], 0
        while i < len(template):
            if template.startswith("{f:", i):
                end = template.index("}", i)
                out.append(self.function(template[i + 3:end], compute_dtype))
                i = end + 1
            elif template.startswith("{T}", i):
                out.append(self.type_name(compute_dtype))
                i += 3
            else:
                out.append(template[i])
                i += 1
        return "".join(out)

    # -- dialect hooks ------------------------------------------------------------------------------------
    def signature(self, name: str, params: list) -> str:
        """The kernel declaration line (without the opening brace)."""
        return f"{self.kernel_prefix}void {name}({', '.join(params)})"

    def loop_open(self) -> list:
        """Lines that bind the flat output index ``i`` (a loop in C, the thread id on devices)."""
        raise NotImplementedError

    def loop_close(self) -> list:
        """Lines that close what :meth:`loop_open` opened."""
        raise NotImplementedError

    def preamble(self) -> str:
        """Text before the kernel (includes, pragmas)."""
        return ""

    # -- the shared body ------------------------------------------------------------------------------------
    def render_elementwise(self, op: str, in_dtypes: tuple, out_dtype: str, ndim: int, compute_dtype: str | None = None,
                           expression: str | None = None) -> ElementwiseKernel:
        """A kernel computing ``out[i] = expression(inputs at i)`` over a rank-``ndim`` strided, broadcast layout.

        Arguments, in order: ``n`` (elements), ``shape`` (ndim ints), then per tensor (output first) a pointer
        and its strides in elements (ndim ints) and its offset in elements.
        """
        compute_dtype = compute_dtype or out_dtype
        template = expression or expression_for(op)
        if template is None:
            raise KeyError(f"{self.dialect} renderer: no expression for op '{op}'")
        names = "abc"[:len(in_dtypes)]
        idx = self.index_type
        g = self.global_qualifier
        params = [f"{idx} n", f"{g}const {idx}* shape", f"{g}{self.type_name(out_dtype)}* out",
                  f"{g}const {idx}* out_strides", f"{idx} out_offset"]
        for name, dtype in zip(names, in_dtypes):
            params += [f"{g}const {self.type_name(dtype)}* in_{name}", f"{g}const {idx}* {name}_strides",
                       f"{idx} {name}_offset"]
        kernel_name = f"{op}_{'_'.join(in_dtypes)}_{out_dtype}_{ndim}d".replace("::", "_")
        body = [self.preamble(), self.signature(kernel_name, params) + " {"]
        body += ["    " + line for line in self.loop_open()]
        inner = "        "
        body.append(f"{inner}{idx} rest = i;")
        body.append(f"{inner}{idx} o = out_offset;")
        for name in names:
            body.append(f"{inner}{idx} {name}_at = {name}_offset;")
        for d in range(ndim - 1, -1, -1):  # innermost dim first: peel coordinates off the flat index
            body.append(f"{inner}{{ {idx} coord = rest % shape[{d}]; rest /= shape[{d}];")
            body.append(f"{inner}  o += coord * out_strides[{d}];")
            for name in names:
                body.append(f"{inner}  {name}_at += coord * {name}_strides[{d}];")
            body.append(f"{inner}}}")
        ctype = self.type_name(compute_dtype)
        for name in names:
            body.append(f"{inner}{ctype} {name} = ({ctype})in_{name}[{name}_at];")
        body.append(f"{inner}out[o] = ({self.type_name(out_dtype)})({self.expand(template, compute_dtype)});")
        body += ["    " + line for line in self.loop_close()]
        body.append("}")
        return ElementwiseKernel(kernel_name, "\n".join(line for line in body if line != "") + "\n",
                                 tuple(in_dtypes), out_dtype, ndim)

    # -- fused kernels: a chain of steps over several inputs and outputs, optionally closed by a reduction -------
    infinity = "INFINITY"  # the dialect's constant expressions for +inf and NaN
    not_a_number = "NAN"
    # (initial accumulator, update by element x) of the reductions a fused kernel may end with; NaN propagates
    FUSED_REDUCTIONS = {"sum": (0.0, "acc += x;"), "amax": (float("-inf"), "if (x > acc || x != x) acc = x;"),
                        "amin": (float("inf"), "if (x < acc || x != x) acc = x;")}

    def literal(self, value, dtype: str) -> str:
        """The Python number ``value`` as a C constant of ``dtype`` (inf and NaN spelled for the dialect)."""
        x = float(value)
        if x != x:
            text = self.not_a_number
        elif x in (float("inf"), float("-inf")):
            text = ("-" if x < 0 else "") + self.infinity
        else:
            text = repr(x)  # the shortest text that reads back as the same double
        return f"(({self.type_name(dtype)})({text}))"

    def fused_statements(self, kernel: FusedKernel, inputs: list) -> list:
        """C statements defining ``v0``, ``v1``, … (one per step of ``kernel``); ``inputs[k]`` is the C expression
        of input ``k``'s element. Each step binds its operands to ``a``, ``b``, ``c`` in a block of its own."""
        lines = []
        for k, step in enumerate(kernel.steps):
            ct, vt = self.type_name(step.compute), self.type_name(step.dtype)
            binds = ", ".join(f"{name} = ({ct}){self._fused_operand(operand, inputs, step.compute)}"
                              for name, operand in zip("abc", step.operands))
            expression = self.expand(step.template, step.compute)
            lines.append(f"{vt} v{k}; {{ const {ct} {binds}; v{k} = ({vt})({expression}); }}")
        return lines

    def _fused_operand(self, operand: tuple, inputs: list, compute: str) -> str:
        kind, x = operand
        if kind == "in":
            return f"({inputs[x]})"
        if kind == "v":
            return f"v{x}"
        return self.literal(x, compute)

    def _peel(self, indent: str, var: str, shape: str, rank: int, targets: list) -> list:
        """Lines adding ``coordinate * stride`` to each ``(offset, strides)`` target for flat index ``var``."""
        if rank == 0:
            return []
        idx = self.index_type
        lines = [f"{indent}{{ {idx} rest = {var};"]
        for d in range(rank - 1, -1, -1):  # innermost dim first
            step = f"{idx} c = rest % {shape}[{d}]; rest /= {shape}[{d}];" if d else f"{idx} c = rest;"
            lines.append(f"{indent}  {{ {step} " + " ".join(f"{t} += c * {s}[{d}];" for t, s in targets) + " }")
        lines.append(f"{indent}}}")
        return lines

    def render_fused(self, kernel: FusedKernel, rank: int, red_rank: int = 0, acc: str | None = None) -> tuple:
        """``(name, source)`` of ``kernel`` over strided, broadcast inputs, with flat-index coordinate peeling.

        Without a reduction one index ``i`` runs over the ``n`` elements of the rank-``rank`` shape; arguments:
        ``n, shape``, the outputs (contiguous), then per input its pointer, strides (``rank``) and offset.
        With one, ``i`` runs over the ``n`` rows of the kept rank-``rank`` shape and an inner loop over the ``r``
        elements of the reduced rank-``red_rank`` shape; arguments: ``n, r, shape, red_shape``, the outputs (the
        reduction's last), then per input its pointer, kept strides, reduced strides and offset. ``acc``
        overrides the reduction's accumulator dtype (a device without float64).
        """
        idx, g, red = self.index_type, self.global_qualifier, kernel.reduction
        name = kernel.name + (f"_{rank}k{red_rank}r" if red else f"_{rank}d")
        params = [f"{idx} n"] + ([f"{idx} r"] if red else []) + [f"{g}const {idx}* shape"]
        params += [f"{g}const {idx}* red_shape"] if red else []
        params += [f"{g}{self.type_name(dtype)}* out{m}" for m, (_, dtype) in enumerate(kernel.output_types())]
        for k, dtype in enumerate(kernel.inputs):
            params += [f"{g}const {self.type_name(dtype)}* in{k}", f"{g}const {idx}* in{k}_strides"]
            params += ([f"{g}const {idx}* in{k}_red_strides"] if red else []) + [f"{idx} in{k}_offset"]
        ins = range(len(kernel.inputs))
        ind = "        "
        body = [self.preamble(), self.signature(name, params) + " {"]
        body += ["    " + line for line in self.loop_open()]
        body += [f"{ind}{idx} at{k} = in{k}_offset;" for k in ins]
        body += self._peel(ind, "i", "shape", rank, [(f"at{k}", f"in{k}_strides") for k in ins])
        if red is None:
            body += self._fused_body(ind, kernel, "at", "i")
        else:
            acc = acc or red.acc
            acc_t = self.type_name(acc)
            init, update = self.FUSED_REDUCTIONS[red.op]
            body += [f"{ind}{acc_t} acc = {self.literal(init, acc)};", f"{ind}for ({idx} j = 0; j < r; j++) {{"]
            inner = ind + "    "
            body += [f"{inner}{idx} e{k} = at{k};" for k in ins]
            body += self._peel(inner, "j", "red_shape", red_rank, [(f"e{k}", f"in{k}_red_strides") for k in ins])
            body += self._fused_body(inner, kernel, "e", "i * r + j")
            body += [f"{inner}{{ {acc_t} x = ({acc_t})v{red.step}; {update} }}", f"{ind}}}",
                     f"{ind}out{len(kernel.outputs)}[i] = ({self.type_name(red.dtype)})acc;"]
        body += ["    " + line for line in self.loop_close()]
        body.append("}")
        return name, "\n".join(line for line in body if line != "") + "\n"

    def _fused_body(self, indent: str, kernel: FusedKernel, at: str, out_index: str) -> list:
        """Load each input at offset ``{at}{k}``, compute the steps, store the outputs at ``out_index``."""
        lines = [f"{indent}const {self.type_name(d)} x{k} = in{k}[{at}{k}];" for k, d in enumerate(kernel.inputs)]
        lines += [indent + s for s in self.fused_statements(kernel, [f"x{k}" for k in range(len(kernel.inputs))])]
        lines += [f"{indent}out{m}[{out_index}] = v{k};" for m, k in enumerate(kernel.outputs)]
        return lines


class CRenderer(CStyleRenderer):
    """Plain C99 with an OpenMP loop (parallel only when there is enough work to pay for the threads)."""

    dialect = "c"
    float_suffix_functions = True
    parallel_threshold = 32768

    def preamble(self) -> str:
        return "#include <math.h>"

    def loop_open(self) -> list:
        return [f"#pragma omp parallel for if(n >= {self.parallel_threshold})",
                f"for ({self.index_type} i = 0; i < n; i++) {{"]

    def loop_close(self) -> list:
        return ["}"]
