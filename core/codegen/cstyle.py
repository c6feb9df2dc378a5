"""One kernel language, four dialects: a C-style renderer for elementwise kernels over strided inputs.

C, OpenCL C, CUDA C and WGSL differ in a handful of spellings — how a kernel is
declared and its arguments bound, where the element index comes from, the
names of types and a few math functions, declarations, casts, the ternary,
and how an element is loaded and stored. :class:`CStyleRenderer` writes
everything else once behind those hooks: the loop body that turns a flat output
index into per-input offsets through shapes and strides (stride 0 = broadcast),
so one compiled kernel serves every shape and layout of a given (op, dtypes,
rank), and the expression tables, written in markers each dialect expands.
Dialects subclass it (``CRenderer`` here; OpenCL, CUDA and WGSL in their
plugins), as in tinygrad's ``renderer/cstyle.py``. The JIT's fusion pass
describes a chain of ops as a :class:`FusedKernel` (steps over several inputs,
several outputs, optionally a closing reduction), which
:meth:`CStyleRenderer.render_fused` renders in any dialect from the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CStyleRenderer", "CRenderer", "ElementwiseKernel", "UNARY_EXPRESSIONS", "BINARY_EXPRESSIONS",
           "expression_for", "FusedStep", "FusedReduction", "FusedKernel"]

# Expressions of the elementwise primitives, over inputs named a, b, c, written once for every dialect (C, OpenCL C,
# CUDA C, WGSL) with markers the dialect expands: `{f:name}` a math function (expf vs exp in C), `{T}` the compute
# type, `{c:x}` x cast to it, `{s:cond;t;f}` t where cond else f (C's ternary, WGSL's select), `{nan:x}` whether x
# is NaN (false for integers). relu keeps NaN and sign(NaN) is 0, as in PyTorch. Comparisons give booleans, which
# both languages cast to numbers but WGSL never treats as numbers: operands of && are compared with 0 first.
UNARY_EXPRESSIONS = {
    "neg": "(-a)", "abs": "{f:fabs}(a)", "exp": "{f:exp}(a)", "exp2": "{f:exp2}(a)", "expm1": "{f:expm1}(a)",
    "log": "{f:log}(a)", "log2": "{f:log2}(a)", "log10": "{f:log10}(a)", "log1p": "{f:log1p}(a)",
    "sqrt": "{f:sqrt}(a)", "rsqrt": "({c:1} / {f:sqrt}(a))", "sin": "{f:sin}(a)", "cos": "{f:cos}(a)",
    "tan": "{f:tan}(a)", "asin": "{f:asin}(a)", "acos": "{f:acos}(a)", "atan": "{f:atan}(a)",
    "sinh": "{f:sinh}(a)", "cosh": "{f:cosh}(a)", "tanh": "{f:tanh}(a)", "asinh": "{f:asinh}(a)",
    "acosh": "{f:acosh}(a)", "atanh": "{f:atanh}(a)", "sigmoid": "({c:1} / ({c:1} + {f:exp}(-a)))",
    "erf": "{f:erf}(a)", "erfc": "{f:erfc}(a)", "reciprocal": "({c:1} / a)", "floor": "{f:floor}(a)",
    "ceil": "{f:ceil}(a)", "trunc": "{f:trunc}(a)", "round": "{f:rint}(a)", "square": "(a * a)",
    "sign": "({c:a > 0} - {c:a < 0})", "relu": "{s:a > 0 || {nan:a};a;{c:0}}", "positive": "a",
}
BINARY_EXPRESSIONS = {
    "add": "(a + b)", "sub": "(a - b)", "mul": "(a * b)", "div": "(a / b)", "maximum": "{s:a > b || {nan:a};a;b}",
    "minimum": "{s:a < b || {nan:a};a;b}", "pow": "{f:pow}(a, b)", "atan2": "{f:atan2}(a, b)",
    "eq": "(a == b)", "ne": "(a != b)", "lt": "(a < b)", "le": "(a <= b)", "gt": "(a > b)", "ge": "(a >= b)",
    "logical_and": "(a != 0 && b != 0)", "logical_or": "(a != 0 || b != 0)", "logical_xor": "((a != 0) != (b != 0))",
    "bitwise_and": "(a & b)", "bitwise_or": "(a | b)", "bitwise_xor": "(a ^ b)",
    "tanh_backward": "(a * ({c:1} - b * b))", "sigmoid_backward": "(a * b * ({c:1} - b))",
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


def _split(body: str) -> list:
    """``body`` split at the ``;`` outside nested markers."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(body):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == ";" and depth == 0:
            parts.append(body[start:k])
            start = k + 1
    return parts + [body[start:]]


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
        """Fill the markers of an expression template (see UNARY_EXPRESSIONS) for ``compute_dtype``."""
        out, i = [], 0
        while i < len(template):
            kind = template[i + 1:template.find(":", i + 1)] if template[i] == "{" else None
            if template.startswith("{T}", i):
                out.append(self.type_name(compute_dtype))
                i += 3
            elif kind in ("f", "c", "s", "nan"):
                depth, end = 0, i
                while True:  # the matching brace: markers nest ({c:{f:exp}(a)})
                    depth += {"{": 1, "}": -1}.get(template[end], 0)
                    if depth == 0:
                        break
                    end += 1
                body = template[i + len(kind) + 2:end]
                if kind == "f":
                    out.append(self.function(body, compute_dtype))
                else:
                    parts = [self.expand(part, compute_dtype) for part in _split(body)]
                    out.append(self.cast(self.type_name(compute_dtype), parts[0]) if kind == "c" else
                               self.select(*parts) if kind == "s" else self.is_nan(parts[0], compute_dtype))
                i = end + 1
            else:
                out.append(template[i])
                i += 1
        return "".join(out)

    # -- dialect hooks ------------------------------------------------------------------------------------
    def cast(self, type_name: str, expression: str) -> str:
        """``expression`` converted to the type named ``type_name``."""
        return f"(({type_name})({expression}))"

    def select(self, condition: str, if_true: str, if_false: str) -> str:
        """``if_true`` where ``condition`` holds, else ``if_false``."""
        return f"(({condition}) ? ({if_true}) : ({if_false}))"

    def is_nan(self, expression: str, dtype: str) -> str:
        """Whether ``expression`` (of ``dtype``) is NaN; C compilers keep ``x != x`` without fast-math."""
        return f"(({expression}) != ({expression}))"

    def declare(self, type_name: str, name: str, value: str | None = None, mutable: bool = True) -> str:
        """A statement declaring variable ``name`` (assigned ``value`` when given)."""
        return f"{'' if mutable else 'const '}{type_name} {name}{'' if value is None else ' = ' + value};"

    def load(self, buffer: str, dtype: str, at: str) -> str:
        """Element ``at`` of ``buffer`` (elements of ``dtype``)."""
        return f"{buffer}[{at}]"

    def store(self, buffer: str, dtype: str, at: str, value: str) -> str:
        """The statement writing ``value`` (already of ``dtype``) to element ``at`` of ``buffer``."""
        return f"{buffer}[{at}] = {value};"

    def kernel_open(self, name: str, params: list) -> list:
        """Lines opening kernel ``name`` up to where the flat index ``i`` is bound and below ``n``. ``params`` are
        ``(kind, dtype or rank, name)``: kind ``"n"`` an index scalar, ``"index"`` an array of ``rank`` index values,
        ``"out"``/``"in"`` a buffer of ``dtype`` written/read (arguments in this order)."""
        idx, g = self.index_type, self.global_qualifier
        spelled = {"n": lambda _, n: f"{idx} {n}", "index": lambda _, n: f"{g}const {idx}* {n}",
                   "out": lambda d, n: f"{g}{self.type_name(d)}* {n}",
                   "in": lambda d, n: f"{g}const {self.type_name(d)}* {n}"}
        return [self.preamble(), self.signature(name, [spelled[kind](d, n) for kind, d, n in params]) + " {"] + [
            "    " + line for line in self.loop_open()]

    def kernel_close(self) -> list:
        """Lines closing what :meth:`kernel_open` opened."""
        return ["    " + line for line in self.loop_close()] + ["}"]

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
        params = [("n", None, "n"), ("index", ndim, "shape"), ("out", out_dtype, "out"),
                  ("index", ndim, "out_strides"), ("n", None, "out_offset")]
        for name, dtype in zip(names, in_dtypes):
            params += [("in", dtype, f"in_{name}"), ("index", ndim, f"{name}_strides"), ("n", None, f"{name}_offset")]
        kernel_name = f"{op}_{'_'.join(in_dtypes)}_{out_dtype}_{ndim}d".replace("::", "_")
        body = self.kernel_open(kernel_name, params)
        inner = "        "
        body += [inner + self.declare(idx, "o", "out_offset")]
        body += [inner + self.declare(idx, f"{name}_at", f"{name}_offset") for name in names]
        body += self._peel(inner, "i", "shape", ndim, [("o", "out_strides")] + [(f"{name}_at", f"{name}_strides")
                                                                                 for name in names])
        ctype = self.type_name(compute_dtype)
        for name, dtype in zip(names, in_dtypes):
            element = self.cast(ctype, self.load(f"in_{name}", dtype, f"{name}_at"))
            body.append(inner + self.declare(ctype, name, element,
                                             mutable=False))
        value = self.cast(self.type_name(out_dtype), self.expand(template, compute_dtype))
        body.append(inner + self.store("out", out_dtype, "o", value))
        body += self.kernel_close()
        return ElementwiseKernel(kernel_name, "\n".join(line for line in body if line != "") + "\n",
                                 tuple(in_dtypes), out_dtype, ndim)

    # -- fused kernels: a chain of steps over several inputs and outputs, optionally closed by a reduction -------
    infinity = "INFINITY"  # the dialect's constant expressions for +inf and NaN
    not_a_number = "NAN"
    # (initial accumulator, update by element x) of the reductions a fused kernel may end with; NaN propagates
    FUSED_REDUCTIONS = {"sum": (0.0, "acc += x;"), "amax": (float("-inf"), "if (x > acc || {nan:x}) { acc = x; }"),
                        "amin": (float("inf"), "if (x < acc || {nan:x}) { acc = x; }")}

    def literal(self, value, dtype: str) -> str:
        """The Python number ``value`` as a C constant of ``dtype`` (inf and NaN spelled for the dialect)."""
        x = float(value)
        if x != x:
            text = self.not_a_number
        elif x in (float("inf"), float("-inf")):
            text = ("-" if x < 0 else "") + self.infinity
        else:
            text = repr(x)  # the shortest text that reads back as the same double
        return self.cast(self.type_name(dtype), text)

    def fused_statements(self, kernel: FusedKernel, inputs: list) -> list:
        """C statements defining ``v0``, ``v1``, … (one per step of ``kernel``); ``inputs[k]`` is the C expression
        of input ``k``'s element. Each step binds its operands to ``a``, ``b``, ``c`` in a block of its own."""
        lines = []
        for k, step in enumerate(kernel.steps):
            ct, vt = self.type_name(step.compute), self.type_name(step.dtype)
            binds = " ".join(self.declare(ct, name, self.cast(ct, self._fused_operand(operand, inputs, step.compute)),
                                          mutable=False) for name, operand in zip("abc", step.operands))
            expression = self.cast(vt, self.expand(step.template, step.compute))
            lines.append(f"{self.declare(vt, f'v{k}')} {{ {binds} v{k} = {expression}; }}")
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
        lines = [f"{indent}{{ {self.declare(idx, 'rest', var)}"]
        for d in range(rank - 1, -1, -1):  # innermost dim first
            step = (self.declare(idx, "c", f"rest % {shape}[{d}]", mutable=False) + f" rest /= {shape}[{d}];" if d
                    else self.declare(idx, "c", "rest", mutable=False))
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
        idx, red = self.index_type, kernel.reduction
        name = kernel.name + (f"_{rank}k{red_rank}r" if red else f"_{rank}d")
        params = [("n", None, "n")] + ([("n", None, "r")] if red else []) + [("index", rank, "shape")]
        params += [("index", red_rank, "red_shape")] if red else []
        params += [("out", dtype, f"out{m}") for m, (_, dtype) in enumerate(kernel.output_types())]
        for k, dtype in enumerate(kernel.inputs):
            params += [("in", dtype, f"in{k}"), ("index", rank, f"in{k}_strides")]
            params += ([("index", red_rank, f"in{k}_red_strides")] if red else []) + [("n", None, f"in{k}_offset")]
        ins = range(len(kernel.inputs))
        ind = "        "
        body = self.kernel_open(name, params)
        body += [ind + self.declare(idx, f"at{k}", f"in{k}_offset") for k in ins]
        body += self._peel(ind, "i", "shape", rank, [(f"at{k}", f"in{k}_strides") for k in ins])
        if red is None:
            body += self._fused_body(ind, kernel, "at", "i")
        else:
            acc = acc or red.acc
            acc_t = self.type_name(acc)
            init, update = self.FUSED_REDUCTIONS[red.op]
            body += [ind + self.declare(acc_t, "acc", self.literal(init, acc)),
                     f"{ind}for ({self.declare(idx, 'j', '0')} j < r; j++) {{"]
            inner = ind + "    "
            body += [inner + self.declare(idx, f"e{k}", f"at{k}") for k in ins]
            body += self._peel(inner, "j", "red_shape", red_rank, [(f"e{k}", f"in{k}_red_strides") for k in ins])
            body += self._fused_body(inner, kernel, "e", "i * r + j")
            body += [f"{inner}{{ {self.declare(acc_t, 'x', self.cast(acc_t, f'v{red.step}'), mutable=False)} "
                     f"{self.expand(update, acc)} }}", f"{ind}}}",
                     ind + self.store(f"out{len(kernel.outputs)}", red.dtype, "i",
                                      self.cast(self.type_name(red.dtype), "acc"))]
        body += self.kernel_close()
        return name, "\n".join(line for line in body if line != "") + "\n"

    def _fused_body(self, indent: str, kernel: FusedKernel, at: str, out_index: str) -> list:
        """Load each input at offset ``{at}{k}``, compute the steps, store the outputs at ``out_index``."""
        lines = [indent + self.declare(self.type_name(d), f"x{k}", self.load(f"in{k}", d, f"{at}{k}"), mutable=False)
                 for k, d in enumerate(kernel.inputs)]
        lines += [indent + s for s in self.fused_statements(kernel, [f"x{k}" for k in range(len(kernel.inputs))])]
        outputs = kernel.output_types()
        lines += [indent + self.store(f"out{m}", outputs[m][1], out_index, f"v{k}")
                  for m, k in enumerate(kernel.outputs)]
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
