"""The WGSL dialect of core's C-style renderer, plus the reduction template.

WGSL spells C differently through the renderer's hooks (``let``/``var``, ``f32(x)`` casts, ``select``, bindings and
``p`` parameters). What WGSL lacks is written once here: math helpers (``core_*``, prepended to a kernel that calls
them), a NaN test on the bits (llvmpipe folds ``x != x`` to false), and the byte dtypes and int16, packed four (two)
to a ``u32`` word: read by shifting, written one whole word per invocation.
"""

from __future__ import annotations

import re

from core.codegen import CStyleRenderer

from .kernels._common import MAIN, bindings

__all__ = ["WGSLRenderer", "RENDERER", "PACKED", "STORAGE_TYPES"]

#: dtypes narrower than WGSL's scalars: elements per u32 word
PACKED = {"bool": 4, "uint8": 4, "int8": 4, "int16": 2}
#: the element type of a core dtype's storage buffer (packed dtypes: u32 words)
STORAGE_TYPES = {"float32": "f32", "float16": "f16", "int32": "i32", "int64": "i64", **dict.fromkeys(PACKED, "u32")}
# C names -> WGSL's (or our NaN-propagating versions); the others are WGSL builtins or HELPERS
_BUILTINS = {"fabs": "abs", "rint": "round", "pow": "core_pow", "atan2": "core_atan2"}
# float32 helpers: erf/erfc as Numerical Recipes' erfc (fractional error < 1.2e-7) with erf's Taylor series near
# 0; expm1/log1p with Kahan's correction of exp(x) - 1 and log(1 + x)
HELPERS = {
    "core_isnan": "fn core_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }",
    "core_isinf": "fn core_isinf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }",
    # llvmpipe's exp/exp2 flush subnormal results to 0 and its log/log2 read subnormal inputs as 2^-126: scaled
    # by 2^64 into the normal range and back
    "core_exp": "fn core_exp(x: f32) -> f32 { return select(exp(x), exp(x + 44.3614195558365) * 5.421010862427522e-20,"
                " x < -87.33654475); }",
    "core_exp2": "fn core_exp2(x: f32) -> f32 { return select(exp2(x), exp2(x + 64.0) * 5.421010862427522e-20,"
                 " x < -126.0); }",
    "core_log": "fn core_log(x: f32) -> f32 { return select(log(x), log(x * 1.8446744073709552e19) - 44.3614195558365,"
                " x > 0.0 && x < 1.1754943508222875e-38); }",
    "core_log2": "fn core_log2(x: f32) -> f32 { return select(log2(x), log2(x * 1.8446744073709552e19) - 64.0,"
                 " x > 0.0 && x < 1.1754943508222875e-38); }",
    "core_log10": "fn core_log10(x: f32) -> f32 { return core_log2(x) * 0.30102999566398120; }",
    "core_copysign": """fn core_copysign(a: f32, b: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(a) & 0x7fffffffu) | (bitcast<u32>(b) & 0x80000000u));
}""",
    # atan on [0, 1] as Cephes' atanf (reduced to |u| <= tan(pi/8), relative error ~2e-7): llvmpipe's atan and
    # atan2 are off by ~4e-6 and give atan2(0, 0) = 3pi/4
    "core_atan_unit": """fn core_atan_unit(t: f32) -> f32 {
    let big = t > 0.41421356237309503;
    let u = select(t, (t - 1.0) / (t + 1.0), big);
    let z = u * u;
    let p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * u + u;
    return select(p, 0.7853981633974483 + p, big);
}""",
    "core_atan": """fn core_atan(x: f32) -> f32 {
    let a = abs(x);
    if (core_isnan(x)) { return x; }
    return core_copysign(select(core_atan_unit(a), 1.5707963267948966 - core_atan_unit(1.0 / a), a > 1.0), x);
}""",
    "core_expm1": """fn core_expm1(x: f32) -> f32 {
    let u = exp(x);
    if (u == 1.0) { return x; }
    if (x > 80.0 || u - 1.0 == -1.0) { return u - 1.0; }
    return (u - 1.0) * x / log(u);
}""",
    "core_log1p": """fn core_log1p(x: f32) -> f32 {
    let u = 1.0 + x;
    if (u == 1.0) { return x; }
    if (x > 1e30) { return log(x); }
    return log(u) * x / (u - 1.0);
}""",
    "core_erfc": """fn core_erfc(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return select(2.0 - r, r, x >= 0.0);
}""",
    "core_erf": """fn core_erf(x: f32) -> f32 {
    if (abs(x) >= 0.5) { return select(-1.0, 1.0, x > 0.0) * (1.0 - core_erfc(abs(x))); }
    let s = x * x;
    var term = x;
    var sum = x;
    for (var k = 1; k < 9; k++) { term *= -s / f32(k); sum += term / f32(2 * k + 1); }
    return sum * 1.1283791670955126;
}""",
    # pow on the magnitude (WGSL's pow is exp2(b * log2(a)): undefined for a < 0, NaN for 0 ** 0, 5 ** 2 = 24.999998 on
    # llvmpipe), then the sign
    "core_pow": """fn core_pow(a: f32, b: f32) -> f32 {
    if (b == 0.0 || a == 1.0) { return 1.0; }
    if (core_isnan(a) || core_isnan(b)) { return a + b; }
    var r = pow(abs(a), b);
    if (trunc(b) == b && abs(b) <= 64.0) {  // small integral powers by squaring: exact where the result is
        var x = abs(a);
        r = 1.0;
        for (var e = u32(abs(b)); e > 0u; e >>= 1u) { if ((e & 1u) == 1u) { r *= x; } x *= x; }
        r = select(r, 1.0 / r, b < 0.0);
    }
    if (a >= 0.0 || core_isnan(a)) { return r; }
    if (trunc(b) != b) { return bitcast<f32>(0x7fc00000u); }
    return select(r, -r, abs(b) < 16777216.0 && fract(b * 0.5) != 0.0);
}""",
    # atan2(a, b) with IEEE's zeros and infinities: the angle of (|b|, |a|), mirrored for b's sign, a's sign kept
    "core_atan2": """fn core_atan2(a: f32, b: f32) -> f32 {
    if (core_isnan(a) || core_isnan(b)) { return a + b; }
    let y = abs(a);
    let x = abs(b);
    var r = 0.7853981633974483;  // both infinite
    if (y == 0.0 || (core_isinf(x) && !core_isinf(y))) {
        r = 0.0;
    } else if (x == 0.0 || (core_isinf(y) && !core_isinf(x))) {
        r = 1.5707963267948966;
    } else if (!core_isinf(x)) {
        r = select(core_atan_unit(y / x), 1.5707963267948966 - core_atan_unit(x / y), y > x);
    }
    return core_copysign(select(r, 3.141592653589793 - r, (bitcast<u32>(b) >> 31u) == 1u), a);
}""",
    # asin/acos through atan2: llvmpipe's own are accurate to ~3e-4 only
    "core_asin": "fn core_asin(x: f32) -> f32 { return core_atan2(x, sqrt((1.0 - x) * (1.0 + x))); }",
    "core_acos": "fn core_acos(x: f32) -> f32 { return core_atan2(sqrt((1.0 - x) * (1.0 + x)), x); }",
    "core_hypot": """fn core_hypot(a: f32, b: f32) -> f32 {
    let x = abs(a);
    let y = abs(b);
    if (core_isinf(x) || core_isinf(y)) { return bitcast<f32>(0x7f800000u); }
    if (core_isnan(x) || core_isnan(y)) { return x + y; }
    let m = max(x, y);
    if (m == 0.0) { return 0.0; }
    let r = min(x, y) / m;
    return m * sqrt(1.0 + r * r);
}""",
    "core_logaddexp": """fn core_logaddexp(a: f32, b: f32) -> f32 {
    if (core_isnan(a) || core_isnan(b)) { return a + b; }
    if (a == b) { return a + 0.6931471805599453; }
    return max(a, b) + core_log1p(exp(-abs(a - b)));
}""",
    # integer powers by squaring; a negative exponent gives 1 / a ** -b truncated (1, -1 or 0)
    **{f"core_ipow_{t}": """fn core_ipow_T(a: T, b: T) -> T {
    if (b < 0) { return select(select(T(0), T(1) - 2 * (-b % 2), a == -1), T(1), a == 1); }
    var r: T = 1;
    var x = a;
    for (var e = b; e > 0; e >>= 1u) { if ((e & 1) == 1) { r *= x; } x *= x; }
    return r;
}""".replace("T", t) for t in ("i32", "i64")},
}
_FLOATS = ("float32", "float16")


class WGSLRenderer(CStyleRenderer):
    """WGSL: bindings and ``p`` parameters, ``i32`` indices, narrow dtypes packed in ``u32`` words."""

    dialect = "wgsl"
    # compute types (a packed dtype computes in i32; storage types are STORAGE_TYPES)
    types = {"float32": "f32", "float16": "f16", "int32": "i32", "int64": "i64", **dict.fromkeys(PACKED, "i32")}
    index_type = "i32"
    infinity = "bitcast<f32>(0x7f800000u)"
    not_a_number = "bitcast<f32>(0x7fc00000u)"

    def __init__(self):
        self._packed = None  # the packed output a kernel being rendered writes by words (see kernel_open)
        self._per, self._word_base = 1, "0"  # its elements per word, its first word

    def function(self, name: str, dtype: str) -> str:
        if name == "pow" and dtype not in _FLOATS:
            return f"core_ipow_{self.type_name(dtype)}"
        return _BUILTINS.get(name) or (name if f"core_{name}" not in HELPERS else f"core_{name}")

    def cast(self, type_name: str, expression: str) -> str:
        return f"{type_name}({expression})"

    def select(self, condition: str, if_true: str, if_false: str) -> str:
        return f"select({if_false}, {if_true}, {condition})"

    def is_nan(self, expression: str, dtype: str) -> str:
        return f"core_isnan(f32({expression}))" if dtype in _FLOATS else "false"

    def declare(self, type_name: str, name: str, value: str | None = None, mutable: bool = True) -> str:
        return f"{'var' if mutable else 'let'} {name}: {type_name}{'' if value is None else ' = ' + value};"

    def load(self, buffer: str, dtype: str, at: str) -> str:
        if dtype not in PACKED:
            return f"{buffer}[{at}]"
        per = PACKED[dtype]
        bits, word, slot = 32 // per, f"{buffer}[({at}) >> {per.bit_length() - 1}u]", f"u32(({at}) & {per - 1})"
        if dtype in ("int8", "int16"):  # the element moved to the top, then an arithmetic shift back: sign extension
            return f"(bitcast<i32>({word} << ({bits}u * ({per - 1}u - {slot}))) >> {32 - bits}u)"
        return f"i32(({word} >> ({bits}u * {slot})) & {(1 << bits) - 1}u)"

    def store(self, buffer: str, dtype: str, at: str, value: str) -> str:
        if dtype not in PACKED:
            return f"{buffer}[{at}] = {value};"
        if buffer != self._packed:
            raise ValueError(f"wgsl renderer: a packed output ({buffer}) is written whole words only")
        bits = 32 // PACKED[dtype]
        element = f"u32(({value}) != 0)" if dtype == "bool" else f"(u32({value}) & {(1 << bits) - 1}u)"
        return f"word |= {element} << ({bits}u * u32(q));"

    def kernel_open(self, name: str, params: list) -> list:
        """Bindings, ``main`` and one ``let`` per parameter from ``p``. A kernel with a packed output (at most one,
        contiguous, from a word boundary) runs invocation ``w`` over the elements of word ``w``."""
        storage = STORAGE_TYPES
        outs = [(n, storage[d]) for kind, d, n in params if kind == "out"]
        ins = [(n, storage[d]) for kind, d, n in params if kind == "in"]
        lines, k = [f"// {name}", bindings(outs, ins) + MAIN.rstrip("\n")], 0
        for kind, rank, pname in params:
            if kind == "n":
                lines.append(f"    let {pname} = p[{k}];")
                k += 1
            elif kind == "index":
                if rank:
                    values = ", ".join(f"p[{k + d}]" for d in range(rank))
                    lines.append(f"    let {pname} = array<i32, {rank}>({values});")
                k += rank
        packed = [(n, PACKED[d]) for kind, d, n in params if kind == "out" and d in PACKED]
        if len(packed) > 1:
            raise ValueError(f"wgsl renderer: kernel {name} has more than one packed output")
        if not packed:
            return lines + ["    if (i < n) {"]
        (self._packed, per), offset = packed[0], f"{packed[0][0]}_offset"
        self._per = per
        self._word_base = f"({offset} >> {per.bit_length() - 1}u)" if ("n", None, offset) in params else "0"
        return lines + ["    let w = i;", "    var word = 0u;", f"    for (var q = 0; q < {per}; q++) {{",
                        f"    let i = {per} * w + q;", "    if (i < n) {"]

    def kernel_close(self) -> list:
        if self._packed is None:
            return ["    }", "}"]
        out, self._packed = self._packed, None
        return ["    }", "    }", f"    if ({self._per} * w < n) {{ {out}[{self._word_base} + w] = word; }}", "}"]

    def with_helpers(self, source: str) -> str:
        """``source`` preceded by the helper functions it calls (and those they call)."""
        needed, text = [], source
        for name in reversed(list(HELPERS)):  # HELPERS lists callees before callers
            if re.search(rf"\b{name}\(", text):
                needed.insert(0, HELPERS[name])
                text += HELPERS[name]
        enable = "enable f16;\n" if "enable f16;\n" in source else ""  # directives come before declarations
        return enable + "\n".join(needed + [source.replace(enable, "") if enable else source])

    def render_elementwise(self, op, in_dtypes, out_dtype, ndim, compute_dtype=None, expression=None):
        kernel = super().render_elementwise(op, in_dtypes, out_dtype, ndim, compute_dtype, expression)
        return type(kernel)(kernel.name, self.with_helpers(kernel.source), kernel.in_dtypes, kernel.out_dtype, ndim)

    def render_fused(self, kernel, rank, red_rank=0, acc=None) -> tuple:
        name, source = super().render_fused(kernel, rank, red_rank, acc)
        return name, self.with_helpers(source)

    # -- reductions: one invocation per (output element, chunk of its reduced extent) ------------------------
    REDUCTIONS = {  # (init, step over x (the element in the accumulator's type)); None: the first element
        "sum": ("{c:0}", "acc += x;"),
        "prod": ("{c:1}", "acc *= x;"),
        "amax": (None, "if (x > acc || {nan:x}) { acc = x; }"),  # once acc is NaN, nothing replaces it
        "amin": (None, "if (x < acc || {nan:x}) { acc = x; }"),
        "any": ("{c:0}", "if (x != 0) { acc = {c:1}; }"),
        "all": ("{c:1}", "if (x == 0) { acc = {c:0}; }"),
        "argmax": (None, "if (!{nan:acc} && (x > acc || {nan:x})) { acc = x; arg = J; }"),
        "argmin": (None, "if (!{nan:acc} && (x < acc || {nan:x})) { acc = x; arg = J; }"),
    }
    # elements one invocation reduces: llvmpipe ends an invocation's loops after 65535 iterations in all, so longer
    # extents reduce in stages (each chunk's result a partial, reduced again); sums are a tree of CHUNK-sized runs
    CHUNK = 256

    def render_reduction(self, op: str, in_dtype: str, acc_dtype: str, out_dtype: str, keep_rank: int,
                         red_rank: int, partial: bool, indexed: bool) -> str:
        """WGSL of one stage: invocation ``i`` reduces chunk ``i % chunks`` of output element ``i / chunks`` of
        ``src`` (parameters ``n, r, chunks, keep_shape, keep_strides, red_shape, red_strides, offset``). It writes
        ``out[i]`` (``partial``: the accumulator, and the position in ``out_arg`` for the arg ops) and reads the
        positions from ``src_arg`` where ``indexed`` (a stage over partials), else counts them."""
        init, step = self.REDUCTIONS[op]
        a = self.type_name(acc_dtype)
        arg_op = op.startswith("arg")
        params = [("n", None, "n"), ("n", None, "r"), ("n", None, "chunks"), ("index", keep_rank, "keep_shape"),
                  ("index", keep_rank, "keep_strides"), ("index", red_rank, "red_shape"),
                  ("index", red_rank, "red_strides"), ("n", None, "offset"), ("out", out_dtype, "out")]
        params += [("out", "int32", "out_arg")] if partial and arg_op else []
        params += [("in", in_dtype, "src")] + ([("in", "int32", "src_arg")] if indexed else [])
        position = "src_arg[at]" if indexed else "j"
        ind = "        "
        body = self.kernel_open(f"{op}_{in_dtype}_{acc_dtype}_{out_dtype}_{keep_rank}k{red_rank}r", params)
        body += [ind + self.declare("i32", "base", "offset"),
                 ind + self.declare("i32", "start", f"(i % chunks) * {self.CHUNK}", mutable=False)]
        body += self._peel(ind, "i / chunks", "keep_shape", keep_rank, [("base", "keep_strides")])
        body += [ind + self.declare(a, "acc", self.expand(init or "{c:0}", acc_dtype)),
                 ind + self.declare("i32", "arg", "0"),
                 f"{ind}for (var j = start; j < min(start + {self.CHUNK}, r); j++) {{",
                 ind + "    " + self.declare("i32", "at", "base")]
        body += self._peel(ind + "    ", "j", "red_shape", red_rank, [("at", "red_strides")])
        update = self.expand(step, acc_dtype).replace("arg = J", f"arg = {position}")
        body += [ind + "    " + self.declare(a, "x", self.cast(a, self.load("src", in_dtype, "at")), mutable=False),
                 ind + f"    if (j == start) {{ acc = x; arg = {position}; }} else {{ {update} }}" if init is None
                 else ind + "    " + update, f"{ind}}}"]
        if partial:
            body.append(ind + self.store("out", out_dtype, "i", self.cast(self.type_name(out_dtype), "acc")))
            body += [ind + "out_arg[i] = arg;"] if arg_op else []
        else:
            body.append(ind + self.store("out", out_dtype, "i", self.cast(self.type_name(out_dtype),
                                                                         "arg" if arg_op else "acc")))
        return self.with_helpers("\n".join(body + self.kernel_close()) + "\n")


RENDERER = WGSLRenderer()
