"""The C dialect of core's kernel renderer, as this backend compiles it: two entry points per elementwise op.

core.codegen.CRenderer peels every element's coordinates off its flat index (a
division per dim per element): right for a JIT, too slow for bandwidth-bound
kernels. This subclass keeps the renderer's expression table, type names and
math-function spellings, and renders instead a contiguous loop (vectorised,
OpenMP above a size threshold) and a strided loop that walks rows: the
coordinates are computed once per row, the innermost dim runs with plain
strides (stride 0 = broadcast), as an `omp simd` loop too (without it GCC
leaves float selects such as maximum as branches: ~10x slower on random
data). One template for every op and dtype.

Each op compiles for the dtypes it lists in :data:`OP_DTYPES`, with the same
dtype in and out (``bool`` out for comparisons, predicates and logical ops;
``where``'s condition is a byte); float16/bfloat16 kernels load each element as float32, evaluate the float32
expression and store the result rounded to nearest even (csrc/half.h). What the NumPy reference does for a dtype is
the spec: integer arithmetic wraps (computed in an unsigned type, so C has no
signed-overflow UB), bool ``add`` is ``or``. Integer division by zero raises
in the reference: those kernels return how many zero divisors they saw, and
the Python side then hands the call to the reference.
"""

from __future__ import annotations

import re

from core.codegen import CRenderer

__all__ = ["CpuRenderer", "FUSED_OUT", "HALF", "KERNEL_OPS", "OP_DTYPES", "UNARY_OPS", "BINARY_OPS", "kernel_name",
           "render_all"]

FLOATS = ("float32", "float64")
INTEGERS = ("int8", "uint8", "int16", "int32", "int64")
NUMBERS = FLOATS + INTEGERS
ALL = NUMBERS + ("bool",)
DTYPES = FLOATS  # the product's dtypes (kernels.py)
# float16/bfloat16: stored as 16 bits, each element loaded as float32, computed with the float32 expression and
# stored rounded to nearest even (csrc/half.h), the reference's (and PyTorch's) float32 opmath
HALF = ("float16", "bfloat16")
_HALF_IO = {"float16": ("ccc_f16_load", "ccc_f16_store"), "bfloat16": ("ccc_bf16_load", "ccc_bf16_store")}

_FLOAT_UNARY = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
                "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc",
                "reciprocal", "deg2rad", "rad2deg", "sinc", "lgamma")
_FLOAT_BINARY = ("div", "atan2", "copysign", "hypot", "logaddexp", "logaddexp2", "xlogy", "nextafter",
                 "tanh_backward", "sigmoid_backward", "relu_backward")
# the loops of ops that write into out (out=, addcmul_, lerp_) and their operands: d is a number (the value, the
# weight), read once by the contiguous loop
FUSED_OUT = {"addcmul": "abcd", "addcdiv": "abcd", "lerp": "abd"}
# {op: the dtypes its kernels compile for}
OP_DTYPES = {
    **dict.fromkeys(_FLOAT_UNARY, FLOATS),
    **dict.fromkeys(("neg", "relu"), NUMBERS),
    **dict.fromkeys(("abs", "square", "positive", "sign", "sgn", "floor", "ceil", "trunc", "round", "isnan", "isinf",
                     "isfinite", "isposinf", "isneginf", "signbit"), ALL),
    "frac": NUMBERS,
    "logical_not": ALL, "bitwise_not": INTEGERS + ("bool",),
    **dict.fromkeys(_FLOAT_BINARY, FLOATS),
    **dict.fromkeys(("add", "mul", "maximum", "minimum", "fmax", "fmin", "pow"), ALL),
    "sub": NUMBERS,
    **dict.fromkeys(("floor_divide", "remainder", "fmod", "div_trunc"), NUMBERS),
    **dict.fromkeys(("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"), ALL),
    **dict.fromkeys(("bitwise_and", "bitwise_or", "bitwise_xor"), INTEGERS + ("bool",)),
    **dict.fromkeys(("bitwise_left_shift", "bitwise_right_shift"), INTEGERS),
    "where": ALL, "clamp": ALL,
    # the loops of the addcmul_out/addcdiv_out ops (input, tensor1, tensor2, value) and lerp_out (input, end, weight)
    **dict.fromkeys(FUSED_OUT, FLOATS),
}
# every op with float kernels gets half ones, but nextafter (its step is the half type's, not float32's) and
# signbit (GCC 12 fails to compile its vectorised loop over half loads: an internal compiler error)
for _op, _dtypes in OP_DTYPES.items():
    if "float32" in _dtypes and _op not in ("nextafter", "signbit"):
        OP_DTYPES[_op] = _dtypes + HALF
_UNARY = ("neg", "abs", "square", "positive", "relu", "sign", "sgn", "floor", "ceil", "trunc", "round", "frac", "isnan",
          "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not", "bitwise_not")
KERNEL_OPS = {op: len(FUSED_OUT[op]) if op in FUSED_OUT else 3 if op in ("where", "clamp")
              else 1 if op in _UNARY or op in _FLOAT_UNARY else 2 for op in OP_DTYPES}
UNARY_OPS = tuple(op for op, arity in KERNEL_OPS.items() if arity == 1)
BINARY_OPS = tuple(op for op, arity in KERNEL_OPS.items() if arity == 2)
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
BOOL_OUTPUT = COMPARISONS + ("logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf",
                             "isfinite", "isposinf", "isneginf", "signbit")
# Integer division: a zero divisor makes the reference raise; its kernels count zero divisors instead.
CHECKED_DIVISION = ("floor_divide", "remainder", "fmod", "div_trunc")

# Expressions core.codegen's table lacks, or spells for floats only: {op: text} or {op: {kind: text}}, kind being
# "float", "int" or "bool". {W} is the unsigned type integer arithmetic wraps in, {B} the integer's width in bits.
# Calls of ccc_*_{N} name the helpers in _HELPERS ({N}: the dtype's name).
_SAME = "a"
_ZERO, _ONE = "((void)a, 0)", "((void)a, 1)"  # constants that still read a (no unused-variable warning)
_OWN_EXPRESSIONS = {
    "relu_backward": "(b > 0 ? a : ({T})0)",
    "add": {"int": "({T})(({W})a + ({W})b)", "bool": "(a || b)"},
    "sub": {"int": "({T})(({W})a - ({W})b)"},
    "mul": {"int": "({T})(({W})a * ({W})b)", "bool": "(a && b)"},
    "neg": {"int": "({T})(({W})0 - ({W})a)"},
    "abs": {"int": "(a < 0 ? ({T})(({W})0 - ({W})a) : a)", "bool": _SAME},
    "square": {"int": "({T})(({W})a * ({W})a)", "bool": _SAME},
    # core's NaN tests (a != a) are left out of the integer forms: GCC warns on them
    "sign": {"int": "({T})((a > 0) - (a < 0))", "bool": _SAME},
    "sgn": dict.fromkeys(("float", "int"), "({T})((a > 0) - (a < 0))") | {"bool": _SAME},  # sgn(NaN) = 0 too
    "relu": {"int": "(a > 0 ? a : ({T})0)"},
    **{op: {"int": _SAME, "bool": _SAME} for op in ("floor", "ceil", "trunc", "round")},
    "maximum": {"int": "(a > b ? a : b)", "bool": "(a || b)"},
    "minimum": {"int": "(a < b ? a : b)", "bool": "(a && b)"},
    # NumPy's fmax/fmin: the non-NaN operand, b when equal (its vector loops; ±0 is path-dependent there)
    "fmax": {"float": "((a > b || b != b) ? a : b)", "int": "(a > b ? a : b)", "bool": "(a || b)"},
    "fmin": {"float": "((a < b || b != b) ? a : b)", "int": "(a < b ? a : b)", "bool": "(a && b)"},
    # the float predicates on integers and bools: constants, and signbit is a < 0
    "isnan": {"float": "(a != a)", "int": _ZERO, "bool": _ZERO},
    "isinf": {"float": "(isinf(a) != 0)", "int": _ZERO, "bool": _ZERO},
    "isfinite": {"float": "(isfinite(a) != 0)", "int": _ONE, "bool": _ONE},
    "isposinf": {"float": "(a == ({T})INFINITY)", "int": _ZERO, "bool": _ZERO},
    "isneginf": {"float": "(a == -({T})INFINITY)", "int": _ZERO, "bool": _ZERO},
    "signbit": {"float": "(signbit(a) != 0)", "int": "(a < 0)", "bool": _ZERO},
    "logical_not": "(!a)", "bitwise_not": {"int": "({T})(~a)", "bool": "(!a)"},
    "logical_and": "(a && b)", "logical_or": "(a || b)", "logical_xor": "(!a != !b)",
    "frac": {"float": "(a - {f:trunc}(a))", "int": _ZERO},
    "lgamma": "ccc_lgamma_{N}(a)", "deg2rad": "(a * (({T})M_PI / ({T})180))", "rad2deg": "(a * (({T})180 / ({T})M_PI))",
    "sinc": "ccc_sinc_{N}(a)", "copysign": "{f:copysign}(a, b)", "hypot": "{f:hypot}(a, b)",
    "nextafter": "{f:nextafter}(a, b)", "logaddexp": "ccc_logaddexp_{N}(a, b)",
    "logaddexp2": "ccc_logaddexp2_{N}(a, b)", "xlogy": "ccc_xlogy_{N}(a, b)",
    "floor_divide": {"float": "ccc_floor_divide_{N}(a, b)", "int": "ccc_floor_divide_{N}(a, b)"},
    "remainder": {"float": "ccc_remainder_{N}(a, b)", "int": "ccc_remainder_{N}(a, b)"},
    "fmod": {"float": "{f:fmod}(a, b)", "int": "ccc_fmod_{N}(a, b)"},
    "div_trunc": {"float": "{f:trunc}(a / b)", "int": "ccc_div_trunc_{N}(a, b)"},
    "bitwise_left_shift": "((b < 0 || b >= {B}) ? ({T})0 : ({T})(({W})a << b))",
    "bitwise_right_shift": "((b < 0 || b >= {B}) ? ({T})(a < 0 ? -1 : 0) : ({T})(a >> b))",
    "pow": {"int": "ccc_pow_{N}(a, b)", "bool": "(a || !b)"},  # bool: the reference's int8 power, as bool
    "where": "(a ? b : c)",
    # PyTorch's clamp: NaN input stays NaN, a NaN bound gives NaN (NumPy's maximum then minimum)
    "clamp": "ccc_clamp_max_{N}(ccc_clamp_min_{N}(a, b), c)",
    "clamp_min": "ccc_clamp_min_{N}(a, b)", "clamp_max": "ccc_clamp_max_{N}(a, c)",
    # PyTorch's CPU order, input + value * tensor1 * tensor2 (or / tensor2): d is the value, a scalar operand
    "addcmul": "(a + d * b * c)", "addcdiv": "(a + d * b / c)",
    # ATen's lerp: weight (d) below 0.5 in magnitude steps from input, else back from end (weight 1 gives end)
    "lerp": "({f:fabs}(d) < 0.5 ? a + d * (b - a) : b - (b - a) * (1 - d))",
}

# Helpers the expressions call, rendered once per dtype of their kind, in the order NumPy's loops compute.
_FLOAT_HELPERS = """\
static inline {T} ccc_divmod_{N}({T} a, {T} b, {T}* modulus) {{
    /* npy_divmod: Python's floor division and remainder (remainder takes the divisor's sign) */
    {T} mod = {f:fmod}(a, b);
    if (!b) {{ *modulus = mod; return a / b; }}
    {T} div = (a - mod) / b;
    if (mod) {{
        if ((b < 0) != (mod < 0)) {{ mod += b; div -= ({T})1; }}
    }} else {{
        mod = {f:copysign}(({T})0, b);
    }}
    {T} floordiv;
    if (div) {{
        floordiv = {f:floor}(div);
        if (div - floordiv > ({T})0.5) floordiv += ({T})1;
    }} else {{
        floordiv = {f:copysign}(({T})0, a / b);
    }}
    *modulus = mod;
    return floordiv;
}}
static inline {T} ccc_floor_divide_{N}({T} a, {T} b) {{
    {T} mod;
    return b ? ccc_divmod_{N}(a, b, &mod) : a / b;
}}
static inline {T} ccc_remainder_{N}({T} a, {T} b) {{
    {T} mod;
    if (!b) return {f:fmod}(a, b);
    ccc_divmod_{N}(a, b, &mod);
    return mod;
}}
static inline {T} ccc_logaddexp_{N}({T} x, {T} y) {{
    /* NumPy's npy_logaddexp: x == y (infinities of one sign too) gives x + log(2); else max + log1p(exp(-|x - y|)),
       NaN when x - y is. Branch-free (the calls run for every lane, the results are selected), so that a loop of it
       vectorises with SIMD exp and log1p (csrc/vecmath.h). */
    {T} d = x - y;
    {T} r = (d > 0 ? x : y) + {f:log1p}({f:exp}(-{f:fabs}(d)));
    r = d != d ? d : r;
    return x == y ? x + ({T})0.693147180559945309417232121458176568 : r;
}}
static inline {T} ccc_logaddexp2_{N}({T} x, {T} y) {{
    const {T} log2e = ({T})1.442695040888963407359924681001892137;
    {T} d = x - y;
    {T} r = (d > 0 ? x : y) + log2e * {f:log1p}({f:exp2}(-{f:fabs}(d)));
    r = d != d ? d : r;
    return x == y ? x + 1 : r;
}}
static inline {T} ccc_xlogy_{N}({T} x, {T} y) {{
    /* scipy.special.xlogy: 0 where x == 0 and y is not NaN (the log is computed anyway: branch-free) */
    {T} r = x * {f:log}(y);
    return (x == 0 && y == y) ? 0 : r;
}}
static inline {T} ccc_lgamma_{N}({T} x) {{
    /* scipy.special.gammaln computes float32 in double too, and gives -inf at -inf (C: +inf); lgamma_r, as
       lgamma writes the global signgam */
    int sign;
    if (x == -({T})INFINITY) return x;
    return ({T})lgamma_r((double)x, &sign);
}}
static inline {T} ccc_sinc_{N}({T} x) {{
    /* np.sinc: x == 0 becomes 1e-20 before sin(pi x) / (pi x) */
    {T} y = ({T})M_PI * (x == 0 ? ({T})1.0e-20 : x);
    return {f:sin}(y) / y;
}}
"""
# Integer division as NumPy's integer loops compute it; the zero divisor (counted by the kernel) gives 0 and
# MIN / -1 wraps, instead of C's undefined behaviour.
_INT_HELPERS = """\
static inline {T} ccc_floor_divide_{N}({T} a, {T} b) {{
    if (b == 0) return 0;
    if (b == -1) return ({T})(({W})0 - ({W})a);  /* never true for uint8 (promoted to int) */
    {T} q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    return q;
}}
static inline {T} ccc_remainder_{N}({T} a, {T} b) {{
    if (b == 0 || b == -1) return 0;
    {T} r = a % b;
    if (r != 0 && ((b < 0) != (r < 0))) r += b;
    return r;
}}
static inline {T} ccc_pow_{N}({T} a, {T} b) {{
    /* negative exponents as PyTorch: 1 -> 1, -1 -> +-1, others -> 0; else squaring, wrapping as NumPy's */
    if (b < 0) return a == 1 ? 1 : a == -1 ? (({W})b & 1 ? -1 : 1) : 0;
    {W} result = 1, base = ({W})a, e = ({W})b;
    while (e) {{
        if (e & 1) result *= base;
        base *= base;
        e >>= 1;
    }}
    return ({T})result;
}}
static inline {T} ccc_fmod_{N}({T} a, {T} b) {{
    if (b == 0 || b == -1) return 0;
    return a % b;
}}
static inline {T} ccc_div_trunc_{N}({T} a, {T} b) {{
    if (b == 0) return 0;
    if (b == -1) return ({T})(({W})0 - ({W})a);
    return a / b;
}}
"""
# clamp's bounds as NumPy's maximum / minimum (the bound when equal, NaN from either side), a NaN input kept.
# Spelled with `||` (as core's maximum): GCC 12 vectorizes these nested, not the branch-free `(a != a) | (a > lo)`
_CLAMP_HELPERS = """\
static inline {T} ccc_clamp_min_{N}({T} a, {T} lo) {{ return (a > lo || a != a) ? a : lo; }}
static inline {T} ccc_clamp_max_{N}({T} a, {T} hi) {{ return (a < hi || a != a) ? a : hi; }}
"""
_INTEGER_CLAMP_HELPERS = _CLAMP_HELPERS.replace(" || a != a", "")
_HELPERS = {"float": _FLOAT_HELPERS + _CLAMP_HELPERS, "int": _INT_HELPERS + _INTEGER_CLAMP_HELPERS,
            "bool": _INTEGER_CLAMP_HELPERS}
_WRAP_TYPES = {"int64": "unsigned long long"}  # the others wrap in unsigned int (no promotion back to int)
_BITS = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32, "int64": 64}


def kind_of(dtype: str) -> str:
    """"float", "int" or "bool": which expression of an op serves ``dtype``."""
    return "float" if dtype in FLOATS + HALF else "bool" if dtype == "bool" else "int"


def kernel_name(op: str, dtype: str) -> str:
    """The C name prefix of ``op``'s kernels in ``dtype`` (``_contig`` / ``_strided`` follow)."""
    return f"ccc_{op}_{dtype}"


def c_kernels(op: str) -> tuple:
    """The C kernels of dispatcher op ``op``: clamp has one per set of bounds (both, min only, max only)."""
    return ("clamp", "clamp_min", "clamp_max") if op == "clamp" else (op,)


# float32 functions served by cpu_c's own kernels instead of libm's (libmvec's): inline ones in csrc/vecmath.h (any
# C file that includes it, core.jit's fused kernels too), and ccc_powf, whose SIMD variants the C extension defines
# (csrc/vecpow.c; see there why)
OWN_FLOAT32_FUNCTIONS = {"tanh": "ccc_tanhf", "expm1": "ccc_expm1f"}
EXTENSION_FLOAT32_FUNCTIONS = {**OWN_FLOAT32_FUNCTIONS, "pow": "ccc_powf"}


class OwnMathFunctions:
    """Renderer mixin: float32 calls of the functions in ``own_functions`` name cpu_c's own kernels."""

    own_functions = OWN_FLOAT32_FUNCTIONS

    def function(self, name: str, dtype: str) -> str:
        """The C function computing ``name`` for ``dtype``: cpu_c's own float32 kernel where it has one."""
        if dtype == "float32" and name in self.own_functions:
            return self.own_functions[name]
        return super().function(name, dtype)


class CpuRenderer(OwnMathFunctions, CRenderer):
    """Renders this backend's contiguous + strided elementwise kernels."""

    own_functions = EXTENSION_FLOAT32_FUNCTIONS

    def fill(self, template: str, dtype: str) -> str:
        """``template`` with this backend's placeholders and core's ({T}, {f:name}) filled for ``dtype``."""
        text = template.replace("{N}", dtype).replace("{W}", _WRAP_TYPES.get(dtype, "unsigned int"))
        return self.expand(text.replace("{B}", str(_BITS.get(dtype, 0))), dtype)

    def expression(self, op: str, dtype: str) -> str:
        """The C expression of ``op`` over inputs a, b, c of ``dtype``."""
        own = _OWN_EXPRESSIONS.get(op)
        if isinstance(own, dict):
            own = own.get(kind_of(dtype))
        if own is None:
            from core.codegen import expression_for

            own = expression_for(op)
        return self.fill(own, dtype)

    def helpers(self, dtype: str) -> str:
        """The static inline helpers the expressions of ``dtype`` call."""
        return self.fill(_HELPERS[kind_of(dtype)], dtype).replace("{{", "{").replace("}}", "}")

    def render_pair(self, op: str, dtype: str) -> tuple:
        """(C source, prototypes) of C kernel ``op``'s two entry points for inputs of ``dtype``."""
        names = {"clamp": "abc", "clamp_min": "ab", "clamp_max": "ac", **FUSED_OUT}.get(op) or "abcd"[:KERNEL_OPS[op]]
        out_dtype = "bool" if op in BOOL_OUTPUT else dtype
        half = dtype in HALF
        expr = self.expression(op, "float32" if half else dtype)
        T = "unsigned short" if half else self.type_name(dtype)
        O = T if out_dtype == dtype else self.type_name(out_dtype)
        types = {x: ("unsigned char" if op == "where" and x == "a" else T) for x in names}
        load, store = _HALF_IO.get(dtype, ("", ""))
        if out_dtype != dtype or not half:
            store = f"({O})"  # a cast (a half output is rounded by its store function instead)
        checked = op in CHECKED_DIVISION and kind_of(dtype) == "int"
        ret, bad = ("int", " reduction(|:bad)") if checked else ("void", "")
        prefix = kernel_name(op, dtype)
        contig_params = ["long long n", "void* out_base", "long long out_off"]
        strided_params = ["long long n", "int ndim", "const long long* meta", "void* out_base"]
        for name in names:
            contig_params += [f"const void* {name}_base", f"long long {name}_off"]
            strided_params += [f"const void* {name}_base"]
        contig_sig = f"{ret} {prefix}_contig({', '.join(contig_params)})"
        strided_sig = f"{ret} {prefix}_strided({', '.join(strided_params)})"
        loads = " ".join(f"{types[x]} {x} = in_{x}[{{{x}}}];" if types[x] != T or not half else
                         f"float {x} = {load}(in_{x}[{{{x}}}]);" for x in names)
        pointers = [f"    {O}* restrict out = ({O}*)out_base + out_off;"]
        pointers += [f"    const {types[x]}* restrict in_{x} = (const {types[x]}*){x}_base + {x}_off;" for x in names]
        body = f"{loads} out[{{o}}] = {store}({expr});" + (" bad |= (b == 0);" if checked else "")
        start = ["    int bad = 0;"] if checked else []
        end = ["    return bad;"] if checked else []
        clones = "CCC_MATH_CLONES " if _vector_math(expr) else ""
        # the value or weight (d) of addcmul/addcdiv/lerp is a number: their contiguous loops read it once, at d_off
        scalar_d = "0" if op in FUSED_OUT else None
        stream = _streaming(O, loads, expr, checked or out_dtype not in _FLOAT, scalar_d)
        contig = [clones + contig_sig + " {", *pointers, *start, *stream,
                  f"    #pragma omp parallel for simd if(parallel: n >= {self.parallel_threshold}) "
                  f"schedule(static){bad}",  # an if without 'parallel:' also turns simd off below the threshold
                  "    for (long long i = 0; i < n; i++) {",
                  "        " + body.format(o="i", a="i", b="i", c="i", d=scalar_d or "i"), "    }", *end, "}"]
        # meta = shape[ndim], out strides[ndim], then each input's strides[ndim], then the offsets (out, inputs)
        strided = [clones + strided_sig + " {", "    const long long* shape = meta;",
                   "    const long long* os = meta + ndim;"]
        strided += [f"    const long long* {x}s = meta + {k + 2} * ndim;" for k, x in enumerate(names)]
        strided += [f"    const long long* offs = meta + {len(names) + 2} * ndim;",
                    f"    {O}* restrict out = ({O}*)out_base;"]
        strided += [f"    const {types[x]}* restrict in_{x} = (const {types[x]}*){x}_base;" for x in names]
        strided += [*start, "    const long long inner = shape[ndim - 1];",
                    f"    #pragma omp parallel if(n >= {self.parallel_threshold}){bad}",
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
        simd = f"                #pragma omp simd{bad}"
        strided += [f"            if ({unit}) {{", simd,
                    "                for (long long k = 0; k < len; k++) {",
                    "                    " + body.format(o="o + k", **{x: f"{x}_at + k" for x in names}),
                    "                }"]
        # a tensor and a scalar (or a broadcast row), or addcmul's value: the scalar read once, the loop vectorised
        for still in names if len(names) == 2 else "d" if op in FUSED_OUT else "":
            walks = {x: (f"{x}_at" if x == still else f"{x}_at + k") for x in names}
            condition = " && ".join(["so == 1"] + [f"s{x} == {0 if x == still else 1}" for x in names])
            strided += [f"            }} else if ({condition}) {{", simd,
                        "                for (long long k = 0; k < len; k++) {",
                        "                    " + body.format(o="o + k", **walks), "                }"]
        strided += ["            } else {", simd,
                    "                for (long long k = 0; k < len; k++) {",
                    "                    " + body.format(o="o + k * so", **{x: f"{x}_at + k * s{x}" for x in names}),
                    "                }", "            }", "            i += len;", "        }", "    }", *end, "}"]
        return "\n".join(contig + strided) + "\n", contig_sig + ";\n" + strided_sig + ";\n"


PREAMBLE = """/* GENERATED by `python -m core_cpu_c.gen` from core.codegen's expressions: do not edit. */
#define _DEFAULT_SOURCE /* M_PI */
#include <math.h>
#include "vecmath.h"
#include "omp_compat.h"
#include "stream.h"
#include "half.h"
"""
_FLOAT = ("float32", "float64")


# libm functions with SIMD variants in csrc/vecmath.h (float and double spellings), and the helpers that call them
_VECTOR_MATH = re.compile(r"\b(?:(?:exp|exp2|expm1|log|log2|log10|log1p|sin|cos|tan|asin|acos|atan|sinh|cosh|tanh|asinh"
                          r"|acosh|atanh|erf|erfc|cbrt|atan2|hypot|pow)f?|ccc_(?:logaddexp2?|xlogy|sinc)_\w+|ccc_(?:tanh|expm1|pow)f)\(")


def _vector_math(expr: str) -> bool:
    """Whether ``expr`` calls a function libmvec (or cpu_c's own SIMD math) vectorises: its kernels get
    csrc/vecmath.h's CCC_MATH_CLONES (AVX2 and AVX-512 clones in a portable build)."""
    return _VECTOR_MATH.search(expr) is not None


def _streaming(O: str, loads: str, expr: str, skip: bool, scalar_d: str | None = None) -> list:
    """The lines of a contiguous float kernel's streaming-store path (csrc/stream.h) for outputs larger than the
    caches: values computed W at a time into an aligned block, then streamed to the output; none if ``skip``.
    ``scalar_d``: the index operand d is read at (a scalar's), else it walks with the others."""
    if skip:
        return []
    w = f"(CCC_STREAM_BYTES / (long long)sizeof({O}))"
    element = (f"{loads} v[k] = ({O})({expr});").format(a="i0 + k", b="i0 + k", c="i0 + k", d=scalar_d or "i0 + k")
    tail = (f"{loads} out[i] = ({O})({expr});").format(a="i", b="i", c="i", d=scalar_d or "i")
    return ["#if CCC_STREAM",
            f"    if (n * (long long)sizeof({O}) >= CCC_STREAM_MIN_BYTES && (uintptr_t)out % CCC_STREAM_BYTES == 0) {{",
            f"        const long long m = n - n % {w};",
            "        #pragma omp parallel",
            "        {",
            "            #pragma omp for schedule(static)",
            f"            for (long long i0 = 0; i0 < m; i0 += {w}) {{",
            f"                {O} v[{w}] __attribute__((aligned(CCC_STREAM_BYTES)));",
            "                #pragma omp simd",
            f"                for (long long k = 0; k < {w}; k++) {{",
            "                    " + element,
            "                }",
            "                ccc_stream(out + i0, v);",
            "            }",
            "            ccc_stream_fence();",
            "        }",
            "        for (long long i = m; i < n; i++) {",
            "            " + tail,
            "        }",
            "        return;",
            "    }",
            "#endif"]


def render_all() -> tuple:
    """(the .c file, the .h file) holding every compiled elementwise kernel."""
    renderer = CpuRenderer()
    sources, headers = [PREAMBLE], ["/* GENERATED by `python -m core_cpu_c.gen`: do not edit. */\n"]
    sources += [renderer.helpers(dtype) for dtype in ALL]
    for op in OP_DTYPES:
        for name in c_kernels(op):
            for dtype in OP_DTYPES[op]:
                source, header = renderer.render_pair(name, dtype)
                sources.append(source)
                headers.append(header)
    return "".join(sources), "".join(headers)
