"""A differential fuzzer: seeded random ops on random shapes and layouts, a device against the NumPy reference.

Case ``(seed, index)`` is drawn from ``numpy.random.default_rng([seed, index])`` alone: an op from about forty
families (the elementwise ones are ``conformance.OP_DB``'s entries, with their dtypes, input domains and
tolerances), a dtype the op accepts, input shapes from 0-d to 5-D with empty and 1-sized dims, and for each input a
layout (contiguous, transposed, stepped slice, expanded, flipped). A batch of cases runs in two subprocesses: one on
the device under test and one on the NumPy reference backend (``CORE_BACKENDS=cpu=numpy``, as the test suite's
reference stage), each building the same inputs from the same seed. The results are compared as
``conformance.check_op`` compares them (``assert_close`` with the entry's tolerance, dtype and shape by name); when
one side raises, both must raise the same kind of error. A crash or hang of a batch is counted with the case it was
running and the batch goes on after it.

    python -m core.testing.fuzz --device opencl --cases 20000 --seed 0 --batch 500   # the long budget
    python -m core.testing.fuzz --device cpu --case 0:123                           # one case, both results
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np

import core

from . import assert_close, to_numpy
from .backend_check import refuses_float64
from .conformance import ALL, FLOATS, INTS, OP_DB, OpInfo, _values

__all__ = ["Case", "FAMILIES", "KNOWN_FAILURES", "draw_case", "make_view", "run_case", "compare", "fuzz",
           "format_summary", "replay", "main"]

MAX_NDIM = 5
MAX_NUMEL = 1500
# Known divergences, as (device type, op name or case id "SEED:INDEX") -> the bug and the case that shows it: counted
# as expected failures and printed in every summary, never hidden; an entry that stops failing is reported.
KNOWN_FAILURES: dict = {}


@dataclass
class Case:
    """One fuzz case: the op's label, its dtype, the input values with their layouts, and how to call it."""

    seed: int
    index: int
    op: str
    dtype: str
    inputs: list  # (values, layout) pairs, layout a tuple from _draw_layout
    call: Callable
    rtol: float | None = None
    atol: float | None = None

    @property
    def id(self) -> str:
        return f"{self.seed}:{self.index}"

    def describe(self) -> str:
        shapes = ", ".join(f"{v.shape}{'' if lay[0] == 'contiguous' else ' ' + lay[0]}" for v, lay in self.inputs)
        return f"case {self.id}: {self.op} {self.dtype} on inputs [{shapes}]"


# --- shapes and layouts --------------------------------------------------------------------------------------------

def _dim_size(rng) -> int:
    sizes = (0, 1, 1, 2, 2, 3, 3, 4, 5, 7)
    return int(rng.choice(sizes, p=(0.04, 0.12, 0.12, 0.12, 0.12, 0.12, 0.12, 0.08, 0.08, 0.08)))


def _shape(rng, min_ndim: int = 0, max_ndim: int = MAX_NDIM) -> tuple:
    """A random shape: 0-d to 5-D, sometimes empty, often with 1-sized dims, at most MAX_NUMEL elements."""
    ndim = int(rng.integers(min_ndim, max_ndim + 1))
    shape = [_dim_size(rng) for _ in range(ndim)]
    while int(np.prod(shape)) > MAX_NUMEL:
        shape[int(np.argmax(shape))] //= 2
    return tuple(shape)


def _broadcast_partner(rng, shape: tuple) -> tuple:
    """A shape that broadcasts with ``shape``: leading dims dropped, some sizes set to 1."""
    tail = shape[int(rng.integers(0, len(shape) + 1)):]
    return tuple(1 if rng.random() < 0.3 else s for s in tail)


def _draw_layout(rng, shape: tuple) -> tuple:
    """How an input of ``shape`` is laid out: a kind and its parameters (drawn here, applied on any device)."""
    ndim = len(shape)
    kinds = ["contiguous", "stepped", "flipped"] + (["transposed"] if ndim >= 2 else []) + \
            (["expanded"] if ndim >= 1 else [])
    kind = kinds[int(rng.integers(len(kinds)))]
    if kind == "transposed":
        return kind, tuple(int(i) for i in rng.permutation(ndim))
    if kind == "stepped":
        return kind, tuple(int(s) for s in rng.integers(1, 4, ndim)), tuple(int(o) for o in rng.integers(0, 2, ndim))
    if kind == "flipped":
        return kind, tuple(int(d) for d in np.flatnonzero(rng.random(ndim) < 0.5))
    if kind == "expanded":  # these dims hold one value broadcast along them
        return kind, tuple(int(d) for d in np.flatnonzero(rng.random(ndim) < 0.5))
    return (kind,)


_SPECIALS = (np.nan, np.inf, -np.inf, -0.0, 0.0)


def _input(rng, shape: tuple, dtype: str, domain=(-3.0, 3.0), layout: bool = True, specials: float = 0.0) -> tuple:
    """Values for one input and its layout; an expanded input's values are constant along the expanded dims.

    With probability ``specials`` a float input gets NaN, infinities and signed zeros in about a fifth of its places.
    """
    lay = _draw_layout(rng, shape) if layout else ("contiguous",)
    small = tuple(1 if d in lay[1] else s for d, s in enumerate(shape)) if lay[0] == "expanded" else shape
    values = _values(rng, small, dtype, domain)
    if dtype in FLOATS and rng.random() < specials:
        places = rng.random(small) < 0.2
        values[places] = rng.choice(_SPECIALS, int(places.sum()))
    return (np.broadcast_to(values, shape) if lay[0] == "expanded" else values), lay


def make_view(values: np.ndarray, layout: tuple, device: str):
    """A tensor on ``device`` equal to ``values``, laid out as ``layout`` says (a view where the layout is one)."""
    dtype = core.dtypes.from_numpy_dtype(values.dtype)
    kind = layout[0]
    if kind == "transposed":
        perm = layout[1]
        base = np.ascontiguousarray(values.transpose(np.argsort(perm)))
        return core.tensor(base, dtype=dtype, device=device).permute(*perm)
    if kind == "stepped":
        steps, offsets = layout[1], layout[2]
        big_shape = tuple(s * st + o for s, st, o in zip(values.shape, steps, offsets))
        big = np.full(big_shape, 7, dtype=values.dtype)  # a value the view must never show
        window = tuple(slice(o, o + s * st, st) for s, st, o in zip(values.shape, steps, offsets))
        big[window] = values
        return core.tensor(big, dtype=dtype, device=device)[window]
    if kind == "flipped":
        dims = layout[1]
        base = np.ascontiguousarray(np.flip(values, dims)) if dims else values
        return core.tensor(base, dtype=dtype, device=device).flip(dims) if dims else \
            core.tensor(base, dtype=dtype, device=device)
    if kind == "expanded":
        small = values[tuple(slice(0, 1) if d in layout[1] else slice(None) for d in range(values.ndim))]
        return core.tensor(np.ascontiguousarray(small), dtype=dtype, device=device).expand(values.shape)
    return core.tensor(np.array(values, order="C"), dtype=dtype, device=device)  # (ascontiguousarray makes 0-d 1-d)


# --- the op families -----------------------------------------------------------------------------------------------
# A family draws one case: draw(rng) -> (op label, dtype, [(values, layout)...], call, rtol, atol).

def _pick(rng, items):
    return items[int(rng.integers(len(items)))]


def _elementwise(entries: list) -> Callable:
    """OP_DB's elementwise entries on random broadcasting shapes and layouts, with the entry's own tolerance."""
    def draw(rng):
        info: OpInfo = _pick(rng, entries)
        dtype = _pick(rng, info.dtypes)
        shape = _shape(rng)
        shapes = [shape] + [_broadcast_partner(rng, shape) for _ in range(info.arity - 1)]
        rng.shuffle(shapes)
        dtypes = [dtype] * len(shapes)
        if info.arity == 2 and rng.random() < 0.2:  # type promotion: the other operand in another dtype the op takes
            dtypes[1] = _pick(rng, info.dtypes)
        inputs = [_input(rng, s, d, info.domain, specials=0.1) for s, d in zip(shapes, dtypes)]
        label = info.name if dtypes[-1] == dtype else f"{info.name}[other {dtypes[-1]}]"
        if info.arity == 2 and rng.random() < 0.15:  # a Python number as the other operand
            scalar = _scalar(rng, dtype, info.domain)
            return f"{info.name}[scalar {scalar!r}]", dtype, inputs[:1], \
                lambda t: info.op(t, scalar, **info.kwargs), info.rtol, info.atol
        return label, dtype, inputs, lambda *t: info.op(*t, **info.kwargs), info.rtol, info.atol
    return draw


def _scalar(rng, dtype: str, domain: tuple):
    """A Python number in ``domain``: a float for float tensors (sometimes for the others too), else an int."""
    lo, hi = domain
    value = float(rng.uniform(lo, hi))
    if dtype in FLOATS or rng.random() < 0.3:
        return round(value, 2)
    return max(int(round(value)), 1) if lo > 0 else int(round(value))


def _dim(rng, ndim: int) -> int:
    """A dim of a tensor of ``ndim`` dims, sometimes negative (0 for a 0-d tensor)."""
    if ndim == 0:
        return int(rng.choice([0, -1]))
    d = int(rng.integers(ndim))
    return d - ndim if rng.random() < 0.3 else d


_REDUCTIONS = (("sum", FLOATS + INTS + ("bool",)), ("mean", FLOATS), ("amax", ALL), ("amin", ALL),
               ("prod", ("float32", "float64", "int64")), ("var", ("float32", "float64")),
               ("std", ("float32", "float64")), ("logsumexp", ("float32", "float64")), ("any", ALL), ("all", ALL),
               ("count_nonzero", ALL))


def _reduction_family(rng):
    """Reductions over all dims, one dim or a tuple of dims, with and without keepdim."""
    op_name, dtypes = _pick(rng, _REDUCTIONS)
    dtype = _pick(rng, dtypes)
    shape = _shape(rng)
    ndim, kwargs = len(shape), {}
    form = int(rng.integers(3)) if ndim else 0
    if op_name == "logsumexp" and form == 0:
        form = 1 if ndim else 0
        kwargs = {} if ndim else {"dim": 0}
    if form == 1:
        kwargs = {"dim": _dim(rng, ndim)}
    elif form == 2:
        kwargs = {"dim": tuple(int(d) for d in np.flatnonzero(rng.random(ndim) < 0.5)) or (0,)}
    if form and op_name != "count_nonzero":
        kwargs["keepdim"] = bool(rng.random() < 0.5)
    domain = (0.5, 1.5) if op_name == "prod" else (-3.0, 3.0)
    fn = getattr(core, op_name)
    loose = dtype in ("float32", "float16", "bfloat16") and op_name in ("sum", "mean", "var", "std", "logsumexp")
    rtol, atol = ((1e-4, 1e-5) if dtype == "float32" else (None, None)) if loose else (None, None)
    inputs = [_input(rng, shape, dtype, domain, specials=0.1)]
    return f"{op_name}{kwargs}", dtype, inputs, lambda t: fn(t, **kwargs), rtol, atol


def _distinct_floats(rng, shape, dtype):
    """Values without ties (sort, topk and argmax indices are only defined up to ties)."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) - n // 2).astype(core.dtypes.by_name(dtype).numpy)


def _sort_family(rng):
    """sort, argsort, topk, max/min with indices, argmax/argmin, kthvalue, cummax/cummin on tie-free values."""
    dtype = _pick(rng, ("float32", "float64", "int64", "int32", "int16", "uint8", "float16"))
    shape = _shape(rng, max_ndim=4)
    if dtype in ("uint8", "float16"):
        shape = tuple(min(s, 4) for s in shape)  # at most 256 elements: distinct in the dtype
    values = _distinct_floats(rng, shape, dtype)
    if dtype == "uint8":
        values = (values - values.min(initial=0)).astype(np.uint8)
    dim = _dim(rng, len(shape))
    descending = bool(rng.random() < 0.5)
    which = _pick(rng, ("sort", "argsort", "topk", "max", "min", "argmax", "argmin", "kthvalue", "cummax", "cummin"))
    size = shape[dim] if shape else 1
    k = int(rng.integers(0, size + 1)) if which == "topk" else int(rng.integers(1, max(size, 1) + 1))
    keepdim = bool(rng.random() < 0.5)
    calls = {
        "sort": lambda t: core.sort(t, dim, descending),
        "argsort": lambda t: core.argsort(t, dim, descending),
        "topk": lambda t: core.topk(t, k, dim, largest=descending),
        "max": lambda t: core.max(t, dim, keepdim),
        "min": lambda t: core.min(t, dim, keepdim),
        "argmax": lambda t: core.argmax(t, dim, keepdim),
        "argmin": lambda t: core.argmin(t, dim, keepdim),
        "kthvalue": lambda t: core.kthvalue(t, k, dim, keepdim),
        "cummax": lambda t: core.cummax(t, dim),
        "cummin": lambda t: core.cummin(t, dim),
    }
    lay = _draw_layout(rng, shape)
    if lay[0] == "expanded":
        lay = ("contiguous",)
    return f"{which}[dim={dim}]", dtype, [(values, lay)], calls[which], None, None


def _scan_family(rng):
    """cumsum and cumprod along a drawn dim."""
    which, dtypes = _pick(rng, (("cumsum", ("float32", "float64", "int64", "int32", "bool", "uint8")),
                                ("cumprod", ("float32", "float64", "int64"))))
    dtype = _pick(rng, dtypes)
    shape = _shape(rng)
    dim = _dim(rng, len(shape))
    domain = (0.5, 1.5) if which == "cumprod" else (-2.0, 2.0)
    fn = getattr(core, which)
    rtol = 1e-4 if dtype == "float32" else None
    return f"{which}[dim={dim}]", dtype, [_input(rng, shape, dtype, domain)], lambda t: fn(t, dim), rtol, 1e-4 \
        if rtol else None


def _matmul_family(rng):
    """matmul in its forms (matrix, batched with broadcasting, vector), bmm, dot and outer; empty sizes too."""
    dtype = _pick(rng, ("float32", "float64", "float16", "int64"))
    m, k, n = (int(rng.integers(0, 6)) for _ in range(3))
    form = _pick(rng, ("mm", "batched", "vec-mat", "mat-vec", "dot", "bmm", "outer"))
    batch = _shape(rng, 0, 3)
    if form == "mm":
        shapes = [(m, k), (k, n)]
    elif form == "batched":
        shapes = [batch + (m, k), _broadcast_partner(rng, batch) + (k, n)]
    elif form == "vec-mat":
        shapes = [(k,), batch + (k, n)]
    elif form == "mat-vec":
        shapes = [batch + (m, k), (k,)]
    elif form == "bmm":
        b = int(rng.integers(0, 4))
        shapes = [(b, m, k), (b, k, n)]
    else:
        shapes = [(k,), (k,) if form == "dot" else (n,)]
    fn = {"bmm": core.bmm, "outer": core.outer, "dot": core.dot}.get(form, core.matmul)
    inputs = [_input(rng, s, dtype, (-2.0, 2.0)) for s in shapes]
    tol = 1e-2 if dtype == "float16" else 1e-4
    return f"matmul[{form}]", dtype, inputs, fn, tol, tol


def _spectral_family(rng):
    """core.fft's transforms over random dims, lengths (cropped or padded) and norm modes; sizes of at least 1."""
    dtype = _pick(rng, ("float32", "float64"))
    shape = tuple(max(size, 1) for size in _shape(rng, 1, 3))
    name = _pick(rng, ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn", "fft2"))
    if name == "fft2" and len(shape) < 2:
        shape = shape + (int(rng.integers(1, 5)),)
    kwargs = {"norm": _pick(rng, (None, "forward", "backward", "ortho"))}
    if name.endswith("n"):
        dims = [d for d in range(len(shape)) if rng.random() < 0.6] or [len(shape) - 1]
        kwargs["dim"] = tuple(dims)
        if rng.random() < 0.4:
            kwargs["s"] = tuple(int(rng.integers(1, 7)) for _ in dims)
    elif name != "fft2":
        kwargs["dim"] = _dim(rng, len(shape))
        if rng.random() < 0.4:
            kwargs["n"] = int(rng.integers(1, 9))
    fn = getattr(core.fft, name)
    tol = 1e-4 if dtype == "float32" else None
    return f"fft.{name}{kwargs}", dtype, [_input(rng, shape, dtype)], lambda t: fn(t, **kwargs), tol, tol


_LINALG_OPS = ("inv", "det", "slogdet", "solve", "cholesky", "qr", "svdvals", "eigvalsh", "pinv", "matrix_norm",
               "matrix_power")


def _linalg_family(rng):
    """core.linalg on batches of small matrices in any layout, conditioned (or made positive-definite) in the call so
    both sides factor the same well-posed matrices."""
    dtype = _pick(rng, ("float32", "float64"))
    n = int(rng.integers(1, 6))
    batch = _shape(rng, 0, 2)
    name = _pick(rng, _LINALG_OPS)
    shapes = [batch + (n, n)] + ([batch + (n, int(rng.integers(1, 4)))] if name == "solve" else [])

    def call(a, *b):
        eye = core.eye(n, dtype=a.dtype, device=a.device)
        if name == "cholesky":
            return core.linalg.cholesky(a @ a.mT + n * eye)
        if name == "eigvalsh":
            return core.linalg.eigvalsh(a + a.mT)
        if name == "slogdet":
            return core.linalg.slogdet(a).logabsdet
        if name == "qr":
            return core.linalg.qr(a).R
        if name == "matrix_power":
            return core.linalg.matrix_power(a, 3)
        if name in ("inv", "solve"):
            a = a + 4 * eye
        return getattr(core.linalg, name)(a, *b)
    tol = 1e-3 if dtype == "float32" else 1e-7
    return f"linalg.{name}", dtype, [_input(rng, s, dtype) for s in shapes], call, tol, tol

def _join_family(rng):
    """cat of one to three tensors along a drawn dim (sizes 0 included), or stack at a new one."""
    dtype = _pick(rng, ALL)
    shape = _shape(rng, 1, 4)
    stack = bool(rng.random() < 0.4)
    dim = _dim(rng, len(shape) + (1 if stack else 0))
    count = int(rng.integers(1, 4))
    shapes = []
    for _ in range(count):
        s = list(shape)
        if not stack:
            s[dim] = int(rng.integers(0, 4))
        shapes.append(tuple(s))
    inputs = [_input(rng, s, dtype) for s in shapes]
    fn = core.stack if stack else core.cat
    return f"{'stack' if stack else 'cat'}[dim={dim}]", dtype, inputs, lambda *t: fn(list(t), dim=dim), None, None


def _indices(rng, size: int, count: int) -> np.ndarray:
    """``count`` valid indices into a dim of ``size`` (negative ones too)."""
    if size == 0:
        return np.zeros(0, np.int64)
    return rng.integers(-size, size, count).astype(np.int64)


def _index_family(rng):
    """Indexing: index_select, gather, scatter(_add), advanced and mask getitem, index_put, masked_fill, ..."""
    dtype = _pick(rng, ALL)
    shape = _shape(rng, 1, 4)
    dim = _dim(rng, len(shape))
    axis, size = dim % len(shape), shape[dim]
    which = _pick(rng, ("index_select", "gather", "scatter", "scatter_add", "getitem", "mask", "index_put",
                        "masked_fill", "take", "index_add", "nonzero", "slice"))
    data = _input(rng, shape, dtype)
    if which == "index_select":
        idx = (_indices(rng, size, int(rng.integers(0, 5))) % max(size, 1)) if size else np.zeros(0, np.int64)
        return f"{which}[dim={dim}]", dtype, [data, (idx, _draw_layout(rng, idx.shape))], \
            lambda t, i: core.index_select(t, dim, i), None, None
    if which in ("gather", "scatter", "scatter_add"):
        out_shape = tuple(int(rng.integers(0, s + 1)) if d != axis else int(rng.integers(0, 5)) for d, s in
                          enumerate(shape))
        if size == 0:
            out_shape = tuple(0 if d == axis else s for d, s in enumerate(out_shape))
        if which == "scatter":  # distinct targets along dim: a permutation's head per position
            out_shape = tuple(min(s, size) if d == axis else s for d, s in enumerate(out_shape))
            idx = np.argsort(rng.random(out_shape[:axis] + (size,) + out_shape[axis + 1:]), axis=axis) \
                .take(range(out_shape[axis]), axis=axis).astype(np.int64)
        else:
            idx = rng.integers(0, max(size, 1), out_shape).astype(np.int64)
        index = (idx, _draw_layout(rng, idx.shape))
        if which == "gather":
            return f"gather[dim={dim}]", dtype, [data, index], lambda t, i: core.gather(t, dim, i), None, None
        src = _input(rng, out_shape, dtype)
        if which == "scatter_add" and dtype == "bool":
            dtype = "float32"
            data, src = _input(rng, shape, dtype), _input(rng, out_shape, dtype)
        fn = getattr(core, which)
        return f"{which}[dim={dim}]", dtype, [data, index, src], lambda t, i, s: fn(t, dim, i, s), 1e-5, 1e-5
    if which == "getitem":
        idx = _indices(rng, shape[0], int(rng.integers(0, 5))) if shape[0] else np.zeros(0, np.int64)
        return "getitem[advanced]", dtype, [data, (idx, _draw_layout(rng, idx.shape))], lambda t, i: t[i], None, None
    if which == "mask":
        mask = _input(rng, shape, "bool")
        return "getitem[mask]", dtype, [data, mask], lambda t, m: t[m], None, None
    if which == "masked_fill":
        mask = _input(rng, _broadcast_partner(rng, shape), "bool")
        value = True if dtype == "bool" else 2
        return "masked_fill", dtype, [data, mask], lambda t, m: core.masked_fill(t, m, value), None, None
    if which == "index_put":
        idx = _indices(rng, shape[0], int(rng.integers(0, 4))) if shape[0] else np.zeros(0, np.int64)
        idx = np.unique(idx % shape[0]) if shape[0] else idx  # distinct rows: the result is defined
        values = _input(rng, (len(idx),) + shape[1:], dtype)
        return "index_put", dtype, [data, (idx, ("contiguous",)), values], \
            lambda t, i, v: core.index_put(t, (i,), v), None, None
    if which == "take":
        n = int(np.prod(shape))
        idx = rng.integers(-n, n, _shape(rng, 0, 2)).astype(np.int64) if n else np.zeros(0, np.int64)
        return "take", dtype, [data, (idx, _draw_layout(rng, idx.shape))], core.take, None, None
    if which == "index_add":
        if dtype == "bool":
            dtype = "float32"
            data = _input(rng, shape, dtype)
        idx = (_indices(rng, size, int(rng.integers(0, 4))) % size) if size else np.zeros(0, np.int64)
        src_shape = tuple(len(idx) if d == axis else s for d, s in enumerate(shape))
        return f"index_add[dim={dim}]", dtype, [data, (idx, ("contiguous",)), _input(rng, src_shape, dtype)], \
            lambda t, i, s: core.index_add(t, dim, i, s), 1e-5, 1e-5
    if which == "nonzero":
        return "nonzero", dtype, [data], core.nonzero, None, None
    start = int(rng.integers(0, size + 1))
    stop = int(rng.integers(start, size + 1))
    step = int(rng.integers(1, 4))
    key = (slice(None),) * axis + (slice(start, stop, step),)
    return f"getitem[{start}:{stop}:{step} on dim {dim}]", dtype, [data], lambda t: t[key] * 1 if dtype != "bool" \
        else t[key].clone(), None, None


def _view_family(rng):
    """View and movement ops, made contiguous so both sides return plain values."""
    dtype = _pick(rng, ALL)
    shape = _shape(rng)
    ndim = len(shape)
    which = _pick(rng, ("reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten", "narrow", "movedim",
                        "expand", "chunk", "flip", "roll", "tril", "triu", "repeat", "tile", "contiguous"))
    if which in ("narrow", "chunk", "tril", "triu", "movedim", "transpose", "flip", "roll") and ndim == 0:
        which = "reshape"
    if which in ("tril", "triu") and ndim < 2:
        which = "flatten"
    dim = _dim(rng, ndim)
    if which == "reshape":
        n = int(np.prod(shape))
        new = [n] if n else [0, int(rng.integers(1, 4))]
        if n > 1 and rng.random() < 0.5:
            f = next((f for f in (2, 3, 5) if n % f == 0), None)
            new = [f, -1] if f else [-1]
        call = lambda t: t.reshape(*new).clone()  # noqa: E731
        label = f"reshape{new}"
    elif which == "permute":
        perm = [int(i) for i in rng.permutation(ndim)]
        call, label = (lambda t: t.permute(*perm).contiguous()), f"permute{perm}"
    elif which == "transpose":
        other = _dim(rng, ndim)
        call, label = (lambda t: t.transpose(dim, other).contiguous()), f"transpose({dim}, {other})"
    elif which == "squeeze":
        call, label = (lambda t: t.squeeze().clone()), "squeeze"
    elif which == "unsqueeze":
        d = int(rng.integers(-ndim - 1, ndim + 1))
        call, label = (lambda t: t.unsqueeze(d).clone()), f"unsqueeze({d})"
    elif which == "flatten":
        call, label = (lambda t: core.flatten(t).clone()), "flatten"
    elif which == "narrow":
        size = shape[dim]
        start = int(rng.integers(0, size + 1))
        length = int(rng.integers(0, size - start + 1))
        call, label = (lambda t: core.narrow(t, dim, start, length).clone()), f"narrow({dim}, {start}, {length})"
    elif which == "movedim":
        dest = _dim(rng, ndim)
        call, label = (lambda t: core.movedim(t, dim, dest).contiguous()), f"movedim({dim}, {dest})"
    elif which == "expand":
        lead = tuple(int(rng.integers(1, 3)) for _ in range(int(rng.integers(0, 2))))
        target = lead + shape
        call, label = (lambda t: t.expand(*target).contiguous()), f"expand{target}"
    elif which == "chunk":
        chunks = int(rng.integers(1, 4))
        call, label = (lambda t: tuple(c.clone() for c in core.chunk(t, chunks, dim))), f"chunk({chunks}, {dim})"
    elif which == "flip":
        dims = tuple(int(d) for d in np.flatnonzero(rng.random(ndim) < 0.5))
        call, label = (lambda t: core.flip(t, dims)), f"flip{dims}"
    elif which == "roll":
        shift = int(rng.integers(-4, 5))
        call, label = (lambda t: core.roll(t, shift, dim)), f"roll({shift}, {dim})"
    elif which in ("tril", "triu"):
        diagonal = int(rng.integers(-2, 3))
        fn = getattr(core, which)
        call, label = (lambda t: fn(t, diagonal)), f"{which}({diagonal})"
    elif which in ("repeat", "tile"):
        reps = tuple(int(rng.integers(1, 3)) for _ in range(ndim + int(rng.integers(0, 2))))
        call = (lambda t: t.repeat(*reps)) if which == "repeat" else (lambda t: core.tile(t, reps))
        label = f"{which}{reps}"
        if which == "repeat" and not reps:
            call = lambda t: t.clone()  # noqa: E731
    else:
        call, label = (lambda t: t.contiguous()), "contiguous"
    return label, dtype, [_input(rng, shape, dtype)], call, None, None


def _softmax_family(rng):
    """softmax and log_softmax along a drawn dim, every float dtype."""
    which = _pick(rng, ("softmax", "log_softmax"))
    dtype = _pick(rng, ("float32", "float64", "float16", "bfloat16"))
    shape = _shape(rng)
    dim = _dim(rng, len(shape))
    fn = getattr(core.nn.functional, which)
    return f"{which}[dim={dim}]", dtype, [_input(rng, shape, dtype, (-4.0, 4.0))], lambda t: fn(t, dim), \
        1e-5 if dtype == "float32" else None, 1e-5 if dtype == "float32" else None


def _activation_family(rng):
    """Activations, layer_norm over trailing dims and constant padding."""
    F = core.nn.functional
    which = _pick(rng, ("relu", "gelu", "silu", "leaky_relu", "elu", "softplus", "hardtanh", "layer_norm", "pad"))
    dtype = _pick(rng, ("float32", "float64"))
    shape = _shape(rng, 1 if which in ("layer_norm", "pad") else 0)
    if which == "layer_norm":
        norm = shape[-int(rng.integers(1, min(len(shape), 2) + 1)):]
        call, label = (lambda t: F.layer_norm(t, norm)), f"layer_norm{norm}"
    elif which == "pad":
        pads = [int(rng.integers(0, 3)) for _ in range(2 * int(rng.integers(1, min(len(shape), 3) + 1)))]
        call, label = (lambda t: F.pad(t, pads, value=1.5)), f"pad{pads}"
    else:
        fn = getattr(F, which)
        call, label = fn, which
    # layer_norm divides the rounding error of the mean (an ulp of the input) by sqrt(var + eps) >= sqrt(1e-5): on a
    # row of equal values (an expanded input) float32 differs by up to ~1e-4 between exact and pairwise means
    atol = 2e-4 if which == "layer_norm" and dtype == "float32" else 1e-5
    return label, dtype, [_input(rng, shape, dtype)], call, 1e-5, atol


def _conv_family(rng):
    """Small 1-d and 2-d convolutions (with bias), max and average pooling."""
    F = core.nn.functional
    dtype = _pick(rng, ("float32", "float64"))
    spatial = int(rng.integers(1, 3))
    which = _pick(rng, ("conv", "max_pool", "avg_pool"))
    batch, channels = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    kernel = int(rng.integers(1, 4))
    stride = int(rng.integers(1, 3))
    padding = int(rng.integers(0, kernel // 2 + 1))
    size = tuple(int(rng.integers(kernel, kernel + 5)) for _ in range(spatial))
    x = _input(rng, (batch, channels) + size, dtype)
    if which == "conv":
        out_channels = int(rng.integers(1, 4))
        weight = _input(rng, (out_channels, channels) + (kernel,) * spatial, dtype)
        bias = _input(rng, (out_channels,), dtype)
        fn = F.conv1d if spatial == 1 else F.conv2d
        return f"conv{spatial}d[k={kernel}, s={stride}, p={padding}]", dtype, [x, weight, bias], \
            lambda a, w, b: fn(a, w, b, stride=stride, padding=padding), 1e-4, 1e-4
    fn = getattr(F, f"{which}{spatial}d")
    return f"{which}{spatial}d[k={kernel}, s={stride}, p={padding}]", dtype, [x], \
        lambda a: fn(a, kernel, stride, padding), 1e-5, 1e-5


def _cast_family(rng):
    """Casts between every pair of dtypes, from values every target holds."""
    src = _pick(rng, ALL)
    dst = _pick(rng, ALL)
    shape = _shape(rng)
    domain = (0.0, 100.0) if dst in INTS else (-100.0, 100.0)  # in range of every target: no undefined overflow
    if dst in INTS and src in FLOATS:
        domain = (0.0, 100.0)
    target = core.dtypes.by_name(dst)
    return f"to[{dst}]", src, [_input(rng, shape, src, domain)], lambda t: t.to(target), None, None


def _misc_family(rng):
    """unique, einsum, searchsorted, one_hot, clamp with tensor bounds, where with a scalar, nan_to_num, diagonal."""
    which = _pick(rng, ("unique", "einsum", "searchsorted", "one_hot", "clamp_tensor", "where_scalar",
                        "nan_to_num", "diagonal"))
    dtype = _pick(rng, ("float32", "float64", "int64", "int32"))
    shape = _shape(rng, 1, 3)
    if which == "unique":
        values = rng.integers(-3, 4, shape).astype(core.dtypes.by_name(dtype).numpy)
        return "unique", dtype, [(values, _draw_layout(rng, shape))], \
            lambda t: core.unique(t, return_inverse=True, return_counts=True), None, None
    if which == "einsum":
        a, b = shape[0], shape[-1]
        c = int(rng.integers(0, 4))
        return "einsum[ij,jk->ik]", "float64", [_input(rng, (a, b), "float64"), _input(rng, (b, c), "float64")], \
            lambda x, y: core.einsum("ij,jk->ik", x, y), 1e-7, 1e-7
    if which == "searchsorted":
        seq = np.sort(_values(rng, (shape[-1],), dtype, (-3.0, 3.0)))
        right = bool(rng.random() < 0.5)
        return f"searchsorted[right={right}]", dtype, [(seq, ("contiguous",)), _input(rng, shape, dtype)], \
            lambda s, v: core.searchsorted(s, v, right=right), None, None
    if which == "one_hot":
        n = int(rng.integers(1, 5))
        idx = rng.integers(0, n, shape).astype(np.int64)
        return f"one_hot[{n}]", "int64", [(idx, _draw_layout(rng, shape))], \
            lambda t: core.nn.functional.one_hot(t, n), None, None
    if which == "clamp_tensor":
        dtype = _pick(rng, ("float32", "float64", "int64"))
        inputs = [_input(rng, shape, dtype), _input(rng, _broadcast_partner(rng, shape), dtype, (-3.0, 0.0)),
                  _input(rng, _broadcast_partner(rng, shape), dtype, (0.0, 3.0))]
        return "clamp[tensor bounds]", dtype, inputs, lambda t, lo, hi: core.clamp(t, lo, hi), None, None
    if which == "where_scalar":
        cond = _input(rng, _broadcast_partner(rng, shape), "bool")
        return "where[scalar other]", dtype, [cond, _input(rng, shape, dtype)], \
            lambda c, t: core.where(c, t, 0), None, None
    if which == "nan_to_num":
        values = _values(rng, shape, "float32", (-3.0, 3.0))
        values.flat[::3] = np.nan
        values.flat[1::5] = np.inf
        return "nan_to_num", "float32", [(values, _draw_layout(rng, shape))], core.nan_to_num, None, None
    square = _shape(rng, 2, 3)
    offset = int(rng.integers(-2, 3))
    return f"diagonal[{offset}]", dtype, [_input(rng, square, dtype)], \
        lambda t: core.diagonal(t, offset).clone(), None, None


def _group(*names) -> list:
    return [info for info in OP_DB if info.name in names]


_UNARY = [i for i in OP_DB if i.arity == 1 and not i.shapes and i.name not in ("clamp",)]
_BINARY = [i for i in OP_DB if i.arity == 2 and not i.shapes and i.name != "lerp"]
# (family name, draw, weight): the elementwise families are OP_DB's entries grouped by kind
FAMILIES: list = [
    ("unary-float", _elementwise([i for i in _UNARY if i.out == "float"]), 3),
    ("unary-same", _elementwise([i for i in _UNARY if i.out == "same"]), 2),
    ("unary-predicate", _elementwise([i for i in _UNARY if i.out == "bool"]), 1),
    ("binary-arithmetic", _elementwise(_group("add", "sub", "mul", "div", "floor_divide", "remainder", "fmod",
                                              "pow")), 3),
    ("binary-math", _elementwise(_group("atan2", "maximum", "minimum", "hypot", "copysign", "logaddexp")), 1),
    ("binary-special", _elementwise([i for i in OP_DB if i.name.startswith("special.") and i.arity == 2]), 1),
    ("comparison", _elementwise(_group("eq", "ne", "lt", "le", "gt", "ge")), 1),
    ("logical", _elementwise(_group("logical_and", "logical_or", "logical_xor")), 1),
    ("bitwise", _elementwise(_group("bitwise_and", "bitwise_or", "bitwise_xor")), 1),
    ("where-clamp-lerp", _elementwise([i for i in OP_DB if i.name in ("where", "clamp", "lerp")]), 1),
    ("reduction", _reduction_family, 3),
    ("sort-topk-argmax", _sort_family, 2),
    ("scan", _scan_family, 1),
    ("matmul", _matmul_family, 2),
    ("fft", _spectral_family, 1),
    ("linalg", _linalg_family, 1),
    ("cat-stack", _join_family, 1),
    ("index", _index_family, 3),
    ("view", _view_family, 3),
    ("softmax", _softmax_family, 1),
    ("activation-norm-pad", _activation_family, 1),
    ("conv-pool", _conv_family, 1),
    ("cast", _cast_family, 2),
    ("misc", _misc_family, 1),
]
_WEIGHTS = np.array([w for _, _, w in FAMILIES], float) / sum(w for _, _, w in FAMILIES)


def draw_case(seed: int, index: int) -> Case:
    """Case ``(seed, index)``: the same op, dtype, inputs and layouts on every machine and device."""
    rng = np.random.default_rng([seed, index])
    _, draw, _ = FAMILIES[int(rng.choice(len(FAMILIES), p=_WEIGHTS))]
    op, dtype, inputs, call, rtol, atol = draw(rng)
    return Case(seed, index, op, dtype, inputs, call, rtol, atol)


# --- running and comparing -----------------------------------------------------------------------------------------

_ERROR_KINDS = (IndexError, TypeError, NotImplementedError, ValueError, RuntimeError, ArithmeticError)


def _error_kind(exc: BaseException) -> str:
    """The PyTorch-level kind of an error: the first of IndexError, TypeError, ... it is an instance of."""
    return next((k.__name__ for k in _ERROR_KINDS if isinstance(exc, k)), type(exc).__name__)


def run_case(case: Case, device: str) -> dict:
    """Run ``case`` on ``device``: ``{"outputs": [(dtype, array)...]}`` or ``{"error": (kind, message)}``."""
    try:
        tensors = [make_view(v, lay, device) for v, lay in case.inputs]
        result = case.call(*tensors)
        results = result if isinstance(result, (tuple, list)) else (result,)
        outputs = [(r.dtype.name, to_numpy(r)) if hasattr(r, "_storage") else ("python", np.asarray(r))
                   for r in results]
        return {"op": case.op, "outputs": outputs}
    except Exception as exc:  # noqa: BLE001 - a raised error is a result the reference must match
        return {"op": case.op, "error": (_error_kind(exc), f"{type(exc).__name__}: {str(exc)[:300]}")}


def compare(case: Case, got: dict, want: dict) -> str | None:
    """None when the device's result matches the reference's, else what differs (one line first)."""
    if "error" in got or "error" in want:
        if "error" in got and "error" in want:
            if got["error"][0] == want["error"][0]:
                return None
            return f"device raised {got['error'][1]}; reference raised {want['error'][1]}"
        if "error" in got:
            return f"device raised {got['error'][1]}; the reference returned a result"
        return f"reference raised {want['error'][1]}; the device returned a result"
    if len(got["outputs"]) != len(want["outputs"]):
        return f"{len(got['outputs'])} outputs, reference {len(want['outputs'])}"
    for n, ((got_dtype, a), (want_dtype, e)) in enumerate(zip(got["outputs"], want["outputs"])):
        if got_dtype != want_dtype:
            return f"output {n}: dtype {got_dtype} != reference {want_dtype}"
        try:
            assert_close(a, e, rtol=case.rtol, atol=case.atol, check_dtype=False, msg=f"output {n}")
        except AssertionError as exc:
            return str(exc)
    return None


def _worker(device: str, seed: int, start: int, stop: int, out: str, preload: str | None = None) -> None:
    """Run cases [start, stop) and append one pickled record per case to ``out`` (flushed, so a crash keeps them).

    ``preload`` names a module imported first (a kernel under development, or a test's deliberately broken one).
    """
    if preload:
        import importlib

        importlib.import_module(preload)
    with open(out, "ab") as sink:
        for index in range(start, stop):
            pickle.dump(("start", index), sink)
            sink.flush()
            result = run_case(draw_case(seed, index), device)
            pickle.dump(("done", index, result), sink)
            sink.flush()


def _read_records(path: str) -> tuple:
    """The finished results by index, and the index of a case that started but never finished (or None)."""
    results, started = {}, None
    try:
        with open(path, "rb") as source:
            while True:
                try:
                    record = pickle.load(source)
                except (EOFError, pickle.UnpicklingError):
                    break
                if record[0] == "start":
                    started = record[1]
                else:
                    results[record[1]] = record[2]
                    started = None
    except FileNotFoundError:
        pass
    return results, started


def _run_side(device: str, seed: int, start: int, stop: int, env: dict, timeout: float, workdir: str, tag: str,
              preload: str | None = None):
    """Run a range of cases in subprocesses until every case has a result or a crash record: (results, crashes)."""
    results, crashes = {}, []
    while start < stop:
        out = os.path.join(workdir, f"{tag}-{start}.pkl")
        cmd = [sys.executable, "-m", "core.testing.fuzz", "--worker", "--device", device, "--seed", str(seed),
               "--start", str(start), "--stop", str(stop), "--out", out]
        cmd += ["--preload", preload] if preload else []
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            status, tail = proc.returncode, proc.stderr[-2000:]
        except subprocess.TimeoutExpired as exc:
            status, tail = "timeout", (exc.stderr or b"")[-2000:]
            tail = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
        done, died_in = _read_records(out)
        results.update(done)
        if status == 0 and died_in is None and all(i in results for i in range(start, stop)):
            break
        crashed = died_in if died_in is not None else max(done, default=start - 1) + 1
        crashes.append((crashed, status, tail))
        start = crashed + 1
    return results, crashes


def _environments(device: str) -> tuple:
    """The environments of the device's workers and the reference's."""
    device_env = dict(os.environ)
    device_env.setdefault("CORE_CPU_C_MIN_NUMEL", "0")  # cpu_c's C kernels even for the tiny tensors drawn here
    # the reference serves cpu; a choice the user made for other device types stays
    others = [p for p in os.environ.get("CORE_BACKENDS", "").split(",") if p.strip() and
              p.split("=", 1)[0].strip() != "cpu"]
    reference_env = dict(os.environ, CORE_BACKENDS=",".join(others + ["cpu=numpy"]))
    return device_env, reference_env


def fuzz(device: str, cases: int, seed: int = 0, batch: int = 500, timeout: float = 600.0,
         expected_failures: dict | None = None, verbose: bool = True, preload: str | None = None) -> dict:
    """Run ``cases`` cases on ``device`` against the reference, ``batch`` cases per pair of subprocesses.

    Returns ``{"cases", "passed", "raised", "unsupported", "mismatches": [(id, op, dtype, what)], "crashes": [(id,
    op, status, stderr)], "xfailed", "xpassed", "seconds"}``; ``raised`` counts cases where both sides raised the
    same kind of error, ``unsupported`` those a device without float64 refused for their float64 (or complex128).
    ``expected_failures`` maps ``(device type, op or case id)`` to a reason (KNOWN_FAILURES by default);
    ``preload`` names a module the device's workers import first.
    """
    known = KNOWN_FAILURES if expected_failures is None else expected_failures
    device_type = core.device(device).type
    summary = {"device": device, "seed": seed, "cases": 0, "passed": 0, "raised": 0, "unsupported": 0,
               "mismatches": [], "crashes": [], "xfailed": [], "xpassed": set(), "seconds": 0.0}
    started = time.monotonic()
    device_env, reference_env = _environments(device)
    with tempfile.TemporaryDirectory(prefix="core-fuzz-") as workdir:
        for first in range(0, cases, batch):
            last = min(first + batch, cases)
            with ThreadPoolExecutor(2) as pool:  # each thread waits on its own subprocess
                device_side = pool.submit(_run_side, device, seed, first, last, device_env, timeout, workdir,
                                          "device", preload)
                reference_side = pool.submit(_run_side, "cpu", seed, first, last, reference_env, timeout, workdir,
                                             "reference")
                (got, device_crashes), (want, reference_crashes) = device_side.result(), reference_side.result()
            crashed = set()
            for side, crashes in (("device", device_crashes), ("reference", reference_crashes)):
                for index, status, tail in crashes:
                    case = draw_case(seed, index)
                    summary["crashes"].append((case.id, case.op, f"{side} {status}", tail.strip()[-600:]))
                    crashed.add(index)
            for index in range(first, last):
                summary["cases"] += 1
                if index in crashed:
                    continue
                case = draw_case(seed, index)
                what = compare(case, got[index], want[index])
                reason = _known(known, device_type, case)
                if what is not None and "error" in got[index] and "error" not in want[index] \
                        and refuses_float64(device, got[index]["error"][1]):
                    summary["unsupported"] += 1  # a float64 case on a device that declares it has none
                elif what is None:
                    summary["raised" if "error" in got[index] else "passed"] += 1
                    if reason:
                        summary["xpassed"].add(reason)
                elif reason:
                    summary["xfailed"].append((case.id, case.op, case.dtype, reason))
                else:
                    summary["mismatches"].append((case.id, case.op, case.dtype, f"{case.describe()}: {what}"))
            if verbose:
                print(f"  {device}: {last}/{cases} cases, {len(summary['mismatches'])} mismatches, "
                      f"{len(summary['crashes'])} crashes ({time.monotonic() - started:.0f} s)", flush=True)
    summary["seconds"] = time.monotonic() - started
    # an entry that matched a passing case but also a failing one still holds
    summary["xpassed"] = sorted(summary["xpassed"] - {reason for _, _, _, reason in summary["xfailed"]})
    return summary


def _family_key(op: str) -> str:
    """The op's name without its drawn arguments: ``sum{'dim': 1}`` and ``roll(2, 0)`` are ``sum`` and ``roll``."""
    return op.split("[", 1)[0].split("{", 1)[0].split("(", 1)[0]


def _known(known: dict, device_type: str, case: Case) -> str | None:
    """Why ``case`` is expected to fail on ``device_type`` (by its id, its op label or its op's name), or None."""
    return next((known[(device_type, key)] for key in (case.id, case.op, _family_key(case.op))
                 if (device_type, key) in known), None)


def format_summary(summary: dict) -> str:
    """The summary a run prints: counts on the first line, then each mismatch and crash with its case id."""
    lines = [f"fuzz {summary['device']} seed {summary['seed']}: {summary['cases']} cases in "
             f"{summary['seconds']:.0f} s: {summary['passed']} passed, {summary['raised']} raised alike, "
             f"{len(summary['mismatches'])} mismatches, {len(summary['crashes'])} crashes, "
             f"{len(summary['xfailed'])} expected failures"
             + (f", {summary['unsupported']} float64 cases the device has no float64 for"
                if summary.get("unsupported") else "")]
    for case_id, op, dtype, what in summary["mismatches"][:50]:
        lines.append(f"MISMATCH {case_id} {op} {dtype}: {what.splitlines()[0][:400]}")
    for case_id, op, status, tail in summary["crashes"]:
        lines.append(f"CRASH {case_id} {op} ({status}): {tail.splitlines()[-1] if tail else ''}")
    for key in sorted({(op, reason) for _, op, _, reason in summary["xfailed"]}):
        lines.append(f"expected failure {key[0]}: {key[1]}")
    for reason in summary["xpassed"]:
        lines.append(f"expected failure did not fail, remove it from KNOWN_FAILURES: {reason}")
    if len(summary["mismatches"]) > 50:
        lines.append(f"... and {len(summary['mismatches']) - 50} more mismatches")
    return "\n".join(lines)


def replay(device: str, case_id: str, preload: str | None = None) -> str:
    """Case ``SEED:INDEX`` on ``device`` and on the reference (each in a subprocess): what it is and both results."""
    seed, index = (int(p) for p in case_id.split(":"))
    case = draw_case(seed, index)
    device_env, reference_env = _environments(device)
    lines = [case.describe()]
    sides = {}
    with tempfile.TemporaryDirectory(prefix="core-fuzz-") as workdir:
        for tag, dev, env in (("device", device, device_env), ("reference", "cpu", reference_env)):
            results, crashes = _run_side(dev, seed, index, index + 1, env, 600.0, workdir, tag,
                                         preload if tag == "device" else None)
            sides[tag] = results.get(index)
            shown = results.get(index) or f"crashed ({crashes[0][1]}): {crashes[0][2].strip()[-600:]}"
            lines.append(f"{tag}: {shown}")
    if sides["device"] and sides["reference"]:
        lines.append(compare(case, sides["device"], sides["reference"]) or "they agree")
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m core.testing.fuzz``: run a budget (exit 1 on a mismatch or crash) or replay one case."""
    parser = argparse.ArgumentParser(prog="python -m core.testing.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a batch may run on one side")
    parser.add_argument("--preload", help="a module the device's workers import first (e.g. a kernel to test)")
    parser.add_argument("--case", help="SEED:INDEX: run that one case and print it with both results")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--stop", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.device, args.seed, args.start, args.stop, args.out, args.preload)
        return 0
    if args.case:
        print(replay(args.device, args.case, args.preload))
        return 0
    summary = fuzz(args.device, args.cases, args.seed, args.batch, args.timeout, preload=args.preload)
    print(format_summary(summary))
    return 1 if summary["mismatches"] or summary["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
