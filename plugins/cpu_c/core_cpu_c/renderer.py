"""The C dialect of core's kernel renderer, as this backend compiles it: two entry points per elementwise op.

core.codegen.CRenderer peels every element's coordinates off its flat index (a
division per dim per element): right for a JIT, too slow for bandwidth-bound
kernels. This subclass keeps the renderer's expression table, type names and
math-function spellings, and renders instead a contiguous loop (vectorised,
OpenMP above a size threshold) and a strided loop that walks rows: the
coordinates are computed once per row, the innermost dim runs with plain
strides (stride 0 = broadcast). One template for every op and dtype.
"""

from __future__ import annotations

from core.codegen import CRenderer

__all__ = ["CpuRenderer", "KERNEL_OPS", "kernel_name"]

# The ops this backend compiles, by arity. Float-only: integer/bool inputs keep the NumPy kernels.
UNARY_OPS = ("neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
             "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf",
             "erfc", "reciprocal", "floor", "ceil", "trunc", "round", "square", "positive", "relu")
BINARY_OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "eq", "ne", "lt", "le", "gt", "ge",
              "tanh_backward", "sigmoid_backward", "relu_backward")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
DTYPES = ("float32", "float64")
# relu_backward(g, x) (core composite, relu's derivative) has no expression in core.codegen's table: spelled here
_OWN_EXPRESSIONS = {"relu_backward": "(b > 0 ? a : ({T})0)"}
KERNEL_OPS = {name: 1 for name in UNARY_OPS} | {name: 2 for name in BINARY_OPS}


def kernel_name(op: str, dtype: str) -> str:
    """The C name prefix of ``op``'s kernels in ``dtype`` (``_contig`` / ``_strided`` follow)."""
    return f"ccc_{op}_{dtype}"


class CpuRenderer(CRenderer):
    """Renders this backend's contiguous + strided elementwise kernels."""

    def render_pair(self, op: str, dtype: str) -> tuple:
        """(C source, prototypes) of ``op``'s two kernels for inputs of ``dtype``."""
        arity = KERNEL_OPS[op]
        out_dtype = "bool" if op in COMPARISONS else dtype
        expr = self.expand(_OWN_EXPRESSIONS.get(op) or _expression(op), dtype)
        T, O = self.type_name(dtype), self.type_name(out_dtype)
        names = "ab"[:arity]
        prefix = kernel_name(op, dtype)
        contig_params = ["long long n", "void* out_base", "long long out_off"]
        strided_params = ["long long n", "int ndim", "const long long* meta", "void* out_base"]
        for name in names:
            contig_params += [f"const void* {name}_base", f"long long {name}_off"]
            strided_params += [f"const void* {name}_base"]
        contig_sig = f"void {prefix}_contig({', '.join(contig_params)})"
        strided_sig = f"void {prefix}_strided({', '.join(strided_params)})"
        loads = " ".join(f"{T} {x} = in_{x}[{{{x}}}];" for x in names)
        pointers = [f"    {O}* restrict out = ({O}*)out_base + out_off;"]
        pointers += [f"    const {T}* restrict in_{x} = (const {T}*){x}_base + {x}_off;" for x in names]
        body = f"{loads} out[{{o}}] = ({O})({expr});"
        contig = [contig_sig + " {", *pointers,
                  f"    #pragma omp parallel for simd if(n >= {self.parallel_threshold}) schedule(static)",
                  "    for (long long i = 0; i < n; i++) {",
                  "        " + body.format(o="i", a="i", b="i"), "    }", "}"]
        # meta = shape[ndim], out strides[ndim], then each input's strides[ndim], then the offsets (out, inputs)
        strided = [strided_sig + " {", "    const long long* shape = meta;",
                   "    const long long* os = meta + ndim;"]
        strided += [f"    const long long* {x}s = meta + {k + 2} * ndim;" for k, x in enumerate(names)]
        strided += [f"    const long long* offs = meta + {arity + 2} * ndim;",
                    f"    {O}* restrict out = ({O}*)out_base;"]
        strided += [f"    const {T}* restrict in_{x} = (const {T}*){x}_base;" for x in names]
        strided += ["    const long long inner = shape[ndim - 1];",
                    f"    #pragma omp parallel if(n >= {self.parallel_threshold})",
                    "    {", "        long long nt = omp_get_num_threads(), t = omp_get_thread_num();",
                    "        long long i = n / nt * t + (t < n % nt ? t : n % nt);",
                    "        long long end = i + n / nt + (t < n % nt);",
                    "        while (i < end) {",
                    "            long long row = i / inner, j = i % inner, len = inner - j;",
                    "            if (len > end - i) len = end - i;",
                    "            long long o = offs[0] + j * os[ndim - 1];"]
        strided += [f"            long long {x}_at = offs[{k + 1}] + j * {x}s[ndim - 1];" for k, x in enumerate(names)]
        strided += ["            for (int d = ndim - 2; d >= 0; d--) {",
                    "                long long c = row % shape[d]; row /= shape[d]; o += c * os[d];"]
        strided += [f"                {x}_at += c * {x}s[d];" for x in names]
        strided += ["            }", "            const long long so = os[ndim - 1];"]
        strided += [f"            const long long s{x} = {x}s[ndim - 1];" for x in names]
        unit = " && ".join(["so == 1"] + [f"s{x} == 1" for x in names])
        strided += [f"            if ({unit}) {{",
                    "                #pragma omp simd",
                    "                for (long long k = 0; k < len; k++) {",
                    "                    " + body.format(o="o + k", **{x: f"{x}_at + k" for x in names}),
                    "                }", "            } else {",
                    "                for (long long k = 0; k < len; k++) {",
                    "                    " + body.format(o="o + k * so", **{x: f"{x}_at + k * s{x}" for x in names}),
                    "                }", "            }", "            i += len;", "        }", "    }", "}"]
        return "\n".join(contig + strided) + "\n", contig_sig + ";\n" + strided_sig + ";\n"


def _expression(op: str) -> str:
    from core.codegen import expression_for

    return expression_for(op)


PREAMBLE = """/* GENERATED by `python -m core_cpu_c.gen` from core.codegen's expressions: do not edit. */
#include <math.h>
#include "omp_compat.h"
"""


def render_all() -> tuple:
    """(the .c file, the .h file) holding every compiled elementwise kernel."""
    renderer = CpuRenderer()
    sources, headers = [PREAMBLE], ["/* GENERATED by `python -m core_cpu_c.gen`: do not edit. */\n"]
    for op in KERNEL_OPS:
        for dtype in DTYPES:
            source, header = renderer.render_pair(op, dtype)
            sources.append(source)
            headers.append(header)
    return "".join(sources), "".join(headers)
