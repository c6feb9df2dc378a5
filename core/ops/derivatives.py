"""Derivative formulas of the primitive and view ops, and of the composites with their own, written in Tensor ops.

Each formula is ``formula(ctx, *output_grads)`` and returns one gradient per
positional argument of the op (``None`` where there is none; a sequence for a
list argument such as ``cat``'s tensors). The autograd kernel then keeps the
entries of tensor arguments, sums broadcast gradients back to each input's
shape and casts them to its dtype and device — so formulas never do that themselves.
Because formulas are Tensor ops, they run on every device and, under
``create_graph=True``, are themselves recorded: higher-order gradients come
for free.
"""

from __future__ import annotations

import cmath
import importlib
import math

from .. import dtypes as dt
from ..dispatch import define, get_operator
from ..tensor import Tensor
from ._util import sum_to_shape
from .conv import convolution_backward
from .decompositions import _permutation, linalg_inv_ex, linalg_solve_ex, linalg_svd, unpack_lu
from .elementwise import gelu_backward
from .linalg import matmul
from .loss import cross_entropy_loss_backward
from .normalization import batch_norm_backward, layer_norm_backward
from .pooling import avg_pool_backward, max_pool_backward
from .ranges import eye
from .shape import cat
from .sparse import element_rows, sparse_mm
from .spectral import fft_c2c, fft_r2c

# the package namespace holds the star-imported functions `view`, ...: fetch the modules themselves
creation, E, R, V = (importlib.import_module(f"{__package__}.{name}")
                     for name in ("creation", "elementwise", "reduction", "view"))

__all__: list = []
METHODS: dict = {}


def derivative(*names: str):
    """Attach the decorated formula to ops ``names``."""

    def attach(formula):
        for name in names:
            get_operator(name).derivative = formula
        return formula

    return attach


def _x(ctx, i=0):
    return ctx.input(i)


def _is_tensor(a) -> bool:
    return isinstance(a, Tensor)


def _conj(v):
    """The complex conjugate of a tensor or a Python number (PyTorch's gradients of complex ops conjugate)."""
    if isinstance(v, Tensor):
        return E.conj(v) if v.dtype.is_complex else v
    return v.conjugate() if isinstance(v, complex) else v


# -- elementwise unary ----------------------------------------------------------------------------------

# Backward helpers of the commonest activations: composites (any backend runs them as their parts, and they
# stay differentiable for create_graph) that a backend may override with one fused kernel, as the NumPy one does.
tanh_backward = define("tanh_backward", decomposition=lambda g, y: g * (1 - y * y),
                       doc="g * (1 - y * y): the gradient of tanh from its output y")
sigmoid_backward = define("sigmoid_backward", decomposition=lambda g, y: g * y * (1 - y),
                          doc="g * y * (1 - y): the gradient of sigmoid from its output y")
relu_backward = define("relu_backward", decomposition=lambda g, x: E.where(E.gt(x, 0), g, 0.0),
                       doc="where(x > 0, g, 0): the gradient of relu from its input x (0 where x is NaN)")

_UNARY = {
    "exp": lambda ctx, g: g * ctx.output(),
    "exp2": lambda ctx, g: g * ctx.output() * math.log(2.0),
    "expm1": lambda ctx, g: g * (ctx.output() + 1),
    "log": lambda ctx, g: g / _x(ctx),
    "log2": lambda ctx, g: g / (_x(ctx) * math.log(2.0)),
    "log10": lambda ctx, g: g / (_x(ctx) * math.log(10.0)),
    "log1p": lambda ctx, g: g / (_x(ctx) + 1),
    "sqrt": lambda ctx, g: g / (2 * ctx.output()),
    "rsqrt": lambda ctx, g: -0.5 * g * ctx.output() ** 3,
    "sin": lambda ctx, g: g * E.cos(_x(ctx)),
    "cos": lambda ctx, g: -g * E.sin(_x(ctx)),
    "tan": lambda ctx, g: g * (1 + ctx.output() ** 2),
    "asin": lambda ctx, g: g / E.sqrt(1 - _x(ctx) ** 2),
    "acos": lambda ctx, g: -g / E.sqrt(1 - _x(ctx) ** 2),
    "atan": lambda ctx, g: g / (1 + _x(ctx) ** 2),
    "sinh": lambda ctx, g: g * E.cosh(_x(ctx)),
    "cosh": lambda ctx, g: g * E.sinh(_x(ctx)),
    "tanh": lambda ctx, g: tanh_backward(g, ctx.output()),
    "asinh": lambda ctx, g: g / E.sqrt(_x(ctx) ** 2 + 1),
    "acosh": lambda ctx, g: g / E.sqrt(_x(ctx) ** 2 - 1),
    "atanh": lambda ctx, g: g / (1 - _x(ctx) ** 2),
    "sigmoid": lambda ctx, g: sigmoid_backward(g, ctx.output()),
    "erf": lambda ctx, g: g * (2 / math.sqrt(math.pi)) * E.exp(-_x(ctx) ** 2),
    "erfc": lambda ctx, g: -g * (2 / math.sqrt(math.pi)) * E.exp(-_x(ctx) ** 2),
    "erfinv": lambda ctx, g: g * (math.sqrt(math.pi) / 2) * E.exp(ctx.output() ** 2),
    "reciprocal": lambda ctx, g: -g * ctx.output() ** 2,
    "lgamma": lambda ctx, g: g * E.digamma(_x(ctx)),
    "deg2rad": lambda ctx, g: g * (math.pi / 180),
    "rad2deg": lambda ctx, g: g * (180 / math.pi),
    "abs": lambda ctx, g: g * E.sgn(_x(ctx)),  # sgn: z / |z| for complex, sign for real
    "square": lambda ctx, g: 2 * g * _x(ctx),
    "neg": lambda ctx, g: -g,
    "positive": lambda ctx, g: g,
    "frac": lambda ctx, g: g,
    "conj": lambda ctx, g: _conj(g),
}


def _unary(formula):
    """A formula g * f'(x), written for real x, made right for complex x too: of the ops in _UNARY every complex
    one but abs and conj is holomorphic, whose gradient in PyTorch's convention is g * conj(f'(x)), that is
    conj(formula(conj(g)))."""
    def run(ctx, g):
        return (_conj(formula(ctx, _conj(g))) if g.is_complex() else formula(ctx, g),)

    return run


for _name, _formula in _UNARY.items():
    get_operator(_name).derivative = (lambda f: lambda ctx, g: (f(ctx, g),))(_formula) if _name in ("abs", "conj") \
        else _unary(_formula)

@derivative("sinc")
def _sinc(ctx, g):
    x = _x(ctx)
    px = x * math.pi
    slope = (E.cos(px) * px - E.sin(px)) / (px * x)
    return (g * E.where(E.eq(x, 0), 0.0, slope),)


@derivative("sgn")
def _sgn(ctx, g):
    x = _x(ctx)
    if not x.is_complex():
        return (E.mul(g, 0),)
    s, magnitude = ctx.output(), E.abs(x)  # PyTorch's sgn_backward: (g - s^2 conj(g)) / 2|x|, 0 at 0
    return (E.where(E.eq(magnitude, 0), 0.0, (g - s * s * _conj(g)) / (2 * magnitude)),)


@derivative("angle")
def _angle(ctx, g):
    x = _x(ctx)
    if not x.is_complex():
        return (E.mul(g, 0),)
    return (E.where(E.eq(x, 0), 0.0, g * x * 1j / E.abs(x) ** 2),)  # d atan2(im, re) = (-im, re) / |x|^2


derivative("relu")(lambda ctx, g: (relu_backward(g, _x(ctx)),))


@derivative("softmax")
def _softmax(ctx, g):
    y, dim = ctx.output(), ctx.args[1]
    return (y * (g - R.sum(g * y, dim, keepdim=True)),)


@derivative("log_softmax")
def _log_softmax(ctx, g):
    y, dim = ctx.output(), ctx.args[1]
    return (g - E.exp(y) * R.sum(g, dim, keepdim=True),)


# piecewise-constant functions: zero gradient almost everywhere, as in PyTorch
derivative("sign", "floor", "ceil", "round", "trunc")(lambda ctx, g: (E.mul(g, 0),))


# -- elementwise binary ------------------------------------------------------------------------------

@derivative("add")
def _add(ctx, g):
    alpha = ctx.arg(2, 1)
    return g, (g if alpha == 1 else g * alpha)


@derivative("sub")
def _sub(ctx, g):
    alpha = ctx.arg(2, 1)
    return g, (-g if alpha == 1 else g * -alpha)


@derivative("mul")
def _mul(ctx, g):
    args = ctx.args
    a, b = args[0], args[1]
    a_t, b_t = isinstance(a, Tensor), isinstance(b, Tensor)
    return g * _conj(ctx.input(1) if b_t else b) if a_t else None, \
        g * _conj(ctx.input(0) if a_t else a) if b_t else None


@derivative("div")
def _div(ctx, g):
    a, b = ctx.args[0], ctx.args[1]
    b_value = _conj(_x(ctx, 1) if _is_tensor(b) else b)
    grad_a = g / b_value if _is_tensor(a) else None
    grad_b = -g * _conj(ctx.output()) / b_value if _is_tensor(b) else None
    return grad_a, grad_b


@derivative("pow")
def _pow(ctx, g):
    a, b = ctx.args[0], ctx.args[1]
    base = _x(ctx, 0) if _is_tensor(a) else a
    exponent = _x(ctx, 1) if _is_tensor(b) else b
    grad_a = None
    if _is_tensor(a):
        grad_a = E.where(E.eq(exponent, 0), 0.0, g * _conj(exponent * base ** (exponent - 1))) if _is_tensor(b) \
            else (g * 0 if exponent == 0 else g * _conj(exponent * base ** (exponent - 1)))
    grad_b = None
    if _is_tensor(b):
        log_base = E.log(base) if _is_tensor(base) else cmath.log(base) if isinstance(base, complex) \
            else math.log(base) if base > 0 else float("nan")
        grad_b = g * _conj(ctx.output() * log_base)
        if _is_tensor(base):  # 0 ** b with b >= 0 has a zero gradient in b, as PyTorch defines it
            grad_b = E.where(E.logical_and(E.eq(base, 0), E.ge(exponent, 0)), 0.0, grad_b)
    return grad_a, grad_b


def _minmax(pick_first):
    def formula(ctx, g):
        a, b = ctx.args[0], ctx.args[1]
        av = _x(ctx, 0) if _is_tensor(a) else a
        bv = _x(ctx, 1) if _is_tensor(b) else b
        first = pick_first(av, bv).to(g.dtype) + E.eq(av, bv).to(g.dtype) * 0.5  # ties share the gradient
        return (g * first if _is_tensor(a) else None), (g * (1 - first) if _is_tensor(b) else None)

    return formula


derivative("maximum", "fmax")(_minmax(E.gt))
derivative("minimum", "fmin")(_minmax(E.lt))


@derivative("atan2")
def _atan2(ctx, g):
    a, b = _x(ctx, 0), _x(ctx, 1)
    denominator = a * a + b * b
    return g * b / denominator, -g * a / denominator


@derivative("hypot")
def _hypot(ctx, g):
    return g * _x(ctx, 0) / ctx.output(), g * _x(ctx, 1) / ctx.output()


@derivative("fmod")
def _fmod(ctx, g):
    return g, (-g * E.trunc(E.div(_x(ctx, 0), _x(ctx, 1))) if _is_tensor(ctx.args[1]) else None)


@derivative("remainder")
def _remainder(ctx, g):
    return g, (-g * E.floor(E.div(ctx.args[0], _x(ctx, 1))) if _is_tensor(ctx.args[1]) else None)


@derivative("copysign")
def _copysign(ctx, g):
    a = _x(ctx, 0)
    return E.where(E.eq(a, 0), 0.0, g * ctx.output() / a), (E.mul(g, 0) if _is_tensor(ctx.args[1]) else None)


@derivative("logaddexp")
def _logaddexp(ctx, g):
    return g * E.exp(ctx.args[0] - ctx.output()), g * E.exp(ctx.args[1] - ctx.output())


@derivative("logaddexp2")
def _logaddexp2(ctx, g):
    return g * E.exp2(ctx.args[0] - ctx.output()), g * E.exp2(ctx.args[1] - ctx.output())


@derivative("xlogy")
def _xlogy(ctx, g):
    a, b = ctx.args[0], ctx.args[1]
    grad_a = E.where(E.eq(a, 0), 0.0, g * E.log(b)) if _is_tensor(a) else None
    return grad_a, (g * a / b if _is_tensor(b) else None)


derivative("floor_divide", "div_trunc")(lambda ctx, g: (E.mul(g, 0), E.mul(g, 0)))


@derivative("where")
def _where(ctx, g):
    condition = ctx.args[0]
    return None, E.where(condition, g, 0.0), E.where(condition, 0.0, g)


@derivative("clamp")
def _clamp(ctx, g):
    x = _x(ctx)
    low, high = ctx.arg(1), ctx.arg(2)
    inside = creation.ones_like(x, dtype=dt.bool)
    if low is not None:
        inside = E.logical_and(inside, E.ge(x, low))
    if high is not None:
        inside = E.logical_and(inside, E.le(x, high))
    grad_low = E.where(E.lt(x, low), g, 0.0) if _is_tensor(low) else None
    grad_high = E.where(E.gt(x, high), g, 0.0) if _is_tensor(high) else None
    return E.where(inside, g, 0.0), grad_low, grad_high


# -- writes --------------------------------------------------------------------------------------------

derivative("copy_")(lambda ctx, g: (None, g))
derivative("fill_")(lambda ctx, g: (None,))


@derivative("_to_copy")
def _to_copy(ctx, g):
    # the gradient goes back to the input's device and dtype (PyTorch's ToCopyBackward0); only the input's
    # device and dtype are read, so changing the input in place after the move does not invalidate it
    x = ctx.args[0]
    if g.is_complex() and not x.dtype.is_complex:  # a real input cast to complex: the real part, without a warning
        g = V.real(g)
    return (creation.to_copy(g, device=x._storage.device, dtype=x.dtype),)


# -- reductions and scans ------------------------------------------------------------------------------

def _unreduce(g, ctx):
    """``g`` with the reduced dims put back (size 1), ready to broadcast against the input."""
    args = ctx.args
    x, dims, keepdim = args[0], args[1], ctx.arg(2, False)
    if not g._shape:  # a full reduction: a 0-d gradient expands to any shape directly
        return g.expand(x._shape) if x._shape else g
    if not keepdim:
        for d in sorted(dims):
            g = V.unsqueeze(g, d)
    return g.expand(x._shape) if x._shape else g


@derivative("sum")
def _sum(ctx, g):
    return (_unreduce(g, ctx),)


@derivative("prod")
def _prod(ctx, g):
    return (_unreduce(g, ctx) * _conj(_unreduce(ctx.output(), ctx) / _x(ctx)),)


def _extremum(ctx, g):
    x = _x(ctx)
    hit = E.eq(x, _unreduce(ctx.output(), ctx)).to(g.dtype)
    count = R.sum(hit, ctx.args[1], keepdim=True) if ctx.args[1] else hit
    return (_unreduce(g, ctx) * hit / count,)


derivative("amax", "amin")(_extremum)


@derivative("cumsum")
def _cumsum(ctx, g):
    dim = ctx.args[1]
    return (get_operator("flip")(R.cumsum(get_operator("flip")(g, (dim,)), dim), (dim,)),)


@derivative("cumprod")
def _cumprod(ctx, g):
    dim = ctx.args[1]
    flip = get_operator("flip")
    return (flip(R.cumsum(flip(g * _conj(ctx.output()), (dim,)), dim), (dim,)) / _conj(_x(ctx)),)


def _scatter_into_zeros(x, dim, index, g):
    zeros = creation.zeros(x._shape, dtype=g.dtype, device=g.device)
    return get_operator("scatter_")(zeros, dim, index, g, "sum", True)


derivative("cummax", "cummin")(lambda ctx, g, _gi: (_scatter_into_zeros(ctx.args[0], ctx.args[1],
                                                                          ctx.output(1), g),))
derivative("sort")(lambda ctx, g, _gi: (_scatter_into_zeros(ctx.args[0], ctx.args[1], ctx.output(1), g),))


# -- products, shape and indexing ----------------------------------------------------------------------

@derivative("batched_matmul")
def _batched_matmul(ctx, g):
    matmul = get_operator("batched_matmul")  # with adjoints (conjugate transposes): PyTorch's complex convention
    return matmul(g, _conj(V.transpose(_x(ctx, 1), -1, -2))), matmul(_conj(V.transpose(_x(ctx, 0), -1, -2)), g)


@derivative("cat")
def _cat(ctx, g):
    tensors, dim = ctx.args[0], ctx.args[1]
    grads, start = [], 0
    for t in tensors:
        if t._shape == (0,) and g.dim() != 1:  # legacy empty inputs take no part
            grads.append(None)
            continue
        length = t._shape[dim]
        grads.append(V.narrow(g, dim, start, length))
        start += length
    return grads, None


derivative("flip")(lambda ctx, g: (get_operator("flip")(g, ctx.args[1]),))


@derivative("index")
def _index(ctx, g):
    x, indices = ctx.args[0], ctx.args[1]
    zeros = creation.zeros(x._shape, dtype=g.dtype, device=g.device)
    return get_operator("index_put_")(zeros, indices, g, True), None


@derivative("index_put_")
def _index_put(ctx, g):
    indices, values, accumulate = ctx.args[1], ctx.args[2], ctx.arg(3, False)
    grad_values = get_operator("index")(g, indices) if _is_tensor(values) else None
    if accumulate:
        return g, None, grad_values
    kept = get_operator("index_put_")(g.clone(), indices, creation.zeros((), dtype=g.dtype, device=g.device), False)
    return kept, None, grad_values


@derivative("gather")
def _gather(ctx, g):
    return _scatter_into_zeros(ctx.args[0], ctx.args[1], ctx.args[2], g), None, None


@derivative("scatter_")
def _scatter(ctx, g):
    dim, index, reduce = ctx.args[1], ctx.args[2], ctx.arg(4)
    gather = get_operator("gather")
    if reduce is None:
        zeros = creation.zeros(index._shape, dtype=g.dtype, device=g.device)
        return get_operator("scatter_")(g.clone(), dim, index, zeros, None, True), None, None, gather(g, dim, index)
    if reduce == "sum":
        if ctx.arg(5) is False:  # include_self=False: where an index lands, self's value was replaced, not summed
            zeros = creation.zeros(index._shape, dtype=g.dtype, device=g.device)
            return get_operator("scatter_")(g.clone(), dim, index, zeros, None, True), None, None, gather(g, dim, index)
        return g, None, None, gather(g, dim, index)
    raise RuntimeError(f"the derivative of scatter with reduce='{reduce}' is not implemented")


# -- decompositions (PyTorch's formulas, FunctionsManual.cpp; for real inputs, and complex where noted) ---------

def _identity(n: int, like):
    return eye(n, dtype=like.dtype, device=like.device)


def _solve(A, B):
    """A^{-1} B through the primitive (differentiable again under create_graph)."""
    return linalg_solve_ex(A, B)[0]


def _right_solve(B, A):
    """B A^{-1}, as (A^{-H} B^H)^H."""
    return _solve(A.mH, B.mH).mH


@derivative("linalg_inv_ex")
def _linalg_inv_ex(ctx, g, _g_info):
    inverse_h = ctx.output(0).mH
    return (-matmul(matmul(inverse_h, g), inverse_h),)


@derivative("linalg_det")
def _linalg_det(ctx, g):
    # d det = det tr(A^{-1} dA): gA = conj(g det) A^{-H} (complex too); singular A gives non-finite gradients
    scale = g * _conj(ctx.output())
    return (scale.unsqueeze(-1).unsqueeze(-1) * linalg_inv_ex(ctx.input(0))[0].mH,)


@derivative("linalg_slogdet")
def _linalg_slogdet(ctx, g_sign, g_logabsdet):
    """PyTorch's slogdet_backward: gA = (g_logabsdet - i Im(conj(g_sign) sign)) A^{-H}; a real sign is piecewise
    constant, so for real A only logabsdet has a gradient, g A^{-T}."""
    A = ctx.input(0)
    g = g_logabsdet.to(A.dtype)
    if A.is_complex():
        g = g - 1j * V.imag(_conj(g_sign) * ctx.output(0))
    return (g.unsqueeze(-1).unsqueeze(-1) * linalg_inv_ex(A)[0].mH,)


@derivative("linalg_solve_ex")
def _linalg_solve_ex(ctx, g, _g_info):
    grad_b = _solve(ctx.input(0).mH, g)
    return -matmul(grad_b, ctx.output(0).mH), grad_b


@derivative("linalg_cholesky_ex")
def _linalg_cholesky_ex(ctx, g, _g_info):
    L = ctx.output(0)
    if ctx.arg(1, False):  # upper: A = U^H U with U = L^H
        L, g = L.mH, g.mH
    phi = matmul(L.mH, g).tril()
    phi = 0.5 * (phi + phi.tril(-1).mH)
    return _right_solve(_solve(L.mH, phi), L), None


@derivative("linalg_eigh")
def _linalg_eigh(ctx, g_values, g_vectors):
    values, V = ctx.output(0), ctx.output(1)
    n = values._shape[-1]
    eye = _identity(n, values)
    VhgV = matmul(V.mH, g_vectors)
    VhgV = 0.5 * (VhgV - VhgV.mH)
    gaps = values.unsqueeze(-2) - values.unsqueeze(-1) + eye  # gaps_ij = w_j - w_i, 1 on the diagonal
    inner = VhgV / gaps.to(V.dtype) * (1 - eye).to(V.dtype) + E.mul(eye.to(V.dtype), g_values.unsqueeze(-1))
    return matmul(matmul(V, inner), V.mH), None


@derivative("linalg_svdvals")
def _linalg_svdvals(ctx, g):
    U, _, Vh = linalg_svd(ctx.input(0), False)
    return (matmul(U * g.unsqueeze(-2).to(U.dtype), Vh),)


@derivative("linalg_svd")
def _linalg_svd(ctx, gU, gS, gVh):
    """Distinct non-zero singular values (PyTorch's svd_backward); for complex inputs only gauge-invariant losses
    (the singular vectors' phases are arbitrary) have a gradient."""
    A = ctx.input(0)
    m, n = A._shape[-2:]
    k = min(m, n)
    U, S, Vh = ctx.output(0), ctx.output(1), ctx.output(2)
    if ctx.arg(1, True) and m != n:
        if bool((gU.narrow(-1, k, m - k) != 0).any()) or bool((gVh.narrow(-2, k, n - k) != 0).any()):
            raise RuntimeError("linalg.svd: the derivative through the extra singular vectors of "
                               "full_matrices=True is not defined; use full_matrices=False")
        U, gU, Vh, gVh = U.narrow(-1, 0, k), gU.narrow(-1, 0, k), Vh.narrow(-2, 0, k), gVh.narrow(-2, 0, k)
    V, gV = Vh.mH, gVh.mH
    eye = _identity(k, S)
    S2 = S * S
    gaps = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye  # gaps_jk = S_k^2 - S_j^2, 1 on the diagonal
    UhgU = matmul(U.mH, gU)
    VhgV = matmul(V.mH, gV)
    UhgU, VhgV = UhgU - UhgU.mH, VhgV - VhgV.mH
    inner = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / gaps * (1 - eye) + E.mul(eye, gS.unsqueeze(-1))
    if A.is_complex():  # the imaginary diagonal of U^H gU (skewed: 2i Im) enters through S^{-1} / 2
        inner = inner + E.mul(eye, (UhgU.diagonal(0, -2, -1) / (2 * S)).unsqueeze(-1))
    if m > k:  # gA = [U inner + (I_m - U U^H) gU S^{-1}] V^H
        gUSinv = gU / S.unsqueeze(-2)
        return matmul(matmul(U, inner) + gUSinv - matmul(U, matmul(U.mH, gUSinv)), Vh), None
    if n > k:  # gA = U [inner V^H + S^{-1} gV^H (I_n - V V^H)]
        gVSinv = gV / S.unsqueeze(-2)
        return matmul(U, matmul(inner, Vh) + gVSinv.mH - matmul(matmul(gVSinv.mH, V), Vh)), None
    return matmul(matmul(U, inner), Vh), None


@derivative("linalg_pinv")
def _linalg_pinv(ctx, g):
    """PyTorch's pinv_backward: from A and P = pinv(A) alone, exact where A's rank is locally constant (a
    rank-deficient A included, whose zero singular values the SVD's derivative would divide by)."""
    A, P = ctx.input(0), ctx.output(0)
    Ph, gh = P.mH, g.mH
    m, n = A._shape[-2:]
    if m <= n:
        K = matmul(gh, P)
        KPh = matmul(K, Ph)
        grad = -matmul(P, K).mH + KPh - matmul(matmul(A, P), KPh) + matmul(matmul(Ph, P), gh - matmul(K, A))
    else:
        K = matmul(P, gh)
        PhK = matmul(Ph, K)
        grad = -matmul(K, P).mH + matmul(matmul(gh - matmul(A, K), P), Ph) + PhK - matmul(matmul(PhK, P), A)
    return grad, None, None, None


@derivative("linalg_eig")
def _linalg_eig(ctx, g_values, g_vectors):
    """PyTorch's linalg_eig_backward, for distinct eigenvalues: gA = X^{-H} (diag(gL) + offdiag(W / E*)) X^H with
    X the eigenvectors, W = X^H gX - X^H X diag(Re diag(X^H gX)) and E*_ij = conj(L_j) - conj(L_i); real for a real
    A (the engine keeps the real part). The eigenvectors' phases are arbitrary, so a loss depending on them raises."""
    values, X = ctx.output(0), ctx.output(1)
    eye = _identity(values._shape[-1], X)
    XhgX = matmul(X.mH, g_vectors)
    diagonal = XhgX.diagonal(0, -2, -1)
    if X.device.type != "meta" and bool((E.abs(V.imag(diagonal)) > 1e-2).any()):  # torch: allclose(im, 0, 1e-2, 1e-2)
        raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                           "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it "
                           "is ill-defined.")
    XhgX = XhgX - matmul(X.mH, X * V.real(diagonal).unsqueeze(-2).to(X.dtype))
    conj_values = _conj(values)
    gaps = conj_values.unsqueeze(-2) - conj_values.unsqueeze(-1) + eye  # conj(L_j) - conj(L_i), 1 on the diagonal
    inner = XhgX / gaps * (1 - eye) + E.mul(eye, g_values.unsqueeze(-1))
    return (_solve(X.mH, matmul(inner, X.mH)),)


@derivative("linalg_lu_factor_ex")
def _linalg_lu_factor_ex(ctx, g_lu, _g_pivots, _g_info):
    """PyTorch's lu_factor_ex_backward / linalg_lu_backward for A = P L U (..., m, n), k = min(m, n); gL = g_lu's
    first k columns, gU its first k rows (packed as LU is).
    square: gA = P L^{-H} [tril(L^H gL, -1) + triu(gU U^H)] U^{-H};
    wide (m < n), U = [U1 U2]: gA = P L^{-H} [gU1 + tril(L^H gL - gU U^H, -1) U1^{-H}, gU2];
    tall (m > n), L = [L1; L2]: gA = P [gL1 + L1^{-H} triu(gU U^H - L^H gL), gL2] U^{-H} (lower parts strict)."""
    LU = ctx.output(0)
    m, n = LU._shape[-2:]
    k = min(m, n)
    L, U = unpack_lu(LU)
    gL, gU = g_lu.narrow(-1, 0, k).tril(-1), g_lu.narrow(-2, 0, k).triu()
    if m == n:
        inner = matmul(L.mH, gL).tril(-1) + matmul(gU, U.mH).triu()
        grad = _right_solve(_solve(L.mH, inner), U.mH)
    elif m < n:
        U1 = U.narrow(-1, 0, k)
        inner = _right_solve((matmul(L.mH, gL) - matmul(gU, U.mH)).tril(-1), U1.mH)
        grad = _solve(L.mH, cat([inner + gU.narrow(-1, 0, k), gU.narrow(-1, k, n - k)], -1))
    else:
        L1 = L.narrow(-2, 0, k)
        inner = _solve(L1.mH, (matmul(gU, U.mH) - matmul(L.mH, gL)).triu())
        grad = _right_solve(cat([inner + gL.narrow(-2, 0, k), gL.narrow(-2, k, m - k)], -2), U.mH)
    return matmul(_permutation(ctx.output(1), m, LU), grad), None


@derivative("linalg_qr")
def _linalg_qr(ctx, gQ, gR):
    """Reduced (or square complete) QR of A (..., m, n) with m >= n: gA = [gQ + Q copyltu(M)] R^{-H},
    M = R gR^H - gQ^H Q."""
    mode = ctx.arg(1, "reduced")
    m, n = ctx.input(0)._shape[-2:]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if m < n or (mode == "complete" and m > n):
        raise RuntimeError("The derivative of linalg.qr is not implemented when the input has more columns than "
                           "rows, or when mode='complete' and nrows > ncols.")
    Q, R = ctx.output(0), ctx.output(1)
    M = matmul(R, gR.mH) - matmul(gQ.mH, Q)
    lower = M.tril(-1)
    copyltu = lower + lower.mH + E.mul(_identity(n, M), M)
    return _right_solve(gQ + matmul(Q, copyltu), R.mH), None


# -- views ---------------------------------------------------------------------------------------------

derivative("view", "view.dtype")(lambda ctx, g: (g.reshape(ctx.args[0]._shape),))
derivative("alias")(lambda ctx, g: (g,))
# one view is the other's inverse: the gradient (d/dre, d/dim) pairs are the complex gradient (PyTorch's convention)
derivative("view_as_real")(lambda ctx, g: (V.view_as_complex(g.contiguous()),))
derivative("view_as_complex")(lambda ctx, g: (V.view_as_real(g.contiguous()),))
derivative("transpose")(lambda ctx, g: (V.transpose(g, ctx.args[1], ctx.args[2]),))
derivative("expand")(lambda ctx, g: (sum_to_shape(g, ctx.args[0]._shape),))
derivative("squeeze", "unsqueeze")(lambda ctx, g: (g.reshape(ctx.args[0]._shape),))


@derivative("permute")
def _permute(ctx, g):
    dims = [d % max(g.dim(), 1) for d in ctx.args[1]]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return (V.permute(g, inverse),)


def _region(ctx, g):
    """Views that pick a region (select, narrow, slice, diagonal): scatter the gradient into zeros."""
    x = ctx.args[0]
    grad = creation.zeros(x._shape, dtype=g.dtype, device=g.device)
    view_op = get_operator(ctx.node().op_name)
    view_op(grad, *ctx.args[1:]).copy_(g)
    return (grad,)


derivative("select", "narrow", "slice", "diagonal")(_region)


@derivative("unfold")
def _unfold(ctx, g):
    """Windows may overlap: add each window position's gradient into a strided slice of the input's gradient."""
    x, dimension, size, step = ctx.args[0], ctx.args[1], ctx.args[2], ctx.args[3]
    if not x._shape:
        return (g.reshape(()),)
    grad = creation.zeros(x._shape, dtype=g.dtype, device=g.device)
    dim = dimension % x.dim()
    count = g._shape[dim]
    for j in range(size):  # one strided add per offset inside the window (cheap: size is small)
        index = (slice(None),) * dim + (slice(j, j + step * (count - 1) + 1, step),)
        grad[index].add_(g.select(-1, j))
    return (grad,)


@derivative("as_strided")
def _as_strided(ctx, g):
    """Accumulate through storage positions, so overlapping views (several outputs per element) add up."""
    from .indexing import index_add
    from .ranges import arange

    x, size, stride = ctx.args[0], tuple(ctx.args[1]), tuple(ctx.args[2])
    offset = ctx.arg(3)
    offset = x._offset if offset is None else offset
    positions = creation.full((), offset, dtype=dt.int64, device=g.device)
    for d, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        positions = positions + (arange(n, device=g.device) * st).reshape(shape)
    extent = x._storage.nbytes // x.dtype.itemsize
    buffer = creation.zeros(extent, dtype=g.dtype, device=g.device)
    buffer = index_add(buffer, 0, positions.expand(size).reshape(-1), g.reshape(-1))
    return (V.as_strided(buffer, x._shape, x._stride, x._offset),)


# -- composites with their own derivative: one autograd node each, whose backward is one op --------------------
# (a fused kernel where the backend has one; the backward ops are composites, so double backward works too)

@derivative("linear")
def _linear(ctx, g):
    """The weight's gradient is computed as ``g.T @ input``, already in the weight's (contiguous) layout, so the
    engine can hand it to ``.grad`` without a copy."""
    input, weight, bias = ctx.input(0), ctx.input(1), ctx.args[2]
    grad_input = matmul(g, weight) if input.requires_grad else None
    rows = g.reshape(-1, g._shape[-1]) if weight.requires_grad or bias is not None else None
    grad_weight = matmul(rows.t(), input.reshape(-1, input._shape[-1])) if weight.requires_grad else None
    grad_bias = rows.sum(0) if bias is not None and bias.requires_grad else None
    return grad_input, grad_weight, grad_bias


_ACTIVATION_BACKWARD = {None: lambda g, y: g, "relu": lambda g, y: relu_backward(g, y),  # y > 0 where x > 0
                        "sigmoid": lambda g, y: sigmoid_backward(g, y), "tanh": lambda g, y: tanh_backward(g, y)}


def _epilogue_backward(ctx, g, at: int):
    """(the gradient of the product, of the residual) of a fused op whose activation is argument ``at`` and
    residual the next: the activation's gradient from the saved output, which the residual receives as is (GELU's
    needs the product: autograd records such calls as their parts, ``Operator.records_parts``)."""
    g = _ACTIVATION_BACKWARD[ctx.args[at]](g, ctx.output())
    residual = ctx.args[at + 1] if len(ctx.args) > at + 1 else None
    return g, (g if residual is not None and residual.requires_grad else None)


@derivative("linear_pointwise")
def _linear_pointwise(ctx, g):
    g, g_residual = _epilogue_backward(ctx, g, 3)
    return (*_linear(ctx, g), None, g_residual)


derivative("gelu")(lambda ctx, g: (gelu_backward(g, ctx.input(0), ctx.args[1]),))


@derivative("convolution")
def _convolution(ctx, g):
    input, weight, bias = ctx.input(0), ctx.input(1), ctx.args[2]
    mask = (input.requires_grad, weight.requires_grad, bias is not None and bias.requires_grad)
    return convolution_backward(g, input, weight, *ctx.args[3:7], mask)


@derivative("convolution_pointwise")
def _convolution_pointwise(ctx, g):
    g, g_residual = _epilogue_backward(ctx, g, 7)
    return (*_convolution(ctx, g), None, None, None, None, None, g_residual)


@derivative("max_pool")
def _max_pool(ctx, g):
    """The argmax is recomputed from the input rather than saved."""
    return (max_pool_backward(g, ctx.input(0), *ctx.args[1:6]),)


@derivative("avg_pool")
def _avg_pool(ctx, g):
    """The backward needs only the input's geometry."""
    return (avg_pool_backward(g, ctx.input(0), *ctx.args[1:7]),)


@derivative("batch_norm")
def _batch_norm(ctx, g):
    training = ctx.args[5]
    input, weight, bias = ctx.input(0), ctx.input(3), ctx.args[4]
    # training recomputes the statistics from the input: the running ones (updated by the forward) are not read
    running_mean, running_var = (None, None) if training else (ctx.input(1), ctx.input(2))
    mask = (input.requires_grad, weight is not None and weight.requires_grad,
            bias is not None and bias.requires_grad)
    grad_input, grad_weight, grad_bias = batch_norm_backward(g, input, running_mean, running_var, weight, training,
                                                             ctx.args[7], mask)
    return grad_input, None, None, grad_weight, grad_bias, None, None, None


@derivative("layer_norm")
def _layer_norm(ctx, g):
    input, weight, bias = ctx.input(0), ctx.input(2), ctx.args[3]
    mask = (input.requires_grad, weight is not None and weight.requires_grad,
            bias is not None and bias.requires_grad)
    grad_input, grad_weight, grad_bias = layer_norm_backward(g, input, ctx.args[1], weight, bias, ctx.args[4], mask)
    return grad_input, None, grad_weight, grad_bias, None


@derivative("cross_entropy_loss")
def _cross_entropy_loss(ctx, g):
    grad_input = cross_entropy_loss_backward(g, ctx.input(0), ctx.args[1], ctx.args[2], ctx.args[3], ctx.args[4])
    return grad_input, None, None, None, None


# -- not differentiable: fills whose result does not depend on the previous values ------------------------

for _name in ("uniform_", "normal_", "random_", "bernoulli_", "exponential_", "randperm_fill_", "multinomial",
              "arange_fill_", "linspace_fill_", "logspace_fill_"):
    get_operator(_name).differentiable = False


# -- special functions (core.special) ---------------------------------------------------------------------------
# PyTorch's formulas (tools/autograd/derivatives.yaml); the i1/i1e ones take the limit 0.5 at 0 explicitly.

def _special(name: str):
    return E.SPECIAL[name]


def _tiny_safe(x):
    """(|x| > eps, x with its tiny entries replaced by eps): the formulas dividing by x stay finite there."""
    eps = dt.finfo(x.dtype).eps
    not_tiny = E.gt(E.abs(x), eps)
    return not_tiny, E.where(not_tiny, x, eps)


derivative("digamma")(lambda ctx, g: (g * E.polygamma(1, _x(ctx)),))
derivative("i0")(lambda ctx, g: (g * _special("i1")(_x(ctx)),))
derivative("polygamma")(lambda ctx, g: (None, g * E.polygamma(ctx.args[0] + 1, _x(ctx, 1))))
derivative("special_erfcx")(lambda ctx, g: (g * (2 * _x(ctx) * ctx.output() - 2 / math.sqrt(math.pi)),))
derivative("special_i0e")(lambda ctx, g: (g * (_special("i1e")(_x(ctx)) - E.sgn(_x(ctx)) * ctx.output()),))
derivative("special_ndtri")(lambda ctx, g: (g * math.sqrt(2 * math.pi) * E.exp(ctx.output() ** 2 / 2),))
derivative("special_log_ndtr")(
    lambda ctx, g: (g / math.sqrt(2 * math.pi) * E.exp(-(ctx.output() + _x(ctx) ** 2 / 2)),))
derivative("special_entr")(lambda ctx, g: (-g * (1 + E.log(_x(ctx))),))


@derivative("special_i1")
def _i1(ctx, g):
    not_tiny, x = _tiny_safe(_x(ctx))
    return (g * E.where(not_tiny, E.i0(x) - ctx.output() / x, 0.5),)


@derivative("special_i1e")
def _i1e(ctx, g):
    not_tiny, x = _tiny_safe(_x(ctx))
    return (g * E.where(not_tiny, _special("i0e")(x) - ctx.output() * (E.sgn(x) + 1 / x), 0.5),)


@derivative("special_xlog1py")
def _xlog1py(ctx, g):
    a, b = _x(ctx, 0), _x(ctx, 1)  # (either may be a Python number)
    grad_a = None
    if _is_tensor(a):
        grad_a = _special("xlog1py")(g, b)
        at_pole = E.logical_and(E.eq(a, 0), E.le(b, -1)) if _is_tensor(b) else E.logical_and(E.eq(a, 0), b <= -1)
        grad_a = E.where(at_pole, 0.0, grad_a)
    return grad_a, (g * a / (b + 1) if _is_tensor(b) else None)


def _requires_grad(a) -> bool:
    return _is_tensor(a) and a.requires_grad


@derivative("special_zeta")
def _zeta(ctx, g):
    x, q = _x(ctx, 0), _x(ctx, 1)
    if _requires_grad(x):
        raise RuntimeError("the derivative for 'zeta' with respect to 'self' is not implemented")
    return None, (g * -x * _special("zeta")(x + 1.0, q) if _is_tensor(q) else None)


def _gammainc_formula(aten_name: str, sign: int):
    def formula(ctx, g):
        a, x = _x(ctx, 0), _x(ctx, 1)
        if _requires_grad(a):
            raise RuntimeError(f"the derivative for '{aten_name}: input' is not implemented")
        if not _is_tensor(x):
            return None, None
        density = E.exp((a - 1) * E.log(x) - x - (E.lgamma(a) if _is_tensor(a) else math.lgamma(a)))
        return None, g * density * sign

    return formula


derivative("special_gammainc")(_gammainc_formula("igamma", 1))
derivative("special_gammaincc")(_gammainc_formula("igammac", -1))


# -- spectral (PyTorch's derivatives.yaml and FunctionsManual.cpp: fft_r2c_backward, fft_c2r_backward) ------------

@derivative("fft_c2c")
def _fft_c2c(ctx, g):
    return (fft_c2c(g, ctx.arg(1), ctx.arg(2), not ctx.arg(3)),)


@derivative("fft_r2c")
def _fft_r2c(ctx, g):
    x, dims, normalization, onesided = ctx.input(0), ctx.arg(1), ctx.arg(2), ctx.arg(3)
    if onesided:  # the dropped half's gradient is zero: pad g back to the full last dim, then c2c backward
        last = dims[-1]
        missing = x._shape[last] - g._shape[last]
        if missing > 0:
            shape = list(g._shape)
            shape[last] = missing
            g = cat([g, creation.zeros(tuple(shape), dtype=g.dtype, device=g.device)], last)
    return (V.real(fft_c2c(g, dims, normalization, False)),)


@derivative("fft_c2r")
def _fft_c2r(ctx, g):
    dims, normalization = ctx.arg(1), ctx.arg(2)
    last = dims[-1]
    grad = fft_r2c(g, dims, normalization, True)
    doubled = g._shape[last] - grad._shape[last]  # the values standing for two of the full signal's count twice
    if doubled > 0:
        size = grad._shape[last]
        weight = cat([creation.ones(1, dtype=g.dtype, device=g.device),
                      creation.full((doubled,), 2.0, dtype=g.dtype, device=g.device),
                      creation.ones(size - 1 - doubled, dtype=g.dtype, device=g.device)])
        grad = grad * weight.reshape((size,) + (1,) * (grad.ndim - 1 - last))
    return (grad,)


# -- sparse @ dense ---------------------------------------------------------------------------------------------

@derivative("sparse_mm")
def _sparse_mm(ctx, g):
    """d/d dense: the same product with the sparse operand transposed (conjugated); d/d values: the sampled product
    ``(g[i] * conj(dense[j])).sum(-1)`` at each stored entry (i, j) (swapped when the forward was transposed)."""
    rows, cols, values, dense = (ctx.input(i) for i in range(4))
    size, compressed, transpose = ctx.arg(4), ctx.arg(5), ctx.arg(6)
    grad_dense = sparse_mm(rows, cols, _conj(values), g, size, compressed, not transpose) \
        if dense.requires_grad else None
    grad_values = None
    if values.requires_grad:
        entry_rows = element_rows(rows, cols, compressed)
        out_index, in_index = (cols, entry_rows) if transpose else (entry_rows, cols)
        grad_values = R.sum(g.index_select(0, out_index) * _conj(dense.index_select(0, in_index)), -1)
    return None, None, grad_values, grad_dense


# Ops whose formula reads no input values, only shapes and scalars: PyTorch saves no tensor for them, so an inference
# tensor may take part in them while autograd records (every other recorded op refuses it: core/autograd/inference.py).
for _name in ("add", "sub", "neg", "positive", "sum", "cat", "_to_copy", "copy_", "fill_"):
    get_operator(_name).saves_inputs = False
