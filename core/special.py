"""``core.special``: PyTorch's ``torch.special`` namespace.

Most names are aliases of core ops (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``, ``psi`` is ``digamma``);
the functions core has no op for are primitives declared in ``core/ops/elementwise.py`` as ``special_<name>``
(reference kernels through ``scipy.special``, or ``cupyx.scipy.special`` on cuda) or composites of other ops.
A backend without a kernel for one runs it on the counted CPU fallback.
"""

from __future__ import annotations

from .ops import elementwise as _E
from .ops import reduction as _R

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc",
    "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
    "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p",
    "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc",
    "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]

# aliases of core ops (torch.special documents each as "Alias for torch.<name>")
erf, erfc, erfinv, expm1, exp2, log1p = _E.erf, _E.erfc, _E.erfinv, _E.expm1, _E.exp2, _E.log1p
expit, logit, xlogy, sinc, round = _E.sigmoid, _E.logit, _E.xlogy, _E.sinc, _E.round  # noqa: A001
digamma = psi = _E.digamma
gammaln, i0, polygamma = _E.lgamma, _E.i0, _E.polygamma
logsumexp = _R.logsumexp

# the primitives and composites only core.special exports
erfcx, i0e, i1, i1e = (_E.SPECIAL[n] for n in ("erfcx", "i0e", "i1", "i1e"))
ndtr, ndtri, log_ndtr, entr = (_E.SPECIAL[n] for n in ("ndtr", "ndtri", "log_ndtr", "entr"))
xlog1py, zeta, gammainc, gammaincc = (_E.SPECIAL[n] for n in ("xlog1py", "zeta", "gammainc", "gammaincc"))
bessel_j0, bessel_j1, bessel_y0, bessel_y1 = (_E.SPECIAL[n] for n in ("bessel_j0", "bessel_j1", "bessel_y0",
                                                                       "bessel_y1"))
modified_bessel_i0, modified_bessel_i1 = _E.i0, i1
modified_bessel_k0, modified_bessel_k1 = _E.SPECIAL["modified_bessel_k0"], _E.SPECIAL["modified_bessel_k1"]
scaled_modified_bessel_k0 = _E.SPECIAL["scaled_modified_bessel_k0"]
scaled_modified_bessel_k1 = _E.SPECIAL["scaled_modified_bessel_k1"]
spherical_bessel_j0, airy_ai = _E.SPECIAL["spherical_bessel_j0"], _E.SPECIAL["airy_ai"]
chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w = (
    _E.SPECIAL[f"chebyshev_polynomial_{kind}"] for kind in "tuvw")
shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v, \
    shifted_chebyshev_polynomial_w = (_E.SPECIAL[f"shifted_chebyshev_polynomial_{kind}"] for kind in "tuvw")
hermite_polynomial_h, hermite_polynomial_he = _E.SPECIAL["hermite_polynomial_h"], _E.SPECIAL["hermite_polynomial_he"]
laguerre_polynomial_l, legendre_polynomial_p = _E.SPECIAL["laguerre_polynomial_l"], _E.SPECIAL["legendre_polynomial_p"]


def multigammaln(input, p, *, out=None):
    """Multivariate log-gamma of dimension ``p`` (``torch.special.multigammaln``, an alias of ``torch.mvlgamma``)."""
    return _E.mvlgamma(input, p, out=out)


def softmax(input, dim, *, dtype=None):
    """Softmax along ``dim`` (``torch.special.softmax``)."""
    return _E.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """Log-softmax along ``dim`` (``torch.special.log_softmax``)."""
    return _E.log_softmax(input, dim, dtype=dtype)
