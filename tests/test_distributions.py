"""core.distributions against scipy.stats on every device: densities, CDFs, inverse CDFs, entropies, moments,
seeded sample moments, reparameterized gradients, KL divergences and PyTorch's validation errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

import core
import core.distributions as D
from core.autograd import gradcheck


def _t(a, device, requires_grad=False):
    return core.tensor(np.asarray(a, dtype=np.float64), device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def _close(actual, expected, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(_np(actual), np.asarray(expected, dtype=np.float64), rtol=rtol, atol=atol)


# -- families against scipy.stats ----------------------------------------------------------------------
# name: (constructor of core tensors, scipy frozen distribution of the same numpy params, params, values,
#        the methods to compare)

A, B = np.array([0.5, 3.0]), np.array([2.0, 0.75])
CASES = {
    "Normal": (lambda p: D.Normal(p[0], p[1]), lambda p: stats.norm(p[0], p[1]), (np.array([0.0, 1.5]), B),
               [0.3, -1.2], "log_prob cdf icdf entropy mean variance mode"),
    "Uniform": (lambda p: D.Uniform(p[0], p[1]), lambda p: stats.uniform(p[0], p[1] - p[0]),
                (np.array([0.0, -1.0]), np.array([1.0, 3.0])), [0.5, 2.0], "log_prob cdf icdf entropy mean variance"),
    "Exponential": (lambda p: D.Exponential(p[0]), lambda p: stats.expon(scale=1 / p[0]), (B,), [0.3, 1.7],
                    "log_prob cdf icdf entropy mean variance"),
    "Laplace": (lambda p: D.Laplace(p[0], p[1]), lambda p: stats.laplace(p[0], p[1]), (np.array([0.0, 1.0]), B),
                [0.3, 2.5], "log_prob cdf icdf entropy mean variance mode"),
    "LogNormal": (lambda p: D.LogNormal(p[0], p[1]), lambda p: stats.lognorm(s=p[1], scale=np.exp(p[0])),
                  (np.array([0.0, 0.4]), np.array([1.0, 0.5])), [0.3, 2.5],
                  "log_prob cdf icdf entropy mean variance"),
    "Gamma": (lambda p: D.Gamma(p[0], p[1]), lambda p: stats.gamma(p[0], scale=1 / p[1]), (A, B), [0.3, 2.5],
              "log_prob cdf entropy mean variance"),
    "Chi2": (lambda p: D.Chi2(p[0]), lambda p: stats.chi2(p[0]), (np.array([1.5, 4.0]),), [0.3, 2.5],
             "log_prob cdf entropy mean variance"),
    "Beta": (lambda p: D.Beta(p[0], p[1]), lambda p: stats.beta(p[0], p[1]), (A, B), [0.3, 0.8],
             "log_prob entropy mean variance"),
    "StudentT": (lambda p: D.StudentT(p[0], p[1], p[2]), lambda p: stats.t(p[0], p[1], p[2]),
                 (np.array([3.0, 5.5]), np.array([0.0, 1.0]), B), [0.3, -2.5], "log_prob entropy mean variance mode"),
    "Cauchy": (lambda p: D.Cauchy(p[0], p[1]), lambda p: stats.cauchy(p[0], p[1]), (np.array([0.0, 1.0]), B),
               [0.3, -2.5], "log_prob cdf icdf entropy"),
    "Gumbel": (lambda p: D.Gumbel(p[0], p[1]), lambda p: stats.gumbel_r(p[0], p[1]), (np.array([0.0, 1.0]), B),
               [0.3, -0.5], "log_prob cdf icdf entropy mean variance mode"),
    "HalfNormal": (lambda p: D.HalfNormal(p[0]), lambda p: stats.halfnorm(scale=p[0]), (B,), [0.3, 2.5],
                   "log_prob cdf icdf entropy mean variance"),
    "HalfCauchy": (lambda p: D.HalfCauchy(p[0]), lambda p: stats.halfcauchy(scale=p[0]), (B,), [0.3, 2.5],
                   "log_prob cdf icdf entropy"),
    "Bernoulli": (lambda p: D.Bernoulli(probs=p[0]), lambda p: stats.bernoulli(p[0]), (np.array([0.3, 0.8]),),
                  [1.0, 0.0], "log_prob entropy mean variance mode"),
    "Poisson": (lambda p: D.Poisson(p[0]), lambda p: stats.poisson(p[0]), (np.array([0.7, 4.0]),), [3.0, 0.0],
                "log_prob mean variance"),
    "Binomial": (lambda p: D.Binomial(6, probs=p[0]), lambda p: stats.binom(6, p[0]), (np.array([0.3, 0.8]),),
                 [2.0, 6.0], "log_prob entropy mean variance mode"),
    "Geometric": (lambda p: D.Geometric(p[0]), lambda p: stats.geom(p[0], loc=-1), (np.array([0.3, 0.8]),),
                  [2.0, 0.0], "log_prob entropy mean variance"),
    "Pareto": (lambda p: D.Pareto(p[0], p[1]), lambda p: stats.pareto(p[1], scale=p[0]), (B, np.array([3.0, 1.5])),
               [2.5, 3.0], "log_prob cdf icdf entropy mean variance"),
    "Weibull": (lambda p: D.Weibull(p[0], p[1]), lambda p: stats.weibull_min(p[1], scale=p[0]), (B, A),
                [0.3, 2.5], "log_prob cdf icdf entropy mean variance"),
    "InverseGamma": (lambda p: D.InverseGamma(p[0], p[1]), lambda p: stats.invgamma(p[0], scale=p[1]),
                     (np.array([3.0, 2.5]), B), [0.3, 2.5], "log_prob cdf entropy mean variance"),
    "FisherSnedecor": (lambda p: D.FisherSnedecor(p[0], p[1]), lambda p: stats.f(p[0], p[1]),
                       (np.array([3.0, 6.0]), np.array([5.0, 10.0])), [0.7, 1.8], "log_prob mean variance"),
    "GeneralizedPareto": (lambda p: D.GeneralizedPareto(p[0], p[1], p[2]), lambda p: stats.genpareto(p[2], p[0], p[1]),
                          (np.array([0.0, 1.0]), B, np.array([0.3, -0.2])), [0.7, 1.8],
                          "log_prob cdf icdf entropy mean variance"),
    "NegativeBinomial": (lambda p: D.NegativeBinomial(p[0], probs=p[1]), lambda p: stats.nbinom(p[0], 1 - p[1]),
                         (np.array([3.0, 5.5]), np.array([0.3, 0.6])), [2.0, 4.0], "log_prob mean variance"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_univariate_against_scipy(name, device):
    make, ref, params, values, methods = CASES[name]
    dist, frozen = make([_t(p, device) for p in params]), ref(params)
    value = _t(values, device)
    assert dist.batch_shape == (2,) and dist.event_shape == ()
    discrete = hasattr(frozen, "pmf")
    for method in methods.split():
        if method == "log_prob":
            _close(dist.log_prob(value), frozen.logpmf(values) if discrete else frozen.logpdf(values))
        elif method == "cdf":
            _close(dist.cdf(value), frozen.cdf(values))
        elif method == "icdf":
            q = _t([0.2, 0.9], device)
            _close(dist.icdf(q), frozen.ppf([0.2, 0.9]), rtol=1e-5)
        elif method == "entropy":
            _close(dist.entropy(), frozen.entropy())
        elif method == "mean":
            _close(dist.mean, frozen.mean())
            _close(dist.stddev, frozen.std())
        elif method == "variance":
            _close(dist.variance, frozen.var())
        elif method == "mode":
            expected = {"Binomial": np.floor(7 * params[0]), "Bernoulli": params[0] > 0.5}.get(name, params[-2]
                                                                                           if len(params) > 1 else 0)
            if name == "StudentT":
                expected = params[1]
            _close(dist.mode, expected)
    assert dist.log_prob(value).device.type == core.device(device).type


def test_undefined_moments(device):
    cauchy = D.Cauchy(_t([0.0], device), _t([1.0], device))
    assert math.isnan(float(cauchy.mean)) and math.isinf(float(cauchy.variance))
    t = D.StudentT(_t([0.5, 1.5, 2.5], device))
    assert np.isnan(_np(t.mean)[0]) and _np(t.mean)[1] == 0
    assert np.isnan(_np(t.variance)[0]) and np.isinf(_np(t.variance)[1]) and np.isfinite(_np(t.variance)[2])
    assert math.isnan(float(D.Bernoulli(_t(0.5, device)).mode))
    assert math.isinf(float(D.HalfCauchy(_t(1.0, device)).mean))


def test_exponential_family_entropy_matches_closed_form(device):
    for dist in (D.Normal(_t([0.0, 1.0], device), _t([1.0, 2.0], device)), D.Exponential(_t([0.5, 2.0], device)),
                 D.Gamma(_t(A, device), _t(B, device)), D.Bernoulli(_t([0.3, 0.8], device))):
        _close(D.ExponentialFamily.entropy(dist), _np(dist.entropy()))


def test_categorical_and_one_hot(device):
    logits = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]))
    probs = np.exp(logits)
    cat = D.Categorical(probs=_t(probs * 4, device))  # normalized by the distribution
    _close(cat.probs, probs)
    _close(cat.log_prob(core.tensor([2, 0], device=device)), np.log([0.5, 0.6]))
    _close(cat.entropy(), -(probs * logits).sum(-1))
    assert cat.batch_shape == (2,) and cat.support.upper_bound == 2
    assert _np(cat.mode).tolist() == [2, 0] and cat.enumerate_support().shape == (3, 2)
    one_hot = D.OneHotCategorical(logits=_t(logits, device))
    _close(one_hot.log_prob(_t([[0, 0, 1], [1, 0, 0]], device)), np.log([0.5, 0.6]))
    _close(one_hot.variance, probs * (1 - probs))
    assert one_hot.event_shape == (3,) and one_hot.sample((4,)).shape == (4, 2, 3)
    _close(one_hot.mode, [[0, 0, 1], [1, 0, 0]])


def test_multivariate_against_scipy(device):
    alpha = np.array([0.5, 2.0, 3.0])
    x = np.array([0.2, 0.3, 0.5])
    dirichlet = D.Dirichlet(_t(alpha, device))
    ref = stats.dirichlet(alpha)
    _close(dirichlet.log_prob(_t(x, device)), ref.logpdf(x))
    _close(dirichlet.entropy(), ref.entropy())
    _close(dirichlet.mean, ref.mean())
    _close(dirichlet.variance, ref.var())
    _close(D.Dirichlet(_t([2.0, 3.0, 4.0], device)).mode, np.array([1.0, 2.0, 3.0]) / 6)

    p = np.array([0.2, 0.3, 0.5])
    multinomial = D.Multinomial(5, probs=_t(p, device))
    _close(multinomial.log_prob(_t([1.0, 2.0, 2.0], device)), stats.multinomial(5, p).logpmf([1, 2, 2]))
    _close(multinomial.entropy(), stats.multinomial(5, p).entropy())
    _close(multinomial.mean, 5 * p)
    _close(multinomial.variance, 5 * p * (1 - p))

    cov = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.7]])
    loc = np.array([0.5, -1.0, 0.0])
    values = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, -0.5]])
    ref = stats.multivariate_normal(loc, cov)
    for kwargs in ({"covariance_matrix": _t(cov, device)}, {"precision_matrix": _t(np.linalg.inv(cov), device)},
                   {"scale_tril": _t(np.linalg.cholesky(cov), device)}):
        mvn = D.MultivariateNormal(_t(loc, device), **kwargs)
        _close(mvn.log_prob(_t(values, device)), ref.logpdf(values))
        _close(mvn.entropy(), ref.entropy())
        _close(mvn.covariance_matrix, cov)
        _close(mvn.precision_matrix, np.linalg.inv(cov))
        _close(mvn.variance, np.diag(cov))
    factor, diag = np.array([[1.0], [0.5], [0.2]]), np.array([1.0, 0.75, 0.5])
    low_rank = D.LowRankMultivariateNormal(_t(loc, device), _t(factor, device), _t(diag, device))
    ref = stats.multivariate_normal(loc, factor @ factor.T + np.diag(diag))
    _close(low_rank.log_prob(_t(values, device)), ref.logpdf(values))
    _close(low_rank.entropy(), ref.entropy())
    _close(low_rank.variance, np.diag(factor @ factor.T) + diag)


def test_independent_and_mixture(device):
    loc, scale = np.array([[0.0, 1.0], [2.0, -1.0]]), np.array([[1.0, 0.5], [2.0, 1.5]])
    ind = D.Independent(D.Normal(_t(loc, device), _t(scale, device)), 1)
    assert ind.batch_shape == (2,) and ind.event_shape == (2,)
    x = np.array([0.3, -0.2])
    _close(ind.log_prob(_t(x, device)), stats.norm(loc, scale).logpdf(x).sum(-1))
    _close(ind.entropy(), stats.norm(loc, scale).entropy().sum(-1))

    w, mu, sd = np.array([0.3, 0.7]), np.array([-1.0, 2.0]), np.array([1.0, 0.5])
    mix = D.MixtureSameFamily(D.Categorical(probs=_t(w, device)), D.Normal(_t(mu, device), _t(sd, device)))
    values = np.array([0.0, 1.0, 2.5])
    density = (w * stats.norm(mu, sd).pdf(values[:, None])).sum(-1)
    _close(mix.log_prob(_t(values, device)), np.log(density))
    _close(mix.cdf(_t(values, device)), (w * stats.norm(mu, sd).cdf(values[:, None])).sum(-1))
    mean = (w * mu).sum()
    _close(mix.mean, mean)
    _close(mix.variance, (w * (sd ** 2 + mu ** 2)).sum() - mean ** 2)
    draws = _np(mix.sample((20000,)))
    assert draws.shape == (20000,) and abs(draws.mean() - mean) < 0.05


def _quad(f, lo=0.0, hi=1.0):
    return integrate.quad(f, lo, hi, limit=200)[0]


def test_kumaraswamy_against_its_density(device):
    a, b = np.array([3.0, 1.5, 0.7]), np.array([2.0, 0.7, 0.5])
    dist = D.Kumaraswamy(_t(a, device), _t(b, device))
    x = np.array([0.3, 0.6, 0.9])
    pdf = [lambda v, i=i: a[i] * b[i] * v ** (a[i] - 1) * (1 - v ** a[i]) ** (b[i] - 1) for i in range(3)]
    _close(dist.log_prob(_t(x, device)), np.log([pdf[i](x[i]) for i in range(3)]))
    _close(dist.cdf(_t(x, device)), 1 - (1 - x ** a) ** b)
    _close(dist.icdf(dist.cdf(_t(x, device))), x)
    mean = np.array([_quad(lambda v, i=i: v * pdf[i](v)) for i in range(3)])
    _close(dist.mean, mean, rtol=1e-6)
    _close(dist.variance, [_quad(lambda v, i=i: (v - mean[i]) ** 2 * pdf[i](v)) for i in range(3)], rtol=1e-5)
    _close(dist.entropy(), [_quad(lambda v, i=i: -pdf[i](v) * np.log(pdf[i](v))) for i in range(3)], rtol=1e-5)
    assert np.isnan(_np(dist.mode)[2]) and _np(dist.mode)[0] == pytest.approx((2 / 5) ** (1 / 3))


def test_continuous_bernoulli_against_its_density(device):
    p = np.array([0.2, 0.4999, 0.9])
    dist = D.ContinuousBernoulli(_t(p, device))
    norm = 2 * np.arctanh(1 - 2 * p) / (1 - 2 * p)  # p = 0.4999 is inside the Taylor-expanded region
    pdf = [lambda v, i=i: norm[i] * p[i] ** v * (1 - p[i]) ** (1 - v) for i in range(3)]
    x = np.array([0.3, 0.7, 0.8])
    _close(dist.log_prob(_t(x, device)), np.log([pdf[i](x[i]) for i in range(3)]), rtol=1e-5)
    # inside the unstable region PyTorch's cdf is the uniform one (off by 4e-5 at p = 0.4999)
    _close(dist.cdf(_t(x, device)), [_quad(pdf[i], 0, x[i]) for i in range(3)], rtol=1e-4)
    _close(dist.icdf(dist.cdf(_t(x, device))), x, rtol=1e-6)
    mean = np.array([_quad(lambda v, i=i: v * pdf[i](v)) for i in range(3)])
    _close(dist.mean, mean, rtol=1e-5)
    _close(dist.variance, [_quad(lambda v, i=i: (v - mean[i]) ** 2 * pdf[i](v)) for i in range(3)], rtol=1e-4)
    _close(dist.entropy(), [_quad(lambda v, i=i: -pdf[i](v) * np.log(pdf[i](v))) for i in range(3)], rtol=1e-4,
           atol=1e-6)
    _close(D.ExponentialFamily.entropy(dist), _np(dist.entropy()), rtol=1e-4, atol=1e-6)


def test_logistic_normal_and_straight_through(device):
    loc, scale = np.array([0.3, -0.5]), np.array([1.0, 0.7])
    dist = D.LogisticNormal(_t(loc, device), _t(scale, device))
    assert dist.event_shape == (3,) and dist.batch_shape == ()
    x = _np(dist.sample((4,)))
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
    # the density of y = stick_breaking(z), z ~ Normal: p(y) = p(z) / |det dy[:-1]/dz|, the Jacobian by differences
    stick = D.StickBreakingTransform()
    z = _np(stick.inv(_t(x[0], device)))
    h = 1e-6
    jac = np.stack([(_np(stick(_t(z + h * e, device))) - _np(stick(_t(z - h * e, device))))[:-1] / (2 * h)
                    for e in np.eye(2)], axis=1)
    expected = stats.norm(loc, scale).logpdf(z).sum() - np.log(abs(np.linalg.det(jac)))
    _close(dist.log_prob(_t(x[0], device)), expected, rtol=1e-6)

    probs = _t([0.2, 0.3, 0.5], device, requires_grad=True)
    st = D.OneHotCategoricalStraightThrough(probs=probs)
    sample = st.rsample((5,))
    assert st.has_rsample and bool(st.support.check(sample.detach()).all())
    (sample * _t([1.0, 2.0, 3.0], device)).sum().backward()
    _close(probs.grad, 5 * np.array([1.0, 2.0, 3.0]) - 5 * np.dot([0.2, 0.3, 0.5], [1.0, 2.0, 3.0]), atol=1e-12)


def test_relaxed_densities(device):
    temperature, p = 0.7, np.array([0.3, 0.8])
    y = np.array([0.2, 0.9])
    odds = p / (1 - p)
    density = (temperature * odds * y ** (-temperature - 1) * (1 - y) ** (-temperature - 1)
               / (odds * y ** -temperature + (1 - y) ** -temperature) ** 2)
    relaxed = D.RelaxedBernoulli(_t(temperature, device), probs=_t(p, device))
    _close(relaxed.log_prob(_t(y, device)), np.log(density))
    draws = _np(relaxed.sample((1000,)))
    assert draws.shape == (1000, 2) and ((draws > 0) & (draws < 1)).all()

    probs, x = np.array([0.2, 0.3, 0.5]), np.array([0.1, 0.6, 0.3])
    k = 3
    density = (math.factorial(k - 1) * temperature ** (k - 1) * np.prod(probs * x ** (-temperature - 1))
               / (probs * x ** -temperature).sum() ** k)
    onehot = D.RelaxedOneHotCategorical(_t(temperature, device), probs=_t(probs, device))
    _close(onehot.log_prob(_t(x, device)), np.log(density))
    draws = _np(onehot.rsample((500,)))
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-6)


# -- sampling ------------------------------------------------------------------------------------------

MOMENT_CASES = [
    (lambda d: D.Normal(_t([0.0, 2.0], d), _t([1.0, 0.5], d)), [0.0, 2.0], [1.0, 0.25]),
    (lambda d: D.Uniform(_t([0.0, -1.0], d), _t([1.0, 3.0], d)), [0.5, 1.0], [1 / 12, 16 / 12]),
    (lambda d: D.Exponential(_t([0.5, 2.0], d)), [2.0, 0.5], [4.0, 0.25]),
    (lambda d: D.Laplace(_t([0.0, 1.0], d), _t([1.0, 0.5], d)), [0.0, 1.0], [2.0, 0.5]),
    (lambda d: D.Gamma(_t([0.5, 3.0], d), _t([2.0, 0.75], d)), [0.25, 4.0], [0.125, 3 / 0.5625]),
    (lambda d: D.Beta(_t([0.5, 3.0], d), _t([2.0, 0.75], d)), stats.beta(A, B).mean(), stats.beta(A, B).var()),
    (lambda d: D.LogNormal(_t([0.0, np.log(1.5)], d), _t([0.5, 0.25], d)),
     stats.lognorm([0.5, 0.25], scale=[1, 1.5]).mean(), stats.lognorm([0.5, 0.25], scale=[1, 1.5]).var()),
    (lambda d: D.Gumbel(_t([0.0, 1.0], d), _t([1.0, 0.5], d)), stats.gumbel_r([0, 1], [1, 0.5]).mean(),
     stats.gumbel_r([0, 1], [1, 0.5]).var()),
    (lambda d: D.StudentT(_t([5.0, 8.0], d)), [0.0, 0.0], [5 / 3, 8 / 6]),
    (lambda d: D.HalfNormal(_t([1.0, 2.0], d)), stats.halfnorm(scale=[1, 2]).mean(),
     stats.halfnorm(scale=[1, 2]).var()),
    (lambda d: D.Chi2(_t([1.0, 4.0], d)), [1.0, 4.0], [2.0, 8.0]),
    (lambda d: D.Bernoulli(_t([0.3, 0.8], d)), [0.3, 0.8], [0.21, 0.16]),
    (lambda d: D.Poisson(_t([0.7, 4.0], d)), [0.7, 4.0], [0.7, 4.0]),
    (lambda d: D.Binomial(6, _t([0.3, 0.8], d)), [1.8, 4.8], [1.26, 0.96]),
    (lambda d: D.Geometric(_t([0.3, 0.8], d)), [7 / 3, 0.25], [0.7 / 0.09, 0.2 / 0.64]),
    (lambda d: D.Categorical(_t([0.2, 0.3, 0.5], d)), [1.3], [0.61]),
    (lambda d: D.Dirichlet(_t([0.5, 2.0, 3.0], d)), stats.dirichlet([0.5, 2, 3]).mean(),
     stats.dirichlet([0.5, 2, 3]).var()),
    (lambda d: D.Multinomial(5, _t([0.2, 0.3, 0.5], d)), [1.0, 1.5, 2.5], [0.8, 1.05, 1.25]),
    (lambda d: D.Pareto(_t([1.0, 2.0], d), _t([6.0, 8.0], d)), stats.pareto([6, 8], scale=[1, 2]).mean(),
     stats.pareto([6, 8], scale=[1, 2]).var()),
    (lambda d: D.Weibull(_t([1.0, 2.0], d), _t([0.8, 3.0], d)), stats.weibull_min([0.8, 3], scale=[1, 2]).mean(),
     stats.weibull_min([0.8, 3], scale=[1, 2]).var()),
    (lambda d: D.InverseGamma(_t([8.0, 10.0], d), _t([1.0, 2.0], d)), stats.invgamma([8, 10], scale=[1, 2]).mean(),
     stats.invgamma([8, 10], scale=[1, 2]).var()),
    (lambda d: D.FisherSnedecor(_t([6.0, 10.0], d), _t([20.0, 30.0], d)), stats.f([6, 10], [20, 30]).mean(),
     stats.f([6, 10], [20, 30]).var()),
    (lambda d: D.GeneralizedPareto(_t([0.0, 1.0], d), _t([1.0, 2.0], d), _t([0.1, -0.2], d)),
     stats.genpareto([0.1, -0.2], [0, 1], [1, 2]).mean(), stats.genpareto([0.1, -0.2], [0, 1], [1, 2]).var()),
    (lambda d: D.NegativeBinomial(_t([3.0, 5.5], d), _t([0.3, 0.6], d)), stats.nbinom([3, 5.5], [0.7, 0.4]).mean(),
     stats.nbinom([3, 5.5], [0.7, 0.4]).var()),
    (lambda d: D.Kumaraswamy(_t([3.0, 1.5], d), _t([2.0, 0.7], d)), None, None),
    (lambda d: D.ContinuousBernoulli(_t([0.2, 0.5, 0.9], d)), None, None),
]


@pytest.mark.parametrize("case", range(len(MOMENT_CASES)))
def test_sample_moments(case, device):
    make, mean, var = MOMENT_CASES[case]
    dist = make(device)
    if mean is None:
        mean, var = _np(dist.mean), _np(dist.variance)  # checked against quadrature in their own tests
    n = 40000
    draws = _np(dist.sample((n,)))
    assert draws.shape == (n,) + tuple(dist.batch_shape) + tuple(dist.event_shape)
    mean, var = np.atleast_1d(np.asarray(mean, dtype=float)), np.atleast_1d(np.asarray(var, dtype=float))
    flat = draws.reshape(n, -1)
    np.testing.assert_allclose(flat.mean(0), mean, atol=6 * np.sqrt(var / n).max() + 1e-12)
    np.testing.assert_allclose(flat.var(0), var, rtol=0.1)
    assert bool(dist.support.check(core.tensor(draws[:100], device=device)).all())


def test_multivariate_normal_sample_covariance(device):
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    mvn = D.MultivariateNormal(_t([1.0, -1.0], device), covariance_matrix=_t(cov, device))
    draws = _np(mvn.sample((40000,)))
    np.testing.assert_allclose(draws.mean(0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.06)


def test_seeded_draws_repeat(device):
    dist = D.Gamma(_t([0.5, 3.0], device), _t([1.0, 2.0], device))
    core.manual_seed(7)
    first = _np(dist.sample((5,)))
    core.manual_seed(7)
    np.testing.assert_array_equal(first, _np(dist.sample((5,))))
    assert dist.sample().shape == (2,) and dist.sample((3, 4)).shape == (3, 4, 2)
    assert D.Normal(0.0, 1.0).expand((3, 2)).sample((4,)).shape == (4, 3, 2)


# -- gradients -----------------------------------------------------------------------------------------

def _seeded_rsample(make):
    def f(*params):
        core.manual_seed(0)
        return make(*params).rsample((3,))
    return f


RSAMPLE_CASES = {
    "Normal": (lambda a, b: D.Normal(a, b), ([0.0, 1.0], [1.0, 2.0])),
    "Uniform": (lambda a, b: D.Uniform(a, b), ([0.0, -1.0], [1.0, 2.0])),
    "Exponential": (lambda a: D.Exponential(a), ([0.5, 2.0],)),
    "Laplace": (lambda a, b: D.Laplace(a, b), ([0.0, 1.0], [1.0, 2.0])),
    "LogNormal": (lambda a, b: D.LogNormal(a, b), ([0.0, 1.0], [1.0, 0.5])),
    "Cauchy": (lambda a, b: D.Cauchy(a, b), ([0.0, 1.0], [1.0, 2.0])),
    "Gumbel": (lambda a, b: D.Gumbel(a, b), ([0.0, 1.0], [1.0, 2.0])),
    "HalfNormal": (lambda a: D.HalfNormal(a), ([1.0, 2.0],)),
    "MultivariateNormal": (lambda a, b: D.MultivariateNormal(a, scale_tril=b.tril()),
                           ([0.0, 1.0], [[1.0, 0.0], [0.5, 2.0]])),
    "RelaxedBernoulli": (lambda a: D.RelaxedBernoulli(core.tensor(0.5, dtype=a.dtype, device=a.device), logits=a),
                         ([0.3, -1.0],)),
    "RelaxedOneHotCategorical": (lambda a: D.RelaxedOneHotCategorical(
        core.tensor(0.5, dtype=a.dtype, device=a.device), logits=a), ([0.3, -1.0, 0.5],)),
}


@pytest.mark.parametrize("name", sorted(RSAMPLE_CASES))
def test_rsample_gradcheck(name, device):
    make, params = RSAMPLE_CASES[name]
    assert make(*[_t(p, device) for p in params]).has_rsample
    assert gradcheck(_seeded_rsample(make), tuple(_t(p, device, requires_grad=True) for p in params))


LOG_PROB_CASES = {
    "Normal": (lambda a, b: D.Normal(a, b), ([0.0, 1.0], [1.0, 2.0]), [0.3, -0.7]),
    "Gamma": (lambda a, b: D.Gamma(a, b), ([0.5, 3.0], [2.0, 0.75]), [0.3, 2.5]),
    "Beta": (lambda a, b: D.Beta(a, b), ([0.5, 3.0], [2.0, 0.75]), [0.3, 0.8]),
    "StudentT": (lambda a, b, c: D.StudentT(a, b, c), ([3.0, 5.5], [0.0, 1.0], [1.0, 2.0]), [0.3, -2.5]),
    "Dirichlet": (lambda a: D.Dirichlet(a), ([0.5, 2.0, 3.0],), [0.2, 0.3, 0.5]),
    "Bernoulli": (lambda a: D.Bernoulli(logits=a), ([0.3, -1.5],), [1.0, 0.0]),
    "Categorical": (lambda a: D.Categorical(logits=a), ([0.3, -1.5, 0.2],), [2.0]),
    "Binomial": (lambda a: D.Binomial(5, logits=a), ([0.3, -1.5],), [2.0, 5.0]),
    "Poisson": (lambda a: D.Poisson(a), ([0.7, 4.0],), [3.0, 0.0]),
    "MultivariateNormal": (lambda a, b: D.MultivariateNormal(a, covariance_matrix=b @ b.mT + core.eye(
        2, dtype=b.dtype, device=b.device)), ([0.0, 1.0], [[1.0, 0.2], [0.5, 2.0]]), [[0.3, -0.7]]),
}


@pytest.mark.parametrize("name", sorted(LOG_PROB_CASES))
def test_log_prob_and_entropy_gradcheck(name, device):
    make, params, value = LOG_PROB_CASES[name]
    value = _t(value, device)
    if name == "Categorical":
        value = value.long()
    inputs = tuple(_t(p, device, requires_grad=True) for p in params)
    assert gradcheck(lambda *p: make(*p).log_prob(value), inputs)
    if name not in ("Poisson",):
        assert gradcheck(lambda *p: make(*p).entropy(), inputs)


def test_gamma_rsample_gradient_is_unbiased(device):
    """The implicit reparameterization gradient of Gamma: E[d x / d alpha] = d E[x] / d alpha = 1 / rate, and so on
    for Beta and Dirichlet (E[x] = alpha / sum(alpha))."""
    alpha = _t([0.4, 2.5], device, requires_grad=True)
    rate = _t([2.0, 0.5], device, requires_grad=True)
    n = 20000
    D.Gamma(alpha, rate).rsample((n,)).sum(0).sum().backward()
    np.testing.assert_allclose(_np(alpha.grad) / n, 1 / np.array([2.0, 0.5]), rtol=0.05)
    np.testing.assert_allclose(_np(rate.grad) / n, -np.array([0.4, 2.5]) / np.array([2.0, 0.5]) ** 2, rtol=0.05)
    a = _t([1.5, 0.7], device, requires_grad=True)
    b = _t([0.5, 2.0], device, requires_grad=True)
    D.Beta(a, b).rsample((n,)).sum(0).sum().backward()
    an, bn = np.array([1.5, 0.7]), np.array([0.5, 2.0])
    np.testing.assert_allclose(_np(a.grad) / n, bn / (an + bn) ** 2, rtol=0.08)
    np.testing.assert_allclose(_np(b.grad) / n, -an / (an + bn) ** 2, rtol=0.08)


# -- KL divergences ------------------------------------------------------------------------------------

def _quad_kl(p_ref, q_ref):
    """KL(p || q) = E_p[log p - log q], integrated over p's quantiles u in (0, 1) (x = p.ppf(u)): heavy tails stay
    finite."""
    def integrand(u):
        x = p_ref.ppf(u)
        return p_ref.logpdf(x) - q_ref.logpdf(x)
    return integrate.quad(integrand, 0, 1, limit=400, epsabs=1e-11, epsrel=1e-10)[0]


KL_CONTINUOUS = [
    (lambda d: (D.Normal(_t(0.5, d), _t(1.5, d)), D.Normal(_t(-0.3, d), _t(0.8, d))),
     stats.norm(0.5, 1.5), stats.norm(-0.3, 0.8)),
    (lambda d: (D.Uniform(_t(0.2, d), _t(0.9, d)), D.Uniform(_t(0.0, d), _t(1.5, d))),
     stats.uniform(0.2, 0.7), stats.uniform(0.0, 1.5)),
    (lambda d: (D.Exponential(_t(0.5, d)), D.Exponential(_t(2.0, d))), stats.expon(scale=2), stats.expon(scale=0.5)),
    (lambda d: (D.Laplace(_t(0.5, d), _t(1.5, d)), D.Laplace(_t(-0.3, d), _t(0.8, d))),
     stats.laplace(0.5, 1.5), stats.laplace(-0.3, 0.8)),
    (lambda d: (D.Gamma(_t(2.5, d), _t(1.5, d)), D.Gamma(_t(0.8, d), _t(0.5, d))),
     stats.gamma(2.5, scale=1 / 1.5), stats.gamma(0.8, scale=2)),
    (lambda d: (D.Beta(_t(2.5, d), _t(1.5, d)), D.Beta(_t(0.8, d), _t(3.0, d))),
     stats.beta(2.5, 1.5), stats.beta(0.8, 3.0)),
    (lambda d: (D.Gumbel(_t(0.5, d), _t(1.5, d)), D.Gumbel(_t(-0.3, d), _t(0.8, d))),
     stats.gumbel_r(0.5, 1.5), stats.gumbel_r(-0.3, 0.8)),
    (lambda d: (D.HalfNormal(_t(1.5, d)), D.HalfNormal(_t(0.8, d))),
     stats.halfnorm(scale=1.5), stats.halfnorm(scale=0.8)),
    (lambda d: (D.LogNormal(_t(0.5, d), _t(0.7, d)), D.LogNormal(_t(-0.3, d), _t(0.8, d))),
     stats.lognorm(0.7, scale=np.exp(0.5)), stats.lognorm(0.8, scale=np.exp(-0.3))),
    (lambda d: (D.Normal(_t(0.5, d), _t(1.5, d)), D.Laplace(_t(-0.3, d), _t(0.8, d))),
     stats.norm(0.5, 1.5), stats.laplace(-0.3, 0.8)),
    (lambda d: (D.Uniform(_t(0.2, d), _t(0.9, d)), D.Normal(_t(-0.3, d), _t(0.8, d))),
     stats.uniform(0.2, 0.7), stats.norm(-0.3, 0.8)),
    (lambda d: (D.Cauchy(_t(0.5, d), _t(1.5, d)), D.Cauchy(_t(-0.3, d), _t(0.8, d))),
     stats.cauchy(0.5, 1.5), stats.cauchy(-0.3, 0.8)),
    (lambda d: (D.Exponential(_t(0.5, d)), D.Normal(_t(-0.3, d), _t(1.8, d))),
     stats.expon(scale=2), stats.norm(-0.3, 1.8)),
    (lambda d: (D.Gamma(_t(2.5, d), _t(1.5, d)), D.Normal(_t(1.3, d), _t(0.8, d))),
     stats.gamma(2.5, scale=1 / 1.5), stats.norm(1.3, 0.8)),
    (lambda d: (D.Laplace(_t(0.5, d), _t(1.5, d)), D.Normal(_t(-0.3, d), _t(2.8, d))),
     stats.laplace(0.5, 1.5), stats.norm(-0.3, 2.8)),
    (lambda d: (D.Gumbel(_t(0.5, d), _t(1.5, d)), D.Normal(_t(-0.3, d), _t(2.8, d))),
     stats.gumbel_r(0.5, 1.5), stats.norm(-0.3, 2.8)),
    (lambda d: (D.Beta(_t(2.5, d), _t(1.5, d)), D.Normal(_t(0.3, d), _t(0.8, d))),
     stats.beta(2.5, 1.5), stats.norm(0.3, 0.8)),
    (lambda d: (D.Gamma(_t(2.5, d), _t(1.5, d)), D.Exponential(_t(0.7, d))),
     stats.gamma(2.5, scale=1 / 1.5), stats.expon(scale=1 / 0.7)),
    (lambda d: (D.Exponential(_t(0.7, d)), D.Gamma(_t(2.5, d), _t(1.5, d))),
     stats.expon(scale=1 / 0.7), stats.gamma(2.5, scale=1 / 1.5)),
]


@pytest.mark.parametrize("case", range(len(KL_CONTINUOUS)))
def test_kl_continuous_against_quadrature(case, device):
    make, p_ref, q_ref = KL_CONTINUOUS[case]
    p, q = make(device)
    _close(D.kl_divergence(p, q), _quad_kl(p_ref, q_ref), rtol=1e-5, atol=1e-7)


def test_kl_discrete_by_enumeration(device):
    def exact(p_pmf, q_pmf, support):
        pk, qk = p_pmf(support), q_pmf(support)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.sum(np.where(pk > 0, pk * (np.log(pk) - np.log(qk)), 0.0))

    k = np.arange(200)
    pairs = [
        (D.Bernoulli(_t(0.3, device)), D.Bernoulli(_t(0.6, device)), stats.bernoulli(0.3), stats.bernoulli(0.6)),
        (D.Binomial(5, _t(0.3, device)), D.Binomial(5, _t(0.6, device)), stats.binom(5, 0.3), stats.binom(5, 0.6)),
        (D.Poisson(_t(2.5, device)), D.Poisson(_t(4.0, device)), stats.poisson(2.5), stats.poisson(4.0)),
        (D.Geometric(_t(0.3, device)), D.Geometric(_t(0.6, device)), stats.geom(0.3, loc=-1),
         stats.geom(0.6, loc=-1)),
    ]
    for p, q, pr, qr in pairs:
        _close(D.kl_divergence(p, q), exact(pr.pmf, qr.pmf, k))
    pp, qq = np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.25, 0.25])
    expected = np.sum(pp * np.log(pp / qq))
    _close(D.kl_divergence(D.Categorical(_t(pp, device)), D.Categorical(_t(qq, device))), expected)
    _close(D.kl_divergence(D.OneHotCategorical(_t(pp, device)), D.OneHotCategorical(_t(qq, device))), expected)
    assert math.isinf(float(D.kl_divergence(D.Categorical(_t(pp, device)),
                                            D.Categorical(_t([0.5, 0.5, 0.0], device)))))


def test_kl_multivariate_closed_forms(device):
    c1 = np.array([[2.0, 0.5], [0.5, 1.0]])
    c2 = np.array([[1.0, -0.3], [-0.3, 0.8]])
    m1, m2 = np.array([0.5, -1.0]), np.array([0.0, 0.3])
    inv2 = np.linalg.inv(c2)
    expected = 0.5 * (np.trace(inv2 @ c1) + (m2 - m1) @ inv2 @ (m2 - m1) - 2
                      + np.log(np.linalg.det(c2) / np.linalg.det(c1)))
    p = D.MultivariateNormal(_t(m1, device), covariance_matrix=_t(c1, device))
    q = D.MultivariateNormal(_t(m2, device), scale_tril=_t(np.linalg.cholesky(c2), device))
    _close(D.kl_divergence(p, q), expected)
    a, b = np.array([0.5, 2.0, 3.0]), np.array([1.0, 1.5, 0.7])
    expected = (special.gammaln(a.sum()) - special.gammaln(a).sum() - special.gammaln(b.sum())
                + special.gammaln(b).sum() + ((a - b) * (special.digamma(a) - special.digamma(a.sum()))).sum())
    _close(D.kl_divergence(D.Dirichlet(_t(a, device)), D.Dirichlet(_t(b, device))), expected)
    ind_p = D.Independent(D.Normal(_t([0.0, 1.0], device), _t([1.0, 2.0], device)), 1)
    ind_q = D.Independent(D.Normal(_t([0.5, 0.0], device), _t([1.5, 1.0], device)), 1)
    parts = D.kl_divergence(D.Normal(_t([0.0, 1.0], device), _t([1.0, 2.0], device)),
                            D.Normal(_t([0.5, 0.0], device), _t([1.5, 1.0], device)))
    _close(D.kl_divergence(ind_p, ind_q), float(parts.sum()))


def test_register_kl_and_missing_pair():
    class MyNormal(D.Normal):
        pass

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0))) == 0.0  # the base pair applies

    @D.register_kl(MyNormal, D.Normal)
    def _kl_mine(p, q):
        return core.tensor(42.0)

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0))) == 42.0
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Exponential(1.0))
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


# -- transforms ----------------------------------------------------------------------------------------

TRANSFORMS = [
    (lambda: D.ExpTransform(), np.exp, [-0.5, 1.2]),
    (lambda: D.AffineTransform(1.5, -2.0), lambda x: 1.5 - 2 * x, [-0.5, 1.2]),
    (lambda: D.SigmoidTransform(), special.expit, [-0.5, 1.2]),
    (lambda: D.TanhTransform(), np.tanh, [-0.5, 1.2]),
    (lambda: D.PowerTransform(2.5), lambda x: x ** 2.5, [0.5, 1.2]),
    (lambda: D.SoftplusTransform(), lambda x: np.log1p(np.exp(x)), [-0.5, 1.2]),
]


@pytest.mark.parametrize("case", range(len(TRANSFORMS)))
def test_transforms(case, device):
    make, fn, x = TRANSFORMS[case]
    t = make()
    xt = _t(x, device)
    y = t(xt)
    _close(y, fn(np.array(x)))
    _close(t.inv(y), x, rtol=1e-6)
    h = 1e-6
    derivative = (fn(np.array(x) + h) - fn(np.array(x) - h)) / (2 * h)
    _close(t.log_abs_det_jacobian(xt, y), np.log(np.abs(derivative)), rtol=1e-5, atol=1e-6)
    _close(t.inv.log_abs_det_jacobian(y, xt), -np.log(np.abs(derivative)), rtol=1e-5, atol=1e-6)


def test_compose_stick_breaking_and_transformed_distribution(device):
    compose = D.ComposeTransform([D.AffineTransform(0.5, 2.0), D.ExpTransform()])
    x = _t([0.1, -0.4], device)
    _close(compose(x), np.exp(0.5 + 2 * np.array([0.1, -0.4])))
    _close(compose.log_abs_det_jacobian(x, compose(x)), np.log(2.0) + 0.5 + 2 * np.array([0.1, -0.4]))
    _close(compose.inv(compose(x)), [0.1, -0.4])
    stick = D.StickBreakingTransform()
    z = _t([0.3, -0.2, 1.0], device)
    simplex = stick(z)
    assert simplex.shape == (4,) and abs(float(simplex.sum()) - 1) < 1e-12
    _close(stick.inv(simplex), [0.3, -0.2, 1.0])
    h, zn = 1e-6, _np(z)
    jac = np.stack([(_np(stick(_t(zn + h * e, device))) - _np(stick(_t(zn - h * e, device))))[:-1] / (2 * h)
                    for e in np.eye(3)], axis=1)
    _close(stick.log_abs_det_jacobian(z, simplex), np.log(abs(np.linalg.det(jac))), rtol=1e-6)
    base = D.Normal(_t([0.0, 1.0], device), _t([1.0, 0.5], device))
    dist = D.TransformedDistribution(base, [D.AffineTransform(1.0, 3.0), D.ExpTransform()])
    value = np.array([2.0, 30.0])
    ref = stats.lognorm(s=3 * np.array([1.0, 0.5]), scale=np.exp(1 + 3 * np.array([0.0, 1.0])))
    _close(dist.log_prob(_t(value, device)), ref.logpdf(value))
    _close(dist.cdf(_t(value, device)), ref.cdf(value))
    _close(dist.icdf(_t([0.2, 0.7], device)), ref.ppf([0.2, 0.7]), rtol=1e-5)
    flipped = D.TransformedDistribution(base, D.AffineTransform(0.0, -1.0))
    _close(flipped.cdf(_t([0.5, 0.5], device)), stats.norm([0.0, -1.0], [1.0, 0.5]).cdf(0.5))
    assert dist.has_rsample and dist.support.check(dist.sample((5,))).all()


# -- constraints and validation ------------------------------------------------------------------------

def test_constraints_check(device):
    c = D.constraints
    v = _t([-1.0, 0.0, 0.5, 1.0, 2.0, math.nan], device)
    assert _np(c.real.check(v)).tolist() == [True] * 5 + [False]
    assert _np(c.positive.check(v)).tolist() == [False, False, True, True, True, False]
    assert _np(c.nonnegative.check(v)).tolist() == [False, True, True, True, True, False]
    assert _np(c.unit_interval.check(v)).tolist() == [False, True, True, True, False, False]
    assert _np(c.boolean.check(v)).tolist() == [False, True, False, True, False, False]
    assert _np(c.integer_interval(0, 1).check(v)).tolist() == [False, True, False, True, False, False]
    assert _np(c.nonnegative_integer.check(v)).tolist() == [False, True, False, True, True, False]
    assert _np(c.simplex.check(_t([[0.2, 0.8], [0.5, 0.6]], device))).tolist() == [True, False]
    assert _np(c.one_hot.check(_t([[0, 1], [1, 1]], device))).tolist() == [True, False]
    assert _np(c.lower_cholesky.check(_t([[[1, 0], [2, 3]], [[1, 1], [0, 1]], [[-1, 0], [0, 1]]], device))).tolist() \
        == [True, False, False]
    assert _np(c.positive_definite.check(_t([[[2, 1], [1, 2]], [[1, 2], [2, 1]]], device))).tolist() == [True, False]
    assert _np(c.independent(c.positive, 1).check(_t([[1, 2], [1, -1]], device))).tolist() == [True, False]
    assert c.real_vector.event_dim == 1 and c.boolean.is_discrete and not c.real.is_discrete
    assert repr(c.positive) == "GreaterThan(lower_bound=0.0)" and c.is_dependent(c.dependent)
    with pytest.raises(ValueError, match="dependent"):
        c.dependent.check(v)


def test_validation_errors():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
                                         r"Normal\(loc: core.Size\(\[2\]\), scale: core.Size\(\[2\]\)\) to satisfy "
                                         r"the constraint GreaterThan\(lower_bound=0.0\), but found invalid values"):
        D.Normal(core.zeros(2), core.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.Bernoulli(probs=core.tensor(0.5), logits=core.tensor(0.0))
    with pytest.raises(ValueError, match="Expected value argument"):
        D.Exponential(1.0).log_prob(core.tensor(-1.0))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        D.Dirichlet(core.ones(3)).log_prob(core.ones(2) / 2)
    with pytest.raises(ValueError, match="Value is not broadcastable with batch_shape"):
        D.Normal(core.zeros(3), core.ones(3)).log_prob(core.zeros(2))
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        D.Uniform(1.0, 0.0)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        D.MultivariateNormal(core.zeros(2))
    assert math.isnan(float(D.Normal(0.0, -1.0, validate_args=False).entropy()))
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
        assert float(D.Exponential(1.0).log_prob(core.tensor(-1.0))) == 1.0
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)


def test_shapes_expand_and_enumerate(device):
    normal = D.Normal(_t([0.0, 1.0], device), _t(1.0, device))
    assert normal.batch_shape == (2,) and normal.rsample((4, 3)).shape == (4, 3, 2)
    expanded = normal.expand((5, 2))
    assert expanded.batch_shape == (5, 2) and expanded.sample().shape == (5, 2)
    _close(expanded.log_prob(_t(0.5, device))[3], stats.norm([0, 1], 1).logpdf(0.5))
    assert D.Normal(0.0, 1.0).batch_shape == () and repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)" \
        or repr(D.Normal(0.0, 1.0)).startswith("Normal(loc: tensor(0.")
    support = D.Bernoulli(_t([0.3, 0.6], device)).enumerate_support()
    assert _np(support).tolist() == [[0, 0], [1, 1]]
    assert D.Binomial(3, _t([0.5], device)).enumerate_support(expand=False).shape == (4, 1)
    gamma = D.Gamma(_t([1.0, 2.0], device), _t(1.0, device)).expand((3, 2))
    assert gamma.batch_shape == (3, 2) and gamma.sample((2,)).shape == (2, 3, 2)
    assert D.Chi2(_t([3.0], device)).expand((2, 1)).df.shape == (2, 1)
    mvn = D.MultivariateNormal(_t([0.0, 0.0], device), scale_tril=core.eye(2, dtype=core.float64, device=device))
    assert mvn.expand((3,)).sample((2,)).shape == (2, 3, 2)
    assert D.LogNormal(0.0, 1.0).expand((3,)).batch_shape == (3,)
    assert D.Independent(D.Normal(core.zeros(3, 2), core.ones(3, 2)), 1).expand((4, 3)).batch_shape == (4, 3)
    assert float(D.Exponential(_t(2.0, device)).perplexity()) == pytest.approx(math.exp(1 - math.log(2.0)))


def test_namespace():
    import core as c

    assert c.distributions is D
    for name in ("Normal", "Bernoulli", "Categorical", "Uniform", "kl_divergence", "register_kl", "ExpTransform",
                 "TransformedDistribution", "Distribution", "ExponentialFamily", "constraints"):
        assert hasattr(D, name)
        obj = getattr(D, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip()


def test_structured_transforms(device):
    x = np.array([[0.5, 1.0], [2.0, -1.0]])
    xt = _t(x, device)
    lower = D.LowerCholeskyTransform()
    expected = np.tril(x, -1) + np.diag(np.exp(np.diag(x)))
    _close(lower(xt), expected)
    _close(lower.inv(lower(xt)), np.tril(x))
    positive = D.PositiveDefiniteTransform()
    _close(positive(xt), expected @ expected.T)
    _close(positive.inv(positive(xt)), np.tril(x))
    cat = D.CatTransform([D.ExpTransform(), D.AffineTransform(0.0, 2.0)], dim=0, lengths=[1, 1])
    _close(cat(xt), np.stack([np.exp(x[0]), 2 * x[1]]))
    _close(cat.inv(cat(xt)), x)
    _close(cat.log_abs_det_jacobian(xt, cat(xt)), np.stack([x[0], np.full(2, np.log(2))]))
    stack = D.StackTransform([D.ExpTransform(), D.AffineTransform(0.0, 2.0)], dim=1)
    _close(stack(xt), np.stack([np.exp(x[:, 0]), 2 * x[:, 1]], 1))
    _close(stack.inv(stack(xt)), x)
    reshape = D.ReshapeTransform((2, 2), (4,))
    assert reshape(xt).shape == (4,) and reshape.inv(reshape(xt)).shape == (2, 2)
    assert reshape.forward_shape((3, 2, 2)) == (3, 4) and reshape.inverse_shape((3, 4)) == (3, 2, 2)
    with pytest.raises(ValueError):
        D.ReshapeTransform((2, 2), (3,))
    independent = D.IndependentTransform(D.ExpTransform(), 1)
    _close(independent.log_abs_det_jacobian(xt, independent(xt)), x.sum(-1))
    assert independent.domain.event_dim == 1
    cdf = D.CumulativeDistributionTransform(D.Normal(_t(0.0, device), _t(1.0, device)))
    v = _t([0.0, 1.0], device)
    _close(cdf(v), stats.norm.cdf([0.0, 1.0]))
    _close(cdf.inv(cdf(v)), [0.0, 1.0], atol=1e-7)
    _close(cdf.log_abs_det_jacobian(v, cdf(v)), stats.norm.logpdf([0.0, 1.0]))


def test_biject_to_and_transform_to(device):
    c = D.constraints
    x = _t(np.random.default_rng(0).normal(size=(3, 3)), device)
    for constraint in (c.real, c.positive, c.nonnegative, c.greater_than(2.0), c.less_than(1.0), c.unit_interval,
                       c.interval(-1.0, 3.0), c.simplex, c.lower_cholesky, c.positive_definite,
                       c.independent(c.positive, 1)):
        for registry in (D.biject_to, D.transform_to):
            transform = registry(constraint)
            y = transform(x)
            assert bool(constraint.check(y).all()), (constraint, registry)
            if registry is D.biject_to and transform.bijective:
                _close(transform.inv(y), _np(x), rtol=1e-6, atol=1e-9)
    assert isinstance(D.biject_to(c.simplex), D.StickBreakingTransform)
    assert isinstance(D.transform_to(c.simplex), D.SoftmaxTransform)
    with pytest.raises(NotImplementedError):
        D.biject_to(c.boolean)
    with pytest.raises(TypeError):
        D.biject_to.register(int, lambda constraint: D.ExpTransform())


def test_von_mises(device):
    loc, kappa = np.array([0.5, -2.0]), np.array([2.0, 0.3])
    dist = D.VonMises(_t(loc, device), _t(kappa, device))
    ref = stats.vonmises(kappa, loc=loc)
    x = np.array([1.0, 3.0])
    _close(dist.log_prob(_t(x, device)), ref.logpdf(x))
    _close(dist.entropy(), ref.entropy())
    _close(dist.mean, loc)
    _close(dist.variance, 1 - special.i1(kappa) / special.i0(kappa))
    assert not dist.has_rsample
    draws = _np(dist.sample((40000,)))
    assert draws.shape == (40000, 2) and draws.min() >= -np.pi and draws.max() < np.pi
    resultant = np.exp(1j * draws).mean(0)
    np.testing.assert_allclose(np.angle(resultant), loc, atol=0.05)
    np.testing.assert_allclose(1 - np.abs(resultant), _np(dist.variance), atol=0.02)
    inputs = (_t(loc, device, requires_grad=True), _t(kappa, device, requires_grad=True))
    assert gradcheck(lambda a, b: D.VonMises(a, b).log_prob(_t(x, device)), inputs)


def test_corr_cholesky_transform(device):
    x = np.random.default_rng(0).normal(size=6)
    t = D.CorrCholeskyTransform()
    y = t(_t(x, device))
    assert y.shape == (4, 4) and bool(D.constraints.corr_cholesky.check(y))
    corr = _np(y) @ _np(y).T
    np.testing.assert_allclose(np.diag(corr), 1.0, rtol=1e-12)
    assert np.all(np.linalg.eigvalsh(corr) > 0)
    _close(t.inv(y), x, rtol=1e-9)
    rows, cols = np.tril_indices(4, -1)

    def free(v):  # the strictly lower entries of y, the coordinates its log-det-Jacobian is taken in
        return _np(t(_t(v, device)))[rows, cols]

    h = 1e-6
    jac = np.stack([(free(x + h * e) - free(x - h * e)) / (2 * h) for e in np.eye(6)], axis=1)
    _close(t.log_abs_det_jacobian(_t(x, device), y), np.log(abs(np.linalg.det(jac))), rtol=1e-6)
    assert t.forward_shape((3, 6)) == (3, 4, 4) and t.inverse_shape((3, 4, 4)) == (3, 6)
    assert isinstance(D.biject_to(D.constraints.corr_cholesky), D.CorrCholeskyTransform)


def test_lkj_cholesky(device):
    eta = np.array([0.7, 2.5])
    dist = D.LKJCholesky(2, _t(eta, device))
    r = np.array([0.3, -0.6])
    factors = np.stack([[[1.0, 0.0], [ri, np.sqrt(1 - ri ** 2)]] for ri in r])
    # for dim 2 the correlation r is 2 * Beta(eta, eta) - 1
    _close(dist.log_prob(_t(factors, device)), stats.beta(eta, eta).logpdf((r + 1) / 2) - np.log(2))
    for dim, concentration in ((3, 1.5), (4, 0.8)):
        draws = _np(D.LKJCholesky(dim, _t(concentration, device)).sample((20000,)))
        assert bool(D.constraints.corr_cholesky.check(core.tensor(draws[:50], device=device)).all())
        corr = draws @ np.swapaxes(draws, -1, -2)
        rows, cols = np.tril_indices(dim, -1)
        # every correlation's marginal is 2 * Beta(a, a) - 1, a = eta - 1 + dim / 2: mean 0, variance 1 / (2a + 1)
        a = concentration - 1 + dim / 2
        np.testing.assert_allclose(corr[:, rows, cols].var(0), 1 / (2 * a + 1), rtol=0.06)
        np.testing.assert_allclose(corr[:, rows, cols].mean(0), 0.0, atol=0.02)
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal to 2"):
        D.LKJCholesky(1)
    inputs = (_t([1.5], device, requires_grad=True),)
    value = _t(factors[:1], device)
    assert gradcheck(lambda c: D.LKJCholesky(2, c).log_prob(value), inputs)


def test_wishart(device):
    scale = np.array([[2.0, 0.5], [0.5, 1.0]])
    x = np.array([[3.0, 1.0], [1.0, 2.0]])
    ref = stats.wishart(4.5, scale)
    for kwargs in ({"covariance_matrix": _t(scale, device)}, {"scale_tril": _t(np.linalg.cholesky(scale), device)},
                   {"precision_matrix": _t(np.linalg.inv(scale), device)}):
        dist = D.Wishart(_t(4.5, device), **kwargs)
        assert dist.event_shape == (2, 2) and dist.batch_shape == ()
        _close(dist.log_prob(_t(x, device)), ref.logpdf(x))
        _close(dist.entropy(), ref.entropy())
        _close(dist.mean, ref.mean())
        _close(dist.variance, ref.var())
        _close(dist.mode, ref.mode())
    draws = _np(dist.sample((40000,)))
    np.testing.assert_allclose(draws.mean(0), ref.mean(), rtol=0.03)
    np.testing.assert_allclose(draws.var(0), ref.var(), rtol=0.1)
    assert bool(dist.support.check(core.tensor(draws[:20], device=device)).all())
    with pytest.raises(ValueError, match="expected to be greater than ndim - 1 = 1"):
        D.Wishart(_t(0.5, device), covariance_matrix=_t(scale, device))
    assert D.Wishart(_t([3.0, 4.0], device), scale_tril=_t(np.eye(2), device)).expand((3, 2)).sample().shape \
        == (3, 2, 2, 2)
    inputs = (_t(4.5, device, requires_grad=True), _t(np.linalg.cholesky(scale), device, requires_grad=True))
    assert gradcheck(lambda df, tril: D.Wishart(df, scale_tril=tril.tril(), validate_args=False).log_prob(
        _t(x, device)), inputs)
