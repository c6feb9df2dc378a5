"""The OpenCL C dialect of core's C-style renderer, plus the reduction and tiled GEMM templates."""

from __future__ import annotations

from core.codegen import CStyleRenderer

__all__ = ["OpenCLRenderer", "LOCAL_SIZE", "GEMM_TILE"]

LOCAL_SIZE = 64  # one fixed work-group size: PoCL compiles a kernel once per local size it is launched with
GEMM_TILE = 16
_INTEGRAL = {"int8", "uint8", "int16", "int32", "int64", "bool"}


class OpenCLRenderer(CStyleRenderer):
    """OpenCL C: ``__kernel``/``__global``, the work-item id as the element index, 64-bit ``long`` indices."""

    dialect = "opencl"
    types = {"float32": "float", "float64": "double", "int8": "char", "uint8": "uchar", "int16": "short",
             "int32": "int", "int64": "long", "bool": "uchar"}
    index_type = "long"
    global_qualifier = "__global "
    kernel_prefix = "__kernel "
    float_suffix_functions = False  # OpenCL math builtins are overloaded: exp(float) is float

    def function(self, name: str, dtype: str) -> str:
        if name == "fabs" and dtype in _INTEGRAL:
            return "abs"  # fabs has no integer overloads in OpenCL C
        return name

    def loop_open(self) -> list:
        return [f"{self.index_type} i = get_global_id(0);", "if (i < n) {"]

    def loop_close(self) -> list:
        return ["}"]

    def preamble(self) -> str:
        return ""

    def header(self, fp64: bool) -> str:
        """Text once per program (the fp64 pragma where the device has it)."""
        return "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else ""

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
        acc_t, in_t, out_t = self.type_name(acc_dtype), self.type_name(in_dtype), self.type_name(out_dtype)
        name = f"{op}_{in_dtype}_{acc_dtype}_{out_dtype}_{keep_rank}k{red_rank}r"

        def peel(var: str, shape: str, strides: str, rank: int, into: str) -> str:
            return (f"{{ {idx} rest = {var}; for (int d = {rank - 1}; d >= 0; d--) {{ {idx} c = rest % {shape}[d]; "
                    f"rest /= {shape}[d]; {into} += c * {strides}[d]; }} }}") if rank else ""

        first = init == "FIRST"
        lines = [
            f"{self.kernel_prefix}void {name}({idx} n, {idx} r, {g}const {idx}* keep_shape, "
            f"{g}const {idx}* keep_strides, {g}const {idx}* red_shape, {g}const {idx}* red_strides, {idx} offset, "
            f"{g}const {in_t}* in, {g}{out_t}* out) {{",
            f"    {idx} i = get_global_id(0);",
            "    if (i >= n) return;",
            f"    {idx} base = offset;",
            "    " + peel("i", "keep_shape", "keep_strides", keep_rank, "base"),
            f"    {acc_t} acc = {('(' + acc_t + ')in[base]') if first else init.format(A=acc_t)};",
            f"    {idx} arg = 0;",
            f"    for ({idx} j = {1 if first else 0}; j < r; j++) {{",
            f"        {idx} at = base;",
            "        " + peel("j", "red_shape", "red_strides", red_rank, "at"),
            f"        {acc_t} x = ({acc_t})in[at];",
            f"        {step}",
            "    }",
            f"    out[i] = ({out_t})({result}{' != 0' if out_dtype == 'bool' and result == 'acc' else ''});",
            "}",
        ]
        return name, "\n".join(line for line in lines if line.strip()) + "\n"

    # -- batched GEMM: TILE x TILE work-groups staging tiles of A and B in local memory -------------------
    def render_gemm(self, dtype: str) -> tuple:
        """(name, source) of C[b] = A[b] @ B[b] over strided A (batch, n, k) and B (batch, k, m); C contiguous."""
        t, idx, g, ts = self.type_name(dtype), self.index_type, self.global_qualifier, GEMM_TILE
        name = f"gemm_{dtype}"
        source = f"""{self.kernel_prefix}void {name}({idx} n, {idx} m, {idx} k,
        {g}const {t}* A, {idx} a_off, {idx} a_sb, {idx} a_sn, {idx} a_sk,
        {g}const {t}* B, {idx} b_off, {idx} b_sb, {idx} b_sk, {idx} b_sm, {g}{t}* C) {{
    __local {t} As[{ts}][{ts}];
    __local {t} Bs[{ts}][{ts} + 1];
    const int lr = get_local_id(1), lc = get_local_id(0);
    const {idx} row = get_group_id(1) * {ts} + lr, col = get_group_id(0) * {ts} + lc, b = get_global_id(2);
    A += a_off + b * a_sb;
    B += b_off + b * b_sb;
    {t} acc = 0;
    for ({idx} t0 = 0; t0 < k; t0 += {ts}) {{
        {idx} ak = t0 + lc, bk = t0 + lr;
        As[lr][lc] = (row < n && ak < k) ? A[row * a_sn + ak * a_sk] : ({t})0;
        Bs[lr][lc] = (bk < k && col < m) ? B[bk * b_sk + col * b_sm] : ({t})0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = 0; q < {ts}; q++) acc += As[lr][q] * Bs[q][lc];
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (row < n && col < m) C[b * n * m + row * m + col] = acc;
}}
"""
        return name, source
