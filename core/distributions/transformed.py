"""Distributions defined by transforming another: TransformedDistribution, LogNormal, RelaxedBernoulli,
RelaxedOneHotCategorical, Pareto, Weibull, InverseGamma, Kumaraswamy, LogisticNormal (``torch.distributions``)."""

from __future__ import annotations

import math

import core

from . import constraints
from ._sampling import EULER_GAMMA, standard_uniform
from .continuous import Exponential, Gamma, Normal, Uniform
from .distribution import Distribution
from .multivariate import Independent
from .transforms import (AffineTransform, ComposeTransform, ExpTransform, PowerTransform, SigmoidTransform,
                         StickBreakingTransform, Transform, _sum_rightmost)
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["TransformedDistribution", "LogNormal", "RelaxedBernoulli", "RelaxedOneHotCategorical", "Pareto", "Weibull",
           "InverseGamma", "Kumaraswamy", "LogisticNormal"]


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` in order (``torch.distributions.TransformedDistribution``):
    ``log_prob`` subtracts each transform's log-abs-det-Jacobian."""

    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least {transform.domain.event_dim}, "
                             f"but got {base_shape}.")
        forward_shape = transform.forward_shape(base_shape)
        event_dim = transform.codomain.event_dim + max(base_event_dim - transform.domain.event_dim, 0)
        self.base_dist = base_distribution
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = core.Size(tuple(batch_shape))
        shape = batch_shape + self.event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch_shape = shape[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch_shape)
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def sample(self, sample_shape=()):
        with core.no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                 event_dim - transform.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for transform in self.transforms[::-1]:
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value


class LogNormal(TransformedDistribution):
    """``exp(Normal(loc, scale))`` (``torch.distributions.LogNormal``)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(LogNormal, _instance))

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _RelaxedBase(Distribution):
    """The temperature and ``probs``/``logits`` of the relaxed (Concrete) distributions' base."""

    has_rsample = True

    def __init__(self, temperature, probs, logits, batch_shape, event_shape, validate_args, normalize: bool):
        from .discrete import _set_probs_or_logits

        self.temperature = temperature
        self._param = _set_probs_or_logits(self, probs, logits, normalize=normalize)
        self._binary = not normalize
        super().__init__(batch_shape(self._param), event_shape(self._param), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = ("probs",) if "probs" in self.__dict__ else ("logits",)
        new = self._expanded(type(self), batch_shape, _instance, names)
        new.temperature, new._binary, new._param = self.temperature, self._binary, getattr(new, names[0])
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)


class LogitRelaxedBernoulli(_RelaxedBase):
    """The logit of a relaxed Bernoulli sample (``torch.distributions.relaxed_bernoulli.LogitRelaxedBernoulli``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        if probs is not None:
            probs = broadcast_all(probs)[0]
        super().__init__(temperature, probs, logits, lambda p: p.shape, lambda p: (), validate_args, False)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(standard_uniform(shape, probs))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        temperature = core.as_tensor(self.temperature, dtype=diff.dtype, device=diff.device)
        return temperature.log() + diff - 2 * core.nn.functional.softplus(diff)


class RelaxedBernoulli(TransformedDistribution):
    """The relaxed (Concrete) Bernoulli distribution of ``temperature`` on ``(0, 1)``: reparameterizable
    (``torch.distributions.RelaxedBernoulli``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(RelaxedBernoulli, _instance))

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class ExpRelaxedCategorical(_RelaxedBase):
    """The log of a relaxed one-hot categorical sample
    (``torch.distributions.relaxed_categorical.ExpRelaxedCategorical``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(temperature, probs, logits, lambda p: p.shape[:-1], lambda p: p.shape[-1:], validate_args,
                         True)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(standard_uniform(shape, self.logits))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._event_shape[0]
        if self._validate_args:
            self._validate_sample(value)
        logits, value = core.broadcast_tensors(self.logits, value)
        temperature = core.as_tensor(self.temperature, dtype=value.dtype, device=value.device)
        log_scale = core.lgamma(core.full((), float(k), dtype=value.dtype, device=value.device)) \
            - temperature.log().mul(-(k - 1))
        score = logits - value.mul(temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """The relaxed (Concrete / Gumbel-softmax) one-hot categorical of ``temperature`` on the simplex
    (``torch.distributions.RelaxedOneHotCategorical``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(RelaxedOneHotCategorical, _instance))

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


def _where_finite(condition, value):
    """``value`` where ``condition`` holds, infinity elsewhere."""
    return core.where(condition, value, core.full_like(value, math.inf))


class Pareto(TransformedDistribution):
    """The Pareto type I distribution of ``scale`` and shape ``alpha``: ``scale * exp(Exponential(alpha))``
    (``torch.distributions.Pareto``)."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base, [ExpTransform(), AffineTransform(loc=0, scale=self.scale)], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, self._get_checked_instance(Pareto, _instance))
        new.scale, new.alpha = self.scale.expand(batch_shape), self.alpha.expand(batch_shape)
        new.transforms = [ExpTransform(), AffineTransform(loc=0, scale=new.scale)]
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return _where_finite(self.alpha > 1, a * self.scale / (a - 1).clamp(min=1e-30))

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return _where_finite(self.alpha > 2, self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2).clamp(min=1e-30)))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution of ``scale`` and ``concentration``
    (``torch.distributions.Weibull``)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(core.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        return Weibull.__init__(new, self.scale.expand(batch_shape), self.concentration.expand(batch_shape),
                                validate_args=False) or new

    @property
    def mean(self):
        return self.scale * core.exp(core.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k).clamp(min=0) ** k.reciprocal()

    @property
    def variance(self):
        return self.scale.pow(2) * (core.exp(core.lgamma(1 + 2 * self.concentration_reciprocal))
                                    - core.exp(2 * core.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self):
        return (EULER_GAMMA * (1 - self.concentration_reciprocal) + core.log(self.scale * self.concentration_reciprocal)
                + 1)


class InverseGamma(TransformedDistribution):
    """The inverse gamma distribution: ``1 / Gamma(concentration, rate)`` (``torch.distributions.InverseGamma``)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-1.0), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(InverseGamma, _instance))

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        c = self.concentration
        return _where_finite(c > 1, self.rate / (c - 1).clamp(min=1e-30))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        return _where_finite(c > 2, self.rate.pow(2) / ((c - 1).pow(2) * (c - 2).clamp(min=1e-30)))

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()


def _kumaraswamy_moment(a, b, n):
    arg1 = 1 + n / a
    return b * core.exp(core.lgamma(arg1) + core.lgamma(b) - core.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on ``(0, 1)`` of density ``a b x^(a-1) (1 - x^a)^(b-1)``, ``a`` =
    ``concentration1``, ``b`` = ``concentration0`` (``torch.distributions.Kumaraswamy``)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(core.zeros_like(self.concentration1), core.ones_like(self.concentration1),
                       validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        return Kumaraswamy.__init__(new, self.concentration1.expand(batch_shape),
                                    self.concentration0.expand(batch_shape), validate_args=False) or new

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = a.reciprocal() * ((a - 1).log() - (a * b - 1).log())
        return core.where((a < 1) | (b < 1), core.full_like(a, math.nan), log_mode.exp())

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return _kumaraswamy_moment(a, b, 2) - _kumaraswamy_moment(a, b, 1).pow(2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = core.digamma(self.concentration0 + 1) + EULER_GAMMA
        return t0 + t1 * h0 - core.log(self.concentration1) - core.log(self.concentration0)


class LogisticNormal(TransformedDistribution):
    """The logistic-normal distribution on the simplex: ``StickBreakingTransform`` of ``Normal(loc, scale)``
    (``torch.distributions.LogisticNormal``)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(Independent(base, 1), StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(LogisticNormal, _instance))

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
