"""cpu_c's fused kernels for core.jit: rendered C, compiled at run time with gcc, loaded with cffi (ABI mode).

A :class:`core.codegen.FusedKernel` is rendered per *layout class*: after broadcasting and collapsing dims, each
input's innermost stride is 1 (``c``), 0 (``b``, broadcast) or anything else (``s``). Threads split the flat range;
each walks rows whose coordinates are computed once per row, and the row's inner loop reads contiguous inputs by
``k``, broadcast ones once, strided ones by ``k * stride`` — a loop GCC vectorises (``#pragma omp simd``). A
reduction over the trailing dims runs one row of kept coordinates per iteration (rows spread over threads, or one
row's columns split across threads when rows are fewer than threads) and walks the reduced block the same way.

Libraries are compiled with ``gcc -O3 -march=native -fopenmp -std=c99`` (ISO C: no contraction of ``a*b+c`` into an
FMA, so results equal the unfused kernels'), cached on disk under ``CORE_JIT_CACHE_DIR`` (default
``~/.cache/core/jit``) by a hash of source, flags, compiler and CPU, and written atomically. They link the same
libgomp as the extension, so ``set_num_threads`` applies to them too; cffi releases the GIL during calls.
"""

from __future__ import annotations

import hashlib
import math
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import core
from core.backends.api import broadcast_strides, coalesce
from core.codegen import CRenderer, FusedKernel

from .layout import check_bounds
from .renderer import OwnMathFunctions
from .runtime import new_tensor

__all__ = ["FusedCRenderer", "FusedLauncher", "compile_library", "compiler", "cache_dir", "FLAGS"]

FLAGS = ("-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-fno-math-errno", "-std=c99")
PARALLEL_MIN = 32768  # elements below which a kernel stays on the calling thread
_MAX_PARTS = 64
_LIBRARIES: dict = {}  # file stem -> (ffi, lib), loaded once per process
_LAYOUT_CACHE = 256
CSRC = Path(__file__).parent / "csrc"  # vecmath.h: libmvec's SIMD exp, tanh, ... (csrc/vecmath.h)
_VECMATH = (CSRC / "vecmath.h").read_text()


def compiler() -> str | None:
    """The path of gcc, or None when it is missing (then cpu_c does not fuse)."""
    return shutil.which("gcc")


def cache_dir() -> Path:
    """Where compiled libraries live: ``$CORE_JIT_CACHE_DIR``, else ``~/.cache/core/jit``."""
    return Path(os.environ.get("CORE_JIT_CACHE_DIR") or Path.home() / ".cache" / "core" / "jit")


_IDENTITY: list = []


def _identity() -> str:
    """Compiler version and CPU model: a library built with -march=native is only valid where both match."""
    if not _IDENTITY:
        version = subprocess.run([compiler(), "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        cpu = platform.machine()
        try:
            cpu += next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
        except (OSError, StopIteration):
            pass
        _IDENTITY.append(version + cpu)
    return _IDENTITY[0]


def compile_library(source: str, declarations: str):
    """``(ffi, lib)`` of C ``source`` whose functions ``declarations`` declares, compiled once and cached on disk.

    Raises RuntimeError when gcc is missing or the source does not compile (with gcc's message).
    """
    gcc = compiler()
    if gcc is None:
        raise RuntimeError("cpu_c fused kernels need gcc on PATH to compile at run time (install gcc, or trace "
                           "without fusion: core.jit.trace(..., optimize=False))")
    key = (source, " ".join(FLAGS), _identity(), _VECMATH)  # the included header's text too
    stem = hashlib.sha256("\0".join(key).encode()).hexdigest()[:32]
    loaded = _LIBRARIES.get(stem)
    if loaded is not None:
        return loaded
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}.so"
    if not path.exists():
        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            c_file, so_file = Path(tmp) / "kernel.c", Path(tmp) / "kernel.so"
            c_file.write_text(source)
            done = subprocess.run([gcc, *FLAGS, "-I", str(CSRC), str(c_file), "-o", str(so_file), "-lm"],
                                  capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"gcc failed to compile a fused kernel:\n{done.stderr}\n--- source ---\n{source}")
            os.replace(so_file, path)  # atomic: another process sees the whole library or none
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(declarations)
    loaded = _LIBRARIES[stem] = (ffi, ffi.dlopen(str(path)))
    return loaded


class FusedCRenderer(OwnMathFunctions, CRenderer):
    """Renders a FusedKernel as a row-walking C function specialised for its inputs' inner-stride classes."""

    def signature_params(self, kernel: FusedKernel) -> list:
        """The parameters: sizes, the layout array, output pointers, input pointers."""
        lead = (["long long rows", "long long cols", "int kdim", "int rdim"] if kernel.reduction
                else ["long long n", "int ndim"])
        outs = [f"void* out{m}_base" for m in range(len(kernel.output_types()))]
        return lead + ["const long long* meta"] + outs + [f"const void* in{k}_base" for k in range(len(kernel.inputs))]

    def _pointers(self, kernel: FusedKernel) -> list:
        lines = [f"    {self.type_name(d)}* restrict out{m} = ({self.type_name(d)}*)out{m}_base;"
                 for m, (_, d) in enumerate(kernel.output_types())]
        lines += [f"    const {self.type_name(d)}* restrict in{k} = (const {self.type_name(d)}*)in{k}_base;"
                  for k, d in enumerate(kernel.inputs)]
        return lines

    def _run(self, kernel: FusedKernel, classes: tuple, indent: str, start: str, stop: str, shape: str,
             rank: str, strides: str, base: str, out_at: str, reduce_clause: str = "", accumulate: str = "") -> list:
        """Walk flat indices ``[start, stop)`` of a (``shape``, ``rank``) block in runs of its inner dim.

        ``strides`` / ``base`` format an input's strides array / first offset from its number ``k``; elementwise
        outputs are written contiguously from ``out_at`` + the flat index.
        """
        ins = range(len(kernel.inputs))
        i = indent
        lines = [f"{i}long long j = {start};", f"{i}const long long inner = {shape}[{rank} - 1];",
                 f"{i}while (j < {stop}) {{",
                 f"{i}    long long q = j / inner, jj = j % inner, len = inner - jj;",
                 f"{i}    if (len > {stop} - j) len = {stop} - j;"]
        lines += [f"{i}    long long at{k} = {base.format(k=k)} + jj * {strides.format(k=k)}[{rank} - 1];" for k in ins]
        lines += [f"{i}    for (int d = {rank} - 2; d >= 0; d--) {{",
                  f"{i}        long long c = q % {shape}[d]; q /= {shape}[d];"]
        lines += [f"{i}        at{k} += c * {strides.format(k=k)}[d];" for k in ins]
        lines += [f"{i}    }}"]
        lines += [f"{i}    const long long s{k} = {strides.format(k=k)}[{rank} - 1];" for k in ins if classes[k] == "s"]
        loads = {"c": "in{k}[at{k} + k]", "b": "in{k}[at{k}]", "s": "in{k}[at{k} + k * s{k}]"}
        lines += [f"{i}    #pragma omp simd{reduce_clause}", f"{i}    for (long long k = 0; k < len; k++) {{"]
        body = self.fused_statements(kernel, [loads[classes[k]].format(k=k) for k in ins])
        body += [f"out{m}[{out_at} + j + k] = v{s};" for m, s in enumerate(kernel.outputs)]
        lines += [f"{i}        {line}" for line in body + ([accumulate] if accumulate else [])]
        lines += [f"{i}    }}", f"{i}    j += len;", f"{i}}}"]
        return lines

    def render_rows(self, kernel: FusedKernel, classes: tuple) -> tuple:
        """``(name, source, declaration)`` of ``kernel`` for inputs of inner-stride ``classes`` (c, b or s each)."""
        name = f"{kernel.name}_{''.join(classes)}"
        signature = f"void {name}({', '.join(self.signature_params(kernel))})"
        nin = len(kernel.inputs)
        head = ["#include <math.h>", '#include "vecmath.h"', "#include <omp.h>", signature + " {"]
        head += self._pointers(kernel)
        if kernel.reduction is None:
            # meta: shape[ndim], each input's strides[ndim], the inputs' offsets
            body = ["    const long long* shape = meta;",
                    f"    const long long* offs = meta + {nin + 1} * ndim;",
                    f"    #pragma omp parallel if(n >= {PARALLEL_MIN})", "    {",
                    "        long long nt = omp_get_num_threads(), t = omp_get_thread_num();",
                    "        long long lo = n / nt * t + (t < n % nt ? t : n % nt);",
                    "        long long hi = lo + n / nt + (t < n % nt);"]
            body += self._run(kernel, classes, "        ", "lo", "hi", "shape", "ndim", "(meta + {k} * ndim + ndim)",
                              "offs[{k}]", "0")
            body += ["    }", "}"]
        else:
            body = self._reduction_body(kernel, classes)
        return name, "\n".join(head + body) + "\n", signature + ";\n"

    def _reduction_body(self, kernel: FusedKernel, classes: tuple) -> list:
        """meta: kept shape[kdim], reduced shape[rdim], per input kept strides[kdim] + reduced strides[rdim],
        then the inputs' offsets. Rows over threads, or one row's columns split when rows < threads."""
        red, nin = kernel.reduction, len(kernel.inputs)
        acc_t, out_t = self.type_name(red.acc), self.type_name(red.dtype)
        extremum = red.op != "sum"
        init = self.literal(self.FUSED_REDUCTIONS[red.op][0], red.acc)
        x = f"(({acc_t})v{red.step})"
        if extremum:
            cmp = ">" if red.op == "amax" else "<"
            clause = f" reduction({'max' if red.op == 'amax' else 'min'}:acc) reduction(|:nan)"
            accumulate = f"acc = {x} {cmp} acc ? {x} : acc; nan |= {x} != {x};"
            merge = f"if (part_acc[p] {cmp} acc) acc = part_acc[p]; nan |= part_nan[p];"
        else:
            clause, accumulate, merge = " reduction(+:acc)", f"acc += {x};", "acc += part_acc[p];"
        finish = f"({out_t})(nan ? NAN : acc)" if extremum else f"({out_t})acc"
        bases = [f"long long b{k} = offs[{k}];" for k in range(nin)]
        kept = ["{ long long rest = r; for (int d = kdim - 1; d >= 0; d--) { long long c = rest % kshape[d]; "
                "rest /= kshape[d]; " + " ".join(f"b{k} += c * ks{k}[d];" for k in range(nin)) + " } }"]

        def walk(indent: str, start: str, stop: str) -> list:
            return self._run(kernel, classes, indent, start, stop, "rshape", "rdim", "rs{k}", "b{k}", "r * cols",
                             clause, accumulate)

        lines = ["    const long long* kshape = meta;", "    const long long* rshape = meta + kdim;"]
        lines += [f"    const long long* ks{k} = meta + (kdim + rdim) * {k + 1};" for k in range(nin)]
        lines += [f"    const long long* rs{k} = ks{k} + kdim;" for k in range(nin)]
        lines += [f"    const long long* offs = meta + (kdim + rdim) * {nin + 1};",
                  "    int threads = omp_get_max_threads();",
                  f"    int parts = (rows >= threads || rows * cols < {PARALLEL_MIN} || threads < 2) ? 1 : "
                  f"(threads < {_MAX_PARTS} ? threads : {_MAX_PARTS});",
                  "    if (parts == 1) {",
                  f"        #pragma omp parallel for if(rows * cols >= {PARALLEL_MIN}) schedule(static)",
                  "        for (long long r = 0; r < rows; r++) {",
                  f"            {acc_t} acc = {init}; int nan = 0; (void)nan;"]
        lines += ["            " + s for s in bases + kept]
        lines += walk("            ", "0", "cols")
        lines += [f"            out{len(kernel.outputs)}[r] = {finish};", "        }", "        return;", "    }",
                  "    const long long chunk = (cols + parts - 1) / parts;",
                  "    for (long long r = 0; r < rows; r++) {",
                  f"        {acc_t} part_acc[{_MAX_PARTS}]; int part_nan[{_MAX_PARTS}];",
                  "        #pragma omp parallel for num_threads(parts) schedule(static)",
                  "        for (int p = 0; p < parts; p++) {",
                  f"            {acc_t} acc = {init}; int nan = 0; (void)nan;",
                  "            const long long first = p * chunk, last = first + chunk < cols ? first + chunk : cols;"]
        lines += ["            " + s for s in bases + kept]
        lines += walk("            ", "first", "last")
        lines += ["            part_acc[p] = acc; part_nan[p] = nan;", "        }",
                  f"        {acc_t} acc = {init}; int nan = 0; (void)nan;",
                  f"        for (int p = 0; p < parts; p++) {{ {merge} }}",
                  f"        out{len(kernel.outputs)}[r] = {finish};", "    }", "}"]
        return lines


_RENDERER = FusedCRenderer()


def _inner_class(stride: int) -> str:
    return "c" if stride == 1 else "b" if stride == 0 else "s"


class FusedLauncher:
    """Launches one FusedKernel on cpu_c tensors: layouts, output allocation, a compiled variant per class."""

    def __init__(self, kernel: FusedKernel):
        self.kernel = kernel
        self.shape = kernel.shape
        self.n = math.prod(kernel.shape)
        self.outputs = [(shape, getattr(core, d), math.prod(shape)) for shape, d in kernel.output_types()]
        self.split = len(kernel.shape) - kernel.reduction.dims if kernel.reduction else None
        self._variants: dict = {}  # classes -> (ffi, function)
        self._layouts: dict = {}  # input strides and offsets -> (function, ffi meta array, sizes)

    def _variant(self, classes: tuple):
        entry = self._variants.get(classes)
        if entry is None:
            name, source, declaration = _RENDERER.render_rows(self.kernel, classes)
            ffi, lib = compile_library(source, declaration)
            entry = self._variants[classes] = (ffi, getattr(lib, name))
        return entry

    def _layout(self, inputs: list) -> tuple:
        """(function, ffi, meta array, leading int arguments, bytes each input must have) for the inputs' layout."""
        for x, d in zip(inputs, self.kernel.inputs):
            if x.dtype.name != d:
                raise TypeError(f"jit::fused {self.kernel.name}: input of dtype {x.dtype.name}, kernel takes {d}")
            check_bounds(self.kernel.name, x)
        strides = [broadcast_strides(x._shape, x._stride, self.shape) for x in inputs]
        offsets = [x._offset for x in inputs]
        if self.split is None:
            cshape, cstrides = coalesce(self.shape, strides, min_rank=1)
            classes = tuple(_inner_class(s[-1]) for s in cstrides)
            meta = list(cshape) + [v for s in cstrides for v in s] + offsets
            sizes = (self.n, len(cshape))
        else:
            kshape, kstrides = coalesce(self.shape[:self.split], [s[:self.split] for s in strides], min_rank=1)
            rshape, rstrides = coalesce(self.shape[self.split:], [s[self.split:] for s in strides], min_rank=1)
            classes = tuple(_inner_class(s[-1]) for s in rstrides)
            meta = list(kshape) + list(rshape) + [v for ks, rs in zip(kstrides, rstrides) for v in (*ks, *rs)]
            meta += offsets
            sizes = (math.prod(kshape), math.prod(rshape), len(kshape), len(rshape))
        ffi, fn = self._variant(classes)
        needs = [(x._offset + 1 + sum((n - 1) * st for n, st in zip(x._shape, x._stride))) * x.dtype.itemsize
                 for x in inputs]
        return fn, ffi, ffi.new("long long[]", meta), sizes, needs

    def __call__(self, inputs):
        if self.n == 0:
            return self._allocate(inputs)[0]
        key = tuple((x._stride, x._offset) for x in inputs)  # shapes and dtypes are fixed by the graph
        layout = self._layouts.get(key)
        if layout is None:
            if any(st < 0 for x in inputs for st in x._stride):
                return None  # negative strides (C takes none): the ops run unfused
            if len(self._layouts) >= _LAYOUT_CACHE:
                self._layouts.clear()
            layout = self._layouts[key] = self._layout(inputs)
        fn, ffi, meta, sizes, needs = layout
        for x, need in zip(inputs, needs):
            if x._storage.data.nbytes < need:  # same layout, smaller storage: a bug upstream, refused before C
                check_bounds(self.kernel.name, x)
        outs, bufs = self._allocate(inputs)
        fb = ffi.from_buffer
        fn(*sizes, meta, *[fb(b) for b in bufs], *[fb(x._storage.data) for x in inputs])
        return outs

    def _allocate(self, inputs) -> tuple:
        """(output tensors, their buffers); with no elements, a sum's output holds zeros."""
        outs, bufs = [], []
        for shape, dtype, n in self.outputs:
            t, buf = new_tensor(shape, dtype, n * dtype.itemsize, inputs[0]._storage.key)
            outs.append(t)
            bufs.append(buf)
        if self.n == 0:
            for buf in bufs:
                buf[:] = 0  # an empty sum is 0 (extrema of nothing raise before a trace completes)
        return outs, bufs
