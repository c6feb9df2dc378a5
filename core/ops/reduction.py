"""Reduction ops: sums, products, extrema, statistics, norms, logical reductions and scans.

The primitives a backend implements are few, each over a normalised tuple of
dims (``()`` on 0-d tensors) plus ``keepdim``: ``sum``, ``prod``, ``amax``,
``amin``, ``any``, ``all``, ``argmax``/``argmin`` (one dim or None), and the
scans ``cumsum``, ``cumprod``, ``cummax``, ``cummin`` (one dim). Everything
else (mean, var, std, norm, logsumexp, max/min with a dim, median...) is a
composite of those. Ops with several outputs return named tuples from
``core.return_types`` (``torch.return_types``).
"""

from __future__ import annotations

import builtins
import collections
import math
import numbers
import sys
import types
import warnings

from .. import dtypes as dt
from ..dispatch import TensorSpec, define
from ..tensor import Tensor
from ._util import check_computable, finish_out, numel, wrap_dim, wrap_dims
from .creation import empty, full
from .elementwise import abs, div, exp, isinf, isnan, log, logical_not, maximum, minimum, mul, ne, \
    pow, sqrt, sub, where
from .view import reshape

__all__: list = ["return_types"]
METHODS: dict = {}

_INT, _FLOAT = 1, 2  # dtype categories

# -- named tuples (torch.return_types) --------------------------------------------------------------

return_types = types.ModuleType("core.return_types", "Named tuples returned by ops with several outputs.")
sys.modules["core.return_types"] = return_types  # importable and picklable by that name


def return_type(name: str, fields: tuple):
    """A named tuple class ``core.return_types.<name>`` whose repr reads like PyTorch's."""
    cls = collections.namedtuple(name, fields, module="core.return_types")

    def __repr__(self):
        return f"core.return_types.{name}(\n" + ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self)) + ")"

    cls.__repr__ = __repr__
    setattr(return_types, name, cls)
    return cls


_VALUES_INDICES = ("values", "indices")
_max_t, _min_t, _median_t, _cummax_t, _cummin_t = (
    return_type(n, _VALUES_INDICES) for n in ("max", "min", "median", "cummax", "cummin"))
_aminmax_t = return_type("aminmax", ("min", "max"))


# -- argument helpers -------------------------------------------------------------------------------

def _check_tensor(op: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _means_all(dim) -> bool:
    return dim is None or (isinstance(dim, (tuple, list)) and not dim)


_ALL_DIMS = tuple(tuple(range(n)) for n in range(9))


def _dims(op: str, input, dim) -> tuple:
    """Normalised reduction dims: None or ``()`` mean all; 0-d tensors accept 0/-1 and reduce nothing."""
    if not isinstance(input, Tensor):
        _check_tensor(op, input)
    ndim = len(input._shape)
    if dim is None:
        return _ALL_DIMS[ndim] if ndim < len(_ALL_DIMS) else tuple(range(ndim))
    if _means_all(dim):
        return tuple(range(ndim))
    dims = wrap_dims(dim, ndim, op)
    return dims if ndim else ()


def _dim(op: str, input, dim) -> int:
    """One normalised dim (0 on a 0-d tensor)."""
    _check_tensor(op, input)
    return wrap_dim(dim, len(input._shape), op)


def _reduced_shape(shape: tuple, dims: tuple, keepdim: bool) -> tuple:
    if not keepdim and len(dims) == len(shape):
        return ()
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _count(input, dims: tuple) -> int:
    return numel(input._shape[d] for d in dims)


def _check_nonempty(op: str, input, dims: tuple, dim_given: bool = True) -> None:
    """Reductions without an identity (max, min, argmax...) refuse empty dims, with PyTorch's messages."""
    if not dim_given and input.numel() == 0:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           f"reduction dim with the 'dim' argument.")
    for d in dims:
        if input._shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _check_dtype_arg(op: str, dtype) -> None:
    if dtype is not None and not isinstance(dtype, dt.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be core.dtype, not {type(dtype).__name__}")


def _accumulate_dtype(d):
    """Half types accumulate in float32, as PyTorch's CPU kernels do."""
    return dt.float32 if d is dt.float16 or d is dt.bfloat16 else d


def _export(fn, method: bool = True, name: str | None = None):
    name = name or fn.__name__
    __all__.append(name)
    if method:
        METHODS[name] = fn
    return fn


def _finish_pair(op: str, result: tuple, out) -> tuple:
    """Honour ``out=(values, indices)`` for ops returning two tensors."""
    if out is None:
        return result
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{op}(): argument 'out' must be a tuple of two Tensors")
    return type(result)(*(finish_out(op, r, o) for r, o in zip(result, out)))


# -- primitives ---------------------------------------------------------------------------------------

def _out_sum(op, input, dtype):
    """sum/prod/cumsum/cumprod: integral and bool accumulate in int64 unless ``dtype=`` says otherwise."""
    if dtype is not None:
        return dtype
    return dt.int64 if input.dtype.category <= _INT else input.dtype


def _out_same(op, input, dtype):
    return input.dtype


def _out_logical(op, input, dtype):
    return dt.uint8 if input.dtype is dt.uint8 else dt.bool  # uint8 stays uint8, as PyTorch keeps it


_SPEC_CACHE_SIZE = 64  # calls remembered per op


def _reduction_meta(op: str, out_rule, needs_elements: bool = False):
    """The meta of a reduction; its results are remembered per (shape, dtype, dims, keepdim, dtype argument) of a
    tensor input, which is all a spec depends on besides the device (checked on each hit), and specs are never
    modified. Errors are never remembered: a failing call goes through the checks every time."""
    cache: dict = {}

    def meta(input, dims, keepdim=False, dtype=None):
        if isinstance(input, Tensor) and dims.__class__ is tuple and keepdim.__class__ is bool \
                and (dtype is None or dtype.__class__ is dt.dtype):
            key = (input._shape, input.dtype, dims, keepdim, dtype)
            spec = cache.get(key)
            if spec is not None and spec.device is input._storage.device:
                return spec
        else:
            key = None
        _check_tensor(op, input)
        _check_dtype_arg(op, dtype)
        check_computable(op, input.dtype)
        if needs_elements:
            _check_nonempty(op, input, dims)
        out = out_rule(op, input, dtype)
        spec = TensorSpec(_reduced_shape(input._shape, dims, keepdim), out, input._storage.device, out)
        if key is not None:
            if len(cache) >= _SPEC_CACHE_SIZE:
                cache.clear()
            cache[key] = spec
        return spec

    return meta


_REDUCTION_DOC = ("over the normalised dims tuple (() on 0-d tensors), keepdim keeps them as size 1; "
                  "kernel(spec, input, dims, keepdim[, dtype])")
_sum = define("sum", meta=_reduction_meta("sum", _out_sum), primitive=True,
              doc="sum " + _REDUCTION_DOC + "; accumulates in spec.compute_dtype (int64 for integral, float32 "
                  "for half types)")
_prod = define("prod", meta=_reduction_meta("prod", _out_sum), primitive=True,
               doc="product " + _REDUCTION_DOC + "; same dtype rule as sum")
_amax = define("amax", meta=_reduction_meta("amax", _out_same, True), primitive=True,
               doc="maximum " + _REDUCTION_DOC + "; NaN propagates; reduced dims are non-empty")
_amin = define("amin", meta=_reduction_meta("amin", _out_same, True), primitive=True,
               doc="minimum " + _REDUCTION_DOC + "; NaN propagates; reduced dims are non-empty")
_any = define("any", meta=_reduction_meta("any", _out_logical), primitive=True,
              doc="logical or " + _REDUCTION_DOC + "; bool result (uint8 for uint8 input)")
_all = define("all", meta=_reduction_meta("all", _out_logical), primitive=True,
              doc="logical and " + _REDUCTION_DOC + "; bool result (uint8 for uint8 input)")


def _arg_meta(op: str):
    def meta(input, dim, keepdim=False):
        _check_tensor(op, input)
        dims = tuple(range(len(input._shape))) if dim is None else (dim,)
        if dim is None and input.numel() == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
        _check_nonempty(op, input, dims)
        return TensorSpec(_reduced_shape(input._shape, dims, keepdim), dt.int64, input._storage.device,
                          input.dtype)

    return meta


_ARG_DOC = ("over one normalised dim, or the flattened input when dim is None (keepdim then keeps every dim "
            "as size 1); the first occurrence wins, NaN counts as the extremum; int64 result")
_argmax = define("argmax", meta=_arg_meta("argmax"), primitive=True, doc="index of the maximum " + _ARG_DOC)
_argmin = define("argmin", meta=_arg_meta("argmin"), primitive=True, doc="index of the minimum " + _ARG_DOC)


def _scan_meta(op: str):
    def meta(input, dim, dtype=None):
        _check_tensor(op, input)
        _check_dtype_arg(op, dtype)
        out = _out_sum(op, input, dtype)
        return TensorSpec(input._shape, out, input._storage.device, out)

    return meta


def _scan_pair_meta(op: str):
    def meta(input, dim):
        _check_tensor(op, input)
        device = input._storage.device
        return TensorSpec(input._shape, input.dtype, device), TensorSpec(input._shape, dt.int64, device)

    return meta


_SCAN_DOC = "along one normalised dim (0 on 0-d tensors); kernel(spec, input, dim[, dtype])"
_cumsum = define("cumsum", meta=_scan_meta("cumsum"), primitive=True,
                 doc="inclusive running sum " + _SCAN_DOC + "; same dtype rule as sum")
_cumprod = define("cumprod", meta=_scan_meta("cumprod"), primitive=True,
                  doc="inclusive running product " + _SCAN_DOC + "; same dtype rule as sum")
_cummax = define("cummax", meta=_scan_pair_meta("cummax"), primitive=True,
                 doc="running maximum and its index " + _SCAN_DOC + "; ties take the latest index, NaN sticks "
                     "and each later NaN takes its own index; returns (values, indices)")
_cummin = define("cummin", meta=_scan_pair_meta("cummin"), primitive=True,
                 doc="running minimum and its index, as cummax; returns (values, indices)")


# -- sums and products ---------------------------------------------------------------------------------

def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A001 - torch.sum
    """Sum over ``dim`` (all dims when None); integral and bool inputs sum in int64 (``torch.sum``)."""
    result = _sum(input, _dims("sum", input, dim), keepdim, dtype)
    return result if out is None else finish_out("sum", result, out)


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero (``torch.nansum``)."""
    _check_tensor("nansum", input)
    if input.dtype.category >= _FLOAT:
        input = where(isnan(input), 0, input)
    return sum(input, dim, keepdim, dtype=dtype, out=out)


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product over ``dim`` (all dims when None; a tuple too, unlike PyTorch), sum's dtype rule (``torch.prod``)."""
    return finish_out("prod", _prod(input, _dims("prod", input, dim), keepdim, dtype), out)


def _float_out_dtype(op: str, input, dtype):
    """mean's dtype rule: the result must be floating or complex (PyTorch's message otherwise)."""
    _check_tensor(op, input)
    _check_dtype_arg(op, dtype)
    out = dtype or input.dtype
    if out.category < _FLOAT:
        which = "Optional dtype" if dtype is not None else "Input dtype"
        raise RuntimeError(f"{op}(): could not infer output dtype. {which} must be either a floating point or "
                           f"complex dtype. Got: {dt.legacy_name(out)}")
    return out


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Arithmetic mean over ``dim``; floating or complex only (``torch.mean``)."""
    out_dtype = _float_out_dtype("mean", input, dtype)
    dims = _dims("mean", input, dim)
    total = _sum(input, dims, keepdim, _accumulate_dtype(out_dtype))
    return finish_out("mean", div(total, _count(input, dims)).to(out_dtype), out)


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the non-NaN elements (``torch.nanmean``)."""
    _check_tensor("nanmean", input)
    if input.dtype.category < _FLOAT:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{dt.legacy_name(input.dtype)}")
    out_dtype = _float_out_dtype("nanmean", input, dtype)
    dims = _dims("nanmean", input, dim)
    valid = logical_not(isnan(input))
    total = _sum(where(valid, input, 0), dims, keepdim, _accumulate_dtype(out_dtype))
    return finish_out("nanmean", div(total, _sum(valid, dims, keepdim)).to(out_dtype), out)


def count_nonzero(input, dim=None):
    """Number of non-zero elements over ``dim`` (``torch.count_nonzero``)."""
    return _sum(ne(input, 0), _dims("count_nonzero", input, dim), False)


for _fn in (sum, nansum, prod, mean, nanmean, count_nonzero):
    _export(_fn)


# -- extrema -------------------------------------------------------------------------------------------

def amax(input, dim=(), keepdim=False, *, out=None):
    """Maximum over ``dim`` (all dims when empty); NaN propagates (``torch.amax``)."""
    dims = _dims("amax", input, dim)
    _check_nonempty("amax", input, dims, not _means_all(dim))
    return finish_out("amax", _amax(input, dims, keepdim), out)


def amin(input, dim=(), keepdim=False, *, out=None):
    """Minimum over ``dim`` (all dims when empty); NaN propagates (``torch.amin``)."""
    dims = _dims("amin", input, dim)
    _check_nonempty("amin", input, dims, not _means_all(dim))
    return finish_out("amin", _amin(input, dims, keepdim), out)


def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` over ``dim`` or over everything (``torch.aminmax``)."""
    dims = _dims("aminmax", input, dim)
    if input.numel() == 0 and (dim is None or _count(input, dims) == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    return _aminmax_t(_amin(input, dims, keepdim), _amax(input, dims, keepdim))


def _arg_dim(op: str, input, dim):
    """None (flatten) or one normalised dim; 0-d tensors flatten."""
    _check_tensor(op, input)
    if input.dtype is dt.bool:
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        return None
    d = _dim(op, input, dim)
    return d if input._shape else None


def argmax(input, dim=None, keepdim=False, *, out=None):
    """Index of the first maximum over ``dim``, or of the flattened input (``torch.argmax``)."""
    return finish_out("argmax", _argmax(input, _arg_dim("argmax", input, dim), keepdim), out)


def argmin(input, dim=None, keepdim=False, *, out=None):
    """Index of the first minimum over ``dim``, or of the flattened input (``torch.argmin``)."""
    return finish_out("argmin", _argmin(input, _arg_dim("argmin", input, dim), keepdim), out)


def _extremum(op: str, value_op, index_op, pair_type, binary, input, dim, keepdim, out):
    """max/min: the whole-tensor value, (values, indices) over a dim, or elementwise with a tensor."""
    if isinstance(dim, Tensor):
        return binary(input, dim, out=out)
    _check_tensor(op, input)
    if dim is None:
        dims = tuple(range(len(input._shape)))
        _check_nonempty(op, input, dims, dim_given=False)
        return finish_out(op, value_op(input, dims, False), out)
    d = _dim(op, input, dim)
    dims = (d,) if input._shape else ()
    _check_nonempty(op, input, dims)
    # bool has no argmax of its own (PyTorch refuses it); uint8 orders False < True the same way
    keyed = input.to(dt.uint8) if input.dtype is dt.bool else input
    if not input._shape:
        return _finish_pair(op, pair_type(value_op(input, dims, keepdim), index_op(keyed, None, keepdim)), out)
    indices = index_op(keyed, d, True)
    # values read at the returned indices: on ties the whole gradient goes to that element, as in PyTorch
    from .indexing import gather

    values = gather(input, d, indices)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return _finish_pair(op, pair_type(values, indices), out)


def max(input, dim=None, keepdim=False, *, out=None):  # noqa: A001 - torch.max
    """Maximum of all elements; ``(values, indices)`` over ``dim``; elementwise ``maximum`` with a tensor."""
    return _extremum("max", _amax, _argmax, _max_t, maximum, input, dim, keepdim, out)


def min(input, dim=None, keepdim=False, *, out=None):  # noqa: A001 - torch.min
    """Minimum of all elements; ``(values, indices)`` over ``dim``; elementwise ``minimum`` with a tensor."""
    return _extremum("min", _amin, _argmin, _min_t, minimum, input, dim, keepdim, out)


for _fn in (amax, amin, aminmax, argmax, argmin, max, min):
    _export(_fn)


# -- logical -------------------------------------------------------------------------------------------

def any(input, dim=None, keepdim=False, *, out=None):  # noqa: A001 - torch.any
    """Whether any element over ``dim`` is non-zero (``torch.any``)."""
    return finish_out("any", _any(input, _dims("any", input, dim), keepdim), out)


def all(input, dim=None, keepdim=False, *, out=None):  # noqa: A001 - torch.all
    """Whether every element over ``dim`` is non-zero (``torch.all``)."""
    return finish_out("all", _all(input, _dims("all", input, dim), keepdim), out)


_export(any)
_export(all)


# -- statistics ----------------------------------------------------------------------------------------

def _correction(op: str, dim, unbiased, correction):
    """Untangle PyTorch's overloads: ``var(x, False)``, ``var(x, dim, unbiased)`` and ``correction=``."""
    if isinstance(dim, builtins.bool):
        dim, unbiased = None, dim if unbiased is None else unbiased
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}(): pass either correction= or the legacy unbiased=, not both")
    if correction is None:
        correction = 0 if unbiased is False else 1
    if not isinstance(correction, numbers.Real) or isinstance(correction, builtins.bool):
        raise TypeError(f"{op}(): argument 'correction' must be a number, not {type(correction).__name__}")
    return dim, correction


def _var_mean(op: str, input, dim, correction, keepdim, root: bool = False):
    """``(var, mean)`` (``(std, mean)`` with ``root``) in two passes, in float32 for half types."""
    _check_tensor(op, input)
    if input.dtype.category < _FLOAT:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = _dims(op, input, dim)
    n = _count(input, dims)
    x = input.to(_accumulate_dtype(input.dtype))
    centre = div(_sum(x, dims, True), n)
    deviation = abs(sub(x, centre))
    dof = builtins.max(n - correction, 0)
    if dof <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      f"reduction factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    variance = div(_sum(mul(deviation, deviation), dims, keepdim), dof)
    if root:
        variance = sqrt(variance)
    if not keepdim:
        centre = reshape(centre, _reduced_shape(input._shape, dims, False))
    return variance.to(input.dtype.to_real()), centre.to(input.dtype)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim`` with ``correction`` (default 1, Bessel's; ``unbiased=False`` means 0) (``torch.var``)."""
    dim, correction = _correction("var", dim, unbiased, correction)
    return finish_out("var", _var_mean("var", input, dim, correction, keepdim)[0], out)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation over ``dim``, ``sqrt(var)`` (``torch.std``)."""
    dim, correction = _correction("std", dim, unbiased, correction)
    return finish_out("std", _var_mean("std", input, dim, correction, keepdim, root=True)[0], out)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim`` (``torch.var_mean``)."""
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    return _var_mean("var_mean", input, dim, correction, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim`` (``torch.std_mean``)."""
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    return _var_mean("std_mean", input, dim, correction, keepdim, root=True)


_export(var)
_export(std)
_export(var_mean, method=False)
_export(std_mean, method=False)


def median(input, dim=None, keepdim=False, *, out=None):
    """Lower median of all elements, or ``(values, indices)`` over ``dim``; NaN propagates (``torch.median``)."""
    from .sorting import sort

    _check_tensor("median", input)
    if dim is None:
        if input.numel() == 0:
            fill = math.nan if input.dtype.category >= _FLOAT else dt.iinfo(input.dtype).min
            return finish_out("median", full((), fill, dtype=input.dtype, device=input.device), out)
        return finish_out("median", median(reshape(input, (-1,)), 0).values, out)
    d = _dim("median", input, dim)
    flat = reshape(input, (1,)) if not input._shape else input
    _check_nonempty("median", flat, (d,))
    if flat.numel() == 0:  # nothing to select from (and no view of an empty buffer at an offset)
        shape = _reduced_shape(input._shape, (d,), keepdim)
        return _finish_pair("median", _median_t(empty(shape, dtype=input.dtype, device=input.device),
                                                empty(shape, dtype=dt.int64, device=input.device)), out)
    values, indices = sort(flat, d, stable=True)
    k = (flat._shape[d] - 1) // 2
    values, indices = values.select(d, k), indices.select(d, k)
    if input.dtype.category >= _FLOAT:  # NaN sorts last, but the median of a row with NaN is its first NaN
        nan_mask = isnan(flat)
        has_nan = _any(nan_mask, (d,), False)
        values = where(has_nan, math.nan, values)
        indices = where(has_nan, _argmax(nan_mask.to(dt.uint8), d, False), indices)
    if keepdim and input._shape:
        values, indices = values.unsqueeze(d), indices.unsqueeze(d)
    elif not input._shape:
        values, indices = reshape(values, ()), reshape(indices, ())
    return _finish_pair("median", _median_t(values.contiguous(), indices.contiguous()), out)


_export(median)


# -- norms and log-sum-exp ----------------------------------------------------------------------------

def _vector_norm(x, p, dims, keepdim):
    """``sum(|x|^p)^(1/p)`` over ``dims`` of a real float tensor ``x`` (p may be inf, -inf or 0)."""
    if p in (math.inf, -math.inf):
        if x.numel() == 0 and _count(x, dims) == 0:
            raise RuntimeError(f"norm(): cannot compute the {p} norm on an empty tensor because the operation "
                               f"does not have an identity")
        return (_amax if p > 0 else _amin)(x, dims, keepdim)
    if p == 0:
        return _sum(ne(x, 0), dims, keepdim, x.dtype)
    if p == 1:
        return _sum(x, dims, keepdim)
    if p == 2:
        return sqrt(_sum(mul(x, x), dims, keepdim))
    return pow(_sum(pow(x, p), dims, keepdim), 1.0 / p)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """Vector p-norm over ``dim`` ('fro' is the 2-norm; 'nuc' sums the singular values of 2 dims) (``torch.norm``)."""
    _check_tensor("norm", input)
    _check_dtype_arg("norm", dtype)
    if dtype is not None:
        input = input.to(dtype)
    if input.dtype.category < _FLOAT:
        raise RuntimeError(f"norm(): Expected a floating point or complex tensor as input. Got "
                           f"{dt.legacy_name(input.dtype)}")
    if isinstance(p, str):
        if p == "nuc":
            return finish_out("norm", _nuclear_norm(input, dim, keepdim), out)
        if p != "fro":
            raise RuntimeError(f"norm(): Order {p} not supported.")
        p = 2
    if not isinstance(p, numbers.Real) or isinstance(p, builtins.bool):
        raise TypeError(f"norm(): argument 'p' must be a number or 'fro'/'nuc', not {type(p).__name__}")
    dims = _dims("norm", input, dim)
    magnitude = abs(input).to(_accumulate_dtype(input.dtype.to_real()))
    result = _vector_norm(magnitude, p, dims, keepdim)
    return finish_out("norm", result.to(input.dtype.to_real()), out)


def _nuclear_norm(input, dim, keepdim):
    from .decompositions import linalg_svdvals  # decompositions is built on this module's ops

    dims = _dims("norm", input, dim if dim is not None else (-2, -1))
    if len(dims) != 2:
        raise RuntimeError(f"norm(): p='nuc' needs exactly two dims, got {list(dims)}")
    rest = [i for i in range(input.ndim) if i not in dims]
    result = _sum(linalg_svdvals(input.permute(*rest, *dims)), (len(rest),), False)
    if keepdim:
        result = reshape(result, _reduced_shape(input._shape, dims, True))
    return result


def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input)))`` over ``dim``, shifted by the maximum for stability (``torch.logsumexp``)."""
    _check_tensor("logsumexp", input)
    out_dtype = input.dtype if input.dtype.category >= _FLOAT else dt.get_default_dtype()
    x = input.to(_accumulate_dtype(out_dtype))
    dims = _dims("logsumexp", x, dim)
    if x.numel() == 0:
        return finish_out("logsumexp", log(_sum(exp(x), dims, keepdim)).to(out_dtype), out)
    shift = _amax(x, dims, True)
    shift = where(isinf(shift), 0, shift)  # all -inf (or +inf) rows: no shift, exp gives 0 (or inf)
    result = log(_sum(exp(sub(x, shift)), dims, keepdim))
    shift = shift if keepdim else reshape(shift, result._shape)
    return finish_out("logsumexp", (result + shift).to(out_dtype), out)


_export(norm)
_export(logsumexp)


# -- scans -------------------------------------------------------------------------------------------

def cumsum(input, dim, *, dtype=None, out=None):
    """Running sum along ``dim``; integral and bool inputs accumulate in int64 (``torch.cumsum``)."""
    return finish_out("cumsum", _cumsum(input, _dim("cumsum", input, dim), dtype), out)


def cumprod(input, dim, *, dtype=None, out=None):
    """Running product along ``dim`` (``torch.cumprod``)."""
    return finish_out("cumprod", _cumprod(input, _dim("cumprod", input, dim), dtype), out)


def cummax(input, dim, *, out=None):
    """Running maximum and its index along ``dim`` (``torch.cummax``)."""
    return _finish_pair("cummax", _cummax_t(*_cummax(input, _dim("cummax", input, dim))), out)


def cummin(input, dim, *, out=None):
    """Running minimum and its index along ``dim`` (``torch.cummin``)."""
    return _finish_pair("cummin", _cummin_t(*_cummin(input, _dim("cummin", input, dim))), out)


for _fn in (cumsum, cumprod, cummax, cummin):
    _export(_fn)
