"""Batching rules: how one op runs on a whole batch (``core/func/_batched.py`` calls them), keyed by op name.

A rule gets the op, the vmap level and the op's arguments, some of them batched at that level; it calls the op on
the batches (batch dimension first) with the level popped and wraps the result, or returns ``NotImplemented`` to
let the op loop over the samples. Families: elementwise ops broadcast with the batch aligned in front, reductions,
scans and views shift their dims by one, ``batched_matmul`` folds an unbatched matrix into the rows, ``cat``,
``gather`` and ``scatter_`` expand their unbatched parts, ``index`` and ``index_put_`` add the batch as a whole dim
or an ``arange``, ``convolution`` and pooling fold the batch into N, ``cross_entropy_loss`` folds it into N and
reduces each sample on its own.
"""

from __future__ import annotations

from ..dtypes import result_type
from ..tensor import Tensor
from ._batched import RULES, _at, _Popped, wrap


def _rule(*names):
    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn

    return register


def _wrap_dim(op, dim, ndim):
    from ..ops._util import wrap_dim

    return wrap_dim(dim, ndim, op.name) + 1


def _value(x, level, ndim: int):
    """``x``'s value padded with size-1 dims after the batch to ``ndim`` sample dims (elementwise alignment)."""
    v = x._value
    missing = ndim - len(x._shape)
    if missing:
        v = v.view((v._shape[0],) + (1,) * missing + v._shape[1:])
    return v


def _elementwise(op, level, *args, **kwargs):
    tensors = [a for a in args if isinstance(a, Tensor)] + [v for v in kwargs.values() if isinstance(v, Tensor)]
    common = None
    if len({t.dtype for t in tensors}) > 1 and any(_at(t, level) and not t._shape for t in tensors):
        # a batched 0-d operand would stop being 'dimensionless' in type promotion: give it the sample's dtype
        if op.name not in _BINARY:
            return NotImplemented
        common = result_type(args[0], args[1])
    ndim = max(len(t._shape) for t in tensors)
    if op.writes and not _at(args[0], level):
        return NotImplemented  # the loop raises PyTorch's in-place error

    def physical(a):
        if not _at(a, level):
            return a
        if common is not None and not a._shape and a.dtype is not common:
            return _value(a, level, ndim).to(common)
        return _value(a, level, ndim)

    with _Popped():
        out = op(*[physical(a) for a in args], **{k: physical(v) for k, v in kwargs.items()})
    return args[0] if op.writes else wrap(out, level)


_ELEMENTWISE = (
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh "
    "sigmoid erf erfc erfinv reciprocal lgamma digamma i0 sinc deg2rad rad2deg sign floor ceil round trunc frac "
    "square positive conj neg sgn abs angle isnan isinf isfinite isposinf isneginf signbit isreal logical_not "
    "bitwise_not mul floor_divide remainder fmod atan2 maximum minimum fmax fmin hypot copysign logaddexp "
    "logaddexp2 xlogy nextafter eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or "
    "bitwise_xor bitwise_left_shift bitwise_right_shift add sub div pow div_trunc where clamp copy_ relu gelu "
    "polygamma tanh_backward sigmoid_backward relu_backward gelu_backward special_entr").split()
_rule(*_ELEMENTWISE)(_elementwise)
_BINARY = frozenset(
    "mul floor_divide remainder fmod atan2 maximum minimum fmax fmin hypot copysign logaddexp logaddexp2 xlogy "
    "nextafter eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor "
    "bitwise_left_shift bitwise_right_shift add sub div pow div_trunc".split())


@_rule("fill_")
def _fill(op, level, self, value):
    if isinstance(value, Tensor) and _at(value, level):
        return NotImplemented
    with _Popped():
        op(self._value, value)
    return self


def _shifted_dims(op, dims, ndim):
    return tuple(_wrap_dim(op, d, ndim) for d in dims)


@_rule("sum", "prod", "amax", "amin", "any", "all")
def _reduce(op, level, input, dims, keepdim=False, dtype=None):
    ndim = len(input._shape)
    if not ndim:
        return NotImplemented
    dims = tuple(range(ndim)) if dims is None or dims == () else (dims,) if isinstance(dims, int) else dims
    with _Popped():
        return wrap(op(input._value, _shifted_dims(op, dims, ndim), keepdim, dtype), level)


@_rule("argmax", "argmin")
def _arg_reduce(op, level, input, dim, keepdim=False):
    if dim is None or not input._shape:
        return NotImplemented
    with _Popped():
        return wrap(op(input._value, _wrap_dim(op, dim, len(input._shape)), keepdim), level)


def _dim_first(op, level, input, dim, *rest, **kwargs):
    """Ops whose second argument is one dim of their only tensor: scans, sort, softmax, log_softmax."""
    if not input._shape or any(_at(r, level) for r in rest):
        return NotImplemented
    with _Popped():
        return _wrap_out(op(input._value, _wrap_dim(op, dim, len(input._shape)), *rest, **kwargs), level)


def _wrap_out(out, level):
    """Wrap one output, or each of a (named) tuple of outputs, all batch first."""
    if isinstance(out, Tensor):
        return wrap(out, level)
    parts = [_wrap_out(o, level) for o in out]
    return type(out)(*parts) if hasattr(out, "_fields") else type(out)(parts)


_rule("cumsum", "cumprod", "cummax", "cummin", "sort", "softmax", "log_softmax", "select", "narrow", "slice",
      "unfold")(_dim_first)


@_rule("flip")
def _flip(op, level, input, dims):
    if not input._shape:
        return NotImplemented
    with _Popped():
        return wrap(op(input._value, _shifted_dims(op, dims, len(input._shape))), level)


@_rule("transpose")
def _transpose(op, level, input, dim0, dim1):
    if not input._shape:
        return NotImplemented
    n = len(input._shape)
    with _Popped():
        return wrap(op(input._value, _wrap_dim(op, dim0, n), _wrap_dim(op, dim1, n)), level)


@_rule("permute")
def _permute(op, level, input, dims):
    if len(dims) != len(input._shape):
        return NotImplemented  # the loop raises permute's own error
    with _Popped():
        return wrap(op(input._value, (0,) + _shifted_dims(op, dims, len(input._shape))), level)


@_rule("diagonal")
def _diagonal(op, level, input, offset=0, dim1=0, dim2=1):
    n = len(input._shape)
    with _Popped():
        return wrap(op(input._value, offset, _wrap_dim(op, dim1, n), _wrap_dim(op, dim2, n)), level)


@_rule("view")
def _view(op, level, input, shape):
    shape = (level.size,) + tuple(shape)
    with _Popped():
        try:
            return wrap(op(input._value, shape), level)
        except RuntimeError:  # reshape saw the sample's (nominal) strides; the batch's need a copy
            return wrap(op(input._value.contiguous(), shape), level)


@_rule("expand")
def _expand(op, level, input, shape):
    shape = tuple(shape)
    if len(shape) < len(input._shape):
        return NotImplemented
    with _Popped():
        return wrap(op(_value(input, level, len(shape)), (level.size,) + shape), level)


@_rule("squeeze")
def _squeeze(op, level, input, dims):
    n = len(input._shape)
    if dims is None:
        dims = tuple(range(n))
    elif isinstance(dims, int):
        dims = (dims,)
    if not n:
        return NotImplemented
    with _Popped():
        return wrap(op(input._value, _shifted_dims(op, dims, n)), level)


@_rule("unsqueeze")
def _unsqueeze(op, level, input, dim):
    with _Popped():
        return wrap(op(input._value, _wrap_dim(op, dim, len(input._shape) + 1)), level)


@_rule("alias", "_to_copy", "view.dtype", "layer_norm")
def _leading(op, level, input, *rest, **kwargs):
    """Ops that leave leading dims alone, with only their input batched: run on the value as it is."""
    if any(_at(r, level) for r in rest) or any(_at(v, level) for v in kwargs.values()):
        return NotImplemented
    if op.name == "view.dtype" and not input._shape:
        return NotImplemented
    with _Popped():
        return wrap(op(input._value, *rest, **kwargs), level)


def _expanded(x, level):
    """``x`` as a batch: its value, or the unbatched tensor broadcast over the batch (a view)."""
    if _at(x, level):
        return x._value
    return x.unsqueeze(0).expand((level.size,) + tuple(x._shape))


@_rule("batched_matmul")
def _batched_matmul(op, level, a, b):
    with _Popped():
        if _at(a, level) and not _at(b, level) and len(b._shape) == 2:  # one matrix for all samples: fold rows
            v = a._value
            rows = v.reshape((-1, v._shape[-1]))
            return wrap(op(rows, b).view(v._shape[:-1] + (b._shape[-1],)), level)
        return wrap(op(_expanded(a, level), _expanded(b, level)), level)


@_rule("cat")
def _cat(op, level, tensors, dim=0):
    ndim = max(len(t._shape) for t in tensors)
    if any(len(t._shape) != ndim for t in tensors):
        return NotImplemented  # legacy empty 1-d parts: let the loop apply cat's own rules
    with _Popped():
        return wrap(op([_expanded(t, level) for t in tensors], _wrap_dim(op, dim, ndim)), level)


@_rule("gather")
def _gather(op, level, input, dim, index):
    if not input._shape:
        return NotImplemented
    with _Popped():
        return wrap(op(_expanded(input, level), _wrap_dim(op, dim, len(input._shape)), _expanded(index, level)),
                    level)


def _index_layout(indices, level) -> tuple:
    """``(positions of the index tensors, whether they are adjacent, dims of their broadcast, any batched)``."""
    at = [i for i, t in enumerate(indices) if t is not None]
    return (at, at == list(range(at[0], at[-1] + 1)), max(len(indices[i]._shape) for i in at),
            any(_at(indices[i], level) for i in at))


def _batch_index(indices, level, k: int, device) -> tuple:
    """The physical indices of a batched ``input``: an ``arange`` over the batch first, then each index tensor with
    the batch aligned in front of its broadcast dims."""
    from ..ops.ranges import arange

    batch = arange(level.size, device=device).view((level.size,) + (1,) * k)
    return (batch,) + tuple(None if t is None else _value(t, level, k) if _at(t, level) else t for t in indices)


@_rule("index")
def _index(op, level, input, indices):
    """``input[indices]``: a whole-dim ``None`` entry for the batch, or, for batched index tensors, an ``arange``
    over the batch, with the result's dims put back in the sample's order (NumPy's placement rule)."""
    at, adjacent, k, batched_index = _index_layout(indices, level)
    with _Popped():
        if not batched_index:  # the batch is one more whole dim in front
            out = op(input._value, (None,) + tuple(indices))
            return wrap(out if adjacent else out.movedim(k, 0), level)
        index = tuple(None if t is None else _value(t, level, k) if _at(t, level) else t for t in indices)
        if not _at(input, level):  # the index dims carry the batch: (..., B, *index dims, ...)
            out = op(input, index)
            return wrap(out.movedim(at[0], 0) if adjacent else out, level)
        out = op(input._value, _batch_index(indices, level, k, input.device))  # (B, *index dims, other dims)
        if adjacent and at[0]:  # the index dims go back after the dims before them
            p, n = at[0], len(out._shape)
            out = out.permute([0] + list(range(1 + k, 1 + k + p)) + list(range(1, 1 + k))
                              + list(range(1 + k + p, n)))
        return wrap(out, level)


@_rule("index_put_")
def _index_put(op, level, self, indices, values, accumulate=False):
    """``self[indices] = values`` into a batched ``self``, laid out as :func:`_index` reads it."""
    if not _at(self, level):
        return NotImplemented
    at, adjacent, k, batched_index = _index_layout(indices, level)
    if batched_index and adjacent and at[0]:
        return NotImplemented  # the batch would sit inside the indexed block
    written = k + sum(1 for i in range(len(self._shape)) if i >= len(indices) or indices[i] is None)  # its dims
    with _Popped():
        index = (None,) + tuple(indices) if adjacent and not batched_index else \
            _batch_index(indices, level, k, self.device)
        op(self._value, index, _value(values, level, written) if _at(values, level) else values, accumulate)
    return self


@_rule("scatter_")
def _scatter(op, level, self, dim, index, src, reduce=None, include_self=True):
    """Scatter into a batched ``self`` along ``dim`` shifted by one, index and src broadcast over the batch."""
    if not _at(self, level) or not self._shape:
        return NotImplemented
    with _Popped():
        src = _expanded(src, level) if isinstance(src, Tensor) else src
        op(self._value, _wrap_dim(op, dim, len(self._shape)), _expanded(index, level), src, reduce, include_self)
    return self


def _fold_into_n(op, level, input, *rest):
    """Convolution and pooling over a batched (N, C, ...) input with unbatched weights: the batch joins N."""
    if any(_at(r, level) for r in rest) or len(input._shape) < 3:
        return NotImplemented
    with _Popped():
        v = input._value
        out = op(v.reshape((-1,) + v._shape[2:]), *rest)
        return wrap(out.view((level.size, v._shape[1]) + out._shape[1:]), level)


_rule("convolution", "max_pool", "avg_pool")(_fold_into_n)


@_rule("cross_entropy_loss")
def _cross_entropy(op, level, input, target, weight, reduction, ignore_index):
    """Class-index targets: the batch joins N with reduction 'none', then each sample is reduced on its own."""
    if _at(weight, level) or len(input._shape) < 2 or target.is_floating_point():
        return NotImplemented
    from ..ops.elementwise import where
    from ..ops.indexing import index_select

    with _Popped():
        x, t = _expanded(input, level), _expanded(target, level)
        losses = op(x.reshape((-1,) + x._shape[2:]), t.reshape((-1,) + t._shape[2:]), weight, "none", ignore_index)
        losses = losses.view(t._shape)
        if reduction == "none":
            return wrap(losses, level)
        total = losses.reshape((level.size, -1)).sum(1)
        if reduction == "mean":  # divided by the sample's kept weights, as cross_entropy_loss does
            valid = t != ignore_index
            kept = valid.to(losses.dtype) if weight is None else \
                where(valid, index_select(weight, 0, where(valid, t, 0).reshape(-1)).view(t._shape), 0)
            total = total / kept.to(losses.dtype).reshape((level.size, -1)).sum(1)
        return wrap(total, level)
