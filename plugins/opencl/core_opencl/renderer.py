"""The OpenCL C dialect of core's C-style renderer, plus the reduction and tiled GEMM templates."""

from __future__ import annotations

from core.codegen import CStyleRenderer

__all__ = ["OpenCLRenderer", "LOCAL_SIZE", "GEMM_TILE", "HALF"]

LOCAL_SIZE = 64  # one fixed work-group size: PoCL compiles a kernel once per local size it is launched with
GEMM_TILE = 16
_INTEGRAL = {"int8", "uint8", "int16", "int32", "int64", "bool"}
HALF = frozenset({"float16", "bfloat16"})  # stored in 16 bits, computed in float
_STORAGE_ONLY = {"half", "ushort"}  # their OpenCL names: pointers only (no half arithmetic without cl_khr_fp16)


class OpenCLRenderer(CStyleRenderer):
    """OpenCL C: ``__kernel``/``__global``, the work-item id as the element index, 64-bit ``long`` indices."""

    dialect = "opencl"
    # float16 and bfloat16 are storage only: elements load as float (vload_half, a shift) and store from float
    # (vstore_half_rte, core_bf16_store; both round to nearest even), so every device runs them, cl_khr_fp16 or not
    types = {"float32": "float", "float64": "double", "int8": "char", "uint8": "uchar", "int16": "short",
             "int32": "int", "int64": "long", "bool": "uchar", "float16": "half", "bfloat16": "ushort"}
    index_type = "long"
    global_qualifier = "__global "
    kernel_prefix = "__kernel "
    float_suffix_functions = False  # OpenCL math builtins are overloaded: exp(float) is float

    def function(self, name: str, dtype: str) -> str:
        if name == "fabs" and dtype in _INTEGRAL:
            return "abs"  # fabs has no integer overloads in OpenCL C
        return name

    def compute_type(self, dtype: str) -> str:
        """The type a kernel computes ``dtype``'s elements in: float for the storage-only half types."""
        return "float" if dtype in HALF else self.type_name(dtype)

    def load(self, buffer: str, dtype: str, at: str) -> str:
        if dtype == "float16":
            return f"vload_half({at}, {buffer})"
        if dtype == "bfloat16":
            return f"as_float((uint){buffer}[{at}] << 16)"
        return super().load(buffer, dtype, at)

    def store(self, buffer: str, dtype: str, at: str, value: str) -> str:
        if dtype == "float16":
            return f"vstore_half_rte({value}, {at}, {buffer});"
        if dtype == "bfloat16":
            return f"{buffer}[{at}] = core_bf16_store({value});"
        return super().store(buffer, dtype, at, value)

    def cast(self, type_name: str, expression: str) -> str:
        # a value headed for half storage stays float: the store converts (and rounds) it
        return super().cast("float" if type_name in _STORAGE_ONLY else type_name, expression)

    def loop_open(self) -> list:
        return [f"{self.index_type} i = get_global_id(0);", "if (i < n) {"]

    def loop_close(self) -> list:
        return ["}"]

    def preamble(self) -> str:
        return ""

    # NumPy's (and PyTorch's) floor division of floats: through fmod, so that e.g. 1 // 0.1 is 9, not 10
    FLOOR_DIVIDE = """inline T core_floor_divide_T(T a, T b) {
    if (b == 0) return a / b;
    T mod = fmod(a, b), div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return copysign((T)0, a / b);
    T f = floor(div);
    return div - f > (T)0.5 ? f + 1 : f;
}
"""

    # float -> bfloat16 bits, rounded to nearest even; NaN stays a quiet NaN with its sign (as csrc/half.h, NumPy)
    BF16_STORE = """inline ushort core_bf16_store(float f) {
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
"""

    def header(self, fp64: bool) -> str:
        """Text once per program: the fp64 pragma where the device has it, helper functions per float type."""
        floats = ("float", "double") if fp64 else ("float",)
        helpers = "".join(self.FLOOR_DIVIDE.replace("T", t) for t in floats) + self.BF16_STORE
        return ("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else "") + helpers

    # -- reductions: one work-item per output element, looping over the reduced extent ------------------
    REDUCTIONS = {  # (init, step, result); x is the element in the accumulator's type
        "sum": ("({A})0", "acc += x;", "acc"),
        "prod": ("({A})1", "acc *= x;", "acc"),
        "amax": ("FIRST", "if (x > acc || x != x) acc = x;", "acc"),  # once acc is NaN, nothing replaces it
        "amin": ("FIRST", "if (x < acc || x != x) acc = x;", "acc"),
        "any": ("({A})0", "acc = acc || (x != 0);", "acc"),
        "all": ("({A})1", "acc = acc && (x != 0);", "acc"),
        "argmax": ("FIRST", "if (acc == acc && (x > acc || x != x)) { acc = x; arg = j; }", "arg"),
        "argmin": ("FIRST", "if (acc == acc && (x < acc || x != x)) { acc = x; arg = j; }", "arg"),
    }

    def render_reduction(self, op: str, in_dtype: str, acc_dtype: str, out_dtype: str, keep_rank: int,
                         red_rank: int) -> tuple:
        """(name, source) of ``out[i] = reduce(in over the reduced dims)`` for output element i (contiguous out)."""
        init, step, result = self.REDUCTIONS[op]
        idx, g = self.index_type, self.global_qualifier
        acc_t, in_t, out_t = self.compute_type(acc_dtype), self.type_name(in_dtype), self.type_name(out_dtype)
        name = f"{op}_{in_dtype}_{acc_dtype}_{out_dtype}_{keep_rank}k{red_rank}r"

        def peel(var: str, shape: str, strides: str, rank: int, into: str) -> str:
            return (f"{{ {idx} rest = {var}; for (int d = {rank - 1}; d >= 0; d--) {{ {idx} c = rest % {shape}[d]; "
                    f"rest /= {shape}[d]; {into} += c * {strides}[d]; }} }}") if rank else ""

        first, first_value = init == "FIRST", self.cast(acc_t, self.load("in", in_dtype, "base"))
        lines = [
            f"{self.kernel_prefix}void {name}({idx} n, {idx} r, {g}const {idx}* keep_shape, "
            f"{g}const {idx}* keep_strides, {g}const {idx}* red_shape, {g}const {idx}* red_strides, {idx} offset, "
            f"{g}const {in_t}* in, {g}{out_t}* out) {{",
            f"    {idx} i = get_global_id(0);",
            "    if (i >= n) return;",
            f"    {idx} base = offset;",
            "    " + peel("i", "keep_shape", "keep_strides", keep_rank, "base"),
            f"    {acc_t} acc = {first_value if first else init.format(A=acc_t)};",
            f"    {idx} arg = 0;",
            f"    for ({idx} j = {1 if first else 0}; j < r; j++) {{",
            f"        {idx} at = base;",
            "        " + peel("j", "red_shape", "red_strides", red_rank, "at"),
            f"        {acc_t} x = {self.cast(acc_t, self.load('in', in_dtype, 'at'))};",
            f"        {step}",
            "    }",
            "    " + self.store("out", out_dtype, "i",
                               self.cast(out_t, result + (" != 0" if out_dtype == "bool" and result == "acc" else ""))),
            "}",
        ]
        return name, "\n".join(line for line in lines if line.strip()) + "\n"

    # -- batched GEMM: TILE x TILE work-groups staging tiles of A and B in local memory -------------------
    def render_gemm(self, dtype: str) -> tuple:
        """(name, source) of C[b] = A[b] @ B[b] over strided A (batch, n, k) and B (batch, k, m); C contiguous.
        Half types stage float tiles and accumulate in float, rounding each result once."""
        t, idx, g, ts = self.compute_type(dtype), self.index_type, self.global_qualifier, GEMM_TILE
        storage = self.type_name(dtype)
        name = f"gemm_{dtype}"
        a_at, b_at = "a0 + row * a_sn + ak * a_sk", "b0 + bk * b_sk + col * b_sm"
        source = f"""{self.kernel_prefix}void {name}({idx} n, {idx} m, {idx} k,
        {g}const {storage}* A, {idx} a_off, {idx} a_sb, {idx} a_sn, {idx} a_sk,
        {g}const {storage}* B, {idx} b_off, {idx} b_sb, {idx} b_sk, {idx} b_sm, {g}{storage}* C) {{
    __local {t} As[{ts}][{ts}];
    __local {t} Bs[{ts}][{ts} + 1];
    const int lr = get_local_id(1), lc = get_local_id(0);
    const {idx} row = get_group_id(1) * {ts} + lr, col = get_group_id(0) * {ts} + lc, b = get_global_id(2);
    const {idx} a0 = a_off + b * a_sb, b0 = b_off + b * b_sb;
    {t} acc = 0;
    for ({idx} t0 = 0; t0 < k; t0 += {ts}) {{
        {idx} ak = t0 + lc, bk = t0 + lr;
        As[lr][lc] = (row < n && ak < k) ? {self.cast(t, self.load("A", dtype, a_at))} : ({t})0;
        Bs[lr][lc] = (bk < k && col < m) ? {self.cast(t, self.load("B", dtype, b_at))} : ({t})0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = 0; q < {ts}; q++) acc += As[lr][q] * Bs[q][lc];
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (row < n && col < m) {{ {self.store("C", dtype, "b * n * m + row * m + col", "acc")} }}
}}
"""
        return name, source

    # -- indexed copies: gather/index read through int64 index tensors, scatter_/index_put_ write through them ---
    COMBINES = {  # dst = combine(dst, x) of an indexed write; bool sums are ors, products ands (as NumPy's)
        None: "{x}", "sum": "{d} + {x}", "prod": "{d} * {x}", "amax": "({x} > {d} || {x} != {x}) ? {x} : {d}",
        "amin": "({x} < {d} || {x} != {x}) ? {x} : {d}", "bool:sum": "{d} || {x}", "bool:prod": "{d} && {x}",
    }

    def render_indexed(self, write: bool, dtype: str, indices: int, rank: int, combine: str | None = None,
                       identity: str | None = None) -> tuple:
        """(name, source) of an indexed copy over a rank-``rank`` iteration shape with ``indices`` int64 indices.

        Element ``e`` has the address ``base + Σ_k wrap(index_k[e]) * dim_strides[k]`` in the indexed tensor
        (``base`` from its strides over the iteration, index values < 0 counted from ``sizes[k]``) and a plain
        strided address in the other one. Reading (``write=False``): ``out[e] = indexed[...]``, one work-item per
        element. Writing: ``indexed[...] = combine(indexed[...], other[e])``; work-item ``i`` runs elements
        ``i * r .. i * r + r - 1`` in order (``r = n`` serialises a write whose targets may collide anywhere),
        first resetting its targets to ``identity`` when one is given (scatter's ``include_self=False``).
        """
        t, idx, g = self.type_name(dtype), self.index_type, self.global_qualifier
        half = dtype in HALF  # copied as their 16 bits (the kernels combine half values in a float32 copy)
        if half and write and (combine is not None or identity is not None):
            raise ValueError(f"render_indexed: {dtype} is copied only, not combined ({combine})")
        op = (f"bool:{combine}" if dtype == "bool" and combine in ("sum", "prod") else combine) if write else None
        name = f"{'put' if write else 'take'}_{dtype}_{indices}i_{rank}d_{op or 'set'}".replace(":", "_")
        reads, writes = ("const ", "") if write else ("", "const ")
        params = [f"{idx} m", f"{idx} r", f"{g}const {idx}* shape", f"{g}{writes}{t}* indexed",
                  f"{g}const {idx}* indexed_strides", f"{idx} indexed_offset", f"{g}{reads}{t}* other",
                  f"{g}const {idx}* other_strides", f"{idx} other_offset", f"{g}const {idx}* sizes",
                  f"{g}const {idx}* dim_strides"]
        for k in range(indices):
            params += [f"{g}const long* index{k}", f"{g}const {idx}* index{k}_strides", f"{idx} index{k}_offset"]
        targets = [("at", "indexed_strides"), ("o", "other_strides")] + [(f"ik{k}", f"index{k}_strides")
                                                                         for k in range(indices)]

        def element(indent: str) -> list:
            lines = [f"{indent}{idx} at = indexed_offset, o = other_offset" +
                     "".join(f", ik{k} = index{k}_offset" for k in range(indices)) + ";"]
            lines += self._peel(indent, "e", "shape", rank, targets)
            for k in range(indices):
                lines.append(f"{indent}{{ {idx} v = index{k}[ik{k}]; at += (v < 0 ? v + sizes[{k}] : v) * "
                             f"dim_strides[{k}]; }}")
            return lines

        body = [self.signature(name, params) + " {", f"    {idx} i = get_global_id(0);", "    if (i >= m) return;"]
        loop = f"    for ({idx} e = i * r; e < i * r + r; e++) {{"
        if not write:
            body += [loop] + element("        ") + [f"        {self._bits('other', half)}[o] = "
                                                   f"{self._bits('indexed', half, 'const ')}[at];", "    }"]
        elif half:
            body += [loop] + element("        ") + [f"        {self._bits('indexed', half)}[at] = "
                                                   f"{self._bits('other', half, 'const ')}[o];", "    }"]
        else:
            if identity is not None:
                body += [loop] + element("        ") + [f"        indexed[at] = ({t})({identity});", "    }"]
            update = self.COMBINES[op].format(d="indexed[at]", x=f"(({t})other[o])")
            body += [loop] + element("        ") + [f"        indexed[at] = ({t})({update});", "    }"]
        body.append("}")
        return name, "\n".join(body) + "\n"

    def _bits(self, buffer: str, half: bool, const: str = "") -> str:
        """``buffer`` as an array of its elements' bits where they are float16/bfloat16 (copied without arithmetic,
        which OpenCL C has not for half without cl_khr_fp16), else as it is."""
        return f"(({self.global_qualifier}{const}ushort*){buffer})" if half else buffer

    # -- random fills: counter-based, element e of a fill draws from hash(seed, 2 * (offset + e) + {0, 1}) --------
    RANDOM_BITS = """inline ulong core_mix64(ulong z) {  /* SplitMix64's finaliser: a counter becomes 64 random bits */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}
"""
    RANDOM_VALUES = {  # over u, u2 (uniform in [0, 1)), bits (64 random bits) and the parameters a, b
        "uniform_": "a + (b - a) * u",
        "normal_": "a + b * sqrt(-2 * log(1 - u)) * cospi(2 * u2)",
        "exponential_": "-log1p(-u) / a",
        "random_": "a + (long)(bits % b)",
        "bernoulli_": "u < p",
    }

    def render_random(self, op: str, dtype: str, work: str, rank: int, p_dtype: str | None = None) -> tuple:
        """(name, source) of ``out[e] = value(op)`` over a strided rank-``rank`` out; ``work`` is the float type
        draws are made in (uniforms: the top 24 or 53 bits); ``p_dtype``: bernoulli's p is a strided tensor."""
        t, w, idx, g = self.type_name(dtype), self.type_name(work), self.index_type, self.global_qualifier
        name = f"{op.rstrip('_')}_{dtype}_{work}_{rank}d{'_p' + p_dtype if p_dtype else ''}"
        integer = op == "random_"
        params = [f"{idx} n", f"{g}const {idx}* shape", f"{g}{t}* out", f"{g}const {idx}* out_strides",
                  f"{idx} out_offset", "ulong key", "ulong offset", f"{'long' if integer else w} a",
                  f"{'ulong' if integer else w} b"]
        targets = [("o", "out_strides")]
        if p_dtype:
            params += [f"{g}const {self.type_name(p_dtype)}* p_in", f"{g}const {idx}* p_strides", f"{idx} p_offset"]
            targets.append(("pa", "p_strides"))
        bits, scale = (11, "0x1.0p-53") if work == "float64" else (40, "0x1.0p-24f")
        counter = "2 * (offset + (ulong)e)"
        body = [self.RANDOM_BITS + self.signature(name, params) + " {", f"    {idx} e = get_global_id(0);",
                "    if (e >= n) return;", f"    {idx} o = out_offset{', pa = p_offset' if p_dtype else ''};"]
        body += self._peel("    ", "e", "shape", rank, targets)
        body += [f"    ulong bits = core_mix64(key + ({counter} + 1) * 0x9E3779B97F4A7C15UL);",
                 f"    {w} u = ({w})(bits >> {bits}) * {scale};",
                 f"    {w} u2 = ({w})(core_mix64(key + ({counter} + 2) * 0x9E3779B97F4A7C15UL) >> {bits}) * {scale};",
                 f"    {w} p = {'(' + w + ')p_in[pa]' if p_dtype else 'a'};",
                 f"    out[o] = ({t})({self.RANDOM_VALUES[op]});", "}"]
        return name, "\n".join(body) + "\n"

    def render_permutation(self, dtype: str) -> dict:
        """{member: (name, source)} of randperm: ``keys`` draws 64 random bits per element, ``rank`` writes ``j`` at
        the count of keys ordered before key ``j`` (ties by position, so the result is always a permutation)."""
        idx, g, t = self.index_type, self.global_qualifier, self.type_name(dtype)
        keys, rank = f"randperm_keys_{dtype}", f"randperm_rank_{dtype}"
        return {
            "keys": (keys, self.RANDOM_BITS + f"""{self.kernel_prefix}void {keys}({idx} n, ulong key, ulong offset,
        {g}ulong* keys) {{
    {idx} e = get_global_id(0);
    if (e < n) keys[e] = core_mix64(key + (2 * (offset + (ulong)e) + 1) * 0x9E3779B97F4A7C15UL);
}}
"""),
            "rank": (rank, f"""{self.kernel_prefix}void {rank}({idx} n, {g}const ulong* keys, {g}{t}* out,
        {idx} out_offset, {idx} out_step) {{
    {idx} j = get_global_id(0);
    if (j >= n) return;
    ulong x = keys[j];
    {idx} position = 0;
    for ({idx} k = 0; k < n; k++) position += keys[k] < x || (keys[k] == x && k < j);
    out[out_offset + position * out_step] = ({t})j;
}}
"""),
        }

    def render_multinomial(self, dtype: str) -> dict:
        """{member: (name, source)} of multinomial over ``rows`` rows of ``c`` probabilities (contiguous, type
        ``dtype``), ``s`` samples per row. With replacement, ``search`` inverts each row's cumulative sum at
        u * total (the first category whose sum exceeds it; zero-probability categories are never chosen).
        Without, ``keys`` makes p / Exp(1) per category (-1 where p is 0) and ``top`` writes the categories of the
        ``s`` largest keys in order (ties by position): a weighted sample without replacement."""
        idx, g, t = self.index_type, self.global_qualifier, self.type_name(dtype)  # one program: core_mix64 once
        bits, scale = (11, "0x1.0p-53") if dtype == "float64" else (40, "0x1.0p-24f")
        draw = f"({t})(core_mix64(key + (2 * (offset + (ulong)e) + 1) * 0x9E3779B97F4A7C15UL) >> {bits}) * {scale}"
        search, keys, top = (f"multinomial_{step}_{dtype}" for step in ("search", "keys", "top"))
        return {
            "search": (search, self.RANDOM_BITS + f"""{self.kernel_prefix}void {search}({idx} n, {idx} c, {idx} s,
        {g}const {t}* cdf, ulong key, ulong offset, {g}long* out) {{
    {idx} e = get_global_id(0);
    if (e >= n) return;
    cdf += (e / s) * c;
    {t} target = {draw} * cdf[c - 1];
    {idx} lo = 0, hi = c;
    while (lo < hi) {{ {idx} mid = lo + (hi - lo) / 2; if (cdf[mid] > target) hi = mid; else lo = mid + 1; }}
    if (lo == c) {{ lo = c - 1; while (lo > 0 && cdf[lo] == cdf[lo - 1]) lo--; }}  /* target rounded up to the total */
    out[e] = lo;
}}
"""),
            "keys": (keys, f"""{self.kernel_prefix}void {keys}({idx} n, {g}const {t}* p, ulong key,
        ulong offset, {g}{t}* keys) {{
    {idx} e = get_global_id(0);
    if (e < n) keys[e] = p[e] > 0 ? p[e] / -log1p(-{draw}) : ({t})-1;
}}
"""),
            "top": (top, f"""{self.kernel_prefix}void {top}({idx} n, {idx} c, {idx} s, {g}const {t}* keys,
        {g}long* out) {{
    {idx} e = get_global_id(0);
    if (e >= n) return;
    {idx} row = e / c, j = e % c, position = 0;
    keys += row * c;
    {t} x = keys[j];
    for ({idx} k = 0; k < c && position < s; k++) position += keys[k] > x || (keys[k] == x && k < j);
    if (position < s) out[row * s + position] = j;
}}
"""),
        }

    # -- one work-item per row along a dim: scans (cumsum, cumprod, cummax, cummin) and a stable rank sort -------
    SCANS = {  # (update of acc by x at position j; whether the op also writes the position that set acc)
        "cumsum": ("acc = j ? acc + x : x;", False), "cumprod": ("acc = j ? acc * x : x;", False),
        "cummax": ("acc = (j && acc != acc) ? acc : ((!j || x > acc || x != x) ? x : acc); "
                   "if (x == acc || x != x) arg = j;", True),
        "cummin": ("acc = (j && acc != acc) ? acc : ((!j || x < acc || x != x) ? x : acc); "
                   "if (x == acc || x != x) arg = j;", True),
    }

    def render_scan(self, op: str, in_dtype: str, acc_dtype: str, out_dtype: str, rank: int) -> tuple:
        """(name, source): work-item ``i`` scans row ``i`` (rows: the other dims, rank ``rank``) along the dim."""
        update, with_index = self.SCANS[op]
        idx, g = self.index_type, self.global_qualifier
        a, t_in, t_out = self.compute_type(acc_dtype), self.type_name(in_dtype), self.type_name(out_dtype)
        name = f"{op}_{in_dtype}_{acc_dtype}_{out_dtype}_{rank}d"
        params = [f"{idx} n", f"{idx} length", f"{g}const {idx}* shape", f"{g}const {t_in}* in",
                  f"{g}const {idx}* in_strides", f"{idx} in_offset", f"{idx} in_step", f"{g}{t_out}* out",
                  f"{g}const {idx}* out_strides", f"{idx} out_step"] + ([f"{g}long* out_index"] if with_index else [])
        body = [self.signature(name, params) + " {", f"    {idx} i = get_global_id(0);", "    if (i >= n) return;",
                f"    {idx} at = in_offset, o = 0;"]
        body += self._peel("    ", "i", "shape", rank, [("at", "in_strides"), ("o", "out_strides")])
        body += [f"    {a} acc = 0;", "    long arg = 0;", f"    for ({idx} j = 0; j < length; j++) {{",
                 f"        {a} x = {self.cast(a, self.load('in', in_dtype, 'at + j * in_step'))};", f"        {update}",
                 "        " + self.store("out", out_dtype, "o + j * out_step", self.cast(t_out, "acc"))]
        body += ["        out_index[o + j * out_step] = arg;"] if with_index else []
        body += ["    }", "}"]
        return name, "\n".join(body) + "\n"

    def render_sort(self, dtype: str, descending: bool, rank: int) -> tuple:
        """(name, source) of a stable sort by rank: element ``j`` of a row goes to the count of the row's elements
        ordered before it (NaN last ascending, first descending; ties keep their order), O(length) per element."""
        idx, g, t = self.index_type, self.global_qualifier, self.type_name(dtype)
        name = f"sort_{dtype}_{'desc' if descending else 'asc'}_{rank}d"
        cmp = ">" if descending else "<"
        nan_first = "(y != y && x == x)" if descending else "(x != x && y == y)"  # y before x by NaN-ness
        params = [f"{idx} n", f"{idx} length", f"{g}const {idx}* shape", f"{g}const {t}* in",
                  f"{g}const {idx}* in_strides", f"{idx} in_offset", f"{idx} in_step", f"{g}{t}* values",
                  f"{g}long* indices", f"{g}const {idx}* out_strides", f"{idx} out_step"]
        body = [self.signature(name, params) + " {", f"    {idx} e = get_global_id(0);", "    if (e >= n) return;",
                f"    {idx} i = e / length, j = e % length, at = in_offset, o = 0;"]
        body += self._peel("    ", "i", "shape", rank, [("at", "in_strides"), ("o", "out_strides")])
        half = dtype in HALF  # compared as float, copied as their 16 bits
        ct = self.compute_type(dtype)
        body += [f"    {ct} x = {self.load('in', dtype, 'at + j * in_step')};", f"    {idx} position = 0;",
                 f"    for ({idx} k = 0; k < length; k++) {{",
                 f"        {ct} y = {self.load('in', dtype, 'at + k * in_step')};",
                 "        bool same = (x == y) || (x != x && y != y);",
                 f"        position += (y {cmp} x) || {nan_first} || (same && k < j);", "    }",
                 f"    {self._bits('values', half)}[o + position * out_step] = "
                 + (f"{self._bits('in', half, 'const ')}[at + j * in_step];" if half else "x;"),
                 "    indices[o + position * out_step] = j;", "}"]
        return name, "\n".join(body) + "\n"

    def render_searchsorted(self, seq_dtype: str, val_dtype: str, compute: str, out_dtype: str, right: bool,
                            sorter: bool) -> tuple:
        """(name, source) of searchsorted over contiguous operands: work-item ``e`` binary-searches query ``e`` in
        boundary row ``batched ? e / m : 0`` (through ``sorter`` where given); NaN is the largest value."""
        idx, g, c = self.index_type, self.global_qualifier, self.type_name(compute)
        name = f"searchsorted_{seq_dtype}_{val_dtype}_{compute}_{out_dtype}_{'right' if right else 'left'}" + (
            "_sorter" if sorter else "")
        floating = compute in ("float32", "float64")
        less = "((x < y) || (y != y && x == x))" if floating else "(x < y)"  # x before y, NaN last
        # left: the first k with !(s[k] < v); right: the first k with v < s[k]
        step = f"{{ {c} x = v, y = s; if (!{less}) lo = mid + 1; else hi = mid; }}" if right else \
            f"{{ {c} x = s, y = v; if ({less}) lo = mid + 1; else hi = mid; }}"
        params = [f"{idx} n", f"{idx} m", f"{idx} length", "int batched", f"{g}const {self.type_name(seq_dtype)}* seq",
                  f"{idx} seq_offset", f"{g}const {self.type_name(val_dtype)}* values", f"{idx} values_offset",
                  f"{g}const long* sorter", f"{idx} sorter_offset", f"{g}{self.type_name(out_dtype)}* out"]
        at = "base + sorter[base + mid]" if sorter else "base + mid"
        body = [self.signature(name, params) + " {", f"    {idx} e = get_global_id(0);", "    if (e >= n) return;",
                "    seq += seq_offset; values += values_offset; sorter += sorter_offset;",
                f"    {idx} base = batched ? (e / m) * length : 0, lo = 0, hi = length;",
                f"    {c} v = ({c})values[e];", "    while (lo < hi) {", f"        {idx} mid = lo + (hi - lo) / 2;",
                f"        {c} s = ({c})seq[{at}];",
                f"        {step}", "    }", f"    out[e] = ({self.type_name(out_dtype)})lo;", "}"]
        return name, "\n".join(body) + "\n"

    def render_unique(self, dtype: str) -> dict:
        """{member: (name, source)} of unique's steps over a contiguous run ``v`` of n elements (sorted for unique):
        ``starts`` marks the first element of each run of equal ones (NaNs never equal), ``compact`` writes each
        run's value and first position at its group (the inclusive scan of starts, minus one) and each element's
        group to ``inverse`` (through ``order``, the sort's permutation, when given), ``counts`` the run lengths."""
        idx, g, t = self.index_type, self.global_qualifier, self.type_name(dtype)
        starts, compact, counts = (f"unique_{step}_{dtype}" for step in ("starts", "compact", "counts"))
        return {
            "starts": (starts, f"""{self.kernel_prefix}void {starts}({idx} n, {g}const {t}* v, {g}long* starts) {{
    {idx} i = get_global_id(0);
    if (i < n) starts[i] = i == 0 || !(v[i] == v[i - 1]);
}}
"""),
            "compact": (compact, f"""{self.kernel_prefix}void {compact}({idx} n, {g}const {t}* v, {g}const long* starts,
        {g}const long* group, {g}const long* order, int ordered, {g}{t}* values, {g}long* first,
        {g}long* inverse) {{
    {idx} i = get_global_id(0);
    if (i >= n) return;
    long k = group[i] - 1;
    if (starts[i]) {{ values[k] = v[i]; first[k] = i; }}
    inverse[ordered ? order[i] : i] = k;
}}
"""),
            "counts": (counts, f"""{self.kernel_prefix}void {counts}({idx} groups, {idx} n, {g}const long* first,
        {g}long* counts) {{
    {idx} k = get_global_id(0);
    if (k < groups) counts[k] = (k + 1 < groups ? first[k + 1] : n) - first[k];
}}
"""),
        }

    def render_nonzero(self, dtype: str, rank: int) -> tuple:
        """(name, source) of nonzero: one work-item walks the elements in row-major order and writes the
        coordinates of each nonzero one as the next row of the (count, rank) int64 output."""
        idx, g, t = self.index_type, self.global_qualifier, self.type_name(dtype)
        name = f"nonzero_{dtype}_{rank}d"
        params = [f"{idx} n", f"{g}const {idx}* shape", f"{g}const {t}* in", f"{g}const {idx}* in_strides",
                  f"{idx} in_offset", f"{g}long* out"]
        body = [self.signature(name, params) + " {", "    if (get_global_id(0) != 0) return;", f"    {idx} row = 0;",
                f"    for ({idx} e = 0; e < n; e++) {{", f"        {idx} at = in_offset, rest = e;"]
        for d in range(rank - 1, -1, -1):
            body.append(f"        {idx} c{d} = rest % shape[{d}]; rest /= shape[{d}]; at += c{d} * in_strides[{d}];")
        body += [f"        if ({self.load('in', dtype, 'at')} != 0) {{"]
        body += [f"            out[row * {rank} + {d}] = c{d};" for d in range(rank)]
        body += ["            row++;", "        }", "    }", "}"]
        return name, "\n".join(body) + "\n"
