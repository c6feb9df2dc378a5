"""Continuous univariate families: Normal, Uniform, Exponential, Laplace, Gamma, Chi2, Beta, StudentT, Cauchy,
Gumbel, HalfNormal, HalfCauchy, FisherSnedecor, GeneralizedPareto, ContinuousBernoulli and the multivariate
Dirichlet, and the circular VonMises (``torch.distributions``)."""

from __future__ import annotations

import math
import numbers

import core

from . import constraints
from ._sampling import EULER_GAMMA, LOG_SQRT_2PI, standard_gamma, standard_normal, standard_uniform
from .distribution import Distribution, ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Normal", "Uniform", "Exponential", "Laplace", "Gamma", "Chi2", "Beta", "Dirichlet", "StudentT", "Cauchy",
           "Gumbel", "HalfNormal", "HalfCauchy", "FisherSnedecor", "GeneralizedPareto", "ContinuousBernoulli",
           "VonMises"]


def _nan(like):
    return core.full_like(like, math.nan)


class Normal(ExponentialFamily):
    """The normal distribution of mean ``loc`` and standard deviation ``scale`` (``torch.distributions.Normal``)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Normal, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=()):
        return self.loc + standard_normal(self._extended_shape(sample_shape), self.loc) * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.variance) - core.log(self.scale) - LOG_SQRT_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + core.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * core.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + LOG_SQRT_2PI + core.log(self.scale)

    @property
    def _natural_params(self):
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * core.log(-math.pi / y)


class Uniform(Distribution):
    """The continuous uniform distribution on ``[low, high)`` (``torch.distributions.Uniform``)."""

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args and not bool((self.low < self.high).all()):
            raise ValueError("Uniform is not defined when low>= high")

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return _nan(self.high)

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        return self.low + standard_uniform(self._extended_shape(sample_shape), self.low) * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value).to(self.low.dtype) * (self.high > value).to(self.low.dtype)
        return core.log(inside) - core.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return core.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """The exponential distribution of rate ``rate`` (``torch.distributions.Exponential``)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return core.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return core.empty(shape, dtype=self.rate.dtype, device=self.rate.device).exponential_() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return core.log(self.rate) - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - core.exp(-self.rate * value)

    def icdf(self, value):
        return -core.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - core.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -core.log(-x)


class Laplace(Distribution):
    """The Laplace distribution of location ``loc`` and scale ``scale`` (``torch.distributions.Laplace``)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Laplace, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()):
        eps = core.finfo(self.loc.dtype).eps
        u = standard_uniform(self._extended_shape(sample_shape), self.loc, low=eps - 1)
        return self.loc - self.scale * u.sign() * core.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -core.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * core.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * core.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + core.log(2 * self.scale)


class Gamma(ExponentialFamily):
    """The gamma distribution of shape ``concentration`` and rate ``rate`` (``torch.distributions.Gamma``);
    ``rsample`` differentiates through the implicit reparameterization."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=core.finfo(value.dtype).tiny)

    def log_prob(self, value):
        value = core.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (core.xlogy(self.concentration, self.rate) + core.xlogy(self.concentration - 1, value)
                - self.rate * value - core.lgamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return core.special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - core.log(self.rate) + core.lgamma(c) + (1.0 - c) * core.digamma(c)

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return core.lgamma(x + 1) + (x + 1) * core.log(-y.reciprocal())


class Chi2(Gamma):
    """The chi-squared distribution of ``df`` degrees of freedom, ``Gamma(df / 2, 1 / 2)``
    (``torch.distributions.Chi2``)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(Chi2, _instance))

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution of ``concentration`` over the simplex of its last dim
    (``torch.distributions.Dirichlet``)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape=()):
        gammas = standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        return (gammas / gammas.sum(-1, keepdim=True)).clamp(min=core.finfo(gammas.dtype).tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return core.xlogy(c - 1.0, value).sum(-1) + core.lgamma(c.sum(-1)) - core.lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        c = (self.concentration - 1).clamp(min=0.0)
        mode = c / c.sum(-1, keepdim=True)
        below = (self.concentration < 1).all(-1, keepdim=True)  # no interior mode: PyTorch picks the first vertex
        first = (core.arange(mode.shape[-1], device=mode.device) == 0).to(mode.dtype)
        return core.where(below, first, mode)

    @property
    def variance(self):
        c0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (c0 - self.concentration) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return (core.lgamma(c).sum(-1) - core.lgamma(c0) - (k - c0) * core.digamma(c0)
                - ((c - 1.0) * core.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - core.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """The beta distribution of ``concentration1`` (alpha) and ``concentration0`` (beta) on ``[0, 1]``
    (``torch.distributions.Beta``)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(core.stack([self.concentration1, self.concentration0], -1),
                                    validate_args=validate_args)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Beta, batch_shape, _instance, ("concentration1", "concentration0"))
        new._dirichlet = self._dirichlet.expand(batch_shape)
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (core.xlogy(a - 1, value) + core.xlogy(b - 1, 1 - value)
                - (core.lgamma(a) + core.lgamma(b) - core.lgamma(a + b)))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        return core.lgamma(x) + core.lgamma(y) - core.lgamma(x + y)


class StudentT(Distribution):
    """Student's t-distribution of ``df`` degrees of freedom, location ``loc`` and scale ``scale``
    (``torch.distributions.StudentT``)."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return core.where(self.df > 1, self.loc, _nan(self.loc))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2).clamp(min=1e-30)
        return core.where(df > 2, finite, core.where(df > 1, core.full_like(df, math.inf), _nan(df)))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_normal(shape, self.df)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * core.rsqrt(z / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (core.log(self.scale) + 0.5 * core.log(self.df) + 0.5 * math.log(math.pi)
             + core.lgamma(0.5 * self.df) - core.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * core.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        df = self.df
        lbeta = core.lgamma(0.5 * df) + math.lgamma(0.5) - core.lgamma(0.5 * (df + 1))
        return (core.log(self.scale) + 0.5 * (df + 1) * (core.digamma(0.5 * (df + 1)) - core.digamma(0.5 * df))
                + 0.5 * core.log(df) + lbeta)


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution of median ``loc`` and half width ``scale``
    (``torch.distributions.Cauchy``)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return _nan(self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return core.full_like(self.loc, math.inf)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps = core.empty(shape, dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - core.log(self.scale) - core.log1p(((value - self.loc) / self.scale) ** 2)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return core.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return core.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + core.log(self.scale)


class Gumbel(Distribution):
    """The Gumbel (type I extreme value) distribution of location ``loc`` and scale ``scale``
    (``torch.distributions.Gumbel``)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Gumbel, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        finfo = core.finfo(self.loc.dtype)
        u = standard_uniform(self._extended_shape(sample_shape), self.loc, low=finfo.tiny).clamp(max=1 - finfo.eps)
        return self.loc - self.scale * core.log(-core.log(u))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -(z + core.exp(-z)) - core.log(self.scale)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return core.exp(-core.exp(-(value - self.loc) / self.scale))

    def icdf(self, value):
        return self.loc - self.scale * core.log(-core.log(value))

    def entropy(self):
        return core.log(self.scale) + (1 + EULER_GAMMA)


class _Folded(Distribution):
    """A symmetric distribution folded at zero: ``|X|`` for ``X`` of ``base`` centred at 0."""

    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, base_cls, validate_args=None):
        self.base_dist = base_cls(0.0 if isinstance(scale, numbers.Number) else core.zeros_like(scale), scale,
                                  validate_args=False)
        self.scale = self.base_dist.scale
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(type(self), batch_shape, _instance, ("scale",))
        new.base_dist = self.base_dist.expand(batch_shape)
        return new

    @property
    def mode(self):
        return core.zeros_like(self.scale)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return core.where(value >= 0, log_prob, core.full_like(log_prob, -math.inf))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """The half-normal distribution ``|Normal(0, scale)|`` (``torch.distributions.HalfNormal``)."""

    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        super().__init__(scale, Normal, validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """The half-Cauchy distribution ``|Cauchy(0, scale)|`` (``torch.distributions.HalfCauchy``)."""

    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        super().__init__(scale, Cauchy, validate_args=validate_args)

    @property
    def mean(self):
        return core.full_like(self.scale, math.inf)

    @property
    def variance(self):
        return core.full_like(self.scale, math.inf)


class FisherSnedecor(Distribution):
    """The F-distribution of ``df1`` and ``df2`` degrees of freedom (``torch.distributions.FisherSnedecor``)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1, new._gamma2 = self._gamma1.expand(batch_shape), self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        df2 = self.df2.clamp(min=2.5)
        return core.where(self.df2 > 2, df2 / (df2 - 2), _nan(df2))

    @property
    def mode(self):
        df1 = self.df1.clamp(min=2.5)
        return core.where(self.df1 > 2, (df1 - 2) / df1 * self.df2 / (self.df2 + 2), _nan(df1))

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2.clamp(min=4.5)
        finite = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return core.where(self.df2 > 4, finite, _nan(df2))

    def rsample(self, sample_shape=()):
        tiny = core.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape)
        x2 = self._gamma2.rsample(sample_shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * core.log(value)
        t3 = (ct1 + ct2) * core.log1p(ct3 * value)
        return t1 + t2 - t3


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution of ``loc``, ``scale`` and shape ``concentration``
    (``torch.distributions.GeneralizedPareto``); the exponential distribution at ``concentration == 0``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = core.where(self.concentration < 0, self.loc - self.scale / self.concentration.clamp(max=-1e-300),
                           core.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)

    def _nonzero(self):
        c = self.concentration
        return core.where(c == 0, core.ones_like(c), c)

    def rsample(self, sample_shape=()):
        u = standard_uniform(self._extended_shape(sample_shape), self.loc)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        c = self._nonzero()
        inside = (z >= 0) & ((self.concentration >= 0) | (c * z > -1))
        general = -(1 / c + 1) * core.log1p(c * z.clamp(min=0))
        log_prob = core.where(self.concentration == 0, -z, general) - core.log(self.scale)
        return core.where(inside, log_prob, core.full_like(log_prob, -math.inf))

    def cdf(self, value):
        z = ((value - self.loc) / self.scale).clamp(min=0)
        c = self._nonzero()
        general = 1 - core.exp(-core.log1p((c * z).clamp(min=-1)) / c)
        return core.where(self.concentration == 0, -core.expm1(-z), general).clamp(min=0, max=1)

    def icdf(self, value):
        c = self._nonzero()
        log1m = core.log1p(-value)
        general = core.expm1(-c * log1m) / c
        return self.loc + self.scale * core.where(self.concentration == 0, -log1m, general)

    @property
    def mean(self):
        finite = self.concentration < 1
        c = core.where(finite, self.concentration, core.zeros_like(self.concentration))
        return core.where(finite, self.loc + self.scale / (1 - c), core.full_like(c, math.inf))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.concentration < 0.5
        c = core.where(finite, self.concentration, core.zeros_like(self.concentration))
        return core.where(finite, self.scale.pow(2) / ((1 - c).pow(2) * (1 - 2 * c)), core.full_like(c, math.inf))

    def entropy(self):
        return core.log(self.scale) + self.concentration + 1


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on ``[0, 1]`` of density ``C(p) p^x (1 - p)^(1 - x)``
    (``torch.distributions.ContinuousBernoulli``); near ``p = 0.5`` (inside ``lims``) Taylor expansions keep it
    stable."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        from .discrete import _set_probs_or_logits

        self._param = _set_probs_or_logits(self, probs, logits, normalize=False)
        if probs is not None:
            self.probs = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = ("probs",) if "probs" in self.__dict__ else ("logits",)
        new = self._expanded(ContinuousBernoulli, batch_shape, _instance, names)
        new._param, new._lims = getattr(new, names[0]), self._lims
        return new

    @lazy_property
    def logits(self):
        """The log-odds of the parameter."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """The parameter ``p`` in ``(0, 1)``."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return core.where(self._outside_unstable_region(), self.probs, core.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        below = core.where(cut <= 0.5, cut, core.zeros_like(cut))
        above = core.where(cut >= 0.5, cut, core.ones_like(cut))
        log_norm = (core.log((core.log1p(-cut) - core.log(cut)).abs())
                    - core.where(cut <= 0.5, core.log1p(-2.0 * below), core.log(2.0 * above - 1.0)))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return core.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (core.log1p(-cut) - core.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return core.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / (core.log1p(-cut) - core.log(cut)).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return core.where(self._outside_unstable_region(), variances, taylor)

    def rsample(self, sample_shape=()):
        return self.icdf(standard_uniform(self._extended_shape(sample_shape), self.probs))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = core.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = core.where(self._outside_unstable_region(), cdfs, value)
        return core.where(value <= 0.0, core.zeros_like(unbounded),
                          core.where(value >= 1.0, core.ones_like(unbounded), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        general = ((core.log1p(-cut + value * (2.0 * cut - 1.0)) - core.log1p(-cut))
                   / (core.log(cut) - core.log1p(-cut)))
        return core.where(self._outside_unstable_region(), general, value)

    def entropy(self):
        log_probs0 = core.log1p(-self.probs)
        log_probs1 = core.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        out_unst_reg = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = core.where(out_unst_reg, x, core.full_like(x, self._lims[0] - 0.5))
        log_norm = core.log(core.expm1(cut).abs()) - core.log(cut.abs())
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return core.where(out_unst_reg, log_norm, taylor)


def _von_mises_draw(loc, concentration, shape):
    """Best and Fisher's rejection sampler of the von Mises distribution, all elements at once in float64."""
    k = concentration.detach().to(core.float64).expand(shape).clamp(min=1e-8)
    tau = 1 + core.sqrt(1 + 4 * k * k)
    rho = (tau - core.sqrt(2 * tau)) / (2 * k)
    r = (1 + rho * rho) / (2 * rho)
    result = core.zeros(tuple(shape), dtype=core.float64, device=k.device)
    pending = core.ones(tuple(shape), dtype=core.bool, device=k.device)
    while bool(pending.any()):
        u1, u2, u3 = (standard_uniform(shape, k, low=1e-300) for _ in range(3))
        z = core.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = k * (r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        angle = (u3 - 0.5).sign() * core.acos(f.clamp(min=-1, max=1))
        result = core.where(pending & accept, angle, result)
        pending = pending & ~accept
    centred = result + loc.detach().to(core.float64) + math.pi
    return (centred - 2 * math.pi * (centred / (2 * math.pi)).floor() - math.pi).to(loc.dtype)


class VonMises(Distribution):
    """The von Mises (circular normal) distribution of mean angle ``loc`` and ``concentration`` on
    ``[-pi, pi)`` (``torch.distributions.VonMises``)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        log_i0 = core.log(core.special.i0e(k)) + k
        return k * core.cos(value - self.loc) - math.log(2 * math.pi) - log_i0

    def sample(self, sample_shape=()):
        with core.no_grad():
            return _von_mises_draw(self.loc, self.concentration, self._extended_shape(sample_shape))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        k = self.concentration
        return 1 - core.special.i1e(k) / core.special.i0e(k)

    def entropy(self):
        k = self.concentration
        i0e, i1e = core.special.i0e(k), core.special.i1e(k)
        return -k * i1e / i0e + core.log(2 * math.pi * i0e) + k
