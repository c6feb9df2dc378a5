"""Products: matmul and its relatives (mm, bmm, mv, dot, addmm, addr...), einsum, tensordot, kron, trace, cross, cdist,
and chains of products in the cheapest order (linalg.multi_dot, chain_matmul).

One primitive, ``batched_matmul``, multiplies stacks of matrices (..., n, k) @
(..., k, m) with equal batch dims. Every other product is a composite that
views, expands or reshapes its operands into that form, so a backend that
implements ``batched_matmul`` (a GEMM loop, or cuBLAS' strided batched GEMM)
gets all of them.
"""

from __future__ import annotations

import math
import numbers
import warnings

from .. import dtypes as dt
from ..amp.autocast_mode import autocast_inputs
from ..dispatch import TensorSpec, define
from ..errors import op_error
from ..tensor import Tensor
from ._util import broadcast_shapes, check_computable, common_device, finish_out, numel, wrap_dim, wrap_dims
from .creation import empty
from .elementwise import abs, add, conj, mul, ne, pow, sqrt, sub
from .reduction import amax, sum
from .view import diagonal, expand, permute, reshape, select, squeeze, unsqueeze

__all__ = ["addbmm", "addmm", "addmv", "addr", "baddbmm", "bmm", "cdist", "chain_matmul", "cross", "dot", "einsum",
           "ger", "inner", "kron", "matmul", "mm", "mv", "outer", "tensordot", "trace", "vdot"]

# PyTorch names C++ scalar types in some matmul messages ("float != double"); keep its wording.
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _dims_text(shape) -> str:
    return "x".join(map(str, shape))


def _check_tensors(op: str, **named) -> None:
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")


def _check_bool(op: str, *tensors) -> None:
    # PyTorch's CPU GEMM has no bool kernel
    for t in tensors:
        if t.dtype is dt.bool:
            raise NotImplementedError(f"{op}(): \"{op}\" not implemented for 'Bool'")


def _check_same_dtype(op: str, a: Tensor, b: Tensor) -> None:
    if a.dtype is not b.dtype:
        raise op_error(RuntimeError, op, f"expected m1 and m2 to have the same dtype, but got: "
                       f"{_CPP_NAMES[a.dtype.name]} != {_CPP_NAMES[b.dtype.name]}")
    if a.dtype is dt.bool:
        _check_bool(op, a)


def _autocast(op: str, out, *tensors):
    """The operands as an autocast region casts them for ``op`` (torch lists the matrix products); calls with
    ``out=`` are not eligible."""
    return tensors if out is not None else autocast_inputs(op, *tensors)


# -- the primitive -------------------------------------------------------------------------------------

def _batched_matmul_meta(a, b):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        _check_tensors("batched_matmul", a=a, b=b)
    ndim = len(a._shape)
    if ndim < 2 or ndim != len(b._shape) or a._shape[:-2] != b._shape[:-2] or a._shape[-1] != b._shape[-2]:
        raise op_error(RuntimeError, "batched_matmul", "expected (..., n, k) and (..., k, m) with equal batch "
                       "dims", a, b)
    _check_same_dtype("batched_matmul", a, b)
    check_computable("batched_matmul", a.dtype)
    device = a._storage.device
    if b._storage.device is not device:
        device = common_device("batched_matmul", (a, b))
    return TensorSpec(a._shape[:-1] + b._shape[-1:], a.dtype, device)


batched_matmul = define(
    "batched_matmul", meta=_batched_matmul_meta, primitive=True,
    doc="a @ b for a of shape (..., n, k) and b of shape (..., k, m) with EQUAL batch dims (callers expand them; "
        "inputs may have any strides, including 0 from expand), same dtype (not bool), same device. Returns a "
        "fresh contiguous (..., n, m) tensor. Integers wrap like integer GEMM; float16/bfloat16 accumulate in "
        "float32; k == 0 gives zeros.")


# -- matrix and vector products ------------------------------------------------------------------------

def _mismatch(op: str, a_shape, b_shape) -> Exception:
    return op_error(RuntimeError, op, f"mat1 and mat2 shapes cannot be multiplied ({_dims_text(a_shape)} and "
                    f"{_dims_text(b_shape)})")


def matmul(input, other, *, out=None):
    """Matrix product with NumPy's dim rules: dot, matrix-vector, batched with broadcasting (``torch.matmul``)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        _check_tensors("matmul", input=input, other=other)
    input, other = _autocast("matmul", out, input, other)
    da, db = len(input._shape), len(other._shape)
    if da == 0 or db == 0:
        raise op_error(RuntimeError, "matmul", f"both arguments to matmul need to be at least 1D, but they are "
                       f"{da}D and {db}D")
    _check_same_dtype("matmul", input, other)
    if da == 1 and db == 1:
        result = dot(input, other)
    elif da == 2 and db == 1:
        result = mv(input, other)
    elif da == 2 and db == 2:
        if input._shape[1] != other._shape[0]:
            raise _mismatch("matmul", input._shape, other._shape)
        result = batched_matmul(input, other)
    elif db <= 2:
        # (..., n, k) @ (k, m) or (k,): fold the batch into the rows of one matrix product
        k_other = other._shape[0]
        if input._shape[-1] != k_other:
            shown_b = other._shape if db == 2 else (k_other,)
            raise _mismatch("matmul", input._shape if da > 1 else (1,) + input._shape, shown_b)
        rows = reshape(input, (numel(input._shape[:-1]), k_other))
        columns = other if db == 2 else unsqueeze(other, 1)
        result = reshape(batched_matmul(rows, columns), input._shape[:-1] + other._shape[1:])
    else:
        a = input if da > 1 else unsqueeze(input, 0)
        b = other
        if a._shape[-1] != b._shape[-2]:
            raise _mismatch("matmul", input._shape, other._shape)
        batch = broadcast_shapes(a._shape[:-2], b._shape[:-2], op="matmul")
        a = expand(a, batch + a._shape[-2:])
        b = expand(b, batch + b._shape[-2:])
        result = batched_matmul(a, b)
        if da == 1:
            result = squeeze(result, -2)
    return finish_out("matmul", result, out)


def mm(input, mat2, *, out=None):
    """Product of two matrices (``torch.mm``)."""
    if not isinstance(input, Tensor) or not isinstance(mat2, Tensor):
        _check_tensors("mm", input=input, mat2=mat2)
    input, mat2 = _autocast("mm", out, input, mat2)
    if len(input._shape) != 2:
        raise op_error(RuntimeError, "mm", "self must be a matrix")
    if len(mat2._shape) != 2:
        raise op_error(RuntimeError, "mm", "mat2 must be a matrix")
    _check_same_dtype("mm", input, mat2)
    if input._shape[1] != mat2._shape[0]:
        raise _mismatch("mm", input._shape, mat2._shape)
    return finish_out("mm", batched_matmul(input, mat2), out)


def _check_batches(op: str, batch1: Tensor, batch2: Tensor) -> None:
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.ndim != 3:
            raise op_error(RuntimeError, op, f"{name} must be a 3D tensor")
    if batch1._shape[0] != batch2._shape[0]:
        raise op_error(RuntimeError, op, f"batch1 and batch2 must have same number of batches, got "
                       f"{batch1._shape[0]} and {batch2._shape[0]}")
    if batch1._shape[2] != batch2._shape[1]:
        raise op_error(RuntimeError, op, f"Expected size for first two dimensions of batch2 tensor to be: "
                       f"[{batch1._shape[0]}, {batch1._shape[2]}] but got: [{batch2._shape[0]}, "
                       f"{batch2._shape[1]}].")


def bmm(input, mat2, *, out=None):
    """Batched product of two 3-D tensors with the same batch size (``torch.bmm``)."""
    _check_tensors("bmm", input=input, mat2=mat2)
    input, mat2 = _autocast("bmm", out, input, mat2)
    _check_batches("bmm", input, mat2)
    _check_same_dtype("bmm", input, mat2)
    return finish_out("bmm", batched_matmul(input, mat2), out)


def mv(input, vec, *, out=None):
    """Matrix-vector product (``torch.mv``)."""
    _check_tensors("mv", input=input, vec=vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise op_error(RuntimeError, "mv", f"expected a matrix and a vector, but got {input.ndim}D and "
                       f"{vec.ndim}D tensors")
    input, vec = _autocast("mv", out, input, vec)
    _check_same_dtype("mv", input, vec)
    if input._shape[1] != vec._shape[0]:
        raise op_error(RuntimeError, "mv", f"size mismatch, got input ({input._shape[0]}), mat "
                       f"({_dims_text(input._shape)}), vec ({vec._shape[0]})")
    return finish_out("mv", squeeze(batched_matmul(input, unsqueeze(vec, 1)), 1), out)


def _check_vectors(op: str, input, other) -> None:
    _check_tensors(op, input=input, tensor=other)
    if input.ndim != 1 or other.ndim != 1:
        raise op_error(RuntimeError, op, f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype is not other.dtype:
        raise op_error(RuntimeError, op, f"expected both vectors to have same dtype, but found "
                       f"{dt.legacy_name(input.dtype)} and {dt.legacy_name(other.dtype)}")
    _check_bool(op, input)
    if input._shape[0] != other._shape[0]:
        n, m = input._shape[0], other._shape[0]
        raise op_error(RuntimeError, op, f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have "
                       f"the same number of elements, but got {n} and {m} elements respectively")


def dot(input, tensor, *, out=None):
    """Inner product of two 1-D tensors of the same dtype (``torch.dot``)."""
    _check_vectors("dot", input, tensor)
    result = reshape(batched_matmul(unsqueeze(input, 0), unsqueeze(tensor, 1)), ())
    return finish_out("dot", result, out)


def vdot(input, other, *, out=None):
    """``dot(conj(input), other)`` (``torch.vdot``)."""
    _check_vectors("vdot", input, other)
    return dot(conj(input) if input.is_complex() else input, other, out=out)


def inner(input, other, *, out=None):
    """Sum of products over the last dims; a scalar operand multiplies (``torch.inner``)."""
    _check_tensors("inner", input=input, other=other)
    if input.ndim == 0 or other.ndim == 0:
        return finish_out("inner", mul(input, other), out)
    if input._shape[-1] != other._shape[-1]:
        raise op_error(RuntimeError, "inner", f"the last dimension must match on both input tensors but got "
                       f"shapes {list(input._shape)} and {list(other._shape)}")
    return finish_out("inner", tensordot(input, other, ([-1], [-1])), out)


def outer(input, vec2, *, out=None):
    """Outer product of two vectors, with type promotion (``torch.outer``)."""
    _check_tensors("outer", input=input, vec2=vec2)
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise op_error(RuntimeError, "outer", f"Expected 1-D argument {name}, but got {t.ndim}-D")
    return finish_out("outer", mul(unsqueeze(input, 1), vec2), out)


ger = outer


# -- beta * input + alpha * product --------------------------------------------------------------------

def _scalar_for(d, value):
    # PyTorch converts alpha/beta to the tensor's scalar type, so integral tensors get truncated factors
    return int(value) if d.category < 2 and not isinstance(value, bool) else value


def _add_scaled(op: str, input, product, beta, alpha, out):
    _check_tensors(op, input=input)
    if input.dtype is not product.dtype:
        raise op_error(RuntimeError, op, f"self and mat2 must have the same dtype, but got "
                       f"{dt.legacy_name(input.dtype)} and {dt.legacy_name(product.dtype)}")
    if broadcast_shapes(input._shape, product._shape, op=op) != product._shape:
        raise op_error(RuntimeError, op, f"input of shape {list(input._shape)} cannot be broadcast to the "
                       f"product's shape {list(product._shape)}")
    beta, alpha = _scalar_for(product.dtype, beta), _scalar_for(product.dtype, alpha)
    if alpha != 1:
        product = mul(product, alpha)
    if beta == 0:  # input is ignored entirely, so its NaNs do not propagate (PyTorch's rule)
        result = product
    else:
        result = add(input if beta == 1 else mul(input, beta), product)
    return finish_out(op, result, out)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` (``torch.addmm``)."""
    input, mat1, mat2 = _autocast("addmm", out, input, mat1, mat2)
    return _add_scaled("addmm", input, mm(mat1, mat2), beta, alpha, out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)`` (``torch.addmv``)."""
    input, mat, vec = _autocast("addmv", out, input, mat, vec)
    return _add_scaled("addmv", input, mv(mat, vec), beta, alpha, out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)`` (``torch.addr``)."""
    _check_tensors("addr", vec1=vec1, vec2=vec2)
    for name, vec in (("vec1", vec1), ("vec2", vec2)):
        if vec.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {vec.dim()}-D")
    input, vec1, vec2 = _autocast("addr", out, input, vec1, vec2)
    return _add_scaled("addr", input, outer(vec1, vec2), beta, alpha, out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])`` (``torch.addbmm``)."""
    _check_tensors("addbmm", batch1=batch1, batch2=batch2)
    _check_batches("addbmm", batch1, batch2)
    input, batch1, batch2 = _autocast("addbmm", out, input, batch1, batch2)
    _check_same_dtype("addbmm", batch1, batch2)
    b, n, k = batch1._shape
    m = batch2._shape[2]
    # the sum over batches is one product with the batch folded into the contracted dim
    product = batched_matmul(reshape(permute(batch1, (1, 0, 2)), (n, b * k)), reshape(batch2, (b * k, m)))
    return _add_scaled("addbmm", input, product, beta, alpha, out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)`` (``torch.baddbmm``)."""
    input, batch1, batch2 = _autocast("baddbmm", out, input, batch1, batch2)
    return _add_scaled("baddbmm", input, bmm(batch1, batch2), beta, alpha, out)


def _inplace(name: str, fn):
    def inplace(self, *args, **kwargs):
        result = fn(self, *args, **kwargs)
        if result._shape != self._shape:
            raise op_error(RuntimeError, name + "_", f"the result of shape {list(result._shape)} does not match "
                           f"self's shape {list(self._shape)}")
        return self.copy_(result)

    inplace.__name__ = name + "_"
    inplace.__doc__ = f"In-place ``{name}``."
    return inplace


# -- tensordot, kron, trace ----------------------------------------------------------------------------

def _tensordot_dims(a: Tensor, b: Tensor, dims) -> tuple:
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral) and not isinstance(dims, bool):
        if dims < 0:
            raise op_error(RuntimeError, "tensordot", f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise op_error(RuntimeError, "tensordot", f"tensordot expects dims < ndim_a or ndim_b, but got "
                           f"dims={dims}")
        return list(range(a.ndim - dims, a.ndim)), list(range(dims))
    if not isinstance(dims, (list, tuple)) or len(dims) != 2:
        raise TypeError(f"tensordot(): dims must be an int or a pair of lists of dims, got {dims!r}")
    dims_a, dims_b = ([d] if isinstance(d, numbers.Integral) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise op_error(RuntimeError, "tensordot", "both dimension lists should have same length")
    return dims_a, dims_b


def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` of ``a`` with ``dims`` of ``b`` (``torch.tensordot``)."""
    _check_tensors("tensordot", a=a, b=b)
    given_a, given_b = _tensordot_dims(a, b, dims)
    dims_a = wrap_dims(given_a, a.ndim, "tensordot")
    dims_b = wrap_dims(given_b, b.ndim, "tensordot")
    if a.dtype is not b.dtype:
        raise op_error(RuntimeError, "tensordot", f"both inputs should have same dtype, but got "
                       f"{a.dtype.name} and {b.dtype.name}")
    _check_bool("tensordot", a)
    sizes = []
    for ga, gb, da, db in zip(given_a, given_b, dims_a, dims_b):
        sa, sb = a._shape[da], b._shape[db]
        if sa != sb and sa != 1 and sb != 1:
            raise op_error(RuntimeError, "tensordot", f"contracted dimensions need to match, but first has size "
                           f"{sa} in dim {ga} and second has size {sb} in dim {gb}")
        sizes.append(max(sa, sb))
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    free_a_shape = tuple(a._shape[d] for d in free_a)
    free_b_shape = tuple(b._shape[d] for d in free_b)
    k = numel(sizes)
    # size-1 contracted dims broadcast against the other operand's size
    left = expand(permute(a, free_a + list(dims_a)), free_a_shape + tuple(sizes))
    right = expand(permute(b, list(dims_b) + free_b), tuple(sizes) + free_b_shape)
    product = batched_matmul(reshape(left, (numel(free_a_shape), k)), reshape(right, (k, numel(free_b_shape))))
    return finish_out("tensordot", reshape(product, free_a_shape + free_b_shape), out)


def kron(input, other, *, out=None):
    """Kronecker product, with type promotion (``torch.kron``)."""
    _check_tensors("kron", input=input, other=other)
    n = max(input.ndim, other.ndim)
    a_shape = (1,) * (n - input.ndim) + input._shape
    b_shape = (1,) * (n - other.ndim) + other._shape
    a = reshape(input, tuple(x for s in a_shape for x in (s, 1)))
    b = reshape(other, tuple(x for s in b_shape for x in (1, s)))
    result = reshape(mul(a, b), tuple(x * y for x, y in zip(a_shape, b_shape)))
    return finish_out("kron", result, out)


def trace(input):
    """Sum of the main diagonal of a matrix; integral inputs sum in int64 (``torch.trace``)."""
    _check_tensors("trace", input=input)
    if input.ndim != 2:
        raise op_error(RuntimeError, "trace", f"expected a matrix, but got tensor with dim {input.ndim}")
    _check_bool("trace", input)
    return sum(diagonal(input))


# -- cross, cdist --------------------------------------------------------------------------------------

def cross(input, other, dim=None, *, out=None):
    """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3), broadcasting (``torch.cross``)."""
    _check_tensors("cross", input=input, other=other)
    if input.ndim != other.ndim:
        raise op_error(RuntimeError, "cross", "inputs must have the same number of dimensions.")
    shape = broadcast_shapes(input._shape, other._shape, op="cross")
    if dim is None:
        dim = next((i for i, s in enumerate(shape) if s == 3), -1)
    dim = wrap_dim(dim, len(shape), "cross")
    if input._shape[dim] != 3 or other._shape[dim] != 3:
        raise op_error(RuntimeError, "cross", f"inputs dimension {dim} must have length 3. Got "
                       f"{input._shape[dim]} and {other._shape[dim]}")
    a = [select(input, dim, i) for i in range(3)]
    b = [select(other, dim, i) for i in range(3)]
    result = empty(shape, dtype=dt.result_type(input, other), device=common_device("cross", (input, other)))
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        select(result, dim, i).copy_(sub(mul(a[j], b[k]), mul(a[k], b[j])))
    return finish_out("cross", result, out)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """p-norm distances between the rows of two (batched) matrices (``torch.cdist``)."""
    _check_tensors("cdist", x1=x1, x2=x2)
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dtype.category != 2:
            raise op_error(RuntimeError, "cdist", f"cdist only supports floating-point dtypes, {name} got: "
                           f"{dt.legacy_name(t.dtype)}")
        if t.ndim < 2:
            raise op_error(RuntimeError, "cdist", f"cdist only supports at least 2D tensors, {name} got: "
                           f"{t.ndim}D")
    if x1._shape[-1] != x2._shape[-1]:
        raise op_error(RuntimeError, "cdist", f"X1 and X2 must have the same number of columns. X1: "
                       f"{x1._shape[-1]} X2: {x2._shape[-1]}")
    if x1.dtype is not x2.dtype:
        raise op_error(RuntimeError, "cdist", f"expected both inputs to have the same dtype, but got "
                       f"{x1.dtype.name} and {x2.dtype.name}")
    if p < 0:
        raise op_error(RuntimeError, "cdist", "cdist only supports non-negative p values")
    diff = abs(sub(unsqueeze(x1, -2), unsqueeze(x2, -3)))
    if p == 0:
        return sum(ne(diff, 0), -1).to(x1.dtype)
    if math.isinf(p):
        return amax(diff, -1) if diff._shape[-1] else sum(diff, -1)
    if p == 1:
        return sum(diff, -1)
    if p == 2:
        return sqrt(sum(mul(diff, diff), -1))
    return pow(sum(pow(diff, p), -1), 1.0 / p)


# -- einsum --------------------------------------------------------------------------------------------

def einsum(*args):
    """Einstein summation over an equation, ``einsum('ij,jk->ik', a, b)``, or the sublist form (``torch.einsum``).

    Each operand's repeated subscripts become diagonals, subscripts seen in one
    operand only are summed, then operands are contracted left to right, each
    pair as one ``batched_matmul``.
    """
    if args and isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operand {i} must be Tensor, not {type(t).__name__}")
        if t.dtype is not operands[0].dtype:
            raise op_error(RuntimeError, "einsum", f"expected all operands to have the same dtype, but operand 0 "
                           f"is {operands[0].dtype.name} and operand {i} is {t.dtype.name}")
    terms, output = _parse_equation(equation, operands)
    return _contract(list(operands), terms, output)


def _sublist_equation(args) -> tuple:
    """The equation of einsum's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` and its operands."""
    has_output = len(args) % 2 == 1 and len(args) > 1
    body = args[:-1] if has_output else args
    operands, sublists = tuple(body[0::2]), list(body[1::2])
    if len(sublists) != len(operands):
        raise ValueError("einsum(): expected a subscripts list after every operand")
    text = ",".join(_sublist_text(s) for s in sublists)
    return (text + "->" + _sublist_text(args[-1]) if has_output else text), operands


def _sublist_text(sublist) -> str:
    out = []
    for s in sublist:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, numbers.Integral) and 0 <= s < 52:
            out.append(chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26))  # keeps the numeric order
        else:
            raise op_error(ValueError, "einsum", f"subscript in subscript list is not within the valid range "
                           f"[0, 52), got {s!r}")
    return "".join(out)


def _parse_term(text: str, who: str, start: int) -> list:
    """The subscripts of one term: letters, and "..." where the ellipsis is."""
    labels, j = [], 0
    while j < len(text):
        c = text[j]
        if c.isascii() and c.isalpha():
            labels.append(c)
        elif c == ".":
            if "..." in labels:
                raise op_error(RuntimeError, "einsum", f"found '.' for {who} for which an ellipsis was already "
                               f"found")
            if text[j:j + 3] != "...":
                raise op_error(RuntimeError, "einsum", f"found '.' for {who} that is not part of any ellipsis")
            labels.append("...")
            j += 2
        elif not c.isspace():
            raise op_error(RuntimeError, "einsum", f"invalid subscript given at index {start + j} in the equation "
                           f"string, subscripts must be in [a-zA-Z]")
        j += 1
    return labels


def _parse_equation(equation: str, operands) -> tuple:
    """Labels per operand and for the output; ellipsis dims become ints, right-aligned across operands."""
    lhs, arrow, rhs = equation.partition("->")
    texts = lhs.split(",")
    if len(texts) > len(operands):
        raise op_error(RuntimeError, "einsum", "fewer operands were provided than specified in the equation")
    if len(texts) < len(operands):
        raise op_error(RuntimeError, "einsum", "more operands were provided than specified in the equation")
    parsed, start, ellipsis_dims = [], 0, 0
    for i, (text, t) in enumerate(zip(texts, operands)):
        labels = _parse_term(text, f"operand {i}", start)
        start += len(text) + 1
        letters = len(labels) - ("..." in labels)
        if "..." in labels:
            if letters > t.ndim:
                raise op_error(RuntimeError, "einsum", f"the number of subscripts in the equation ({letters}) is "
                               f"more than the number of dimensions ({t.ndim}) for operand {i}")
            ellipsis_dims = max(ellipsis_dims, t.ndim - letters)
        elif letters != t.ndim:
            raise op_error(RuntimeError, "einsum", f"the number of subscripts in the equation ({letters}) does not "
                           f"match the number of dimensions ({t.ndim}) for operand {i} and no ellipsis was given")
        parsed.append(labels)
    terms = [_expand_ellipsis(labels, t.ndim - (len(labels) - 1), ellipsis_dims)
             for labels, t in zip(parsed, operands)]
    letters_seen = [x for labels in terms for x in labels if isinstance(x, str)]
    if not arrow:  # implicit output: the ellipsis dims, then subscripts seen once, in alphabetical order
        return terms, list(range(ellipsis_dims)) + sorted(x for x in set(letters_seen) if letters_seen.count(x) == 1)
    output = _parse_term(rhs, "output", len(lhs) + 2)
    for x in output:
        if x != "..." and x not in letters_seen:
            raise op_error(RuntimeError, "einsum", f"output subscript {x} does not appear in the equation for any "
                           f"input operand")
        if output.count(x) > 1:
            raise op_error(RuntimeError, "einsum", f"output subscript {x} appears more than once in the output")
    return terms, _expand_ellipsis(output, ellipsis_dims, ellipsis_dims)


def _expand_ellipsis(labels: list, covered: int, ellipsis_dims: int) -> list:
    """Replace "..." by the ints of the ``covered`` last ellipsis dims (right-aligned, so they broadcast)."""
    if "..." not in labels:
        return list(labels)
    i = labels.index("...")
    return labels[:i] + list(range(ellipsis_dims - covered, ellipsis_dims)) + labels[i + 1:]


def _contract(operands: list, terms: list, output: list):
    """Evaluate a parsed einsum: ``terms[i]`` labels the dims of ``operands[i]``; ``output`` the result's."""
    sizes: dict = {}
    for i, (t, labels) in enumerate(zip(operands, terms)):
        t, labels = _take_diagonals(i, t, labels)
        for label, size in zip(labels, t._shape):
            seen = sizes.get(label, 1)
            if size != seen and size != 1 and seen != 1:
                raise op_error(RuntimeError, "einsum", f"subscript {_label_text(label)} has size {size} for "
                               f"operand {i} which does not broadcast with previously seen size {seen}")
            sizes[label] = max(seen, size)
        operands[i], terms[i] = t, labels
    keep = set(output)
    for i in range(len(operands)):
        elsewhere = keep.union(*(terms[j] for j in range(len(terms)) if j != i))
        operands[i], terms[i] = _sum_labels(operands[i], terms[i], [x for x in terms[i] if x not in elsewhere])
    result, labels = operands[0], terms[0]
    for i in range(1, len(operands)):
        later = keep.union(*terms[i + 1:])
        result, labels = _contract_pair(result, labels, operands[i], terms[i], later, sizes)
    result = expand(result, tuple(sizes[x] for x in labels))
    return permute(result, [labels.index(x) for x in output])


def _label_text(label) -> str:
    return label if isinstance(label, str) else "..."


def _take_diagonals(index: int, t: Tensor, labels: list):
    """Replace each repeated subscript by the diagonal of its dims (a view, moved to the end)."""
    labels = list(labels)
    while len(set(labels)) != len(labels):
        label = next(x for x in labels if labels.count(x) > 1)
        d1 = labels.index(label)
        d2 = labels.index(label, d1 + 1)
        if t._shape[d1] != t._shape[d2]:
            raise op_error(RuntimeError, "einsum", f"subscript {label} is repeated for operand {index} but the "
                           f"sizes don't match, {t._shape[d2]} != {t._shape[d1]}")
        t = diagonal(t, 0, d1, d2)
        labels = [x for i, x in enumerate(labels) if i not in (d1, d2)] + [label]
    return t, labels


def _sum_labels(t: Tensor, labels: list, summed: list):
    if not summed:
        return t, labels
    dims = [labels.index(x) for x in summed]
    return sum(t, dims), [x for x in labels if x not in summed]


def _contract_pair(a: Tensor, la: list, b: Tensor, lb: list, keep: set, sizes: dict):
    """One einsum contraction as a batched matmul: (batch, a-only, summed) @ (batch, summed, b-only)."""
    if a.dtype is not b.dtype:  # an integral operand summed alone became int64
        common = dt.promote_types(a.dtype, b.dtype)
        a, b = a.to(common), b.to(common)
    shared = [x for x in la if x in lb]
    batch = [x for x in shared if x in keep]
    summed = [x for x in shared if x not in keep]
    a_only = [x for x in la if x not in lb]
    b_only = [x for x in lb if x not in la]

    def shape_of(labels):
        return tuple(sizes[x] for x in labels)

    left = expand(permute(a, [la.index(x) for x in batch + a_only + summed]), shape_of(batch + a_only + summed))
    right = expand(permute(b, [lb.index(x) for x in batch + summed + b_only]), shape_of(batch + summed + b_only))
    n_batch, n_a, n_k, n_b = (numel(shape_of(x)) for x in (batch, a_only, summed, b_only))
    product = batched_matmul(reshape(left, (n_batch, n_a, n_k)), reshape(right, (n_batch, n_k, n_b)))
    labels = batch + a_only + b_only
    return reshape(product, shape_of(labels)), labels


# linear is an op (one traced node, a fusable kernel) but not a ``torch`` function: ``F.linear`` in
# core/nn/functional/linear.py checks its arguments and calls it. Its derivative is in derivatives.py.
def _linear_parts(input, weight, bias):
    out = matmul(input, weight.t())
    return out if bias is None else out + bias


linear = define("linear", decomposition=_linear_parts,
                doc="linear(input, weight, bias): input @ weight.T + bias over the last dim of input; "
                    "bias may be None. A composite that backends may fuse")


#: the activations an epilogue may apply whose gradient is computed from the output, which is all the fused op saves
#: (``linear_pointwise``, ``convolution_pointwise``; None: none)
POINTWISE_ACTIVATIONS = ("relu", "sigmoid", "tanh")
#: the epilogue activations whose gradient needs their input, the product: exact GELU and its tanh approximation.
#: A fused op applying one runs fused where autograd does not record it (inference); where it records, the op
#: runs as its parts (the product, then ``gelu``), which autograd records one by one, as if never fused
INPUT_ACTIVATIONS = ("gelu", "gelu_tanh")
EPILOGUE_ACTIVATIONS = POINTWISE_ACTIVATIONS + INPUT_ACTIVATIONS


def _activation_function(name: str):
    from . import elementwise

    if name == "gelu":
        return lambda x: elementwise.gelu(x, "none")
    if name == "gelu_tanh":
        return lambda x: elementwise.gelu(x, "tanh")
    return getattr(elementwise, name)


def epilogue_function(op: str, activation, residual):
    """The function ``product -> activation(product + residual)`` of a fused op's epilogue (``activation`` None or
    a name in :data:`EPILOGUE_ACTIVATIONS`, ``residual`` None or a tensor); ValueError naming ``op`` else."""
    if activation is not None and activation not in EPILOGUE_ACTIVATIONS:
        raise ValueError(f"{op}(): activation must be None or one of {', '.join(EPILOGUE_ACTIVATIONS)}, "
                         f"got {activation!r}")
    if residual is not None and not isinstance(residual, Tensor):
        raise TypeError(f"{op}(): residual must be None or a Tensor, not {type(residual).__name__}")
    act = _activation_function(activation) if activation is not None else None

    def apply(product):
        if residual is not None:
            product = add(product, residual)
        return product if act is None else act(product)

    return apply


def records_parts_at(at: int):
    """A fused op's ``records_parts`` (see ``core.autograd.kernel``): whether the activation, argument ``at``, is
    one whose gradient needs the product, so that autograd records the op's parts instead of the op."""
    return lambda *args, **kwargs: len(args) > at and args[at] in INPUT_ACTIVATIONS


def _linear_pointwise_parts(input, weight, bias, activation, residual=None, /):
    return epilogue_function("linear_pointwise", activation, residual)(linear(input, weight, bias))


linear_pointwise = define("linear_pointwise", decomposition=_linear_pointwise_parts,
                          doc="linear_pointwise(input, weight, bias, activation, residual=None, /) (positional "
                              "arguments only: autograd follows positional tensors): "
                              "activation(linear(input, weight, bias) + residual), activation None or one of relu, "
                              "sigmoid, tanh, gelu, gelu_tanh: a GEMM with its epilogue, what the JIT's epilogue "
                              "pass makes of linear followed by an addition and the activation (gelu's only for "
                              "graphs autograd does not record: recorded, the op runs as its parts). A composite "
                              "that backends may fuse (cpu_c: one oneDNN matmul with the bias, the residual and the "
                              "activation fused)")
linear_pointwise.records_parts = records_parts_at(3)


_END_RANKS = {True: (1, 2), False: (2,)}  # multi_dot's ranks: an end may be a vector


def multi_dot(tensors, *, out=None):
    """The product of matrices, the first and last may be vectors, multiplied in the cheapest order
    (``torch.linalg.multi_dot``)."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        end = i in (0, n - 1)
        if t.ndim not in _END_RANKS[end]:
            which = "the first tensor" if i == 0 else "the last tensor" if i == n - 1 else f"tensor {i}"
            raise RuntimeError(f"multi_dot(): {which} must be {'1D or 2D' if end else '2D'} but got {t.ndim}D")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{tensors[0].dtype.name} and tensor {i} is {t.dtype.name}")
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = [tensors[0].unsqueeze(0) if first_vector else tensors[0]] + tensors[1:-1] + \
        [tensors[-1].unsqueeze(1) if last_vector else tensors[-1]]
    for i in range(n - 1):
        if mats[i]._shape[1] != mats[i + 1]._shape[0]:
            a, b = mats[i]._shape, mats[i + 1]._shape
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes ({a[0]}, {a[1]}) and "
                               f"({b[0]}, {b[1]}) cannot be multiplied")
    result = _chain(mats, _order([m._shape[0] for m in mats] + [mats[-1]._shape[1]]), 0, n - 1)
    if first_vector:
        result = result.squeeze(0)
    if last_vector:
        result = result.squeeze(-1)
    return finish_out("linalg.multi_dot", result, out)


def _order(dims: list) -> list:
    """The split points of the cheapest parenthesisation (the matrix-chain dynamic programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats: list, split: list, i: int, j: int):
    if i == j:
        return mats[i]
    k = split[i][j]
    return mm(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))

def chain_matmul(*matrices, out=None):
    """The product of 2-D matrices in the cheapest order; deprecated in PyTorch for ``linalg.multi_dot``
    (``torch.chain_matmul``)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        _check_tensors("chain_matmul", matrices=t)
        if t.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return finish_out("chain_matmul", matrices[0].clone(), out)
    return multi_dot(matrices, out=out)


METHODS = {"matmul": matmul, "mm": mm, "bmm": bmm, "mv": mv, "dot": dot, "vdot": vdot, "inner": inner,
           "outer": outer, "ger": ger, "addmm": addmm, "addmv": addmv, "addbmm": addbmm, "baddbmm": baddbmm,
           "addmm_": _inplace("addmm", addmm), "addmv_": _inplace("addmv", addmv), "addr": addr,
           "addr_": _inplace("addr", addr),
           "addbmm_": _inplace("addbmm", addbmm), "baddbmm_": _inplace("baddbmm", baddbmm), "kron": kron,
           "trace": trace, "cross": cross}
