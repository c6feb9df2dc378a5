"""Distributions over vectors and batches reinterpreted as events: Independent, MultivariateNormal,
LowRankMultivariateNormal, MixtureSameFamily, LKJCholesky, Wishart (``torch.distributions``)."""

from __future__ import annotations

import math

import core

from . import constraints
from ._sampling import standard_normal
from .continuous import Beta, Chi2
from .discrete import Categorical
from .distribution import Distribution
from .transforms import _sum_rightmost
from .utils import broadcast_all, lazy_property

__all__ = ["Independent", "MultivariateNormal", "LowRankMultivariateNormal", "MixtureSameFamily", "LKJCholesky",
           "Wishart"]


class Independent(Distribution):
    """``base_distribution`` with its ``reinterpreted_batch_ndims`` rightmost batch dims made event dims
    (``torch.distributions.Independent``): ``log_prob`` sums over them."""

    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims: int, validate_args=None):
        shape = base_distribution.batch_shape + base_distribution.event_shape
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}")
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = core.Size(tuple(batch_shape))
        new.base_dist = self.base_dist.expand(batch_shape + self.event_shape[:self.reinterpreted_batch_ndims])
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"


def _batch_mv(matrix, vector):
    """``matrix @ vector`` batched: ``(..., n, m) x (..., m) -> (..., n)``."""
    return core.matmul(matrix, vector.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(scale_tril, diff):
    """``|| scale_tril^-1 diff ||^2`` over the last dim, batched."""
    shape = core.broadcast_shapes(scale_tril.shape[:-2], diff.shape[:-1])
    tril = scale_tril.expand(shape + scale_tril.shape[-2:])
    solved = core.linalg.solve_triangular(tril, diff.expand(shape + diff.shape[-1:]).unsqueeze(-1), upper=False)
    return solved.squeeze(-1).pow(2).sum(-1)


def _half_log_det(scale_tril):
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class _ScaleMatrixParams:
    """One of ``scale_tril``, ``covariance_matrix`` or ``precision_matrix`` stored (expanded to the batch shape);
    the other two, and the unbroadcasted Cholesky factor, follow from it."""

    def _set_scale_matrix(self, batch_shape, scale_tril, covariance_matrix, precision_matrix) -> None:
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(batch_shape + (-1, -1))
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(batch_shape + (-1, -1))
            self._unbroadcasted_scale_tril = core.linalg.cholesky(covariance_matrix)
        else:
            self.precision_matrix = precision_matrix.expand(batch_shape + (-1, -1))
            self._unbroadcasted_scale_tril = core.linalg.cholesky(core.linalg.inv(precision_matrix))

    def _expand_scale_matrix(self, new, batch_shape) -> None:
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        shape = core.Size(tuple(batch_shape)) + self._unbroadcasted_scale_tril.shape[-2:]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(shape))

    def _full(self, matrix):
        return matrix.expand(self._batch_shape + matrix.shape[-2:])

    @lazy_property
    def scale_tril(self):
        """The lower Cholesky factor of the covariance (scale) matrix."""
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        """The covariance (scale) matrix ``L L^T``."""
        return self._full(core.matmul(self._unbroadcasted_scale_tril, self._unbroadcasted_scale_tril.mT))

    @lazy_property
    def precision_matrix(self):
        """The inverse of the covariance (scale) matrix."""
        return self._full(core.cholesky_inverse(self._unbroadcasted_scale_tril))


class MultivariateNormal(_ScaleMatrixParams, Distribution):
    """The multivariate normal distribution of mean ``loc`` and one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (``torch.distributions.MultivariateNormal``)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        matrix = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        if matrix.dim() < 2:
            raise ValueError("scale_tril, covariance_matrix or precision_matrix matrix must be at least "
                             "two-dimensional, with optional leading batch dimensions")
        batch_shape = core.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        self._set_scale_matrix(batch_shape, scale_tril, covariance_matrix, precision_matrix)
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = core.Size(tuple(batch_shape))
        new.loc = self.loc.expand(batch_shape + self.event_shape)
        self._expand_scale_matrix(new, batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        eps = standard_normal(self._extended_shape(sample_shape), self.loc)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self):
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h.expand(self._batch_shape) if len(self._batch_shape) else h


class LowRankMultivariateNormal(MultivariateNormal):
    """The multivariate normal of covariance ``cov_factor @ cov_factor.T + diag(cov_diag)``
    (``torch.distributions.LowRankMultivariateNormal``); computed through the dense Cholesky factor."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if cov_diag.shape[-1:] != (n,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {loc.shape[-1:]}")
        self.cov_factor, self.cov_diag = cov_factor, cov_diag
        covariance = core.matmul(cov_factor, cov_factor.mT) + core.diag_embed(cov_diag)
        super().__init__(loc, covariance_matrix=covariance, validate_args=False)
        self._validate_args = Distribution._validate_args if validate_args is None else validate_args
        if self._validate_args:
            Distribution.__init__(self, self._batch_shape, self._event_shape, validate_args=True)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, self._get_checked_instance(LowRankMultivariateNormal, _instance))
        new.cov_factor = self.cov_factor.expand(core.Size(tuple(batch_shape)) + self.cov_factor.shape[-2:])
        new.cov_diag = self.cov_diag.expand(core.Size(tuple(batch_shape)) + self._event_shape)
        return new

    @property
    def variance(self):
        return (self.cov_factor.pow(2).sum(-1) + self.cov_diag).expand(self._batch_shape + self._event_shape)


class MixtureSameFamily(Distribution):
    """A mixture of the components of ``component_distribution`` (its rightmost batch dim) weighted by the
    Categorical ``mixture_distribution`` (``torch.distributions.MixtureSameFamily``)."""

    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mdbs, cdbs = mixture_distribution.batch_shape, component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                                 f"`component_distribution.batch_shape`({cdbs})")
        km, kc = mixture_distribution.logits.shape[-1], component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = core.Size(tuple(batch_shape))
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component, new._event_ndims = self._num_component, self._event_ndims
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _pad_mixture(self, probs):
        return probs.reshape(probs.shape + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        probs = self._pad_mixture(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(dim)
        var_cond_mean = (probs * (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)).sum(dim)
        return mean_cond_var + var_cond_mean

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def cdf(self, x):
        x = self._pad(x)
        cdf_x = self.component_distribution.cdf(x)
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix_prob = core.log_softmax(self.mixture_distribution.logits, dim=-1)
        return (log_prob_x + log_mix_prob).logsumexp(-1)

    def sample(self, sample_shape=()):
        with core.no_grad():
            sample_len, batch_len = len(tuple(sample_shape)), len(self._batch_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(mix_sample.shape + (1,) * (self._event_ndims + 1))
            index = index.expand(mix_sample.shape + (1,) + tuple(self._event_shape))
            samples = comp_samples.gather(sample_len + batch_len, index)
            return samples.squeeze(sample_len + batch_len)

    def __repr__(self) -> str:
        return (f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})")


class LKJCholesky(Distribution):
    """The LKJ distribution over lower Cholesky factors of ``dim x dim`` correlation matrices, of density
    proportional to ``det(L L^T)^(concentration - 1)`` (``torch.distributions.LKJCholesky``); sampled by the
    onion method."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = core.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = core.cat([core.zeros_like(offset[:1]), offset])
        # row i of the onion method scales a point of the i-sphere by sqrt(y), y ~ Beta(i / 2, eta + (dim - 1 - i) / 2)
        # (Lewandowski et al. 2009, 3.2); PyTorch's first shape is offset + 0.5 (i - 1/2), which gives rows from the
        # third on marginals wider than the density's: here the samples follow log_prob.
        self._beta = Beta(0.5 * offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = core.Size(tuple(batch_shape))
        new.dim, new.concentration = self.dim, self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with core.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = standard_normal(self._extended_shape(sample_shape), y).tril(-1)
            norm = u_normal.pow(2).sum(-1, keepdim=True).sqrt()
            u_hypersphere = core.where(norm > 0, u_normal / core.where(norm > 0, norm, core.ones_like(norm)),
                                       core.zeros_like(u_normal))  # the first row is all zeros
            w = core.sqrt(y) * u_hypersphere
            diag_elems = (1 - w.pow(2).sum(-1)).clamp(min=core.finfo(w.dtype).tiny).sqrt()
            return w + core.diag_embed(diag_elems)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = core.arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize_term = 0.5 * dm1 * math.log(math.pi) + core.mvlgamma(alpha - 0.5, dm1) - core.lgamma(alpha) * dm1
        return unnormalized_log_pdf - normalize_term


def _mvdigamma(x, p: int):
    """The multivariate digamma function: ``sum_i digamma(x - i / 2)`` over ``i < p``."""
    halves = core.arange(p, dtype=x.dtype, device=x.device) / 2
    return core.digamma(x.unsqueeze(-1) - halves).sum(-1)


class Wishart(_ScaleMatrixParams, Distribution):
    """The Wishart distribution of ``df`` degrees of freedom over ``p x p`` positive-definite matrices, scaled by
    one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (``torch.distributions.Wishart``);
    ``rsample`` uses the Bartlett decomposition."""

    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                       "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        p = param.shape[-1]
        if not isinstance(df, core.Tensor):
            df = core.tensor(float(df), dtype=param.dtype, device=param.device)
        batch_shape = core.broadcast_shapes(param.shape[:-2], df.shape)
        self.df = df.expand(batch_shape)
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        self._set_scale_matrix(batch_shape, scale_tril, covariance_matrix, precision_matrix)
        self.arg_constraints = dict(self.arg_constraints, df=constraints.greater_than(p - 1))
        super().__init__(batch_shape, (p, p), validate_args=validate_args)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - core.arange(p, dtype=param.dtype, device=param.device))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = core.Size(tuple(batch_shape))
        self._expand_scale_matrix(new, batch_shape)
        new.df = self.df.expand(batch_shape)
        new.arg_constraints = self.arg_constraints
        new._dist_chi2 = self._dist_chi2.expand(batch_shape + self._event_shape[-1:])
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _df_matrix(self):
        return self.df.reshape(self.df.shape + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        p = self._event_shape[-1]
        factor = self._df_matrix() - p - 1
        mode = factor * self.covariance_matrix
        return core.where(factor > 0, mode, core.full_like(mode, math.nan))

    @property
    def variance(self):
        v = self.covariance_matrix
        diag_v = v.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (v.pow(2) + diag_v.unsqueeze(-1) * diag_v.unsqueeze(-2))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        noise = standard_normal(shape, self.df).tril(-1)
        bartlett = noise + core.diag_embed(self._dist_chi2.rsample(sample_shape).sqrt())
        chol = core.matmul(self._unbroadcasted_scale_tril, bartlett)
        return core.matmul(chol, chol.mT)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        log_det_value = 2 * core.linalg.cholesky(value).diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = core.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * math.log(2) / 2 + _half_log_det(self._unbroadcasted_scale_tril))
                - core.mvlgamma(nu / 2, p) + (nu - p - 1) / 2 * log_det_value - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (p * math.log(2) / 2 + _half_log_det(self._unbroadcasted_scale_tril))
                + core.mvlgamma(nu / 2, p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)
