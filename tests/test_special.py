"""``core.special`` (``torch.special``): every name against SciPy/NumPy on every device, integer inputs, ``out=``,
derivatives (gradcheck in float64), PyTorch's errors and edge values. The elementwise ones are also in the
conformance table (core/testing/conformance.py), which runs them over every dtype and layout."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as S

import core
import core.special as sp
from core.autograd import gradcheck, gradgradcheck
from core.testing import assert_close

NAMES = {
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "digamma", "entr", "erf", "erfc", "erfcx",
    "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e", "log1p",
    "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "sinc", "softmax", "spherical_bessel_j0", "xlog1py",
    "xlogy", "zeta", "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
}
POLYNOMIALS = sorted(n for n in NAMES if "polynomial" in n)


def _spherical_j0(a):
    return np.where(a == 0, 1.0, np.sin(a) / np.where(a == 0, 1.0, a))


# name -> (reference, input domain) of the one-argument functions
UNARY = {
    "airy_ai": (lambda a: S.airy(a)[0], (-4, 3)), "bessel_j0": (S.j0, (-6, 6)), "bessel_j1": (S.j1, (-6, 6)),
    "bessel_y0": (S.y0, (0.5, 6)), "bessel_y1": (S.y1, (0.5, 6)), "digamma": (S.digamma, (0.5, 4)),
    "psi": (S.psi, (0.5, 4)), "entr": (S.entr, (-0.5, 3)), "erf": (S.erf, (-3, 3)), "erfc": (S.erfc, (-3, 3)),
    "erfcx": (S.erfcx, (-2, 3)), "erfinv": (S.erfinv, (-0.9, 0.9)), "exp2": (np.exp2, (-3, 3)),
    "expit": (S.expit, (-3, 3)), "expm1": (np.expm1, (-3, 3)), "gammaln": (S.gammaln, (0.5, 4)),
    "i0": (S.i0, (-3, 3)), "i0e": (S.i0e, (-3, 3)), "i1": (S.i1, (-3, 3)), "i1e": (S.i1e, (-3, 3)),
    "log1p": (np.log1p, (-0.5, 3)), "log_ndtr": (S.log_ndtr, (-5, 3)), "logit": (S.logit, (0.05, 0.95)),
    "modified_bessel_i0": (S.i0, (-3, 3)), "modified_bessel_i1": (S.i1, (-3, 3)),
    "modified_bessel_k0": (S.k0, (0.2, 4)), "modified_bessel_k1": (S.k1, (0.2, 4)), "ndtr": (S.ndtr, (-3, 3)),
    "ndtri": (S.ndtri, (0.05, 0.95)), "round": (np.round, (-3, 3)),
    "scaled_modified_bessel_k0": (S.k0e, (0.2, 4)), "scaled_modified_bessel_k1": (S.k1e, (0.2, 4)),
    "sinc": (np.sinc, (-3, 3)), "spherical_bessel_j0": (_spherical_j0, (-6, 6)),
}
BINARY = {"xlog1py": (S.xlog1py, (-0.5, 3)), "xlogy": (S.xlogy, (0.1, 3)), "zeta": (S.zeta, (1.5, 4)),
          "gammainc": (S.gammainc, (0.5, 4)), "gammaincc": (S.gammaincc, (0.5, 4))}


def _values_close(actual, expected):
    assert_close(actual, np.asarray(expected), check_dtype=False)


def _draw(shape, domain, seed=0):
    return np.random.default_rng(seed).uniform(*domain, size=shape)


def test_the_namespace_is_torch_special():
    assert set(sp.__all__) == NAMES
    for name in NAMES:
        assert callable(getattr(sp, name)), name
        assert getattr(sp, name).__doc__, name
    assert core.special is sp
    assert sp.expit is core.sigmoid and sp.gammaln is core.lgamma and sp.psi is sp.digamma is core.digamma
    assert sp.logsumexp is core.logsumexp and sp.xlogy is core.xlogy and sp.i0 is sp.modified_bessel_i0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_scipy(name, dtype, device):
    ref, domain = UNARY[name]
    values = _draw((3, 5), domain).astype(dtype)
    result = getattr(sp, name)(core.tensor(values, device=device))
    assert result.dtype.name == dtype and result.device.type == core.device(device).type
    with np.errstate(all="ignore"):
        assert_close(result, ref(values).astype(dtype), rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_matches_scipy(name, device):
    ref, domain = BINARY[name]
    a, b = _draw((3, 1), domain, 0), _draw((1, 4), domain, 1)
    result = getattr(sp, name)(core.tensor(a, device=device), core.tensor(b, device=device))
    assert result.shape == (3, 4) and result.dtype is core.float64
    assert_close(result, ref(a, b), rtol=1e-12, atol=1e-12)
    scalar = getattr(sp, name)(core.tensor(a, dtype=core.float32, device=device), 2.0)  # a Python number operand
    assert scalar.dtype is core.float32
    assert_close(scalar, ref(a, 2.0).astype(np.float32), rtol=1e-5, atol=1e-6)


def _polynomial_reference(name, x, n):
    from core.testing.conformance import _POLYNOMIALS

    return np.where(n < 0, 0.0, _POLYNOMIALS[name](np.maximum(n, 0), x))


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_scipy(name, device):
    x = np.concatenate([_draw((9,), (-1.5, 1.5)), [-1.0, 0.0, 1.0]])
    n = np.array([[-2], [0], [1], [2], [3], [7], [12]])
    result = getattr(sp, name)(core.tensor(x, device=device), core.tensor(n, device=device))
    assert result.shape == (7, 12) and result.dtype is core.float64
    assert_close(result, _polynomial_reference(name, x, n), rtol=1e-10, atol=1e-10)
    # a Python number or a float tensor as the degree: truncated to an integer, as PyTorch's int64 cast
    assert_close(getattr(sp, name)(core.tensor(x, device=device), 4), _polynomial_reference(name, x, np.array(4)),
                 rtol=1e-10, atol=1e-10)
    assert_close(getattr(sp, name)(core.tensor(x, device=device), core.tensor(3.9, dtype=core.float64)),
                 _polynomial_reference(name, x, np.array(3)), rtol=1e-10, atol=1e-10)
    ints = getattr(sp, name)(core.tensor([0, 1, 2], device=device), core.tensor([2, 2, 2], device=device))
    assert ints.dtype is core.float32
    assert_close(ints, _polynomial_reference(name, np.array([0.0, 1.0, 2.0]), np.array(2)).astype(np.float32),
                 rtol=1e-6, atol=1e-6)
    out = core.empty(0, dtype=core.float64, device=device)
    assert getattr(sp, name)(core.tensor(x, device=device), 5, out=out) is out
    assert_close(out, _polynomial_reference(name, x, np.array(5)), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_polygamma_matches_scipy(n, device):
    values = _draw((7,), (0.3, 5))
    x = core.tensor(values, device=device)
    assert_close(sp.polygamma(n, x), S.polygamma(n, values), rtol=1e-10, atol=1e-10)
    assert_close(core.polygamma(n, x), S.polygamma(n, values), rtol=1e-10, atol=1e-10)
    assert_close(x.polygamma(n), S.polygamma(n, values), rtol=1e-10, atol=1e-10)


def test_multigammaln_softmax_and_logsumexp(device):
    values = _draw((3, 4), (2.0, 5.0))
    x = core.tensor(values, device=device)
    for p in (1, 2, 4):
        assert_close(sp.multigammaln(x, p), S.multigammaln(values, p), rtol=1e-12, atol=1e-12)
        assert_close(x.mvlgamma(p), S.multigammaln(values, p), rtol=1e-12, atol=1e-12)
    assert_close(sp.softmax(x, 1), S.softmax(values, axis=1), rtol=1e-12, atol=1e-12)
    assert_close(sp.log_softmax(x, -1), S.log_softmax(values, axis=-1), rtol=1e-12, atol=1e-12)
    assert sp.softmax(x, 0, dtype=core.float32).dtype is core.float32
    assert_close(sp.logsumexp(x, 1), S.logsumexp(values, axis=1), rtol=1e-12, atol=1e-12)


def test_logit_with_eps(device):
    values = np.array([0.0, 0.1, 0.5, 0.95, 1.0])
    x = core.tensor(values, device=device)
    assert_close(sp.logit(x, eps=0.2), S.logit(np.clip(values, 0.2, 0.8)), rtol=1e-6, atol=1e-6)
    assert_close(x.logit(1e-6), S.logit(np.clip(values, 1e-6, 1 - 1e-6)), rtol=1e-6, atol=1e-6)
    assert_close(sp.logit(x), S.logit(values), rtol=1e-6, atol=1e-6)  # 0 and 1 give -inf and inf


def test_edge_values_follow_pytorch(device):
    edges = core.tensor([0.0, -1.0, math.inf, -math.inf, math.nan], device=device)
    _values_close(sp.entr(edges), np.array([0.0, -np.inf, -np.inf, -np.inf, np.nan]))
    _values_close(sp.spherical_bessel_j0(edges), np.array([1.0, math.sin(1.0), 0.0, 0.0, np.nan]))
    zeros = core.tensor([0.0, 0.0, 1.0], device=device)
    _values_close(sp.xlog1py(zeros, core.tensor([-1.0, 2.0, math.nan], device=device)), [0.0, 0.0, np.nan])
    _values_close(sp.ndtri(core.tensor([0.0, 1.0, 0.5], device=device)), np.array([-np.inf, np.inf, 0.0]))
    _values_close(sp.ndtr(core.tensor([-40.0, 40.0], device=device)), np.array([0.0, 1.0]))
    _values_close(sp.log_ndtr(core.tensor([-40.0], dtype=core.float64, device=device)), S.log_ndtr([-40.0]))


@pytest.mark.parametrize("name", sorted(n for n in UNARY if n not in ("round", "logit")))
def test_integer_inputs_compute_in_the_default_float_dtype(name, device):
    ref, domain = UNARY[name]
    ints = np.arange(int(math.ceil(domain[0])), int(math.floor(domain[1])) + 1, dtype=np.int64)
    result = getattr(sp, name)(core.tensor(ints, device=device))
    assert result.dtype is core.float32
    with np.errstate(all="ignore"):
        assert_close(result, ref(ints.astype(np.float32)).astype(np.float32), rtol=1e-5, atol=1e-6)
    core.set_default_dtype(core.float64)
    try:
        assert getattr(sp, name)(core.tensor(ints, device=device)).dtype is core.float64
    finally:
        core.set_default_dtype(core.float32)


def test_integer_inputs_of_the_other_functions(device):
    i = core.tensor([1, 2, 3], device=device)
    assert sp.polygamma(1, i).dtype is core.float32
    assert sp.multigammaln(i + 1, 2).dtype is core.float32
    assert sp.xlog1py(i, i).dtype is core.float32 and sp.zeta(i + 1, i).dtype is core.float32
    assert sp.gammainc(i, i).dtype is core.float32 and sp.logit(core.tensor([0, 1], device=device)).dtype \
        is core.float32
    assert sp.round(i).dtype is core.int64  # round keeps integer dtypes, as torch.round


@pytest.mark.parametrize("name", sorted(n for n in UNARY if n != "logit") + ["logit", "multigammaln", "polygamma"])
def test_out(name, device):
    values = _draw((2, 3), (2.0, 3.0) if name == "multigammaln" else UNARY.get(name, (None, (0.5, 0.9)))[1])
    x = core.tensor(values, device=device)
    call = {"multigammaln": lambda t, **k: sp.multigammaln(t, 2, **k),
            "polygamma": lambda t, **k: sp.polygamma(2, t, **k)}.get(name, getattr(sp, name))
    out = core.empty(0, dtype=core.float64, device=device)
    assert call(x, out=out) is out
    assert out.shape == (2, 3)
    assert_close(out, call(x))


def test_out_of_binary_functions(device):
    x = core.tensor(_draw((4,), (1.5, 3.0)), device=device)
    for name in BINARY:
        out = core.empty(4, dtype=core.float64, device=device)
        assert getattr(sp, name)(x, x, out=out) is out
        assert_close(out, getattr(sp, name)(x, x))


# -- derivatives ---------------------------------------------------------------------------------------------------

GRAD_UNARY = {
    "erfcx": (-2, 3), "i0e": (-3, 3), "i1": (-3, 3), "i1e": (-3, 3), "ndtri": (0.05, 0.95), "log_ndtr": (-5, 3),
    "ndtr": (-3, 3), "digamma": (0.5, 4), "psi": (0.5, 4), "i0": (-3, 3), "entr": (0.05, 3), "logit": (0.05, 0.95),
    "gammaln": (0.5, 4), "expit": (-3, 3), "erf": (-3, 3), "erfinv": (-0.9, 0.9), "log1p": (-0.5, 3),
    "sinc": (-3, 3), "modified_bessel_i0": (-3, 3), "modified_bessel_i1": (-3, 3),
}


def _leaf(values, device):
    return core.tensor(values, dtype=core.float64, device=device).requires_grad_()


@pytest.mark.parametrize("name", sorted(GRAD_UNARY))
def test_gradcheck_unary(name, device):
    x = _leaf(_draw((2, 3), GRAD_UNARY[name]), device)
    assert gradcheck(getattr(sp, name), (x,))


@pytest.mark.parametrize("name", ["erfcx", "i1", "i1e", "ndtri", "log_ndtr", "digamma", "i0", "entr"])
def test_gradgradcheck_unary(name):
    x = _leaf(_draw((4,), GRAD_UNARY[name]), "cpu")
    assert gradgradcheck(getattr(sp, name), (x,))


def test_gradcheck_polygamma_logit_eps_and_multigammaln(device):
    x = _leaf(_draw((2, 3), (0.5, 4)), device)
    for n in (0, 1, 3):
        assert gradcheck(lambda t, n=n: sp.polygamma(n, t), (x,))
    y = _leaf(np.array([0.05, 0.15, 0.4, 0.7, 0.85, 0.95]), device)
    assert gradcheck(lambda t: sp.logit(t, eps=0.1), (y,))
    z = _leaf(_draw((2, 3), (2.0, 4.0)), device)
    assert gradcheck(lambda t: sp.multigammaln(t, 3), (z,))


def test_gradcheck_binary(device):
    a, b = _leaf(_draw((2, 3), (-0.5, 3), 0), device), _leaf(_draw((2, 3), (-0.5, 3), 1), device)
    assert gradcheck(sp.xlog1py, (a, b))
    x, q = _draw((2, 3), (1.5, 4), 0), _leaf(_draw((2, 3), (0.5, 3), 1), device)
    assert gradcheck(lambda t: sp.zeta(core.tensor(x, device=device), t), (q,))
    s, v = _draw((2, 3), (0.5, 4), 0), _leaf(_draw((2, 3), (0.5, 4), 1), device)
    for name in ("gammainc", "gammaincc"):
        assert gradcheck(lambda t, name=name: getattr(sp, name)(core.tensor(s, device=device), t), (v,))


def test_gradients_at_the_special_points():
    zero = _leaf(np.array([0.0, 0.0]), "cpu")
    (g1,) = core.autograd.grad(sp.i1(zero).sum(), zero)
    (g1e,) = core.autograd.grad(sp.i1e(zero).sum(), zero)
    assert g1.tolist() == [0.5, 0.5] and g1e.tolist() == [0.5, 0.5]
    x = _leaf(np.array([0.0, 1.0]), "cpu")
    (g,) = core.autograd.grad(sp.xlog1py(x, core.tensor([-1.0, -1.0], dtype=core.float64)).sum(), x)
    assert g[0].item() == 0.0 and g[1].item() == -math.inf
    w = _leaf(np.array([0.1, 0.5, 0.9]), "cpu")
    (g,) = core.autograd.grad(sp.logit(w, eps=0.2).sum(), w)
    assert g[0].item() == 0.0 and g[2].item() == 0.0 and g[1].item() == pytest.approx(4.0)


def test_what_pytorch_does_not_differentiate():
    x = _leaf(_draw((3,), (0.5, 2)), "cpu")
    for name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
                 "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai"):
        assert not getattr(sp, name)(x).requires_grad, name
    for name in POLYNOMIALS:
        assert not getattr(sp, name)(x, 3).requires_grad, name
    for name in ("zeta", "gammainc", "gammaincc"):
        y = getattr(sp, name)(x + 1, x.detach())
        with pytest.raises(RuntimeError, match="derivative for .* is not implemented"):
            y.sum().backward()


def test_pytorch_errors():
    x = core.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not support negative n"):
        sp.polygamma(-1, x)
    with pytest.raises(RuntimeError, match=r"All elements must be greater than \(p-1\)/2"):
        sp.multigammaln(x, 3)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        sp.multigammaln(x, 0)


def test_meta_device_gives_shapes_and_dtypes():
    x = core.empty(2, 3, device="meta")
    assert sp.i1e(x).shape == (2, 3) and sp.i1e(x).device.type == "meta"
    assert sp.zeta(x, core.empty(3, device="meta")).shape == (2, 3)
    assert sp.polygamma(2, core.empty(4, dtype=core.int32, device="meta")).dtype is core.float32


def test_top_level_functions_methods_and_in_place_variants(device):
    values = np.array([0.2, 0.5, 0.7])
    x = core.tensor(values, device=device)
    assert core.logit is sp.logit and core.polygamma is sp.polygamma
    assert_close(core.mvlgamma(x + 2, 2), S.multigammaln(values + 2, 2), rtol=1e-12, atol=1e-12)
    y = x.clone()
    assert y.logit_(0.3) is y
    assert_close(y, S.logit(np.clip(values, 0.3, 0.7)), rtol=1e-12, atol=1e-12)
    z = x.clone()
    assert z.polygamma_(1) is z
    assert_close(z, S.polygamma(1, values), rtol=1e-12, atol=1e-12)
    w = x + 2
    assert w.mvlgamma_(3) is w
    assert_close(w, S.multigammaln(values + 2, 3), rtol=1e-12, atol=1e-12)
    ints = core.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ints.logit_()  # the float result does not fit an integer self, as in PyTorch
