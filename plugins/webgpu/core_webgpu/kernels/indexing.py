"""The indexing family: ``gather``, ``scatter_``, ``index`` and ``index_put_``, all one WGSL template, the indexed
copy (:func:`_indexed`): the indexed tensor is addressed through its strides plus ``index value * stride`` per int64
index tensor (negative values count from the end), the other tensor through its own strides. Writes that may
collide (``scatter_``, ``index_put_`` with ``accumulate``) need no atomics: the colliding dims run last, in order,
one line per invocation (:func:`_in_order`). Index values were validated by the ops' front-ends.
"""

from __future__ import annotations

from core import broadcast_shapes
from core.backends.api import broadcast_strides

from ._common import MAIN, layout, new_tensor, numel, run, wgsl_type

__all__ = ["kernels"]

_COMBINE = {None: "b", "sum": "a + b", "prod": "a * b",
            "amax": "select(max(a, b), a + b, a != a || b != b)", "amin": "select(min(a, b), a + b, a != a || b != b)"}


def _source(write: bool, count: int, combine) -> str:
    terms = "".join(f"        var v{q} = i32(i{q}[$io{q} + off(e, $il{q})]);\n"
                    f"        if (v{q} < 0) {{ v{q} += $in{q}; }}\n"
                    f"        at += v{q} * $is{q};\n" for q in range(count))
    step = (f"let a = t[at]; let b = other[$oo + off(e, $ol)]; t[at] = {_COMBINE[combine]};" if write
            else "out[$oo + off(e, $ol)] = t[at];")
    return MAIN + f"""    if (i >= $lines) {{ return; }}
    for (var j = 0; j < $serial; j++) {{
        let e = i * $serial + j;
        var at = $to + off(e, $tl);
{terms}        {step}
    }}
}}
"""


def _indexed(write: bool, shape: tuple, t, t_strides: tuple, other, other_strides: tuple, entries: list,
             combine=None, serial: int = 1):
    """One indexed copy over ``shape``; ``entries`` are ``(index tensor, its strides over shape, dim size, dim
    stride)``; ``serial`` consecutive elements run in order on one invocation."""
    n = numel(shape)
    if n == 0:
        return
    kind = wgsl_type(t.dtype.name)
    values = dict(lines=n // serial, serial=serial, to=t._offset, oo=other._offset)
    layouts = dict(tl=layout(shape, t_strides), ol=layout(shape, other_strides))
    for q, (index, strides, size, step) in enumerate(entries):
        values.update({f"io{q}": index._offset, f"in{q}": size, f"is{q}": step})
        layouts[f"il{q}"] = layout(shape, strides)
    indices = [(f"i{q}", index, "i64") for q, (index, *_) in enumerate(entries)]
    if write:
        writes, reads = [("t", t, kind)], [("other", other, kind)] + indices
    else:
        writes, reads = [("out", other, kind)], [("t", t, kind)] + indices
    run(("indexed", write, combine), _source(write, len(entries), combine), writes, reads, n // serial,
        values, layouts)


def _ok(*tensors, reduce=None) -> bool:
    """Whether the tensors' dtype has a WGSL scalar here (and, for a reduction, is float32 or int32)."""
    kind = wgsl_type(tensors[0].dtype.name)
    return kind is not None and all(t.dtype is tensors[0].dtype for t in tensors) \
        and (reduce is None or kind in ("f32", "i32"))


def _int64(*indices) -> bool:
    return all(i.dtype.name == "int64" and wgsl_type("int64") for i in indices)


def _along(t, dim: int, index) -> tuple:
    """(size and stride of ``t`` along ``dim``, t's other strides over index's shape, the dims that index along
    ``dim``) for gather and scatter."""
    if t.dim() == 0:
        return 1, 0, (0,) * index.dim(), range(index.dim())
    dim %= t.dim()  # (the front-end passes dim as given)
    return t._shape[dim], t._stride[dim], tuple(0 if d == dim else s for d, s in enumerate(t._stride)), [dim]


def _in_order(shape, t, t_strides, other, other_strides, entries, combine, last) -> None:
    """An indexed write into ``t`` whose dims ``last`` (where elements may collide) run in order, one line of them
    per invocation, so duplicates combine in order."""
    order = [d for d in range(len(shape)) if d not in last] + list(last)
    pick = lambda seq: tuple(seq[d] for d in order)  # noqa: E731
    _indexed(True, pick(shape), t, pick(t_strides), other, pick(other_strides),
             [(i, pick(s), size, step) for i, s, size, step in entries], combine, numel(shape[d] for d in last) or 1)


def gather(spec, input, dim, index):
    """``out[p] = input[... index[p] along dim ...]`` over index's shape."""
    if not _ok(input) or not _int64(index):
        return NotImplemented
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    size, step, strides, _ = _along(input, dim, index)
    _indexed(False, index._shape, input, strides, out, out._stride, [(index, index._stride, size, step)])
    return out


def scatter_(spec, self, dim, index, src, reduce=None, include_self=True):
    """``self[... index[p] along dim ...] = src[p]`` (or combined by ``reduce``), one line along dim per
    invocation; ``include_self=False`` reductions decline."""
    if not _ok(self, src, reduce=reduce) or not _int64(index) or src.dim() != index.dim() \
            or (reduce is not None and not include_self):
        return NotImplemented
    size, step, strides, last = _along(self, dim, index)
    _in_order(index._shape, self, strides, src, src._stride, [(index, index._stride, size, step)], reduce, last)
    return self


def _advanced(t, indices) -> tuple:
    """``(shape of t[indices], t's strides over it, the index entries, where the broadcast dims sit)``."""
    tensors = [i for i in indices if i is not None]
    positions = [d for d, i in enumerate(indices) if i is not None]
    sliced = [d for d in range(t.dim()) if d >= len(indices) or indices[d] is None]
    broadcast = tuple(broadcast_shapes(*[i._shape for i in tensors]))
    nb = len(broadcast)
    adjacent = positions[-1] - positions[0] + 1 == len(positions)
    first = sum(1 for d in sliced if d < positions[0]) if adjacent else 0  # where the broadcast dims go
    shape = tuple(t._shape[d] for d in sliced[:first]) + broadcast + tuple(t._shape[d] for d in sliced[first:])
    t_strides = tuple(t._stride[d] for d in sliced)
    t_strides = t_strides[:first] + (0,) * nb + t_strides[first:]
    after = len(shape) - first - nb
    entries = [(i, (0,) * first + broadcast_strides(i._shape, i._stride, broadcast) + (0,) * after,
                t._shape[d], t._stride[d]) for i, d in zip(tensors, positions)]
    return shape, t_strides, entries, range(first, first + nb)


def _indices_ok(t, indices) -> bool:
    tensors = [i for i in indices if i is not None]
    return bool(tensors) and _int64(*tensors) and _ok(t) and all(i.device == t.device for i in tensors)


def index(spec, input, indices):
    """``input[indices]`` with int64 index tensors (NumPy's placement of the broadcast dims)."""
    if not _indices_ok(input, indices):
        return NotImplemented
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    shape, strides, entries, _ = _advanced(input, indices)
    _indexed(False, shape, input, strides, out, out._stride, entries)
    return out


def index_put_(spec, self, indices, values, accumulate=False):
    """``self[indices] = values`` (``+=`` with ``accumulate``: one invocation per position of the sliced dims runs
    all the index positions in order, so duplicates add up without atomics)."""
    if not _indices_ok(self, indices) or not _ok(self, values, reduce="sum" if accumulate else None):
        return NotImplemented
    shape, strides, entries, bdims = _advanced(self, indices)
    value_strides = broadcast_strides(values._shape, values._stride, shape)
    if not accumulate:
        _indexed(True, shape, self, strides, values, value_strides, entries)
        return self
    _in_order(shape, self, strides, values, value_strides, entries, "sum", bdims)
    return self


def kernels(runtime) -> dict:
    """The indexing family: op name -> kernel."""
    return {"gather": gather, "scatter_": scatter_, "index": index, "index_put_": index_put_}
