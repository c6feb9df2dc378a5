"""Discrete families: Bernoulli, Categorical, OneHotCategorical(StraightThrough), Poisson, Binomial, Geometric,
Multinomial, NegativeBinomial (``torch.distributions``)."""

from __future__ import annotations

import math

import core

from . import constraints
from ._sampling import standard_uniform
from .distribution import Distribution, ExponentialFamily
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson", "Binomial",
           "Geometric", "Multinomial", "NegativeBinomial"]


def _set_probs_or_logits(dist, probs, logits, normalize: bool) -> core.Tensor:
    """Store exactly one of ``probs`` / ``logits`` on ``dist`` (normalized over the last dim when ``normalize``);
    the other follows lazily. Returns the stored parameter."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        if normalize:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            probs = probs / probs.sum(-1, keepdim=True)
        dist.probs = probs if normalize else broadcast_all(probs)[0]
        return dist.probs
    if normalize:
        if logits.dim() < 1:
            raise ValueError("`logits` parameter must be at least one-dimensional.")
        logits = logits - logits.logsumexp(dim=-1, keepdim=True)
    dist.logits = logits if normalize else broadcast_all(logits)[0]
    return dist.logits


def _bce_with_logits(logits, target):
    return core.nn.functional.binary_cross_entropy_with_logits(logits, target, reduction="none")


class _BinaryParams:
    """``probs`` and ``logits`` of a binary event, each computed from the other on first use."""

    @lazy_property
    def logits(self):
        """The log-odds of success."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """The probability of success."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape


class Bernoulli(_BinaryParams, ExponentialFamily):
    """The Bernoulli distribution of success probability ``probs`` or log-odds ``logits``
    (``torch.distributions.Bernoulli``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._param = _set_probs_or_logits(self, probs, logits, normalize=False)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = ("probs",) if "probs" in self.__dict__ else ("logits",)
        new = self._expanded(Bernoulli, batch_shape, _instance, names)
        new._param = getattr(new, names[0])
        return new

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return core.where(self.probs == 0.5, core.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        with core.no_grad():
            return core.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True):
        values = core.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    @property
    def _natural_params(self):
        return (core.logit(self.probs),)

    def _log_normalizer(self, x):
        return core.log1p(core.exp(x))


class Categorical(Distribution):
    """The categorical distribution over ``{0, ..., K - 1}`` of (unnormalized) ``probs`` or ``logits`` along the
    last dim (``torch.distributions.Categorical``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._param = _set_probs_or_logits(self, probs, logits, normalize=True)
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = ("probs",) if "probs" in self.__dict__ else ("logits",)
        new = self._expanded(Categorical, batch_shape, _instance, names)
        new._param, new._num_events = getattr(new, names[0]), self._num_events
        return new

    @lazy_property
    def logits(self):
        """The normalized log-probabilities."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        """The normalized probabilities."""
        return logits_to_probs(self.logits)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return core.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        sample_shape = core.Size(tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,))
        with core.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            n = max(sample_shape.numel(), 1)
            samples_2d = core.multinomial(probs_2d, n, True).T
            return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = core.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        min_real = core.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True):
        values = core.arange(self._num_events, dtype=core.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    """The categorical distribution with samples one-hot vectors of size ``K``
    (``torch.distributions.OneHotCategorical``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return core.nn.functional.one_hot(self.probs.argmax(-1), self.probs.shape[-1]).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        indices = self._categorical.sample(sample_shape)
        return core.nn.functional.one_hot(indices, self._event_shape[0]).to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True):
        n = self._event_shape[0]
        values = core.eye(n, dtype=self._categorical._param.dtype, device=self._categorical._param.device)
        values = values.reshape((n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand((n,) + tuple(self._batch_shape) + (n,)) if expand else values


class Poisson(ExponentialFamily):
    """The Poisson distribution of rate ``rate`` (``torch.distributions.Poisson``)."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        with core.no_grad():
            return core.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return core.xlogy(value, rate) - rate - core.lgamma(value + 1)

    @property
    def _natural_params(self):
        return (core.log(self.rate),)

    def _log_normalizer(self, x):
        return core.exp(x)


def _set_count_and_param(dist, total_count, probs, logits) -> core.Tensor:
    """Store ``total_count`` and exactly one of ``probs`` / ``logits``, broadcast together, on ``dist``; returns the
    stored parameter."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    name = "probs" if probs is not None else "logits"
    count, param = broadcast_all(total_count, probs if probs is not None else logits)
    dist.total_count = count.type_as(param)
    setattr(dist, name, param)
    return param


def _clamp_by_zero(x):
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_BinaryParams, Distribution):
    """The binomial distribution of ``total_count`` trials of success probability ``probs`` (or log-odds
    ``logits``) (``torch.distributions.Binomial``)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self._param = _set_count_and_param(self, total_count, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = ("total_count", "probs" if "probs" in self.__dict__ else "logits")
        new = self._expanded(Binomial, batch_shape, _instance, names)
        new._param = getattr(new, names[1])
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with core.no_grad():
            return core.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_factorial_n = core.lgamma(n + 1)
        log_factorial_k = core.lgamma(value + 1)
        log_factorial_nmk = core.lgamma(n - value + 1)
        normalize_term = n * _clamp_by_zero(self.logits) + n * core.log1p(core.exp(-self.logits.abs())) \
            - log_factorial_n
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(core.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True):
        total_count = int(self.total_count.max())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = core.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Geometric(_BinaryParams, Distribution):
    """The geometric distribution: the number of failures before the first success of Bernoulli trials of
    probability ``probs`` (``torch.distributions.Geometric``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._param = _set_probs_or_logits(self, probs, logits, normalize=False)
        super().__init__(self._param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to satisfy the constraint "
                             f"Interval(lower_bound=0.0, upper_bound=1.0), but found invalid values:\n{self.probs}")

    def expand(self, batch_shape, _instance=None):
        names = ("probs",) if "probs" in self.__dict__ else ("logits",)
        new = self._expanded(Geometric, batch_shape, _instance, names)
        new._param = getattr(new, names[0])
        return new

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return core.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        with core.no_grad():
            u = standard_uniform(self._extended_shape(sample_shape), self.probs, low=core.finfo(self.probs.dtype).tiny)
            return (core.log(u) / core.log1p(-self.probs)).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = core.where((probs == 1) & (value == 0), core.zeros_like(probs), probs)
        return value * core.log1p(-probs) + core.log(self.probs)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs) / self.probs


class Multinomial(Distribution):
    """The multinomial distribution of ``total_count`` draws from the categories of ``probs`` / ``logits``
    (``torch.distributions.Multinomial``): samples are count vectors."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial.expand(tuple(batch_shape) + tuple(self._event_shape))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = core.Size(tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,))
        draws = self._categorical.sample(core.Size((self.total_count,)) + sample_shape)
        counts = core.nn.functional.one_hot(draws, self._event_shape[0]).to(self.probs.dtype).sum(0)
        return counts.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = core.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        log_factorial_n = core.lgamma(value.sum(-1) + 1)
        log_factorial_xs = core.lgamma(value + 1).sum(-1)
        logits = core.where((value == 0) & (logits == -math.inf), core.zeros_like(logits), logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self):
        n = core.tensor(float(self.total_count), dtype=self.probs.dtype, device=self.probs.device)
        support = self._binomial.enumerate_support()
        binomial_probs = core.exp(self._binomial.log_prob(support))
        return (-core.lgamma(n + 1) - (self.logits * self.probs).sum(-1) * n
                + (binomial_probs * core.lgamma(support + 1)).sum([0, -1]))


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients to ``probs`` straight through the one-hot sample
    (``torch.distributions.OneHotCategoricalStraightThrough``)."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


class NegativeBinomial(_BinaryParams, Distribution):
    """The negative binomial distribution: the number of successes of probability ``probs`` before
    ``total_count`` failures (``torch.distributions.NegativeBinomial``)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        self._param = _set_count_and_param(self, total_count, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = ("total_count", "probs" if "probs" in self.__dict__ else "logits")
        new = self._expanded(NegativeBinomial, batch_shape, _instance, names)
        new._param = getattr(new, names[1])
        return new

    @property
    def mean(self):
        return self.total_count * core.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / core.sigmoid(-self.logits)

    def sample(self, sample_shape=()):
        from .continuous import Gamma

        with core.no_grad():
            rate = Gamma(self.total_count, core.exp(-self.logits), validate_args=False).sample(sample_shape)
            return core.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logsigmoid = core.nn.functional.logsigmoid
        log_unnormalized = self.total_count * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = (-core.lgamma(self.total_count + value) + core.lgamma(1.0 + value)
                             + core.lgamma(self.total_count))
        log_normalization = core.where(self.total_count + value == 0.0, core.zeros_like(log_normalization),
                                       log_normalization)
        return log_unnormalized - log_normalization
